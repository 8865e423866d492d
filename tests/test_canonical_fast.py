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
import random
import struct
import unittest
from collections import OrderedDict
from typing import Any, List, Optional, Tuple

from agentloop import canonical
from agentloop.canonical import MAX_DEPTH, _fast, canonical_text, snapshot
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
            return chr(self.rng.choice([0xD800, 0xDFFF, 0xFDD0, 0xFDEF, 0xFFFE, 0xFFFF, 0x1FFFE, 0x10FFFF, 0xE000, 0xFFFD, 0x2028, 0x7F]))
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
            return self.rng.choice([0.0, -0.0, 1.0, 0.5, 1e-7, 1e-6, 1e21, 1e22, 1e16, 123456789012345680.0, 5e-324,
                                    float("nan"), float("inf"), 0.1 + 0.2, 1.5e300])
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
        return self.rng.choice([(1, 2), {1: "int key"}, {None: 1}, Color.RED, Odd(a=1), OrderedDict(b=1, a=2), {"s": {1, 2}}, b"x"])


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
        record = {"kind": "tool", "payload": {"step": 3, "id": "call_3_0", "name": "add", "ok": True, "value": {"sum": 42.5, "t": "é✓"}},
                  "prev": "1acbc9fe52df3169e14e33274d4d910e9141378ee918ab797aff379ba0a844fc", "seq": 5}
        self.assertEqual(self.check(record), (True, True))
        record["prev"] = "0" * 64  # 16 digits in a row might be an integer beyond 2**53-1: declined, needlessly but safely
        self.assertEqual(self.check(record), (False, True))

    def test_each_difference_from_the_c_encoder_is_declined(self) -> None:
        for value in ([1.0], [-0.0], [1e-7], [1e21], [2**53], ["\ud800"], ["\ufdd0"], ["\U0001fffe"], [{"\ue000": 1, "\U00010000": 2}],
                      [(1,)], [{1: 2}], [Color.RED], [Odd(a=1)], [float("nan")], ["x"] * 3 + [{"a": set()}]):
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

    def test_snapshot_gives_the_same_copy_either_way(self) -> None:
        value = {"a": [1, 2.5, "x"], "b": {"c": None}}
        copy_, text = snapshot(value)
        self.assertEqual((copy_, text), (value, _exact(value)))
        self.assertIsNot(copy_, value)
        with self.assertRaises(UnrecordableError) as caught:
            snapshot({"ok": [1, {"bad": float("nan")}]})
        self.assertEqual(caught.exception.path, "$.ok[1].bad")  # paths are still built, on the way to the error


if __name__ == "__main__":
    unittest.main()
