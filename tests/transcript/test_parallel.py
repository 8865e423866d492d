"""verify_file(workers=N) against one pass: the same verdict, faults, indexes, lines and details.

Every vector of tests/vectors/transcript, with its own verify options, and
mutations of a realistic transcript (bytes flipped, lines deleted,
duplicated, swapped or inserted, a torn tail, and grammar faults in a chain
kept intact by re-hashing it, so that a part's guessed state is wrong) are
verified in one pass and cut into parts (2 to 7, at every kind of
boundary); the results must be equal, field for field.  The parts run on a
thread pool here (the join is what is tested: the parts are pure
functions of the file's bytes), and on real processes in one test.
"""

from __future__ import annotations

import concurrent.futures
import glob
import hashlib
import json
import os
import random
import shutil
import tempfile
import unittest
from typing import Any, Callable, Dict, Iterator, List, Tuple
from unittest import mock

from agentloop import FAULT_KINDS, TranscriptWriter, VerifyResult, verify_file
from agentloop.canonical import canonical_bytes
from agentloop.transcript import parallel

VECTORS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "transcript")
WORDS = ["naïve", "café", "東京", "данные", "😀", "ok", "score"]


def _threads(workers: int, fork_if_alone: bool = False) -> concurrent.futures.Executor:
    return concurrent.futures.ThreadPoolExecutor(workers)


def _entries(rng: random.Random, turns: int = 14) -> List[Tuple[str, Dict[str, Any]]]:
    """A realistic run: turns of 0-3 calls (floats, non-ASCII, nesting, failures), then a stop."""
    out: List[Tuple[str, Dict[str, Any]]] = [
        (
            "task",
            {
                "format": "agentloop/1",
                "task": "bench é",
                "budgets": {"max_steps": 100, "max_tokens": 10**6, "stop_sentinel": None},
                "tools": [{"name": "search", "description": "d", "parameters": {"type": "object"}}],
            },
        )
    ]
    total = 0
    for step in range(1, turns + 1):
        tokens = rng.randint(5, 90)
        total += tokens
        calls = [
            {"id": "c%d_%d" % (step, i), "name": "search", "arguments": {"q": rng.choice(WORDS)}}
            for i in range(rng.randint(0 if step == turns else 1, 3))
        ]
        out.append(
            (
                "assistant",
                {
                    "step": step,
                    "text": " ".join(rng.sample(WORDS, 3)),
                    "tool_calls": calls,
                    "tokens": tokens,
                    "total_tokens": total,
                },
            )
        )
        for call in calls:
            if rng.random() < 0.8:
                value = {
                    "hits": [
                        {"t": rng.choice(WORDS), "score": rng.randrange(1, 14) / 14, "n": {"a": [1, 2.5]}}
                        for _ in range(rng.randint(0, 3))
                    ]
                }
                out.append(("tool", {"step": step, "id": call["id"], "name": "search", "ok": True, "value": value}))
            else:
                out.append(("tool", {"step": step, "id": call["id"], "name": "search", "ok": False, "error": "boom é"}))
    out.append(("stop", {"reason": "no_tool_calls", "steps": turns, "tokens": total, "detail": ""}))
    return out


def _chained(entries: List[Tuple[str, Any]]) -> bytes:
    """The entries as chained canonical lines (whatever they hold: no writer checks)."""
    lines, prev = [], "0" * 64
    for seq, (kind, payload) in enumerate(entries):
        body = canonical_bytes({"kind": kind, "payload": payload, "prev": prev, "seq": seq})
        digest = hashlib.sha256(body).hexdigest()
        lines.append(b'{"hash":"' + digest.encode() + b'",' + body[1:] + b"\n")
        prev = digest
    return b"".join(lines)


def _mutations(entries: List[Tuple[str, Dict[str, Any]]], rng: random.Random) -> Iterator[Tuple[str, bytes]]:
    valid = _chained(entries)
    lines = valid.splitlines(keepends=True)
    yield "valid", valid
    for _ in range(6):
        at = rng.randrange(len(valid))
        yield "byte %d flipped" % at, valid[:at] + bytes([valid[at] ^ 0x01]) + valid[at + 1 :]
    for j in sorted(rng.sample(range(1, len(lines)), 5)):
        yield "line %d deleted" % j, b"".join(lines[:j] + lines[j + 1 :])
        yield "line %d twice" % j, b"".join(lines[: j + 1] + lines[j:])
        yield "lines %d, %d swapped" % (j - 1, j), b"".join(lines[: j - 1] + [lines[j], lines[j - 1]] + lines[j + 1 :])
        yield "x line before %d" % j, b"".join(lines[:j] + [b"x\n"] + lines[j:])
        yield "[] before %d" % j, b"".join(lines[:j] + [b"[]\n"] + lines[j:])
    for j in sorted(rng.sample(range(1, len(lines)), 3)):
        yield "line %d with a space" % j, b"".join(lines[:j] + [lines[j].replace(b",", b", ", 1)] + lines[j + 1 :])
        record = json.loads(lines[j])
        del record["seq"]
        yield "line %d without seq" % j, b"".join(lines[:j] + [json.dumps(record).encode() + b"\n"] + lines[j + 1 :])
    yield "torn tail", valid[:-7]
    yield "no record at all", b"x\n" * 9
    yield "no record, then records", b"x\n" * 9 + valid
    yield "bad lines everywhere", b"".join(line + (b"nope\n" if i % 3 == 0 else b"") for i, line in enumerate(lines))
    # Grammar faults in an intact chain: the parts after them guess a state one pass does not have.
    assistants = [i for i, (kind, _) in enumerate(entries) if kind == "assistant"]
    tools = [i for i, (kind, _) in enumerate(entries) if kind == "tool"]
    for i in rng.sample(assistants, 3):
        bumped = [(k, dict(p)) for k, p in entries]
        bumped[i][1]["total_tokens"] += 1
        yield "total_tokens of record %d off by one (re-chained)" % i, _chained(bumped)
        stepped = [(k, dict(p)) for k, p in entries]
        stepped[i][1]["step"] += 1
        yield "step of record %d off by one (re-chained)" % i, _chained(stepped)
        stopped = entries[:i] + [("stop", {"reason": "sentinel", "steps": 0, "tokens": 0, "detail": ""})] + entries[i:]
        yield "a stop before record %d (re-chained)" % i, _chained(stopped)
    for i in rng.sample(tools, 3):
        yield "tool record %d dropped (re-chained)" % i, _chained(entries[:i] + entries[i + 1 :])
    yield "no task (re-chained)", _chained(entries[1:])
    yield "all tool records dropped (re-chained)", _chained([e for e in entries if e[0] != "tool"])


def _options(data: bytes) -> List[Dict[str, Any]]:
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    head = last[9:73].decode("ascii", "replace")
    return [
        {},
        {"max_faults": 3},
        {"max_faults": 1},
        {"require_complete": True, "expect_count": 20, "expect_head": head},
    ]


class PartsOnThreads(unittest.TestCase):
    """Every file cut (parts of at least 1 byte), the parts judged on threads, and the parts that
    ``joined`` as judged and those judged ``again`` counted."""

    def setUp(self) -> None:
        self.folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.folder, True)
        self.joined = self.again = 0
        take, again = parallel._Join.take, parallel._Join.again

        def counted_take(join: parallel._Join, k: int, part: Any, later: int) -> None:
            before = self.again
            take(join, k, part, later)
            self.joined += k > 0 and self.again == before

        def counted_again(join: parallel._Join, k: int, later: int) -> None:
            self.again += 1
            again(join, k, later)

        for name, value in (
            ("MIN_PART_BYTES", 1),
            ("process_pool", _threads),
            ("_Join.take", counted_take),
            ("_Join.again", counted_again),
        ):
            owner, attribute = (parallel._Join, name[6:]) if name.startswith("_Join.") else (parallel, name)
            patcher = mock.patch.object(owner, attribute, value)
            patcher.start()
            self.addCleanup(patcher.stop)


class TestOneFileAcrossWorkers(PartsOnThreads):
    def same(self, path: str, what: str, **options: Any) -> VerifyResult:
        one = verify_file(path, **options)
        for workers in range(2, 8):
            with self.subTest(what=what, workers=workers, options=options):
                self.assertEqual(verify_file(path, workers=workers, **options), one)
        return one

    def test_every_vector(self) -> None:
        kinds = set()
        vectors = sorted(glob.glob(os.path.join(VECTORS, "*.expect.json")))
        self.assertGreater(len(vectors), 30)
        for name in vectors:
            with open(name, encoding="utf-8") as handle:
                expect = json.load(handle)
            how = {
                k: v
                for k, v in expect["verify"].items()
                if k in ("expect_count", "expect_head", "require_complete", "max_faults")
            }
            path = os.path.join(VECTORS, expect["transcript"])
            result = self.same(path, expect["transcript"], **how)
            kinds.update(f.kind for f in result.faults)
        anchors = {"truncated", "anchor_mismatch", "unanchored_tail", "bad_signature", "anchor_malformed"}
        self.assertEqual(kinds, set(FAULT_KINDS) - anchors)  # every kind verify_file finds
        self.assertGreater(self.joined, 20)  # parts whose guess agreed, joined without being judged again

    def test_mutated_transcripts(self) -> None:
        rng = random.Random(25)
        entries = _entries(rng)
        kinds = set()
        for what, data in _mutations(entries, rng):
            path = os.path.join(self.folder, "t.jsonl")
            with open(path, "wb") as handle:
                handle.write(data)
            for options in _options(data):
                kinds.update(f.kind for f in self.same(path, what, **options).faults)
        self.assertGreaterEqual(
            kinds,
            {
                "bad_json",
                "bad_payload",
                "seq_gap",
                "prev_mismatch",
                "hash_mismatch",
                "not_canonical",
                "unexpected_kind",
                "not_an_object",
                "too_many_faults",
                "count_mismatch",
                "head_mismatch",
                "incomplete",
                "unknown_format",
                "missing_fields",
            },
        )
        self.assertGreater(self.joined, 500)
        self.assertGreater(self.again, 100)  # and parts judged again, from the true state

    def test_a_file_written_by_the_writer(self) -> None:
        path = os.path.join(self.folder, "w.jsonl")
        with TranscriptWriter(path) as out:
            for kind, payload in _entries(random.Random(1), turns=40):
                out.append(kind, payload)
        self.assertTrue(self.same(path, "written").ok)

    def test_the_parts_run_in_processes(self) -> None:
        mock.patch.stopall()  # the real pool
        with mock.patch.object(parallel, "MIN_PART_BYTES", 1):
            path = os.path.join(self.folder, "p.jsonl")
            with open(path, "wb") as handle:
                handle.write(_chained(_entries(random.Random(2), turns=30)))
            pools: List[concurrent.futures.Executor] = []
            real: Callable[..., concurrent.futures.Executor] = parallel.process_pool

            sizes: List[int] = []

            def spy(workers: int, fork_if_alone: bool = False) -> concurrent.futures.Executor:
                pools.append(real(workers, fork_if_alone=fork_if_alone))
                sizes.append(workers)
                return pools[-1]

            with mock.patch.object(parallel, "process_pool", spy):
                self.assertEqual(verify_file(path, workers=3), verify_file(path))
            self.assertEqual([type(p) for p in pools], [concurrent.futures.ProcessPoolExecutor])
            self.assertEqual(sizes, [3])  # a pool of `workers` processes, taking the parts in turn
            self.assertEqual(len(parallel._cuts(path, os.path.getsize(path), 3)), 3)
            self.assertEqual(len(parallel._cuts(path, os.path.getsize(path), 3 * parallel.PARTS_PER_WORKER)), 12)

    def test_workers_must_be_a_positive_int(self) -> None:
        for bad in (0, -1, True, 1.5, "2"):
            with self.subTest(workers=bad), self.assertRaises(ValueError):
                verify_file(os.path.join(VECTORS, "valid.jsonl"), workers=bad)  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
