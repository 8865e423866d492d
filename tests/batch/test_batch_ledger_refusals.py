"""The ledger and its checkpoint accept one spelling; every other one is refused with its line and rule.

Each case starts from a ledger written by a real batch and changes one thing.
"""

from __future__ import annotations

import base64
import json
import unittest
from typing import Any, Dict, List

from agentloop.batch import (
    RunSpec,
    check_extension,
    check_manifest_checkpoint,
    check_run_proof,
    parse_ledger,
    parse_manifest_checkpoint,
    prove_run,
    run_many,
)
from agentloop.batch.ledger import make_checkpoint
from agentloop.canonical import canonical_bytes
from agentloop.errors import MalformedCheckpointError, MalformedManifestError, ProofError

from tests.support.helpers import TempDir


class LedgerCase(TempDir):
    def setUp(self) -> None:
        super().setUp()
        specs = [RunSpec("a", "t", 5, 1000), RunSpec("b", "u", 5, 1000)]
        result = run_many(
            specs,
            model="tests.support.batch_models:factory",
            tools="tests.support.batch_models:tools",
            out_dir=self.path("out"),
        )
        with open(result.manifest, "rb") as handle:
            self.data = handle.read()
        self.origin = result.origin
        self.line: Dict[str, Any] = json.loads(self.data.split(b"\n")[0])


class TestLedgerLines(LedgerCase):
    def test_each_ill_typed_field_is_named(self) -> None:
        origin = self.line["origin"]
        cases: List[Any] = [
            ([1], "a line is a JSON object"),
            (dict(self.line, name=""), "name must be a non-empty string"),
            (
                dict(self.line, origin="agentloop/1/" + "A" * 64),
                "origin must be agentloop/1/ and 64 lowercase hex digits",
            ),
            (dict(self.line, records=1), "records must be an integer of at least 2 (a task and a stop record)"),
            (
                dict(self.line, records=True),
                "records must be an integer of at least 2 (a task and a stop record)",
            ),  # bool before int
            (dict(self.line, head="ab"), "head must be 64 lowercase hex digits"),
            (dict(self.line, sha256=None), "sha256 must be 64 lowercase hex digits"),
            (dict(self.line, stop=1), "stop must be a string"),
            (
                {"error": "", "name": "a", "origin": origin, "status": "worker_error"},
                "error must be a non-empty string",
            ),
            (
                {"reason": "tired", "name": "a", "origin": origin, "status": "rejected"},
                "reason must be one of missing, does_not_verify, incomplete, wrong_task_record, "
                "changed_while_checked, bad_reply",
            ),
        ]
        for value, reason in cases:
            with self.subTest(reason), self.assertRaises(MalformedManifestError) as caught:
                parse_ledger(self.data + canonical_bytes(value) + b"\n")
            self.assertEqual((caught.exception.line, str(caught.exception)), (3, "manifest line 3: " + reason))

    def test_bytes_that_are_not_utf8_json_are_not_a_json_line(self) -> None:
        for raw in (b"\xff", b"{", b"[" * 100000):
            with self.subTest(raw[:4]), self.assertRaisesRegex(
                MalformedManifestError, r"^manifest line 2: not a JSON line$"
            ):
                parse_ledger(self.data.split(b"\n")[0] + b"\n" + raw + b"\n")


class TestLedgerCheckpoint(LedgerCase):
    def test_each_broken_rule_of_the_note_is_named(self) -> None:
        good = make_checkpoint(self.origin, self.data).to_bytes()
        origin, size, root = good.decode("ascii").split("\n")[:3]
        self.assertEqual(parse_manifest_checkpoint(good).to_bytes(), good)

        def note(*lines: str) -> bytes:
            return ("\n".join(lines) + "\n\n").encode("utf-8")

        cases: Dict[bytes, str] = {
            b"x" * 65537: "checkpoint: longer than 65536 bytes",
            b"\xff\n": "checkpoint: invalid UTF-8",
            good.rstrip(b"\n"): "checkpoint line 3: no terminating newline",
            note(origin, size): "checkpoint: a ledger checkpoint is 3 text lines, a blank line, then signatures",
            note("agentloop/1/" + origin.rsplit("/", 1)[1], size, root): (
                "checkpoint line 1: origin must be 'agentloop-manifest/1/' and 64 lowercase hex digits"
            ),
            note(
                origin, "02", root
            ): "checkpoint line 2: size must be a decimal number of at least 1 with no leading zero",
            note(
                origin, "0", root
            ): "checkpoint line 2: size must be a decimal number of at least 1 with no leading zero",
            note(
                origin, "\u0662", root
            ): "checkpoint line 2: size must be a decimal number of at least 1 with no leading zero",
            note(origin, size, "!!!!"): "checkpoint line 3: root is not standard base64",
            note(
                origin, size, base64.b64encode(b"x" * 31).decode()
            ): "checkpoint line 3: root is 31 bytes, not a 32-byte SHA-256",
        }
        for bad, message in cases.items():
            with self.subTest(message), self.assertRaises(MalformedCheckpointError) as caught:
                parse_manifest_checkpoint(bad)
            self.assertEqual(str(caught.exception), message)

    def test_a_checkpoint_of_a_shorter_ledger_does_not_cover_this_one(self) -> None:
        first_line = self.data.split(b"\n")[0] + b"\n"
        with self.assertRaises(ProofError) as caught:
            check_manifest_checkpoint(make_checkpoint(self.origin, self.data), first_line)
        self.assertEqual(str(caught.exception), "the checkpoint covers 2 lines; the manifest has 1")


class TestLedgerProofs(LedgerCase):
    def test_proofs_refuse_unknown_runs_non_hex_hashes_and_other_batches(self) -> None:
        note = make_checkpoint(self.origin, self.data)
        other = make_checkpoint("agentloop-manifest/1/" + "0" * 64, self.data)
        checks: List[Any] = [
            (lambda: prove_run(self.data, "zz"), 'no run named "zz" in the manifest'),
            (lambda: check_run_proof(self.line, 0, ["zz"], note), "a proof hash is not hex"),
            (lambda: check_extension(note, note, ["zz"]), "a proof hash is not hex"),
            (
                lambda: check_extension(note, other, []),
                "the checkpoints name different batches: %s and %s" % (self.origin, other.origin),
            ),
        ]
        for call, message in checks:
            with self.subTest(message), self.assertRaises(ProofError) as caught:
                call()
            self.assertEqual(str(caught.exception), message)
        index, proof = prove_run(self.data, "a")
        check_run_proof(self.line, index, proof, note)  # the control: the real proof holds


if __name__ == "__main__":
    unittest.main()
