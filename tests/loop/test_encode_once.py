"""The loop encodes each value once: records built around those texts are the bytes of the whole record.

agentloop/loop/engine.py (``_Recorder.append(kind, payload, marked, texts)``)
writes an assistant record around its calls' argument texts and a tool record
around its result's text (:func:`agentloop.canonical.canonical_text_spliced`),
each made once by a snapshot.  A differential test: the same random runs --
tool results and model arguments with floats of every range (``1e17`` and
``2**53`` included, which no record may hold), ``-0.0``, non-ASCII, keys that
sort differently in UTF-16, lone surrogates, noncharacters, nesting at the
limit, strings that are (or hold) the placeholders themselves, call ids that
are placeholders, results too big for ``max_record_bytes`` -- are run twice,
once as the loop writes and once with every record encoded whole (and every
call and turn through the general path, none through the plain lane of a
lone sync call), and the two transcripts must be the same bytes, and verify.  ``AGENTLOOP_ENCODE_ONCE_CASES=N``
runs N random runs instead of the default 60.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import unittest
from typing import Any, Dict, List, Optional, Sequence
from unittest import mock

from agentloop import ModelReply, ScriptedModel, Tool, ToolCall, ToolFailure, Usage, run, verify_file
from agentloop.canonical import MAX_DEPTH, placeholder
from agentloop.loop import engine

CASES = int(os.environ.get("AGENTLOOP_ENCODE_ONCE_CASES", "60"))
SEED = 8785
FLOATS = [
    0.5,
    -0.0,
    1e-7,
    1.5e-5,
    1e16,
    1e17,
    2.0**53,
    2.0**53 - 1,
    1e21,
    1e20,
    5e-324,
    9 / 14,
    0.1 + 0.2,
    1.7976931348623157e308,
    0.642857142857143,
    -2.5e-10,
    float("nan"),
]
STRINGS = [
    "",
    "é",
    "東京",
    "😀",
    "\ue000",
    "\U00010000",
    "\ud800",
    "\ufdd0",
    "\U0001fffe",
    "\x00",
    "\u2028",
    'q"\\',
    placeholder(0),
    placeholder(1),
    '"' + placeholder(0),
    placeholder(0) + '"',
    "x" + placeholder(1),
]

ODD_NAMES = ["no tool é", "\u2028", 'q"\\', placeholder(0)]  # unknown tools: their calls fail as data


def _name(tool: str, names: random.Random) -> str:
    """``tool``, or now and then an odd name drawn from ``names`` (the values drawn stay those of the seed)."""
    return tool if names.random() < 0.9 else names.choice(ODD_NAMES)


def _usage(names: random.Random) -> Optional[Usage]:
    """No usage, or one with some of its optional counts, now and then near 2**53 (a total beyond it)."""
    if names.random() < 0.4:
        return None
    big = names.random() < 0.1
    output = names.choice([1, 50, 2**52]) if big else names.randint(1, 50)
    return Usage(
        names.choice([2**52, 2**53 - 1]) if big else names.randint(10, 500),
        output,
        cache_read_tokens=names.choice([0, 0, 3]),
        cache_write_tokens=names.choice([0, 0, 5]),
        reasoning_tokens=names.choice([0, 0, 1]),
    )


class _Values:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def scalar(self) -> Any:
        r = self.rng.random()
        if r < 0.3:
            return self.rng.choice(FLOATS)
        if r < 0.45:
            return self.rng.uniform(-1e6, 1e6) / self.rng.choice([1, 7, 1000])
        if r < 0.55:
            return self.rng.choice([0, -1, 2**53 - 1, 2**53, True, False, None])
        return self.rng.choice(STRINGS)

    def value(self, depth: int = 0) -> Any:
        r = self.rng.random()
        if depth > 3 or r < 0.3:
            return self.scalar()
        if r < 0.6:
            return [self.value(depth + 1) for _ in range(self.rng.randrange(0, 4))]
        keys = STRINGS + ["a", "b", "score"]
        return {self.rng.choice(keys): self.value(depth + 1) for _ in range(self.rng.randrange(0, 4))}

    def arguments(self) -> Dict[str, Any]:
        return {self.rng.choice(STRINGS + ["q"]): self.value(1) for _ in range(self.rng.randint(0, 3))}

    def result(self) -> Any:
        r = self.rng.random()
        if r < 0.08:  # nesting at the limit: a result sits 2 deep in its record
            levels = MAX_DEPTH - 2 + self.rng.choice([-1, 0, 1])
            nested: Any = 1
            for _ in range(levels):
                nested = [nested]
            return nested
        if r < 0.25:
            return {"blob": "é" * self.rng.choice([30_000, 40_000])}  # beyond a 64 KiB record
        return self.value()


class _Fail:
    """A tool call that fails with ``text`` as its error."""

    def __init__(self, text: str) -> None:
        self.text = text


def _failing(value: Any, names: random.Random) -> Any:
    """``value``, or now and then a failure with one of the odd strings (lone surrogates, noncharacters...)."""
    return _Fail(names.choice(STRINGS) + "!") if names.random() < 0.2 else value


def _run(folder: str, name: str, script: List[ModelReply], results: List[Any], max_record_bytes: int) -> bytes:
    queue = list(results)

    def answer(**arguments: Any) -> Any:
        value = queue.pop(0) if queue else "done"
        if isinstance(value, _Fail):
            raise ToolFailure(value.text)  # recorded verbatim as the error: the same checks as a value's strings
        return value

    tools = [
        Tool("t", "a tool", {"type": "object"}, answer),
        Tool("p", "a parallel tool", {"type": "object"}, answer, parallel=True),
    ]
    path = os.path.join(folder, name)
    run(
        "task é",
        ScriptedModel(list(script)),
        tools,
        transcript=path,
        max_steps=len(script),
        max_tokens=10**9,
        max_record_bytes=max_record_bytes,
    )
    with open(path, "rb") as handle:
        return handle.read()


def _whole(
    self: Any,
    kind: str,
    payload: Dict[str, Any],
    marked: Optional[Dict[str, Any]] = None,
    texts: Sequence[str] = (),
    assembled: Optional[str] = None,
) -> str:
    return _APPEND(self, kind, payload)  # every record encoded whole, as before the loop encoded values once


_APPEND = engine._Recorder.append


class TestEncodeOnce(unittest.TestCase):
    def setUp(self) -> None:
        self.folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.folder, True)

    def test_records_built_around_encoded_values_are_the_records_encoded_whole(self) -> None:
        rng = random.Random(SEED)
        values = _Values(rng)
        names = random.Random(SEED + 1)  # its own stream: the values drawn are those of the seed
        counts = {"spliced": 0, "turn": 0, "tool": 0, "plain": 0}
        failed = too_big = usage = truncated = 0

        def counting(name: str, real: Any) -> Any:
            def counted(*args: Any, **kwargs: Any) -> Optional[str]:
                text = real(*args, **kwargs)
                counts[name] += text is not None
                return text

            return counted

        for case in range(CASES):
            script = []
            for step in range(rng.randint(1, 4)):
                calls = [
                    ToolCall(
                        _name(rng.choice(["t", "p"]), names),
                        values.arguments(),
                        rng.choice(["", "", "", placeholder(0), placeholder(1), "id é"]),
                    )
                    for _ in range(rng.randint(0, 3))
                ]
                script.append(
                    ModelReply(rng.choice(["", "é", placeholder(0)]), calls, _usage(names), names.random() < 0.2)
                )
            script.append(ModelReply("end"))
            results = [_failing(values.result(), names) for _ in range(12)]
            limit = rng.choice([64 * 1024, 1024 * 1024])
            with mock.patch.object(
                engine, "canonical_text_spliced", counting("spliced", engine.canonical_text_spliced)
            ), mock.patch.object(engine, "turn_text", counting("turn", engine.turn_text)), mock.patch.object(
                engine, "plain_turn_text", counting("turn", engine.plain_turn_text)
            ), mock.patch.object(engine, "tool_text", counting("tool", engine.tool_text)), mock.patch.object(
                engine, "plain_tool_text", counting("tool", engine.plain_tool_text)
            ), mock.patch.object(engine, "run_plain", counting("plain", engine.run_plain)):
                once = _run(self.folder, "once%d.jsonl" % case, script, results, limit)
            # every record encoded whole, and every call and model turn through the general path (no plain lane:
            # no tool run as a plain call, the model asked through its coroutine, no text without its payload dict)
            with mock.patch.object(engine._Recorder, "append", _whole), mock.patch.object(
                engine, "plain_turn_text", lambda *args: None
            ), mock.patch.object(engine, "plain_tool_text", lambda *args: None), mock.patch.object(
                engine, "run_plain", lambda *args: None
            ), mock.patch.object(engine.SyncRunner, "plain_asker", lambda *args: None):
                whole = _run(self.folder, "whole%d.jsonl" % case, script, results, limit)
            self.assertEqual(once, whole, "case %d" % (case,))
            self.assertTrue(verify_file(os.path.join(self.folder, "once%d.jsonl" % case)).ok, case)
            failed += once.count(b"returned an unrecordable result")
            too_big += once.count(b"exceeds max_record_bytes")
            usage += once.count(b'"usage":{')
            truncated += once.count(b'"truncated":true')
        self.assertGreater(counts["turn"], CASES, "assistant records assembled from their members' texts")
        self.assertGreater(counts["tool"], CASES * 2, "tool records assembled from their members' texts")
        self.assertGreater(counts["spliced"], CASES // 4, "records built around their values' texts")
        self.assertGreater(counts["plain"], CASES // 10, "lone calls run as plain calls")
        self.assertGreater(usage, CASES // 3, "assistant records with usage")
        self.assertGreater(truncated, CASES // 6, "assistant records of truncated replies")
        self.assertGreater(failed, CASES // 4, "results that cannot be recorded: the same failure records")
        self.assertGreater(too_big, CASES // 30, "results too big for a record: the same failure records")

    def test_values_of_str_subclasses_that_misreport_themselves_are_recorded_by_their_characters(self) -> None:
        # a key whose encode and __str__ say otherwise, a string that says it is ASCII: the records hold their
        # characters, in RFC 8785 order, and refuse the noncharacter and the lone surrogate they hide
        class Key(str):
            def encode(self, *args: Any, **kwargs: Any) -> bytes:
                return b"\xff"

            def __str__(self) -> str:
                return "other"

        class Ascii(str):
            def isascii(self) -> bool:
                return True

        results = [
            {"late": 1, Key("k"): [2]},
            {"x": Ascii("a\ufffe")},
            [Ascii("\u00e9\ud800")],
            {Key("n"): Ascii("ok")},
        ]
        script = [ModelReply("", [ToolCall("t", {}) for _ in results]), ModelReply("end")]
        with mock.patch.object(engine._Recorder, "append", _whole):
            whole = _run(self.folder, "whole.jsonl", script, results, 64 * 1024)
        once = _run(self.folder, "once.jsonl", script, results, 64 * 1024)
        self.assertEqual(once, whole)
        self.assertTrue(verify_file(os.path.join(self.folder, "once.jsonl")).ok)
        self.assertIn(b'"value":{"k":[2],"late":1}', once)
        self.assertIn(b'"value":{"n":"ok"}', once)
        self.assertIn(b"$.x: string has the noncharacter U+FFFE at index 1", once)
        self.assertIn(b"$[0]: string has a lone surrogate U+D800 at index 1", once)


if __name__ == "__main__":
    unittest.main()
