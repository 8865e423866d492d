"""ReplayModel and `agentloop replay`: recorded runs replay byte-identically, and a changed conversation is refused."""

from __future__ import annotations

import contextlib
import io
import json
import os
import unittest
from typing import Any, Dict, List

import demo
from agentloop import ModelReply, ScriptedModel, Tool, ToolCall, ToolRegistry, run
from agentloop.messages import Usage
from agentloop.models import ReplayError, ReplayMismatchError, ReplayModel, first_difference, replay

from tests.support.helpers import TempDir, demo_tools, read_lines, read_records
from tests.support.modelcase import LoopbackCase


def broken_add() -> ToolRegistry:
    """The demo tools, with an add that is off by one: the regression a replay must catch."""
    tools = [t for t in demo_tools() if t.name != "add"]
    add = demo_tools().get("add")
    assert add is not None
    tools.append(Tool("add", add.description, add.parameters, lambda a, b: {"sum": a + b + 1}))
    return ToolRegistry(tools)


class ReplayCase(TempDir):
    def record(self, replies: List[Any], tools: Any = None, **budgets: Any) -> str:
        budgets.setdefault("max_steps", 8)
        budgets.setdefault("max_tokens", 10_000)
        run("task", ScriptedModel(replies), demo_tools() if tools is None else tools, transcript=self.path(), **budgets)
        return self.path()

    def replayed(self, tools: Any = None) -> Any:
        return replay(self.path(), demo_tools() if tools is None else tools, transcript=self.path("r.jsonl"))


class TestIdentical(ReplayCase):
    def test_the_demo_transcripts_replay_byte_identically(self) -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            demo.main(["--out", self.dir])
        for name in ("demo-answer.jsonl", "demo-recover.jsonl", "demo-budget.jsonl"):
            with self.subTest(name):
                source = os.path.join(self.dir, name)
                outcome = replay(source, demo_tools(), transcript=self.path("again-" + name))
                self.assertTrue(outcome.identical, outcome.difference)
                self.assertEqual(read_lines(source), read_lines(self.path("again-" + name)))

    def test_unrecordable_and_unreadable_arguments_duplicate_ids_and_usage_replay_identically(self) -> None:
        self.record(
            [
                ModelReply(
                    "odd calls",
                    [
                        ToolCall("add", {"a": float("nan"), "b": 1}, "x"),
                        ToolCall("add", {"a": 1, "b": 2}, "x"),
                        ToolCall("echo", {}, "y", 'arguments are not valid JSON (nope): "{"'),
                        ToolCall("greet", {"name": "Ada"}),
                    ],
                    Usage(40, 9),
                ),
                ModelReply("done", usage=Usage(60, 2)),
            ]
        )
        outcome = self.replayed()
        self.assertTrue(outcome.identical, outcome.difference)
        records = read_records(self.path())
        self.assertEqual(
            [c["arguments"] for c in records[1]["payload"]["tool_calls"]],
            [None, {"a": 1, "b": 2}, None, {"name": "Ada"}],
        )

    def test_a_run_that_ended_because_its_model_raised_replays_to_the_same_stop(self) -> None:
        class Flaky:
            def __init__(self, message: str) -> None:
                self.message = message
                self.turns = 0

            def __call__(self, messages: List[Dict[str, Any]], manifest: List[Dict[str, Any]]) -> ModelReply:
                self.turns += 1
                if self.turns == 2:
                    raise ConnectionError(self.message)
                return ModelReply("first", [ToolCall("add", {"a": 1, "b": 2})])

        for message in ("HTTP 500: upstream broke", "x" * 5000):  # the long one is cut in the record
            with self.subTest(len(message)):
                path = self.path("flaky-%d.jsonl" % len(message))
                run("task", Flaky(message), demo_tools(), transcript=path, max_steps=5, max_tokens=10_000)
                self.assertEqual(read_records(path)[-1]["payload"]["reason"], "model_error")
                outcome = replay(path, demo_tools(), transcript=path + ".r")
                self.assertTrue(outcome.identical, outcome.difference)

    def test_the_model_info_is_replayed_into_the_task_record(self) -> None:
        class Named(ScriptedModel):
            def model_info(self) -> Dict[str, Any]:
                return {"provider": "openai", "model": "gpt-x", "host": "api.openai.com"}

        run(
            "task",
            Named([ModelReply("hi", usage=Usage(3, 1))]),
            demo_tools(),
            transcript=self.path(),
            max_steps=2,
            max_tokens=99,
        )
        self.assertTrue(self.replayed().identical)
        self.assertEqual(read_records(self.path("r.jsonl"))[0]["payload"]["model"]["model"], "gpt-x")


class TestRefusals(ReplayCase):
    def test_a_tool_that_now_answers_differently_is_caught_at_the_next_step(self) -> None:
        self.record([ModelReply("adding", [ToolCall("add", {"a": 40, "b": 2})]), ModelReply("42")])
        outcome = self.replayed(broken_add())
        self.assertFalse(outcome.identical)
        self.assertEqual(
            str(outcome.difference), "record 2 (line 3): tool record: $.payload.value.sum: original 42, replay 43"
        )
        self.assertEqual(outcome.run.stop_reason, "model_error")
        self.assertEqual(
            outcome.run.detail,
            "model raised ReplayMismatchError: step 2: the conversation differs from the recorded one: "
            'messages[2].content: recorded "{\\"sum\\":42}", got "{\\"sum\\":43}"',
        )

    def test_a_changed_tool_list_is_refused_at_step_1(self) -> None:
        self.record([ModelReply("hi")])
        tools = ToolRegistry([t for t in demo_tools() if t.name != "fail"])
        outcome = self.replayed(tools)
        self.assertTrue(
            outcome.run.detail.startswith(
                "model raised ReplayMismatchError: step 1: the tools differ from the recorded ones: tools"
            )
        )
        self.assertTrue(str(outcome.difference).startswith("record 0 (line 1): task record: $.payload.tools"))

    def test_the_model_refuses_a_conversation_that_is_not_the_recorded_one(self) -> None:
        self.record([ModelReply("hi")])
        model = ReplayModel.from_transcript(self.path())
        manifest = demo_tools().manifest()
        self.assertEqual(model([{"role": "user", "content": "task"}], manifest), ModelReply("hi"))
        with self.assertRaises(ReplayMismatchError) as caught:
            model([{"role": "user", "content": "another task"}], manifest)
        self.assertEqual(
            str(caught.exception),
            "step 1: the conversation differs from the recorded one: "
            'messages[0].content: recorded "task", got "another task"',
        )
        with self.assertRaises(ReplayMismatchError) as caught:
            model(
                [{"role": "user", "content": "task"}, {"role": "assistant", "content": "hi", "tool_calls": []}],
                manifest,
            )
        self.assertEqual(
            str(caught.exception),
            "step 2: the recording holds no reply for step 2 (1 recorded; it stopped with no_tool_calls)",
        )

    def test_a_transcript_without_its_stop_record_replays_to_a_named_difference(self) -> None:
        self.record([ModelReply("adding", [ToolCall("add", {"a": 1, "b": 2})]), ModelReply("3")])
        lines = read_lines(self.path())
        self.write_bytes(b"".join(lines[:-1]), "cut.jsonl")
        outcome = replay(self.path("cut.jsonl"), demo_tools(), transcript=self.path("r.jsonl"))
        self.assertEqual(str(outcome.difference), "record 4 (line 5): the original ends before this stop record")
        self.assertEqual(outcome.run.stop_reason, "no_tool_calls")

    def test_a_transcript_that_does_not_verify_is_not_replayed(self) -> None:
        self.record([ModelReply("hi")])
        lines = read_lines(self.path())
        self.write_bytes(lines[0] + lines[1].replace(b'"hi"', b'"ho"') + lines[2], "bad.jsonl")
        with self.assertRaises(ReplayError) as caught:
            ReplayModel.from_transcript(self.path("bad.jsonl"))
        self.assertIn(
            "cannot replay %s: it does not verify: record 1 (line 2): hash_mismatch" % self.path("bad.jsonl"),
            str(caught.exception),
        )

    def test_first_difference_names_a_missing_record(self) -> None:
        self.record([ModelReply("hi")])
        self.write_bytes(b"".join(read_lines(self.path())[:2]), "short.jsonl")
        self.assertEqual(
            str(first_difference(self.path(), self.path("short.jsonl"))),
            "record 2 (line 3): the replay ends before this stop record",
        )
        self.assertIsNone(first_difference(self.path(), self.path()))


class TestCommandLine(LoopbackCase, ReplayCase):
    def test_replay_exits_0_when_identical_and_1_when_it_differs(self) -> None:
        self.record([ModelReply("adding", [ToolCall("add", {"a": 40, "b": 2})]), ModelReply("42")])
        status, out, _ = self.cli("replay", self.path(), "--tools", "demo:demo_tools")
        self.assertEqual(status, 0)
        self.assertTrue(out.endswith("replay: identical to %s\n" % self.path()))
        self.assertTrue(os.path.exists(self.path("t.replay.jsonl")))
        status, out, _ = self.cli(
            "replay", self.path(), "--tools", "tests.models.test_replay:broken_add", "-o", self.path("b.jsonl")
        )
        self.assertEqual(status, 1)
        self.assertIn(
            "replay: differs from %s at record 2 (line 3): tool record: $.payload.value.sum: original 42, replay 43\n"
            % self.path(),
            out,
        )

    def test_replay_refuses_to_write_over_its_source_and_bad_tools_specs(self) -> None:
        self.record([ModelReply("hi")])
        before = read_lines(self.path())
        status, _, err = self.cli("replay", self.path(), "--tools", "demo:demo_tools", "-o", self.path(), "--overwrite")
        self.assertEqual(status, 2)
        self.assertIn("is the transcript being replayed", err)
        self.assertEqual(read_lines(self.path()), before)
        for spec, message in (
            ("demo", "--tools: must be MODULE:NAME"),
            ("no_such_module_x:t", "--tools: cannot import no_such_module_x"),
            ("demo:nothing", '--tools: demo has no attribute "nothing"'),
        ):
            with self.subTest(spec):
                status, _, err = self.cli("replay", self.path(), "--tools", spec, "-o", self.path("x.jsonl"))
                self.assertEqual(status, 2)
                self.assertIn(message, err)


class TestReplayBudgets(unittest.TestCase):
    def test_a_non_default_max_record_bytes_is_recorded_and_replayed(self) -> None:
        import tempfile

        from agentloop import ModelReply, ScriptedModel, Tool, ToolCall, run
        from agentloop.models import replay

        big = [Tool("big", "", {"type": "object"}, lambda: "y" * 70_000)]
        with tempfile.TemporaryDirectory() as folder:
            original = os.path.join(folder, "o.jsonl")
            run(
                "t",
                ScriptedModel([ModelReply("", [ToolCall("big")]), ModelReply("end")]),
                big,
                transcript=original,
                max_steps=3,
                max_tokens=10**6,
                max_record_bytes=65536,
            )
            with open(original, encoding="utf-8") as handle:
                self.assertEqual(json.loads(handle.readline())["payload"]["budgets"]["max_record_bytes"], 65536)
            result = replay(original, big, transcript=os.path.join(folder, "r.jsonl"))
            self.assertTrue(result.identical, result.difference)
