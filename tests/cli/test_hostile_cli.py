"""The real command line, in a subprocess, fed hostile input.

Every test runs ``agentloop`` as a user would: ``python -m agentloop`` by
default, or the command in ``$AGENTLOOP_CLI`` (``AGENTLOOP_CLI=agentloop``
re-runs them against the installed console script).  Each asserts what
the issue asks of every command: no ``Traceback``, the documented exit
code, one line on stderr naming the file and the reason, no byte that could
drive a terminal, a bounded time (a hang fails by the subprocess timeout),
and no API key anywhere.  A fake OpenAI-compatible server on 127.0.0.1
(:mod:`tests.support.loopback`) answers with hostile bytes.

Exit codes (see :mod:`agentloop.cli.output`): 0 done or an answer, 1 a
fault / ``model_error``, 2 usage or a file refused, 3 a budget stop, 4 a run
that did not finish (``SystemExit``), 70 internal error, 130 Ctrl-C, 141
stdout closed early.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import unittest
from typing import Dict, List, Optional, Sequence, Tuple
from unittest import mock

from agentloop import verify_file
from agentloop.cli import main

from tests.support.helpers import TempDir, read_lines
from tests.support.loopback import Canned, LoopbackServer, openai_error, openai_reply

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI: List[str] = (
    shlex.split(os.environ["AGENTLOOP_CLI"]) if os.environ.get("AGENTLOOP_CLI") else [sys.executable, "-m", "agentloop"]
)
#: A command that takes longer than this has hung (the machine is shared: generous).
TIMEOUT = 60.0

#: What a hostile server, model, tool or file sends: an OSC title change ended by BEL,
#: a colour, a right-to-left override, a CSI sequence in C1 form, DEL, an isolate.
HOSTILE = "\x1b]0;pwned\x07\x1b[31mRED\u202eevil\u2066\x9b2J\x7f\x1b[0m"
#: Any of these in the output reached the terminal raw (newline and tab are the only controls allowed).
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
SECRET = "sk-agentloop-test-SECRET-0123456789abcdef"

TOOLS_MODULE = """
import sys
from agentloop import Tool, ToolRegistry

EMPTY = {"type": "object", "properties": {}}


def _bye():
    sys.exit(3)


def _interrupt():
    raise KeyboardInterrupt


def _shout(text):
    return {"said": text}


tools = ToolRegistry([
    Tool("bye", "Exit the process.", EMPTY, _bye),
    Tool("interrupt", "Raise KeyboardInterrupt.", EMPTY, _interrupt),
    Tool(
        "shout", "Echo.", {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}, _shout
    ),
])
"""


def _run_argv(server: LoopbackServer, output: str, *extra: str) -> List[str]:
    return [
        "run",
        "--model",
        server.openai_url,
        "--model-name",
        "gpt-test",
        "--tools",
        "hostile_tools:tools",
        "--task",
        "go",
        "--max-steps",
        "3",
        "--max-tokens",
        "10000",
        "--max-retries",
        "0",
        "--timeout",
        "30",
        "-o",
        output,
    ] + list(extra)


class HostileCase(TempDir):
    def setUp(self) -> None:
        super().setUp()
        self.write_bytes(TOOLS_MODULE.encode("utf-8"), "hostile_tools.py")

    def env(self, **extra: str) -> Dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NO_COLOR")}
        env["PYTHONPATH"] = ROOT + os.pathsep + self.dir
        env.update(extra)
        return env

    def agentloop(
        self, *argv: str, stdin: Optional[bytes] = None, timeout: float = TIMEOUT, **env: str
    ) -> Tuple[int, str, str]:
        proc = subprocess.run(
            CLI + list(argv),
            cwd=self.dir,
            env=self.env(**env),
            input=stdin if stdin is not None else b"",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=timeout,
        )
        return proc.returncode, self.text(proc.stdout), self.text(proc.stderr)

    def popen(self, argv: Sequence[str]) -> "subprocess.Popen[bytes]":
        """The command, started; killed after :data:`TIMEOUT` whatever the test waits on (so a hang fails)."""
        proc = subprocess.Popen(
            list(argv),
            cwd=self.dir,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        watchdog = threading.Timer(TIMEOUT, proc.kill)
        watchdog.start()
        self.addCleanup(watchdog.cancel)
        self.addCleanup(proc.kill)
        return proc

    @staticmethod
    def text(data: bytes) -> str:
        return data.decode("utf-8", "backslashreplace")

    def assert_clean(self, result: Tuple[int, str, str], status: int, error: Optional[str] = None) -> None:
        """The exit status; no traceback; nothing raw; and with ``error``, exactly one stderr line holding it."""
        code, out, err = result
        where = "exit %d\nstdout: %s\nstderr: %s" % (code, out[-2000:], err[-2000:])
        self.assertEqual(code, status, where)
        for stream in (out, err):
            self.assertNotIn("Traceback", stream, where)
            self.assertIsNone(RAW.search(stream), where)
        if error is not None:
            self.assertEqual(len(err.splitlines()), 1, where)
            self.assertIn(error, err, where)
            self.assertTrue(err.startswith("agentloop "), where)

    def valid(self, name: str = "t.jsonl") -> str:
        self.recover_run(name)
        return self.path(name)


# --- 1. no byte from outside drives the terminal --------------------------------------------


class TestEveryOutputIsEscaped(HostileCase):
    def test_a_model_error_detail_on_the_stop_line_of_run_and_replay(self) -> None:
        with LoopbackServer([openai_error(400, HOSTILE, "invalid_request_error")]) as server:
            result = self.agentloop(*_run_argv(server, "t.jsonl"))
        self.assert_clean(result, 1)
        self.assertIn("stop: model_error", result[1])
        self.assertIn("\\u001b]0;pwned\\u0007", result[1])  # shown, not obeyed
        self.assertIn("\\u202e", result[1])
        self.assertTrue(verify_file(self.path()).ok)
        replayed = self.agentloop("replay", "t.jsonl", "--tools", "hostile_tools:tools")
        self.assert_clean(replayed, 0)
        self.assertIn("stop: model_error", replayed[1])

    def test_the_answer_is_printed_whole_and_escaped(self) -> None:
        answer = "Line one " + HOSTILE + "\nline two " + "é" * 300 + " end."
        with LoopbackServer([openai_reply(answer)]) as server:
            result = self.agentloop(*_run_argv(server, "t.jsonl"))
        self.assert_clean(result, 0)
        shown = result[1].split("answer:\n", 1)[1]
        self.assertIn("line two " + "é" * 300 + " end.", shown)  # whole: not cut at 160 characters
        self.assertIn("Line one \\u001b]0;pwned\\u0007", shown)

    def test_show_and_show_full_escape_texts_arguments_and_values(self) -> None:
        long_text = "x" * 400 + HOSTILE
        script = [openai_reply(long_text, [("c1", "shout", json.dumps({"text": HOSTILE}))]), openai_reply("done")]
        with LoopbackServer(script) as server:
            self.assert_clean(self.agentloop(*_run_argv(server, "t.jsonl")), 0)
        short = self.agentloop("show", "t.jsonl")
        self.assert_clean(short, 0)
        self.assertNotIn("x" * 400, short[1])
        full = self.agentloop("show", "--full", "t.jsonl")
        self.assert_clean(full, 0)
        self.assertIn("x" * 400 + "\\u001b]0;pwned", full[1])  # the whole text
        self.assertIn('calls="shout"({"text": "\\u001b]0;pwned', full[1])  # the call's arguments

    def test_exception_text_and_usage_errors_are_escaped(self) -> None:
        self.write_bytes(("raise RuntimeError(%r)\n" % (HOSTILE,)).encode("utf-8"), "bad_import.py")
        with LoopbackServer() as server:
            argv = _run_argv(server, "t.jsonl")
            argv[argv.index("hostile_tools:tools")] = "bad_import:tools"
            result = self.agentloop(*argv)
        self.assert_clean(
            result, 2, "agentloop run: error: --tools: cannot import bad_import: RuntimeError: \\u001b]0;pwned"
        )
        self.assert_clean(self.agentloop("verify", "--expect-head", HOSTILE, "t.jsonl"), 2)
        self.assert_clean(self.agentloop("frobnicate" + HOSTILE), 2)

    def test_a_file_name_and_a_transcript_field_are_escaped(self) -> None:
        name = "t" + HOSTILE.replace("/", "") + ".jsonl"
        self.valid(name)
        for argv in (
            ["verify", name],
            ["show", name],
            ["report", name, "-o", "r.html"],
            ["checkpoint", name, "-o", "-"],
        ):
            with self.subTest(argv[0]):
                self.assert_clean(self.agentloop(*argv), 0)

    def test_an_internal_error_is_one_escaped_line_exit_70(self) -> None:
        path = self.valid()
        with mock.patch("agentloop.cli.inspect.verify_file", side_effect=RuntimeError("boom " + HOSTILE)):
            import contextlib
            import io

            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                status = main(["show", path], out=io.StringIO())
        self.assert_clean(
            (status, "", err.getvalue()),
            70,
            "agentloop show: error: internal error: RuntimeError: boom \\u001b]0;pwned",
        )

    def test_the_cli_prints_only_through_output(self) -> None:
        """The gate behind item 1: ``print``/``write`` appear in ``agentloop/cli/output.py`` only."""
        folder = os.path.join(ROOT, "agentloop", "cli")
        found = []
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".py") or name == "output.py":
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                tree = ast.parse(handle.read(), name)
            for node in ast.walk(tree):
                if isinstance(node, ast.Call):
                    f = node.func
                    if (isinstance(f, ast.Name) and f.id == "print") or (
                        isinstance(f, ast.Attribute) and f.attr in ("write", "writelines")
                    ):
                        found.append("%s:%d" % (name, node.lineno))
        self.assertEqual(found, [], "print through agentloop.cli.output.emit/complain, which escape")


# --- 6. no traceback: one line, a documented code ----------------------------------------------


class TestNoTraceback(HostileCase):
    def test_run_checks_every_path_before_the_first_model_call(self) -> None:
        os.mkdir(self.path("D"))
        old = self.valid("old.jsonl")
        cases = [
            (["-o", "missing_dir/x.jsonl"], "missing_dir/x.jsonl: the folder missing_dir does not exist"),
            (["-o", "D", "--overwrite"], "D: is a directory"),
            (["-o", "/dev/null", "--overwrite"], "/dev/null: is a character device, not a regular file"),
            (
                ["-o", "n.jsonl", "--checkpoint", "missing_dir/c"],
                "missing_dir/c: the folder missing_dir does not exist",
            ),
            (["-o", "old.jsonl"], "old.jsonl: already exists (pass --overwrite to replace it)"),
            (["-o", "old.jsonl", "--overwrite", "--checkpoint", "D"], "D: is a directory"),
        ]
        before = read_lines(old)
        with LoopbackServer() as server:
            for extra, message in cases:
                with self.subTest(extra):
                    argv = _run_argv(server, "unused")[:-2] + extra
                    self.assert_clean(self.agentloop(*argv), 2, "agentloop run: error: " + message)
            self.assertEqual(server.requests, [])  # not one model call
        self.assertEqual(read_lines(old), before)  # --overwrite of a refused run kept the old transcript
        self.assertFalse(os.path.exists(self.path("n.jsonl")))

    def test_anchor_commands_name_a_missing_folder(self) -> None:
        self.valid()
        self.assert_clean(
            self.agentloop("checkpoint", "t.jsonl", "-o", "missing_dir/x"),
            2,
            "agentloop checkpoint: error: missing_dir/x: the folder missing_dir does not exist",
        )
        self.assert_clean(
            self.agentloop("prove", "t.jsonl", "--index", "0", "-o", "missing_dir/p.json"),
            2,
            "agentloop prove: error: missing_dir/p.json: the folder missing_dir does not exist",
        )
        self.assert_clean(
            self.agentloop("report", "t.jsonl", "-o", "missing_dir/r.html"),
            2,
            "agentloop report: error: missing_dir/r.html: the folder missing_dir does not exist",
        )

    def test_replay_to_a_directory_and_of_a_transcript_it_cannot_replay(self) -> None:
        self.valid()
        os.mkdir(self.path("D"))
        self.assert_clean(
            self.agentloop("replay", "t.jsonl", "--tools", "demo:demo_tools", "-o", "D"),
            2,
            "agentloop replay: error: D: is a directory",
        )
        from agentloop import TranscriptWriter

        with TranscriptWriter(self.path("nobudget.jsonl")) as out:  # chain-valid, without budgets
            out.append("task", {"format": "agentloop/1", "task": "t", "tools": []})
            out.append("stop", {"reason": "no_tool_calls", "steps": 0, "tokens": 0, "detail": ""})
        self.assert_clean(
            self.agentloop("replay", "nobudget.jsonl", "--tools", "demo:demo_tools"),
            2,
            "agentloop replay: error: cannot replay nobudget.jsonl",
        )

    @unittest.skipUnless(os.path.exists("/dev/full") and os.path.exists("/bin/sh"), "needs /dev/full and /bin/sh")
    def test_a_full_or_closed_stdout_is_one_line_not_an_internal_error(self) -> None:
        self.valid()
        with open("/dev/full", "w") as full:
            proc = subprocess.run(
                CLI + ["verify", "t.jsonl"],
                cwd=self.dir,
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=full,
                stderr=subprocess.PIPE,
                timeout=TIMEOUT,
            )
        self.assert_clean(
            (proc.returncode, "", self.text(proc.stderr)),
            2,
            "agentloop verify: error: standard output: cannot write: No space left on device",
        )
        closed = ["/bin/sh", "-c", 'exec "$@" >&-', "sh"] + CLI + ["verify", "t.jsonl"]  # started with fd 1 closed
        proc = subprocess.run(
            closed, cwd=self.dir, env=self.env(), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=TIMEOUT
        )
        self.assertEqual(
            (proc.returncode, self.text(proc.stderr)), (2, "agentloop: error: standard output is closed\n")
        )

    def test_show_into_a_closed_pipe_exits_quietly(self) -> None:
        data = b"".join(read_lines(self.valid())) * 300  # far more than a pipe holds
        self.write_bytes(data, "big.jsonl")
        proc = self.popen(CLI + ["show", "big.jsonl"])
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()  # | head -1
        err = proc.stderr.read()
        proc.stderr.close()
        status = proc.wait(timeout=TIMEOUT)
        self.assertTrue(first.startswith(b"seq=0 task"))
        self.assert_clean((status, "", self.text(err)), 141)
        self.assertEqual(err, b"")

    def test_ctrl_c_during_run_leaves_a_verifiable_prefix_and_exits_130(self) -> None:
        # A background job of a non-interactive shell starts with SIGINT ignored, and a child inherits that
        # (Python then installs no KeyboardInterrupt handler): this run must be one a Ctrl-C can reach.
        inherited = signal.getsignal(signal.SIGINT)
        with LoopbackServer([Canned(openai_reply("late"), delay=TIMEOUT)]) as server:
            if inherited == signal.SIG_IGN:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
            try:
                proc = self.popen(CLI + _run_argv(server, "t.jsonl"))
            finally:
                if inherited == signal.SIG_IGN:
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
            assert proc.stdout is not None
            self.assertTrue(proc.stdout.readline().startswith(b"seq=0 task"))  # the request is in flight
            deadline = time.monotonic() + TIMEOUT
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.02)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=TIMEOUT)
        self.assert_clean(
            (proc.returncode, self.text(out), self.text(err)),
            130,
            "agentloop run: error: interrupted (Ctrl-C); t.jsonl holds 1 record, "
            "a verifiable prefix without a stop record",
        )
        self.assertTrue(verify_file(self.path()).ok)

    def test_a_tool_that_exits_or_interrupts_is_named_and_the_prefix_verifies(self) -> None:
        for tool, status, message in (
            ("bye", 4, "the run did not finish: a tool or the model raised SystemExit(3); t.jsonl holds 2 records"),
            ("interrupt", 130, "interrupted (Ctrl-C); t.jsonl holds 2 records"),
        ):
            with self.subTest(tool), LoopbackServer([openai_reply("", [("c1", tool, "{}")])]) as server:
                result = self.agentloop(*_run_argv(server, "t.jsonl", "--overwrite"))
                self.assert_clean(result, status, "agentloop run: error: " + message)
                verdict = verify_file(self.path())
                self.assertEqual((verdict.ok, verdict.count, verdict.complete), (True, 2, False))

    def test_demo_out_to_a_missing_folder(self) -> None:
        proc = subprocess.run(
            [sys.executable, os.path.join(ROOT, "demo.py"), "--out", "missing_dir"],
            cwd=self.dir,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=TIMEOUT,
        )
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(self.text(proc.stderr), "demo.py: error: --out missing_dir: does not exist\n")


# --- 7. no hang: what is not a regular file is refused at once ---------------------------------


@unittest.skipUnless(hasattr(os, "mkfifo") and os.path.exists("/dev/zero"), "needs FIFOs and /dev/zero")
class TestNoHang(HostileCase):
    COMMANDS = (
        ["verify"],
        ["show"],
        ["report", "-o", "r.html"],
        ["checkpoint", "-o", "-"],
        ["repair"],
        ["prove", "--index", "0"],
    )

    def test_fifo_devices_and_directories_are_refused_by_every_reader(self) -> None:
        os.mkfifo(self.path("fifo"))
        os.mkdir(self.path("D"))
        for target, what in (
            ("fifo", "is a named pipe (FIFO)"),
            ("/dev/zero", "is a character device"),
            ("/dev/urandom", "is a character device"),
            ("D", "is a directory"),
        ):
            for command in self.COMMANDS:
                with self.subTest(command=command[0], target=target):
                    argv = [command[0], target] + command[1:]
                    self.assert_clean(
                        self.agentloop(*argv, timeout=20), 2, "agentloop %s: error: %s: %s" % (command[0], target, what)
                    )

    def test_run_to_a_fifo_is_refused(self) -> None:
        os.mkfifo(self.path("fifo"))
        with LoopbackServer() as server:
            result = self.agentloop(*_run_argv(server, "fifo", "--overwrite"), timeout=20)
        self.assert_clean(result, 2, "agentloop run: error: fifo: is a pipe, not a regular file")

    def test_a_pipe_on_stdin_is_read_once_by_show_verify_and_report(self) -> None:
        data = b"".join(read_lines(self.valid()))
        shown = self.agentloop("show", "/dev/stdin", stdin=data)
        self.assert_clean(shown, 0)
        self.assertEqual(len(shown[1].splitlines()), 12)  # 11 records, then the verdict
        self.assertIn("/dev/stdin: ok, 11 records", shown[1])
        self.assert_clean(self.agentloop("verify", "/dev/stdin", stdin=data), 0)
        self.assert_clean(self.agentloop("report", "/dev/stdin", "-o", "piped.html", stdin=data), 0)
        with open(self.path("piped.html"), encoding="utf-8") as handle:
            self.assertIn("✓ VERIFIED</strong>: 11 records", handle.read())


# --- should behave: no silent replacement, exit codes that tell an answer from a stop ----------


class TestBehaviour(HostileCase):
    def test_no_command_replaces_a_file_it_did_not_write(self) -> None:
        self.valid()
        other = self.write_bytes(b"not mine\n", "other.jsonl")
        self.assert_clean(
            self.agentloop("report", "t.jsonl", "-o", "other.jsonl"),
            2,
            "agentloop report: error: other.jsonl: already exists (pass --overwrite to replace it)",
        )
        self.assert_clean(
            self.agentloop("prove", "t.jsonl", "--index", "0", "-o", "other.jsonl"),
            2,
            "agentloop prove: error: other.jsonl: already exists (pass --overwrite to replace it)",
        )
        with open(other, "rb") as handle:
            self.assertEqual(handle.read(), b"not mine\n")
        self.assert_clean(self.agentloop("report", "t.jsonl", "-o", "r.html"), 0)
        self.assert_clean(self.agentloop("report", "t.jsonl", "-o", "r.html"), 0)  # its own page
        self.assert_clean(self.agentloop("prove", "t.jsonl", "--index", "0", "-o", "other.jsonl", "--overwrite"), 0)

    def test_run_exits_0_only_on_an_answer(self) -> None:
        call = openai_reply("", [("c1", "shout", '{"text": "hi"}')])
        for script, extra, status, reason in (
            ([openai_reply("42")], [], 0, "no_tool_calls"),
            ([call, call, call, call], [], 3, "step_budget"),
            ([openai_error(500, "down", "server_error")], [], 1, "model_error"),
        ):
            with self.subTest(reason), LoopbackServer(script) as server:
                result = self.agentloop(*_run_argv(server, "t.jsonl", "--overwrite", *extra))
                self.assert_clean(result, status)
                self.assertIn("stop: %s " % (reason,), result[1])

    def test_repair_refuses_a_file_with_no_complete_record(self) -> None:
        torn = self.write_bytes(read_lines(self.valid())[0][:30], "torn.jsonl")
        result = self.agentloop("repair", "torn.jsonl")
        self.assert_clean(result, 1)
        self.assertIn("torn.jsonl: not repaired: it holds no complete record", result[1])
        self.assertEqual(os.path.getsize(torn), 30)

    def test_messages_speak_command_line(self) -> None:
        self.valid()
        self.write_bytes(b"", "c")
        with LoopbackServer() as server:
            for argv, words in (
                (_run_argv(server, "t.jsonl"), "pass --overwrite"),
                (_run_argv(server, "n.jsonl", "--checkpoint", "c"), "pass --overwrite"),
                (
                    [
                        "run",
                        "--model",
                        "openai:gpt-test",
                        "--tools",
                        "demo:demo_tools",
                        "--task",
                        "t",
                        "--max-steps",
                        "1",
                        "--max-tokens",
                        "9",
                        "-o",
                        "k.jsonl",
                    ],
                    "set OPENAI_API_KEY",
                ),
            ):
                with self.subTest(words):
                    code, out, err = self.agentloop(*argv)
                    self.assert_clean((code, out, err), 2, words)
                    self.assertNotRegex(err, r"[a-z_]+=(True|\s|$)")

    def test_no_key_anywhere(self) -> None:
        script = [
            openai_reply("the key is " + SECRET, [("c1", "shout", json.dumps({"text": SECRET}))]),
            openai_error(401, "bad key " + SECRET, "invalid_request_error"),
        ]
        with LoopbackServer(script) as server:
            argv = _run_argv(server, "t.jsonl")
            argv[argv.index(server.openai_url)] = "openai:gpt-test"
            argv[argv.index("--model-name") : argv.index("--model-name") + 2] = ["--base-url", server.openai_url]
            code, out, err = self.agentloop(*argv, OPENAI_API_KEY=SECRET)
        self.assertNotIn("Traceback", out + err)
        for where, text in (("stdout", out), ("stderr", err)):
            self.assertNotIn(SECRET, text, where)
        with open(self.path(), "rb") as handle:
            self.assertNotIn(SECRET.encode("ascii"), handle.read())


if __name__ == "__main__":
    unittest.main()
