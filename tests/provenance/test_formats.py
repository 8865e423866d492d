"""Attestations, signed statements and receipts of real runs and batches, checked against bytes computed here.

The expected bytes are assembled in this file from the RFCs (RFC 8949 heads,
RFC 6962 roots by the recursive oracle of tests/batch/test_batch.py), not read
back from the code under test.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
from typing import Any, Dict, List

from agentloop.batch import RunSpec, run_many
from agentloop.batch.ledger import ledger_bytes, make_checkpoint, parse_ledger
from agentloop.errors import BadSignatureError, ProofError, ProvenanceError
from agentloop.provenance import cbor
from agentloop.provenance.cose import key_label, parse_sign1, sign1
from agentloop.provenance.dsse import envelope_line, sign_envelope
from agentloop.provenance.intoto import (
    BATCH_PREDICATE,
    PAYLOAD_TYPE,
    attest_batch,
    attest_run,
    check_files,
    read_bundle,
)
from agentloop.provenance.receipts import check_receipt, issue_receipts
from agentloop.provenance.scitt import check_statement, make_statement

from tests.support.helpers import TempDir
from tests.batch.test_batch import naive_root
from tests.provenance.test_cose import signer

VECTORS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "transcript")
VALID = os.path.join(VECTORS, "valid.jsonl")


def text_head(text: str) -> bytes:
    """RFC 8949 section 3.1, major type 3, written out: the head of a text string of this many UTF-8 bytes."""
    size = len(text.encode("utf-8"))
    return (
        bytes([0x60 + size])
        if size < 24
        else bytes([0x78, size])
        if size < 256
        else bytes([0x79]) + size.to_bytes(2, "big")
    )


def bstr(raw: bytes) -> bytes:
    """RFC 8949 section 3.1, major type 2, for lengths below 256."""
    return (bytes([0x40 + len(raw)]) if len(raw) < 24 else bytes([0x58, len(raw)])) + raw


class Case(TempDir):
    def setUp(self) -> None:
        super().setUp()
        self.key = signer()
        self.verifier = self.key.verifier()
        self.kid = key_label(self.key.name, self.key.key_id).encode("utf-8")

    def copy(self, source: str, name: str = "run.jsonl") -> str:
        shutil.copy(source, self.path(name))
        return self.path(name)

    def flip(self, path: str, at: int) -> None:
        with open(path, "r+b") as handle:
            handle.seek(at)
            byte = handle.read(1)
            handle.seek(at)
            handle.write(bytes([byte[0] ^ 1]))


class TestRunAttestation(Case):
    def test_the_statement_says_what_the_file_says(self) -> None:
        path = self.copy(VALID)
        (line,) = [line_ for line_ in attest_run(path, [self.key]).split(b"\n") if line_]
        statement = json.loads(base64.b64decode(json.loads(line)["payload"]))
        with open(path, "rb") as handle:
            data = handle.read()
        records = [json.loads(line_) for line_ in data.splitlines()]
        self.assertEqual(
            statement["subject"], [{"name": "run.jsonl", "digest": {"sha256": hashlib.sha256(data).hexdigest()}}]
        )
        self.assertEqual(statement["_type"], "https://in-toto.io/Statement/v1")
        predicate = statement["predicate"]
        self.assertEqual(
            predicate,
            {
                "format": "agentloop/1",
                "origin": "agentloop/1/" + records[0]["hash"],
                "records": len(records),
                "head": records[-1]["hash"],
                "root": naive_root(data.splitlines()).hex(),
                "stop": records[-1]["payload"]["reason"],
                "steps": records[-1]["payload"]["steps"],
                "tokens": records[-1]["payload"]["tokens"],
                "model": records[0]["payload"].get("model"),
                "tools": sorted(t["name"] for t in records[0]["payload"]["tools"]),
                "budgets": records[0]["payload"]["budgets"],
            },
        )

    def test_nothing_is_attested_that_does_not_verify_or_did_not_finish(self) -> None:
        path = self.copy(VALID)
        self.flip(path, 100)
        with self.assertRaisesRegex(ProvenanceError, "does not verify .*nothing is attested that was not verified"):
            attest_run(path, [self.key])
        with self.assertRaisesRegex(ProvenanceError, "does not end in a stop record"):
            attest_run(os.path.join(VECTORS, "valid_incomplete.jsonl"), [self.key])
        with self.assertRaisesRegex(ProvenanceError, "cannot be read"):
            attest_run(self.path("missing.jsonl"), [self.key])

    def test_a_bundle_ignores_what_it_does_not_recognise_and_refuses_when_nothing_is_left(self) -> None:
        path = self.copy(VALID)
        line = attest_run(path, [self.key])
        foreign = envelope_line(
            sign_envelope(
                PAYLOAD_TYPE,
                json.dumps(
                    {
                        "_type": "https://in-toto.io/Statement/v1",
                        "subject": [{"digest": {"sha256": "0" * 64}}],
                        "predicateType": "https://slsa.dev/provenance/v1",
                        "predicate": {},
                    }
                ).encode(),
                [self.key],
            )
        )
        found = read_bundle(b"not an envelope\n" + foreign + line, [self.verifier])
        self.assertEqual([a.line for a in found], [3])
        with self.assertRaisesRegex(
            ProvenanceError, "predicate type 'https://slsa.dev/provenance/v1' is not agentloop's"
        ):
            read_bundle(foreign, [self.verifier])
        with self.assertRaisesRegex(ProvenanceError, "it holds no line"):
            read_bundle(b"", [self.verifier])
        other = signer("example.com/other", bytes(range(32))).verifier()
        with self.assertRaisesRegex(ProvenanceError, "no signature by a trusted key .*'example.com/operator\\+"):
            read_bundle(line, [other])

    def test_a_run_attestation_checks_one_file(self) -> None:
        path = self.copy(VALID)
        (attestation,) = read_bundle(attest_run(path, [self.key]), [self.verifier])
        with self.assertRaisesRegex(ProvenanceError, "checked against one FILE"):
            check_files(attestation, [path, path])
        with self.assertRaisesRegex(ProvenanceError, "--manifest: is for a batch's attestation"):
            check_files(attestation, [path], b"")
        other = self.copy(os.path.join(VECTORS, "valid_members.jsonl"), "other.jsonl")
        with self.assertRaisesRegex(ProvenanceError, "is not the subject's"):
            check_files(attestation, [other])


class TestBatch(Case):
    def setUp(self) -> None:
        super().setUp()
        self.out = self.path("out")
        specs = [RunSpec("a", "one", 5, 10000), RunSpec("b", "three", 1, 10000), RunSpec("c", "seven", 5, 10000)]
        run_many(
            specs,
            model="tests.support.batch_models:factory",
            tools="tests.support.batch_models:tools",
            out_dir=self.out,
            checkpoint=os.path.join(self.out, "manifest.checkpoint"),
        )
        self.manifest = os.path.join(self.out, "manifest.jsonl")
        with open(self.manifest, "rb") as handle:
            self.ledger = handle.read()
        self.files = [os.path.join(self.out, n + ".jsonl") for n in "abc"]

    def test_the_batch_attestation(self) -> None:
        (attestation,) = read_bundle(attest_batch(self.manifest, [self.key]), [self.verifier])
        self.assertEqual(attestation.predicate_type, BATCH_PREDICATE)
        ledger = attestation.predicate["ledger"]
        self.assertEqual((ledger["size"], ledger["root"]), (3, naive_root(self.ledger.splitlines()).hex()))
        with open(os.path.join(self.out, "manifest.checkpoint"), encoding="utf-8") as handle:
            self.assertEqual(ledger["origin"], handle.readline().strip())
        self.assertEqual([r["name"] for r in attestation.predicate["runs"]], ["a", "b", "c"])
        self.assertEqual(sorted(n for n, _ in attestation.subjects), ["a.jsonl", "b.jsonl", "c.jsonl"])
        checked = check_files(attestation, self.files, self.ledger)
        self.assertEqual(
            ([n for _, n in checked.files], checked.unchecked, checked.manifest), (["a", "b", "c"], (), True)
        )
        self.assertEqual(check_files(attestation, self.files[:1]).unchecked, ("b", "c"))
        with self.assertRaisesRegex(ProvenanceError, "--manifest: is not the attested ledger of 3 runs"):
            check_files(attestation, [], self.ledger[:-1] + b" \n")
        with self.assertRaisesRegex(ProvenanceError, "is no subject of the attestation"):
            check_files(attestation, [VALID])
        self.flip(self.files[1], 200)
        with self.assertRaisesRegex(ProvenanceError, "b.jsonl: does not verify"):
            check_files(attestation, self.files)

    def test_nothing_altered_is_attested(self) -> None:
        with open(self.files[2], "rb") as handle:
            lines = handle.read().splitlines(keepends=True)
        with open(self.files[2], "wb") as handle:  # the stop record cut: the chain still verifies
            handle.writelines(lines[:-1])
        with self.assertRaisesRegex(ProvenanceError, "c.jsonl: does not end in a stop record"):
            attest_batch(self.manifest, [self.key])
        with open(self.files[2], "wb") as handle:
            handle.writelines(lines)
        shutil.copy(VALID, self.files[0])  # another run's transcript, whole and valid
        with self.assertRaisesRegex(
            ProvenanceError, "a.jsonl: is not the transcript its ledger line describes: its head differs"
        ):
            attest_batch(self.manifest, [self.key])
        os.remove(self.files[0])
        with self.assertRaisesRegex(ProvenanceError, "a.jsonl: cannot be read"):
            attest_batch(self.manifest, [self.key])
        os.remove(os.path.join(self.out, "manifest.checkpoint"))
        with self.assertRaisesRegex(ProvenanceError, "manifest.checkpoint: cannot be read"):
            attest_batch(self.manifest, [self.key])

    def test_a_forged_predicate_is_refused_even_when_signed(self) -> None:
        (attestation,) = read_bundle(attest_batch(self.manifest, [self.key]), [self.verifier])
        statement: Dict[str, Any] = {
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": n, "digest": {"sha256": s}} for n, s in attestation.subjects],
            "predicateType": BATCH_PREDICATE,
            "predicate": json.loads(json.dumps(attestation.predicate)),
        }
        statement["predicate"]["runs"][0]["records"] += 1  # the ledger root no longer matches its runs
        forged = envelope_line(sign_envelope(PAYLOAD_TYPE, json.dumps(statement).encode(), [self.key]))
        (read_back,) = read_bundle(forged, [self.verifier])
        with self.assertRaisesRegex(ProvenanceError, "predicate.ledger: its size and root are not those of its runs"):
            check_files(read_back, self.files)

    def test_receipts_against_hand_made_bytes(self) -> None:
        lines = self.ledger.splitlines()
        receipts = dict(issue_receipts(self.ledger, self.key, "https://ops.example"))
        self.assertEqual(sorted(receipts), ["a", "b", "c"])
        leaf = [hashlib.sha256(b"\x00" + line_).digest() for line_ in lines]
        paths = {"a": [leaf[1], leaf[2]], "b": [leaf[0], leaf[2]], "c": [naive_root(lines[:2])]}  # RFC 9162 2.1.3.1
        for index, (name, line) in enumerate(zip("abc", parse_ledger(self.ledger))):
            message = parse_sign1(receipts[name])
            origin = line["origin"]
            protected = (
                b"\xa4"
                + b"\x01\x27"
                + b"\x04"
                + bstr(self.kid)
                + b"\x0f\xa2"
                + b"\x01"
                + text_head("https://ops.example")
                + b"https://ops.example"
                + b"\x02"
                + text_head(origin)
                + origin.encode()
                + b"\x19\x01\x8b\x01"
            )
            self.assertEqual(message.protected_bytes, protected)
            proof = (
                b"\x83\x03" + bytes([index]) + bytes([0x80 + len(paths[name])]) + b"".join(bstr(h) for h in paths[name])
            )
            self.assertEqual(message.unprotected, {396: {-1: [proof]}})
            self.assertIsNone(message.payload)
            self.assertTrue(
                self.verifier.verify(
                    b"\x84\x6aSignature1" + bstr(protected) + b"\x40" + bstr(naive_root(lines)), message.signature
                )
            )
            checked = check_receipt(receipts[name], line, [self.verifier], "https://ops.example")
            self.assertEqual((checked.index, checked.size, checked.root), (index, 3, naive_root(lines).hex()))
        with self.assertRaisesRegex(ProvenanceError, "iss\\): is 'https://ops.example', not 'x'"):
            check_receipt(receipts["a"], parse_ledger(self.ledger)[0], [self.verifier], "x")
        changed = dict(parse_ledger(self.ledger)[0], records=99)
        with self.assertRaisesRegex(
            BadSignatureError, "does not verify over the root .* that the inclusion proof gives"
        ):
            check_receipt(receipts["a"], changed, [self.verifier])

    def test_malformed_receipts(self) -> None:
        line = parse_ledger(self.ledger)[0]
        claims = {1: "i", 2: line["origin"]}
        proof = cbor.encode([3, 0, [b"\x00" * 32, b"\x01" * 32]])
        good = {1: -8, 4: self.kid, 15: claims, 395: 1}
        cases: List[Any] = [
            ({**good, 16: "x"}, {396: {-1: [proof]}}, True, "holds labels"),
            ({**good, 395: 2}, {396: {-1: [proof]}}, True, "395 (vds): is 2, not RFC9162_SHA256"),
            ({**good, 15: {1: "i"}}, {396: {-1: [proof]}}, True, "must hold exactly iss (1) and sub (2)"),
            (good, {396: {-1: [proof]}}, False, "must be detached"),
            (good, {396: {-1: [proof, proof]}}, True, "an array of one byte string"),
            (good, {396: {-2: [proof]}}, True, "must be exactly {396 (vdp)"),
            (good, {396: {-1: [proof]}, 4: b"x"}, True, "must be exactly {396 (vdp)"),
            (good, {396: {-1: [cbor.encode([3, 0, []])]}}, True, "1 to 64 hashes of 32 bytes"),
            (
                good,
                {396: {-1: [cbor.encode([3, -1, [b"\x00" * 32]])]}},
                True,
                "leaf-index: must be an unsigned integer",
            ),
            (good, {396: {-1: [cbor.encode([3, 0])]}}, True, "must be [tree-size, leaf-index, inclusion-path]"),
            (good, {396: {-1: [b"\x18\x01"]}}, True, "inclusion proof: not deterministic CBOR"),
        ]
        for protected, unprotected, detached, words in cases:
            with self.subTest(words):
                data = sign1(protected, unprotected, b"r" * 32, self.key, detached=detached)
                with self.assertRaises(ProvenanceError) as caught:
                    check_receipt(data, line, [self.verifier])
                self.assertIn(words, str(caught.exception))
        wrong_index = sign1(good, {396: {-1: [cbor.encode([3, 5, [b"\x00" * 32]])]}}, b"r", self.key, detached=True)
        with self.assertRaises(ProofError):
            check_receipt(wrong_index, line, [self.verifier])

    def test_one_line_is_no_receipt(self) -> None:
        first = self.ledger.split(b"\n")[0] + b"\n"
        with self.assertRaisesRegex(
            ProvenanceError, "empty inclusion path, which RFC 9942's inclusion-path \\(\\[\\+ bstr\\]\\) does not allow"
        ):
            issue_receipts(first, self.key, "i")
        with self.assertRaisesRegex(ProvenanceError, "manifest: manifest line 1"):
            issue_receipts(b"{}\n", self.key, "i")
        with self.assertRaisesRegex(ProvenanceError, "issuer"):
            issue_receipts(self.ledger, self.key, "")


class TestStatement(Case):
    def test_the_statement_against_hand_made_bytes(self) -> None:
        path = self.copy(VALID)
        data = make_statement(path, self.key, "https://operator.example.com")
        message = parse_sign1(data)
        with open(path, "rb") as handle:
            records = [json.loads(line_) for line_ in handle.read().splitlines()]
        origin = "agentloop/1/" + records[0]["hash"]
        content_type = "text/plain; charset=utf-8"
        protected = (
            b"\xa4\x01\x27\x03"
            + text_head(content_type)
            + content_type.encode()
            + b"\x04"
            + bstr(self.kid)
            + b"\x0f\xa2\x01"
            + text_head("https://operator.example.com")
            + b"https://operator.example.com"
            + b"\x02"
            + text_head(origin)
            + origin.encode()
        )
        self.assertEqual(message.protected_bytes, protected)
        self.assertEqual(message.unprotected, {})
        with open(path, "rb") as handle:
            lines = handle.read().splitlines()
        note = "%s\n%d\n%s\nhead %s\n\n" % (
            origin,
            len(records),
            base64.b64encode(naive_root(lines)).decode(),
            records[-1]["hash"],
        )
        self.assertEqual(message.payload, note.encode())
        checked = check_statement(data, [self.verifier], "https://operator.example.com")
        self.assertEqual(
            (checked.signer, checked.issuer, checked.subject, checked.checkpoint.size),
            (self.key.name, "https://operator.example.com", origin, 5),
        )

    def test_refusals(self) -> None:
        path = self.copy(VALID)
        self.flip(path, 300)
        with self.assertRaisesRegex(
            ProvenanceError,
            "does not verify \\(hash_mismatch at record 0 \\(line 1\\)\\): nothing is signed that was not verified",
        ):
            make_statement(path, self.key, "i")
        with self.assertRaisesRegex(ProvenanceError, "does not verify \\(no_records at file\\)"):
            make_statement(os.path.join(VECTORS, "no_records.jsonl"), self.key, "i")
        with self.assertRaisesRegex(ProvenanceError, "issuer: must be text of 1 to 8192"):
            make_statement(VALID, self.key, "")
        good = parse_sign1(make_statement(VALID, self.key, "i"))
        payload = good.payload or b""
        protected = dict(good.protected)
        cases = [
            (protected, {4: b"x"}, payload, False, "unprotected header: must be empty"),
            ({**protected, 3: "text/plain"}, {}, payload, False, "(content type): must be"),
            ({1: -8, 4: self.kid, 15: protected[15]}, {}, payload, False, "not exactly 1, 3, 4 and 15"),
            (
                {**protected, 15: {1: "i", 2: "agentloop/1/" + "0" * 64}},
                {},
                payload,
                False,
                "is not the checkpoint's origin",
            ),
            (protected, {}, payload + b"x", False, "payload: is not a checkpoint"),
            (protected, {}, payload, True, "is detached"),
            ({**protected, 15: {1: 7, 2: "s"}}, {}, payload, False, "claim 1 (iss): must be text"),
            ({**protected, 15: {1: "i", 2: ""}}, {}, payload, False, "claim 2 (sub): must be non-empty text"),
        ]
        for head, unprotected, body, detached, words in cases:
            with self.subTest(words):
                with self.assertRaises(ProvenanceError) as caught:
                    check_statement(sign1(head, unprotected, body, self.key, detached=detached), [self.verifier])
                self.assertIn(words, str(caught.exception))


class TestForgedAttestations(Case):
    """Statements signed by a trusted key but not what agentloop writes: each is refused, naming the field."""

    def bundle(self, statement: Any, payload_type: str = PAYLOAD_TYPE) -> bytes:
        body = statement if isinstance(statement, bytes) else json.dumps(statement).encode()
        return envelope_line(sign_envelope(payload_type, body, [self.key]))

    def statement(self, path: str) -> Dict[str, Any]:
        (line,) = [line_ for line_ in attest_run(path, [self.key]).split(b"\n") if line_]
        doc: Dict[str, Any] = json.loads(base64.b64decode(json.loads(line)["payload"]))
        return doc

    def test_statements_that_are_not_statements_are_ignored_with_the_reason(self) -> None:
        good = self.statement(VALID)
        cases = [
            (
                self.bundle(good, "application/json"),
                "payloadType: is 'application/json', not 'application/vnd.in-toto+json'",
            ),
            (self.bundle(b"\xff"), "payload: is not a JSON Statement"),
            (
                self.bundle(dict(good, _type="https://in-toto.io/Statement/v0.1")),
                "$._type: must be 'https://in-toto.io/Statement/v1'",
            ),
            (self.bundle(dict(good, subject=[])), "$.subject: must be a non-empty array"),
            (
                self.bundle(dict(good, subject=[{"name": "x", "digest": {"sha1": "0" * 40}}])),
                "$.subject[0]: needs a name and a digest.sha256",
            ),
            (
                self.bundle(dict(good, predicate=[])),
                "$.predicateType: a Statement has a predicateType string and a predicate object",
            ),
        ]
        for data, words in cases:
            with self.subTest(words):
                with self.assertRaises(ProvenanceError) as caught:
                    read_bundle(data, [self.verifier])
                self.assertIn(words, str(caught.exception))
        (found,) = read_bundle(self.bundle(good).rstrip(b"\n"), [self.verifier])  # the last line needs no newline
        self.assertEqual(found.line, 1)

    def test_a_run_predicate_that_differs_from_the_file(self) -> None:
        path = self.copy(VALID)
        good = self.statement(path)
        for key, value, words in (
            ("tools", ["add", "mul"], "predicate.tools differs"),
            ("steps", None, "predicate.steps differs"),
            ("records", 2**60, "predicate.records differs"),
            ("records", True, "predicate.records differs"),
        ):
            predicate = dict(good["predicate"], **{key: value})
            if value is None:
                del predicate[key]
            (attestation,) = read_bundle(self.bundle(dict(good, predicate=predicate)), [self.verifier])
            with self.subTest(key=key, value=value):
                with self.assertRaisesRegex(ProvenanceError, words):
                    check_files(attestation, [path])


class TestIdenticalRuns(Case):
    """Two runs of the same task give the very same transcript bytes: one subject each, told apart by name."""

    def test_the_attestation_of_a_batch_with_two_identical_runs_verifies(self) -> None:
        out = self.path("out")
        specs = [RunSpec("p", "one", 4, 1000), RunSpec("q", "one", 4, 1000), RunSpec("r", "three", 1, 1000)]
        run_many(
            specs,
            model="tests.support.batch_models:factory",
            tools="tests.support.batch_models:tools",
            out_dir=out,
            checkpoint=os.path.join(out, "manifest.checkpoint"),
        )
        files = [os.path.join(out, n + ".jsonl") for n in "pqr"]
        with open(files[0], "rb") as one, open(files[1], "rb") as other:
            self.assertEqual(one.read(), other.read())  # the premise: the same bytes, the same SHA-256
        (attestation,) = read_bundle(attest_batch(os.path.join(out, "manifest.jsonl"), [self.key]), [self.verifier])
        self.assertEqual([n for n, _ in attestation.subjects], ["p.jsonl", "q.jsonl", "r.jsonl"])
        checked = check_files(attestation, files)
        self.assertEqual(([n for _, n in checked.files], checked.unchecked), (["p", "q", "r"], ()))
        checked = check_files(attestation, files[1:2])
        self.assertEqual(([n for _, n in checked.files], checked.unchecked), (["q"], ("p", "r")))


class TestBatchWithFailures(TestBatch):
    """A ledger with failed runs: they are in the predicate, not among the subjects."""

    def setUp(self) -> None:
        super().setUp()
        lines = parse_ledger(self.ledger)
        lines[1] = {"name": "b", "origin": lines[1]["origin"], "status": "worker_error", "error": "RuntimeError"}
        self.ledger = ledger_bytes(lines)
        self.write(self.ledger, self.manifest)
        self.checkpoint = os.path.join(self.out, "manifest.checkpoint")
        with open(self.checkpoint, encoding="utf-8") as handle:
            origin = handle.readline().strip()
        self.write(make_checkpoint(origin, self.ledger).to_bytes(), self.checkpoint)
        os.remove(self.files[1])
        del self.files[1]

    def write(self, data: bytes, path: str) -> None:
        with open(path, "wb") as handle:
            handle.write(data)

    def test_the_batch_attestation(self) -> None:
        (attestation,) = read_bundle(attest_batch(self.manifest, [self.key]), [self.verifier])
        self.assertEqual([r["status"] for r in attestation.predicate["runs"]], ["ok", "worker_error", "ok"])
        self.assertEqual(sorted(n for n, _ in attestation.subjects), ["a.jsonl", "c.jsonl"])
        self.assertEqual(check_files(attestation, self.files, self.ledger).unchecked, ())

    def test_nothing_altered_is_attested(self) -> None:
        self.write(b"not a checkpoint\n", self.checkpoint)
        with self.assertRaisesRegex(ProvenanceError, "the ledger's checkpoint .*manifest.checkpoint: checkpoint"):
            attest_batch(self.manifest, [self.key])
        self.write(self.ledger + b"{}\n", self.manifest)
        with self.assertRaisesRegex(ProvenanceError, "manifest .*manifest line 4"):
            attest_batch(self.manifest, [self.key])
        lines = [
            dict(line, status="rejected", reason="missing") if line["status"] == "ok" else line
            for line in parse_ledger(self.ledger)
        ]
        for line in lines:
            for key in ("head", "records", "root", "sha256", "stop"):
                line.pop(key, None)
        self.write(ledger_bytes(lines), self.manifest)
        with open(self.checkpoint, "rb") as handle:
            origin = handle.read().split(b"\n")[0].decode()
        self.write(make_checkpoint("agentloop-manifest/1/" + "0" * 64, ledger_bytes(lines)).to_bytes(), self.checkpoint)
        with self.assertRaisesRegex(ProvenanceError, "no run of the batch is ok"):
            attest_batch(self.manifest, [self.key])
        self.assertTrue(origin)

    def test_a_forged_predicate_is_refused_even_when_signed(self) -> None:
        (attestation,) = read_bundle(attest_batch(self.manifest, [self.key]), [self.verifier])
        subjects = [{"name": n, "digest": {"sha256": s}} for n, s in attestation.subjects]

        def forged(predicate: Dict[str, Any], subject: Any = None) -> Any:
            statement = {
                "_type": "https://in-toto.io/Statement/v1",
                "subject": subject or subjects,
                "predicateType": BATCH_PREDICATE,
                "predicate": predicate,
            }
            (read_back,) = read_bundle(
                envelope_line(sign_envelope(PAYLOAD_TYPE, json.dumps(statement).encode(), [self.key])), [self.verifier]
            )
            return read_back

        good = json.loads(json.dumps(attestation.predicate))
        one_root = naive_root(self.ledger.splitlines()[:1]).hex()  # the ledger of run "a" alone
        cases = [
            (forged(dict(good, format="x")), "a batch predicate holds format, ledger and a non-empty runs array"),
            (forged(dict(good, runs=[1])), "predicate.runs: every run is an object"),
            (forged(dict(good, runs=[{"name": "a"}])), "predicate.runs: are not ledger lines"),
            (forged(good, subjects[:1]), "subject: the subjects are not the ok runs of its predicate"),
            (
                forged(dict(good, runs=good["runs"][:1], ledger=dict(good["ledger"], size=True, root=one_root))),
                "predicate.ledger: its size and root are not those of its runs",  # true is not 1 in JSON
            ),
            (
                forged(dict(good, runs=[dict(good["runs"][0], model={"model": "another"})] + good["runs"][1:])),
                'run "a" has another model',
            ),
        ]
        for attestation_, words in cases:
            with self.subTest(words):
                with self.assertRaisesRegex(ProvenanceError, words):
                    check_files(attestation_, self.files)
