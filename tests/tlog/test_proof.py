"""C2SP tlog-proof@v1 (agentloop/tlog/proof.py, bundle.py): vectors, parsing, verification, every byte.

An independent oracle sits beside agentloop's code: :func:`naive_root`
recomputes the root from a leaf and an audit path by RFC 6962 section 2.1.1
directly (the recursive definition, no shared code), so each vector proof
is checked by two implementations.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import tempfile
import unittest
from typing import List

from agentloop.batch.ledger import parse_manifest_checkpoint
from agentloop.errors import BadSignatureError, MalformedCheckpointError, ProofError, SigningKeyError
from agentloop.signing.hmac_sha256 import HmacKey
from agentloop.signing.note import Note, sign_note
from agentloop.tlog.bundle import check_agentloop_leaf, prove_ledger_line, prove_record
from agentloop.tlog.proof import TlogProof, is_tlog_proof, parse_tlog_proof, verify_tlog_proof
from agentloop.transcript.checkpoint import parse_checkpoint
from agentloop.transcript.merkle import inclusion_proof, leaf_hash, root_of

from tests.tlog.support import LOG_NAME, WITNESS_NAME, load_json, trusted, vector, vector_path

KEY = b"an HMAC key of at least 16 bytes"


def naive_root(index: int, size: int, leaf: bytes, path: List[bytes]) -> bytes:
    """RFC 6962 section 2.1.1's audit path, folded from the leaf up by its recursive definition (the oracle)."""

    def fold(index: int, size: int, node: bytes, path: List[bytes]) -> bytes:
        if size == 1:
            if path:
                raise ValueError("path too long")
            return node
        k = 1
        while k * 2 < size:
            k *= 2
        if not path:
            raise ValueError("path too short")
        sibling, rest = path[-1], path[:-1]  # the path runs leaf to root: the last hash is the top sibling
        if index < k:
            return hashlib.sha256(b"\x01" + fold(index, k, node, rest) + sibling).digest()
        return hashlib.sha256(b"\x01" + sibling + fold(index - k, size - k, node, rest)).digest()

    return fold(index, size, hashlib.sha256(b"\x00" + leaf).digest(), list(path))


class TestVectors(unittest.TestCase):
    def test_record_proofs_verify_and_agree_with_the_oracle(self) -> None:
        lines = vector("run.jsonl").split(b"\n")[:-1]
        self.assertEqual(len(lines), 3)
        for index, line in enumerate(lines):
            proof = parse_tlog_proof(vector("record-%d.tlog-proof" % (index,)))
            self.assertEqual(proof.extra, line)
            head = proof.tree_head()
            self.assertEqual(naive_root(index, head.size, line, list(proof.hashes)), head.root)
            proved = verify_tlog_proof(proof, trusted(), require=[WITNESS_NAME, LOG_NAME])
            self.assertEqual((proved.index, proved.size, proved.leaf), (index, 3, line))
            self.assertEqual(proved.witnesses, (WITNESS_NAME,))
            what = check_agentloop_leaf(proved, proof.checkpoint.to_bytes())
            self.assertTrue(
                what.startswith("record %d (%s, hash " % (index, ("task", "assistant", "stop")[index])), what
            )

    def test_ledger_proofs_verify(self) -> None:
        ledger = vector("manifest.jsonl").split(b"\n")[:-1]
        for index, name in enumerate("abc"):
            proof = parse_tlog_proof(vector("ledger-%s.tlog-proof" % (name,)))
            self.assertEqual(proof.extra, ledger[index])
            head = proof.tree_head()
            self.assertEqual(naive_root(index, head.size, ledger[index], list(proof.hashes)), head.root)
            proved = verify_tlog_proof(proof, trusted()[:1])
            self.assertIn(
                'the ledger line of run "%s"' % (name,), check_agentloop_leaf(proved, proof.checkpoint.to_bytes())
            )

    def test_agentloop_makes_the_same_bytes(self) -> None:
        checkpoint = parse_checkpoint(vector("run.checkpoint"))
        for index in range(3):
            made = prove_record(vector_path("run.jsonl"), checkpoint, index)
            self.assertEqual(made.to_bytes(), vector("record-%d.tlog-proof" % (index,)))
        self.assertEqual(prove_record(vector_path("run.jsonl"), checkpoint).index, 2)  # default: the last record
        ledger, note = vector("manifest.jsonl"), parse_manifest_checkpoint(vector("manifest.checkpoint"))
        for name in "abc":
            self.assertEqual(prove_ledger_line(ledger, note, name).to_bytes(), vector("ledger-%s.tlog-proof" % (name,)))

    def test_round_trip(self) -> None:
        for name in ("record-0.tlog-proof", "record-2.tlog-proof", "ledger-b.tlog-proof"):
            self.assertEqual(parse_tlog_proof(vector(name)).to_bytes(), vector(name))
            self.assertTrue(is_tlog_proof(vector(name)))

    def test_malformed(self) -> None:
        cases = load_json("malformed.json", "cases")
        self.assertGreaterEqual(len(cases), 27)
        for case in cases:
            with self.subTest(case["name"]):
                with self.assertRaises(ProofError) as caught:
                    parse_tlog_proof(case["text"].encode("utf-8"))
                message = str(caught.exception)
                where = "tlog-proof line %d: " % (case["line"],) if case["line"] is not None else "tlog-proof: "
                self.assertTrue(message.startswith(where), message)
                if case["reason"]:
                    self.assertIn(case["reason"], message)

    def test_the_spec_example_parses_up_to_its_abbreviated_signatures(self) -> None:
        example = load_json("c2sp-examples.json", "tlog_proof")
        with self.assertRaises(ProofError) as caught:
            parse_tlog_proof(example["text"].encode("utf-8"))
        self.assertTrue(
            str(caught.exception).startswith("tlog-proof line %d: the checkpoint: " % (example["refused_at_line"],))
        )
        # with the signature lines made whole, the rest of the example parses as the spec says
        text = (
            example["text"].split("\n\n\u2014")[0]
            + "\n\n\u2014 example.com/fancylog "
            + base64.b64encode(b"k" * 68).decode()
            + "\n"
        )
        proof = parse_tlog_proof(text.encode("utf-8"))
        head = proof.tree_head()
        self.assertEqual(
            (proof.index, len(proof.hashes), head.origin, head.size), (73894, 5, "example.com/fancylog", 109482)
        )
        self.assertTrue((proof.extra or b"").startswith(example["extra_starts"].encode()))


class TestVerify(unittest.TestCase):
    def setUp(self) -> None:
        self.proof = parse_tlog_proof(vector("record-1.tlog-proof"))

    def test_every_changed_byte_is_refused_naming_what_failed(self) -> None:
        data = vector("record-1.tlog-proof")
        reasons = set()
        for at in range(len(data)):
            changed = bytearray(data)
            changed[at] ^= 0x01
            with self.subTest(at=at):
                with self.assertRaises((ProofError, BadSignatureError)) as caught:
                    proof = parse_tlog_proof(bytes(changed))
                    proved = verify_tlog_proof(proof, trusted(), require=[WITNESS_NAME, LOG_NAME])
                    check_agentloop_leaf(proved, proof.checkpoint.to_bytes())
                reasons.add(str(caught.exception).split(":")[0])
        # the failures name their place: a line of the file, the inclusion proof, a signature, the record
        self.assertTrue(any(reason.startswith("tlog-proof line") for reason in reasons), reasons)
        self.assertTrue(
            {"the inclusion proof of entry 1 does not reach the checkpoint's root", "bad signature"} <= reasons, reasons
        )

    def test_a_witness_alone_is_not_the_log(self) -> None:
        with self.assertRaisesRegex(BadSignatureError, "no trusted log key signed the checkpoint"):
            verify_tlog_proof(self.proof, trusted()[1:])

    def test_an_unknown_log_key_is_no_signature(self) -> None:
        with self.assertRaisesRegex(BadSignatureError, "no signature by a trusted key|no trusted"):
            verify_tlog_proof(self.proof, [HmacKey("someone", KEY)])

    def test_the_origin_must_be_the_one_accepted(self) -> None:
        with self.assertRaisesRegex(ProofError, "is not the one accepted"):
            verify_tlog_proof(self.proof, trusted(), origin="example.com/another")
        origin = self.proof.tree_head().origin
        self.assertEqual(verify_tlog_proof(self.proof, trusted(), origin=origin).origin, origin)

    def test_a_required_witness_must_have_cosigned(self) -> None:
        bare = TlogProof(
            self.proof.index,
            self.proof.hashes,
            Note(self.proof.checkpoint.text, self.proof.checkpoint.signatures[:1]),
            self.proof.extra,
        )
        with self.assertRaisesRegex(BadSignatureError, WITNESS_NAME):
            verify_tlog_proof(bare, trusted(), require=[WITNESS_NAME])
        self.assertEqual(verify_tlog_proof(bare, trusted()).witnesses, ())

    def test_misuse(self) -> None:
        with self.assertRaisesRegex(SigningKeyError, "none given"):
            verify_tlog_proof(self.proof, [])
        with self.assertRaisesRegex(SigningKeyError, "no trusted key is named 'nobody'"):
            verify_tlog_proof(self.proof, trusted(), require=["nobody"])

    def test_the_leaf_given_out_of_band(self) -> None:
        line = vector("run.jsonl").split(b"\n")[1]
        self.assertEqual(verify_tlog_proof(self.proof, trusted(), leaf=line).leaf, line)
        with self.assertRaisesRegex(ProofError, "extra data is not the entry given"):
            verify_tlog_proof(self.proof, trusted(), leaf=line + b" ")
        bare = TlogProof(self.proof.index, self.proof.hashes, self.proof.checkpoint, None)
        with self.assertRaisesRegex(ProofError, "no extra line"):
            verify_tlog_proof(bare, trusted())
        self.assertEqual(verify_tlog_proof(bare, trusted(), leaf=line).index, 1)
        self.assertNotIn(b"extra", bare.to_bytes())


class TestAgentloopLeaf(unittest.TestCase):
    """A proof can be valid for a leaf that is no record: the application step refuses it."""

    def _proof(self, origin_line: str, leaves: List[bytes], index: int, extension: str = "") -> TlogProof:
        hashes = [leaf_hash(leaf) for leaf in leaves]
        root = base64.b64encode(root_of(hashes)).decode()
        text = "%s\n%d\n%s\n%s" % (origin_line, len(leaves), root, extension)
        note = sign_note(text, HmacKey(origin_line, KEY))
        return TlogProof(index, tuple(inclusion_proof(hashes, index, len(leaves))), note, leaves[index])

    def _check(self, proof: TlogProof) -> str:
        return check_agentloop_leaf(verify_tlog_proof(proof, key=KEY), proof.checkpoint.to_bytes())

    def test_a_line_that_is_not_a_record(self) -> None:
        lines = vector("run.jsonl").split(b"\n")[:-1]
        origin = "agentloop/1/" + lines[0][9:73].decode()
        head = "head " + lines[2][9:73].decode() + "\n"
        self.assertIn("record 1", self._check(self._proof(origin, lines, 1, head)))
        for bad, reason in (
            (b"not json", "not a JSON record line"),
            (b'{"a":1}', "not an agentloop/1 record line"),
            (lines[2], "says seq 2, but it is entry 1"),
        ):
            with self.subTest(reason):
                with self.assertRaisesRegex(ProofError, reason):
                    self._check(self._proof(origin, [lines[0], bad, lines[2]], 1, head))
        with self.assertRaisesRegex(ProofError, "the proved last record has hash"):
            self._check(self._proof(origin, lines, 2, "head " + "0" * 64 + "\n"))
        with self.assertRaisesRegex(ProofError, "not an agentloop/1 checkpoint"):
            self._check(self._proof(origin, lines, 1))

    def test_a_foreign_log_entry(self) -> None:
        self.assertEqual(self._check(self._proof("example.com/log", [b"x", b"y"], 1)), "entry 1")


class TestProve(unittest.TestCase):
    def setUp(self) -> None:
        self.folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.folder)
        self.path = os.path.join(self.folder, "run.jsonl")
        shutil.copy(vector_path("run.jsonl"), self.path)
        self.checkpoint = parse_checkpoint(vector("run.checkpoint"))

    def test_refusals(self) -> None:
        with self.assertRaisesRegex(ProofError, "not signed"):
            prove_record(self.path, self.checkpoint.unsigned())
        with self.assertRaisesRegex(ProofError, "index 3 is not a record"):
            prove_record(self.path, self.checkpoint, 3)
        with open(self.path, "r+b") as handle:
            handle.truncate(os.path.getsize(self.path) - 1)
        with self.assertRaisesRegex(ProofError, "does not verify"):
            prove_record(self.path, self.checkpoint)

    def test_a_checkpoint_of_another_file(self) -> None:
        lines = vector("run.jsonl").split(b"\n")
        with open(self.path, "wb") as handle:
            handle.write(lines[0] + b"\n" + lines[1] + b"\n")
        with self.assertRaisesRegex(ProofError, "covers 3 records"):
            prove_record(self.path, self.checkpoint)
        older = parse_checkpoint(vector("run-2.checkpoint"))
        self.assertEqual(prove_record(self.path, older).index, 1)
        with self.assertRaises(MalformedCheckpointError):
            parse_checkpoint(vector("record-0.tlog-proof"))


if __name__ == "__main__":
    unittest.main()
