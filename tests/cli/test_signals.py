"""Ctrl-C while importing, SIGTERM and SIGHUP during ``run``: one line, no traceback, the documented
exit status, and what the transcript holds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import unittest

from agentloop import verify_file

from tests.support.helpers import TempDir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=ROOT)

#: A KeyboardInterrupt raised during the import of agentloop, as Ctrl-C would raise it there.
INTERRUPTED_IMPORT = """
import sys
sys.argv = ["agentloop", "verify", "x.jsonl"]
class Finder:
    def find_spec(self, name, path=None, target=None):
        if name == "agentloop.transcript.verify":
            raise KeyboardInterrupt
        return None
sys.meta_path.insert(0, Finder())
from agentloop.cli.main import console
console()
"""


@unittest.skipUnless(hasattr(signal, "SIGHUP"), "POSIX signals")
class TestSignals(TempDir):
    def test_ctrl_c_while_the_command_line_imports_is_one_line_and_130(self) -> None:
        done = subprocess.run(
            [sys.executable, "-c", INTERRUPTED_IMPORT], env=ENV, capture_output=True, text=True, timeout=60
        )
        self.assertEqual(done.returncode, 130, done.stderr)
        self.assertEqual(done.stderr, "agentloop: interrupted (Ctrl-C) while starting; nothing was done\n")

    def test_a_program_that_imports_agentloop_keeps_its_own_traceback(self) -> None:
        program = INTERRUPTED_IMPORT.replace(
            'sys.argv = ["agentloop", "verify", "x.jsonl"]', 'sys.argv = ["myprogram"]'
        )
        done = subprocess.run([sys.executable, "-c", program], env=ENV, capture_output=True, text=True, timeout=60)
        self.assertIn("Traceback", done.stderr)  # not ours to hide

    def run_and_signal(self, signum: int) -> "subprocess.CompletedProcess[str]":
        path = self.path()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agentloop",
                "run",
                "--model",
                "tests.cli.slow_models:sleeper",
                "--task",
                "t",
                "--max-steps",
                "3",
                "--max-tokens",
                "100",
                "-o",
                path,
            ],
            cwd=ROOT,
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while (
            not os.path.exists(path) and time.monotonic() < deadline
        ):  # the task record is written: the model call is next
            time.sleep(0.02)
        time.sleep(0.2)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def test_sigterm_and_sighup_during_run_say_what_the_transcript_holds(self) -> None:
        for signum, name in ((signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")):
            with self.subTest(name):
                done = self.run_and_signal(signum)
                self.assertEqual(done.returncode, 128 + signum, done.stderr)
                self.assertEqual(done.stderr.count("\n"), 1, done.stderr)
                self.assertIn("agentloop run: error: terminated (%s); " % (name,), done.stderr)
                self.assertIn("holds 1 record, a verifiable prefix without a stop record", done.stderr)
                self.assertNotIn("Traceback", done.stderr)
                self.assertTrue(verify_file(self.path()).ok)
                os.unlink(self.path())
