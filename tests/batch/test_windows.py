"""run_many keeps a bounded window of runs in flight, and audit_batch checks files in chunks.

Both change only how much is held at once, never a verdict: a batch larger
than the window runs to the same ledger on an executor as serially, and an
audit in chunks across processes names the same altered files as one
process (``bench/batch.py --memory`` measures the memory itself).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import tempfile
import threading
import unittest
from typing import Any, List
from unittest import mock

from agentloop.batch import RunSpec, audit_batch, run_many
from agentloop.batch import audit, driver
from agentloop.canonical import canonical_bytes
from agentloop.errors import AgentloopError


class CountingExecutor(concurrent.futures.ThreadPoolExecutor):
    """A thread pool that records the most runs ever submitted and not yet done."""

    def __init__(self) -> None:
        super().__init__(4)
        self.lock = threading.Lock()
        self.open = self.most = 0

    def submit(self, fn: Any, *args: Any, **kwargs: Any) -> "concurrent.futures.Future[Any]":
        with self.lock:
            self.open += 1
            self.most = max(self.most, self.open)
        future = super().submit(fn, *args, **kwargs)
        future.add_done_callback(self.closed)
        return future

    def closed(self, future: Any) -> None:
        with self.lock:
            self.open -= 1


class TestWindows(unittest.TestCase):
    def setUp(self) -> None:
        self.folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.folder, True)
        self.specs = [RunSpec("run-%03d" % i, "task %d" % i, 5, 10**6) for i in range(150)]

    def batch(self, name: str, **options: Any) -> Any:
        return run_many(
            self.specs,
            model="tests.support.batch_models:CountingModel",
            tools="tests.support.batch_models:tools",
            out_dir=os.path.join(self.folder, name),
            **options,
        )

    def test_a_window_of_runs_in_flight_and_the_same_ledger(self) -> None:
        serial = self.batch("serial")
        with mock.patch.object(driver, "IN_FLIGHT", 10), CountingExecutor() as pool:
            windowed = self.batch("windowed", executor=pool)
        self.assertLessEqual(pool.most, 16)  # max(IN_FLIGHT, 4 per worker)
        self.assertGreater(pool.most, 1)
        self.assertTrue(serial.ok and windowed.ok)
        self.assertEqual(serial.root, windowed.root)
        self.assertEqual([e.ledger_line() for e in serial.entries], [e.ledger_line() for e in windowed.entries])

    def test_an_audit_in_chunks_across_processes_finds_what_one_process_finds(self) -> None:
        result = self.batch("b")
        files: List[str] = [e.path for e in result.entries]
        for victim in (files[3], files[70], files[149]):
            with open(victim, "ab") as handle:
                handle.write(b"\n")
        one = audit_batch(files, result.manifest)
        self.assertEqual([name for name, _ in one.altered], ["run-003", "run-070", "run-149"])
        with mock.patch.object(audit, "CHUNK", 7):
            self.assertEqual(audit_batch(files, result.manifest, workers=3), one)
        self.assertEqual(audit_batch(files, result.manifest, workers=2), one)

    def test_a_bad_ledger_or_checkpoint_raises_the_same_with_one_worker_or_three(self) -> None:
        result = self.batch("b")
        files: List[str] = [e.path for e in result.entries]
        with open(result.manifest, "rb") as handle:
            good = handle.read().split(b"\n")[:-1]
        lines = [json.loads(line) for line in good]
        without_root = dict(lines[40])
        del without_root["root"]  # a worker comparing with this line would raise KeyError
        manifests = {
            "not canonical": good[:40] + [good[40].replace(b":", b": ", 1)] + good[41:],
            "a missing key": good[:40] + [canonical_bytes(without_root)] + good[41:],
            "a line after an ok line": good + [good[7]],
            "not JSON": good[:90] + [b"{"] + good[91:],
            "a bad line, then one not JSON": good[:30] + [canonical_bytes(without_root)] + good[31:90] + [b"{"],
        }
        bad_note = os.path.join(self.folder, "bad.checkpoint")
        with open(bad_note, "wb") as handle:
            handle.write(b"not a note\n")
        cases = [(what, b"\n".join(data) + b"\n", None) for what, data in manifests.items()]
        cases += [("no checkpoint file", b"\n".join(good) + b"\n", os.path.join(self.folder, "gone"))]
        cases += [("a malformed checkpoint", b"\n".join(good) + b"\n", bad_note)]
        for what, data, checkpoint in cases:
            with open(result.manifest, "wb") as handle:
                handle.write(data)
            raised = []
            for workers in (1, 3):
                with self.subTest(what=what, workers=workers), mock.patch.object(audit, "CHUNK", 7):
                    with self.assertRaises(Exception) as caught:
                        audit_batch(files, result.manifest, checkpoint=checkpoint, workers=workers)
                    raised.append((type(caught.exception), str(caught.exception)))
            self.assertEqual(raised[0], raised[1], what)
            self.assertTrue(issubclass(raised[0][0], (AgentloopError, OSError)), raised[0])


if __name__ == "__main__":
    unittest.main()
