"""verify_file(workers=N) against one pass on random transcripts, random mutations and random cuts.

A differential test of :mod:`agentloop.transcript.parallel`: random runs
(approval gates, signers, predicate outcomes, floats, non-ASCII), broken by
random grammar changes (re-chained, so the chain stays intact and a part's
guessed state is wrong) and random byte changes (lines deleted, doubled,
swapped, joined, torn, too long, too deep, forged to look like an assistant
record), verified with random options (``max_faults`` from 1, so
``too_many_faults`` falls in any part; ``require_complete``; a small
``max_line_bytes``).  Each file is cut two ways and must give exactly the
one-pass VerifyResult (faults, indexes, lines, details, count, head) for
1 to 8 workers:

* at random line starts, any line (the join must be right wherever a part
  starts: a part that does not start with an assistant record is judged
  again, from the true state);
* by the real cutter, with parts just over ``MIN_PART_BYTES`` and a short
  search for a line that starts an assistant record.

The parts run on a thread pool (the join is what is tested; the parts are
pure functions of the file's bytes; tests/transcript/test_parallel.py runs
real processes).  ``AGENTLOOP_PARALLEL_CASES=N`` runs N random files
instead of the default 120 (e.g. 5000: a few minutes).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import unittest
from typing import Any, Callable, Dict, List, Tuple
from unittest import mock

from agentloop import FAULT_KINDS, VerifyResult, verify_file
from agentloop.canonical import canonical_bytes
from agentloop.transcript import parallel

from .test_parallel import PartsOnThreads

CASES = int(os.environ.get("AGENTLOOP_PARALLEL_CASES", "120"))
SEED = 2525
WORDS = ["naïve", "café", "東京", "😀", "ok", "score", "\ue000"]
Entry = Tuple[str, Dict[str, Any]]


def _task(rng: random.Random) -> Dict[str, Any]:
    budgets = {"max_steps": 100, "max_tokens": 10**6, "stop_sentinel": None}
    tools = [{"name": name, "description": "d", "parameters": {"type": "object"}} for name in ("search", "pay", "rm")]
    task: Dict[str, Any] = {"format": "agentloop/1", "task": "t é", "budgets": budgets, "tools": tools}
    if rng.random() < 0.6:
        task["approval"] = {"rm": "always", "pay": "predicate"}
        if rng.random() < 0.7:
            task["predicate_outcomes"] = True
        if rng.random() < 0.5:
            task["approval_signer"] = {"name": "alice", "key_id": "0123abcd"}
    return task


def _result(rng: random.Random, task: Dict[str, Any], step: int, call: Dict[str, Any]) -> Dict[str, Any]:
    payload: Dict[str, Any] = {"step": step, "id": call["id"], "name": call["name"]}
    if rng.random() < 0.8:
        payload.update(
            ok=True,
            value={
                "hits": [{"t": rng.choice(WORDS), "score": rng.randrange(1, 14) / 14} for _ in range(rng.randint(0, 3))]
            },
        )
    else:
        payload.update(ok=False, error="boom é")
    rule = task.get("approval", {}).get(call["name"])
    if rule == "always" or rule == "predicate" and rng.random() < 0.5:
        payload["approval"] = {"decision": "approve", "by": "alice"}
        if "approval_signer" in task:
            payload["approval"]["note"] = "n"
    elif rule == "predicate" and task.get("predicate_outcomes"):
        payload["gated"] = False
    return payload


def _entries(rng: random.Random) -> List[Entry]:
    """A valid run: turns of 0-3 calls, gated or not, then a stop."""
    task = _task(rng)
    out: List[Entry] = [("task", task)]
    total, turns = 0, rng.randint(1, 12)
    for step in range(1, turns + 1):
        tokens = rng.randint(0, 90)
        total += tokens
        calls = [
            {
                "id": "c%d_%d" % (step, i),
                "name": rng.choice(["search", "pay", "rm"]),
                "arguments": {"q": rng.choice(WORDS), "x": rng.random()},
            }
            for i in range(rng.randint(0, 3))
        ]
        turn = {
            "step": step,
            "text": " ".join(rng.sample(WORDS, 3)),
            "tool_calls": calls,
            "tokens": tokens,
            "total_tokens": total,
        }
        if rng.random() < 0.3:
            turn["usage"] = {"input_tokens": tokens, "output_tokens": 0}
        out.append(("assistant", turn))
        out += [("tool", _result(rng, task, step, call)) for call in calls]
    out.append(("stop", {"reason": "no_tool_calls", "steps": turns, "tokens": total, "detail": ""}))
    return out


def _chained(entries: List[Entry]) -> List[bytes]:
    lines, prev = [], "0" * 64
    for seq, (kind, payload) in enumerate(entries):
        body = canonical_bytes({"kind": kind, "payload": payload, "prev": prev, "seq": seq})
        digest = hashlib.sha256(body).hexdigest()
        lines.append(b'{"hash":"' + digest.encode() + b'",' + body[1:] + b"\n")
        prev = digest
    return lines


def _gate_fault(entries: List[Entry], rng: random.Random) -> bool:
    """A gated call's decision taken away or forged: only a part that knows the task record's gates sees it."""
    tools = [at for at, (kind, payload) in enumerate(entries) if kind == "tool" and payload["name"] in ("rm", "pay")]
    if not tools:
        return False
    payload = entries[rng.choice(tools)][1]
    if rng.random() < 0.5:
        payload.pop("approval", None)
        payload.pop("gated", None)
    else:
        payload["approval"] = {"decision": "approve", "by": "mallory"}
    return True


def _regrammared(entries: List[Entry], rng: random.Random) -> List[Entry]:
    """One grammar fault (the caller re-chains, so the chain stays intact)."""
    entries = [(kind, json.loads(json.dumps(payload))) for kind, payload in entries]
    change = rng.randrange(8)
    if change == 6 or "approval" in entries[0][1] and rng.random() < 0.3:
        if _gate_fault(entries, rng):
            return entries
    of = {kind: [at for at, (k, _) in enumerate(entries) if k == kind] for kind in ("assistant", "tool")}
    i = rng.choice(
        of["tool"] if change == 2 and of["tool"] else of["assistant"] if change in (0, 3, 7) else range(1, len(entries))
    )
    payload = entries[i][1]
    steps = sum(k == "assistant" for k, _ in entries[:i])
    total = next((p["total_tokens"] for k, p in reversed(entries[:i]) if k == "assistant"), 0)
    if change == 0:
        payload[rng.choice(["total_tokens", "step"])] += rng.choice([1, -1])
    elif change == 1:
        entries.insert(i, ("stop", {"reason": "sentinel", "steps": steps, "tokens": total, "detail": ""}))
    elif change == 2:  # a call of the turn left unanswered (or, without tool records, an assistant record dropped)
        del entries[i]
    elif change == 3:
        payload["tool_calls"] = payload["tool_calls"][:-1] or [{"id": "z", "name": "search", "arguments": {}}]
    elif change == 4:
        entries[0][1]["approval"] = {"search": "always"}
    elif change == 5:
        entries.insert(i, ("task", entries[0][1]))
    else:  # before a turn, a tool record answering no call, with the members a guess reads (the grammar ignores them)
        entries.insert(
            i,
            (
                "tool",
                {
                    "step": steps + 1,
                    "id": "zz",
                    "name": "search",
                    "ok": True,
                    "value": 1,
                    "tokens": 0,
                    "total_tokens": total,
                },
            ),
        )
    return entries


_JUNK = [b"x\n", b"[]\n", b"{}\n", b"\n", b"1\n", b'{"hash":1}\n', b"NaN\n", b"\xff\n", b"[" * 600 + b"]" * 600 + b"\n"]


def _flipped(line: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(line)) if line else 0
    return line[:at] + bytes([line[at] ^ rng.choice([1, 2, 32])]) + line[at + 1 :] if line else line


def _rehashed(line: bytes, rng: random.Random) -> bytes:
    """Another hash: the next record's prev names the old one."""
    return line[:9] + hashlib.sha256(line).hexdigest().encode() + line[73:] if line.startswith(b'{"hash":"') else line


#: Changes to one line: each gives the line's replacement (none, one or more lines).
_LINE_CHANGES: List[Callable[[bytes, random.Random], List[bytes]]] = [
    lambda line, rng: [],  # deleted
    lambda line, rng: [line, line],  # twice
    lambda line, rng: [rng.choice(_JUNK), line],  # a line that is no record (or too deep) before it
    lambda line, rng: [_flipped(line, rng)],
    lambda line, rng: [line.replace(b",", b", ", 1)],  # not canonical
    # looks like an assistant record to the cutter; parses as a tool record
    lambda line, rng: [
        line.replace(
            b'"kind":"tool","payload":{',
            b'"kind":"assistant","payload":{"step":1,"tokens":0,"total_tokens":0},"kind":"tool","payload":{',
            1,
        )
    ],
    lambda line, rng: [b"x" * rng.randint(300, 700) + b"\n"],  # longer than a small max_line_bytes
    lambda line, rng: [line.rstrip(b"\n")],  # two lines become one
    lambda line, rng: [line.replace(b'"seq":', b'"more":1,"seq":', 1)],  # unexpected_fields
    lambda line, rng: [line.replace(b'"step":', b'"big":1152921504606846976,"step":', 1)],  # unserialisable
    lambda line, rng: [_rehashed(line, rng)],
    lambda line, rng: [line.replace(b'"seq":', b'"seq":1', 1)],  # the records after it are expected elsewhere
]


def _broken(lines: List[bytes], rng: random.Random) -> List[bytes]:
    """One to three byte-level changes: to one line, two lines swapped, or a torn tail."""
    lines = list(lines)
    for _ in range(rng.randint(1, 3)):
        j, change = rng.randrange(len(lines)), rng.randrange(len(_LINE_CHANGES) + 2)
        if change < len(_LINE_CHANGES):
            lines[j : j + 1] = _LINE_CHANGES[change](lines[j], rng)
        elif change == len(_LINE_CHANGES) and j:
            lines[j - 1], lines[j] = lines[j], lines[j - 1]
        elif lines:
            data = b"".join(lines)
            return [data[: rng.randrange(max(1, len(data) - 400), len(data) + 1)]]  # a torn tail
        if not lines:
            lines = [b"\n"]
    return lines


def _file(rng: random.Random) -> bytes:
    entries = _entries(rng)
    for _ in range(rng.choice([0, 0, 1, 2])):
        entries = _regrammared(entries, rng)
    lines = _chained(entries)
    if rng.random() < 0.75:
        lines = _broken(lines, rng)
    if rng.random() < 0.2:  # record 0 is not on the first line, whose gates a part would read
        lines.insert(0, rng.choice(_JUNK))
    return b"".join(lines)


def _options(rng: random.Random) -> Dict[str, Any]:
    return rng.choice(
        [
            {},
            {"max_faults": rng.randint(1, 4)},
            {"require_complete": True},
            {"max_line_bytes": 500},
            {"max_faults": rng.randint(1, 3), "max_line_bytes": 400, "require_complete": True},
        ]
    )


def _line_starts(data: bytes) -> List[int]:
    starts, at = [], 0
    for line in data.splitlines(keepends=True)[:-1]:
        at += len(line)
        starts.append(at)
    return starts


class TestRandomCuts(PartsOnThreads):
    def setUp(self) -> None:
        super().setUp()
        self.path = os.path.join(self.folder, "t.jsonl")

    def write(self, data: bytes) -> None:
        with open(self.path, "wb") as handle:
            handle.write(data)

    def assertSame(self, got: VerifyResult, one: VerifyResult, what: str) -> None:
        if got != one:  # the first difference, readably
            self.assertEqual((got.faults, got.count, got.head), (one.faults, one.count, one.head), what)
            self.assertEqual(got, one, what)

    def test_cuts_at_random_line_starts(self) -> None:
        rng = random.Random(SEED)
        kinds = set()
        for case in range(CASES):
            data, options = _file(rng), _options(rng)
            self.write(data)
            one = verify_file(self.path, **options)
            kinds.update(f.kind for f in one.faults)
            self.assertEqual(verify_file(self.path, workers=1, **options), one)
            starts = _line_starts(data)
            for workers in range(2, 9):
                cuts = [0] + sorted(rng.sample(starts, min(len(starts), workers - 1)))
                with mock.patch.object(parallel, "_cuts", lambda path, size, n: cuts):
                    self.assertSame(
                        verify_file(self.path, workers=workers, **options),
                        one,
                        "case %d, %r, cuts %r" % (case, options, cuts),
                    )
        anchors = {"truncated", "anchor_mismatch", "unanchored_tail", "bad_signature", "anchor_malformed"}
        wanted = set(FAULT_KINDS) - anchors - {"unreadable", "count_mismatch", "head_mismatch", "no_records"}
        self.assertGreaterEqual(kinds, wanted)
        self.assertGreater(self.joined, CASES * 2)  # parts whose guess agreed, joined as judged
        self.assertGreater(self.again, CASES)  # parts judged again, from the true state

    def test_the_real_cutter_on_files_just_over_the_part_size(self) -> None:
        rng = random.Random(SEED + 1)
        cut = many = 0
        for case in range(max(CASES // 2, 1)):
            data, options = _file(rng), _options(rng)
            self.write(data)
            one = verify_file(self.path, **options)
            for workers in range(2, 9):
                # the file just over workers parts, or just over the PARTS_PER_WORKER parts each worker may take
                parts = workers * rng.choice([1, parallel.PARTS_PER_WORKER])
                part = max(1, len(data) // parts - rng.randrange(0, 64))
                with mock.patch.object(parallel, "MIN_PART_BYTES", part), mock.patch.object(
                    parallel, "SEARCH_BYTES", rng.choice([200, 1000, 1 << 20])
                ):
                    starts = parallel._cuts(self.path, len(data), workers * parallel.PARTS_PER_WORKER)
                    cut += len(starts) > 1
                    many += len(starts) > workers
                    self.assertSame(
                        verify_file(self.path, workers=workers, **options),
                        one,
                        "case %d, %r, part %d" % (case, options, part),
                    )
        self.assertGreater(cut, CASES)
        self.assertGreater(many, CASES // 4)  # more parts than workers: a process takes several


if __name__ == "__main__":
    unittest.main()
