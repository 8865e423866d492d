"""RFC 8785 encoding against the published vectors (tests/vectors/jcs)."""

from __future__ import annotations

import hashlib
import json
import math
import struct
import unittest
from pathlib import Path
from typing import List

from agentloop.canonical import (
    MAX_DEPTH,
    MAX_SAFE_INTEGER,
    canonical_bytes,
    canonical_text,
    check_string,
    format_number,
    json_path,
)
from agentloop.errors import UnrecordableError

VECTORS = Path(__file__).resolve().parent / "vectors" / "jcs"


def es6_lines(count: int) -> List[bytes]:
    """The first ``count`` lines of the ES6 number test sequence.

    Re-implemented from the description in tests/vectors/jcs/README.md: the
    168 static values, then 0x0010000000000000 + i for i < 2000, then a SHA-256
    chain from 32 zero bytes, each digest cut into four little-endian uint64
    bit patterns, skipping zeros, infinities and NaNs.
    """
    static = [int(line, 16) for line in (VECTORS / "es6-number-static.txt").read_text().split()]
    out: List[bytes] = []

    def emit(bits: int) -> None:
        value = struct.unpack("<d", struct.pack("<Q", bits))[0]
        out.append(("%x,%s\n" % (bits, format_number(value))).encode("ascii"))

    for bits in static + [0x0010000000000000 + i for i in range(2000)]:
        if len(out) == count:
            return out
        emit(bits)
    block = bytes(32)
    while len(out) < count:
        block = hashlib.sha256(block).digest()
        for j in range(4):
            bits = struct.unpack("<Q", block[8 * j : 8 * j + 8])[0]
            if bits & 0x7FFFFFFFFFFFFFFF == 0 or (bits >> 52) & 0x7FF == 0x7FF:
                continue
            emit(bits)
            if len(out) == count:
                break
    return out


class TestVectors(unittest.TestCase):
    def test_the_six_cyberphone_inputs_canonicalise_to_their_outputs(self) -> None:
        inputs = sorted((VECTORS / "input").glob("*.json"))
        self.assertEqual(len(inputs), 6, "vector files missing")
        for source in inputs:
            with self.subTest(source.name):
                value = json.loads(source.read_text(encoding="utf-8"))
                expected = (VECTORS / "output" / source.name).read_bytes()
                self.assertEqual(canonical_bytes(value), expected)

    def test_rfc8785_appendix_b_numbers(self) -> None:
        rows = [line.split("\t") for line in (VECTORS / "appendix-b.tsv").read_text().splitlines() if line]
        self.assertEqual(len(rows), 26)
        for bits, expected in rows:
            with self.subTest(bits):
                value = struct.unpack(">d", bytes.fromhex(bits))[0]
                if expected == "ERROR":
                    with self.assertRaises(UnrecordableError):
                        canonical_text(value)
                    continue
                self.assertEqual(format_number(value), expected)
                if 2.0**53 <= abs(value) < 1e21:
                    # An integer token beyond 2**53 - 1: RFC 8785's form, but not I-JSON (RFC 7493 section 2.2),
                    # so no record holds it; the verifier reads the token as the integer it is and refuses it too.
                    with self.assertRaises(UnrecordableError):
                        canonical_text(value)
                else:
                    self.assertEqual(canonical_text(value), expected)

    def test_es6_number_sequence_checksums_up_to_100000_lines(self) -> None:
        # Recompute a row: hashlib.sha256(b"".join(es6_lines(N))).hexdigest()
        rows = {}
        for line in (VECTORS / "es6-number-sha256.tsv").read_text().splitlines():
            if line and not line.startswith("#") and not line.startswith("sha256"):
                digest, lines, size = line.split("\t")
                rows[int(lines)] = (digest, int(size))
        lines = es6_lines(100_000)
        checked = 0
        for count in (1000, 10_000, 100_000):
            data = b"".join(lines[:count])
            self.assertEqual((hashlib.sha256(data).hexdigest(), len(data)), rows[count], count)
            checked += 1
        self.assertEqual(checked, 3)


class TestNumbers(unittest.TestCase):
    def test_ecmascript_layouts(self) -> None:
        cases = [  # pairs, not a dict: -0.0 == 0.0, so a dict would keep one of the two
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (-1.5, "-1.5"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456789012345680000.0, "123456789012345680000"),
            (0.000001, "0.000001"),
            (0.0000001, "1e-7"),
            (1.2345e-7, "1.2345e-7"),
            (5e-324, "5e-324"),
            (0.1 + 0.2, "0.30000000000000004"),
            (100.0, "100"),
            (1.5e300, "1.5e+300"),
        ]
        for value, expected in cases:
            with self.subTest(value):
                self.assertEqual(format_number(value), expected)

    def test_integers_are_written_as_integers_within_the_safe_range(self) -> None:
        self.assertEqual(
            canonical_text([MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 0]), "[9007199254740991,-9007199254740991,0]"
        )

    def test_integers_beyond_two_to_the_53_are_unrecordable(self) -> None:
        with self.assertRaises(UnrecordableError) as caught:
            canonical_text({"a": [1, 2**53]})
        self.assertEqual(
            str(caught.exception), "$.a[1]: integer 9007199254740992 is outside the I-JSON range +/-(2**53-1)"
        )

    def test_floats_written_as_integers_beyond_two_to_the_53_are_unrecordable(self) -> None:
        # RFC 8785 writes 1e17 as 100000000000000000, a token every reader takes for the integer 10**17:
        # the writer must refuse it as it refuses that integer, or the verifier calls its record unserialisable.
        for value in (2.0**53, -(2.0**53), 1e17, 1.5e20, 999999999999999900000.0):
            with self.subTest(value=value):
                with self.assertRaises(UnrecordableError) as caught:
                    canonical_text({"a": [1, value]})
                self.assertEqual(
                    str(caught.exception),
                    "$.a[1]: number %r is written as the integer %s, outside the I-JSON range +/-(2**53-1)"
                    % (value, format_number(value)),
                )
                with self.assertRaises(UnrecordableError):
                    canonical_bytes(json.loads(format_number(value)))
        self.assertEqual(canonical_text([9007199254740991.0, 1e21, -1e21]), "[9007199254740991,1e+21,-1e+21]")

    def test_nan_and_infinities_are_unrecordable(self) -> None:
        for value in (math.nan, math.inf, -math.inf):
            with self.subTest(value), self.assertRaises(UnrecordableError):
                canonical_text({"x": value})

    def test_bool_is_not_a_number(self) -> None:
        self.assertEqual(canonical_text([True, False, None, 1]), "[true,false,null,1]")


class TestStringsAndKeys(unittest.TestCase):
    def test_escapes_follow_rfc8785_section_3_2_2_2(self) -> None:
        self.assertEqual(
            canonical_text('"\\\b\t\n\f\r\x00\x1f\x7f é€😀'),
            '"\\"\\\\\\b\\t\\n\\f\\r\\u0000\\u001f\x7f é€😀"',
        )

    def test_keys_sort_by_utf16_code_units_not_code_points(self) -> None:
        # U+1F600 is D83D DE00 in UTF-16, so it sorts before U+FB01 (FB01).
        value = {"\ufb01": 1, "\U0001f600": 2, "a": 3, "\u00e9": 4}
        self.assertEqual(canonical_text(value), '{"a":3,"\u00e9":4,"\U0001f600":2,"\ufb01":1}')

    def test_lone_surrogates_are_unrecordable(self) -> None:
        with self.assertRaises(UnrecordableError) as caught:
            canonical_text({"k": "ab\ud800"})
        self.assertEqual(str(caught.exception), "$.k: string has a lone surrogate U+D800 at index 2")
        with self.assertRaises(UnrecordableError):
            canonical_text({"\udc00": 1})

    def test_a_str_subclass_is_checked_by_its_characters_not_its_own_isascii(self) -> None:
        class Ascii(str):  # says it is ASCII whatever it holds
            def isascii(self) -> bool:
                return True

        for text, message in [
            ("x\ufffe", "$.k: string has the noncharacter U+FFFE at index 1"),
            ("\u00e9\ud800", "$.k: string has a lone surrogate U+D800 at index 1"),
        ]:
            with self.subTest(message), self.assertRaises(UnrecordableError) as caught:
                canonical_text({"k": Ascii(text)})
            self.assertEqual(str(caught.exception), message)
            with self.assertRaises(UnrecordableError):
                check_string(Ascii(text))
        self.assertEqual(canonical_text([Ascii("\u00e9")]), '["\u00e9"]')

    def test_a_str_subclass_key_sorts_and_is_named_by_its_characters(self) -> None:
        class Key(str):  # writes and prints itself otherwise
            def encode(self, *args: object, **kwargs: object) -> bytes:
                return b"\xff"

            def __str__(self) -> str:
                return "other"

        self.assertEqual(canonical_text({"late": 1, Key("k"): 2}), '{"k":2,"late":1}')
        with self.assertRaises(UnrecordableError) as caught:
            canonical_text({Key("k"): float("nan")})
        self.assertEqual(caught.exception.path, "$.k")

    def test_non_string_keys_and_non_json_types_are_unrecordable(self) -> None:
        for value, message in [
            ({1: "a"}, "$: object key 1 is a int, not a string"),
            ({"a": (1, 2)}, "$.a: a tuple is not a JSON value"),
            ({"a": {1, 2}}, "$.a: a set is not a JSON value"),
            ({"a b": b"x"}, '$["a b"]: a bytes is not a JSON value'),
        ]:
            with self.subTest(message), self.assertRaises(UnrecordableError) as caught:
                canonical_text(value)
            self.assertEqual(str(caught.exception), message)


class TestDepth(unittest.TestCase):
    @staticmethod
    def nested(depth: int) -> object:
        value: object = 0
        for _ in range(depth):
            value = [value]
        return value

    def test_max_depth_is_recordable_one_more_is_not(self) -> None:
        self.assertTrue(canonical_text(self.nested(MAX_DEPTH)).startswith("[" * MAX_DEPTH))
        with self.assertRaises(UnrecordableError) as caught:
            canonical_text(self.nested(MAX_DEPTH + 1))
        self.assertIn("nesting deeper than the %d levels a record may hold" % MAX_DEPTH, str(caught.exception))

    def test_hostile_depth_is_refused_without_recursion_error(self) -> None:
        with self.assertRaises(UnrecordableError):
            canonical_text(self.nested(100_000))


class TestJsonPath(unittest.TestCase):
    def test_paths(self) -> None:
        self.assertEqual(json_path("$", "add"), "$.add")
        self.assertEqual(json_path("$.add", 3), "$.add[3]")
        self.assertEqual(json_path("$", "odd key"), '$["odd key"]')
        self.assertEqual(json_path("$", "1a"), '$["1a"]')


if __name__ == "__main__":
    unittest.main()


class TestFastProof(unittest.TestCase):
    """is_canonical_line must never say True unless the exact encoder agrees."""

    def test_the_float_vetter_on_the_es6_sequence(self) -> None:
        # Every ES6-sequence value, as its RFC 8785 token and as repr(): the
        # vetter accepts exactly the RFC 8785 spelling and pairs it with what
        # the C encoder writes.
        from agentloop.canonical import FloatVetter

        vetter = FloatVetter()
        checked = 0
        for line in es6_lines(100_000):
            token = line.decode().rstrip("\n").split(",")[1]
            value = float(token)
            if value == int(value) and abs(value) < 1e21:
                continue  # written as an integer token: not a float in JSON
            for spelling in {token, repr(value)}:
                vetter.reset()
                vetter.on_float(spelling)
                checked += 1
                if spelling == token:
                    self.assertIsNotNone(vetter.pairs, token)
                    self.assertEqual(vetter.pairs, [] if repr(value) == token else [(repr(value), token)])
                else:
                    self.assertIsNone(vetter.pairs, spelling)
        self.assertGreater(checked, 90_000)

    def test_agrees_with_the_exact_encoder_on_random_values(self) -> None:
        import random

        from agentloop.canonical import FloatVetter, is_canonical_line

        rng = random.Random(8785)
        leaves = [
            0,
            -1,
            7,
            2**53 - 1,
            2**53,
            10**16,
            0.5,
            -2.25,
            1e-7,
            1.5e-5,
            3e16,
            1e21,
            5e-324,
            123.0,
            "a",
            "é",
            "\ue000",
            "\U0001f600",
            "\x1f",
            "\u2028",
            'a"b\\c',
            True,
            None,
        ]

        def value(depth: int = 0) -> object:
            roll = rng.random()
            if depth > 4 or roll < 0.4:
                return rng.choice(leaves)
            if roll < 0.7:
                return [value(depth + 1) for _ in range(rng.randint(0, 4))]
            return {
                rng.choice(["a", "b", "é", "\ue000", "\U0001f600", "1", "A"]): value(depth + 1)
                for _ in range(rng.randint(0, 4))
            }

        proven = 0
        for _ in range(3000):
            item = value()
            try:
                exact = canonical_text(item)
            except UnrecordableError:
                exact = None
            for text in {json.dumps(item, ensure_ascii=False, separators=(",", ":"), sort_keys=True), exact} - {None}:
                assert text is not None
                vetter = FloatVetter()
                parsed = json.loads(text, parse_float=vetter.on_float, parse_constant=vetter.on_constant)
                if vetter.pairs is not None and is_canonical_line(
                    parsed, text, text.encode("utf-8", "surrogatepass"), vetter.pairs
                ):
                    proven += 1
                    self.assertEqual(text, exact)
        self.assertGreater(proven, 1000)

    def test_json_depth(self) -> None:
        from agentloop.canonical import json_depth

        for text, depth in [("1", 0), ("[]", 1), ("[[],[[]]]", 3), ('[{"a":"[[[["}]', 2), ('["\\"["]', 1)]:
            self.assertEqual(json_depth(text), depth, text)
        self.assertEqual(json_depth("[" * 100_000 + "]" * 100_000), 100_000)

    def test_the_cheap_depth_of_valid_json_is_json_depth(self) -> None:
        import random

        from agentloop.canonical import _deeper_than, json_depth

        rng = random.Random(64)
        pieces = ["[", "]", "{", "}", '"', "\\", "\\\\", "a", "é"]

        def value(depth: int) -> object:
            if depth > 70 or rng.random() < 0.2:
                return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
            if rng.random() < 0.5:
                return [value(depth + 1) for _ in range(rng.randint(1, 2))]
            return {"".join(rng.choice(pieces) for _ in range(3)): value(depth + 1)}

        for _ in range(300):
            text = json.dumps(value(0), ensure_ascii=False, separators=(",", ":"))
            depth = json_depth(text)
            for limit in (depth - 1, depth, 64):
                self.assertEqual(_deeper_than(text.encode("utf-8"), limit), depth > limit, text)
