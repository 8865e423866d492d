"""The hash-chained transcript: writer, verify_records, verify_file."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import tracemalloc
import unittest
from typing import Any, Dict, List, Set, Tuple
from unittest import mock

from agentloop import FAULT_KINDS, Fault, TranscriptWriter, verify_file, verify_records
from agentloop.canonical import canonical_bytes
from agentloop.errors import RunConfigError, TranscriptExistsError, UnrecordableError
from agentloop.transcript import writer as writer_module
from agentloop.transcript.format import GENESIS

from tests.support.helpers import TempDir, read_lines, read_records
from tests.support.runs import Run
from tests.transcript.test_merkle import mth

Faults = Set[Tuple[Any, str]]


def kinds_at(faults: List[Fault]) -> Faults:
    return {(f.index, f.kind) for f in faults}


def rehash(record: Dict[str, Any]) -> Dict[str, Any]:
    body = {k: v for k, v in record.items() if k != "hash"}
    return dict(record, hash=hashlib.sha256(canonical_bytes(body)).hexdigest())


class TestWriter(TempDir):
    def test_known_answer_for_a_first_record(self) -> None:
        # Recompute: sha256(b'{"kind":"task","payload":{"format":"agentloop/1"},"prev":"' + b"0" * 64 + b'","seq":0}')
        with TranscriptWriter(self.path()) as out:
            digest = out.append("task", {"format": "agentloop/1"})
        expected = hashlib.sha256(
            b'{"kind":"task","payload":{"format":"agentloop/1"},"prev":"' + b"0" * 64 + b'","seq":0}'
        ).hexdigest()
        self.assertEqual(digest, expected)
        self.assertEqual(digest, "ff6674e3edf1ebf2a5e91de56c684ddd0ff2a08e09f2295bf84fb856d517c7d7")
        with open(self.path(), "rb") as handle:
            self.assertEqual(
                handle.read(),
                b'{"hash":"'
                + expected.encode()
                + b'","kind":"task","payload":{"format":"agentloop/1"},"prev":"'
                + b"0" * 64
                + b'","seq":0}\n',
            )

    def test_short_writes_write_each_line_whole_and_the_root_stays_the_tree_of_the_lines(self) -> None:
        # os.write may write less than asked (a signal, a full pipe): the writer writes the rest
        records = [("task", {"format": "agentloop/1", "task": "t"})] + [("tool", {"n": n}) for n in range(5)]
        real, calls = os.write, []

        def short(fd: int, data: Any) -> int:
            calls.append(len(data))
            return real(fd, bytes(data[:7]))

        with TranscriptWriter(self.path("whole.jsonl")) as whole:
            for kind, payload in records:
                whole.append(kind, payload)
        with mock.patch.object(writer_module.os, "write", short), TranscriptWriter(self.path("short.jsonl")) as out:
            for kind, payload in records:
                out.append(kind, payload)
            root = out.root
        lines = read_lines(self.path("whole.jsonl"))
        self.assertEqual(read_lines(self.path("short.jsonl")), lines)
        self.assertEqual(root, mth([line[:-1] for line in lines]).hex())  # RFC 6962 2.1.1, by its own reading
        self.assertGreater(len(calls), sum(len(line) for line in lines) // 7)

    def test_a_continuing_writer_ends_where_one_writer_would(self) -> None:
        records = [
            ("task", {"format": "agentloop/1", "task": "t"}),
            ("assistant", {"text": "a"}),
            ("stop", {"reason": "x"}),
        ]
        with TranscriptWriter(self.path("whole.jsonl")) as whole:
            for kind, payload in records:
                whole.append(kind, payload)
            root = whole.root
        lines = read_lines(self.path("whole.jsonl"))
        for cut in (1, 2):
            with self.subTest(cut=cut):
                self.write_bytes(b"".join(lines[:cut]), "part.jsonl")
                fd = os.open(self.path("part.jsonl"), os.O_WRONLY | os.O_APPEND)
                with TranscriptWriter.continuing(self.path("part.jsonl"), fd, lines[:cut]) as part:
                    self.assertEqual(
                        (part.count, part.head), (cut, read_records(self.path("whole.jsonl"))[cut - 1]["hash"])
                    )
                    for kind, payload in records[cut:]:
                        part.append(kind, payload)
                    self.assertEqual(part.root, root)
                self.assertEqual(read_lines(self.path("part.jsonl")), lines)
        with self.assertRaisesRegex(RunConfigError, "^lines: a transcript to continue has at least one record$"):
            TranscriptWriter.continuing(self.path("none.jsonl"), -1, [])

    def test_lines_are_canonical_and_chained(self) -> None:
        self.recover_run()
        prev = GENESIS
        for seq, (line, record) in enumerate(zip(read_lines(self.path()), read_records(self.path()))):
            self.assertEqual(line, canonical_bytes(record) + b"\n")
            self.assertEqual(record["hash"], hashlib.sha256(b"{" + line[75:-1]).hexdigest())
            self.assertEqual((record["seq"], record["prev"]), (seq, prev))
            self.assertEqual(sorted(record), ["hash", "kind", "payload", "prev", "seq"])
            prev = record["hash"]

    def test_refuses_to_replace_an_existing_transcript(self) -> None:
        self.write_bytes(b"evidence\n", "t.jsonl")
        with self.assertRaises(TranscriptExistsError) as caught:
            TranscriptWriter(self.path())
        self.assertIsInstance(caught.exception, FileExistsError)
        with open(self.path(), "rb") as handle:
            self.assertEqual(handle.read(), b"evidence\n")
        with TranscriptWriter(self.path(), overwrite=True) as out:
            out.append("task", Run.task())
        with open(self.path(), "rb") as handle:  # a task record alone is no turn: the old file stays (issue 19)
            self.assertEqual(handle.read(), b"evidence\n")
        with TranscriptWriter(self.path(), overwrite=True) as out:
            run = Run()
            out.append("task", run.task())
            out.append("stop", run.stop())
        self.assertTrue(verify_file(self.path()).ok)

    def test_an_unrecordable_payload_raises_and_writes_nothing(self) -> None:
        run = Run()
        with TranscriptWriter(self.path()) as out:
            out.append("task", run.task())
            before = read_lines(self.path())
            with self.assertRaises(UnrecordableError) as caught:
                out.append("tool", {"value": float("nan")})
            self.assertEqual(caught.exception.path, "$.payload.value")
            self.assertEqual(out.count, 1)
            out.append("stop", run.stop())
        lines = read_lines(self.path())
        self.assertEqual(lines[:1], before)
        self.assertTrue(verify_file(self.path()).ok)

    def test_fsync_durability_writes_the_same_bytes(self) -> None:
        for name, fsync in (("a.jsonl", False), ("b.jsonl", True)):
            with TranscriptWriter(self.path(name), fsync=fsync) as out:
                out.append("task", {"format": "agentloop/1", "x": "é"})
                out.append("stop", {"reason": "no_tool_calls"})
        self.assertEqual(read_lines(self.path("a.jsonl")), read_lines(self.path("b.jsonl")))

    def test_the_name_is_made_durable_as_the_records_are(self) -> None:
        # flush durability: the folder is not fsynced when the file takes its name (a process that dies keeps
        # it); fsync=True: once, then; sync() and checkpoint(): once, whatever the durability.
        folders: List[str] = []
        real = writer_module.fsync_directory

        def counted(folder: Any) -> None:
            folders.append(os.fspath(folder))
            real(folder)

        task, stop = {"format": "agentloop/1"}, {"reason": "no_tool_calls"}
        with mock.patch.object(writer_module, "fsync_directory", counted):
            for name, fsync, expected in (("flush.jsonl", False, 0), ("fsync.jsonl", True, 1)):
                with TranscriptWriter(self.path(name), fsync=fsync) as out:
                    out.append("task", task)
                    out.append("stop", stop)
                self.assertEqual(len(folders), expected, name)
            del folders[:]
            with TranscriptWriter(self.path("synced.jsonl")) as out:
                out.sync()  # nothing at the path yet: the records only
                self.assertEqual(folders, [])
                out.append("task", task)
                out.sync()
                out.sync()
                self.assertEqual(folders, [os.path.dirname(os.path.abspath(self.path("synced.jsonl")))])
            del folders[:]
            with TranscriptWriter(self.path("checked.jsonl")) as out:
                out.append("task", task)
                out.checkpoint(self.path("checked.ckpt"))
                out.checkpoint(self.path("checked.ckpt"))
            self.assertEqual(len(folders), 1)  # write_atomic fsyncs the checkpoint's folder itself
            for fsync, expected in ((False, 0), (True, 1)):  # a continuing writer (resume): the name, once
                del folders[:]
                lines = read_lines(self.path("flush.jsonl"))[:1]
                self.write_bytes(b"".join(lines), "more.jsonl")
                fd = os.open(self.path("more.jsonl"), os.O_WRONLY | os.O_APPEND)
                with TranscriptWriter.continuing(self.path("more.jsonl"), fd, lines, fsync=fsync) as out:
                    out.append("stop", stop)
                    out.append("stop", stop)
                self.assertEqual(len(folders), expected, fsync)
        with self.assertRaises(ValueError):
            out.sync()

    def test_a_writer_without_its_tree_writes_the_same_bytes_and_refuses_a_root(self) -> None:
        # tree=False: what run() makes without checkpoint= (nothing asks for the root)
        for name, tree in (("kept.jsonl", True), ("none.jsonl", False)):
            with TranscriptWriter(self.path(name), tree=tree) as out:
                if not tree:  # refused for the missing tree first, even before a record
                    with self.assertRaises(RunConfigError):
                        out.checkpoint(self.path("none.ckpt"))
                out.append("task", {"format": "agentloop/1"})
                out.append("stop", {"reason": "no_tool_calls"})
                if tree:
                    self.assertEqual(len(out.root), 64)
                else:
                    with self.assertRaises(RunConfigError) as caught:
                        out.root
                    self.assertIn("tree=False", str(caught.exception))
                    with self.assertRaises(RunConfigError):
                        out.checkpoint(self.path("none.ckpt"))
                    self.assertFalse(os.path.exists(self.path("none.ckpt")))
        self.assertEqual(read_lines(self.path("kept.jsonl")), read_lines(self.path("none.jsonl")))
        with self.assertRaises(RunConfigError):
            TranscriptWriter(self.path("bad.jsonl"), tree=1)  # type: ignore[arg-type]
        self.assertFalse(os.path.exists(self.path("bad.jsonl")))

    def test_append_after_close_raises(self) -> None:
        out = TranscriptWriter(self.path())
        out.close()
        out.close()  # idempotent
        with self.assertRaises(ValueError):
            out.append("task", {})


class TamperBase(TempDir):
    """A real 11-record transcript, parsed, to mutate."""

    def setUp(self) -> None:
        super().setUp()
        self.recover_run()
        self.records = read_records(self.path())
        self.assertEqual(len(self.records), 11)
        self.assertEqual(verify_records(self.records), [])

    def mutated(self) -> List[Any]:
        return copy.deepcopy(self.records)


class TestTamperDetection(TamperBase):
    """One case per way of tampering with a record; each names the record."""

    def test_payload_rewrite_is_a_hash_mismatch_at_that_record(self) -> None:
        records = self.mutated()
        records[8]["payload"]["value"] = {"sum": 41}
        self.assertEqual(kinds_at(verify_records(records)), {(8, "hash_mismatch")})

    def test_kind_rewrite_is_a_hash_mismatch(self) -> None:
        records = self.mutated()
        records[3]["kind"] = "tool"
        self.assertEqual(kinds_at(verify_records(records)), {(3, "hash_mismatch")})

    def test_renumbered_seq_is_a_seq_gap_and_a_hash_mismatch(self) -> None:
        records = self.mutated()
        records[5]["seq"] = 7
        faults = verify_records(records)
        self.assertEqual(kinds_at(faults), {(5, "seq_gap"), (5, "hash_mismatch"), (6, "seq_gap")})
        self.assertEqual(faults[0].detail, "seq is 7, expected 5")

    def test_rewritten_prev_is_a_prev_mismatch(self) -> None:
        records = self.mutated()
        records[4]["prev"] = "f" * 64
        self.assertEqual(kinds_at(verify_records(records)), {(4, "prev_mismatch"), (4, "hash_mismatch")})

    def test_rewritten_hash_breaks_that_record_and_the_next_link(self) -> None:
        records = self.mutated()
        records[2]["hash"] = "0" * 64
        self.assertEqual(kinds_at(verify_records(records)), {(2, "hash_mismatch"), (3, "prev_mismatch")})

    def test_missing_field_is_reported(self) -> None:
        records = self.mutated()
        del records[6]["payload"]
        faults = verify_records(records)
        self.assertIn((6, "missing_fields"), kinds_at(faults))
        self.assertEqual([f.detail for f in faults if f.kind == "missing_fields"], ["missing 'payload'"])

    def test_unexpected_field_outside_the_hash_is_reported(self) -> None:
        records = self.mutated()
        records[7]["note"] = "added later"
        faults = verify_records(records)
        self.assertEqual(kinds_at(faults), {(7, "unexpected_fields")})
        self.assertEqual(faults[0].detail, 'unexpected "note"')

    def test_a_record_that_is_not_an_object(self) -> None:
        records = self.mutated()
        records[1] = ["not", "a", "record"]
        faults = verify_records(records)
        self.assertEqual(faults[0], Fault(1, None, "not_an_object", "record is an array, not an object"))

    def test_deleted_record_is_caught_at_its_position(self) -> None:
        records = self.mutated()
        del records[4]
        self.assertEqual(kinds_at(verify_records(records)), {(4, "seq_gap"), (4, "prev_mismatch")})

    def test_swapped_records_are_caught_at_the_first(self) -> None:
        records = self.mutated()
        records[3], records[4] = records[4], records[3]
        faults = verify_records(records)
        self.assertEqual(faults[0].index, 3)
        self.assertTrue({(3, "seq_gap"), (3, "prev_mismatch")} <= kinds_at(faults))

    def test_an_unserialisable_payload_is_named(self) -> None:
        records = self.mutated()
        records[9]["payload"]["text"] = float("nan")
        faults = verify_records(records)
        self.assertEqual(kinds_at(faults), {(9, "unserialisable_payload")})
        self.assertEqual(faults[0].detail, "$.payload.text: nan is not a JSON number")


class TestForgery(TamperBase):
    def test_forged_record_with_a_recomputed_hash_still_breaks_the_chain(self) -> None:
        records = self.mutated()
        records[8]["payload"]["value"] = {"sum": 41}
        records[8] = rehash(records[8])
        # The forged record is self-consistent; its successor's prev is not.
        self.assertEqual(kinds_at(verify_records(records)), {(9, "prev_mismatch")})

    def test_reorder_plus_renumber_is_caught_as_a_prev_mismatch(self) -> None:
        records = self.mutated()
        records[3], records[4] = records[4], records[3]
        records[3]["seq"], records[4]["seq"] = 3, 4
        records[3], records[4] = rehash(records[3]), rehash(records[4])
        kinds = kinds_at(verify_records(records))
        self.assertIn((3, "prev_mismatch"), kinds)
        self.assertNotIn("hash_mismatch", {kind for _, kind in kinds})

    def test_a_record_zero_that_is_not_an_agentloop_task_is_unknown_format(self) -> None:
        records = self.mutated()
        records[0]["payload"]["format"] = "agentloop/2"
        records[0] = rehash(records[0])
        faults = verify_records(records)
        self.assertEqual(kinds_at(faults), {(0, "unknown_format"), (1, "prev_mismatch")})
        self.assertIn("payload.format 'agentloop/1'", faults[0].detail)

    def test_every_applicable_fault_of_a_record_is_reported(self) -> None:
        records = self.mutated()
        records[5]["seq"] = "five"
        records[5]["prev"] = 7
        records[5]["extra"] = 1
        kinds = {kind for index, kind in kinds_at(verify_records(records)) if index == 5}
        self.assertEqual(kinds, {"seq_gap", "prev_mismatch", "unexpected_fields", "hash_mismatch"})


class TestLimits(TempDir):
    def test_truncation_is_detected_only_against_an_external_count(self) -> None:
        result = self.recover_run()
        lines = read_lines(self.path())
        cut = self.write_bytes(b"".join(lines[:-1]))
        alone = verify_file(cut)
        # The limit, pinned: the surviving prefix is a valid chain...
        self.assertTrue(alone.ok)
        self.assertEqual(alone.count, result.records - 1)
        self.assertFalse(alone.complete)
        # ...and only an anchor kept elsewhere exposes the missing tail.
        anchored = verify_file(cut, expect_count=result.records)
        self.assertFalse(anchored.ok)
        self.assertEqual(anchored.faults[0].kind, "count_mismatch")
        self.assertEqual(anchored.faults[0].detail, "expected 11 records, found 10")
        head = verify_file(cut, expect_head=result.head)
        self.assertEqual([f.kind for f in head.faults], ["head_mismatch"])

    def test_an_intact_file_matches_its_external_anchor(self) -> None:
        result = self.recover_run()
        verdict = verify_file(self.path(), expect_count=result.records, expect_head=result.head)
        self.assertTrue(verdict.ok)
        self.assertTrue(verdict.complete)
        self.assertEqual((verdict.count, verdict.head), (11, result.head))

    def test_an_empty_file_holds_no_run(self) -> None:
        verdict = verify_file(self.write_bytes(b""))
        self.assertEqual((verdict.ok, verdict.count, verdict.head, verdict.complete), (False, 0, None, False))
        self.assertEqual(
            [str(f) for f in verdict.faults], ["file: no_records: it holds no record, so no run: the file is empty"]
        )
        junk = verify_file(self.write_bytes(b"junk\n\n"))
        self.assertEqual([f.kind for f in junk.faults], ["bad_json", "bad_json", "no_records"])
        self.assertEqual(junk.faults[-1].detail, "it holds no record, so no run: none of its 2 line(s) is a record")


class TestFileFaults(TempDir):
    def setUp(self) -> None:
        super().setUp()
        self.recover_run()
        self.lines = read_lines(self.path())

    def verify(self, lines: List[bytes]) -> List[Fault]:
        return list(verify_file(self.write_bytes(b"".join(lines))).faults)

    def test_a_junk_line_is_bad_json_with_its_line_number_and_records_keep_their_index(self) -> None:
        faults = self.verify(self.lines[:3] + [b"garbage\n"] + self.lines[3:])
        self.assertEqual(faults[0].kind, "bad_json")
        self.assertEqual((faults[0].index, faults[0].line), (None, 4))
        self.assertEqual(len(faults), 1)

    def test_a_torn_last_line_is_bad_json(self) -> None:
        faults = self.verify(self.lines[:-1] + [self.lines[-1][:-1]])
        self.assertEqual(
            [(f.line, f.kind, f.detail) for f in faults], [(11, "bad_json", "torn line: no terminating newline")]
        )

    def test_invalid_utf8_is_bad_json(self) -> None:
        broken = self.lines[2].replace(b"add", b"a\xffd")
        faults = self.verify(self.lines[:2] + [broken] + self.lines[3:])
        self.assertEqual((faults[0].line, faults[0].kind), (3, "bad_json"))
        self.assertIn("invalid UTF-8", faults[0].detail)

    def test_a_nan_token_is_bad_json_not_a_record(self) -> None:
        # RFC 8259 section 6: NaN, Infinity and -Infinity are not JSON, so the line is no record
        # (docs/format.md section 6; the vector bad_json_nan). Python's parser reads them: refused here.
        for token in (b"NaN", b"Infinity", b"-Infinity"):
            line = self.lines[1].replace(b'"step":1', b'"step":' + token)
            self.assertNotEqual(line, self.lines[1])
            faults = self.verify(self.lines[:1] + [line] + self.lines[2:])
            self.assertEqual(
                [(f.index, f.line, f.kind) for f in faults[:2]], [(None, 2, "bad_json"), (1, 3, "seq_gap")]
            )
            self.assertIn("is not a JSON number", faults[0].detail)

    def test_a_number_beyond_the_double_range_is_an_unserialisable_payload(self) -> None:
        line = self.lines[1].replace(b'"step":1', b'"step":1e400')
        faults = self.verify(self.lines[:1] + [line] + self.lines[2:])
        self.assertEqual([(f.index, f.line, f.kind) for f in faults], [(1, 2, "unserialisable_payload")])

    def test_reformatted_whitespace_is_not_canonical_even_though_the_hash_matches(self) -> None:
        record = json.loads(self.lines[4])
        pretty = json.dumps(record, sort_keys=True).encode() + b"\n"
        faults = self.verify(self.lines[:4] + [pretty] + self.lines[5:])
        self.assertEqual([(f.index, f.kind) for f in faults], [(4, "not_canonical")])

    def test_a_duplicated_key_is_not_canonical(self) -> None:
        # json.loads keeps the last duplicate: a parser differential an attacker could use.
        line = self.lines[2].replace(b'"kind":"tool"', b'"kind":"stop","kind":"tool"')
        faults = self.verify(self.lines[:2] + [line] + self.lines[3:])
        self.assertEqual([(f.index, f.kind) for f in faults], [(2, "not_canonical")])

    def test_crlf_line_endings_are_not_canonical(self) -> None:
        faults = self.verify([line[:-1] + b"\r\n" for line in self.lines])
        self.assertEqual({f.kind for f in faults}, {"not_canonical"})
        self.assertEqual(len(faults), 11)

    def test_hostile_nesting_in_a_line_is_reported_not_raised(self) -> None:
        deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
        medium = b'{"hash":"x","kind":"tool","payload":' + b"[" * 500 + b"]" * 500 + b',"prev":"y","seq":3}\n'
        faults = self.verify(self.lines[:3] + [medium, deep])
        self.assertEqual(
            [(f.line, f.kind) for f in faults if f.kind in ("bad_json", "unserialisable_payload")],
            [(4, "unserialisable_payload"), (5, "bad_json")],
        )

    def test_a_missing_file_and_a_directory_are_unreadable(self) -> None:
        for target in (self.path("absent.jsonl"), self.dir):
            with self.subTest(target):
                verdict = verify_file(target)
                self.assertFalse(verdict.ok)
                self.assertEqual([f.kind for f in verdict.faults], ["unreadable"])
                self.assertEqual(verdict.count, 0)

    def test_file_and_record_verification_agree(self) -> None:
        records = [json.loads(line) for line in self.lines]
        mutated = copy.deepcopy(records)
        mutated[6]["payload"]["error"] = "rewritten"
        del mutated[9]
        lines = [canonical_bytes(r) + b"\n" for r in mutated]
        from_file = {(f.index, f.kind) for f in self.verify(lines)}
        self.assertEqual(from_file, kinds_at(verify_records(mutated)))


class TestNeverRaises(TempDir):
    def test_random_values_and_random_bytes(self) -> None:
        rng = random.Random(20261202)
        atoms: List[Any] = [None, True, 0, -1, 1.5, "x", [], {}, {"seq": True}, float("nan"), 2**80, {"hash": 5}]
        for _ in range(300):
            records = [
                rng.choice(atoms + [dict(zip(["hash", "kind", "payload", "prev", "seq"], rng.sample(atoms, 5)))])
                for _ in range(rng.randint(0, 6))
            ]
            faults = verify_records(records)
            self.assertTrue(all(f.kind in FAULT_KINDS for f in faults))
        self.recover_run("seed.jsonl")
        data = b"".join(read_lines(self.path("seed.jsonl")))
        for _ in range(300):
            blob = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                blob[rng.randrange(len(blob))] = rng.randrange(256)
            verdict = verify_file(self.write_bytes(bytes(blob)))
            self.assertTrue(all(f.kind in FAULT_KINDS for f in verdict.faults))
            if bytes(blob) != data:
                self.assertFalse(verdict.ok)


class TestStreaming(TempDir):
    def test_memory_stays_flat_in_the_file_length(self) -> None:
        run = Run()
        with TranscriptWriter(self.path()) as out:
            out.append("task", run.task())
            for i in range(10_000):
                out.append("assistant", run.assistant(calls=1))
                out.append("tool", run.tool({"text": "x" * 400}))
        size = os.path.getsize(self.path())
        tracemalloc.start()
        try:
            verdict = verify_file(self.path())
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self.assertTrue(verdict.ok)
        self.assertEqual(verdict.count, 20_001)
        self.assertGreater(size, 5_000_000)
        self.assertLess(peak, 1_000_000, "verify_file held %d bytes for a %d-byte file" % (peak, size))


if __name__ == "__main__":
    unittest.main()


class TestVerifierHardening(TempDir):
    """Inputs found by attacking the verifier; none may raise, all are named."""

    def setUp(self) -> None:
        super().setUp()
        self.recover_run()
        self.lines = read_lines(self.path())

    def test_kinds_follow_the_run_grammar(self) -> None:
        records = read_records(self.path())
        cases = [
            (3, "banana", 'kind "banana" is not one of task, assistant, tool, stop'),
            (3, "task", "a second task record"),
        ]
        for index, kind, detail in cases:
            with self.subTest(kind):
                mutated = copy.deepcopy(records)
                mutated[index] = rehash(dict(mutated[index], kind=kind))
                faults = [f for f in verify_records(mutated) if f.kind == "unexpected_kind"]
                self.assertEqual([(f.index, f.detail) for f in faults], [(index, detail)])
        after = records + [rehash(dict(records[9], seq=11, prev=records[10]["hash"]))]
        faults = verify_records(after)
        self.assertEqual(
            [(f.index, f.kind, f.detail) for f in faults],
            [(11, "unexpected_kind", 'a "assistant" record after the stop record')],
        )

    def test_integers_too_long_for_int_are_records_with_an_unserialisable_payload(self) -> None:
        line = self.lines[1].replace(b'"step":1', b'"step":' + b"9" * 5000)
        faults = list(verify_file(self.write_bytes(b"".join(self.lines[:1] + [line] + self.lines[2:]))).faults)
        self.assertEqual([(f.index, f.line, f.kind) for f in faults], [(1, 2, "unserialisable_payload")])
        self.assertIn("integer of 5000 digits", faults[0].detail)

    def test_nesting_beyond_the_parse_depth_is_bad_json_on_every_python(self) -> None:
        deep = b'{"seq":' + b"[" * 995 + b"]" * 995 + b"}\n"
        faults = list(verify_file(self.write_bytes(b"".join(self.lines[:2] + [deep]))).faults)
        self.assertEqual(
            [(f.line, f.kind, f.detail) for f in faults], [(3, "bad_json", "nesting deeper than 512 levels")]
        )

    def test_an_overlong_line_is_not_read_and_later_records_still_verify(self) -> None:
        long_line = b'{"junk":"' + b"x" * 3_000_000 + b'"}\n'
        path = self.write_bytes(b"".join(self.lines[:4] + [long_line] + self.lines[4:]))
        tracemalloc.start()
        try:
            verdict = verify_file(path, max_line_bytes=100_000)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self.assertEqual([(f.line, f.kind) for f in verdict.faults], [(5, "bad_json")])
        self.assertEqual(verdict.faults[0].detail, "line longer than 100000 bytes, not read")
        self.assertEqual(verdict.count, 11)
        self.assertLess(peak, 1_000_000)

    def test_details_are_ascii_and_never_raise_on_hostile_values(self) -> None:
        records = read_records(self.path())
        records[0] = rehash(dict(records[0], kind="\x1b[31mRED\x07"))
        records[1]["kind"] = "\ud800"
        faults = verify_records(records)
        self.assertEqual(
            {f.kind for f in faults}, {"unknown_format", "unexpected_kind", "unserialisable_payload", "prev_mismatch"}
        )
        self.assertTrue(all(f.detail.isascii() and "\x1b" not in f.detail for f in faults))
        deep: Any = 0
        for _ in range(100_000):
            deep = [deep]
        for hostile in (None, 5, [{1: 2, "a": 3}], [{"seq": deep}], [{"seq": 10**5000}], [{"hash": "\udc00"}]):
            with self.subTest(type(hostile).__name__):
                self.assertTrue(all(f.kind in FAULT_KINDS for f in verify_records(hostile)))  # type: ignore[arg-type]

    def test_objects_whose_methods_raise_are_reported_not_raised(self) -> None:
        class Raising(dict):  # type: ignore[type-arg]
            def get(self, *args: Any) -> Any:
                raise RuntimeError("no")

        faults = verify_records([Raising(seq=0)])
        self.assertEqual([(f.index, f.kind) for f in faults], [(0, "unserialisable_payload")])
