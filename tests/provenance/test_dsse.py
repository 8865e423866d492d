"""DSSE v1.0.2: PAE against the spec's vector and hand-made ones, the envelope's parsing rules, signatures."""

from __future__ import annotations

import base64
import importlib
import json
import os
import unittest
from typing import Any, Dict

from agentloop.errors import BadSignatureError, ProvenanceError
from agentloop.provenance.dsse import (
    DsseSignature,
    Envelope,
    envelope_line,
    pae,
    parse_envelope,
    sign_envelope,
    verify_envelope,
)

from tests.provenance.test_cose import signer
from tests.support.signing_support import require_cryptography

VECTORS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "dsse", "pae.json")


def load() -> Dict[str, Any]:
    with open(VECTORS, encoding="utf-8") as handle:
        data: Dict[str, Any] = json.load(handle)
    if len(data.get("pae", ())) < 4:
        raise AssertionError("the PAE vectors are missing")
    return data


class TestPae(unittest.TestCase):
    def test_the_vectors(self) -> None:
        for vector in load()["pae"]:
            with self.subTest(vector["desc"]):
                self.assertEqual(
                    pae(vector["payloadType"], bytes.fromhex(vector["payload_hex"])).hex(), vector["pae_hex"]
                )

    def test_the_specs_envelope_verifies_over_this_pae(self) -> None:
        """The spec's ECDSA P-256 signature, checked with ``cryptography``: the PAE here is the bytes it signs."""
        require_cryptography(self)
        ec = importlib.import_module("cryptography.hazmat.primitives.asymmetric.ec")
        utils = importlib.import_module("cryptography.hazmat.primitives.asymmetric.utils")
        hashes = importlib.import_module("cryptography.hazmat.primitives.hashes")
        exceptions = importlib.import_module("cryptography.exceptions")
        vector = load()["envelope"]
        key = ec.EllipticCurvePublicNumbers(int(vector["p256_x"]), int(vector["p256_y"]), ec.SECP256R1()).public_key()
        envelope = parse_envelope(json.dumps(vector["json"]).encode("utf-8"))
        raw = envelope.signatures[0].sig
        der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        key.verify(der, pae(envelope.payload_type, envelope.payload), ec.ECDSA(hashes.SHA256()))
        with self.assertRaises(exceptions.InvalidSignature):
            key.verify(der, pae(envelope.payload_type, envelope.payload + b"!"), ec.ECDSA(hashes.SHA256()))


class TestEnvelope(unittest.TestCase):
    def setUp(self) -> None:
        self.key = signer()
        self.verifier = self.key.verifier()

    def test_a_line_of_canonical_json_that_reads_back(self) -> None:
        envelope = sign_envelope("application/vnd.in-toto+json", b'{"_type":"x"}', [self.key])
        line = envelope_line(envelope)
        self.assertTrue(line.endswith(b"}\n") and line.count(b"\n") == 1)
        doc = json.loads(line)
        self.assertEqual(list(doc), ["payload", "payloadType", "signatures"])
        self.assertEqual(doc["signatures"][0]["keyid"], "example.com/operator+%s" % (self.key.key_id.hex(),))
        self.assertEqual(parse_envelope(line[:-1]), envelope)
        self.assertEqual(verify_envelope(envelope, [self.verifier]), ("example.com/operator",))

    def test_parsing_rules(self) -> None:
        sig = base64.b64encode(b"s" * 64).decode()
        base = {"payload": "aGk=", "payloadType": "t", "signatures": [{"sig": sig}]}
        self.assertEqual(parse_envelope(json.dumps(base).encode()).signatures[0].keyid, "")  # unset keyid is empty
        extra = dict(base, future="ignored", signatures=[{"sig": sig, "keyid": "k", "extension": 1}])
        self.assertEqual(parse_envelope(json.dumps(extra).encode()).payload, b"hi")  # unknown members ignored
        urlsafe = dict(base, payload=base64.urlsafe_b64encode(b"\xfb\xff").decode())
        self.assertEqual(parse_envelope(json.dumps(urlsafe).encode()).payload, b"\xfb\xff")  # either alphabet
        cases = [
            (b"[]", "is not a JSON object"),
            (b"\xff", "is not a JSON text"),
            (b'{"payload":"aGk=","payload":"aGk=","payloadType":"t","signatures":[]}', "repeats a member"),
            (json.dumps(dict(base, payloadType=1)).encode(), "$.payloadType: must be a string"),
            (
                json.dumps({"payloadType": "t", "signatures": base["signatures"]}).encode(),
                "$.payload: must be a base64 string",
            ),
            (json.dumps(dict(base, payload="aGk")).encode(), "$.payload: is not valid base64"),
            (json.dumps(dict(base, payload="aGl=")).encode(), "$.payload: is not canonical base64"),
            (json.dumps(dict(base, payload="+_8=")).encode(), "$.payload: is not base64 in one alphabet"),
            (json.dumps(dict(base, signatures=[])).encode(), "$.signatures: must be a non-empty array"),
            (json.dumps(dict(base, signatures=["x"])).encode(), "$.signatures[0]: must be an object"),
            (
                json.dumps(dict(base, signatures=[{"sig": sig, "keyid": 3}])).encode(),
                "$.signatures[0].keyid: must be a string",
            ),
            (
                json.dumps(dict(base, signatures=[{"keyid": "k"}])).encode(),
                "$.signatures[0].sig: must be a base64 string",
            ),
        ]
        for data, words in cases:
            with self.subTest(words):
                with self.assertRaises(ProvenanceError) as caught:
                    parse_envelope(data)
                self.assertIn(words, str(caught.exception))

    def test_verification_rules(self) -> None:
        other = signer("example.com/other", bytes(range(32)))
        envelope = sign_envelope("t", b"body", [other, self.key])
        self.assertEqual(
            verify_envelope(envelope, [self.verifier]), ("example.com/operator",)
        )  # an unknown key's is ignored
        self.assertEqual(
            verify_envelope(envelope, [self.verifier, other.verifier()]), ("example.com/other", "example.com/operator")
        )
        self.assertEqual(verify_envelope(envelope, []), ())
        unnamed = Envelope("t", b"body", tuple(DsseSignature("", s.sig) for s in envelope.signatures))
        self.assertEqual(verify_envelope(unnamed, [self.verifier]), ())  # a signature without keyid counts for nothing
        forged = Envelope("t", b"bodY", envelope.signatures)
        with self.assertRaisesRegex(BadSignatureError, "signatures\\[0\\] by example.com/other does not verify"):
            verify_envelope(forged, [self.verifier, other.verifier()])
        retyped = Envelope("u", b"body", envelope.signatures)  # the payload type is signed too
        with self.assertRaises(BadSignatureError):
            verify_envelope(retyped, [self.verifier])


if __name__ == "__main__":
    unittest.main()
