"""agentloop's provenance vectors: rebuilt byte for byte, verified, and refused after any one changed byte.

The tamper tests change every byte of every artefact in turn (XOR 0x01, which
never turns a base64 ``+``/``/`` into its URL-safe twin ``-``/``_``: DSSE
lets either alphabet spell the same bytes, see docs/integrity.md) and expect
a refusal that names what failed.  With ``cryptography`` installed the
signatures are checked with it (the same verdicts, a hundred times faster);
without it, with the pure-Python verifier on every fifth byte.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from typing import Callable, Dict

from agentloop.errors import BadSignatureError, ProofError, ProvenanceError
from agentloop.batch.ledger import parse_ledger
from agentloop.provenance.intoto import RUN_PREDICATE, check_files, read_bundle
from agentloop.provenance.receipts import check_receipt
from agentloop.provenance.scitt import check_ledger_statement, check_statement, make_statement
from agentloop.signing.backend import cryptography_available
from agentloop.signing.keys import read_verifier_key
from agentloop.signing.note import Ed25519Verifier

from tests.provenance.test_cose import signer
from tests.support.helpers import replace_file

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDER = os.path.join(HERE, "vectors", "provenance")
TRANSCRIPT = os.path.join(HERE, "vectors", "transcript", "valid.jsonl")
FAULTS = (ProvenanceError, BadSignatureError, ProofError)


class FastVerifier(Ed25519Verifier):
    """The same verifier, checking with ``cryptography`` (for the thousands of tampered copies)."""

    def verify(self, message: bytes, signature: bytes) -> bool:
        module = importlib.import_module("cryptography.hazmat.primitives.asymmetric.ed25519")
        exceptions = importlib.import_module("cryptography.exceptions")
        try:
            module.Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except exceptions.InvalidSignature:
            return False
        return True


def read(name: str) -> bytes:
    with open(os.path.join(FOLDER, name), "rb") as handle:
        return handle.read()


def operator() -> Ed25519Verifier:
    return Ed25519Verifier.from_key(read_verifier_key(os.path.join(FOLDER, "operator.pub")))


class TestVectors(unittest.TestCase):
    def test_make_py_reproduces_the_folder(self) -> None:
        out = tempfile.mkdtemp(prefix="agentloop-test-")
        self.addCleanup(shutil.rmtree, out, True)
        subprocess.run([sys.executable, os.path.join(FOLDER, "make.py"), "--out", out], check=True, timeout=120)
        made = sorted(os.listdir(out))
        self.assertEqual(
            made, sorted(n for n in os.listdir(FOLDER) if n not in ("make.py", "README.md", "__pycache__"))
        )
        for name in made:
            with open(os.path.join(out, name), "rb") as handle:
                self.assertEqual(handle.read(), read(name), name)

    def test_each_artefact_verifies(self) -> None:
        key = operator()
        (attestation,) = read_bundle(read("valid.jsonl.intoto.jsonl"), [key])
        self.assertEqual((attestation.signers, attestation.predicate_type), (("example.com/operator",), RUN_PREDICATE))
        self.assertEqual(check_files(attestation, [TRANSCRIPT]).files, ((TRANSCRIPT, "valid.jsonl"),))
        statement = check_statement(read("valid.statement.cose"), [key], "https://operator.example.com")
        self.assertEqual(
            (statement.checkpoint.size, statement.subject), (5, "agentloop/1/" + statement.checkpoint.first)
        )
        lines = parse_ledger(read("ledger.jsonl"))
        for index, line in enumerate(lines):
            checked = check_receipt(read(line["name"] + ".receipt.cose"), line, [key], "https://operator.example.com")
            self.assertEqual((checked.index, checked.size, checked.subject), (index, 3, line["origin"]))
        with self.assertRaises(ProvenanceError):  # a receipt proves its own run's line, no other
            check_receipt(read("w.receipt.cose"), lines[2], [key])
        ledger = os.path.join(FOLDER, "ledger.jsonl")
        statement = check_statement(read("ledger.statement.cose"), [key], "https://operator.example.com")
        self.assertEqual(check_ledger_statement(statement, ledger).to_bytes(), read("ledger.checkpoint"))
        self.assertEqual(
            make_statement(ledger, signer(), "https://operator.example.com"), read("ledger.statement.cose")
        )


class TestOneChangedByte(unittest.TestCase):
    def setUp(self) -> None:
        plain = operator()
        self.key = FastVerifier(plain.name, plain.public_key) if cryptography_available() else plain
        self.stride = 1 if cryptography_available() else 5

    def every_change_refused(self, data: bytes, check: Callable[[bytes], object]) -> None:
        check(data)  # the original holds
        refused: Dict[str, int] = {}
        for at in range(0, len(data), self.stride):
            changed = data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]
            with self.subTest(at=at):
                with self.assertRaises(FAULTS) as caught:
                    check(changed)
                self.assertTrue(str(caught.exception))
                kind = type(caught.exception).__name__
                refused[kind] = refused.get(kind, 0) + 1
        self.assertEqual(sum(refused.values()), len(range(0, len(data), self.stride)))

    def test_the_attestation(self) -> None:
        self.every_change_refused(
            read("valid.jsonl.intoto.jsonl"), lambda d: check_files(read_bundle(d, [self.key])[0], [TRANSCRIPT])
        )

    def test_the_signed_statement(self) -> None:
        self.every_change_refused(read("valid.statement.cose"), lambda d: check_statement(d, [self.key]))

    def test_the_signed_statement_of_the_ledger(self) -> None:
        ledger = os.path.join(FOLDER, "ledger.jsonl")
        self.every_change_refused(
            read("ledger.statement.cose"), lambda d: check_ledger_statement(check_statement(d, [self.key]), ledger)
        )

    def test_the_receipts(self) -> None:
        lines = parse_ledger(read("ledger.jsonl"))
        for line in lines:
            with self.subTest(line["name"]):
                self.every_change_refused(
                    read(line["name"] + ".receipt.cose"), lambda d: check_receipt(d, line, [self.key])
                )

    def test_the_transcript_under_its_attestation(self) -> None:
        (attestation,) = read_bundle(read("valid.jsonl.intoto.jsonl"), [self.key])
        folder = tempfile.mkdtemp(prefix="agentloop-test-")
        self.addCleanup(shutil.rmtree, folder, True)
        path = os.path.join(folder, "valid.jsonl")
        with open(TRANSCRIPT, "rb") as handle:
            data = handle.read()

        def check(changed: bytes) -> object:
            replace_file(path, changed)
            return check_files(attestation, [path])

        self.every_change_refused(data, check)

    def test_the_ledger_line_under_its_receipt(self) -> None:
        line = parse_ledger(read("ledger.jsonl"))[0]
        receipt = read("valid.receipt.cose")
        for key in sorted(line):
            value = line[key]
            changed = dict(line, **{key: value + 1 if isinstance(value, int) else value[:-1] + chr(ord(value[-1]) ^ 1)})
            with self.subTest(key):
                with self.assertRaises(FAULTS):
                    check_receipt(receipt, changed, [self.key])


if __name__ == "__main__":
    unittest.main()
