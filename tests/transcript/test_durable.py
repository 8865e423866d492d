"""One writer per file, repair of a torn last line, and run(checkpoint=...)."""

from __future__ import annotations

import hashlib
import os
import unittest

from agentloop import RunConfigError, TranscriptExistsError, TranscriptWriter, run, verify_file
from agentloop.transcript.anchor import verify_checkpoint
from agentloop.transcript.checkpoint import read_checkpoint
from agentloop.transcript.durable import HAVE_LOCKS, write_atomic
from agentloop.errors import RepairRefusedError, TranscriptLockedError
from agentloop.transcript.repair import repair

from tests.support.helpers import TempDir, demo_tools, read_lines, recover_model

KEY = b"k" * 32


@unittest.skipUnless(HAVE_LOCKS, "no fcntl: advisory locks are not taken on this platform")
class TestOneWriter(TempDir):
    def test_a_second_writer_is_refused_and_changes_nothing(self) -> None:
        with TranscriptWriter(self.path()) as out:
            out.append("task", {"format": "agentloop/1"})
            before = read_lines(self.path())
            with self.assertRaises(TranscriptLockedError) as caught:
                TranscriptWriter(self.path(), overwrite=True)
            self.assertEqual(str(caught.exception), "transcript %s is locked by another writer" % (self.path(),))
            self.assertIsInstance(caught.exception, BlockingIOError)
            self.assertEqual(read_lines(self.path()), before)  # not truncated
            with self.assertRaises(TranscriptExistsError):
                TranscriptWriter(self.path())
            out.append("assistant", {"step": 1})
        old = read_lines(self.path())
        with TranscriptWriter(self.path(), overwrite=True) as again:  # the lock went with close
            self.assertEqual(read_lines(self.path()), old)  # kept until the new one has its first turn
            with self.assertRaises(TranscriptLockedError):  # and still locked against a third writer
                TranscriptWriter(self.path(), overwrite=True)
            again.append("task", {"format": "agentloop/1", "task": "new"})
            self.assertEqual(read_lines(self.path()), old)  # a task record alone is no turn: the old run stays
            again.append("assistant", {"step": 1})
            self.assertEqual(len(read_lines(self.path())), 2)
            self.assertIn(b'"new"', read_lines(self.path())[0])
            with self.assertRaises(TranscriptLockedError):
                TranscriptWriter(self.path(), overwrite=True)
        new = read_lines(self.path())
        for records in (0, 1):  # interrupted before its first turn: the old transcript stays, nothing is left beside it
            with TranscriptWriter(self.path(), overwrite=True) as third:
                for _ in range(records):
                    third.append("task", {"format": "agentloop/1", "task": "third"})
            self.assertEqual(read_lines(self.path()), new)
            self.assertEqual(sorted(os.listdir(os.path.dirname(self.path()))), [os.path.basename(self.path())])

    def test_run_is_refused_while_another_writer_holds_the_file(self) -> None:
        with TranscriptWriter(self.path()) as out:
            out.append("task", {"format": "agentloop/1"})
            with self.assertRaises(TranscriptLockedError):
                run(
                    "t",
                    recover_model(),
                    demo_tools(),
                    transcript=self.path(),
                    max_steps=8,
                    max_tokens=2000,
                    overwrite=True,
                )
        self.assertEqual(len(read_lines(self.path())), 1)

    def test_repair_is_refused_while_a_writer_holds_the_file(self) -> None:
        with TranscriptWriter(self.path()) as out:
            out.append("task", {"format": "agentloop/1"})
            with self.assertRaises(TranscriptLockedError):
                repair(self.path())


class TestRepair(TempDir):
    def setUp(self) -> None:
        super().setUp()
        self.recover_run()
        self.lines = read_lines(self.path())

    def test_a_torn_last_line_is_removed_and_saved_at_every_cut(self) -> None:
        last = self.lines[-1]
        intact = b"".join(self.lines[:-1])
        for cut in (1, 2, 9, len(last) // 2, len(last) - 3, len(last) - 2):  # len - 1 is the whole record
            with self.subTest(cut=cut):
                path = self.write_bytes(intact + last[:cut], "torn.jsonl")
                self.assertEqual(verify_file(path).faults[0].kind, "bad_json")
                done = repair(path)
                self.assertEqual((done.removed, done.saved), (cut, path + ".torn-%d" % len(intact)))
                with open(path + ".torn-%d" % len(intact), "rb") as handle:
                    self.assertEqual(handle.read(), last[:cut])
                os.unlink(path + ".torn-%d" % len(intact))
                self.assertTrue(done.result.ok)
                self.assertEqual(done.result.count, 10)
                with open(path, "rb") as handle:
                    self.assertEqual(handle.read(), intact)

    def test_a_torn_last_line_holding_nan_is_cut_not_kept(self) -> None:
        """NaN is not JSON (docs/format.md section 6): with its newline appended the line would be bad_json, so it is
        a torn line like any other, not "a complete JSON text missing only its newline"."""
        path = self.write_bytes(b"".join(self.lines) + b'{"hash":NaN}', "torn.jsonl")
        done = repair(path)
        self.assertEqual((done.removed, done.result.ok, done.result.count), (len(b'{"hash":NaN}'), True, 11))

    def test_a_torn_first_record_is_refused_not_cut_to_an_empty_file(self) -> None:
        path = self.write_bytes(self.lines[0][:20], "torn.jsonl")
        with self.assertRaises(RepairRefusedError) as caught:
            repair(path)
        self.assertIn("it holds no complete record", str(caught.exception))
        with open(path, "rb") as handle:
            self.assertEqual(handle.read(), self.lines[0][:20])

    def test_an_intact_file_has_nothing_to_repair(self) -> None:
        done = repair(self.path())
        self.assertEqual((done.removed, done.saved, done.result.ok), (0, None, True))
        self.assertEqual(sorted(os.listdir(self.dir)), ["t.jsonl"])

    def test_any_other_fault_is_refused_and_nothing_changes(self) -> None:
        tampered = list(self.lines)
        tampered[3] = tampered[3].replace(b'"step":2', b'"step":3')
        cases = [
            (
                b"".join(tampered),
                "its last line is complete, and it has a fault repair does not fix: record 3 (line 4): hash_mismatch",
            ),
            (
                b"".join(tampered) + b'{"hash',
                "it has a fault besides its torn last line: record 3 (line 4): hash_mismatch",
            ),
            (
                b"".join(self.lines[:-1]) + self.lines[-1][:-1],
                "its last line is a complete JSON text missing only its newline; append the newline to keep it",
            ),
            (
                b"".join(self.lines[:4]) + b"junk\n" + b"".join(self.lines[4:]) + b"{",
                "it has a fault besides its torn last line: line 5: bad_json",
            ),
        ]
        for data, reason in cases:
            with self.subTest(reason):
                path = self.write_bytes(data, "bad.jsonl")
                with self.assertRaises(RepairRefusedError) as caught:
                    repair(path)
                self.assertTrue(caught.exception.reason.startswith(reason), caught.exception.reason)
                with open(path, "rb") as handle:
                    self.assertEqual(handle.read(), data)
                self.assertEqual(sorted(os.listdir(self.dir)), ["bad.jsonl", "t.jsonl"])

    def test_an_existing_saved_fragment_is_never_overwritten(self) -> None:
        intact = b"".join(self.lines[:-1])
        path = self.write_bytes(intact + b'{"ha', "torn.jsonl")
        self.write_bytes(b"older", "torn.jsonl.torn-%d" % len(intact))
        with self.assertRaises(RepairRefusedError) as caught:
            repair(path)
        self.assertEqual(
            str(caught.exception),
            "not repairing %s.torn-%d: it is where the torn fragment is saved, and it already exists; "
            "move it away first" % (path, len(intact)),
        )
        with open(path, "rb") as handle:
            self.assertEqual(handle.read(), intact + b'{"ha')

    def test_a_missing_file_raises_oserror(self) -> None:
        with self.assertRaises(FileNotFoundError):
            repair(self.path("missing.jsonl"))


class TestRunCheckpoint(TempDir):
    def test_run_writes_a_signed_checkpoint_after_the_stop_record(self) -> None:
        result = run(
            "What is 6 * 7?",
            recover_model(),
            demo_tools(),
            transcript=self.path(),
            max_steps=8,
            max_tokens=2000,
            checkpoint=self.path("t.checkpoint"),
            key=KEY,
        )
        ckpt = read_checkpoint(self.path("t.checkpoint"))
        self.assertEqual((ckpt.size, ckpt.head), (result.records, result.head))
        self.assertEqual(len(ckpt.signatures), 1)
        verdict = verify_checkpoint(self.path(), self.path("t.checkpoint"), key=KEY, exact=True)
        self.assertTrue(verdict.ok, verdict.faults)
        self.assertTrue(verdict.signed)

    def test_the_transcript_bytes_do_not_change_with_a_checkpoint(self) -> None:
        self.recover_run("plain.jsonl")
        run(
            "What is 6 * 7?",
            recover_model(),
            demo_tools(),
            transcript=self.path(),
            max_steps=8,
            max_tokens=2000,
            checkpoint=self.path("t.checkpoint"),
        )
        with open(self.path("plain.jsonl"), "rb") as a, open(self.path(), "rb") as b:
            self.assertEqual(hashlib.sha256(a.read()).digest(), hashlib.sha256(b.read()).digest())
        self.assertEqual(read_checkpoint(self.path("t.checkpoint")).signatures, ())

    def test_checkpoint_and_key_mistakes_raise_before_the_transcript_is_created(self) -> None:
        existing = self.write_bytes(b"old", "old.checkpoint")
        cases = [
            ({"key": KEY}, "key: given without checkpoint=: nothing would be signed"),
            ({"checkpoint": self.path()}, "checkpoint: is the transcript's own path %s" % (self.path(),)),
            (
                {"checkpoint": existing},
                "checkpoint: %s already exists (pass overwrite=True to replace it)" % (existing,),
            ),
            ({"checkpoint": 3}, "checkpoint: must be a path, got int"),
            ({"checkpoint": self.path("c"), "key": b"short"}, "key: is 5 bytes; at least 16 are needed"),
            ({"checkpoint": self.path("c"), "key": "k" * 32}, "key: must be bytes, got str"),
        ]
        for extra, message in cases:
            with self.subTest(message):
                with self.assertRaises(RunConfigError) as caught:
                    run(
                        "t",
                        recover_model(),
                        demo_tools(),
                        transcript=self.path(),
                        max_steps=8,
                        max_tokens=2000,
                        **extra,
                    )  # type: ignore[arg-type]
                self.assertTrue(str(caught.exception).startswith(message), str(caught.exception))
                self.assertFalse(os.path.exists(self.path()))
        with open(existing, "rb") as handle:
            self.assertEqual(handle.read(), b"old")

    def test_overwrite_replaces_an_old_checkpoint(self) -> None:
        self.write_bytes(b"old", "t.checkpoint")
        run(
            "t",
            recover_model(),
            demo_tools(),
            transcript=self.path(),
            max_steps=8,
            max_tokens=2000,
            checkpoint=self.path("t.checkpoint"),
            overwrite=True,
        )
        self.assertTrue(verify_checkpoint(self.path(), self.path("t.checkpoint")).ok)

    def test_write_atomic_replaces_whole_files(self) -> None:
        target = self.path("f")
        write_atomic(target, b"one")
        write_atomic(target, b"two")
        with open(target, "rb") as handle:
            self.assertEqual(handle.read(), b"two")
        self.assertEqual(os.listdir(self.dir), ["f"])
