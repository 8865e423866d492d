"""A batch is exported only when its ledger's verdict (agentloop.batch.audit_batch) holds."""

from __future__ import annotations

import os
import shutil

from agentloop.errors import ExportError, MalformedManifestError
from agentloop.export import FailedRun, Run, load_batch, read_batch
from tests.export.fixtures import BATCH_KEY, copy_batch, retried_batch
from tests.support.helpers import TempDir

BATCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "export", "batch")


class TestReadBatch(TempDir):
    def copy(self) -> str:
        return copy_batch(BATCH, self.path("b"))

    def test_every_ledger_line_in_order_failed_runs_included(self) -> None:
        runs = read_batch(self.copy(), checkpoint=self.path("b/manifest.checkpoint"), key=BATCH_KEY)
        self.assertEqual(
            [(r.name, type(r).__name__) for r in runs],
            [("alpha", "Run"), ("beta", "Run"), ("gamma", "Run"), ("delta", "FailedRun")],
        )
        alpha, delta = runs[0], runs[3]
        assert isinstance(alpha, Run) and isinstance(delta, FailedRun)
        self.assertEqual((alpha.verdict.count, alpha.stop and alpha.stop["reason"]), (7, "no_tool_calls"))
        self.assertEqual((delta.status, delta.why), ("worker_error", "BrokenProcessPool"))

    def test_a_run_is_its_last_line_a_retried_line_is_no_run(self) -> None:
        runs = read_batch(retried_batch(BATCH, self.path("r")))
        self.assertEqual(
            [(r.name, type(r).__name__) for r in runs],
            [("beta", "Run"), ("alpha", "Run"), ("gamma", "Run"), ("delta", "FailedRun")],
        )

    def assert_refused(self, manifest: str, *words: str, **options: object) -> None:
        with self.assertRaises(ExportError) as caught:
            read_batch(manifest, **options)  # type: ignore[arg-type]
        for word in words:
            self.assertIn(word, str(caught.exception))

    def test_an_altered_transcript_refuses_the_whole_batch(self) -> None:
        manifest = self.copy()
        with open(self.path("b/beta.jsonl"), "rb") as handle:
            data = handle.read()
        with open(self.path("b/beta.jsonl"), "wb") as handle:
            handle.write(data.replace(b'"value":5', b'"value":6'))
        self.assert_refused(manifest, 'the ledger\'s verdict fails: 1 altered ("beta")')

    def test_a_missing_or_extra_transcript_refuses_it(self) -> None:
        manifest = self.copy()
        os.remove(self.path("b/gamma.jsonl"))
        self.assert_refused(manifest, '1 missing ("gamma")')
        shutil.copyfile(os.path.join(BATCH, "gamma.jsonl"), self.path("b/gamma.jsonl"))
        shutil.copyfile(os.path.join(BATCH, "gamma.jsonl"), self.path("b/stray.jsonl"))
        self.assert_refused(manifest, "1 extra file")

    def test_a_checkpoint_that_does_not_hold_refuses_it(self) -> None:
        manifest = self.copy()
        self.assert_refused(
            manifest,
            "the checkpoint fails",
            checkpoint=self.path("b/manifest.checkpoint"),
            key=b"another key of 32 bytes, not it!",
        )

    def test_a_malformed_ledger_is_its_own_error(self) -> None:
        manifest = self.copy()
        with open(manifest, "ab") as handle:
            handle.write(b"not json\n")
        with self.assertRaises(MalformedManifestError):
            load_batch(manifest)
