"""The command line's edges, in-process: what ``show`` prints for odd records, the files every command
refuses before reading or writing a byte, and what ``main`` does with what escapes a command
(a closed pipe, Ctrl-C, ``SystemExit`` or an exception from a user's module).
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import runpy
import sys
import unittest
from typing import Any, List, Tuple
from unittest import mock

from agentloop import __version__
from agentloop.cli import main
from agentloop.cli.main import console
from agentloop.cli.output import visible
from agentloop.transcript.verify import verify_file

from tests.support.helpers import TempDir, read_lines
from tests.support.loopback import LoopbackServer, openai_reply
from tests.transcript.test_anchor import forge

M = "tests.support.cli_edges_modules:"


class _Full(io.StringIO):
    """A stream on a full disk (after ``after`` writes)."""

    def __init__(self, after: int = 0) -> None:
        super().__init__()
        self.left = after

    def write(self, text: str) -> int:
        self.left -= 1
        if self.left < 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(text)


class CliCase(TempDir):
    def cli(self, *argv: str) -> Tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(list(argv), out=out)
        return status, out.getvalue(), err.getvalue()


class TestShowFull(CliCase):
    def test_full_shows_each_calls_arguments_or_why_they_could_not_be_read(self) -> None:
        server = LoopbackServer(
            [
                openai_reply("two calls", [("c1", "add", '{"a": 1, "b": 2}'), ("c2", "add", '{"a": 1,')]),
                openai_reply("done"),
            ]
        ).start()
        self.addCleanup(server.stop)
        with mock.patch.dict(os.environ, {"OPENAI_API_KEY": ""}):
            status, _, err = self.cli(
                "run",
                "--model",
                "openai:gpt-test",
                "--base-url",
                server.openai_url,
                "--tools",
                "demo:demo_tools",
                "--task",
                "t",
                "--max-steps",
                "3",
                "--max-tokens",
                "1000",
                "-o",
                self.path(),
            )
        self.assertEqual((status, err), (0, ""))
        status, out, _ = self.cli("show", "--full", self.path())
        self.assertEqual(status, 0)
        assistant = out.splitlines()[1]
        self.assertTrue(assistant.startswith("seq=1 assistant step=1 tokens=18 total=18 "), assistant)
        record = json.loads(read_lines(self.path())[1])["payload"]["tool_calls"][1]
        self.assertIn(
            'calls="add"({"a": 1, "b": 2}),"add"(error=%s) text="two calls"'
            % (json.dumps(record["arguments_error"], ensure_ascii=False),),
            assistant,
        )
        status, out, _ = self.cli("show", self.path())
        self.assertIn(" calls=add,add text=", out.splitlines()[1])

    def test_a_line_that_is_not_an_object_and_a_kind_show_does_not_know(self) -> None:
        self.recover_run()
        lines = read_lines(self.path())
        self.write_bytes(b"[1, 2]\n" + b"".join(lines[1:]), "array.jsonl")
        status, out, _ = self.cli("show", self.path("array.jsonl"))
        self.assertEqual(status, 1)
        self.assertEqual(out.splitlines()[0], "seq=? (not an object: [1, 2])")
        forged = forge(lines, 2, lambda record: record.update(kind="note", payload={"text": "hi"}))
        self.write_bytes(b"".join(forged), "kind.jsonl")
        status, out, _ = self.cli("show", self.path("kind.jsonl"))
        self.assertEqual(status, 1)
        self.assertIn('seq=2 "note" payload={"text": "hi"}', out.splitlines())

    def test_more_than_ten_faults_are_counted_not_listed(self) -> None:
        self.recover_run()
        self.write_bytes(b"".join(b"x%d\n" % i for i in range(14)), "junk.jsonl")
        status, out, _ = self.cli("verify", self.path("junk.jsonl"))
        self.assertEqual(status, 1)
        lines = out.splitlines()
        self.assertTrue(lines[0].startswith("%s: FAILED at line 1: bad_json: " % (self.path("junk.jsonl"),)), lines[0])
        self.assertEqual(sum(line.startswith("  also ") for line in lines), 9)
        self.assertIn("  (+%d more faults)" % (len(verify_file(self.path("junk.jsonl")).faults) - 10,), lines)


class TestRefusedFiles(CliCase):
    def test_inputs_that_are_not_transcript_files(self) -> None:
        os.mkdir(self.path("folder"))
        os.mkfifo(self.path("fifo"))
        for path, reason in [
            (self.path("folder"), "is a directory, not a transcript file"),
            (os.devnull, "is a character device, not a transcript file"),
            (
                self.path("fifo"),
                "is a named pipe (FIFO), not a transcript file (only the pipe on standard input is read)",
            ),
        ]:
            with self.subTest(path):
                status, out, err = self.cli("show", path)
                self.assertEqual((status, out), (2, ""))
                self.assertEqual(err, "agentloop show: error: %s: %s\n" % (path, reason))
        status, _, err = self.cli("checkpoint", self.path("fifo"))
        self.assertEqual(status, 2)
        self.assertEqual(
            err,
            "agentloop checkpoint: error: %s: is a named pipe (FIFO), not a transcript file "
            "(this command needs a regular file)\n" % (self.path("fifo"),),
        )

    def test_outputs_that_cannot_be_written(self) -> None:
        self.recover_run()
        os.mkdir(self.path("folder"))
        os.symlink("nowhere", self.path("dangling.html"))
        self.write_bytes(b"a file", "plain")
        for target, reason in [
            (
                self.path("folder"),
                "is a directory; give a file name (for example %s)" % (os.path.join(self.path("folder"), "out"),),
            ),
            (os.devnull, "is a character device, not a regular file"),
            (self.path("dangling.html"), "is a dangling symbolic link"),
            (os.path.join(self.path("absent"), "r.html"), "the folder %s does not exist" % (self.path("absent"),)),
            (os.path.join(self.path("plain"), "r.html"), "the folder %s is not a folder" % (self.path("plain"),)),
        ]:
            with self.subTest(target):
                status, out, err = self.cli("report", self.path(), "-o", target)
                self.assertEqual((status, out), (2, ""))
                self.assertEqual(err, "agentloop report: error: %s: %s\n" % (target, reason))


class TestVerifyOptions(CliCase):
    def test_workers_with_a_checkpoint_is_refused_not_ignored(self) -> None:
        self.recover_run()
        status, out, err = self.cli("verify", self.path(), "--workers", "2", "--checkpoint", self.path())
        self.assertEqual((status, out), (2, ""))
        self.assertEqual(
            err,
            "agentloop verify: error: --workers: is for a transcript's chain or --manifest; "
            "a checkpoint is checked in one pass\n",
        )

    def test_workers_with_one_transcript_give_its_verdict(self) -> None:
        self.recover_run()
        alone = self.cli("verify", self.path(), "--json")
        self.assertEqual(self.cli("verify", self.path(), "--json", "--workers", "2"), alone)
        self.assertEqual(alone[0], 0)

    def test_workers_cut_one_transcript_into_parts_judged_in_processes(self) -> None:
        """A transcript this small is read in one pass; with parts of 1 byte, --workers 2 cuts it into parts."""
        from agentloop.transcript import parallel

        self.recover_run()
        with open(self.path(), "r+b") as handle:  # a fault in the second part: record 9's own hash
            lines = handle.read().split(b"\n")
            lines[9] = lines[9].replace(b'"seq":9', b'"seq":90')
            handle.seek(0)
            handle.write(b"\n".join(lines))
            handle.truncate()
        alone = self.cli("verify", self.path(), "--json")
        pools: List[int] = []
        real = parallel.process_pool

        def spy(workers: int, fork_if_alone: bool = False) -> Any:
            pools.append(workers)
            return real(workers, fork_if_alone=fork_if_alone)

        with mock.patch.object(parallel, "MIN_PART_BYTES", 1), mock.patch.object(parallel, "process_pool", spy):
            self.assertEqual(self.cli("verify", self.path(), "--json", "--workers", "2"), alone)
        self.assertEqual(pools, [2])  # a pool of 2 processes judged the parts (this one joined them)
        self.assertEqual(alone[0], 1)
        self.assertIn('"index": 9', alone[1])


class TestVisible(unittest.TestCase):
    def test_escapes_are_jsons_a_character_above_u_ffff_a_surrogate_pair(self) -> None:
        text = "tag \U000e0041 bidi \u202e esc \x1b music \U0001d173 lone \ud800 kept \U0001f600"
        shown = visible(text)
        self.assertEqual(
            shown, "tag \\udb40\\udc41 bidi \\u202e esc \\u001b music \\ud834\\udd73 lone \\ud800 kept \U0001f600"
        )
        self.assertEqual(
            json.loads('"%s"' % shown.replace("\\ud800", "")), text.replace("\ud800", "")
        )  # read back exactly


class TestUsageErrors(CliCase):
    def test_an_unknown_option_is_reported_by_the_command_it_follows_with_that_commands_usage(self) -> None:
        cases = [
            (
                ("show", "x.jsonl", "--frob"),
                "usage: agentloop show ",
                "agentloop show: error: unrecognized arguments: --frob\n",
            ),
            (
                ("verify", "--bo\x1bgus", "x.jsonl"),
                "usage: agentloop verify ",
                "agentloop verify: error: unrecognized arguments: --bo\\u001bgus\n",
            ),
            (
                ("--frob", "show", "x.jsonl"),
                "usage: agentloop [-h]",
                "agentloop: error: unrecognized arguments: --frob\n",
            ),
            (
                ("show", "show", "show"),
                "usage: agentloop show ",
                "agentloop show: error: unrecognized arguments: show\n",
            ),
            (
                ("verify", "x.jsonl", "--max-faults", "0"),
                "usage: agentloop verify ",
                "argument --max-faults: must be a positive integer (at most 30 digits)\n",
            ),
            (
                ("verify", "x.jsonl", "--max-faults", "-1"),
                "usage: agentloop verify ",
                "argument --max-faults: must be a positive integer (at most 30 digits)\n",
            ),
            (
                ("verify", "x.jsonl", "--max-faults", "9" * 5000),
                "usage: agentloop verify ",
                "argument --max-faults: must be a positive integer (at most 30 digits)\n",
            ),
        ]
        for argv, usage, error in cases:
            with self.subTest(argv=argv):
                status, out, err = self.cli(*argv)
                self.assertEqual((status, out), (2, ""))
                self.assertTrue(err.startswith(usage), err)
                self.assertTrue(err.endswith(error), err)


class TestWhatEscapesACommand(CliCase):
    def setUp(self) -> None:
        super().setUp()
        self.recover_run()

    def test_system_exit_from_a_tools_module_is_said_and_exits_4(self) -> None:
        status, out, err = self.cli("replay", self.path(), "--tools", M + "exits", "-o", self.path("r.jsonl"))
        self.assertEqual((status, out), (4, ""))
        self.assertEqual(
            err, "agentloop replay: error: stopped: SystemExit(5) was raised by code agentloop ran (a tools module?)\n"
        )

    def test_ctrl_c_while_a_tools_module_loads_exits_130(self) -> None:
        status, out, err = self.cli("replay", self.path(), "--tools", M + "interrupts", "-o", self.path("r.jsonl"))
        self.assertEqual((status, out), (130, ""))
        self.assertEqual(err, "agentloop replay: error: interrupted (Ctrl-C)\n")

    def test_a_tools_object_that_raises_or_holds_no_tools_is_a_usage_error_naming_it(self) -> None:
        for name, reason in (
            ("breaks", "%sbreaks raised RuntimeError as its tools were listed" % (M,)),
            ("typeerr", "%stypeerr raised TypeError as its tools were listed" % (M,)),
            ("lazy.tools", '%slazy.tools raised ValueError as "tools" was looked up' % (M,)),
            ("ints", "%sints: item 0 is not a Tool but int" % (M,)),
        ):
            with self.subTest(name):
                status, out, err = self.cli("replay", self.path(), "--tools", M + name, "-o", self.path("r.jsonl"))
                self.assertEqual((status, out), (2, ""))
                self.assertEqual(err, "agentloop replay: error: --tools: %s\n" % (reason,))

    def test_an_unexpected_exception_is_one_line_cut_to_500_characters_and_exits_70(self) -> None:
        with mock.patch("agentloop.cli.models.replay", side_effect=RuntimeError("z" * 600)):  # a bug inside agentloop
            status, out, err = self.cli("replay", self.path(), "--tools", "demo:demo_tools", "-o", self.path("r.jsonl"))
        self.assertEqual((status, out), (70, ""))
        self.assertEqual(
            err,
            "agentloop replay: error: internal error: RuntimeError: %s... (a bug in agentloop %s; please report it)\n"
            % ("z" * 500, __version__),
        )

    def test_a_closed_stdout_exits_141_and_is_pointed_at_dev_null(self) -> None:
        read_end, write_end = os.pipe()
        os.close(read_end)
        stream = os.fdopen(write_end, "w")
        self.addCleanup(stream.close)
        with mock.patch.object(sys, "stdout", stream):
            status = main(["show", self.path()])
            self.assertEqual(status, 141)
            stream.write("the exit flush cannot fail any more\n")
            stream.flush()  # would raise BrokenPipeError if stdout were still the pipe

    def test_a_full_or_closed_stdout_is_said_as_such_never_an_internal_error(self) -> None:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(main(["verify", self.path()], out=_Full()), 2)
        self.assertEqual(
            err.getvalue(), "agentloop verify: error: standard output: cannot write: No space left on device\n"
        )
        for argv in (["verify", self.path()], ["--help"]):
            err = io.StringIO()
            with mock.patch.object(sys, "stdout", None), contextlib.redirect_stderr(err):
                self.assertEqual(main(argv), 2)
            self.assertEqual(err.getvalue(), "agentloop: error: standard output is closed\n")

    def test_a_run_whose_stdout_breaks_stops_and_says_what_the_transcript_holds(self) -> None:
        argv = [
            "run",
            "--model",
            "tests.support.cli_run_models:adds_forever",
            "--tools",
            "demo:demo_tools",
            "--task",
            "t",
            "--max-steps",
            "3",
            "--max-tokens",
            "1000",
            "-o",
            self.path("r.jsonl"),
        ]
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(main(argv, out=_Full()), 4)  # not 2, "nothing run": the model was called
        self.assertEqual(
            err.getvalue(),
            "agentloop run: error: standard output: cannot write: No space left on device; "
            "%s holds 1 record, a verifiable prefix without a stop record\n" % (self.path("r.jsonl"),),
        )
        os.unlink(self.path("r.jsonl"))
        read_end, write_end = os.pipe()
        os.close(read_end)
        stream = os.fdopen(write_end, "w")
        self.addCleanup(stream.close)
        err = io.StringIO()
        with mock.patch.object(sys, "stdout", stream), contextlib.redirect_stderr(err):
            self.assertEqual(main(argv), 141)
        self.assertEqual(
            err.getvalue(),
            "agentloop run: error: standard output was closed (a broken pipe); "
            "%s holds 1 record, a verifiable prefix without a stop record\n" % (self.path("r.jsonl"),),
        )
        self.assertTrue(verify_file(self.path("r.jsonl")).ok)

    def test_output_that_fails_after_the_run_says_the_run_is_whole(self) -> None:
        argv = [
            "run",
            "--model",
            "tests.support.cli_run_models:adds_forever",
            "--tools",
            "demo:demo_tools",
            "--task",
            "t",
            "--max-steps",
            "1",
            "--max-tokens",
            "1000",
            "-o",
            self.path("r.jsonl"),
        ]
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(argv, out=_Full(after=3))
        self.assertEqual(status, 4)
        self.assertTrue(
            err.getvalue().endswith("holds 4 records, the whole run with its stop record\n"), err.getvalue()
        )

    def test_a_full_or_closed_stderr_never_raises_out_of_main(self) -> None:
        for stderr in (_Full(), None):
            with self.subTest(stderr=stderr), mock.patch.object(sys, "stderr", stderr):
                self.assertEqual(main(["pending", self.path("none.jsonl")], out=io.StringIO()), 2)
                self.assertEqual(main(["show", "--frob"], out=io.StringIO()), 2)  # argparse's usage error too

    def test_console_and_python_m_agentloop_exit_with_mains_status(self) -> None:
        for entry in (console, lambda: runpy.run_module("agentloop", run_name="__main__")):
            out = io.StringIO()
            with mock.patch.object(sys, "argv", ["agentloop", "verify", self.path()]), contextlib.redirect_stdout(out):
                with self.assertRaises(SystemExit) as caught:
                    entry()
            self.assertEqual(caught.exception.code, 0)
            self.assertTrue(out.getvalue().startswith("%s: ok, 11 records, head " % (self.path(),)), out.getvalue())

    def test_a_stdout_that_cannot_be_reconfigured_is_left_as_it_is(self) -> None:
        detached = io.TextIOWrapper(io.BytesIO())
        detached.detach()
        with mock.patch.object(sys, "stdout", detached):
            status, out, _ = self.cli("verify", self.path())
        self.assertEqual(status, 0)
        self.assertIn(": ok, 11 records", out)


if __name__ == "__main__":
    unittest.main()
