"""The transcript library under hostile input: files that are not
files, fault floods, the writer's limit, the payload grammar, noncharacters,
replay with recorded tools."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
import unittest
from typing import Any, Dict, List
from unittest import mock

from agentloop import ModelReply, RunConfigError, ScriptedModel, Tool, ToolCall, TranscriptWriter, run, verify_file
from agentloop import messages as messages_module
from agentloop.canonical import canonical_bytes
from agentloop.errors import UnrecordableError
from agentloop.models.replay import ReplayModel, replay
from agentloop.transcript.durable import open_input
from agentloop.transcript.format import MAX_FAULTS, MAX_LINE_BYTES
from agentloop.transcript.verify import iter_file

from tests.support.helpers import TempDir, read_records
from tests.support.runs import Run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rewrite(path: str, records: List[Dict[str, Any]]) -> str:
    """Write ``records`` with the chain recomputed from record 0 on: only the payloads say what changed."""
    prev = "0" * 64
    lines = []
    for seq, record in enumerate(records):
        body = {"kind": record["kind"], "payload": record["payload"], "prev": prev, "seq": seq}
        prev = hashlib.sha256(canonical_bytes(body)).hexdigest()
        lines.append(canonical_bytes(dict(body, hash=prev)) + b"\n")
    with open(path, "wb") as handle:
        handle.write(b"".join(lines))
    return path


class TestNotAFile(TempDir):
    def test_directories_and_devices_are_refused_at_once(self) -> None:
        listener = socket.socket(socket.AF_UNIX)
        self.addCleanup(listener.close)
        folder = tempfile.mkdtemp()  # a short path: AF_UNIX paths are limited to ~100 bytes
        sock = os.path.join(folder, "s")
        listener.bind(sock)
        self.addCleanup(os.rmdir, folder)
        self.addCleanup(os.remove, sock)
        cases = [
            (self.path(""), "IsADirectoryError: it is a directory, not a regular file or a pipe"),
            ("/dev/zero", "OSError: it is a character device, not a regular file or a pipe"),
            ("/dev/urandom", "OSError: it is a character device, not a regular file or a pipe"),
            (sock, "OSError: No such device or address"),
        ]
        # In a child with a timeout: a reader that spins on /dev/zero fails the test instead of hanging the suite.
        program = (
            "import json, sys\n"
            "from agentloop import verify_file\n"
            "from agentloop.errors import ReplayError\n"
            "from agentloop.models.replay import ReplayModel\n"
            "from agentloop.transcript.verify import iter_file\n"
            "path = sys.argv[1]\n"
            "faults = [(f.kind, f.detail) for f in verify_file(path).faults]\n"
            "try:\n    list(iter_file(path)); listed = 'listed'\n"
            "except OSError as exc:\n    listed = type(exc).__name__\n"
            "try:\n    ReplayModel.from_transcript(path); replayed = 'replayed'\n"
            "except ReplayError as exc:\n    replayed = 'unreadable' in str(exc)\n"
            "print(json.dumps([faults, listed, replayed]))\n"
        )
        for path, reason in cases:
            with self.subTest(path):
                start = time.monotonic()
                child = subprocess.run(
                    [sys.executable, "-c", program, path],
                    cwd=ROOT,
                    stdout=subprocess.PIPE,
                    timeout=20,
                    universal_newlines=True,
                )
                faults, listed, replayed = json.loads(child.stdout)
                self.assertEqual(faults, [["unreadable", reason]])
                self.assertIn(listed, ("OSError", "IsADirectoryError"))
                self.assertIs(replayed, True)
                self.assertLess(time.monotonic() - start, 10.0)

    def test_a_fifo_without_a_writer_does_not_block_and_a_pipe_with_data_is_read(self) -> None:
        fifo = self.path("fifo")
        os.mkfifo(fifo)
        program = (
            "import sys; from agentloop import verify_file; r = verify_file(sys.argv[1]); "
            "print(r.ok, r.count, [f.kind for f in r.faults])"
        )
        # In a child with a timeout: a hang fails the test instead of hanging the suite.
        child = subprocess.run(
            [sys.executable, "-c", program, fifo], cwd=ROOT, stdout=subprocess.PIPE, timeout=20, universal_newlines=True
        )
        self.assertEqual(child.stdout.strip(), "False 0 ['no_records']")
        run_path = self.path("run.jsonl")
        run("t", ScriptedModel([ModelReply("hi")]), [], transcript=run_path, max_steps=2, max_tokens=99)
        with open(run_path, "rb") as data:
            child = subprocess.run(
                [sys.executable, "-c", program, "/dev/stdin"],
                cwd=ROOT,
                stdin=data,
                stdout=subprocess.PIPE,
                timeout=20,
                universal_newlines=True,
            )
        self.assertEqual(child.stdout.strip(), "True 3 []")
        with open_input(run_path) as handle:
            self.assertEqual(len(handle.read().splitlines()), 3)

    def test_the_writer_refuses_a_device_a_fifo_and_a_directory_before_touching_them(self) -> None:
        fifo = self.path("out.fifo")
        os.mkfifo(fifo)
        for path, reason in (
            ("/dev/null", "it is a character device, not a regular file"),
            (fifo, "No such device or address"),  # no reader: ENXIO at once, never a block
            (self.path(""), "Is a directory"),
        ):
            with self.subTest(path):
                with self.assertRaises(OSError) as caught:
                    TranscriptWriter(path, overwrite=True)
                self.assertIn(reason, str(caught.exception))


class TestFaultFloods(TempDir):
    def valid_of_size(self, size: int) -> str:
        run_ = Run()
        with TranscriptWriter(self.path("valid.jsonl"), overwrite=True) as out:
            out.append("task", run_.task())
            while os.path.getsize(self.path("valid.jsonl")) < size:
                out.append("assistant", run_.assistant(calls=1, text="a realistic reply " * 10))
                out.append("tool", run_.tool({"rows": [{"id": i, "name": "row %d" % i} for i in range(10)]}))
        return self.path("valid.jsonl")

    def timed(self, path: str) -> Any:
        best, verdict = float("inf"), None
        for _ in range(3):
            start = time.perf_counter()
            verdict = verify_file(path)
            best = min(best, time.perf_counter() - start)
        return best, verdict

    def test_hostile_files_cost_no_more_than_valid_ones_and_say_what_went_unexamined(self) -> None:
        for unit, megabytes in ((b"x\n", 1), (b"{}\n", 6)):
            with self.subTest(unit=unit):
                hostile = self.write_bytes(unit * (megabytes * 1_000_000 // len(unit)), "hostile.jsonl")
                size = os.path.getsize(hostile)
                valid_time, valid = self.timed(self.valid_of_size(size))
                hostile_time, verdict = self.timed(hostile)
                self.assertTrue(valid.ok)
                self.assertLess(
                    hostile_time, 3 * valid_time, "hostile %.3f s, valid %.3f s" % (hostile_time, valid_time)
                )
                self.assertEqual(len(verdict.faults), MAX_FAULTS + 1)
                last = verdict.faults[-1]
                lines = size // len(unit)
                judged = int(re.search(r"after line (\d+);", last.detail).group(1))  # type: ignore[union-attr]
                self.assertLessEqual(judged, MAX_FAULTS + 1)  # a {} record 0 brings two faults
                self.assertEqual(
                    (last.kind, verdict.unexamined_lines, verdict.unexamined_bytes),
                    ("too_many_faults", lines - judged, size - judged * len(unit)),
                )
                self.assertEqual(
                    last.detail,
                    "more than 100 faults: stopped judging after line %d; %d more line(s) (%d bytes) not examined"
                    % (judged, verdict.unexamined_lines, verdict.unexamined_bytes),
                )
                tracemalloc.start()
                try:
                    verify_file(hostile)
                    peak = tracemalloc.get_traced_memory()[1]
                finally:
                    tracemalloc.stop()
                self.assertLess(peak, 3_000_000, "verify_file held %d bytes" % (peak,))

    def test_max_faults_is_a_parameter_and_the_anchor_checks_are_not_made_past_it(self) -> None:
        path = self.write_bytes(b"x\n" * 10 + b"tail")
        verdict = verify_file(path, max_faults=3, expect_count=5)
        self.assertEqual([f.kind for f in verdict.faults], ["bad_json"] * 3 + ["too_many_faults"])
        self.assertEqual((verdict.unexamined_lines, verdict.unexamined_bytes), (7, 16))
        every = verify_file(path, max_faults=50, expect_count=5)
        self.assertEqual([f.kind for f in every.faults], ["bad_json"] * 11 + ["no_records", "count_mismatch"])
        listed = list(iter_file(path, max_faults=2))
        self.assertEqual([n for n, _, _ in listed], [1, 2, 0])
        self.assertIn("stopped after line 2; 9 more line(s) (20 bytes) not read", str(listed[-1][2]))
        for bad in (0, -1, True, 2.5, None):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                verify_file(path, max_faults=bad)  # type: ignore[arg-type]


class TestWriterLimit(TempDir):
    def test_a_limit_beyond_the_verifiers_line_limit_is_refused_before_the_file_is_made(self) -> None:
        with self.assertRaises(RunConfigError) as caught:
            TranscriptWriter(self.path(), max_record_bytes=MAX_LINE_BYTES + 1)
        self.assertEqual(
            str(caught.exception),
            "max_record_bytes: 16777217 is more than 16777216, the longest line a verifier reads (MAX_LINE_BYTES)",
        )
        with self.assertRaises(RunConfigError):
            run(
                "t",
                ScriptedModel([]),
                [],
                transcript=self.path(),
                max_steps=1,
                max_tokens=1,
                max_record_bytes=32 * 2**20,
            )
        self.assertFalse(os.path.exists(self.path()))

    def test_the_largest_allowed_record_verifies_and_none_means_that_limit(self) -> None:
        run_ = Run()
        with TranscriptWriter(self.path(), max_record_bytes=None) as out:
            out.append("task", run_.task())
            out.append("assistant", run_.assistant(text="x" * (MAX_LINE_BYTES - 300)))
            with self.assertRaises(UnrecordableError):
                out.append("stop", run_.stop(detail="y" * MAX_LINE_BYTES))
        self.assertTrue(verify_file(self.path()).ok)


class TestGrammar(TempDir):
    def setUp(self) -> None:
        super().setUp()
        tools = [Tool("echo", "Echo.", {"type": "object"}, lambda **kw: kw)]
        model = ScriptedModel(
            [ModelReply("one", [ToolCall("echo", {"a": 1}), ToolCall("echo", {"b": 2})]), ModelReply("done")]
        )
        run("t", model, tools, transcript=self.path("run.jsonl"), max_steps=3, max_tokens=10**6)
        self.records = read_records(self.path("run.jsonl"))
        self.assertEqual([r["kind"] for r in self.records], ["task", "assistant", "tool", "tool", "assistant", "stop"])

    def faults(self, records: List[Dict[str, Any]], **kwargs: Any) -> List[str]:
        return [str(f) for f in verify_file(rewrite(self.path("changed.jsonl"), records), **kwargs).faults]

    def test_each_broken_rule_is_a_bad_payload_naming_it(self) -> None:
        def edit(index: int, **changes: Any) -> List[Dict[str, Any]]:
            records = json.loads(json.dumps(self.records))
            payload = records[index]["payload"]
            for name, value in changes.items():
                if value is None:
                    del payload[name]
                else:
                    payload[name] = value
            return records

        cases = [
            (
                edit(5, reason="exploded"),
                'record 5 (line 6): bad_payload: payload.reason is "exploded", not one of %s'
                % (", ".join(messages_module.STOP_REASONS),),
            ),
            (edit(2, ok=None), "record 2 (line 3): bad_payload: payload has no 'ok'"),
            (
                edit(5, steps=3),
                "record 5 (line 6): bad_payload: payload.steps is 3, but the run has 2 assistant records",
            ),
            (
                edit(4, step=3),
                "record 4 (line 5): bad_payload: payload.step is 3, expected 2 "
                "(one more than the assistant records before it)",
            ),
            (
                edit(1, total_tokens=99),
                "record 1 (line 2): bad_payload: payload.total_tokens is 99, expected 6 "
                "(the previous total 0 plus tokens 6)",
            ),
            (
                edit(3, id="call_9_9"),
                'record 3 (line 4): bad_payload: payload answers call "call_9_9" ("echo"), '
                'expected call "call_1_1" ("echo"), call 1 of step 1',
            ),
            (edit(2, error="and a value"), "record 2 (line 3): bad_payload: payload has ok true and an 'error'"),
            (
                edit(0, budgets={"max_steps": "3"}),
                'record 0 (line 1): bad_payload: payload.budgets.max_steps is "3", expected an integer >= 0',
            ),
            (edit(1, text=5), "record 1 (line 2): bad_payload: payload.text is 5, expected a string"),
            (
                self.records[:3] + self.records[4:],
                "record 3 (line 4): bad_payload: an assistant record "
                "while 1 call(s) of step 1 await their tool records",
            ),
            (
                self.records[:4] + self.records[3:4] + self.records[4:],
                "record 4 (line 5): bad_payload: a tool record with no call awaiting its result (step 1 asked for 2)",
            ),
        ]
        for records, expected in cases:
            with self.subTest(expected):
                faults = self.faults(records)
                self.assertEqual(faults[:1], [expected])
                self.assertTrue(all(" bad_payload: " in f for f in faults), faults)

    def test_each_member_the_common_records_hold_is_checked(self) -> None:
        # The grammar's fast paths for plain assistant and tool records (grammar._plain_*, and
        # Gates.problem's for a run that gates nothing) must decline each of these, so the full
        # checks name the same fault as before they existed.
        cases = [
            (1, {"step": True}, "payload.step is a boolean, expected an integer >= 0"),
            (1, {"tool_calls": {}}, "payload.tool_calls is an object, expected an array"),
            (1, {"tokens": -1}, "payload.tokens is -1, expected an integer >= 0"),
            (1, {"total_tokens": "6"}, 'payload.total_tokens is "6", expected an integer >= 0'),
            (1, {"usage": "x"}, 'payload.usage is "x", expected an object'),
            (1, {"truncated": False}, "payload.truncated is a boolean, expected true"),
            (1, {"provider_data": []}, "payload.provider_data is an array, expected an object"),
            (2, {"step": -1}, "payload.step is -1, expected an integer >= 0"),
            (2, {"id": 5}, "payload.id is 5, expected a string"),
            (2, {"name": None}, "payload.name is null, expected a string"),
            (2, {"ok": 1}, "payload.ok is 1, expected a boolean"),
            (2, {"approval": "yes"}, 'payload.approval is "yes", expected an object'),
            # in a run that gates no tool (Gates.problem's fast exit must not pass these)
            (
                2,
                {"gated": False},
                "payload has 'gated', but the task record records no predicate outcome for tool \"echo\"",
            ),
            (
                2,
                {"approval": {"decision": "approve", "by": "x"}},
                "payload has an 'approval', but the task record gates no tool \"echo\"",
            ),
            (-1, {"id": 5}, "payload.tool_calls[1].id is 5, expected a string"),
            (-1, {"name": 5}, "payload.tool_calls[1].name is 5, expected a string"),
            (-1, {"arguments": "x"}, 'payload.tool_calls[1].arguments is "x", expected an object or null'),
            (-1, {"arguments_error": "e"}, "payload.tool_calls[1] has an 'arguments_error' beside its arguments"),
        ]
        for index, changes, expected in cases:
            with self.subTest(expected):
                records = json.loads(json.dumps(self.records))
                target = records[1]["payload"]["tool_calls"][1] if index < 0 else records[index]["payload"]
                target.update(changes)
                line = 2 if index < 0 else index + 1
                self.assertEqual(
                    self.faults(records)[:1], ["record %d (line %d): bad_payload: %s" % (line - 1, line, expected)]
                )

    def test_stop_reasons_are_read_when_verifying(self) -> None:
        records = json.loads(json.dumps(self.records))
        records[5]["payload"]["reason"] = "brand_new_reason"
        self.assertEqual(len(self.faults(records)), 1)
        with mock.patch.object(messages_module, "STOP_REASONS", messages_module.STOP_REASONS + ("brand_new_reason",)):
            self.assertEqual(self.faults(records), [])

    def test_unknown_members_are_ignored_and_complete_is_a_verdict_only_when_asked(self) -> None:
        records = json.loads(json.dumps(self.records))
        records[1]["payload"]["something_new"] = {"x": 1}
        self.assertEqual(self.faults(records), [])
        self.assertEqual(
            self.faults(records[:5], require_complete=True),
            ["file: incomplete: the run has no stop record: it was cut short, or is still running"],
        )
        self.assertEqual(self.faults(records[:5]), [])


class TestNoncharacters(TempDir):
    def test_the_writer_refuses_them_and_the_verifier_flags_them(self) -> None:
        for char in ("\ufdd0", "\ufdef", "\ufffe", "\uffff", "\U0001fffe", "\U0010ffff"):
            with self.subTest(hex(ord(char))):
                with self.assertRaises(UnrecordableError) as caught:
                    canonical_bytes({"text": "a" + char})
                self.assertEqual(
                    str(caught.exception), "$.text: string has the noncharacter U+%04X at index 1" % (ord(char),)
                )
                with self.assertRaises(UnrecordableError):
                    canonical_bytes({char: 1})
                body = json.dumps(
                    {"kind": "task", "payload": dict(Run.task(), task=char), "prev": "0" * 64, "seq": 0},
                    ensure_ascii=False,
                    separators=(",", ":"),
                    sort_keys=True,
                ).encode()
                line = b'{"hash":"' + hashlib.sha256(body).hexdigest().encode() + b'",' + body[1:] + b"\n"
                verdict = verify_file(self.write_bytes(line))
                self.assertEqual([f.kind for f in verdict.faults], ["unserialisable_payload"])
        for char in ("\ufdcf", "\ufdf0", "\ufffd", "\U0001fffd", "\U00020000", "\u1fff"):
            canonical_bytes(char)  # neighbours are characters

    def test_a_run_keeps_them_out_of_the_transcript(self) -> None:
        tools = [Tool("echo", "Echo.", {"type": "object"}, lambda **kw: "\ufdd0")]
        model = ScriptedModel([ModelReply("ok", [ToolCall("echo", {})]), ModelReply("bad \uffff")])
        result = run("t", model, tools, transcript=self.path(), max_steps=3, max_tokens=10**6)
        self.assertEqual(result.stop_reason, "model_error")
        self.assertIn("noncharacter U+FFFF", result.detail)
        self.assertTrue(verify_file(self.path()).ok)
        self.assertIn("noncharacter U+FDD0", read_records(self.path())[2]["payload"]["error"])


class TestRecordedTools(TempDir):
    def test_a_replay_with_recorded_tools_runs_no_tool_and_is_identical(self) -> None:
        calls: List[Any] = []

        def add(a: int, b: int) -> Dict[str, int]:
            calls.append((a, b))
            return {"sum": a + b}

        def broken() -> None:
            calls.append("broken")
            raise RuntimeError("x" * 5000)  # its error is cut to MAX_ERROR_CHARS in the record

        tools = [
            Tool(
                "add",
                "Add.",
                {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"],
                },
                add,
            ),
            Tool("broken", "Fails.", {"type": "object"}, broken),
        ]
        model = ScriptedModel(
            [
                ModelReply(
                    "go",
                    [
                        ToolCall("add", {"a": 1, "b": 2}),
                        ToolCall("add", {"a": "no"}),
                        ToolCall("nope", {}),
                        ToolCall("broken", {}),
                    ],
                ),
                ModelReply("again", [ToolCall("add", {"a": 1, "b": 2})]),
                ModelReply("done"),
            ]
        )
        run("t", model, tools, transcript=self.path("original.jsonl"), max_steps=5, max_tokens=10**6)
        ran = len(calls)
        outcome = replay(self.path("original.jsonl"), "recorded", transcript=self.path("again.jsonl"))
        self.assertTrue(outcome.identical, outcome.difference)
        self.assertEqual(len(calls), ran)  # no tool ran
        with self.assertRaises(RunConfigError):
            replay(self.path("original.jsonl"), "recorde", transcript=self.path("x.jsonl"))

    def test_a_call_that_matches_no_recorded_call_fails_and_the_replay_differs(self) -> None:
        tools = [Tool("echo", "Echo.", {"type": "object"}, lambda **kw: kw)]
        run(
            "t",
            ScriptedModel([ModelReply("go", [ToolCall("echo", {"a": 1})]), ModelReply("done")]),
            tools,
            transcript=self.path("original.jsonl"),
            max_steps=3,
            max_tokens=10**6,
        )
        records = read_records(self.path("original.jsonl"))
        model = ReplayModel.from_transcript(self.path("original.jsonl"))
        stand_in = model.recorded_tools().get("echo")
        assert stand_in is not None
        self.assertEqual(stand_in.invoke({"a": 1}), records[2]["payload"]["value"])
        with self.assertRaisesRegex(Exception, 'no recorded call of "echo" with these arguments is left to answer'):
            stand_in.invoke({"a": 1})  # each recorded result answers once
        with self.assertRaisesRegex(Exception, "no recorded call"):
            stand_in.invoke({"a": 2})


if __name__ == "__main__":
    unittest.main()


class TestWholeFileReads(unittest.TestCase):
    """Key files, checkpoints and task lists are read whole: only regular files, never cut short."""

    def test_fifos_devices_and_long_files_are_refused_at_once(self) -> None:
        import tempfile

        from agentloop.batch.spec import read_specs
        from agentloop.errors import RunConfigError, SigningKeyError
        from agentloop.transcript.checkpoint import MAX_KEY_FILE_BYTES, load_key

        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "fifo")
            os.mkfifo(fifo)
            long_key = os.path.join(tmp, "long.key")
            with open(long_key, "wb") as handle:
                handle.write(b"k" * (MAX_KEY_FILE_BYTES + 1))
            for path, why in (
                (fifo, "it is a pipe"),
                ("/dev/zero", "character device"),
                (tmp, "directory"),
                (long_key, "is larger than 1048576 bytes"),
            ):
                with self.subTest(path=path):
                    with self.assertRaises(SigningKeyError) as caught:
                        load_key(path)
                    self.assertIn(why, str(caught.exception))
            for path in (fifo, "/dev/zero", tmp):
                with self.subTest(tasks=path):
                    with self.assertRaisesRegex(RunConfigError, "cannot be read: it is a"):
                        read_specs(path)


class TestRecordedBudgets(unittest.TestCase):
    """A task record whose optional budgets agentloop would never write is bad_payload, not a replayable run."""

    def test_each_optional_budget_of_a_wrong_type_is_a_fault(self) -> None:
        import hashlib
        import json
        import tempfile

        from agentloop import ModelReply, ScriptedModel, run, verify_file
        from agentloop.canonical import canonical_bytes

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.jsonl")
            run("t", ScriptedModel([ModelReply("hi")]), [], transcript=path, max_steps=3, max_tokens=100)
            with open(path, "rb") as handle:
                records = [json.loads(line) for line in handle]
            for member, bad in (
                ("max_cost", [1]),
                ("max_cost", "1e2"),
                ("max_seconds", "x"),
                ("tell_budgets", 3),
                ("max_tool_calls", -1),
                ("tool_timeout", 0),
                ("prices", {"m": {"input": 3}}),
            ):
                with self.subTest(member=member, value=bad):
                    task = json.loads(json.dumps(records[0]))
                    task["payload"]["budgets"][member] = bad
                    chain, prev = [], "0" * 64
                    for record in [task] + records[1:]:  # every hash recomputed: only the type is wrong
                        body = {k: v for k, v in record.items() if k != "hash"}
                        body["prev"] = prev
                        prev = hashlib.sha256(canonical_bytes(body)).hexdigest()
                        chain.append(canonical_bytes(dict(body, hash=prev)) + b"\n")
                    forged = os.path.join(tmp, "forged.jsonl")
                    with open(forged, "wb") as handle:
                        handle.write(b"".join(chain))
                    result = verify_file(forged)
                    self.assertFalse(result.ok)
                    self.assertEqual((result.faults[0].kind, result.faults[0].index), ("bad_payload", 0))
                    self.assertIn("payload.budgets.%s" % member, result.faults[0].detail)
