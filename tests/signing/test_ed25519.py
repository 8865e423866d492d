"""RFC 8032 Ed25519: Wycheproof's verdicts, RFC 8032's vectors, strictness, the signer backends.

Vectors live in ``tests/vectors/ed25519/`` (see PROVENANCE.md).  A naive
double-and-add from RFC 8032 section 6 is kept here as an oracle for the
windowed scalar multiplications.
"""

from __future__ import annotations

import hashlib
import os
import unittest
from typing import Tuple

from agentloop.errors import SigningKeyError
from agentloop.signing import backend, ed25519
from agentloop.signing.ed25519 import _BX, _BY, _L, _P, _Point, _add, _base_point, _encode, _mul, _mul_base, _recover_x

from tests.support.signing_support import load_vectors, require_cryptography, without_cryptography


def _naive_mul(scalar: int, point: _Point) -> _Point:
    """RFC 8032 section 6 ``point_mul``: double-and-add, the oracle."""
    acc: _Point = (0, 1, 1, 0)
    while scalar > 0:
        if scalar & 1:
            acc = _add(acc, point)
        point = _add(point, point)
        scalar >>= 1
    return acc


def _rfc_vectors() -> Tuple[Tuple[bytes, bytes, bytes, bytes, str], ...]:
    data = load_vectors("rfc8032.json")
    return tuple(
        (
            bytes.fromhex(v["secret_key"]),
            bytes.fromhex(v["public_key"]),
            bytes.fromhex(v["message"]),
            bytes.fromhex(v["signature"]),
            v["name"],
        )
        for v in data["vectors"]
    )


class TestWycheproof(unittest.TestCase):
    def test_every_case_gets_its_expected_verdict(self) -> None:
        data = load_vectors("wycheproof-ed25519_test.json", "testGroups")
        count = 0
        for group in data["testGroups"]:
            public = bytes.fromhex(group["publicKey"]["pk"])
            for case in group["tests"]:
                count += 1
                with self.subTest(tcId=case["tcId"], comment=case["comment"], flags=case["flags"]):
                    self.assertIn(case["result"], ("valid", "invalid"))
                    got = ed25519.verify(public, bytes.fromhex(case["msg"]), bytes.fromhex(case["sig"]))
                    self.assertEqual(got, case["result"] == "valid")
        self.assertEqual(count, data["numberOfTests"])
        self.assertEqual(count, 151)


class TestRFC8032(unittest.TestCase):
    def test_section_7_1_vectors_sign_and_verify(self) -> None:
        for seed, public, message, signature, name in _rfc_vectors():
            with self.subTest(name):
                self.assertEqual(ed25519.unsafe_public_key(seed), public)
                self.assertEqual(ed25519.unsafe_sign(seed, message), signature)
                self.assertTrue(ed25519.verify(public, message, signature))
                self.assertFalse(ed25519.verify(public, message + b"x", signature))

    def test_constants(self) -> None:
        # RFC 8032 section 5.1: B = (x, 4/5) with x even; L is prime order of B.
        self.assertEqual(_recover_x(_BY, 0), _BX)
        self.assertEqual(_BY * 5 % _P, 4)
        self.assertEqual(_encode(_naive_mul(_L, _base_point())), (1).to_bytes(32, "little"))

    def test_windowed_multiplication_matches_the_naive_oracle(self) -> None:
        base = _base_point()
        other = _naive_mul(0xDEADBEEF, base)
        for label in (b"0", b"1", b"2", b"3"):
            scalar = int.from_bytes(hashlib.sha512(label).digest(), "little") % _L
            with self.subTest(label=label):
                self.assertEqual(_encode(_mul_base(scalar)), _encode(_naive_mul(scalar, base)))
                self.assertEqual(_encode(_mul(scalar, other)), _encode(_naive_mul(scalar, other)))
        for scalar in (0, 1, 15, 16, 17, _L - 1):
            self.assertEqual(_encode(_mul_base(scalar)), _encode(_naive_mul(scalar, base)))


class TestStrictness(unittest.TestCase):
    def setUp(self) -> None:
        self.seed, self.public, self.message, self.signature, _ = _rfc_vectors()[0]

    def test_s_at_or_above_the_order_is_refused(self) -> None:
        # RFC 8032 section 5.1.7 step 1 / section 8.4: S + L is the same point, refused.
        s = int.from_bytes(self.signature[32:], "little")
        malleable = self.signature[:32] + (s + _L).to_bytes(32, "little")
        self.assertFalse(ed25519.verify(self.public, self.message, malleable))
        self.assertFalse(ed25519.verify(self.public, self.message, self.signature[:32] + _L.to_bytes(32, "little")))

    def test_wrong_lengths_and_types_are_refused(self) -> None:
        for sig in (self.signature[:63], self.signature + b"\x00", b""):
            self.assertFalse(ed25519.verify(self.public, self.message, sig))
        for key in (self.public[:31], self.public + b"\x00", b""):
            self.assertFalse(ed25519.verify(key, self.message, self.signature))
        self.assertFalse(ed25519.verify(self.public.hex(), self.message, self.signature))  # type: ignore[arg-type]
        self.assertFalse(ed25519.verify(self.public, "text", self.signature))  # type: ignore[arg-type]
        self.assertTrue(ed25519.verify(bytearray(self.public), bytearray(self.message), bytearray(self.signature)))  # type: ignore[arg-type]

    def test_non_canonical_public_key_is_refused(self) -> None:
        # y + p < 2^255 only for y < 19: find such a y that is a valid point of large order.
        found = 0
        for y in range(2, 19):
            canonical = y.to_bytes(32, "little")
            if not ed25519.is_valid_public_key(canonical):
                continue
            found += 1
            self.assertFalse(ed25519.is_valid_public_key((y + _P).to_bytes(32, "little")), y)
        self.assertGreater(found, 0)

    def test_x_zero_with_sign_bit_is_refused(self) -> None:
        # RFC 8032 section 5.1.3 step 4: x = 0 and x_0 = 1 fails decoding (y = 1 and y = p - 1).
        self.assertFalse(ed25519.is_valid_public_key((1 | (1 << 255)).to_bytes(32, "little")))
        self.assertFalse(ed25519.is_valid_public_key(((_P - 1) | (1 << 255)).to_bytes(32, "little")))

    def test_point_not_on_the_curve_is_refused(self) -> None:
        bad = [y for y in range(2, 40) if _recover_x(y, 0) is None]
        self.assertTrue(bad)
        for y in bad:
            self.assertFalse(ed25519.is_valid_public_key(y.to_bytes(32, "little")))

    def test_small_order_key_cannot_forge(self) -> None:
        # With A = the identity, R = B and S = 1 satisfy [S]B = R + [k]A for every message.
        identity = (1).to_bytes(32, "little")
        forged = _encode(_base_point()) + (1).to_bytes(32, "little")
        self.assertFalse(ed25519.is_valid_public_key(identity))
        self.assertFalse(ed25519.verify(identity, b"any message", forged))
        # the order-2 point (0, -1) and an order-4 point (y = 0)
        self.assertFalse(ed25519.is_valid_public_key((_P - 1).to_bytes(32, "little")))
        self.assertFalse(ed25519.is_valid_public_key((0).to_bytes(32, "little")))

    def test_unsafe_signer_rejects_bad_seeds(self) -> None:
        with self.assertRaises(ValueError):
            ed25519.unsafe_sign(b"short", b"m")


class TestBackend(unittest.TestCase):
    def test_without_cryptography_signing_needs_the_opt_in(self) -> None:
        seed, public, message, signature, _ = _rfc_vectors()[1]
        with without_cryptography():
            self.assertFalse(backend.cryptography_available())
            with self.assertRaises(SigningKeyError) as caught:
                backend.sign(seed, message)
            self.assertIn("allow_slow_unsafe_signer=True", str(caught.exception))
            self.assertIn("not side-channel safe", str(caught.exception))
            with self.assertRaises(SigningKeyError):
                backend.public_key(seed)
            self.assertEqual(backend.sign(seed, message, allow_slow_unsafe_signer=True), signature)
            self.assertEqual(backend.public_key(seed, allow_slow_unsafe_signer=True), public)

    def test_bad_seed_is_a_key_error(self) -> None:
        with self.assertRaises(SigningKeyError):
            backend.sign(b"\x00" * 31, b"m", allow_slow_unsafe_signer=True)

    def test_new_seed_is_32_random_bytes(self) -> None:
        first, second = backend.new_seed(), backend.new_seed()
        self.assertEqual((len(first), len(second)), (32, 32))
        self.assertNotEqual(first, second)

    def test_pure_signer_equals_cryptography(self) -> None:
        require_cryptography(self)
        seeds = (
            [v[0] for v in _rfc_vectors()]
            + [hashlib.sha256(b"seed %d" % i).digest() for i in range(5)]
            + [os.urandom(32)]
        )
        for seed in seeds:
            for message in (b"", b"x", os.urandom(1000)):
                with self.subTest(seed=seed.hex(), size=len(message)):
                    fast = backend.sign(seed, message)
                    self.assertEqual(fast, ed25519.unsafe_sign(seed, message))
                    self.assertEqual(backend.public_key(seed), ed25519.unsafe_public_key(seed))
                    self.assertTrue(ed25519.verify(backend.public_key(seed), message, fast))
