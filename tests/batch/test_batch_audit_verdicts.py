"""audit_batch names each file that is not the one its ledger line describes, and why.

The ledgers here are a real batch's, with one field of one line changed: the
audit must then find exactly that field.
"""

from __future__ import annotations

import json
import os
import shutil
import unittest
from typing import Any, Dict, List

from agentloop.batch import RunSpec, run_many
from agentloop.batch.audit import audit_batch
from agentloop.batch.ledger import ledger_bytes

from tests.support.helpers import TempDir

UNREADABLE = "cannot be read: unreadable: FileNotFoundError: No such file or directory"


class AuditCase(TempDir):
    def setUp(self) -> None:
        super().setUp()
        specs = [RunSpec("a", "t", 5, 1000), RunSpec("b", "u", 5, 1000)]
        self.result = run_many(
            specs,
            model="tests.support.batch_models:factory",
            tools="tests.support.batch_models:tools",
            out_dir=self.dir,
        )
        with open(self.result.manifest, "rb") as handle:
            self.lines: List[Dict[str, Any]] = [json.loads(raw) for raw in handle.read().splitlines()]
        self.files = [self.path("a.jsonl"), self.path("b.jsonl")]

    def ledger(self, lines: List[Dict[str, Any]]) -> str:
        return self.write_bytes(ledger_bytes(lines), "edited.manifest")

    def verdict(self, lines: List[Dict[str, Any]], files: Any = None, workers: int = 1) -> Any:
        return audit_batch(self.files if files is None else files, self.ledger(lines), workers=workers)


class TestAlteredVerdicts(AuditCase):
    def test_the_unchanged_batch_verifies(self) -> None:
        result = audit_batch(self.files, self.result.manifest)
        self.assertEqual((result.ok, result.verified, result.altered), (True, ("a", "b"), ()))

    def test_a_field_the_ledger_states_otherwise_is_named(self) -> None:
        a, b = self.lines
        result = self.verdict([dict(a, records=a["records"] + 1), dict(b, stop="sentinel")])
        self.assertEqual(
            result.altered,
            (("a", "its records differs from the ledger's"), ("b", "its stop differs from the ledger's")),
        )
        self.assertFalse(result.ok)
        result = self.verdict([dict(a, origin=b["origin"]), b])
        self.assertEqual((result.verified, result.altered), (("b",), (("a", "its origin differs from the ledger's"),)))

    def test_a_file_of_other_bytes_names_both_digests(self) -> None:
        a, b = self.lines
        result = self.verdict([dict(a, sha256=b["sha256"]), b])
        want = "its SHA-256 is %s..., the ledger says %s..." % (a["sha256"][:16], b["sha256"][:16])
        self.assertEqual(result.altered, (("a", want),))

    def test_a_listed_file_that_cannot_be_read_is_altered_serially_and_in_a_pool(self) -> None:
        gone = dict(self.lines[0], name="gone")
        files = [self.path("gone.jsonl")] + self.files
        for workers in (1, 2):
            with self.subTest(workers=workers):
                result = self.verdict(self.lines + [gone], files, workers)
                self.assertEqual((result.verified, result.altered), (("a", "b"), (("gone", UNREADABLE),)))


class TestExtraVerdicts(AuditCase):
    def test_a_second_file_for_the_same_run_is_repeated_not_extra(self) -> None:
        os.makedirs(self.path("copy"))
        copy = shutil.copy(self.files[0], self.path("copy/a.jsonl"))
        for files, repeated in (
            (self.files + [copy], (copy, self.files[0])),
            (self.files + [self.files[0]], (self.files[0],) * 2),
        ):
            with self.subTest(repeated=repeated):
                result = audit_batch(files, self.result.manifest)
                self.assertEqual(
                    (result.verified, result.extra, result.repeated, result.ok), (("a", "b"), (), (repeated,), False)
                )


if __name__ == "__main__":
    unittest.main()
