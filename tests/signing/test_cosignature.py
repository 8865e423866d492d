"""C2SP tlog-cosignature (cosignature/v1) and the tlog-witness add-checkpoint body.

Vectors: ``tests/vectors/ed25519/cosignature-vectors.json`` (see
PROVENANCE.md).  The witness request example is the one in tlog-witness
"add-checkpoint", rebuilt here byte for byte.
"""

from __future__ import annotations

import base64
import hashlib
import unittest
from typing import Any, Dict, List

from agentloop.errors import BadSignatureError, MalformedNoteError, SigningKeyError
from agentloop.signing import ed25519, keys
from agentloop.signing.cosignature import (
    CosignatureSigner,
    CosignatureVerifier,
    cosign,
    cosignature_timestamp,
    cosigned_message,
    signer_from_key,
    verifier_from_key,
)
from agentloop.signing.note import (
    Ed25519Signer,
    Ed25519Verifier,
    Note,
    NoteSignature,
    Verifier,
    parse_note,
    parse_signature_line,
    sign_note,
    verify_note,
)
from agentloop.signing.witness import (
    MAX_PROOF_LINES,
    build_add_checkpoint_request,
    format_add_checkpoint_response,
    parse_add_checkpoint_request,
    parse_add_checkpoint_response,
)

from tests.support.signing_support import load_vectors

UNSAFE = True  # the explicit opt-in: these tests must run without cryptography
TS = 1679315147

# tlog-witness "add-checkpoint", "Example request body" (the checkpoint of tlog-cosignature's example).
SPEC_REQUEST = (
    "old 20852014\n"
    "PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=\n"
    "jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=\n"
    "5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=\n"
    "/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=\n"
    "\n"
    "example.com/behind-the-sofa\n"
    "20852163\n"
    "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
    "\n"
    "\u2014 example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n"  # noqa: E501
    "\u2014 example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=\n"  # noqa: E501
).encode("utf-8")

# tlog-witness "Example response body".
SPEC_RESPONSE = (
    "\u2014 witness.example/w1 CMp+6LWBU0anHGH5aNDTJkH/gj79sG+T6+iP2ThYN5krrDJbR1HDnucjL39QsZTSvVjyQLrdk3DXDqI5G2HgLatVs0pWh6Up69HVOw==\n"  # noqa: E501
    "\u2014 witness.example/w1 I7rEps0pvK2UqkS2gSpVUDhrhVtQV9lgF6pRrWAvjJHjyWpW7VcE3SiOlVlbQNt64vWhO+DlkL0+UfzuOBMh9ChdMkP1vi/lCAsmlw==\n"  # noqa: E501
    "\u2014 witness.example/w2 AWui8Sk55XjYLOijihBjhqEH6nS1ndDymE0a+6idX7pLcnoB+dhnz0854aLZgrrKbYKA7nC3HNJhm/kWl7oJlqU3rXXvpysAdyP3wQ==\n"  # noqa: E501
).encode("utf-8")


def vector(name: str) -> Dict[str, Any]:
    found = [v for v in load_vectors("cosignature-vectors.json")["vectors"] if v["name"] == name]
    if not found:
        raise AssertionError("cosignature vector %s is missing" % (name,))
    return dict(found[0])


def go_skey() -> str:
    return str(load_vectors("signed-note-vectors.json")["vectors"][0]["skey"])


def log_signer() -> Ed25519Signer:
    seed = hashlib.sha256(b"agentloop test log").digest()
    return Ed25519Signer.from_key(
        keys.encode_signer_key("example.com/behind-the-sofa", seed, allow_slow_unsafe_signer=UNSAFE), UNSAFE
    )


def witness(timestamp: int = TS) -> CosignatureSigner:
    skey = vector("agentloop-cosignature-v1")["skey"]
    return CosignatureSigner(keys.parse_signer_key(skey, allow_slow_unsafe_signer=UNSAFE), timestamp, UNSAFE)


class TestCosignatureV1(unittest.TestCase):
    def test_known_answer(self) -> None:
        vec = vector("agentloop-cosignature-v1")
        note = sign_note(vec["text"], witness(vec["timestamp"]))
        self.assertEqual(note.signatures[0].line(), vec["signature_line"])
        verifier = verifier_from_key(vec["vkey"])
        self.assertIsInstance(verifier, CosignatureVerifier)
        self.assertEqual(
            signer_from_key(vec["skey"], vec["timestamp"], allow_slow_unsafe_signer=UNSAFE), witness(vec["timestamp"])
        )
        self.assertIsInstance(signer_from_key(go_skey(), allow_slow_unsafe_signer=UNSAFE), Ed25519Signer)
        self.assertEqual(verify_note(note, [verifier]).signers, ("witness.example/w1",))
        self.assertEqual(cosignature_timestamp(note.signatures[0]), vec["timestamp"])
        # the signed message, tlog-cosignature "Signed message", checked with the raw primitive
        raw = note.signatures[0].signature
        message = b"cosignature/v1\ntime 1679315147\n" + vec["text"].encode()
        self.assertEqual(cosigned_message(vec["text"], vec["timestamp"]), message)
        self.assertTrue(ed25519.verify(verifier.public_key, message, raw[8:]))
        self.assertEqual(raw[:8], (1679315147).to_bytes(8, "big"))

    def test_key_id_uses_type_0x04(self) -> None:
        vec = vector("agentloop-cosignature-v1")
        verifier = verifier_from_key(vec["vkey"])
        expected = hashlib.sha256(b"witness.example/w1\n\x04" + verifier.public_key).digest()[:4]
        self.assertEqual(verifier.key_id, expected)
        self.assertEqual(vec["vkey"].split("+")[1], expected.hex())
        self.assertEqual(keys.parse_verifier_key(vec["vkey"]).alg, keys.ALG_COSIGNATURE_V1)
        self.assertEqual(verifier.text(), vec["vkey"])
        # the same public key as a 0x01 note key has another key ID: the cosignature is unknown to it
        as_note_key = Ed25519Verifier("witness.example/w1", verifier.public_key)
        self.assertNotEqual(as_note_key.key_id, verifier.key_id)
        with self.assertRaises(BadSignatureError):
            verify_note(sign_note(vec["text"], witness()), [as_note_key])

    def test_c2sp_example_line_structure(self) -> None:
        vec = vector("c2sp-tlog-cosignature-example")
        sig = parse_signature_line(vec["signature_line"])
        self.assertEqual(sig.key_id.hex(), vec["key_id"])
        self.assertEqual(len(sig.signature), 72)
        self.assertEqual(cosignature_timestamp(sig), vec["timestamp"])

    def test_timestamp_is_bound(self) -> None:
        vec = vector("agentloop-cosignature-v1")
        verifier = verifier_from_key(vec["vkey"])
        note = sign_note(vec["text"], witness())
        sig = note.signatures[0]
        for stamp in (TS + 1, TS - 1, 0):
            moved = NoteSignature(sig.name, sig.key_id, stamp.to_bytes(8, "big") + sig.signature[8:])
            with self.assertRaises(BadSignatureError):
                verify_note(Note(note.text, (moved,)), [verifier])
        for size in (71, 73, 64):
            cut = NoteSignature(sig.name, sig.key_id, (sig.signature * 2)[:size])
            with self.assertRaises(BadSignatureError):
                verify_note(Note(note.text, (cut,)), [verifier])

    def test_signing_is_a_pure_function_of_key_time_and_text(self) -> None:
        text = vector("agentloop-cosignature-v1")["text"]
        self.assertEqual(sign_note(text, witness()).to_bytes(), sign_note(text, witness()).to_bytes())
        self.assertNotEqual(sign_note(text, witness()).to_bytes(), sign_note(text, witness().at(TS + 1)).to_bytes())
        live = CosignatureSigner(witness().key, None, UNSAFE)
        self.assertGreater(cosignature_timestamp(sign_note(text, live).signatures[0]), TS)

    def test_bad_timestamps_and_key_types(self) -> None:
        for bad in (-1, 2**64, True, 1.5):
            with self.assertRaises(ValueError):
                cosigned_message(b"x\n", bad)  # type: ignore[arg-type]
        with self.assertRaises(SigningKeyError):
            CosignatureSigner(log_signer().key)
        with self.assertRaises(SigningKeyError):
            Ed25519Signer(witness().key)
        with self.assertRaises(SigningKeyError):
            Ed25519Verifier.from_key(vector("agentloop-cosignature-v1")["vkey"])


class TestWitnessRoundTrip(unittest.TestCase):
    def setUp(self) -> None:
        self.log = log_signer()
        self.witness = witness()
        self.text = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
        self.checkpoint = sign_note(self.text, self.log)

    def test_log_sign_witness_cosign_client_verify(self) -> None:
        cosigned = cosign(self.checkpoint, [self.log.verifier()], self.witness)
        trusted: List[Verifier] = [self.log.verifier(), self.witness.verifier()]
        verified = verify_note(parse_note(cosigned.to_bytes()), trusted, require=[self.log.name, self.witness.name])
        self.assertEqual(verified.signers, (self.log.name, self.witness.name))
        # as tlog-witness suggests: the response lines concatenated to the checkpoint
        response = format_add_checkpoint_response(cosigned.signatures[1:])
        lines = parse_add_checkpoint_response(response)
        rebuilt = Note(self.checkpoint.text, self.checkpoint.signatures + lines)
        self.assertEqual(rebuilt.to_bytes(), cosigned.to_bytes())
        # cosigning again at the same time gives the same bytes and replaces, not duplicates
        self.assertEqual(cosign(cosigned, [self.log.verifier()], self.witness).to_bytes(), cosigned.to_bytes())

    def test_witness_refuses_an_untrusted_or_bad_checkpoint(self) -> None:
        stranger = Ed25519Signer.from_key(
            keys.encode_signer_key("example.com/behind-the-sofa", b"\x07" * 32, allow_slow_unsafe_signer=UNSAFE), UNSAFE
        )
        with self.assertRaises(BadSignatureError):
            cosign(sign_note(self.text, stranger), [self.log.verifier()], self.witness)
        forged = Note(self.text.replace("20852163", "20852164"), self.checkpoint.signatures)
        with self.assertRaises(BadSignatureError):
            cosign(forged, [self.log.verifier()], self.witness)

    def test_unknown_cosignature_types_are_ignored(self) -> None:
        # an ML-DSA-44 cosignature (2420-byte signature) from a key nobody here knows
        pq = NoteSignature("witness.example/pq", b"\x12\x34\x56\x78", bytes(8) + b"\x55" * 2420)
        cosigned = cosign(Note(self.text, self.checkpoint.signatures + (pq,)), [self.log.verifier()], self.witness)
        verified = verify_note(parse_note(cosigned.to_bytes()), [self.log.verifier(), self.witness.verifier()])
        self.assertEqual(verified.signers, (self.log.name, self.witness.name))
        self.assertEqual([s.name for s in verified.unverified], ["witness.example/pq"])


class TestAddCheckpointRequest(unittest.TestCase):
    def spec_parts(self) -> Any:
        lines = SPEC_REQUEST.split(b"\n")
        proof = [base64.b64decode(line) for line in lines[1:5]]
        checkpoint = SPEC_REQUEST[SPEC_REQUEST.index(b"\n\n") + 2 :]
        return proof, checkpoint

    def test_spec_example_rebuilt_byte_for_byte(self) -> None:
        proof, checkpoint = self.spec_parts()
        self.assertEqual(build_add_checkpoint_request(20852014, proof, checkpoint), SPEC_REQUEST)
        parsed = parse_add_checkpoint_request(SPEC_REQUEST)
        self.assertEqual(parsed.old_size, 20852014)
        self.assertEqual(list(parsed.proof), proof)
        self.assertEqual(parsed.checkpoint.to_bytes(), checkpoint)
        self.assertEqual(len(parsed.checkpoint.signatures), 2)
        self.assertEqual(parsed.to_bytes(), SPEC_REQUEST)

    def test_spec_example_response_parses(self) -> None:
        sigs = parse_add_checkpoint_response(SPEC_RESPONSE)
        self.assertEqual([s.name for s in sigs], ["witness.example/w1", "witness.example/w1", "witness.example/w2"])
        self.assertEqual(format_add_checkpoint_response(sigs), SPEC_RESPONSE)
        for bad in (b"", SPEC_RESPONSE[:-1], b"\xff\n", b"not a signature\n"):
            with self.assertRaises(MalformedNoteError):
                parse_add_checkpoint_response(bad)

    def test_old_size_zero_has_no_proof(self) -> None:
        _, checkpoint = self.spec_parts()
        body = build_add_checkpoint_request(0, [], checkpoint)
        self.assertTrue(body.startswith(b"old 0\n\nexample.com/behind-the-sofa\n"))
        self.assertEqual(parse_add_checkpoint_request(body).old_size, 0)

    def test_build_refuses(self) -> None:
        proof, checkpoint = self.spec_parts()
        unsigned = checkpoint[: checkpoint.index(b"\n\n") + 1]
        cases: List[Any] = [
            (20852164, proof, checkpoint, "old size above the checkpoint's"),
            (0, proof, checkpoint, "a proof with old size 0"),
            (-1, [], checkpoint, "negative old size"),
            (True, [], checkpoint, "bool old size"),
            (5, [b"\x00" * 31], checkpoint, "short hash"),
            (5, [b"\x00" * 32] * (MAX_PROOF_LINES + 1), checkpoint, "64 proof lines"),
            (5, [], b"origin\n5\n" + base64.b64encode(bytes(32)) + b"\n\n", "unsigned checkpoint"),
            (5, [], unsigned, "no signature block"),
        ]
        for old, nodes, cp, why in cases:
            with self.subTest(why):
                with self.assertRaises(MalformedNoteError):
                    build_add_checkpoint_request(old, nodes, cp)

    def test_parse_refuses(self) -> None:
        head, rest = SPEC_REQUEST.split(b"\n", 1)
        cases = {
            "leading zero": b"old 020852014\n" + rest,
            "no old line": rest,
            "OLD": b"OLD 20852014\n" + rest,
            "two spaces": b"old  20852014\n" + rest,
            "sign": b"old +20852014\n" + rest,
            "short proof line": SPEC_REQUEST.replace(b"PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=", b"PlRNCrwH"),
            "non-canonical proof line": SPEC_REQUEST.replace(b"Dpkaw=", b"Dpkax="),
            "old above size": SPEC_REQUEST.replace(b"old 20852014", b"old 20852164"),
            "no empty line": b"old 0\n",
            "64 proof lines": head
            + b"\n"
            + (base64.b64encode(bytes(32)) + b"\n") * 64
            + rest[rest.index(b"\n\n") + 1 :],
            "bad checkpoint": SPEC_REQUEST[:-1],
        }
        for why, body in cases.items():
            with self.subTest(why):
                with self.assertRaises(MalformedNoteError):
                    parse_add_checkpoint_request(body)
        self.assertEqual(parse_add_checkpoint_request(head + b"\n" + rest).old_size, 20852014)


if __name__ == "__main__":
    unittest.main()
