"""run_many trusts nothing a worker hands back, and refuses misuse before anything runs.

The executors here are real ``concurrent.futures.Executor`` subclasses run in
this process (so branch coverage sees the driver and the worker): one that
runs each job and then rewrites its answer, as a buggy or hostile worker
would; one whose ``submit`` fails; one whose futures are cancelled.
"""

from __future__ import annotations

import base64
import concurrent.futures
import json
import os
import tempfile
from typing import Any, Callable, List
from unittest import mock

from agentloop.batch import RunSpec, parse_ledger, run_many
from agentloop.batch.driver import RunEntry, _Batch, _write_ledger
from agentloop.batch.ledger import GrowingLedger
from agentloop.batch.worker import make_job, run_one
from agentloop.errors import LedgerMismatchError, RunConfigError

from tests.support.helpers import TempDir

MODEL = "tests.support.batch_models:factory"
TOOLS = "tests.support.batch_models:tools"


def two_specs() -> List[RunSpec]:
    return [RunSpec("first", "task one", 5, 10000), RunSpec("second", "task two", 5, 10000)]


def read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


class RewritingExecutor(concurrent.futures.Executor):
    """Runs each job at once in this process (unless ``run_jobs`` is false), then answers ``rewrite(job, reply)``."""

    def __init__(self, rewrite: Callable[[str, str], Any], run_jobs: bool = True) -> None:
        self.rewrite = rewrite
        self.run_jobs = run_jobs

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> "concurrent.futures.Future[Any]":
        future: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        try:
            future.set_result(self.rewrite(args[0], fn(*args, **kwargs) if self.run_jobs else ""))
        except Exception as exc:
            future.set_exception(exc)
        return future


class FailingSubmitExecutor(concurrent.futures.Executor):
    """``submit`` raises ``error`` for every job."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> "concurrent.futures.Future[Any]":
        raise self.error


class CancellingExecutor(concurrent.futures.Executor):
    """Every future it returns has been cancelled (as ``shutdown(cancel_futures=True)`` elsewhere would)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> "concurrent.futures.Future[Any]":
        future: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        future.cancel()
        future.set_running_or_notify_cancel()  # what an executor does when it reaches a cancelled job
        return future


class RepeatingExecutor(RewritingExecutor):
    """Runs each job, but hands the first job's future back again for the second (a buggy cache of futures)."""

    def __init__(self) -> None:
        super().__init__(lambda job, reply: reply)
        self.given: List["concurrent.futures.Future[Any]"] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> "concurrent.futures.Future[Any]":
        future = super().submit(fn, *args, **kwargs)
        self.given.append(future)
        return self.given[0] if len(self.given) == 2 else future


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


class DriverCase(TempDir):
    def batch(self, executor: Any = None, spec_list: Any = None, **kwargs: Any) -> Any:
        kwargs.setdefault("model", MODEL)
        kwargs.setdefault("tools", TOOLS)
        kwargs.setdefault("out_dir", self.path("out"))
        return run_many(two_specs() if spec_list is None else spec_list, executor=executor, **kwargs)

    def outcomes(self, result: Any) -> List[Any]:
        return [(e.name, e.status, e.error, e.message) for e in result.entries]


class TestRejectedReplies(DriverCase):
    def test_an_answer_that_is_not_run_ones_json_is_a_bad_reply(self) -> None:
        replies = {
            "not json": "{oops",
            "not a str": b'{"name": "first"}',
            "another run's name": json.dumps({"name": "someone-else"}),
            "a list": "[]",
        }
        for label, reply in replies.items():
            with self.subTest(label):
                out = tempfile.mkdtemp(dir=self.dir)
                result = self.batch(RewritingExecutor(lambda job, real, reply=reply: reply), out_dir=out)
                self.assertEqual({(e.status, e.error) for e in result.entries}, {("rejected", "bad_reply")})
                self.assertEqual(parse_ledger(read(result.manifest))[0]["reason"], "bad_reply")

    def test_bytes_that_are_not_base64_or_too_many_are_a_bad_reply_and_nothing_is_published(self) -> None:
        def bad_data(job: str, real: str) -> str:
            return json.dumps({"name": json.loads(job)["spec"]["name"], "data": "not base64!"})

        result = self.batch(RewritingExecutor(bad_data, run_jobs=False), transfer="bytes")
        self.assertEqual(
            self.outcomes(result), [("first", "rejected", "bad_reply", ""), ("second", "rejected", "bad_reply", "")]
        )
        self.assertFalse(os.path.exists(self.path("out/first.jsonl")))

        def too_big(job: str, real: str) -> str:
            name = json.loads(job)["spec"]["name"]
            return json.dumps({"name": name, "data": base64.b64encode(b"x" * 101).decode("ascii")})

        result = self.batch(
            RewritingExecutor(too_big, run_jobs=False),
            out_dir=self.path("big"),
            transfer="bytes",
            max_transfer_bytes=100,
        )
        self.assertEqual(self.outcomes(result)[0], ("first", "rejected", "bad_reply", "101 bytes returned"))
        self.assertFalse(os.path.exists(self.path("big/first.jsonl")))

    def test_bytes_transfer_in_threads_publishes_what_the_worker_returned(self) -> None:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            moved = self.batch(pool, transfer="bytes", out_dir=self.path("moved"))
        serial = self.batch(out_dir=self.path("serial"))
        self.assertTrue(moved.ok, moved.failed)
        self.assertEqual(read(moved.manifest), read(serial.manifest))
        self.assertEqual(sorted(os.listdir(self.path("moved"))), ["first.jsonl", "manifest.jsonl", "second.jsonl"])

    def test_returned_bytes_that_differ_from_an_existing_transcript_are_a_worker_error(self) -> None:
        os.makedirs(self.path("out"))
        with open(self.path("out/first.jsonl"), "wb") as handle:
            handle.write(b"someone else's file\n")
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            result = self.batch(pool, transfer="bytes")
        self.assertEqual(
            [(e.name, e.status, e.error) for e in result.failed], [("first", "worker_error", "TranscriptExistsError")]
        )
        with open(self.path("out/first.jsonl"), "rb") as handle:
            self.assertEqual(handle.read(), b"someone else's file\n")  # never replaced

    def test_a_named_transcript_that_is_absent_torn_or_unfinished_is_rejected_with_its_reason(self) -> None:
        def absent(job: str, real: str) -> str:
            os.unlink(os.path.join(json.loads(job)["out_dir"], json.loads(real)["name"] + ".jsonl"))
            return real

        result = self.batch(RewritingExecutor(absent))
        self.assertEqual({(e.status, e.error) for e in result.entries}, {("rejected", "missing")})
        self.assertTrue(result.entries[0].message.startswith("unreadable: "), result.entries[0].message)

        def unfinished(job: str, real: str) -> str:
            path = os.path.join(json.loads(job)["out_dir"], json.loads(real)["name"] + ".jsonl")
            with open(path, "rb") as handle:
                lines = handle.read().splitlines(keepends=True)
            with open(path, "wb") as handle:
                handle.write(b"".join(lines[:-1]))  # whole records, but no stop record
            return real

        result = self.batch(RewritingExecutor(unfinished), out_dir=self.path("unfinished"))
        self.assertEqual(
            self.outcomes(result), [("first", "rejected", "incomplete", ""), ("second", "rejected", "incomplete", "")]
        )
        with open(result.error_log, encoding="ascii") as handle:
            self.assertEqual(handle.read(), "first: incomplete: \nsecond: incomplete: \n")


class TestWorkerErrors(DriverCase):
    def test_an_exception_from_a_future_is_a_worker_error_with_its_type_in_the_ledger(self) -> None:
        def fail(job: str, real: str) -> str:
            raise KeyError("lost " + "x" * 2500)

        result = self.batch(RewritingExecutor(fail))
        entry = result.entries[0]
        self.assertEqual((entry.status, entry.error), ("worker_error", "KeyError"))
        self.assertEqual(entry.message, "'lost " + "x" * 1994 + "... (507 characters cut)")
        self.assertEqual(
            parse_ledger(read(result.manifest))[0],
            {"error": "KeyError", "name": "first", "origin": entry.origin, "status": "worker_error"},
        )

    def test_an_exception_whose_text_cannot_be_made_is_logged_as_unprintable(self) -> None:
        def fail(job: str, real: str) -> str:
            raise Unprintable()

        result = self.batch(RewritingExecutor(fail))
        self.assertEqual(self.outcomes(result)[1], ("second", "worker_error", "Unprintable", "<unprintable>"))

    def test_a_submit_that_raises_is_that_runs_worker_error(self) -> None:
        result = self.batch(FailingSubmitExecutor(RuntimeError("cluster is gone")))
        self.assertEqual(
            self.outcomes(result),
            [
                ("first", "worker_error", "RuntimeError", "cluster is gone"),
                ("second", "worker_error", "RuntimeError", "cluster is gone"),
            ],
        )

    def test_a_cancelled_future_is_a_worker_error_not_a_crash_of_the_driver(self) -> None:
        result = self.batch(CancellingExecutor())
        self.assertEqual({(e.status, e.error) for e in result.entries}, {("worker_error", "CancelledError")})

    def test_a_broken_executor_runs_are_run_again_each_in_a_process_of_its_own(self) -> None:
        os.makedirs(self.path("out"))
        with open(self.path("out/second.jsonl"), "wb") as handle:
            handle.write(b"someone else's file\n")  # run_one raises TranscriptExistsError in its process
        result = self.batch(FailingSubmitExecutor(concurrent.futures.BrokenExecutor("broken before we came")))
        self.assertEqual(
            [(e.name, e.status, e.error) for e in result.entries],
            [("first", "ok", ""), ("second", "worker_error", "TranscriptExistsError")],
        )
        self.batch(spec_list=two_specs()[:1], out_dir=self.path("serial"))
        self.assertEqual(read(self.path("out/first.jsonl")), read(self.path("serial/first.jsonl")))

    def test_a_future_handed_out_twice_fails_the_later_run_and_loses_no_line(self) -> None:
        spec_list = [RunSpec("run-%d" % i, "task %d" % i, 3, 10000) for i in range(4)]
        result = self.batch(RepeatingExecutor(), spec_list, checkpoint=self.path("out/manifest.checkpoint"))
        self.assertEqual(
            self.outcomes(result)[:2],
            [
                ("run-0", "ok", "", ""),
                ("run-1", "worker_error", "RuntimeError", "the executor returned the future of run run-0 again"),
            ],
        )
        lines = parse_ledger(read(result.manifest))
        self.assertEqual([(line["name"], line["status"]) for line in lines][2:], [("run-2", "ok"), ("run-3", "ok")])
        self.assertEqual(len(lines), 4)

    def test_a_ledger_missing_a_run_is_neither_written_nor_signed(self) -> None:
        spec_list = two_specs()
        out = self.path("out")
        batch = _Batch(spec_list, b"\x11" * 64, (MODEL, TOOLS, out, "path", 1 << 20), None, True, GrowingLedger())
        batch.settle(1, RunEntry("second", "worker_error", batch.origin(1), batch.path(1), error="E"))
        manifest, note = self.path("manifest.jsonl"), self.path("manifest.checkpoint")
        with self.assertRaises(LedgerMismatchError) as raised:
            _write_ledger(batch, "agentloop-manifest/1/" + "0" * 64, manifest, note, b"k" * 32, None, None, None)
        self.assertEqual(str(raised.exception), "1 of 2 runs settled, 1 ledger lines waiting: nothing is written")
        self.assertFalse(os.path.lexists(manifest) or os.path.lexists(note))


class TestMisuse(DriverCase):
    def test_every_bad_argument_raises_run_config_error_naming_it(self) -> None:
        spec = RunSpec("a", "t", 1, 1)
        cases = [
            (dict(specs=[]), "specs: must be a non-empty list of RunSpec"),
            (dict(specs="a"), "specs: must be a non-empty list of RunSpec"),
            (dict(specs=[spec, {"name": "b"}]), "specs[1]: must be a RunSpec, got dict"),
            (dict(model=""), "model: must be a non-empty str (a reference a worker resolves itself)"),
            (dict(tools=None), "tools: must be a non-empty str (a reference a worker resolves itself)"),
            (dict(transfer="ftp"), "transfer: must be 'path' or 'bytes', got \"ftp\""),
            (dict(max_transfer_bytes=True), "max_transfer_bytes: must be a positive int"),
            (dict(max_transfer_bytes=0), "max_transfer_bytes: must be a positive int"),
            (
                dict(manifest=self.path("out/a.jsonl")),
                "manifest: %s is also a run's transcript" % (self.path("out/a.jsonl"),),
            ),
            (
                dict(checkpoint=self.path("out/a.jsonl")),
                "checkpoint: %s is also a run's transcript" % (self.path("out/a.jsonl"),),
            ),
        ]
        for overrides, message in cases:
            with self.subTest(message):
                kwargs: Any = dict(specs=[spec], model=MODEL, tools=TOOLS, out_dir=self.path("out"))
                kwargs.update(overrides)
                with self.assertRaises(RunConfigError) as caught:
                    run_many(kwargs.pop("specs"), **kwargs)
                self.assertEqual(str(caught.exception), message)
        self.assertFalse(os.path.exists(self.path("out/a.jsonl")))


class TestWorker(TempDir):
    def job(self, transfer: str, max_bytes: int = 1 << 20, **options: Any) -> str:
        return make_job(RunSpec("w", "task", 5, 10000, options=options), MODEL, TOOLS, self.dir, transfer, max_bytes)

    def test_bytes_transfer_returns_the_transcript_and_leaves_nothing_behind(self) -> None:
        answer = json.loads(run_one(self.job("bytes")))
        self.assertEqual(sorted(answer), ["data", "name"])
        data = base64.b64decode(answer["data"])
        self.assertEqual(json.loads(data.splitlines()[-1])["kind"], "stop")
        json.loads(run_one(self.job("path")))
        with open(self.path("w.jsonl"), "rb") as handle:
            self.assertEqual(handle.read(), data)  # the same run, by either road
        self.assertEqual(os.listdir(self.dir), ["w.jsonl"])

    def test_bytes_transfer_over_the_cap_raises_and_leaves_no_temporary_folder(self) -> None:
        # A private temporary root: the other shard's runs make folders of this name in the shared one.
        private = self.path("tmp")
        os.mkdir(private)
        with mock.patch.object(tempfile, "tempdir", private):
            with self.assertRaisesRegex(RunConfigError, r"^max_transfer_bytes: transcript of \d+ bytes exceeds 100$"):
                run_one(self.job("bytes", 100))
        self.assertEqual(os.listdir(private), [])

    def test_a_durable_run_publishes_the_same_bytes(self) -> None:
        self.assertEqual(json.loads(run_one(self.job("path", fsync=True))), {"name": "w"})
        self.assertEqual(os.listdir(self.dir), ["w.jsonl"])
