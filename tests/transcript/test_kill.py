"""SIGKILL at any moment leaves a transcript whose complete lines all verify.

A child process (``tests/support/kill_child.py``) runs a long loop with ``fsync``
durability and prints, after each durable step, how many records are on
disk.  The parent reads k of those lines, waits a little (0 to 3 ms, so the
kill lands at different points of a write), SIGKILLs the child, and checks:

1. the file verifies, or its only fault is a torn last line, which
   ``repair`` removes (and then it verifies);
2. no record the child reported as written is missing;
3. in ``writer`` mode, the checkpoint on disk is whole (it parses), the
   transcript extends it, and it covers every record reported.

Properties, not exact counts: how far the child got past the last line read
depends on the scheduler.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import unittest
from typing import List, Tuple

from agentloop import verify_file
from agentloop.transcript.anchor import verify_checkpoint
from agentloop.transcript.checkpoint import read_checkpoint
from agentloop.transcript.repair import repair

from tests.support.helpers import TempDir

CHILD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support", "kill_child.py")

#: (lines read before the kill, extra wait in ms) for each mode.
RUN_POINTS = [(0, 0.0), (1, 0.0), (2, 0.3), (5, 1.0), (11, 0.0), (24, 2.0), (40, 0.5), (75, 3.0), (120, 0.1)]
WRITER_POINTS = [(1, 0.0), (3, 0.2), (10, 1.0), (30, 0.0), (60, 2.5)]


@unittest.skipUnless(hasattr(signal, "SIGKILL"), "no SIGKILL on this platform")
class TestKill(TempDir):
    tried = 0
    torn = 0

    def kill_after(self, args: List[str], lines: int, wait_ms: float) -> int:
        """Start the child, read ``lines`` lines, wait, SIGKILL it; the highest count it reported."""
        proc = subprocess.Popen([sys.executable, CHILD] + args, stdout=subprocess.PIPE)
        reported = 0
        try:
            assert proc.stdout is not None
            for _ in range(lines):
                line = proc.stdout.readline()
                if not line:
                    break
                reported = max(reported, int(line))
            deadline = time.perf_counter() + wait_ms / 1000
            while time.perf_counter() < deadline:
                pass
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            # Lines written before the kill were promises too.
            for line in proc.stdout.read().split():
                reported = max(reported, int(line))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        self.assertEqual(proc.returncode, -signal.SIGKILL)
        TestKill.tried += 1
        return reported

    def check_survivor(self, path: str, reported: int) -> Tuple[int, bool]:
        """Steps 1 and 2: the records on disk after repair, and whether a line was torn."""
        if not os.path.exists(path):
            self.assertEqual(reported, 0)
            return 0, False
        verdict = verify_file(path)
        torn = not verdict.ok
        if torn:
            self.assertEqual([f.kind for f in verdict.faults], ["bad_json"], verdict.faults)
            self.assertIn("torn line", verdict.faults[0].detail)
            done = repair(path)
            self.assertGreater(done.removed, 0)
            verdict = done.result
            TestKill.torn += 1
        self.assertTrue(verdict.ok, verdict.faults)
        self.assertGreaterEqual(verdict.count, reported)
        return verdict.count, torn

    def test_run_with_fsync_killed_at_several_points(self) -> None:
        for number, (lines, wait) in enumerate(RUN_POINTS):
            with self.subTest(lines=lines, wait_ms=wait):
                path = self.path("run-%d.jsonl" % number)
                reported = self.kill_after(["run", path], lines, wait)
                self.check_survivor(path, reported)

    def test_writer_with_a_checkpoint_after_every_record(self) -> None:
        for number, (lines, wait) in enumerate(WRITER_POINTS):
            with self.subTest(lines=lines, wait_ms=wait):
                path, ckpt = self.path("w-%d.jsonl" % number), self.path("w-%d.checkpoint" % number)
                reported = self.kill_after(["writer", path, ckpt], lines, wait)
                count, _ = self.check_survivor(path, reported)
                # 3. the checkpoint is whole, covers what was reported, and the file extends it
                head = read_checkpoint(ckpt)
                self.assertGreaterEqual(head.size, reported)
                result = verify_checkpoint(path, ckpt)
                self.assertTrue(result.ok, result.faults)
                self.assertLessEqual(count - head.size, 1)  # at most the record written before its checkpoint
                leftovers = [n for n in os.listdir(self.dir) if n.startswith(".")]
                self.assertTrue(all(n.endswith(".tmp") for n in leftovers), leftovers)

    @classmethod
    def tearDownClass(cls) -> None:
        if os.environ.get("AGENTLOOP_KILL_REPORT"):
            print("\nkill points tried: %d, torn last lines repaired: %d" % (cls.tried, cls.torn), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
