"""Keys, cosignatures and witness messages that break a rule are refused with the rule and the place.

The small-order public key below is the identity point's neighbour used by
RFC 8032 test suites: y = 2 encoded little-endian with the sign bit set
(bytes 02 00 ... 00 80); it does not decode to a point of large order.
"""

from __future__ import annotations

import base64
import unittest
from typing import Any, Callable, List, Tuple

from agentloop.errors import AgentloopError, BadArgumentError, MalformedNoteError, SigningKeyError, WrongTypeError
from agentloop.signing import cosignature, keys, note, witness
from agentloop.signing.ed25519 import is_valid_public_key
from agentloop.signing.hmac_sha256 import HmacKey
from agentloop.signing.keys import ALG_ED25519
from agentloop.signing.note import MAX_NOTE_BYTES, Note

from tests.support.helpers import TempDir

NOT_A_POINT = b"\x02" + b"\x00" * 30 + b"\x80"


class RefusalCase(unittest.TestCase):
    def assertRefused(self, cases: List[Tuple[Callable[[], Any], type, str]]) -> None:
        for call, kind, message in cases:
            with self.subTest(message), self.assertRaises(kind) as caught:
                call()
            self.assertIsInstance(caught.exception, AgentloopError)
            self.assertEqual(str(caught.exception), message)


class TestKeyRefusals(RefusalCase):
    def test_keys_that_name_no_algorithm_or_no_point_are_refused(self) -> None:
        self.assertFalse(is_valid_public_key(NOT_A_POINT))
        forged = base64.b64encode(bytes([ALG_ED25519]) + NOT_A_POINT).decode("ascii")
        matching_hash = keys.key_hash("n", ALG_ED25519, NOT_A_POINT).hex()
        self.assertRefused(
            [
                (lambda: HmacKey("bad name", b"k" * 32), SigningKeyError, "hmac key: 'bad name' is not a key name"),
                (lambda: HmacKey("n", "k" * 32), SigningKeyError, "hmac key: must be bytes, got str"),  # type: ignore[arg-type]
                (
                    lambda: keys.encode_verifier_key("n", NOT_A_POINT, alg=9),
                    SigningKeyError,
                    "verifier key: unknown algorithm 0x09",
                ),
                (
                    lambda: keys.encode_verifier_key("n", NOT_A_POINT),
                    SigningKeyError,
                    "verifier key: is not a valid Ed25519 public key",
                ),
                (
                    lambda: keys.encode_signer_key("n", b"\x00" * 32, alg=9),
                    SigningKeyError,
                    "signer key: unknown algorithm 0x09",
                ),
                (
                    lambda: keys.parse_verifier_key(5),
                    SigningKeyError,
                    "verifier key: a verifier key must be a str, got int",
                ),  # type: ignore[arg-type]
                (
                    lambda: keys.parse_verifier_key("n+" * 3000),
                    SigningKeyError,
                    "verifier key: is longer than 4096 characters: not a verifier key",
                ),
                # a key hash that matches, over bytes that are no public key
                (
                    lambda: keys.parse_verifier_key("n+%s+%s" % (matching_hash, forged)),
                    SigningKeyError,
                    "verifier key: is not a valid Ed25519 public key",
                ),
            ]
        )


class TestKeyFiles(TempDir):
    def test_a_key_file_written_on_windows_reads_the_same(self) -> None:
        _, vkey = keys.generate_key("example.com/log", allow_slow_unsafe_signer=True)
        path = self.write_bytes(vkey.encode("ascii") + b"\r\n", "log.vkey")
        self.assertEqual(keys.read_verifier_key(path), keys.parse_verifier_key(vkey))


class TestCosignatureRefusals(RefusalCase):
    def test_witness_keys_and_timestamps_are_checked(self) -> None:
        self.assertRefused(
            [
                (
                    lambda: cosignature.cosignature_timestamp(b"x" * 10),
                    BadArgumentError,
                    "signature must be a 72-byte cosignature/v1 timestamped_signature, got 10 bytes",
                ),
                (
                    lambda: cosignature.CosignatureVerifier("bad name", b"\x00" * 32),
                    SigningKeyError,
                    "witness key: 'bad name' is not a key name",
                ),
                (
                    lambda: cosignature.CosignatureVerifier("w", NOT_A_POINT),
                    SigningKeyError,
                    "witness key w: is not a valid Ed25519 public key",
                ),
            ]
        )

    def test_a_key_of_the_other_type_is_refused_with_both_types(self) -> None:
        unsafe = {"allow_slow_unsafe_signer": True}  # the type is refused before any signing: no backend needed
        note_skey = keys.parse_signer_key(keys.generate_key("log", **unsafe)[0], **unsafe)
        witness_skey = keys.parse_signer_key(keys.generate_key("w", alg=keys.ALG_COSIGNATURE_V1, **unsafe)[0], **unsafe)
        self.assertRefused(
            [
                (
                    lambda: cosignature.CosignatureSigner(note_skey),
                    SigningKeyError,
                    "signer key log: is of type 0x01, not a cosignature/v1 key (0x04)",
                ),
                (
                    lambda: note.Ed25519Signer(witness_skey),
                    SigningKeyError,
                    "signer key w: is of type 0x04, not an Ed25519 note key (0x01)",
                ),
                (
                    lambda: note.Ed25519Verifier.from_key(witness_skey.verifier_key()),
                    SigningKeyError,
                    "verifier key w: is of type 0x04, not an Ed25519 note key (0x01)",
                ),
                (
                    lambda: note.Ed25519Verifier("bad name", b"\x00" * 32),
                    SigningKeyError,
                    "key verifier: 'bad name' is not a key name",
                ),
                (
                    lambda: note.Ed25519Verifier("v", NOT_A_POINT),
                    SigningKeyError,
                    "key verifier v: is not a valid Ed25519 public key",
                ),
            ]
        )

    def test_an_ed25519_key_gives_an_ed25519_verifier(self) -> None:
        skey, vkey = keys.generate_key("example.com/log", allow_slow_unsafe_signer=True)
        verifier = cosignature.verifier_from_key(vkey)
        self.assertEqual((type(verifier).__name__, verifier.name), ("Ed25519Verifier", "example.com/log"))


class TestWitnessRefusals(RefusalCase):
    def test_requests_responses_and_sizes_are_checked(self) -> None:
        self.assertRefused(
            [
                (
                    lambda: witness.parse_add_checkpoint_request("old 0\n"),
                    WrongTypeError,
                    "a request body must be bytes, got str",
                ),  # type: ignore[arg-type]
                (
                    lambda: witness.parse_add_checkpoint_request(b"x" * (MAX_NOTE_BYTES + 4097)),
                    MalformedNoteError,
                    "witness request: longer than %d bytes" % (MAX_NOTE_BYTES + 4096,),
                ),
                (
                    lambda: witness.format_add_checkpoint_response([]),
                    BadArgumentError,
                    "signatures must hold at least one cosignature (a response holds one or more)",
                ),
                (
                    lambda: witness.checkpoint_size(Note("origin\n", ())),
                    MalformedNoteError,
                    "witness request: the checkpoint needs an origin, a size and a root hash line",
                ),
                (
                    lambda: witness.checkpoint_size(Note("origin\n01\nroot\n", ())),
                    MalformedNoteError,
                    "witness request: the checkpoint's size line is not a decimal with no leading zero",
                ),
                (
                    lambda: witness.checkpoint_size(Note("origin\n%d\nroot\n" % (10**20,), ())),
                    MalformedNoteError,
                    "witness request: the checkpoint's size line is not a decimal with no leading zero",
                ),
            ]
        )


if __name__ == "__main__":
    unittest.main()
