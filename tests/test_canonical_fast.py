"""The writer's fast path (canonical._fast, CPython's C JSON encoder) against the exact RFC 8785 encoder.

Differential: for random values -- floats of every magnitude, unicode from
every plane (noncharacters, surrogates, U+E000..U+FFFF keys that sort
differently in UTF-16), integers around 2**53, deep nesting, and types that
are not JSON (tuples, non-string keys, subclasses) -- whenever the fast path
answers, its text must be exactly the exact encoder's, and its parsed value
exactly what the exact text parses to; when it declines, the exact encoder
decides (and names the place of any error).  The fast path must also answer
for most plain values, or it would be no fast path at all.
"""

from __future__ import annotations

import enum
import json
import math
import os
import random
import struct
import sys
import unittest
from collections import OrderedDict
from typing import Any, List, Optional, Tuple

from agentloop import canonical
from agentloop.canonical import MAX_DEPTH, _fast, canonical_text, format_number, is_canonical_line, snapshot
from agentloop.errors import UnrecordableError

SEED = 20260612
CASES = 6000


class Color(enum.IntEnum):
    RED = 1


class Odd(dict):  # type: ignore[type-arg]
    def __getitem__(self, key: str) -> Any:
        return "read differently"


def _exact(value: Any, depth: int = 0) -> Optional[str]:
    out: List[str] = []
    try:
        canonical._encode(value, "$", depth, out)
    except UnrecordableError:
        return None
    return "".join(out)


class _Values:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def char(self) -> str:
        r = self.rng.random()
        if r < 0.5:
            return chr(self.rng.randrange(0x20, 0x7F))
        if r < 0.6:
            return chr(self.rng.randrange(0, 0x20))
        if r < 0.7:
            return chr(
                self.rng.choice(
                    [0xD800, 0xDFFF, 0xFDD0, 0xFDEF, 0xFFFE, 0xFFFF, 0x1FFFE, 0x10FFFF, 0xE000, 0xFFFD, 0x2028, 0x7F]
                )
            )
        if r < 0.85:
            return chr(self.rng.randrange(0x80, 0xD800))
        return chr(self.rng.randrange(0x10000, 0x110000))

    def string(self) -> str:
        return "".join(self.char() for _ in range(self.rng.randrange(0, 6)))

    def number(self) -> Any:
        r = self.rng.random()
        if r < 0.3:
            return self.rng.randrange(-1000, 1000)
        if r < 0.4:
            return self.rng.choice([2**53 - 1, -(2**53 - 1), 2**53, 10**16, 10**400, -(2**63)])
        if r < 0.6:
            return self.rng.choice(
                [
                    0.0,
                    -0.0,
                    1.0,
                    0.5,
                    1e-7,
                    1e-6,
                    1e21,
                    1e22,
                    1e16,
                    123456789012345680.0,
                    5e-324,
                    float("nan"),
                    float("inf"),
                    0.1 + 0.2,
                    1.5e300,
                ]
            )
        if r < 0.8:  # any bit pattern of a double
            return struct.unpack("<d", struct.pack("<Q", self.rng.getrandbits(64)))[0]
        return self.rng.uniform(-1e6, 1e6)

    def scalar(self) -> Any:
        return self.rng.choice([None, True, False, self.number(), self.string(), self.string()])

    def value(self, depth: int = 0) -> Any:
        r = self.rng.random()
        if depth > 4 or r < 0.35:
            return self.scalar()
        if r < 0.65:
            return [self.value(depth + 1) for _ in range(self.rng.randrange(0, 5))]
        if r < 0.95:
            return {self.string(): self.value(depth + 1) for _ in range(self.rng.randrange(0, 5))}
        return self.rng.choice(
            [(1, 2), {1: "int key"}, {None: 1}, Color.RED, Odd(a=1), OrderedDict(b=1, a=2), {"s": {1, 2}}, b"x"]
        )


def _nested(levels: int) -> Any:
    value: Any = 1
    for level in range(levels - 1):
        value = [value] if level % 2 else {"k": value}
    return value


class TestFastPath(unittest.TestCase):
    def check(self, value: Any, depth: int = 0) -> Tuple[bool, bool]:
        """(the fast path answered, the exact encoder accepted)."""
        fast = _fast(value, depth)
        exact = _exact(value, depth)
        if fast is not None:
            self.assertIsNotNone(exact, "fast path accepted what the exact encoder refuses: %r" % (value,))
            self.assertEqual(fast[0], exact, repr(value))
            self.assertEqual(json.dumps(fast[1], sort_keys=True), json.dumps(json.loads(exact or ""), sort_keys=True))
            self.assertEqual(canonical_text(value, "$", depth), exact)
        return fast is not None, exact is not None

    def test_random_values(self) -> None:
        rng = random.Random(SEED)
        values = _Values(rng)
        answered = accepted = 0
        for _ in range(CASES):
            value = values.value()
            if not isinstance(value, (dict, list)):
                value = [value]
            fast, exact = self.check(value)
            answered += fast
            accepted += exact
        # The fast path must carry most recordable values (else it is not one).
        self.assertGreater(answered, accepted * 0.3, (answered, accepted))

    def test_plain_records_take_the_fast_path(self) -> None:
        record = {
            "kind": "tool",
            "payload": {"step": 3, "id": "call_3_0", "name": "add", "ok": True, "value": {"sum": 42.5, "t": "é✓"}},
            "prev": "1acbc9fe52df3169e14e33274d4d910e9141378ee918ab797aff379ba0a844fc",
            "seq": 5,
        }
        self.assertEqual(self.check(record), (True, True))
        record["prev"] = "0" * 64  # digits in a hex string follow a letter or a quote: no integer token
        self.assertEqual(self.check(record), (True, True))
        # 16 digits after ":" might be an integer beyond 2**53-1: declined, needlessly but safely
        record["prev"] = "at:1234567890123456"
        self.assertEqual(self.check(record), (False, True))
        record["prev"] = (
            "v1.0, 2.0]"  # looks like a float in repr layout (1.0 for ECMAScript's 1): declined, needlessly
        )
        self.assertEqual(self.check(record), (False, True))

    def test_each_difference_from_the_c_encoder_is_declined(self) -> None:
        for value in (
            [1.0],
            [-0.0],
            [1e-7],
            [1e20],
            [2e-5],
            [2**53],
            ["\ud800"],
            ["\ufdd0"],
            ["\U0001fffe"],
            [{"\ue000": 1, "\U00010000": 2}],
            [(1,)],
            [{1: 2}],
            [Color.RED],
            [Odd(a=1)],
            [float("nan")],
            ["x"] * 3 + [{"a": set()}],
        ):
            with self.subTest(value=value):
                self.assertIsNone(_fast(value, 0))
                self.check(value)

    def test_nesting_counts_from_the_depth_given(self) -> None:
        for levels in (MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1):
            for depth in (0, 1, 2):
                with self.subTest(levels=levels, depth=depth):
                    self.check(_nested(levels), depth)
        cycle: List[Any] = []
        cycle.append(cycle)
        self.assertIsNone(_fast(cycle, 0))
        with self.assertRaises(UnrecordableError):
            canonical_text(cycle)

    def test_small_flat_objects_are_written_as_the_exact_encoder_writes_them(self) -> None:
        rng = random.Random(SEED + 7)
        values = _Values(rng)
        answered = 0
        for _ in range(CASES):
            keys = [values.string() if rng.random() < 0.3 else rng.choice("abcdefgh") for _ in range(rng.randrange(10))]
            members = [
                rng.choice([None, True, False, values.number(), values.string(), "plain", 7, Color.RED, [1]])
                for _ in keys
            ]
            value: Any = dict(zip(keys, members))
            if rng.random() < 0.05:
                value = rng.choice([Odd(value), OrderedDict(value), list(members)])
            depth = rng.choice([0, 2, 4, MAX_DEPTH - 1, MAX_DEPTH])
            flat = canonical._flat(value, depth)
            exact = _exact(value, depth)
            if flat is None:
                continue
            answered += 1
            self.assertEqual(flat[1], exact, repr(value))
            parsed = json.loads(flat[1])
            self.assertEqual(flat[0], parsed)
            self.assertEqual(list(flat[0]), list(parsed), "the copy's keys in the order json.loads gives them")
            self.assertEqual(snapshot(value, "$", depth), flat)
        self.assertGreater(answered, CASES // 10)
        with self.assertRaises(UnrecordableError) as caught:
            snapshot({"a": 2**53}, "$.args")
        self.assertEqual(caught.exception.path, "$.args.a")  # declined, so the exact encoder names the place

    def test_check_string_refuses_exactly_what_the_full_class_finds(self) -> None:
        # canonical._MAYBE_NOT_I_JSON, three wide ranges, only lets a text skip the exact search
        rng = random.Random(SEED + 8)
        values = _Values(rng)
        edges = [chr(p + d) for p in range(0, 0x110000, 0x10000) for d in (0xFFFD, 0xFFFE, 0xFFFF)]
        edges += ["\ud7ff", "\ud800", "\udfff", "\ue000", "\ufdcf", "\ufdd0", "\ufdef", "\ufdf0", "\U0001f600"]
        for index in range(CASES):
            text = values.string() + (edges[index] if index < len(edges) else rng.choice(edges + [""]))
            match = canonical._NOT_I_JSON.search(text)
            if match is None:
                self.assertEqual(canonical.check_string(text), text)
                continue
            with self.assertRaises(UnrecordableError) as caught:
                canonical.check_string(text, "$.t")
            self.assertIn("U+%04X at index %d" % (ord(match.group()), match.start()), str(caught.exception))

    def test_a_small_flat_object_is_read_once_for_its_text_and_its_copy(self) -> None:
        # a tool's own thread may change the dict it returned while it is snapshotted; here a tracer does,
        # each time _flat writes a member: the text and the copy are still of one reading, and agree
        original: Any = {"a": "x", "b": "y"}

        def tracer(frame: Any, event: str, arg: Any) -> None:
            if event == "call" and frame.f_code is canonical._flat_member.__code__:
                original["b"], original["c"] = [1], 1

        before = sys.gettrace()  # a coverage run's tracer: put back, or the rest of the suite goes unmeasured
        sys.settrace(tracer)
        try:
            copy_, text = snapshot(original)
        finally:
            sys.settrace(before)
        self.assertEqual((copy_, text), ({"a": "x", "b": "y"}, '{"a":"x","b":"y"}'))

    def test_snapshot_gives_the_same_copy_either_way(self) -> None:
        value = {"a": [1, 2.5, "x"], "b": {"c": None}}
        copy_, text = snapshot(value)
        self.assertEqual((copy_, text), (value, _exact(value)))
        self.assertIsNot(copy_, value)
        with self.assertRaises(UnrecordableError) as caught:
            snapshot({"ok": [1, {"bad": float("nan")}]})
        self.assertEqual(caught.exception.path, "$.ok[1].bad")  # paths are still built, on the way to the error


def _step(value: float, by: int) -> float:
    """The double ``by`` units in the last place away from ``value`` (math.nextafter is 3.9+)."""
    return struct.unpack("<d", struct.pack("<q", struct.unpack("<q", struct.pack("<d", value))[0] + by))[0]


def _floats(rng: random.Random) -> List[float]:
    """Doubles from every binary exponent, the decimal thresholds of both layouts, and the edges."""
    values = [
        0.0,
        -0.0,
        5e-324,
        -5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
        0.1 + 0.2,
        0.642857142857143,
        9 / 14,
        1 / 3,
        2 / 3,
        0.5,
        1.5,
        100.25,
        2.0**53,
        2.0**53 + 2,
        123456789012345680.0,
    ]
    for power in range(-325, 309):  # every decimal threshold, its neighbours and its integral/halved forms
        base = float("1e%d" % power)
        values += [base, -base, _step(base, -1), _step(base, 1), base * 1.5, base * 9.999999999999998]
    for exponent in range(-1074, 1024, 3):  # every binary exponent (in steps of 3), random mantissas
        values += [math.ldexp(rng.random() + 0.5, exponent) * rng.choice((1, -1)) for _ in range(2)]
    values += [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(3000)]
    values += [rng.randrange(-(10**6), 10**6) / rng.choice((7, 14, 1000, 3)) for _ in range(1000)]  # scores, means
    return [v for v in values if math.isfinite(v)]


def _layouts_agree(value: float) -> bool:
    """Where ``repr`` (json.dumps) and ECMAScript write a float alike: fixed notation and not
    integral (1e-4 <= |x| < 1e16), or an exponent of two or three digits that both write (|x| >= 1e21 or < 1e-9)."""
    written = repr(value)
    if "e" not in written:
        return not written.endswith(".0")
    exponent = int(written.partition("e")[2])
    return exponent >= 21 or exponent <= -10


def _integer_token_beyond_i_json(value: float) -> bool:
    """Whether RFC 8785 writes ``value`` as an integer token beyond 2**53 - 1 (``1e17`` as
    ``100000000000000000``): every float from 2**53 up is integral, and from 1e21 on it has an exponent."""
    return 2.0**53 <= abs(value) < 1e21


class TestSplicing(unittest.TestCase):
    """canonical_text_spliced, and a record written around a payload's text, give the exact encoder's bytes."""

    def mark(self, value: Any, rng: random.Random, texts: List[str], depth: int) -> Any:
        """``value`` with some of its values (at any depth) replaced by placeholders, their texts in ``texts``."""
        if depth and rng.random() < 0.3:
            try:
                text = canonical_text(value, "$", depth)
            except UnrecordableError:
                return value
            texts.append(text)
            return canonical.placeholder(len(texts) - 1)
        if type(value) is dict:
            return {k: self.mark(v, rng, texts, depth + 1) for k, v in value.items()}
        if type(value) is list:
            return [self.mark(v, rng, texts, depth + 1) for v in value]
        return value

    def test_placeholders_anywhere_are_replaced_as_the_exact_encoder_would_write_their_values(self) -> None:
        rng = random.Random(SEED + 3)
        values = _Values(rng)
        spliced_count = 0
        for _ in range(1500):
            value = {values.string(): values.value(1) for _ in range(rng.randrange(0, 6))}
            exact = _exact(value, 1)
            texts: List[str] = []
            marked = self.mark(value, rng, texts, 1)
            try:
                spliced = canonical.canonical_text_spliced(marked, texts, "$", 1)
            except UnrecordableError:
                self.assertIsNone(exact)  # an error of the value's own members, as canonical_text raises it
                continue
            if spliced is not None:
                self.assertEqual(spliced, exact, repr(value))
                spliced_count += bool(texts)
        self.assertGreater(spliced_count, 200)
        keys = {"\ue000": 1, "\U00010000": [2.5], "a": "é"}  # UTF-16 order differs from code point order
        self.assertEqual(
            canonical.canonical_text_spliced(dict(keys, a=canonical.placeholder(0)), ['"é"']), _exact(keys)
        )

    def test_a_value_equal_to_a_placeholder_is_not_spliced(self) -> None:
        for marked in (
            {"a": canonical.placeholder(0), "b": canonical.placeholder(0)},
            {"a": 1},
            {"a": [canonical.placeholder(0)], "b": canonical.placeholder(0)},
        ):
            with self.subTest(marked=marked):
                self.assertIsNone(canonical.canonical_text_spliced(marked, ["1"]))

    def test_a_record_written_around_its_payload_text_has_the_same_bytes(self) -> None:
        import tempfile

        from agentloop import TranscriptWriter

        payload = {"step": 1, "id": "c", "name": "n", "ok": True, "value": {"score": 9 / 14, "t": "é"}}
        marked = dict(payload, value=canonical.placeholder(0))
        text = canonical.canonical_text_spliced(marked, [canonical_text(payload["value"], "$", 2)], "$.payload", 1)
        with tempfile.TemporaryDirectory() as folder:
            lines = []
            for name, given in (("a", None), ("b", text)):
                path = os.path.join(folder, name)
                with TranscriptWriter(path) as out:
                    out.append("tool", payload, given)
                with open(path, "rb") as handle:
                    lines.append(handle.read())
        self.assertEqual(lines[0], lines[1])


class TestFloats(unittest.TestCase):
    """Floats stay on the fast paths exactly where json.dumps writes what RFC 8785 writes."""

    def test_repr_is_the_ecmascript_form_exactly_where_the_layouts_agree(self) -> None:
        rng = random.Random(SEED)
        for value in _floats(rng):
            with self.subTest(value=value):
                self.assertEqual(repr(value) == format_number(value), _layouts_agree(value))

    def test_the_writer_keeps_exactly_those_floats_on_its_fast_path(self) -> None:
        rng = random.Random(SEED + 1)
        fast_count = 0
        for value in _floats(rng):
            for holder in ([value], {"k": value, "s": "é"}, [[{"x": value}], "t"]):
                with self.subTest(value=value, holder=holder):
                    fast = _fast(holder, 0)
                    self.assertEqual(fast is not None, _layouts_agree(value))
                    exact = _exact(holder)
                    # Refused exactly where RFC 8785 writes an integer token beyond 2**53 - 1 (1e17).
                    self.assertEqual(exact is None, _integer_token_beyond_i_json(value))
                    if exact is None:
                        with self.assertRaises(UnrecordableError):
                            canonical_text(holder)
                        continue
                    if fast is not None:
                        fast_count += 1
                        self.assertEqual(fast[0], exact)
                        self.assertEqual(fast[1], json.loads(exact or ""))
                    self.assertEqual(canonical_text(holder), exact)
        self.assertGreater(fast_count, 3000)

    def test_the_verifier_proves_every_canonical_float_and_no_other_spelling(self) -> None:
        rng = random.Random(SEED + 2)
        for value in _floats(rng):
            exact = _exact({"k": [value, "x"]})
            if exact is None:  # 1e17: RFC 8785 writes an integer token beyond 2**53 - 1, I-JSON refuses it
                self.assertTrue(_integer_token_beyond_i_json(value))
                spelt = json.dumps({"k": [value, "x"]}, separators=(",", ":"))
                for text in ('{"k":[%s,"x"]}' % (format_number(value),), spelt):
                    parsed = json.loads(text)
                    self.assertFalse(is_canonical_line(parsed, text, text.encode("utf-8")), text)
                    self.assertIsNone(_exact(parsed), text)
                continue
            spelt = json.dumps({"k": [value, "x"]}, separators=(",", ":"))
            # repr's layout, and repr's with its exponent unpadded (1e-5 for 1e-05: canonical only from 1e-7 down)
            spellings = {exact, spelt, spelt.replace("e-0", "e-")}
            for text in spellings:
                with self.subTest(value=value, text=text):
                    raw, parsed = text.encode("utf-8"), json.loads(text)
                    proven = is_canonical_line(parsed, text, raw)
                    if proven:  # never a wrong proof
                        self.assertEqual(_exact(parsed), text)
                    if text == exact and isinstance(parsed["k"][0], float):  # every canonical float proven, fast
                        self.assertTrue(proven)
                    # (An integral float written as an integer token of 16+ digits parses as an
                    # int that may lie beyond 2**53 - 1: declined, and the exact encoder decides.)

    def test_long_lines_are_judged_as_short_ones(self) -> None:
        # _float_layout_differs searches a line over 512 bytes otherwise than a short one
        for value in (1e-05, 2.5e-08, 1e-07, 1e21, 123.0, 1.0, -0.0, 0.642857142857143, 1.5e-10):
            for pad in (10, 600):
                holder = {"k": [value, "x" * pad]}
                exact = _exact(holder)
                spelt = json.dumps(holder, separators=(",", ":"))
                with self.subTest(value=value, pad=pad):
                    self.assertIsNotNone(exact)
                    self.assertTrue(is_canonical_line(json.loads(exact or ""), exact or "", (exact or "").encode()))
                    self.assertEqual(is_canonical_line(json.loads(spelt), spelt, spelt.encode()), spelt == exact)

    def test_negative_control_without_the_layout_guard_the_fast_paths_lie(self) -> None:
        # Switch the guard off: the writer then writes repr layouts (1e-05, 1.0) and
        # the verifier proves them, so the checks above would fail.
        guard = canonical._float_layout_differs
        canonical._float_layout_differs = lambda raw: False  # type: ignore[assignment]
        try:
            for value, ecmascript in (
                (1e-05, "0.00001"),
                (1.0, "1"),
                (1e16, "10000000000000000"),
                (-0.0, "0"),
                (2.5e-08, "2.5e-8"),
            ):
                with self.subTest(value=value):
                    fast = _fast([value], 0)
                    self.assertEqual(fast[0] if fast else None, "[%s]" % (repr(value),))
                    self.assertNotEqual(repr(value), ecmascript)
                    text = "[%s]" % (repr(value),)
                    self.assertTrue(is_canonical_line([value], text, text.encode()))
        finally:
            canonical._float_layout_differs = guard
        self.assertIsNone(_fast([1e-05], 0))


if __name__ == "__main__":
    unittest.main()
