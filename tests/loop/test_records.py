"""agentloop/loop/records.py against the exact encoder: each text it assembles is the payload's RFC 8785 text.

Random assistant and tool payloads of every shape the loop writes (and some it
does not: a float, a ``str`` subclass, an integer beyond 2**53 - 1, a
truncated flag that is not ``True``, an approval member, odd usage) with
strings of every kind (non-ASCII, lone surrogates, noncharacters, characters
that need escapes): where :func:`turn_text` or :func:`tool_text` gives a
text, it is ``canonical_text(payload, "$.payload", 1)``; where the payload
cannot be recorded it gives ``None`` (the caller's exact path raises).
"""

from __future__ import annotations

import random
import unittest
from typing import Any, Dict, List, Optional

from agentloop.canonical import MAX_SAFE_INTEGER, canonical_text, parse_canonical, snapshot, string_text
from agentloop.errors import UnrecordableError
from agentloop.loop.plan import ARGUMENTS_DEPTH, PlannedCall, head_text
from agentloop.loop.records import tool_text, turn_text

SEED = 8785


class _Sub(str):
    pass


STRINGS = ["", "a", "é", "東京", "😀", "\ue000", "\ud800", "\ufdd0", "\U0001fffe", "\x00", "\u2028", 'q"\\', "\n\t"]
NUMBERS: List[Any] = [0, 1, 7, MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1, -1, True, 2.5, 1.0]


def _exact(payload: Dict[str, Any]) -> Optional[str]:
    try:
        return canonical_text(payload, "$.payload", 1)
    except UnrecordableError:
        return None


def _string(rng: random.Random) -> Any:
    text = rng.choice(STRINGS) + rng.choice(STRINGS) if rng.random() < 0.3 else rng.choice(["c", "é", "call_1_0", 'q"'])
    return _Sub(text) if rng.random() < 0.05 else text


def _count(rng: random.Random) -> Any:
    return rng.randint(0, 10**6) if rng.random() < 0.8 else rng.choice(NUMBERS)


def _call(rng: random.Random) -> PlannedCall:
    if rng.random() < 0.1:  # arguments kept out of the record
        return PlannedCall(_string(rng), _string(rng), None, "unrecordable arguments: x")
    arguments = {rng.choice(STRINGS): rng.choice([1, "é", [2.5, None], {"k": "v"}]) for _ in range(rng.randint(0, 3))}
    try:
        copy, text = snapshot(arguments, "$", ARGUMENTS_DEPTH)
    except UnrecordableError:
        return PlannedCall(_string(rng), _string(rng), None, "unrecordable arguments: y")
    call_id, name = _string(rng), _string(rng)
    head = head_text(call_id, name) if rng.random() < 0.5 else ""  # as plan_turn makes it, or left to turn_text
    return PlannedCall(call_id, name, copy, "", text, head)


def _usage(rng: random.Random) -> Any:
    usage: Dict[str, Any] = {"input_tokens": _count(rng), "output_tokens": _count(rng)}
    for name in ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
        if rng.random() < 0.3:
            usage[name] = _count(rng)
    if rng.random() < 0.05:
        usage["odd"] = 1
    return usage


def _turn(rng: random.Random) -> Dict[str, Any]:
    calls = [_call(rng) for _ in range(rng.randint(0, 3))]
    payload: Dict[str, Any] = {
        "step": _count(rng),
        "text": _string(rng),
        "tool_calls": [call.recorded() for call in calls],
        "tokens": _count(rng),
        "total_tokens": _count(rng),
    }
    if rng.random() < 0.3:
        payload["usage"] = _usage(rng)
    if rng.random() < 0.2:
        payload["truncated"] = rng.choice([True, True, 1, False])
    if rng.random() < 0.1:
        payload[rng.choice(["cost", "clock", "provider_data"])] = rng.choice(["0.1", 2.5, {"api": "x", "items": []}])
    payload["_calls"] = calls
    return payload


def _tool(rng: random.Random) -> Any:
    result: Dict[str, Any] = {"step": _count(rng), "id": _string(rng), "name": _string(rng)}
    text = ""
    if rng.random() < 0.6:
        value = rng.choice([{"text": "hello"}, [1, "é"], 0.642857142857143, "\ud800", 2**60, None])
        try:
            value, text = snapshot(value, "$", 2)
        except UnrecordableError:
            value, text = value, ""
        result.update(ok=True, value=value)
    else:
        result.update(ok=rng.choice([False, False, 0]), error=_string(rng))
    if rng.random() < 0.1:
        result[rng.choice(["approval", "gated"])] = rng.choice([False, {"decision": "approve"}])
    return result, text


class TestRecords(unittest.TestCase):
    def test_turn_texts_are_the_exact_texts(self) -> None:
        rng = random.Random(SEED)
        assembled = declined = 0
        for _ in range(3000):
            payload = _turn(rng)
            calls = payload.pop("_calls")
            text = turn_text(payload, calls)
            exact = _exact(payload)
            if text is None:
                declined += 1
            else:
                assembled += 1
                self.assertEqual(text, exact, repr(payload))
        self.assertGreater(assembled, 400)
        self.assertGreater(declined, 400)

    def test_tool_texts_are_the_exact_texts(self) -> None:
        rng = random.Random(SEED + 1)
        assembled = 0
        for _ in range(3000):
            result, value_text = _tool(rng)
            head = head_text(result["id"], result["name"]) if rng.random() < 0.5 else ""
            text = tool_text(result, value_text, head)
            if text is not None:
                assembled += 1
                self.assertEqual(text, _exact(result), repr(result))
        self.assertGreater(assembled, 700)

    def test_string_text_is_the_exact_text_of_a_plain_str(self) -> None:
        rng = random.Random(SEED + 2)
        for _ in range(3000):
            value = "".join(rng.choice(STRINGS) for _ in range(rng.randint(0, 4)))
            try:
                exact: Optional[str] = canonical_text(value)
            except UnrecordableError:
                exact = None
            self.assertEqual(string_text(value), exact, repr(value))
            self.assertIsNone(string_text(_Sub(value)))
        self.assertIsNone(string_text(1))

    def test_parse_canonical_reads_as_json_loads(self) -> None:
        import json

        for value in ({"a": [1, 2.5, "é", None, True]}, [], {}, "x", 3, [{"b": {"c": [0.1]}}]):
            text = canonical_text(value)
            self.assertEqual(parse_canonical(text), json.loads(text))
            if isinstance(value, (dict, list)):
                self.assertIsNot(parse_canonical(text), value)  # a copy
        self.assertEqual(parse_canonical('{"a":1} '), {"a": 1})  # as json.loads reads it
        for bad in ('{"a":1} x', "", "{"):
            with self.assertRaises(json.JSONDecodeError):
                parse_canonical(bad)


if __name__ == "__main__":
    unittest.main()
