"""RunOptions: one value for a run's options, the task record written from it and read back into it,
and record 0 of a planned run computed without running anything (agentloop/loop/options.py, start.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import os
from typing import Any, Dict, List

from agentloop import ModelReply, RunConfigError, ScriptedModel, ToolCall, run, run_async
from agentloop.batch.spec import RunSpec, expected_task_line, run_options
from agentloop.loop.options import OPTION_NAMES, RECORDED_OPTIONS, RunOptions, RunOverrides, options_from
from agentloop.loop.start import planned_task_line
from agentloop.transcript.format import MAX_RECORD_BYTES

from tests.support.approval_fixtures import delete_tool
from tests.support.helpers import TempDir, demo_tools, read_lines, read_records


class Adapter:
    """A model that names itself (model_info) and answers once; it counts its turns."""

    def __init__(self) -> None:
        self.turns = 0

    def model_info(self) -> Dict[str, Any]:
        return {"provider": "test", "model": "adder", "host": "example.org"}

    def __call__(self, messages: List[Any], manifest: List[Dict[str, Any]]) -> ModelReply:
        self.turns += 1
        return ModelReply("done")


#: Option sets that each change record 0 in another way (every recorded option is set in one of them).
RECORDED_SETS: List[Dict[str, Any]] = [
    {},
    {"stop_sentinel": "DONE", "max_record_bytes": 70000, "max_tool_calls": 3},
    {"system": "Be brief.", "tell_budgets": True, "tool_timeout": 2.5},
    {"max_cost": "0.50", "prices": {"adder": {"input": "3", "output": "15.00"}}},
    {"output_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
    {"output_schema": {"type": "integer"}, "system": "x"},
]


class TestTheValue(TempDir):
    def test_the_keywords_of_run_are_the_fields_of_the_value_with_the_same_types(self) -> None:
        fields = {f.name: f.type for f in dataclasses.fields(RunOptions)}
        keywords = {name: getattr(kind, "__forward_arg__", kind) for name, kind in RunOverrides.__annotations__.items()}
        self.assertEqual(fields, keywords)
        self.assertEqual(tuple(fields), OPTION_NAMES)
        self.assertEqual(len(OPTION_NAMES), 23)
        for function in (run, run_async):
            parameters = inspect.signature(function).parameters
            self.assertEqual(list(parameters), ["task", "model", "tools", "options", "overrides"])
            self.assertIs(parameters["overrides"].kind, inspect.Parameter.VAR_KEYWORD)

    def test_it_is_frozen_and_checked_when_built(self) -> None:
        options = RunOptions(max_steps=8, max_tokens=100)
        with self.assertRaises(dataclasses.FrozenInstanceError):
            options.max_steps = 9  # type: ignore[misc]
        bad = [
            ({"max_steps": -1}, "max_steps: must be an int from 0 to 2**53-1, got -1"),
            ({"max_tokens": True}, "max_tokens: must be an int from 0 to 2**53-1, got True"),
            ({"fsync": 1}, "fsync: must be True or False, got 1"),
            ({"system": 3}, "system: must be None or a str, got 3"),
            ({"clock": lambda: 0}, "clock: must be a callable returning seconds, and is read only with max_seconds"),
            ({"max_workers": 0}, "max_workers: must be an int from 1 to 1024, got 0"),
            ({"approver": "yes"}, "approver: must be None or a callable taking an ApprovalRequest"),
            ({"max_cost": "1"}, "max_cost: needs prices="),
        ]
        for change, message in bad:
            with self.subTest(change=change):
                with self.assertRaises(RunConfigError) as caught:
                    dataclasses.replace(options, **change)
                self.assertTrue(str(caught.exception).startswith(message), str(caught.exception))

    def test_an_unknown_keyword_is_refused_naming_it(self) -> None:
        for call in (
            lambda **kw: run("t", ScriptedModel([]), [], **kw),
            lambda **kw: asyncio.run(run_async("t", ScriptedModel([]), [], **kw)),
        ):
            with self.assertRaises(RunConfigError) as caught:
                call(transcript=self.path(), max_steps=1, max_tokens=1, max_step=2)
            self.assertEqual(caught.exception.parameter, "max_step")
            self.assertIn("is not an option of run() (did you mean max_steps?", caught.exception.reason)
        with self.assertRaisesRegex(RunConfigError, r"^colour: is not an option of run\(\) \(the options: max_steps, "):
            options_from(None, {"colour": 1, "max_steps": 1, "max_tokens": 1})
        self.assertFalse(os.path.exists(self.path()))

    def test_the_required_options_and_the_options_argument(self) -> None:
        with self.assertRaisesRegex(RunConfigError, r"^max_tokens: is required \(a keyword, or options=RunOptions"):
            run("t", ScriptedModel([]), [], transcript=self.path(), max_steps=1)
        with self.assertRaisesRegex(RunConfigError, r"^transcript: is required"):
            run("t", ScriptedModel([]), [], RunOptions(1, 1))
        with self.assertRaisesRegex(RunConfigError, r"^options: must be a RunOptions or None, got dict"):
            run("t", ScriptedModel([]), [], {"max_steps": 1})  # type: ignore[arg-type]

    def test_keywords_a_value_and_both_write_the_same_bytes(self) -> None:
        def replies() -> ScriptedModel:
            return ScriptedModel([ModelReply("adding", [ToolCall("add", {"a": 1, "b": 2})]), ModelReply("3")])

        run("task", replies(), demo_tools(), transcript=self.path("a.jsonl"), max_steps=4, max_tokens=900, system="s")
        shared = RunOptions(max_steps=4, max_tokens=900, system="s")
        run("task", replies(), demo_tools(), shared, transcript=self.path("b.jsonl"))
        run(
            "task",
            replies(),
            demo_tools(),
            dataclasses.replace(shared, transcript=self.path("c.jsonl"), max_steps=99),
            max_steps=4,
        )
        asyncio.run(run_async("task", replies(), demo_tools(), shared, transcript=self.path("d.jsonl")))
        first = read_lines(self.path("a.jsonl"))
        self.assertEqual(len(first), 5)
        for name in "bcd":
            self.assertEqual(read_lines(self.path(name + ".jsonl")), first, name)


class TestTheTaskRecord(TempDir):
    def recorded(self, name: str, tools: Any, **options: Any) -> Dict[str, Any]:
        run("task", Adapter(), tools, transcript=self.path(name), max_steps=2, max_tokens=500, **options)
        return read_records(self.path(name))[0]

    def test_read_back_it_gives_the_recorded_options_and_writes_the_recorded_payload(self) -> None:
        for number, options in enumerate(RECORDED_SETS):
            with self.subTest(options=options):
                record = self.recorded("%d.jsonl" % number, demo_tools(), **options)
                back = RunOptions.from_task_record(record, demo_tools())
                self.assertEqual(back, RunOptions.from_task_record(record["payload"]))
                for name in OPTION_NAMES:
                    if name not in RECORDED_OPTIONS:
                        self.assertEqual(getattr(back, name), getattr(RunOptions(1, 1), name), name)
                registry, _ = back.toolset(demo_tools())
                self.assertEqual(back.task_record("task", registry, Adapter().model_info()), record["payload"])

    def test_a_run_with_max_seconds_gives_its_budget_back_not_its_clock(self) -> None:
        readings = iter([10, 11, 12])
        record = self.recorded("t.jsonl", [], max_seconds=30, clock=lambda: next(readings))
        self.assertEqual(record["payload"]["clock"], 10)
        back = RunOptions.from_task_record(record)
        self.assertEqual((back.max_seconds, back.clock), (30, None))
        registry, _ = back.toolset([])
        self.assertEqual(back.task_record("task", registry, Adapter().model_info(), 10), record["payload"])

    def test_a_tool_of_its_own_named_final_result_is_not_taken_for_the_output_schema(self) -> None:
        record = self.recorded("t.jsonl", demo_tools(), output_schema={"type": "integer"})
        self.assertEqual(RunOptions.from_task_record(record).output_schema["properties"]["result"], {"type": "integer"})
        own = [dataclasses.replace(demo_tools().get("add"), name="final_result")]  # type: ignore[type-var]
        self.assertIsNone(RunOptions.from_task_record(record, own).output_schema)

    def test_a_record_without_budgets_is_refused(self) -> None:
        for record in ({}, {"budgets": {"max_steps": 1}}, {"kind": "task", "payload": {"budgets": []}}):
            with self.assertRaisesRegex(
                RunConfigError, "^task record: has no budgets object with max_steps and max_tokens"
            ):
                RunOptions.from_task_record(record)


class TestPlannedTaskLine(TempDir):
    def test_it_is_the_first_line_the_run_writes_and_nothing_runs(self) -> None:
        sets = RECORDED_SETS + [{"approver": lambda request: None}]
        for number, options in enumerate(sets):
            with self.subTest(options=options):
                tools = demo_tools() if "approver" not in options else [delete_tool()]
                model = Adapter()
                planned = planned_task_line(
                    "task", model, tools, transcript=self.path("p.jsonl"), max_steps=2, max_tokens=500, **options
                )
                self.assertEqual((model.turns, os.listdir(self.dir)), (0, []))
                run(
                    "task",
                    model,
                    tools,
                    transcript=self.path("%d.jsonl" % number),
                    max_steps=2,
                    max_tokens=500,
                    **options,
                )
                self.assertEqual(planned, read_lines(self.path("%d.jsonl" % number))[0])
                os.unlink(self.path("%d.jsonl" % number))

    def test_it_refuses_what_run_refuses(self) -> None:
        with self.assertRaisesRegex(
            RunConfigError, "^max_seconds: record 0 of a run with max_seconds holds the clock reading"
        ):
            planned_task_line("t", Adapter(), [], max_steps=1, max_tokens=1, max_seconds=5)
        with self.assertRaisesRegex(RunConfigError, "^approver: tools 'delete' require approval"):
            planned_task_line("t", Adapter(), [delete_tool()], max_steps=1, max_tokens=1)
        with self.assertRaisesRegex(
            RunConfigError, r"^task: the task record \(\d+ bytes\) exceeds max_record_bytes 65536"
        ):
            planned_task_line("x" * 66000, Adapter(), [], max_steps=1, max_tokens=1, max_record_bytes=65536)
        with self.assertRaisesRegex(RunConfigError, "^model: must be callable"):
            planned_task_line("t", object(), [], max_steps=1, max_tokens=1)


class TestBatchSpecs(TempDir):
    def test_a_spec_is_a_value_and_its_record_0_is_planned(self) -> None:
        spec = RunSpec("a", "task", 2, 500, stop_sentinel="END", options={"max_record_bytes": 70000, "system": "s"})
        options = spec.run_options()
        self.assertEqual(options, RunOptions(2, 500, stop_sentinel="END", max_record_bytes=70000, system="s"))
        model = Adapter()
        line = expected_task_line(spec, demo_tools(), model)
        self.assertEqual((model.turns, os.listdir(self.dir)), (0, []))
        run(spec.task, model, demo_tools(), options, transcript=self.path())
        self.assertEqual(line, read_lines(self.path())[0])
        self.assertEqual(json.loads(line)["payload"]["budgets"]["max_record_bytes"], 70000)
        self.assertNotEqual(MAX_RECORD_BYTES, 70000)

    def test_what_a_spec_can_hold(self) -> None:
        self.assertEqual(
            run_options(),
            [
                "fsync",
                "max_cost",
                "max_record_bytes",
                "max_tool_calls",
                "max_workers",
                "output_schema",
                "prices",
                "system",
                "tell_budgets",
                "tool_timeout",
            ],
        )
        with self.assertRaisesRegex(RunConfigError, r"\"max_seconds\" is not an option of run\(\) a spec can hold"):
            RunSpec("a", "t", 1, 1, options={"max_seconds": 5})
        with self.assertRaisesRegex(RunConfigError, r"^spec a: max_workers: must be an int from 1 to 1024"):
            expected_task_line(RunSpec("a", "t", 1, 1, options={"max_workers": 0}), demo_tools(), Adapter())
