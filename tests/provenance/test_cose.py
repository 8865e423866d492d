"""COSE_Sign1 (RFC 9052) with EdDSA: the COSE working group's example byte for byte, reading and verifying strictly."""

from __future__ import annotations

import json
import os
import unittest
from typing import Any, Dict

from agentloop.errors import BadSignatureError, ProvenanceError
from agentloop.provenance import cbor
from agentloop.provenance.cose import key_label, parse_sign1, sig_structure, sign1, verify_sign1
from agentloop.signing import ed25519
from agentloop.signing.keys import ALG_ED25519, SignerKey
from agentloop.signing.note import Ed25519Signer

VECTOR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "cose", "eddsa-sig-01.json"
)
SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")  # RFC 8032 7.1 TEST 1


def signer(name: str = "example.com/operator", seed: bytes = SEED) -> Ed25519Signer:
    return Ed25519Signer(
        SignerKey(name, ALG_ED25519, seed, ed25519.unsafe_public_key(seed)), allow_slow_unsafe_signer=True
    )


class TestWorkingGroupExample(unittest.TestCase):
    def setUp(self) -> None:
        with open(VECTOR, encoding="utf-8") as handle:
            self.vector: Dict[str, Any] = json.load(handle)

    def test_the_sig_structure_and_the_message_are_the_examples_bytes(self) -> None:
        key = self.vector["input"]["sign0"]["key"]
        self.assertEqual(bytes.fromhex(key["d_hex"]), SEED)
        self.assertEqual(ed25519.unsafe_public_key(SEED).hex(), key["x_hex"])
        payload = self.vector["input"]["plaintext"].encode("utf-8")
        protected = {1: -8, 3: 0}  # "alg": "EdDSA", "ctyp": 0
        self.assertEqual(
            sig_structure(cbor.encode(protected), payload).hex().upper(), self.vector["intermediates"]["ToBeSign_hex"]
        )
        message = sign1(protected, {4: b"11"}, payload, signer())
        self.assertEqual(message.hex().upper(), self.vector["output"]["cbor"])

    def test_the_example_reads_and_its_signature_verifies(self) -> None:
        message = parse_sign1(bytes.fromhex(self.vector["output"]["cbor"]))
        self.assertEqual(
            (message.protected, message.unprotected, message.payload),
            ({1: -8, 3: 0}, {4: b"11"}, b"This is the content."),
        )
        public = bytes.fromhex(self.vector["input"]["sign0"]["key"]["x_hex"])
        self.assertTrue(
            ed25519.verify(public, sig_structure(message.protected_bytes, message.payload or b""), message.signature)
        )
        self.assertFalse(
            ed25519.verify(public, sig_structure(message.protected_bytes, b"This is the content!"), message.signature)
        )


class TestVerify(unittest.TestCase):
    def setUp(self) -> None:
        self.key = signer()
        self.verifier = self.key.verifier()
        self.protected = {1: -8, 4: key_label(self.key.name, self.key.key_id).encode("utf-8")}

    def test_attached_and_detached(self) -> None:
        attached = parse_sign1(sign1(self.protected, {}, b"payload", self.key))
        self.assertIs(verify_sign1(attached, [self.verifier]), self.verifier)
        detached = parse_sign1(sign1(self.protected, {}, b"root", self.key, detached=True))
        self.assertIsNone(detached.payload)
        self.assertIs(verify_sign1(detached, [self.verifier], payload=b"root"), self.verifier)
        with self.assertRaises(BadSignatureError):
            verify_sign1(detached, [self.verifier], payload=b"another root")
        with self.assertRaisesRegex(ProvenanceError, "is detached"):
            verify_sign1(detached, [self.verifier])
        with self.assertRaisesRegex(ProvenanceError, "is attached, and another was given"):
            verify_sign1(attached, [self.verifier], payload=b"payload")

    def test_the_kid_must_name_a_trusted_key(self) -> None:
        other = signer("example.com/other", bytes(range(32))).verifier()
        message = parse_sign1(sign1(self.protected, {}, b"p", self.key))
        with self.assertRaisesRegex(BadSignatureError, "example.com/operator\\+.* which is not a trusted key"):
            verify_sign1(message, [other])
        # The same name with another key: another key ID, so another kid.
        impostor = signer("example.com/operator", bytes(range(32))).verifier()
        with self.assertRaisesRegex(BadSignatureError, "not a trusted key"):
            verify_sign1(message, [impostor])
        unnamed = parse_sign1(sign1({1: -8}, {}, b"p", self.key))
        with self.assertRaisesRegex(ProvenanceError, "4 \\(kid\\)"):
            verify_sign1(unnamed, [self.verifier])

    def test_only_eddsa(self) -> None:
        with self.assertRaisesRegex(ProvenanceError, "must be EdDSA"):
            sign1({1: -7}, {}, b"p", self.key)
        forged = cbor.encode(cbor.Tag(18, [cbor.encode({1: -7, 4: b"k"}), {}, b"p", b"s" * 64]))
        with self.assertRaisesRegex(ProvenanceError, "not EdDSA"):
            verify_sign1(parse_sign1(forged), [self.verifier])

    def test_malformed_messages_are_refused_naming_the_rule(self) -> None:
        good = [cbor.encode({1: -8}), {}, b"p", b"s"]
        cases = [
            (cbor.encode(good), "not a tagged COSE_Sign1"),
            (cbor.encode(cbor.Tag(98, good)), "not a tagged COSE_Sign1"),
            (cbor.encode(cbor.Tag(18, good[:3])), "an array of 4"),
            (cbor.encode(cbor.Tag(18, [b""] + good[1:])), "protected header: must be a non-empty byte string"),
            (
                cbor.encode(cbor.Tag(18, [b"\xa1\x01\x38\x07"] + good[1:])),
                "protected header: not deterministic CBOR: CBOR byte 2",
            ),
            (cbor.encode(cbor.Tag(18, [cbor.encode([1])] + good[1:])), "must encode a map"),
            (cbor.encode(cbor.Tag(18, [good[0], [], b"p", b"s"])), "unprotected header: must be a map"),
            (cbor.encode(cbor.Tag(18, [good[0], {}, "p", b"s"])), "payload: must be a byte string or nil"),
            (cbor.encode(cbor.Tag(18, [good[0], {}, b"p", None])), "signature: must be a byte string"),
            (b"\xd2\x84\x41\xa0\xa0\xf6\x40\x00", "not deterministic CBOR: CBOR byte 7: 1 bytes after"),
        ]
        for data, words in cases:
            with self.subTest(words):
                with self.assertRaises(ProvenanceError) as caught:
                    parse_sign1(data)
                self.assertIn(words, str(caught.exception))
        with self.assertRaisesRegex(ProvenanceError, "longer than"):
            parse_sign1(b"\x00" * ((1 << 20) + 1))


if __name__ == "__main__":
    unittest.main()
