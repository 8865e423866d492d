"""Big batches stay flat: what run_many and audit_batch keep per run, and that the streamed forms
(the spec list hashed one spec at a time, the ledger grown line by line, the ledger read line by line) give
exactly the bytes, roots and verdicts of the whole-list forms they replace."""

from __future__ import annotations

import concurrent.futures
import gc
import hashlib
import os
import pickle
import random
import tracemalloc
import unittest
from typing import Any, List, Tuple

from agentloop.batch import RunSpec, audit_batch, parse_ledger, run_many
from agentloop.batch.driver import BatchResult, RunEntry
from agentloop.batch.ledger import GrowingLedger, iter_ledger, ledger_bytes, ledger_root, line_at
from agentloop.batch.spec import spec_list_hash
from agentloop.canonical import MAX_DEPTH, canonical_bytes
from agentloop.errors import UnrecordableError
from agentloop.transcript.merkle import leaf_hash, root_of

from tests.support.helpers import TempDir

MODEL = "tests.support.batch_models:factory"
TOOLS = "tests.support.batch_models:tools"
KEY = b"batch-memory-key-0123456789abcd!"
#: Keys and strings that sort differently by code point and by UTF-16 unit, non-ASCII, escapes.
TEXTS = ["a", "b", "\u00e9", "\ue000", "\U0001f600", "z\u20ac", "", 'q"\\\n', "\u0007"]


def _value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(7 if depth < 4 else 4)
    if kind == 0:
        return rng.choice(TEXTS) + str(rng.randrange(100))
    if kind == 1:
        return rng.choice([0, -1, 7, 2**53 - 1, 0.5, 0.642857142857143, 1e-7, 1e21, -2.5e-05, 123456.789])
    if kind == 2:
        return rng.choice([True, False, None])
    if kind == 3:
        return rng.randrange(-1000, 1000)
    if kind == 4:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(TEXTS) + str(i): _value(rng, depth + 1) for i in range(rng.randrange(4))}


def _spec(rng: random.Random, index: int) -> RunSpec:
    options: dict = {}
    if rng.random() < 0.5:
        options["output_schema"] = _value(rng, 1)
    if rng.random() < 0.3:
        options["system"] = rng.choice(TEXTS) * rng.randrange(3)
    sentinel = rng.choice([None, "DONE", "\u00e9\U0001f600"])
    return RunSpec("r%d" % index, rng.choice(TEXTS) * rng.randrange(4), rng.randrange(10), 10**6, sentinel, options)


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"x": value}
    return value


class TestSpecListHash(unittest.TestCase):
    """The batch's name, hashed one spec at a time, against the RFC 8785 bytes of the whole list."""

    def whole(self, specs: List[RunSpec]) -> str:
        return hashlib.sha256(canonical_bytes([spec.to_json() for spec in specs])).hexdigest()

    def test_random_spec_lists_hash_as_the_whole_list_does(self) -> None:
        rng = random.Random(25)
        for case in range(300):
            specs = [_spec(rng, i) for i in range(rng.randrange(6))]
            self.assertEqual(spec_list_hash(specs), self.whole(specs), case)

    def test_the_empty_list(self) -> None:
        self.assertEqual(spec_list_hash([]), hashlib.sha256(b"[]").hexdigest())

    def test_a_spec_nested_too_deep_for_the_list_is_refused_alike(self) -> None:
        # the spec alone is recordable; inside the list its options sit two levels deeper
        deep = RunSpec("deep", "t", 1, 1, options={"output_schema": _nested(MAX_DEPTH - 2)})
        specs = [RunSpec("a", "t", 1, 1), deep]
        with self.assertRaises(UnrecordableError) as whole:
            self.whole(specs)
        with self.assertRaises(UnrecordableError) as streamed:
            spec_list_hash(specs)
        self.assertEqual(str(streamed.exception), str(whole.exception))
        self.assertIn("$[1].options.output_schema", str(streamed.exception))


class TestGrowingLedger(unittest.TestCase):
    """Lines put in any order come out in index order, with the root of the whole-list code."""

    def lines(self, rng: random.Random, n: int) -> List[bytes]:
        return [canonical_bytes({"name": "r%d" % i, "v": rng.choice(TEXTS) * rng.randrange(3)}) for i in range(n)]

    def test_any_arrival_order_gives_the_ledger_in_index_order(self) -> None:
        rng = random.Random(6962)
        for n in list(range(0, 20)) + [63, 64, 65, 300]:
            lines = self.lines(rng, n)
            skipped = {i for i in range(n) if rng.random() < 0.2}  # runs an earlier ledger certified: no line
            earlier = ledger_bytes({"e": i} for i in range(rng.randrange(5)))
            order = list(range(n))
            rng.shuffle(order)
            grown = GrowingLedger(earlier)
            for index in order:
                grown.put(index, b"" if index in skipped else lines[index])
            kept = [line for i, line in enumerate(lines) if i not in skipped]
            data = earlier + b"".join(line + b"\n" for line in kept)
            self.assertEqual(bytes(grown.data), data, n)
            self.assertEqual(grown.waiting, 0)
            self.assertEqual(grown.size, data.count(b"\n"))
            leaves = [leaf_hash(line) for line in data.split(b"\n")[:-1]]
            self.assertEqual(grown.root(), root_of(leaves).hex())
            self.assertEqual(ledger_root(data), root_of(leaves).hex())

    def test_a_line_waits_for_every_earlier_one(self) -> None:
        grown = GrowingLedger()
        grown.put(2, b"c")
        grown.put(1, b"b")
        self.assertEqual((bytes(grown.data), grown.waiting, grown.size), (b"", 2, 0))
        grown.put(0, b"a")
        self.assertEqual((bytes(grown.data), grown.waiting, grown.size), (b"a\nb\nc\n", 0, 3))

    def test_it_holds_the_lines_bytes_and_no_leaf_per_line(self) -> None:
        # what stays held after n lines put in order, per line beyond its bytes: the compact range is
        # O(log n) (measured: 0 bytes a line); a list of leaf hashes beside it would be 73 bytes a line
        line = canonical_bytes({"name": "r"})

        def held(n: int) -> int:
            gc.collect()
            tracemalloc.start()
            try:
                before = tracemalloc.get_traced_memory()[0]
                grown = GrowingLedger()
                for index in range(n):
                    grown.put(index, line)
                self.assertEqual((grown.size, grown.waiting), (n, 0))
                return tracemalloc.get_traced_memory()[0] - before
            finally:
                tracemalloc.stop()

        per_line = (held(6000) - held(2000)) / 4000 - (len(line) + 1)
        self.assertLess(per_line, 16, per_line)

    def test_ledger_root_streams_the_lines_the_split_gave(self) -> None:
        rng = random.Random(9162)
        for _ in range(200):
            data = bytes(rng.choice(b"ab\n") for _ in range(rng.randrange(40)))
            leaves = [leaf_hash(line) for line in data.split(b"\n")[:-1]]
            self.assertEqual(ledger_root(data), root_of(leaves).hex(), data)
            self.assertEqual(ledger_root(bytearray(data)), root_of(leaves).hex(), data)


class TestIterLedger(unittest.TestCase):
    def test_offsets_name_the_lines_parse_ledger_gives(self) -> None:
        origin = "agentloop/1/" + "a" * 64
        lines = [
            {"name": "x", "origin": origin, "status": "worker_error", "error": "E\u00e9"},
            {"name": "y", "origin": origin, "status": "rejected", "reason": "missing"},
            {"name": "x", "origin": origin, "status": "rejected", "reason": "bad_reply"},
        ]
        data = ledger_bytes(lines)
        pairs = list(iter_ledger(data))
        self.assertEqual([value for _, value in pairs], parse_ledger(data))
        self.assertEqual([line_at(data, offset) for offset, _ in pairs], lines)
        second = data.index(b"\n") + 1
        self.assertEqual([offset for offset, _ in pairs], [0, second, data.index(b"\n", second) + 1])


def _entries_alike(case: unittest.TestCase, left: Tuple[RunEntry, ...], right: Tuple[RunEntry, ...]) -> None:
    case.assertEqual(
        [(e.name, e.status, e.error, e.ledger_line()) for e in left],
        [(e.name, e.status, e.error, e.ledger_line()) for e in right],
    )


class TestBatchResult(unittest.TestCase):
    def test_built_from_entries_alone_it_still_names_the_failed_ones(self) -> None:
        entries = (RunEntry("a", "ok", "o", "a.jsonl"), RunEntry("b", "rejected", "o", "b.jsonl", error="missing"))
        result = BatchResult(entries, "origin", "manifest.jsonl", "root", b"note", None, None)
        self.assertEqual((result.failed, result.runs, result.ok), (entries[1:], 2, False))
        self.assertEqual(pickle.loads(pickle.dumps(result)), result)
        flat = BatchResult((), "origin", "manifest.jsonl", "root", b"note", None, None, None, entries[1:], 5)
        self.assertEqual((flat.failed, flat.runs, flat.ok), (entries[1:], 5, False))


class TestKeepEntries(TempDir):
    """keep_entries=False: the same files, byte for byte; only the result holds less."""

    def batch(self, folder: str, spec_list: List[RunSpec], **kwargs: Any) -> Any:
        out = self.path(folder)
        os.makedirs(out, exist_ok=True)
        for spec in spec_list[3::5]:  # a different file already there: a worker_error (TranscriptExistsError)
            with open(os.path.join(out, spec.name + ".jsonl"), "wb") as handle:
                handle.write(b"not this run\n")
        seen: List[RunEntry] = []
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            result = run_many(
                spec_list,
                model=MODEL,
                tools=TOOLS,
                out_dir=out,
                executor=pool,
                checkpoint=os.path.join(out, "manifest.checkpoint"),
                key=KEY,
                progress=lambda entry, done, total: seen.append(entry),
                **kwargs,
            )
        return result, seen

    def files(self, folder: str) -> List[Tuple[str, bytes]]:
        out = self.path(folder)
        found = []
        for name in sorted(os.listdir(out)):
            with open(os.path.join(out, name), "rb") as handle:
                data = handle.read()
            found.append((name, data.replace(out.encode(), b"OUT")))  # the side log names the folder
        return found

    def test_the_same_files_and_failures_without_the_entries(self) -> None:
        spec_list = [RunSpec("run-%02d" % i, "task %d" % i, 1 + i % 4, 10000) for i in range(23)]
        kept, kept_seen = self.batch("kept", spec_list)
        flat, flat_seen = self.batch("flat", spec_list, keep_entries=False)
        self.assertEqual(self.files("flat"), self.files("kept"))
        self.assertTrue(any(name == "manifest.errors.log" for name, _ in self.files("flat")))
        self.assertEqual((len(kept.entries), kept.runs), (23, 23))
        self.assertEqual((flat.entries, flat.runs, flat.ok, kept.ok), ((), 23, False, False))
        self.assertEqual(len(flat.failed), 4)
        _entries_alike(self, flat.failed, kept.failed)
        self.assertEqual(
            [e.message.replace(self.path("flat"), "OUT") for e in flat.failed],
            [e.message.replace(self.path("kept"), "OUT") for e in kept.failed],
        )
        self.assertEqual((flat.root, flat.checkpoint), (kept.root, kept.checkpoint))
        self.assertEqual(sorted(e.name for e in flat_seen), sorted(e.name for e in kept_seen))
        self.assertEqual(len(flat_seen), 23)

    def test_resumed_without_entries_the_ledger_grows_as_with_them(self) -> None:
        spec_list = [RunSpec("run-%02d" % i, "task %d" % i, 3, 10000) for i in range(12)]
        for folder, keep in (("kept", True), ("flat", False)):
            first, _ = self.batch(folder, spec_list, keep_entries=keep)
            for entry in first.failed:
                os.unlink(os.path.join(self.path(folder), entry.name + ".jsonl"))
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                again = run_many(
                    spec_list,
                    model=MODEL,
                    tools=TOOLS,
                    out_dir=self.path(folder),
                    executor=pool,
                    checkpoint=os.path.join(self.path(folder), "manifest.checkpoint"),
                    key=KEY,
                    resume=True,
                    keep_entries=keep,
                )
            self.assertTrue(again.ok and again.extends, again.failed)
            self.assertEqual(again.runs, 12)
        self.assertEqual(self.files("flat"), self.files("kept"))


class TestFlat(TempDir):
    """What the driver and the audit keep grows with the runs by about the ledger's bytes, not by objects.

    tracemalloc counts every Python allocation: the peak while ``run_many``
    (``keep_entries=False``) or ``audit_batch`` runs, less what was held
    before it (the specs, the list of files), at two sizes, after a first
    batch that pays for what is loaded and cached once (measured first, that
    cost made the growth per run look up to 600 bytes smaller); the growth per
    run must stay under the ledger's bytes per run plus 160 bytes for the
    driver (measured: 48 to 100 on Python 3.8-3.13) and 400 for the audit (measured: 213 to 268; it holds
    each run's name twice, from its line and from its file, the line's
    offset and the verdict).  Keeping every entry (measured: 1,200 bytes a
    run beyond the ledger) or the parsed ledger (2,000: the audit before this change) fails this.
    """

    def peak(self, call: Any) -> int:
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            call()
            return tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()

    def test_run_many_and_audit_grow_by_the_ledger(self) -> None:
        figures = {}
        for n in (20, 150, 450):  # the first batch pays what is loaded and cached once: it is not measured
            spec_list = [RunSpec("run-%04d" % i, "task %d" % i, 3, 10000) for i in range(n)]
            out = self.path("n%d" % n)
            result: List[Any] = []
            peak = self.peak(
                lambda: result.append(run_many(spec_list, model=MODEL, tools=TOOLS, out_dir=out, keep_entries=False))
            )
            ledger = os.path.getsize(result[0].manifest)
            files = [os.path.join(out, "run-%04d.jsonl" % i) for i in range(n)]
            audit: List[Any] = []
            audited = self.peak(lambda: audit.append(audit_batch(files, result[0].manifest)))
            self.assertTrue(result[0].ok and audit[0].ok)
            figures[n] = (peak, audited, ledger)
        runs = 450 - 150
        ledger_per_run = (figures[450][2] - figures[150][2]) / runs
        driver = (figures[450][0] - figures[150][0]) / runs
        audited = (figures[450][1] - figures[150][1]) / runs
        self.assertLess(driver, ledger_per_run + 160, (driver, ledger_per_run))
        self.assertLess(audited, ledger_per_run + 400, (audited, ledger_per_run))


if __name__ == "__main__":
    unittest.main()
