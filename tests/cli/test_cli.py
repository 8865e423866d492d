"""The command line, through main(argv) and once as a real process."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from typing import List, Optional, Tuple

from agentloop import ModelReply, ToolCall
from agentloop.cli import main

from tests.support.helpers import TempDir, read_lines

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class CliCase(TempDir):
    def cli(self, *argv: str) -> Tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(list(argv), out=out)
        return status, out.getvalue(), err.getvalue()

    def tampered(self) -> str:
        lines = read_lines(self.path())
        lines[4] = lines[4].replace(b"expected type integer", b"expected type integex")
        return self.write_bytes(b"".join(lines), "tampered.jsonl")


class TestVerify(CliCase):
    def setUp(self) -> None:
        super().setUp()
        self.result = self.recover_run()

    def test_an_intact_file_exits_0_and_names_count_and_head(self) -> None:
        status, out, _ = self.cli("verify", self.path())
        self.assertEqual(status, 0)
        self.assertIn("%s: ok, 11 records, head %s\n" % (self.path(), self.result.head), out)
        self.assertIn("cannot show records missing from its end", out)

    def test_a_tampered_file_exits_1_and_names_the_record_line_and_kind(self) -> None:
        status, out, _ = self.cli("verify", self.path(), self.tampered())
        self.assertEqual(status, 1)
        self.assertIn("tampered.jsonl: FAILED at record 4 (line 5): hash_mismatch: stored ", out)

    def test_an_unreadable_file_exits_1(self) -> None:
        status, out, _ = self.cli("verify", self.path("absent.jsonl"))
        self.assertEqual(status, 1)
        self.assertIn("absent.jsonl: FAILED at file: unreadable: FileNotFoundError", out)

    def test_expectations_expose_a_missing_tail(self) -> None:
        cut = self.write_bytes(b"".join(read_lines(self.path())[:-1]), "cut.jsonl")
        self.assertEqual(self.cli("verify", cut)[0], 0)
        status, out, _ = self.cli("verify", cut, "--expect-count", "11")
        self.assertEqual(status, 1)
        self.assertIn("count_mismatch: expected 11 records, found 10", out)
        self.assertEqual(self.cli("verify", cut, "--expect-head", self.result.head)[0], 1)
        self.assertEqual(
            self.cli("verify", self.path(), "--expect-count", "11", "--expect-head", self.result.head)[0], 0
        )

    def test_json_output(self) -> None:
        status, out, _ = self.cli("verify", "--json", self.path(), self.tampered())
        self.assertEqual(status, 1)
        report = json.loads(out)
        self.assertEqual([(r["ok"], r["count"]) for r in report], [(True, 11), (False, 11)])
        self.assertEqual(report[1]["faults"][0]["index"], 4)
        self.assertEqual(report[1]["faults"][0]["line"], 5)
        self.assertEqual(report[1]["faults"][0]["kind"], "hash_mismatch")

    def test_usage_errors_exit_2(self) -> None:
        for argv in (
            [],
            ["verify"],
            ["verify", self.path(), "--expect-head", "xyz"],
            ["verify", self.path(), "--expect-count", "-1"],
            ["frobnicate"],
            ["verify", self.path(), self.path(), "--expect-count", "11"],
        ):
            with self.subTest(argv):
                self.assertEqual(self.cli(*argv)[0], 2)

    def test_version_and_help_exit_0(self) -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(self.cli("--version")[0], 0)
            self.assertEqual(self.cli("--help")[0], 0)


class TestShow(CliCase):
    def test_show_lists_one_line_per_record_then_the_verdict(self) -> None:
        self.recover_run()
        status, out, _ = self.cli("show", self.path())
        lines: List[str] = out.splitlines()
        self.assertEqual(status, 0)
        self.assertEqual(len(lines), 12)
        self.assertEqual(
            lines[2], "seq=2 multiply ok=False error=\"no tool named 'multiply' (have: add, echo, fail, greet)\""
        )
        self.assertEqual(lines[8], 'seq=8 add      ok=True  value={"sum": 42}')
        self.assertTrue(lines[10].startswith("seq=10 stop     reason=no_tool_calls steps=5"))
        self.assertTrue(lines[11].endswith(": ok, 11 records, head " + json.loads(read_lines(self.path())[-1])["hash"]))

    def test_show_marks_bad_lines_and_exits_1(self) -> None:
        self.recover_run()
        lines = read_lines(self.path())
        broken = self.write_bytes(b"".join(lines[:3] + [b"{oops\n"] + lines[3:]))
        status, out, _ = self.cli("show", broken)
        self.assertEqual(status, 1)
        self.assertIn("\nline 4: bad_json: not JSON: ", out)
        self.assertIn("FAILED at line 4: bad_json", out)

    def test_show_escapes_terminal_control_characters(self) -> None:
        from agentloop import ModelReply

        self.scripted_run([ModelReply("red \x1b[31m alarm \u009b2J \u202e reversed\nnext")])
        status, out, _ = self.cli("show", self.path())
        self.assertEqual(status, 0)
        for raw in ("\x1b", "\u009b", "\u202e"):
            self.assertNotIn(raw, out)
        self.assertIn("red \\u001b[31m alarm \\u009b2J \\u202e reversed\\nnext", out)

    def test_show_of_a_missing_file_exits_1(self) -> None:
        status, out, _ = self.cli("show", self.path("absent.jsonl"))
        self.assertEqual(status, 1)
        self.assertIn("unreadable", out)


class TestProcess(CliCase):
    def test_python_dash_m_agentloop(self) -> None:
        self.recover_run()
        env = dict(os.environ, PYTHONPATH=ROOT)
        proc = subprocess.run(
            [sys.executable, "-m", "agentloop", "verify", self.path()],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
        )
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("ok, 11 records", proc.stdout)
        proc = subprocess.run(
            [sys.executable, "-m", "agentloop", "verify"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
        )
        self.assertEqual(proc.returncode, 2)


class FakeTerminal(io.StringIO):
    """A text stream that says it is a terminal, so ``show`` may colour."""

    def isatty(self) -> bool:
        return True


class TestShowColourAndTurns(CliCase):
    def setUp(self) -> None:
        super().setUp()
        self.recover_run()
        saved = os.environ.pop("NO_COLOR", None)
        self.addCleanup(self.restore_no_color, saved)

    @staticmethod
    def restore_no_color(saved: Optional[str]) -> None:
        os.environ.pop("NO_COLOR", None)
        if saved is not None:
            os.environ["NO_COLOR"] = saved

    def tty(self, *argv: str) -> Tuple[int, str]:
        out = FakeTerminal()
        status = main(list(argv), out=out)
        return status, out.getvalue()

    def test_a_terminal_gets_green_ok_red_errors_and_yellow_stop(self) -> None:
        status, out = self.tty("show", self.path())
        lines = out.splitlines()
        self.assertEqual(status, 0)
        self.assertEqual(
            lines[2],
            "\x1b[31mseq=2 multiply ok=False error=\"no tool named 'multiply' (have: add, echo, fail, greet)\"\x1b[0m",
        )
        self.assertEqual(lines[8], '\x1b[32mseq=8 add      ok=True  value={"sum": 42}\x1b[0m')
        self.assertTrue(lines[10].startswith("\x1b[1;33mseq=10 stop     reason=no_tool_calls"))
        self.assertTrue(lines[11].startswith("\x1b[32m") and ": ok, 11 records" in lines[11])
        self.assertEqual(lines[1], lines[1].replace("\x1b", ""))  # an assistant line stays plain
        stripped = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in lines]
        self.assertEqual(stripped, self.cli("show", self.path())[1].splitlines())

    def test_no_color_and_the_flag_turn_colour_off(self) -> None:
        plain = self.cli("show", self.path())[1]
        self.assertEqual(self.tty("show", "--no-color", self.path())[1], plain)
        os.environ["NO_COLOR"] = "1"
        self.assertEqual(self.tty("show", self.path())[1], plain)
        os.environ["NO_COLOR"] = ""  # an empty NO_COLOR does not count (no-color.org)
        self.assertIn("\x1b[32m", self.tty("show", self.path())[1])
        self.assertNotIn("\x1b", plain)

    def test_faults_are_red_and_transcript_escapes_stay_escaped_in_colour(self) -> None:
        self.scripted_run(
            [
                ModelReply("bold \x1b[1m and \x1b[0m", [ToolCall("echo", {"text": "\x1b[32mfake ok"})]),
                ModelReply("done"),
            ],
            name="hostile.jsonl",
        )
        lines = read_lines(self.path("hostile.jsonl"))
        lines[2] = lines[2].replace(b"fake ok", b"fake OK")
        status, out = self.tty("show", self.write_bytes(b"".join(lines)))
        self.assertEqual(status, 1)
        self.assertEqual(set(re.findall(r"\x1b\[[0-9;]*m", out)), {"\x1b[31m", "\x1b[0m", "\x1b[1;33m"})
        self.assertIn('\x1b[31mseq=2 echo     ok=True  value={"text": "\\u001b[32mfake OK"}\x1b[0m', out)
        self.assertNotIn("\x1b[32mfake", out)

    def test_turns_groups_each_step_with_its_tool_lines_indented(self) -> None:
        status, out, _ = self.cli("show", "--turns", self.path())
        lines = out.splitlines()
        self.assertEqual(status, 0)
        self.assertTrue(lines[0].startswith("seq=0 task "))
        self.assertEqual(lines[1], "step 1")
        self.assertTrue(lines[2].startswith("  seq=1 assistant step=1 "))
        self.assertTrue(lines[3].startswith("    seq=2 multiply ok=False"))
        self.assertEqual([line for line in lines if line.startswith("step")], ["step %d" % i for i in range(1, 6)])
        self.assertTrue(lines[-2].startswith("seq=10 stop "))
        self.assertEqual(len(lines), 12 + 5)
        self.assertEqual(
            sorted(line.strip() for line in lines if not line.startswith("step")),
            sorted(self.cli("show", self.path())[1].splitlines()),
        )


class TestReportCommand(CliCase):
    def setUp(self) -> None:
        super().setUp()
        self.recover_run()

    def test_report_writes_next_to_the_transcript_and_exits_0(self) -> None:
        status, out, err = self.cli("report", self.path())
        self.assertEqual((status, err), (0, ""))
        self.assertEqual(out.splitlines()[-1], "report: %s" % (self.path("t.html"),))
        self.assertIn(": ok, 11 records, head ", out)
        with open(self.path("t.html"), encoding="utf-8") as handle:
            self.assertIn("<strong>✓ VERIFIED</strong>", handle.read())

    def test_report_to_a_chosen_file_replaces_only_its_own_page_without_overwrite(self) -> None:
        target = self.path("out.html")
        self.assertEqual(self.cli("report", self.path(), "-o", target)[0], 0)
        self.assertEqual(self.cli("report", self.path(), "-o", target)[0], 0)  # its own page: replaced
        other = self.write_bytes(b"someone else's notes", "notes.html")
        status, _, err = self.cli("report", self.path(), "-o", other)
        self.assertEqual(status, 2)
        self.assertEqual(
            err, "agentloop report: error: %s: already exists (pass --overwrite to replace it)\n" % (other,)
        )
        with open(other, "rb") as handle:
            self.assertEqual(handle.read(), b"someone else's notes")
        self.assertEqual(self.cli("report", self.path(), "-o", other, "--overwrite")[0], 0)
        with open(other, encoding="utf-8") as handle:
            self.assertTrue(handle.read().startswith("<!DOCTYPE html>"))

    def test_a_tampered_transcript_exits_1_and_its_report_is_still_written(self) -> None:
        status, out, _ = self.cli("report", self.tampered())
        self.assertEqual(status, 1)
        self.assertIn("FAILED at record 4 (line 5): hash_mismatch", out)
        with open(self.path("tampered.html"), encoding="utf-8") as handle:
            page = handle.read()
        self.assertIn("<strong>✗ NOT VERIFIED</strong>", page)
        self.assertIn('<a href="#line-5">record 4 (line 5)</a>', page)

    def test_a_missing_transcript_exits_1_with_a_report_saying_so(self) -> None:
        status, out, _ = self.cli("report", self.path("absent.jsonl"))
        self.assertEqual(status, 1)
        self.assertIn("unreadable", out)
        self.assertTrue(os.path.exists(self.path("absent.html")))

    def test_usage_errors_exit_2_and_the_transcript_is_never_replaced(self) -> None:
        before = read_lines(self.path())
        status, _, err = self.cli("report", self.path(), "-o", self.path())
        self.assertEqual(status, 2)
        self.assertIn("the report would replace the transcript", err)
        self.assertEqual(read_lines(self.path()), before)
        status, _, err = self.cli("report", self.path(), "-o", self.path("no/such/dir/r.html"))
        self.assertEqual(status, 2)
        self.assertIn(
            "agentloop report: error: %s: the folder %s does not exist"
            % (self.path("no/such/dir/r.html"), self.path("no/such/dir")),
            err,
        )
        self.assertEqual(self.cli("report")[0], 2)


class TestHostileFields(CliCase):
    def test_every_field_of_a_rehashed_record_is_escaped(self) -> None:
        import hashlib

        from agentloop.canonical import canonical_bytes

        self.recover_run()
        lines = read_lines(self.path())
        records = [json.loads(line) for line in lines]
        evil = "\x1b]0;owned\x07\x1b[2J"
        records[2]["payload"]["ok"] = evil
        records[1]["payload"]["step"] = evil
        records[0]["payload"]["budgets"]["max_steps"] = evil
        prev = "0" * 64
        out = []
        for record in records:
            record["prev"] = prev
            body = {k: v for k, v in record.items() if k != "hash"}
            record["hash"] = prev = hashlib.sha256(canonical_bytes(body)).hexdigest()
            out.append(canonical_bytes(record) + b"\n")
        path = self.write_bytes(b"".join(out))
        status, text, _ = self.cli("show", path, "--no-color")
        self.assertEqual(status, 1)  # chain-valid, but the payloads break the agentloop/1 grammar (bad_payload)
        self.assertIn("bad_payload", text)
        self.assertNotIn("\x1b", text)
        self.assertNotIn("\x07", text)
        self.assertIn('ok="\\u001b]0;owned\\u0007\\u001b[2J"', text)


class TestComplete(CliCase):
    def test_verify_complete_fails_a_run_without_its_stop_record(self) -> None:
        self.recover_run()
        lines = read_lines(self.path())
        cut = self.write_bytes(b"".join(lines[:-1]), "cut.jsonl")  # the stop record is gone
        status, out, _ = self.cli("verify", cut)
        self.assertEqual(status, 0, out)
        self.assertIn("no stop record", out)
        status, out, _ = self.cli("verify", "--complete", cut)
        self.assertEqual(status, 1, out)
        self.assertIn("incomplete", out)
        status, out, _ = self.cli("verify", "--complete", self.path())
        self.assertEqual(status, 0, out)
