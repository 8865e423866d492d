"""Deterministic fuzzers shared by the suite (bounded) and bench/fuzz.py (at length).

Stdlib only; every case is derived from ``random.Random(seed)`` so a failure
can be replayed from its seed and case number.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import random
import shutil
import tempfile
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

from agentloop import FAULT_KINDS, ModelReply, Tool, ToolCall, Usage, verify_file
from agentloop.canonical import canonical_bytes
from agentloop.errors import AgentloopError
from agentloop.loop import run

from tests.support.helpers import replace_file

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
        flip,
        flip,
        delete,
        duplicate,
        swap,
        truncate,
        truncate,
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
            self.cases,
            len(self.crashes),
            len(self.silent_accepts),
            name,
            size,
            seconds * 1000,
        )


def fuzz_transcripts(
    data: bytes, seed: int, count: int, folder: str, report: FuzzReport, every_truncation: bool = False
) -> None:
    """Mutate ``data`` and verify each result: never raise, never accept a change."""
    rng = random.Random(seed)
    cases: Iterator[Mutation] = mutations(data, rng, count)
    if every_truncation:
        cases = iter(list(cases) + [("truncate at %d" % at, data[:at]) for at in range(len(data))])
    path = os.path.join(folder, "fuzz.jsonl")
    for name, mutated in cases:
        report.cases += 1
        replace_file(path, mutated)
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
        return rng.choice(
            [
                None,
                True,
                False,
                0,
                -1,
                2**53 - 1,
                2**53,
                2**80,
                10**400,
                1.5,
                -0.0,
                1e-7,
                1e300,
                math.nan,
                math.inf,
                "",
                "text",
                "\ud800",
                "\x1b[31m",
                "é😀",
                "x" * rng.choice([10, 5000, 200_000]),
                b"bytes",
                (1, 2),
                {1, 2},
                _Odd(),
            ]
        )
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
    """Scripted models sending random, malformed and oversized calls; every run must end in a verified,
    complete transcript."""
    rng = random.Random(seed)
    tools = [
        Tool(
            "echo",
            "",
            {"type": "object", "properties": {"text": {"type": "string", "maxLength": 1000}}},
            lambda **kw: kw,
        ),
        Tool(
            "strict",
            "",
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}},
                "required": ["a"],
                "additionalProperties": False,
            },
            lambda a: a,
        ),
        Tool(
            "back",
            "",
            {"type": "object"},
            lambda **kw: random_value(random.Random(len(json.dumps(sorted(map(str, kw)))))),
        ),
    ]
    for number in range(runs):
        replies = []
        for _ in range(rng.randint(1, 4)):
            calls = [
                ToolCall(
                    rng.choice(["echo", "strict", "back", "nope", "é", "x" * 300]),
                    {
                        rng.choice(["text", "a", "b", 1, None, "\ud800"]): random_value(rng)
                        for _ in range(rng.randint(0, 3))
                    },
                    id=rng.choice(["", "", "dup", "call_1_1"]),
                )
                for _ in range(rng.randint(0, 3))
            ]
            replies.append(ModelReply(rng.choice(["", "ok", "\ud800", "DONE", "y" * 100_000]), calls))
        path = os.path.join(folder, "loop-%d.jsonl" % number)
        report.cases += 1
        script = iter(replies)
        start = time.perf_counter()
        try:
            run(
                "fuzz",
                lambda m, t: next(script),
                tools,
                transcript=path,
                max_steps=rng.randint(0, 5),
                max_tokens=rng.choice([10, 10**6]),
                stop_sentinel=rng.choice([None, "DONE"]),
                overwrite=True,
            )
        except BaseException as exc:
            report.crashes.append("run %d: %s: %s" % (number, type(exc).__name__, str(exc)[:200]))
            continue
        elapsed = time.perf_counter() - start
        if elapsed > report.slowest[0]:
            report.slowest = (elapsed, "loop run %d" % number, os.path.getsize(path))
        verdict = verify_file(path)
        if not (verdict.ok and verdict.complete):
            report.crashes.append("run %d: transcript does not verify: %s" % (number, verdict.faults[:2]))


def fuzz_all(
    seed: int, transcript_cases: int, loop_runs: int, data: Optional[bytes] = None, every_truncation: bool = False
) -> Dict[str, FuzzReport]:
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


# --- type confusion: every field of every record kind, as every JSON type -----
#
# Each case replaces one value of one record (a top-level member, or a member
# or element at any depth of the payload) by a value of another JSON type and
# recomputes the chain from that record on, so only the type is wrong.  The
# verifier must never raise, and where the agentloop/1 grammar fixes a type
# (the oracle below, written from docs/format.md section 2, not from the
# verifier) a value of another type must be a fault.

#: One value of each JSON type (integers both >= 0 and < 0, as counts differ).
JSON_VALUES: Tuple[Any, ...] = (None, True, False, 0, -3, 2.5, "", "x", [], [1], {}, {"a": 1})

Path = Tuple[Union[str, int], ...]


def _json_types(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "count" if value >= 0 else "integer"
    if isinstance(value, float):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]


_STRING, _COUNT, _OBJECT, _ARRAY, _BOOL = ({"string"}, {"count"}, {"object"}, {"array"}, {"boolean"})
#: (kind, path with "*" for any array index) -> the JSON types the grammar allows there.
GRAMMAR_TYPES: Dict[Tuple[str, Path], set] = {
    ("task", ("payload", "format")): _STRING,
    ("task", ("payload", "task")): _STRING,
    ("task", ("payload", "budgets")): _OBJECT,
    ("task", ("payload", "budgets", "max_steps")): _COUNT,
    ("task", ("payload", "budgets", "max_tokens")): _COUNT,
    ("task", ("payload", "budgets", "stop_sentinel")): {"string", "null"},
    ("task", ("payload", "budgets", "max_record_bytes")): _COUNT,
    ("task", ("payload", "tools")): _ARRAY,
    ("task", ("payload", "tools", "*")): _OBJECT,
    ("task", ("payload", "tools", "*", "name")): _STRING,
    ("task", ("payload", "tools", "*", "description")): _STRING,
    ("task", ("payload", "tools", "*", "parameters")): _OBJECT,
    ("task", ("payload", "model")): _OBJECT,
    ("assistant", ("payload", "step")): _COUNT,
    ("assistant", ("payload", "text")): _STRING,
    ("assistant", ("payload", "tool_calls")): _ARRAY,
    ("assistant", ("payload", "tool_calls", "*")): _OBJECT,
    ("assistant", ("payload", "tool_calls", "*", "id")): _STRING,
    ("assistant", ("payload", "tool_calls", "*", "name")): _STRING,
    ("assistant", ("payload", "tool_calls", "*", "arguments")): _OBJECT,  # null only with arguments_error
    ("assistant", ("payload", "tool_calls", "*", "arguments_error")): _STRING,
    ("assistant", ("payload", "tokens")): _COUNT,
    ("assistant", ("payload", "total_tokens")): _COUNT,
    ("assistant", ("payload", "usage")): _OBJECT,
    ("assistant", ("payload", "usage", "input_tokens")): _COUNT,
    ("assistant", ("payload", "usage", "output_tokens")): _COUNT,
    ("assistant", ("payload", "truncated")): _BOOL,
    ("assistant", ("payload", "provider_data")): _OBJECT,
    ("assistant", ("payload", "provider_data", "api")): _STRING,
    ("assistant", ("payload", "provider_data", "items")): _ARRAY,
    ("assistant", ("payload", "provider_data", "items", "*")): _OBJECT,
    ("tool", ("payload", "step")): _COUNT,
    ("tool", ("payload", "id")): _STRING,
    ("tool", ("payload", "name")): _STRING,
    ("tool", ("payload", "ok")): _BOOL,
    ("tool", ("payload", "error")): _STRING,
    ("stop", ("payload", "reason")): _STRING,
    ("stop", ("payload", "steps")): _COUNT,
    ("stop", ("payload", "tokens")): _COUNT,
    ("stop", ("payload", "detail")): _STRING,
}
for _kind in ("task", "assistant", "tool", "stop"):
    GRAMMAR_TYPES[(_kind, ("payload",))] = _OBJECT
    GRAMMAR_TYPES[(_kind, ("kind",))] = _STRING
    GRAMMAR_TYPES[(_kind, ("hash",))] = _STRING
    GRAMMAR_TYPES[(_kind, ("prev",))] = _STRING
    GRAMMAR_TYPES[(_kind, ("seq",))] = _COUNT


def _paths(value: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every member and element of ``value`` at any depth, parents before children."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield prefix + (key,)
        yield from _paths(child, prefix + (key,))


def _pattern(path: Path) -> Path:
    return tuple("*" if isinstance(step, int) else step for step in path)


def _line(record: Any) -> bytes:
    return canonical_bytes(record) + b"\n"


def _rechain(records: List[Any], start: int, keep_hash: bool) -> None:
    """Recompute ``hash`` from ``start`` on (and each later ``prev``), as a forger would."""
    for j in range(start, len(records)):
        if j > start:
            records[j]["prev"] = records[j - 1]["hash"]
        if not (j == start and keep_hash):
            body = {k: v for k, v in records[j].items() if k != "hash"}
            records[j]["hash"] = hashlib.sha256(canonical_bytes(body)).hexdigest()


def type_confusions(data: bytes) -> Iterator[Tuple[str, bytes, bool]]:
    """``(name, mutated bytes, must_fail)`` for every field of every record and every JSON type.

    ``must_fail`` is true when the grammar fixes that field's type and the
    new value's type is not allowed there.
    """
    records = [json.loads(line) for line in data.splitlines()]
    for index, record in enumerate(records):
        kind = record.get("kind")
        for path in list(_paths(record)):
            allowed = GRAMMAR_TYPES.get((kind, _pattern(path)))
            for value in JSON_VALUES:
                mutated = copy.deepcopy(records)
                target = mutated[index]
                for step in path[:-1]:
                    target = target[step]
                if _json_types(target[path[-1]]) == _json_types(value) and target[path[-1]] == value:
                    continue
                target[path[-1]] = value
                _rechain(mutated, index, keep_hash=path == ("hash",))
                must_fail = allowed is not None and _json_types(value) not in allowed
                if allowed is _COUNT and _json_types(value) == "integer":
                    must_fail = True
                name = "record %d %s %s := %s" % (index, kind, "/".join(map(str, path)), json.dumps(value))
                yield name, b"".join(_line(r) for r in mutated), must_fail


class _Described:
    """A scripted model that names itself, as an adapter does (so the task record has ``model``)."""

    def __init__(self, replies: List[ModelReply]) -> None:
        self.replies = iter(replies)

    def model_info(self) -> Dict[str, Any]:
        return {"provider": "openai", "model": "m", "host": "h", "params": {"temperature": 0}, "system": "s"}

    def __call__(self, messages: Any, manifest: Any) -> ModelReply:
        return next(self.replies)


def rich_transcript(folder: str) -> bytes:
    """A run that holds every optional member: model, max_record_bytes, usage,
    truncated, provider_data, arguments_error, a failed and a succeeding tool, a sentinel stop."""
    tools = [Tool("echo", "Echo.", {"type": "object", "properties": {"text": {"type": "string"}}}, lambda **kw: kw)]
    model = _Described(
        [
            ModelReply("one", [ToolCall("echo", {"text": "a"}), ToolCall("echo", {}, "", "not JSON")], Usage(3, 4)),
            ModelReply(
                "two",
                [ToolCall("nope", {"x": [1, {"y": None}]})],
                truncated=True,
                provider_data={
                    "api": "anthropic-messages",
                    "items": [{"type": "thinking", "thinking": "t", "signature": "s"}],
                },
            ),
            ModelReply("DONE"),
        ]
    )
    path = os.path.join(folder, "rich.jsonl")
    run(
        "rich",
        model,
        tools,
        transcript=path,
        max_steps=5,
        max_tokens=1000,
        stop_sentinel="DONE",
        max_record_bytes=512 * 1024,
        overwrite=True,
    )
    with open(path, "rb") as handle:
        return handle.read()


class TypeReport(FuzzReport):
    def __init__(self) -> None:
        super().__init__()
        self.missed: List[str] = []  # a wrong type the grammar fixes, accepted

    def summary(self) -> str:
        return "%s; %d wrong types accepted" % (super().summary(), len(self.missed))


def fuzz_types(data: bytes, folder: str, report: TypeReport, readers_every: int = 0) -> None:
    """Every type confusion of ``data`` through verify_file (and, every
    ``readers_every``-th case, through the other readers: report, checkpoint, repair)."""
    path = os.path.join(folder, "types.jsonl")
    for number, (name, mutated, must_fail) in enumerate(type_confusions(data)):
        report.cases += 1
        replace_file(path, mutated)
        start = time.perf_counter()
        try:
            verdict = verify_file(path)
        except BaseException as exc:  # the property under test: nothing escapes
            report.crashes.append("%s: verify_file raised %s: %s" % (name, type(exc).__name__, exc))
            continue
        elapsed = time.perf_counter() - start
        if elapsed > report.slowest[0]:
            report.slowest = (elapsed, name, len(mutated))
        if any(f.kind not in FAULT_KINDS for f in verdict.faults):
            report.crashes.append("%s: unknown fault kind" % (name,))
        if must_fail and verdict.ok:
            report.missed.append(name)
        if readers_every and number % readers_every == 0:
            for reader, problem in other_readers(path, folder):
                report.crashes.append("%s: %s raised %s" % (name, reader, problem))


def other_readers(path: str, folder: str) -> List[Tuple[str, str]]:
    """Run the library's other readers of a transcript on ``path``; return what raised unexpectedly.

    ``render_report`` and ``checkpoint_of`` promise
    never to raise on file content; ``repair`` may raise only
    ``AgentloopError`` (a refusal) or ``OSError``.
    """
    from agentloop.report import render_report
    from agentloop.transcript.anchor import checkpoint_of
    from agentloop.transcript.repair import repair

    problems: List[Tuple[str, str]] = []
    for reader, call in (
        ("render_report", lambda: render_report(path)),
        ("checkpoint_of", lambda: checkpoint_of(path)),
    ):
        try:
            call()
        except BaseException as exc:
            problems.append((reader, "%s: %s" % (type(exc).__name__, str(exc)[:200])))
    copy_path = os.path.join(folder, "repair-copy.jsonl")
    shutil.copyfile(path, copy_path)
    try:
        repair(copy_path)
    except (AgentloopError, OSError):
        pass
    except BaseException as exc:
        problems.append(("repair", "%s: %s" % (type(exc).__name__, str(exc)[:200])))
    for name in os.listdir(folder):
        if name.startswith("repair-copy.jsonl.torn-"):
            os.remove(os.path.join(folder, name))
    return problems
