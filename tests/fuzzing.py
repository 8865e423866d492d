"""Deterministic fuzzers shared by the suite (bounded) and bench/fuzz.py (at length).

Stdlib only; every case is derived from ``random.Random(seed)`` so a failure
can be replayed from its seed and case number.
"""

from __future__ import annotations

import json
import math
import os
import random
import tempfile
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from agentloop import FAULT_KINDS, ModelReply, Tool, ToolCall, verify_file
from agentloop.loop import run

Mutation = Tuple[str, bytes]


def _lines(data: bytes) -> List[bytes]:
    return data.splitlines(keepends=True)


def mutations(data: bytes, rng: random.Random, count: int) -> Iterator[Mutation]:
    """``count`` random mutations of a transcript's bytes, of every kind the issue lists."""
    lines = _lines(data)
    n = len(lines)

    def some_line() -> int:
        return rng.randrange(n)

    def flip() -> Mutation:
        blob = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            blob[rng.randrange(len(blob))] ^= rng.randint(1, 255)
        return "flip", bytes(blob)

    def delete() -> Mutation:
        i = some_line()
        return "delete line %d" % i, b"".join(lines[:i] + lines[i + 1 :])

    def duplicate() -> Mutation:
        i = some_line()
        return "duplicate line %d" % i, b"".join(lines[: i + 1] + lines[i:])

    def swap() -> Mutation:
        i, j = some_line(), some_line()
        swapped = list(lines)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        return "swap %d %d" % (i, j), b"".join(swapped)

    def truncate() -> Mutation:
        at = rng.randrange(len(data))
        return "truncate at %d" % at, data[:at]

    def insert(name: str, junk: bytes) -> Callable[[], Mutation]:
        def go() -> Mutation:
            i = rng.randrange(n + 1)
            return "%s at %d" % (name, i), b"".join(lines[:i] + [junk] + lines[i:])

        return go

    def edit(name: str, old: bytes, new: Callable[[], bytes]) -> Callable[[], Mutation]:
        def go() -> Mutation:
            i = some_line()
            line = lines[i]
            at = line.find(old)
            if at < 0:
                return flip()
            edited = line[:at] + new() + line[at + len(old) :]
            return "%s in line %d" % (name, i), b"".join(lines[:i] + [edited] + lines[i + 1 :])

        return go

    kinds = [
        flip, flip, delete, duplicate, swap, truncate, truncate,
        insert("junk line", b"not json at all\n"),
        insert("empty line", b"\n"),
        insert("huge line", b'{"junk":"' + b"x" * 200_000 + b'"}\n'),
        insert("invalid utf-8", b'{"a":"\xff\xfe"}\n'),
        insert("deep json", b"[" * 5000 + b"]" * 5000 + b"\n"),
        insert("copied record", lines[rng.randrange(n)] if n else b"{}\n"),
        edit("duplicate key", b'"kind":', lambda: b'"kind":"tool","kind":'),
        edit("lone surrogate", b'"payload":{', lambda: b'"payload":{"x":"\\ud800",'),
        edit("NaN", b'"seq":', lambda: b'"seq":NaN,"s":'),
        edit("big integer", b'"seq":', lambda: b'"seq":123456789012345678901,"s":'),
        edit("whitespace", b'":', lambda: b'": '),
        edit("escaped slash", b'"kind":"', lambda: b'"kind":"\\/'),
        edit("unicode escape", b'"kind":"t', lambda: b'"kind":"\\u0074'),
        edit("float form", b'"seq":', lambda: b'"seq":1.0,"s":'),
    ]
    for _ in range(count):
        yield rng.choice(kinds)()


def is_documented_limit(original: bytes, mutated: bytes) -> bool:
    """The bytes are unchanged, or cut cleanly at a line boundary (the chain's stated limit)."""
    return mutated == original or (original.startswith(mutated) and (mutated == b"" or mutated.endswith(b"\n")))


class FuzzReport:
    def __init__(self) -> None:
        self.cases = 0
        self.crashes: List[str] = []
        self.silent_accepts: List[str] = []
        self.slowest = (0.0, "", 0)

    def summary(self) -> str:
        seconds, name, size = self.slowest
        return "%d cases, %d crashes, %d silent accepts; slowest: %s (%d bytes) %.1f ms" % (
            self.cases, len(self.crashes), len(self.silent_accepts), name, size, seconds * 1000)


def fuzz_transcripts(data: bytes, seed: int, count: int, folder: str, report: FuzzReport,
                     every_truncation: bool = False) -> None:
    """Mutate ``data`` and verify each result: never raise, never accept a change."""
    rng = random.Random(seed)
    cases: Iterator[Mutation] = mutations(data, rng, count)
    if every_truncation:
        cases = iter(list(cases) + [("truncate at %d" % at, data[:at]) for at in range(len(data))])
    path = os.path.join(folder, "fuzz.jsonl")
    for name, mutated in cases:
        report.cases += 1
        with open(path, "wb") as handle:
            handle.write(mutated)
        start = time.perf_counter()
        try:
            verdict = verify_file(path)
        except BaseException as exc:  # the property under test: nothing escapes
            report.crashes.append("%s: %s: %s" % (name, type(exc).__name__, exc))
            continue
        elapsed = time.perf_counter() - start
        if elapsed > report.slowest[0]:
            report.slowest = (elapsed, name, len(mutated))
        if any(f.kind not in FAULT_KINDS for f in verdict.faults):
            report.crashes.append("%s: unknown fault kind" % (name,))
        if verdict.ok and not is_documented_limit(data, mutated):
            report.silent_accepts.append(name)


# --- through the whole loop ---------------------------------------------------


class _Odd:
    def __repr__(self) -> str:
        return "<odd at %x>" % id(self)


def random_value(rng: random.Random, depth: int = 0) -> Any:
    """A value a careless or hostile model might send: JSON and far from it."""
    roll = rng.random()
    if depth > 70 or roll < 0.35:
        return rng.choice([
            None, True, False, 0, -1, 2**53 - 1, 2**53, 2**80, 10**400, 1.5, -0.0, 1e-7, 1e300,
            math.nan, math.inf, "", "text", "\ud800", "\x1b[31m", "é😀", "x" * rng.choice([10, 5000, 200_000]),
            b"bytes", (1, 2), {1, 2}, _Odd(),
        ])
    if roll < 0.6:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if roll < 0.65:
        deep: Any = 0
        for _ in range(rng.choice([50, 60, 63, 64, 65, 1000])):
            deep = [deep]
        return deep
    keys: List[Any] = ["a", "b", "text", "name", "\ud801", "é", 1, None, (1,)]
    return {rng.choice(keys): random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def fuzz_loop(seed: int, runs: int, folder: str, report: FuzzReport) -> None:
    """Scripted models sending random, malformed and oversized calls; every run must end in a verified, complete transcript."""
    rng = random.Random(seed)
    tools = [
        Tool("echo", "", {"type": "object", "properties": {"text": {"type": "string", "maxLength": 1000}}}, lambda **kw: kw),
        Tool("strict", "", {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
                            "additionalProperties": False}, lambda a: a),
        Tool("back", "", {"type": "object"}, lambda **kw: random_value(random.Random(len(json.dumps(sorted(map(str, kw)))))))
    ]
    for number in range(runs):
        replies = []
        for _ in range(rng.randint(1, 4)):
            calls = [ToolCall(rng.choice(["echo", "strict", "back", "nope", "é", "x" * 300]),
                              {rng.choice(["text", "a", "b", 1, None, "\ud800"]): random_value(rng)
                               for _ in range(rng.randint(0, 3))},
                              id=rng.choice(["", "", "dup", "call_1_1"]))
                     for _ in range(rng.randint(0, 3))]
            replies.append(ModelReply(rng.choice(["", "ok", "\ud800", "DONE", "y" * 100_000]), calls))
        path = os.path.join(folder, "loop-%d.jsonl" % number)
        report.cases += 1
        script = iter(replies)
        start = time.perf_counter()
        try:
            run("fuzz", lambda m, t: next(script), tools, transcript=path, max_steps=rng.randint(0, 5),
                max_tokens=rng.choice([10, 10**6]), stop_sentinel=rng.choice([None, "DONE"]), overwrite=True)
        except BaseException as exc:
            report.crashes.append("run %d: %s: %s" % (number, type(exc).__name__, str(exc)[:200]))
            continue
        elapsed = time.perf_counter() - start
        if elapsed > report.slowest[0]:
            report.slowest = (elapsed, "loop run %d" % number, os.path.getsize(path))
        verdict = verify_file(path)
        if not (verdict.ok and verdict.complete):
            report.crashes.append("run %d: transcript does not verify: %s" % (number, verdict.faults[:2]))


def fuzz_all(seed: int, transcript_cases: int, loop_runs: int, data: Optional[bytes] = None,
             every_truncation: bool = False) -> Dict[str, FuzzReport]:
    from demo import demo_tools, recover_model

    reports = {"transcripts": FuzzReport(), "loop": FuzzReport()}
    with tempfile.TemporaryDirectory() as folder:
        if data is None:
            source = os.path.join(folder, "source.jsonl")
            run("fuzz source", recover_model(), demo_tools(), transcript=source, max_steps=8, max_tokens=2000)
            with open(source, "rb") as handle:
                data = handle.read()
        fuzz_transcripts(data, seed, transcript_cases, folder, reports["transcripts"], every_truncation)
        fuzz_loop(seed, loop_runs, folder, reports["loop"])
    return reports
