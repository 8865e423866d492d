"""A transcript against its checkpoints: the tamper matrix, proofs from the file.

Every tamper case below passes the chain check alone or is invisible to it
where that is the point (a missing tail, a recomputed chain); the checkpoint
must catch each, with the right fault kind.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Callable, Dict, List

from agentloop import FAULT_KINDS, TranscriptWriter, verify_file
from agentloop.transcript.anchor import ANCHOR_FAULT_KINDS, AnchoredResult, checkpoint_of, verify_checkpoint
from agentloop.canonical import canonical_bytes
from agentloop.transcript.checkpoint import Checkpoint, parse_checkpoint, sign
from agentloop.errors import BadSignatureError, ProofError
from agentloop.transcript.proofs import (
    ConsistencyProof,
    InclusionProof,
    check_consistency,
    check_proof,
    parse_proof,
    prove_consistency,
    prove_inclusion,
)

from tests.support.helpers import TempDir, read_lines
from tests.support.runs import records
from tests.transcript.test_checkpoint import case_bytes, vectors
from tests.transcript.test_merkle import mth

KEY = b"k" * 32
WRONG_KEY = b"w" * 32


def forge(lines: List[bytes], index: int, mutate: Callable[[Dict[str, Any]], None]) -> List[bytes]:
    """The attacker who can write the file: change record ``index``, then
    recompute every hash and prev from there on (RFC 8785, as the writer does)."""
    records = [json.loads(line) for line in lines]
    mutate(records[index])
    out = [line for line in lines[:index]]
    prev = records[index - 1]["hash"] if index else "0" * 64
    for number, record in enumerate(records[index:], index):
        record["prev"], record["seq"] = prev, number
        body = {k: v for k, v in record.items() if k != "hash"}
        record["hash"] = prev = hashlib.sha256(canonical_bytes(body)).hexdigest()
        out.append(canonical_bytes(record) + b"\n")
    return out


def kinds(result: AnchoredResult) -> List[str]:
    return [f.kind for f in result.faults]


class AnchorCase(TempDir):
    def setUp(self) -> None:
        super().setUp()
        self.result = self.recover_run()
        self.lines = read_lines(self.path())
        head, _ = checkpoint_of(self.path(), KEY)
        assert head is not None
        self.ckpt = head
        self.ckpt_path = self.write_bytes(head.to_bytes(), "t.checkpoint")

    def variant(self, lines: List[bytes], name: str = "v.jsonl") -> str:
        return self.write_bytes(b"".join(lines), name)


class TestCheckpointOfAFile(AnchorCase):
    def test_the_checkpoint_of_the_recover_demo_is_a_known_answer(self) -> None:
        # Recompute: the RFC 6962 MTH (tests/transcript/test_merkle.py mth) of the lines without "\n".
        data = [line[:-1] for line in self.lines]
        self.assertEqual(self.ckpt.root, mth(data).hex())
        self.assertEqual(self.ckpt.root, "c4135acb4dbc4a500127d849b22309d2376ca7fe345eac76fdfadad1e7840113")
        self.assertEqual((self.ckpt.size, self.ckpt.head), (11, self.result.head))
        self.assertEqual(self.ckpt.first, json.loads(self.lines[0])["hash"])

    def test_an_intact_file_matches_signed_and_unsigned(self) -> None:
        for key in (None, KEY):
            result = verify_checkpoint(self.path(), self.ckpt_path, key=key, exact=True)
            self.assertTrue(result.ok, result.faults)
            self.assertEqual((result.anchored, result.unanchored, result.signed), (11, 0, key is not None))
            self.assertEqual(result.root, self.ckpt.root)
            self.assertEqual(result.anchor_faults, ())

    def test_a_faulty_or_empty_file_gets_no_checkpoint(self) -> None:
        lines = list(self.lines)
        lines[3] = lines[3].replace(b'"step":2', b'"step":3')
        head, result = checkpoint_of(self.variant(lines))
        self.assertIsNone(head)
        self.assertEqual(result.faults[0].kind, "hash_mismatch")
        head, result = checkpoint_of(self.write_bytes(b"", "empty.jsonl"))
        self.assertIsNone(head)
        self.assertEqual([f.kind for f in result.faults], ["no_records"])  # an empty file is no run

    def test_the_anchor_fault_kinds_are_fault_kinds(self) -> None:
        self.assertTrue(set(ANCHOR_FAULT_KINDS) <= set(FAULT_KINDS))


class TestTamperMatrix(AnchorCase):
    """Each case: the tampered file, the checkpoint, the fault that must be named."""

    def test_truncation_by_1_and_by_every_k(self) -> None:
        for k in range(1, len(self.lines)):
            with self.subTest(k=k):
                path = self.variant(self.lines[:-k])
                self.assertTrue(verify_file(path).ok)  # the chain alone cannot see it
                result = verify_checkpoint(path, self.ckpt_path)
                self.assertEqual(kinds(result), ["truncated"])
                self.assertEqual(
                    result.faults[0].detail,
                    "the checkpoint covers 11 records, the file has %d: %d missing from the end" % (11 - k, k),
                )

    def test_a_recomputed_chain_is_caught_by_the_root_at_every_record(self) -> None:
        for index in range(len(self.lines)):
            with self.subTest(index=index):
                lines = forge(self.lines, index, lambda r: r["payload"].__setitem__("forged", True))
                path = self.variant(lines)
                self.assertTrue(verify_file(path).ok)  # every hash recomputed: the chain is intact
                result = verify_checkpoint(path, self.ckpt_path)
                self.assertEqual(kinds(result), ["anchor_mismatch"])
                # record 0's hash names the run: forging it makes the file another run
                self.assertIn("is for run" if index == 0 else "the first 11 records give root", result.faults[0].detail)

    def test_an_appended_forged_record(self) -> None:
        # After the stop record the chain itself refuses it; beyond the checkpoint it is unanchored.
        record = json.loads(self.lines[-1])
        extra = {
            "kind": "assistant",
            "payload": {"step": 6, "text": "forged", "tool_calls": [], "tokens": 1, "total_tokens": 37},
            "prev": record["hash"],
            "seq": 11,
        }
        extra["hash"] = hashlib.sha256(canonical_bytes(extra)).hexdigest()
        path = self.variant(self.lines + [canonical_bytes(extra) + b"\n"])
        result = verify_checkpoint(path, self.ckpt_path)
        self.assertEqual(kinds(result), ["unexpected_kind"])
        self.assertEqual(result.unanchored, 1)
        self.assertEqual(
            kinds(verify_checkpoint(path, self.ckpt_path, exact=True)), ["unexpected_kind", "unanchored_tail"]
        )

    def test_a_record_appended_to_an_unfinished_run_is_unanchored(self) -> None:
        path = self.path("open.jsonl")
        ckpt = self.path("open.checkpoint")
        with TranscriptWriter(path) as out:
            first, second, later = records(3)  # a valid unfinished run (tests/support/runs.py)
            out.append(*first)
            out.append(*second)
            out.checkpoint(ckpt, KEY)
            out.append(*later)
        self.assertTrue(verify_file(path).ok)
        result = verify_checkpoint(path, ckpt, key=KEY)
        self.assertTrue(result.ok)
        self.assertEqual((result.anchored, result.unanchored), (2, 1))
        exact = verify_checkpoint(path, ckpt, key=KEY, exact=True)
        self.assertEqual(kinds(exact), ["unanchored_tail"])
        self.assertEqual(exact.faults[0].detail, "1 record after the 2 the checkpoint covers")
        self.assertEqual(exact.faults[0].index, 2)

    def test_a_checkpoint_from_another_run(self) -> None:
        self.recover_run("other.jsonl")  # the same inputs: the same bytes, so change the task
        other_path = self.path("other2.jsonl")
        self.scripted_run([], name="other2.jsonl", max_steps=0)
        other, _ = checkpoint_of(other_path)
        assert other is not None
        result = verify_checkpoint(self.path(), other)
        self.assertEqual(kinds(result), ["anchor_mismatch"])
        self.assertRegex(
            result.faults[0].detail,
            r"^the checkpoint is for run [0-9a-f]{16}\.\.\., this transcript is run [0-9a-f]{16}\.\.\.$",
        )

    def test_a_malformed_checkpoint_for_each_rule(self) -> None:
        for case in vectors()["cases"]:
            with self.subTest(case["name"]):
                bad = self.write_bytes(case_bytes(case), "bad.checkpoint")
                result = verify_checkpoint(self.path(), bad)
                self.assertEqual(kinds(result), ["anchor_malformed"])
                self.assertEqual(result.faults[0].line, case["line"])
                self.assertIn(case["reason"], result.faults[0].detail)

    def test_an_unreadable_checkpoint(self) -> None:
        result = verify_checkpoint(self.path(), self.path("missing.checkpoint"))
        self.assertEqual(kinds(result), ["unreadable"])
        self.assertIn("checkpoint", result.faults[0].detail)

    def test_a_wrong_key_a_missing_signature_and_a_stripped_one(self) -> None:
        wrong = verify_checkpoint(self.path(), self.ckpt_path, key=WRONG_KEY)
        self.assertEqual(kinds(wrong), ["bad_signature"])
        self.assertIn("no signature by this key", wrong.faults[0].detail)
        self.assertFalse(wrong.signed)
        stripped = self.write_bytes(self.ckpt.unsigned().to_bytes(), "unsigned.checkpoint")
        self.assertEqual(kinds(verify_checkpoint(self.path(), stripped, key=KEY)), ["bad_signature"])
        self.assertTrue(
            verify_checkpoint(self.path(), stripped).ok
        )  # without a key nothing is claimed about who made it

    def test_an_edited_checkpoint(self) -> None:
        # The head line changed (root kept): a mismatch, and with a key a bad signature too.
        edited = Checkpoint(self.ckpt.first, 11, self.ckpt.root, "ab" * 32, self.ckpt.signatures)
        path = self.write_bytes(edited.to_bytes(), "edited.checkpoint")
        self.assertEqual(kinds(verify_checkpoint(self.path(), path)), ["anchor_mismatch"])
        self.assertEqual(kinds(verify_checkpoint(self.path(), path, key=KEY)), ["bad_signature", "anchor_mismatch"])

    def test_a_rewrite_with_a_recomputed_checkpoint_needs_the_key(self) -> None:
        # The attacker rewrites a record, recomputes the chain and a fresh checkpoint.
        lines = forge(self.lines, 4, lambda r: r["payload"].__setitem__("error", "nothing went wrong"))
        path = self.variant(lines)
        forged, _ = checkpoint_of(path)
        assert forged is not None
        ckpt = self.write_bytes(forged.to_bytes(), "forged.checkpoint")
        self.assertTrue(
            verify_checkpoint(path, ckpt).ok
        )  # the limit: without a key the anchor is only as safe as its copy
        self.assertEqual(kinds(verify_checkpoint(path, ckpt, key=KEY)), ["bad_signature"])
        resigned = self.write_bytes(sign(forged, WRONG_KEY).to_bytes(), "resigned.checkpoint")
        self.assertEqual(kinds(verify_checkpoint(path, resigned, key=KEY)), ["bad_signature"])
        self.assertEqual(
            kinds(verify_checkpoint(path, self.ckpt_path)), ["anchor_mismatch"]
        )  # the original copy catches it

    def test_since_an_older_checkpoint_rollback_fork_and_extension(self) -> None:
        path = self.path("grow.jsonl")
        old = self.path("old.checkpoint")
        with TranscriptWriter(path) as out:
            grow = records(8)
            for kind, payload in grow[:5]:
                out.append(kind, payload)
            out.checkpoint(old)
            for kind, payload in grow[5:]:
                out.append(kind, payload)
        lines = read_lines(path)
        grown = verify_checkpoint(path, since=old)
        self.assertTrue(grown.ok, grown.faults)
        self.assertEqual(grown.unanchored, 0)  # unanchored counts against --checkpoint only
        rolled = verify_checkpoint(self.variant(lines[:4], "rolled.jsonl"), since=old)
        self.assertEqual(kinds(rolled), ["truncated"])
        self.assertIn("older checkpoint covers 5 records, the file has 4", rolled.faults[0].detail)
        fork = forge(lines, 2, lambda r: r["payload"].__setitem__("value", 99))  # records 2 and 6 are tool results
        forked = verify_checkpoint(self.variant(fork, "fork.jsonl"), since=old)
        self.assertEqual(kinds(forked), ["anchor_mismatch"])
        self.assertIn("the first 5 records give root", forked.faults[0].detail)
        later = forge(lines, 6, lambda r: r["payload"].__setitem__("value", 99))  # beyond the old checkpoint: allowed
        self.assertTrue(verify_checkpoint(self.variant(later, "later.jsonl"), since=old).ok)

    def test_chain_faults_are_still_reported_first(self) -> None:
        lines = list(self.lines)
        lines[4] = lines[4].replace(b'"ok":false', b'"ok":true')
        result = verify_checkpoint(self.variant(lines), self.ckpt_path)
        self.assertFalse(result.ok)
        self.assertEqual(result.faults[0].index, 4)
        self.assertNotIn(result.faults[0].kind, ANCHOR_FAULT_KINDS)
        self.assertEqual([f.kind for f in result.anchor_faults], ["anchor_mismatch"])


class TestProofsFromTheFile(AnchorCase):
    def test_every_inclusion_proof_checks_against_the_checkpoint(self) -> None:
        for index in range(11):
            proof = prove_inclusion(self.path(), index)
            self.assertEqual(proof.leaf_hash, hashlib.sha256(b"\x00" + self.lines[index][:-1]).hexdigest())
            again = parse_proof(json.dumps(proof.to_json()))
            self.assertEqual(again, proof)
            check_proof(again, self.ckpt, KEY)

    def test_every_consistency_proof_checks_against_both_checkpoints(self) -> None:
        for old_size in range(1, 12):
            proof = prove_consistency(self.path(), old_size)
            self.assertEqual(parse_proof(json.dumps(proof.to_json())), proof)
            check_proof(proof, self.ckpt)
            prefix = self.variant(self.lines[:old_size], "prefix.jsonl")
            old, _ = checkpoint_of(prefix, KEY)
            assert old is not None
            check_consistency(old, self.ckpt, proof, KEY)
            with self.subTest(old_size=old_size):
                if old_size < 11:
                    with self.assertRaisesRegex(ProofError, "fewer than the old one's"):
                        check_consistency(self.ckpt, old, proof)

    def test_a_proof_against_an_older_size(self) -> None:
        proof = prove_inclusion(self.path(), 2, size=5)
        old, _ = checkpoint_of(self.variant(self.lines[:5], "prefix.jsonl"))
        assert old is not None
        check_proof(proof, old)
        with self.assertRaisesRegex(
            ProofError, r"a tree of 5 records, the checkpoint has 11 \(make it with --size 11\)"
        ):
            check_proof(proof, self.ckpt)

    def test_a_tampered_proof_or_the_wrong_checkpoint_fails(self) -> None:
        proof = prove_inclusion(self.path(), 3)
        doc = proof.to_json()
        cases: List[Any] = [
            (dict(doc, index=4), "the proof leads to root"),
            (dict(doc, leaf_hash="00" * 32), "the proof leads to root"),
            (dict(doc, proof=doc["proof"][:-1]), "too few"),
            (dict(doc, proof=doc["proof"] + ["00" * 32]), "too many"),
            (dict(doc, root="00" * 32), "is not the checkpoint's"),
            (dict(doc, origin="agentloop/1/" + "00" * 32), "is about run 0000000000000000"),
        ]
        for changed, message in cases:
            with self.subTest(message):
                with self.assertRaisesRegex(ProofError, message):
                    check_proof(parse_proof(json.dumps(changed)), self.ckpt)
        with self.assertRaises(BadSignatureError):
            check_proof(proof, self.ckpt, WRONG_KEY)

    def test_consistency_between_checkpoints_refuses_mismatches(self) -> None:
        proof = prove_consistency(self.path(), 5)
        old, _ = checkpoint_of(self.variant(self.lines[:5], "prefix.jsonl"))
        assert old is not None
        other = Checkpoint("cd" * 32, 5, old.root, old.head)
        with self.assertRaisesRegex(ProofError, "different runs"):
            check_consistency(other, self.ckpt, proof)
        six, _ = checkpoint_of(self.variant(self.lines[:6], "six.jsonl"))
        assert six is not None
        with self.assertRaisesRegex(ProofError, "the proof starts from 5 records"):
            check_consistency(six, self.ckpt, proof)
        with self.assertRaisesRegex(ProofError, "the proof ends at 11 records"):
            check_consistency(old, six, proof)
        same = prove_consistency(self.path(), 11)
        self.assertEqual(same.proof, ())
        check_consistency(self.ckpt, self.ckpt, same)
        twin = Checkpoint(self.ckpt.first, 11, self.ckpt.root, "ef" * 32)
        with self.assertRaisesRegex(ProofError, "different heads"):
            check_consistency(self.ckpt, twin, same)

    def test_no_proof_from_a_faulty_file_or_out_of_range(self) -> None:
        lines = list(self.lines)
        lines[3] = lines[3].replace(b'"step":2', b'"step":3')
        with self.assertRaisesRegex(ProofError, r"does not verify \(hash_mismatch at record 3 \(line 4\)\)"):
            prove_inclusion(self.variant(lines), 0)
        with self.assertRaisesRegex(ProofError, r"index 11 is not a record of a tree of size 11 \(0 to 10\)"):
            prove_inclusion(self.path(), 11)
        with self.assertRaisesRegex(ProofError, "size 12 is not between 1 and the file's 11 records"):
            prove_consistency(self.path(), 1, 12)
        with self.assertRaisesRegex(ProofError, "old size 0 is not between 1 and the size 11"):
            prove_consistency(self.path(), 0)

    def test_parse_proof_refuses_every_other_shape(self) -> None:
        good = prove_inclusion(self.path(), 1).to_json()
        cons = prove_consistency(self.path(), 3).to_json()
        text = json.dumps(good)
        cases: List[Any] = [
            (b"[]", "not a JSON object"),
            (b"{", "not JSON"),
            (b"x" * 70000, "longer than 65536 bytes"),
            (text[:-1] + ', "root": "%s"}' % good["root"], "repeats a member"),
            (json.dumps(dict(good, kind="other")), "kind must be"),
            (json.dumps(dict(good, extra=1)), "unexpected 'extra'"),
            (json.dumps({k: v for k, v in good.items() if k != "root"}), "missing root"),
            (json.dumps(dict(good, index=True)), "index must be an integer"),
            (json.dumps(dict(good, index=1.0)), "index must be an integer"),
            (json.dumps(dict(good, size=0)), "size must be an integer from 1"),
            (json.dumps(dict(good, size=2**53)), "size must be an integer from 1 to 2\\*\\*53-1"),
            (json.dumps(dict(good, root=good["root"].upper())), "root must be 64 lowercase hex"),
            (json.dumps(dict(good, proof="ab")), "proof hashes must be a list"),
            (json.dumps(dict(good, proof=["00" * 32] * 109)), "at most 108"),
            (json.dumps(dict(good, proof=[1])), r"proof\[0\] must be 64"),
            (json.dumps(dict(good, origin="agentloop/2/" + "0" * 64)), "origin must be"),
            (json.dumps(dict(cons, old_size=-1)), "old_size must be an integer from 1"),
        ]
        for data, message in cases:
            with self.subTest(message):
                with self.assertRaisesRegex(ProofError, message):
                    parse_proof(data)
        self.assertIsInstance(parse_proof(json.dumps(cons)), ConsistencyProof)
        self.assertIsInstance(parse_proof(text.encode()), InclusionProof)


class TestWriterTree(TempDir):
    def test_the_root_after_every_record_is_the_files(self) -> None:
        path = self.path()
        with TranscriptWriter(path) as out:
            with self.assertRaisesRegex(ValueError, "has no record to checkpoint"):
                out.tree_head()
            for index, (kind, payload) in enumerate(records(20)):
                out.append(kind, payload)
                data = [line[:-1] for line in read_lines(path)]
                self.assertEqual(out.root, mth(data).hex())
                head = out.tree_head()
                self.assertEqual((head.size, head.head, head.root), (index + 1, out.head, out.root))
                if index in (0, 7, 19):
                    written = out.checkpoint(self.path("c.checkpoint"), KEY)
                    with open(self.path("c.checkpoint"), "rb") as handle:
                        self.assertEqual(parse_checkpoint(handle.read()), written)
                    self.assertTrue(verify_checkpoint(path, self.path("c.checkpoint"), key=KEY, exact=True).ok)
        with self.assertRaisesRegex(ValueError, "is closed"):
            out.checkpoint(self.path("c.checkpoint"))

    def test_no_temporary_file_is_left_beside_a_checkpoint(self) -> None:
        with TranscriptWriter(self.path()) as out:
            out.append("task", {"format": "agentloop/1"})
            for _ in range(3):
                out.checkpoint(self.path("c.checkpoint"))
        self.assertEqual(sorted(os.listdir(self.dir)), ["c.checkpoint", "t.jsonl"])

    def test_a_failed_replace_leaves_no_temporary_file(self) -> None:
        os.mkdir(self.path("adir"))
        with TranscriptWriter(self.path()) as out:
            out.append("task", {"format": "agentloop/1"})
            with self.assertRaises(OSError):
                out.checkpoint(self.path("adir"))
        self.assertEqual(sorted(os.listdir(self.dir)), ["adir", "t.jsonl"])

    def test_a_bad_key_raises_before_anything_is_written(self) -> None:
        from agentloop.errors import SigningKeyError

        with TranscriptWriter(self.path()) as out:
            out.append("task", {"format": "agentloop/1"})
            with self.assertRaises(SigningKeyError):
                out.checkpoint(self.path("c.checkpoint"), b"short")
        self.assertFalse(os.path.exists(self.path("c.checkpoint")))
