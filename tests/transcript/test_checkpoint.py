"""The checkpoint note: its one spelling, HMAC signatures, key IDs, keys.

Malformed cases live in ``tests/vectors/checkpoint/malformed.json`` (see its
README); each breaks one rule of ``parse_checkpoint``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from typing import Any, Dict, List

from agentloop.transcript.checkpoint import (
    MAX_CHECKPOINT_BYTES,
    MAX_SIGNATURES,
    Checkpoint,
    Signature,
    key_id,
    load_key,
    parse_checkpoint,
    read_checkpoint,
    sign,
    verify_signature,
)
from agentloop.errors import BadSignatureError, MalformedCheckpointError, SigningKeyError

from tests.support.helpers import TempDir

VECTORS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "checkpoint")
KEY = b"0123456789abcdef0123456789abcdef"
OTHER_KEY = b"fedcba9876543210fedcba9876543210"


def vectors() -> Dict[str, Any]:
    with open(os.path.join(VECTORS, "malformed.json"), encoding="utf-8") as handle:
        data: Dict[str, Any] = json.load(handle)
    if not data["cases"]:
        raise AssertionError("no malformed checkpoint cases")
    return data


def case_bytes(case: Dict[str, Any]) -> bytes:
    return bytes.fromhex(case["hex"]) if "hex" in case else case["text"].encode("utf-8")


def sample(size: int = 5) -> Checkpoint:
    first = hashlib.sha256(b"record 0").hexdigest()
    head = first if size == 1 else hashlib.sha256(b"record %d" % (size - 1)).hexdigest()
    return Checkpoint(first, size, hashlib.sha256(b"root").hexdigest(), head)


class TestFormat(TempDir):
    def test_the_valid_vector_parses_and_round_trips(self) -> None:
        valid = vectors()["valid"].encode("utf-8")
        ckpt = parse_checkpoint(valid)
        self.assertEqual(ckpt.size, 5)
        self.assertEqual(ckpt.first, hashlib.sha256(b"agentloop checkpoint vector: record 0").hexdigest())
        self.assertEqual(ckpt.head, hashlib.sha256(b"agentloop checkpoint vector: record 4").hexdigest())
        self.assertEqual(ckpt.root, hashlib.sha256(b"agentloop checkpoint vector: root").hexdigest())
        self.assertEqual(ckpt.signatures, (Signature(ckpt.origin, b"\x01\x02\x03\x04", b"s" * 32),))
        self.assertEqual(ckpt.to_bytes(), valid)

    def test_each_malformed_vector_names_its_line_and_rule(self) -> None:
        cases: List[Dict[str, Any]] = vectors()["cases"]
        self.assertEqual(len(cases), 45)
        for case in cases:
            with self.subTest(case["name"]):
                with self.assertRaises(MalformedCheckpointError) as caught:
                    parse_checkpoint(case_bytes(case))
                self.assertEqual(caught.exception.line, case["line"])
                self.assertIn(case["reason"], caught.exception.reason)
                self.assertIsInstance(caught.exception, ValueError)

    def test_the_two_size_limits(self) -> None:
        valid = vectors()["valid"]
        with self.assertRaisesRegex(MalformedCheckpointError, "longer than 65536 bytes"):
            parse_checkpoint(b"x" * (MAX_CHECKPOINT_BYTES + 1))
        line = valid.splitlines()[-1]
        many = valid + "".join(line + "\n" for _ in range(MAX_SIGNATURES - 1))
        self.assertEqual(len(parse_checkpoint(many.encode("utf-8")).signatures), MAX_SIGNATURES)
        with self.assertRaises(MalformedCheckpointError) as caught:
            parse_checkpoint((many + line + "\n").encode("utf-8"))
        self.assertEqual(
            (caught.exception.line, caught.exception.reason), (6 + MAX_SIGNATURES, "more than 16 signatures")
        )

    def test_the_exact_bytes_of_an_unsigned_checkpoint(self) -> None:
        ckpt = sample()
        root_b64 = base64.b64encode(hashlib.sha256(b"root").digest()).decode()
        expected = "agentloop/1/%s\n5\n%s\nhead %s\n\n" % (ckpt.first, root_b64, ckpt.head)
        self.assertEqual(ckpt.to_bytes(), expected.encode("ascii"))
        self.assertEqual(parse_checkpoint(ckpt.to_bytes()), ckpt)

    def test_read_checkpoint_reads_a_file_and_lets_oserror_through(self) -> None:
        path = self.write_bytes(sample().to_bytes(), "c.checkpoint")
        self.assertEqual(read_checkpoint(path), sample())
        with self.assertRaises(FileNotFoundError):
            read_checkpoint(self.path("missing.checkpoint"))


class TestSignatures(TempDir):
    def test_key_id_known_answer(self) -> None:
        # Recompute without Python (openssl, xxd, coreutils):
        #   fp=$(printf 'agentloop checkpoint key id' | openssl dgst -sha256 -mac HMAC \
        #        -macopt key:0123456789abcdef0123456789abcdef -binary | xxd -p -c 64)
        #   { printf 'agentloop/1/%064d\n' 0; printf '\xffagentloop-hmac-sha256'; echo -n $fp | xxd -r -p; } \
        #     | sha256sum | cut -c1-8
        name = "agentloop/1/" + "0" * 64
        fingerprint = hmac.new(KEY, b"agentloop checkpoint key id", hashlib.sha256).digest()
        recipe = hashlib.sha256(name.encode() + b"\n\xffagentloop-hmac-sha256" + fingerprint).digest()[:4]
        self.assertEqual(key_id(name, KEY), recipe)
        self.assertEqual(key_id(name, KEY).hex(), "f00e43a9")
        self.assertNotEqual(key_id(name, OTHER_KEY), key_id(name, KEY))
        self.assertNotEqual(key_id("agentloop/1/" + "1" * 64, KEY), key_id(name, KEY))

    def test_a_signature_is_hmac_sha256_of_the_note_text(self) -> None:
        signed = sign(sample(), KEY)
        (sig,) = signed.signatures
        self.assertEqual(sig.name, signed.origin)
        self.assertEqual(sig.key_id, key_id(signed.origin, KEY))
        self.assertEqual(sig.signature, hmac.new(KEY, sample().text(), hashlib.sha256).digest())
        verify_signature(parse_checkpoint(signed.to_bytes()), KEY)
        self.assertEqual(signed.unsigned(), sample())

    def test_signing_again_replaces_and_a_second_key_adds(self) -> None:
        twice = sign(sign(sample(), KEY), KEY)
        self.assertEqual(len(twice.signatures), 1)
        both = sign(twice, OTHER_KEY)
        self.assertEqual(len(both.signatures), 2)
        verify_signature(both, KEY)
        verify_signature(both, OTHER_KEY)

    def test_every_way_a_signature_is_bad(self) -> None:
        signed = sign(sample(), KEY)
        with self.assertRaisesRegex(BadSignatureError, "^bad signature: the checkpoint is not signed$"):
            verify_signature(sample(), KEY)
        with self.assertRaisesRegex(BadSignatureError, "no signature by this key"):
            verify_signature(signed, OTHER_KEY)
        altered = Checkpoint(signed.first, 6, signed.root, signed.head, signed.signatures)
        with self.assertRaisesRegex(BadSignatureError, "does not match the checkpoint's text"):
            verify_signature(altered, KEY)
        (good,) = signed.signatures
        forged = Signature(good.name, good.key_id, bytes(32))
        with self.assertRaisesRegex(
            BadSignatureError, "does not match"
        ):  # a known key's bad signature rejects the note
            verify_signature(Checkpoint(signed.first, 5, signed.root, signed.head, (good, forged)), KEY)
        foreign = Signature("witness.example/w1", b"abcd", b"x" * 64)
        verify_signature(
            Checkpoint(signed.first, 5, signed.root, signed.head, (foreign, good)), KEY
        )  # unknown keys are ignored
        with self.assertRaisesRegex(BadSignatureError, "witness.example/w1/61626364"):
            verify_signature(Checkpoint(signed.first, 5, signed.root, signed.head, (foreign,)), KEY)

    def test_a_short_or_wrong_typed_key_is_refused(self) -> None:
        with self.assertRaisesRegex(SigningKeyError, "^key: is 15 bytes; at least 16 are needed"):
            sign(sample(), b"x" * 15)
        with self.assertRaisesRegex(SigningKeyError, "must be bytes, got str"):
            verify_signature(sample(), "x" * 32)  # type: ignore[arg-type]


class TestKeys(TempDir):
    def test_a_key_file_loses_one_trailing_newline(self) -> None:
        for data, key in ((KEY, KEY), (KEY + b"\n", KEY), (KEY + b"\r\n", KEY), (KEY + b"\n\n", KEY + b"\n")):
            with self.subTest(data=data):
                self.assertEqual(load_key(self.write_bytes(data, "k")), key)

    def test_an_environment_variable(self) -> None:
        name = "AGENTLOOP_TEST_KEY_%d" % os.getpid()
        os.environ[name] = KEY.decode()
        self.addCleanup(os.environ.pop, name, None)
        self.assertEqual(load_key(env=name), KEY)
        with self.assertRaisesRegex(SigningKeyError, "^key environment variable NOPE_%s: is not set$" % name):
            load_key(env="NOPE_" + name)

    def test_bad_sources(self) -> None:
        with self.assertRaisesRegex(SigningKeyError, "exactly one of"):
            load_key()
        with self.assertRaisesRegex(SigningKeyError, "exactly one of"):
            load_key(self.path("k"), "X")
        with self.assertRaisesRegex(SigningKeyError, "^key file .*missing: cannot be read"):
            load_key(self.path("missing"))
        with self.assertRaisesRegex(SigningKeyError, "is 5 bytes"):
            load_key(self.write_bytes(b"short\n", "k"))
