"""Deterministic CBOR (RFC 8949 section 4.2.1): Appendix A, the rules one by one, refusals that name the byte."""

from __future__ import annotations

import json
import math
import os
import random
import struct
import unittest
from typing import Any, List

from agentloop.errors import MalformedCBORError, WrongTypeError
from agentloop.provenance.cbor import MAX_DEPTH, UNDEFINED, Simple, Tag, decode, encode

VECTORS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "cbor", "appendix_a.json"
)


def diagnostic(value: Any) -> str:
    """RFC 8949 section 8 diagnostic notation of a decoded value: the test's own oracle for Appendix A."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, bytes):
        return "h'%s'" % (value.hex(),)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[%s]" % (", ".join(diagnostic(v) for v in value),)
    if isinstance(value, dict):
        return "{%s}" % (", ".join("%s: %s" % (diagnostic(k), diagnostic(v)) for k, v in value.items()),)
    if isinstance(value, Tag):
        return "%d(%s)" % (value.number, diagnostic(value.value))
    if isinstance(value, Simple):
        return "undefined" if value == UNDEFINED else "simple(%d)" % (value.value,)
    raise AssertionError(type(value))


def same(a: Any, b: Any) -> bool:
    """Equal, with floats compared by their bits (so -0.0 is not 0.0) and bool never an int."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, float) and isinstance(b, float) and struct.pack(">d", a) == struct.pack(">d", b)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, Tag) and isinstance(b, Tag):
        return a.number == b.number and same(a.value, b.value)
    return type(a) is type(b) and a == b


class TestAppendixA(unittest.TestCase):
    def setUp(self) -> None:
        with open(VECTORS, encoding="utf-8") as handle:
            self.vectors: List[Any] = json.load(handle)
        self.assertEqual(len(self.vectors), 82, "the Appendix A vectors are missing")

    def test_every_deterministic_example_decodes_to_its_value_and_encodes_back(self) -> None:
        checked = 0
        for vector in self.vectors:
            raw = bytes.fromhex(vector["hex"])
            if not vector["roundtrip"] or raw == b"\xf8\x18":
                continue
            with self.subTest(vector["hex"]):
                value = decode(raw)
                if "decoded" in vector:
                    self.assertTrue(same(value, vector["decoded"]), (value, vector["decoded"]))
                else:
                    self.assertEqual(diagnostic(value), vector["diagnostic"])
                self.assertEqual(encode(value).hex(), vector["hex"])
                checked += 1
        self.assertEqual(checked, 64)

    def test_every_other_example_is_refused_naming_the_rule(self) -> None:
        reasons = {}
        for vector in self.vectors:
            raw = bytes.fromhex(vector["hex"])
            if vector["roundtrip"] and raw != b"\xf8\x18":
                continue
            with self.subTest(vector["hex"]):
                with self.assertRaises(MalformedCBORError) as caught:
                    decode(raw)
                reasons[vector["hex"]] = caught.exception.reason
        self.assertEqual(len(reasons), 18)
        self.assertEqual(sum("indefinite-length" in r for r in reasons.values()), 11)
        self.assertEqual(sum("not in its shortest form" in r for r in reasons.values()), 6)
        self.assertIn("not well-formed (RFC 8949 section 3.3)", reasons["f818"])


class TestEncodingRules(unittest.TestCase):
    def test_integer_arguments_take_the_shortest_form_at_every_boundary(self) -> None:
        # RFC 8949 section 3: 0-23 in the initial byte, then 1, 2, 4, 8 bytes.
        cases = {
            0: "00",
            23: "17",
            24: "1818",
            255: "18ff",
            256: "190100",
            65535: "19ffff",
            65536: "1a00010000",
            2**32 - 1: "1affffffff",
            2**32: "1b0000000100000000",
            -1: "20",
            -24: "37",
            -25: "3818",
            -256: "38ff",
            -257: "390100",
            -(2**64): "3bffffffffffffffff",
            2**64: "c249010000000000000000",
        }
        for value, expected in cases.items():
            with self.subTest(value):
                self.assertEqual(encode(value).hex(), expected)
                self.assertEqual(decode(bytes.fromhex(expected)), value)

    def test_map_keys_are_sorted_by_their_encoded_bytes(self) -> None:
        # RFC 8949 section 4.2.1: 10 (0x0a) < 100 (0x1864) < -1 (0x20) < "z" (0x617a) < "aa" (0x626161).
        value = {"aa": 1, "z": 2, -1: 3, 100: 4, 10: 5}
        self.assertEqual(encode(value).hex(), "a50a051864042003617a0262616101")
        self.assertEqual(list(decode(encode(value))), [10, 100, -1, "z", "aa"])

    def test_floats_take_the_shortest_exact_precision(self) -> None:
        cases = {
            0.5: "f93800",
            65504.0: "f97bff",
            65505.0: "fa477fe100",
            1e-7: "fb3e7ad7f29abcaf48",
            float("nan"): "f97e00",
            -0.0: "f98000",
            3.4028234663852886e38: "fa7f7fffff",
        }
        for value, expected in cases.items():
            with self.subTest(value):
                self.assertEqual(encode(value).hex(), expected)

    def test_lengths_and_nesting(self) -> None:
        self.assertEqual(encode(b"x" * 24)[:2].hex(), "5818")
        self.assertEqual(encode("é").hex(), "62c3a9")
        self.assertEqual(encode((1, [2])).hex(), "82018102")
        self.assertEqual(encode(Tag(18, [])).hex(), "d280")
        self.assertEqual(encode(Simple(255)).hex(), "f8ff")

    def test_values_it_cannot_encode_are_refused_naming_where(self) -> None:
        for value, where in (
            ({"a": {1.5j: 1}}, "$['a']{key}"),
            ([set()], "$[0]"),
            ("\ud800", "$"),
            (Simple(24), "$"),
            (Simple(21), "$"),
            (Tag(2, b"\x01"), "$"),
            (Tag(-1, 0), "$"),
        ):
            with self.subTest(value=value):
                with self.assertRaises(WrongTypeError) as caught:
                    encode(value)
                self.assertIn(where, str(caught.exception))
        deep: Any = 0
        for _ in range(MAX_DEPTH + 1):
            deep = [deep]
        with self.assertRaises(WrongTypeError):
            encode(deep)

    def test_round_trips_of_random_values(self) -> None:
        rng = random.Random(8949)

        def make(depth: int) -> Any:
            kind = rng.randrange(8 if depth < 4 else 5)
            if kind == 0:
                return rng.choice([0, 1, 23, 24, 255, 256, 2**32, 2**64 - 1, 2**64, -(2**64) - 1]) * rng.choice([1, -1])
            if kind == 1:
                return rng.choice([0.0, -0.0, 1.5, 1e300, -4.1, float("inf"), 5.960464477539063e-08])
            if kind == 2:
                return bytes(rng.randrange(256) for _ in range(rng.randrange(30)))
            if kind == 3:
                return "".join(chr(rng.choice([0x41, 0xE9, 0x6C34, 0x10151])) for _ in range(rng.randrange(30)))
            if kind == 4:
                return rng.choice([True, False, None, UNDEFINED])
            if kind == 5:
                return [make(depth + 1) for _ in range(rng.randrange(5))]
            if kind == 6:
                return {rng.randrange(-300, 300): make(depth + 1) for _ in range(rng.randrange(5))}
            return Tag(rng.randrange(4, 70000), make(depth + 1))

        for _ in range(300):
            value = make(0)
            data = encode(value)
            again = decode(data)
            self.assertEqual(encode(again), data)
            self.assertTrue(same(value, again), value)


class TestDecodingRefusals(unittest.TestCase):
    def refused(self, hex_bytes: str, offset: int, words: str) -> None:
        with self.assertRaises(MalformedCBORError) as caught:
            decode(bytes.fromhex(hex_bytes))
        self.assertEqual(caught.exception.offset, offset, caught.exception)
        self.assertIn(words, caught.exception.reason)
        self.assertTrue(str(caught.exception).startswith("CBOR byte %d: " % (offset,)))

    def test_each_rule(self) -> None:
        self.refused("1817", 0, "not in its shortest form")  # 23 in two bytes
        self.refused("190017", 0, "not in its shortest form")
        self.refused("1a0000ffff", 0, "not in its shortest form")
        self.refused("1b00000000ffffffff", 0, "not in its shortest form")
        self.refused("8218170a", 1, "not in its shortest form")  # inside an array
        self.refused("fa3fc00000", 0, "float 1.5 is not in its shortest form")
        self.refused("f97e01", 0, "float nan is not in its shortest form")  # a NaN with a payload
        self.refused("a202010101", 3, "keys out of order")
        self.refused("a201010101", 3, "repeats a key")
        self.refused("a201f5f5f4", 3, "two map keys are equal as values")  # 1 and true
        self.refused("a18001", 1, "array or a map")
        self.refused("a1c18000", 1, "array or a map (or a tag of one)")  # {1([]): 0}: no Python key, no TypeError
        self.refused("a1c1c1a000", 1, "array or a map (or a tag of one)")
        self.refused("c2480100000000000000", 0, "fits 64 bits")  # 2**56 as a bignum
        self.refused("c24900ffffffffffffffff", 0, "leading zero")
        self.refused("c201", 0, "holds a byte string")
        self.refused("62c328", 0, "not UTF-8")
        self.refused("f81f", 0, "not well-formed")
        self.refused("fc", 0, "reserved additional information 28")
        self.refused("ff", 0, "indefinite-length item or a break")
        self.refused("0000", 1, "1 bytes after the data item")
        self.refused("", 0, "the input is empty")
        self.refused("4401", 1, "4 bytes are needed, 1 are left")
        self.refused("9bffffffffffffffff", 0, "an array of")
        self.refused("bb7fffffffffffffff", 0, "a map of")
        self.refused("81" * (MAX_DEPTH + 2) + "00", MAX_DEPTH + 1, "nested deeper than")

    def test_not_bytes(self) -> None:
        with self.assertRaises(WrongTypeError):
            decode("a0")  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
