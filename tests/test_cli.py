"""The command line, through main(argv) and once as a real process."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from typing import List, Tuple

from agentloop.cli import main

from .helpers import TempDir, read_lines

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
        self.assertEqual(self.cli("verify", self.path(), "--expect-count", "11", "--expect-head", self.result.head)[0], 0)

    def test_json_output(self) -> None:
        status, out, _ = self.cli("verify", "--json", self.path(), self.tampered())
        self.assertEqual(status, 1)
        report = json.loads(out)
        self.assertEqual([(r["ok"], r["count"]) for r in report], [(True, 11), (False, 11)])
        self.assertEqual(report[1]["faults"][0]["index"], 4)
        self.assertEqual(report[1]["faults"][0]["line"], 5)
        self.assertEqual(report[1]["faults"][0]["kind"], "hash_mismatch")

    def test_usage_errors_exit_2(self) -> None:
        for argv in ([], ["verify"], ["verify", self.path(), "--expect-head", "xyz"],
                     ["verify", self.path(), "--expect-count", "-1"], ["frobnicate"],
                     ["verify", self.path(), self.path(), "--expect-count", "11"]):
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
        self.assertEqual(lines[2], 'seq=2 multiply ok=False error="no tool named \'multiply\' (have: add, echo, fail, greet)"')
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
        proc = subprocess.run([sys.executable, "-m", "agentloop", "verify", self.path()], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("ok, 11 records", proc.stdout)
        proc = subprocess.run([sys.executable, "-m", "agentloop", "verify"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(proc.returncode, 2)
