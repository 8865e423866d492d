"""The command line of approvals: ``run --approve``, ``pending``, ``resume``.

The ``ask`` prompt is driven twice: with piped stdin in this process, and
through a real pseudo-terminal (``pty``) in a child process, where the
bytes a terminal would receive are read back raw.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import select
import subprocess
import sys
import time
import unittest
from typing import Any, List, Tuple

from agentloop import read_pending, verify_file
from agentloop.cli.main import main

from tests.support import approval_fixtures as fx
from tests.support.helpers import TempDir, read_records

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = [
    "run",
    "--model",
    "tests.support.approval_fixtures:make_model",
    "--tools",
    "tests.support.approval_fixtures:TOOLS",
    "--task",
    "clean up",
    "--max-steps",
    "5",
    "--max-tokens",
    "10000",
]
RESUME = ["--model", "tests.support.approval_fixtures:make_model", "--tools", "tests.support.approval_fixtures:TOOLS"]


class Cli(TempDir):
    def setUp(self) -> None:
        super().setUp()
        fx.CALLS.clear()

    def cli(self, argv: List[str], stdin: str = "") -> Tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        old = sys.stdin
        sys.stdin = io.StringIO(stdin)
        try:
            with contextlib.redirect_stderr(err):
                status = main(argv, out=out)
        finally:
            sys.stdin = old
        return status, out.getvalue(), err.getvalue()


class TestAsk(Cli):
    def test_the_prompt_shows_a_hostile_argument_escaped_and_whole(self) -> None:
        status, out, err = self.cli(RUN + ["-o", self.path(), "--approve", "ask", "--by", "alice"], stdin="a\n")
        self.assertEqual(status, 0)
        self.assertNotIn("\x1b", err + out)
        self.assertNotIn("\u202e", err + out)
        self.assertIn('arguments (SHA-256 %s): {"path": "/tmp/\\u001b[31mred\\u202eevil"}' % (fx_sha(),), err)
        self.assertEqual(fx.CALLS, [("delete", {"path": fx.HOSTILE})])
        tool = [r for r in read_records(self.path()) if r["kind"] == "tool"][0]["payload"]
        self.assertEqual(tool["approval"], {"decision": "approve", "by": "alice"})

    def test_eof_defers_the_run_pauses_and_never_hangs(self) -> None:
        status, out, err = self.cli(RUN + ["-o", self.path(), "--approve", "ask", "--by", "alice"], stdin="")
        self.assertEqual(status, 5)
        self.assertIn("end of input: the call is deferred", err)
        self.assertIn('paused: call "c1" (delete) of step 1 awaits approval', out)
        self.assertEqual(fx.CALLS, [])
        self.assertEqual((verify_file(self.path()).ok, verify_file(self.path()).complete), (True, False))

    def test_answers_deny_with_a_reason_modify_and_terminate(self) -> None:
        for answer, expected in (
            ("d not today\n", {"decision": "deny", "by": "al", "reason": "not today"}),
            ('m {"path": "/tmp/safe"}\n', {"decision": "modify", "by": "al", "arguments": {"path": "/tmp/safe"}}),
            ("t stop it\n", {"decision": "terminate", "by": "al", "reason": "stop it"}),
        ):
            with self.subTest(answer=answer):
                self.cli(RUN + ["-o", self.path(), "--overwrite", "--approve", "ask", "--by", "al"], stdin=answer)
                tool = [r for r in read_records(self.path()) if r["kind"] == "tool"][0]["payload"]
                self.assertEqual(tool["approval"], expected)

    def test_an_answer_not_understood_is_asked_again_then_deferred(self) -> None:
        status, _, err = self.cli(RUN + ["-o", self.path(), "--approve", "ask", "--by", "al"], stdin="what\x1b\n" * 5)
        self.assertEqual(status, 5)
        self.assertEqual(err.count("not understood"), 5)
        self.assertIn('not understood: "what\\u001b"', err)
        self.assertIn("no answer understood after 5 tries: the call is deferred", err)

    def test_a_modify_answer_that_is_not_a_json_object_is_asked_again(self) -> None:
        status, _, err = self.cli(
            RUN + ["-o", self.path(), "--approve", "ask", "--by", "al"], stdin="m {oops\nm [1]\np\n"
        )
        self.assertEqual(status, 5)
        self.assertIn("not JSON: ", err)
        self.assertIn("the arguments are a JSON object", err)

    def test_a_gated_tool_without_approve_is_refused_before_anything_runs(self) -> None:
        status, _, err = self.cli(RUN + ["-o", self.path()])
        self.assertEqual(status, 2)
        self.assertIn("approver: tools 'delete' require approval, and no approver was given", err)
        self.assertFalse(os.path.exists(self.path()))

    def test_deny_all(self) -> None:
        status, _, _ = self.cli(RUN + ["-o", self.path(), "--approve", "deny-all", "--by", "ci"])
        self.assertEqual((status, fx.CALLS), (0, []))
        tool = [r for r in read_records(self.path()) if r["kind"] == "tool"][0]["payload"]
        self.assertEqual(tool["approval"], {"decision": "deny", "by": "ci", "reason": "denied by --approve deny-all"})


def fx_sha() -> str:
    import hashlib

    from agentloop.canonical import canonical_bytes

    return hashlib.sha256(canonical_bytes({"path": fx.HOSTILE})).hexdigest()


class TestPendingAndResume(Cli):
    def decisions(self, data: Any, name: str = "d.json") -> str:
        with open(self.path(name), "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        return self.path(name)

    def test_pause_pending_resume_equals_the_inline_run(self) -> None:
        self.cli(
            RUN
            + [
                "-o",
                self.path("inline.jsonl"),
                "--approve",
                self.decisions({"c1": {"decision": "approve", "by": "al", "arguments_sha256": fx_sha()}}),
            ]
        )
        fx.CALLS.clear()
        status, _, _ = self.cli(
            RUN
            + ["-o", self.path(), "--approve", self.decisions({}, "none.json"), "--checkpoint", self.path("pause.ckpt")]
        )
        self.assertEqual(status, 5)
        status, out, _ = self.cli(["pending", self.path()])
        self.assertEqual(status, 0)
        self.assertIn('call "c1" (position 0): tool "delete", approval always', out)
        self.assertIn('{"path": "/tmp/\\u001b[31mred\\u202eevil"}', out)
        self.assertNotIn("\x1b", out)
        status, out, _ = self.cli(["pending", "--json", self.path()])
        self.assertEqual(json.loads(out)["calls"][0]["arguments_sha256"], fx_sha())
        status, out, err = self.cli(
            [
                "resume",
                self.path(),
                "--decisions",
                self.decisions({"c1": {"decision": "approve", "by": "al", "arguments_sha256": fx_sha()}}),
                "--anchor",
                self.path("pause.ckpt"),
                "--checkpoint",
                self.path("final.ckpt"),
            ]
            + RESUME
        )
        self.assertEqual(status, 0, err)
        self.assertEqual(fx.CALLS, [("delete", {"path": fx.HOSTILE})])
        with open(self.path(), "rb") as a, open(self.path("inline.jsonl"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertNotIn("\x1b", out)
        # agentloop consistency proves nothing before the pause was rewritten.
        status, _, err = self.cli(["prove", self.path(), "--from", "2", "-o", self.path("proof.json")])
        self.assertEqual(status, 0, err)
        status, _, err = self.cli(
            ["consistency", "--proof", self.path("proof.json"), self.path("pause.ckpt"), self.path("final.ckpt")]
        )
        self.assertEqual(status, 0, err)
        self.assertEqual(read_pending(self.path()).stop, "no_tool_calls")
        status, out, _ = self.cli(["pending", self.path()])
        self.assertIn("nothing waits: the run is finished (stop: no_tool_calls)", out)

    def test_a_paused_run_with_max_seconds_resumes_from_the_command_line(self) -> None:
        status, out, _ = self.cli(RUN + ["--max-seconds", "60", "-o", self.path(), "--approve", "ask"])  # EOF: paused
        self.assertEqual(status, 5)
        self.assertIn("agentloop resume ", out)
        status, out, err = self.cli(
            [
                "resume",
                self.path(),
                "--decisions",
                self.decisions({"c1": {"decision": "approve", "by": "al", "arguments_sha256": fx_sha()}}),
            ]
            + RESUME
        )
        self.assertEqual((status, err), (0, ""), out)
        self.assertEqual(fx.CALLS, [("delete", {"path": fx.HOSTILE})])
        self.assertTrue(verify_file(self.path()).ok)

    def test_resume_refuses_a_decision_for_a_call_that_is_not_pending(self) -> None:
        self.cli(RUN + ["-o", self.path(), "--approve", self.decisions({}, "none.json")])
        status, _, err = self.cli(
            [
                "resume",
                self.path(),
                "--decisions",
                self.decisions({"zz": {"decision": "approve", "by": "al", "arguments_sha256": fx_sha()}}),
            ]
            + RESUME
        )
        self.assertEqual(status, 2)
        self.assertIn('decisions: call "zz" is not pending (pending: "c1")', err)
        self.assertEqual(fx.CALLS, [])

    def test_a_bad_decisions_file_is_refused_naming_the_place(self) -> None:
        self.cli(RUN + ["-o", self.path(), "--approve", self.decisions({}, "none.json")])
        status, _, err = self.cli(
            ["resume", self.path(), "--decisions", self.decisions({"c1": {"decision": "ok"}})] + RESUME
        )
        self.assertEqual(status, 2)
        self.assertIn('$["c1"].decision: "ok" is not one of approve, deny, modify, terminate', err)
        with open(self.path("twice.json"), "w") as handle:
            handle.write('{"c1": {"decision": "deny", "decision": "approve", "by": "al"}}')
        status, _, err = self.cli(["resume", self.path(), "--decisions", self.path("twice.json")] + RESUME)
        self.assertEqual(status, 2)
        self.assertEqual(
            err,
            'agentloop resume: error: %s: cannot read it as JSON: duplicate key "decision"\n'
            % (self.path("twice.json"),),
        )
        self.assertEqual(fx.CALLS, [])

    def test_resume_writes_its_checkpoint_and_an_unreadable_decisions_file_is_refused(self) -> None:
        self.cli(RUN + ["-o", self.path(), "--approve", self.decisions({}, "none.json")])
        status, _, err = self.cli(["resume", self.path(), "--decisions", self.path("missing.json")] + RESUME)
        self.assertEqual(status, 2)
        with open(self.path("broken.json"), "w") as handle:
            handle.write("{")
        status, _, err = self.cli(["resume", self.path(), "--decisions", self.path("broken.json")] + RESUME)
        self.assertEqual(status, 2)
        self.assertIn("cannot read it as JSON", err)
        status, out, err = self.cli(
            [
                "resume",
                self.path(),
                "--decisions",
                self.decisions({"c1": {"decision": "approve", "by": "a", "arguments_sha256": fx_sha()}}),
                "--checkpoint",
                self.path("c.ckpt"),
            ]
            + RESUME
        )
        self.assertEqual(status, 0, err)
        self.assertIn("checkpoint: %s" % (self.path("c.ckpt"),), out)
        self.assertIn("answer:", out)

    def test_resume_refusals_and_a_second_pause(self) -> None:
        self.cli(RUN + ["-o", self.path(), "--approve", self.decisions({}, "none.json")])
        status, _, err = self.cli(["resume", self.path(), "--key-env", "NOPE"] + RESUME)
        self.assertEqual(status, 2)
        self.assertIn("needs --checkpoint", err)
        status, out, _ = self.cli(["resume", self.path()] + RESUME)  # no decision, no approver: paused again
        self.assertEqual(status, 5)
        self.assertIn('paused: call "c1"', out)
        status, _, err = self.cli(["resume", self.path(), "--approve", self.decisions([], "list.json")] + RESUME)
        self.assertEqual(status, 2)
        self.assertIn("decisions are a JSON object", err)
        status, out, _ = self.cli(["resume", self.path(), "--approve", "deny-all", "--by", "ci"] + RESUME)
        self.assertEqual((status, fx.CALLS), (0, []))
        self.assertIn("stop: no_tool_calls", out)

    def test_pending_of_a_file_cut_between_turns_and_of_a_file_that_does_not_verify(self) -> None:
        self.cli(RUN + ["-o", self.path("whole.jsonl"), "--approve", "deny-all"])
        with open(self.path("whole.jsonl"), "rb") as handle:
            lines = handle.readlines()
        with open(self.path(), "wb") as handle:
            handle.write(b"".join(lines[:3]))
        status, out, _ = self.cli(["pending", self.path()])
        self.assertEqual(status, 0)
        self.assertIn("no call waits (3 records, no stop record", out)
        with open(self.path("bad.jsonl"), "wb") as handle:
            handle.write(b"{}\n")
        for command, extra in (("pending", []), ("resume", RESUME)):
            with self.subTest(command):
                status, _, err = self.cli([command, self.path("bad.jsonl")] + extra)
                self.assertEqual(status, 2)
                # The file is the command's FILE, not run's -o/--output.
                self.assertTrue(
                    err.startswith("agentloop %s: error: %s does not verify: " % (command, self.path("bad.jsonl"))), err
                )


@unittest.skipUnless(hasattr(os, "fork") and sys.platform != "win32", "needs a pseudo-terminal")
class TestPseudoTerminal(TempDir):
    def test_the_ask_prompt_on_a_real_terminal_shows_no_raw_escape_or_bidi_control(self) -> None:
        import pty

        controller, terminal = pty.openpty()
        env = dict(os.environ, PYTHONPATH=ROOT, PYTHONIOENCODING="utf-8")
        child = subprocess.Popen(
            [sys.executable, "-m", "agentloop"] + RUN + ["-o", self.path(), "--approve", "ask", "--by", "tty"],
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
            cwd=ROOT,
            env=env,
            close_fds=True,
        )
        os.close(terminal)
        seen = b""
        deadline = time.monotonic() + 60
        answered = False
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([controller], [], [], 0.5)
                if ready:
                    try:
                        chunk = os.read(controller, 4096)
                    except OSError:  # the child closed the terminal
                        break
                    if not chunk:
                        break
                    seen += chunk
                if not answered and b"> " in seen:
                    os.write(controller, b"d not on a terminal\n")
                    answered = True
                if child.poll() is not None and not ready:
                    break
            status = child.wait(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
            os.close(controller)
        text = seen.decode("utf-8", "replace")
        self.assertTrue(answered, text)
        self.assertEqual(status, 0, text)
        self.assertNotIn(b"\x1b", seen)
        self.assertNotIn("\u202e".encode("utf-8"), seen)
        self.assertIn('"/tmp/\\u001b[31mred\\u202eevil"', text)
        tool = [r for r in read_records(self.path()) if r["kind"] == "tool"][0]["payload"]
        self.assertEqual(tool["approval"], {"decision": "deny", "by": "tty", "reason": "not on a terminal"})


if __name__ == "__main__":
    unittest.main()
