"""When a transcript appears at its path: never empty, and an old run is kept until the new one has
its first turn (agentloop/transcript/writer.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import unittest
from typing import Any, List

from agentloop import ModelReply, run, verify_file
from agentloop.errors import TranscriptExistsError

from tests.support.helpers import TempDir, demo_tools, read_lines

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHILD = """
import os, signal, sys
sys.path.insert(0, %r)
from agentloop import TranscriptWriter
from tests.support.runs import Run
out = TranscriptWriter(sys.argv[1])
for _ in range(int(sys.argv[2])):
    out.append("task", Run.task())
os.kill(os.getpid(), signal.SIGKILL)
""" % (ROOT,)


class TestPublish(TempDir):
    @unittest.skipUnless(hasattr(signal, "SIGKILL"), "no SIGKILL here")
    def test_a_writer_killed_before_its_first_record_leaves_no_file_and_after_it_one_that_verifies(self) -> None:
        for records in (0, 1):
            path = self.path("k%d.jsonl" % records)
            done = subprocess.run([sys.executable, "-c", CHILD, path, str(records)], timeout=60)
            self.assertEqual(done.returncode, -signal.SIGKILL)
            if records == 0:
                self.assertFalse(os.path.exists(path))  # never an empty file (no_records)
            else:
                verdict = verify_file(path)
                self.assertEqual((verdict.ok, verdict.count), (True, 1))

    def test_run_overwrite_keeps_the_old_run_on_disk_until_the_new_one_has_its_first_turn(self) -> None:
        run("old", lambda m, t: ModelReply("old answer"), [], transcript=self.path(), max_steps=2, max_tokens=100)
        old = read_lines(self.path())
        seen: List[Any] = []

        def model(messages: Any, manifest: Any) -> ModelReply:
            seen.append(read_lines(self.path()))  # during the first model call of the new run
            return ModelReply("new answer")

        run("new", model, [], transcript=self.path(), max_steps=2, max_tokens=100, overwrite=True)
        self.assertEqual(seen, [old])
        self.assertIn(b"new answer", b"".join(read_lines(self.path())))
        self.assertTrue(verify_file(self.path()).ok)

    def test_an_overwriting_run_interrupted_in_its_first_model_call_leaves_the_old_run(self) -> None:
        run("old", lambda m, t: ModelReply("old answer"), [], transcript=self.path(), max_steps=2, max_tokens=100)
        old = read_lines(self.path())

        def model(messages: Any, manifest: Any) -> ModelReply:
            raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            run("new", model, demo_tools(), transcript=self.path(), max_steps=2, max_tokens=100, overwrite=True)
        self.assertEqual(read_lines(self.path()), old)
        self.assertEqual(os.listdir(self.dir), [os.path.basename(self.path())])

    def test_a_run_that_stops_before_its_first_turn_replaces_the_old_one(self) -> None:
        run("old", lambda m, t: ModelReply("old answer"), [], transcript=self.path(), max_steps=2, max_tokens=100)
        result = run(
            "new", lambda m, t: ModelReply("x"), [], transcript=self.path(), max_steps=0, max_tokens=100, overwrite=True
        )
        self.assertEqual((result.stop_reason, len(read_lines(self.path()))), ("step_budget", 2))

    def test_a_path_made_by_someone_else_meanwhile_is_never_replaced(self) -> None:
        from agentloop import TranscriptWriter
        from tests.support.runs import Run

        out = TranscriptWriter(self.path())
        with open(self.path(), "wb") as handle:
            handle.write(b"someone else's\n")
        with self.assertRaises(TranscriptExistsError):
            out.append("task", Run.task())
        out.close()
        self.assertEqual(read_lines(self.path()), [b"someone else's\n"])
        self.assertEqual(os.listdir(self.dir), [os.path.basename(self.path())])
