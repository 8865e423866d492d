"""What the user gives and gets: a system prompt, a typed final result, each record as written."""

from __future__ import annotations

import dataclasses
import io
import os
from typing import Any, Dict, List

from agentloop import DuplicateToolError, ModelReply, RunConfigError, ScriptedModel, Tool, ToolCall, verify_file
from agentloop.cli.main import main
from agentloop.loop.final import FINAL_DESCRIPTION, FINAL_RESULT
from agentloop.loop import run
from agentloop.models.replay import replay

from tests.support import loop_cli_model
from tests.support.helpers import TempDir, demo_tools, read_lines, read_records


@dataclasses.dataclass
class City:
    """A city.

    Attributes:
        name: its name.
        population: how many live there.
    """

    name: str
    population: int


def final(arguments: Dict[str, Any], text: str = "") -> ModelReply:
    return ModelReply(text, [ToolCall(FINAL_RESULT, arguments)])


class TestSystem(TempDir):
    def test_recorded_in_the_task_record_and_shown_first(self) -> None:
        seen: List[Any] = []

        def look(messages: List[Dict[str, Any]], manifest: Any) -> ModelReply:
            seen.append(messages)
            return ModelReply("ok")

        run("the task", look, [], transcript=self.path(), max_steps=2, max_tokens=100, system="Be brief.")
        self.assertEqual(read_records(self.path())[0]["payload"]["system"], "Be brief.")
        self.assertEqual(
            seen[0][:2], [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "the task"}]
        )
        outcome = replay(self.path(), [], transcript=self.path("r.jsonl"))
        self.assertTrue(outcome.identical, outcome.difference)

    def test_absent_unless_given_and_ignored_by_the_scripted_model(self) -> None:
        run("t", ScriptedModel([ModelReply("ok")]), [], transcript=self.path(), max_steps=2, max_tokens=100)
        self.assertNotIn("system", read_records(self.path())[0]["payload"])
        result = run(
            "t",
            ScriptedModel([ModelReply("ok")]),
            [],
            transcript=self.path("s.jsonl"),
            max_steps=2,
            max_tokens=100,
            system="x",
        )
        self.assertEqual(result.output, "ok")
        with self.assertRaises(RunConfigError):
            run("t", ScriptedModel([]), [], transcript=self.path("bad.jsonl"), max_steps=2, max_tokens=100, system=3)  # type: ignore[arg-type]


class TestOutputSchema(TempDir):
    def test_a_dataclass_output_ends_the_run_converted_after_a_failed_try(self) -> None:
        script = [final({"name": "Paris"}), final({"name": "Paris", "population": 2102650})]
        result = run(
            "t",
            ScriptedModel(script),
            demo_tools(),
            transcript=self.path(),
            max_steps=5,
            max_tokens=10**6,
            output_schema=City,
        )
        self.assertEqual(result.stop_reason, "final_result")
        self.assertEqual(result.output, City("Paris", 2102650))
        records = read_records(self.path())
        self.assertEqual([r["kind"] for r in records], ["task", "assistant", "tool", "assistant", "stop"])
        self.assertEqual(
            records[2]["payload"]["error"], "invalid arguments: $.final_result: missing required property 'population'"
        )
        self.assertEqual(
            result.detail,
            "the model called final_result with valid arguments (call 0 of step 2); 0 other tool call(s) not run",
        )
        entry = [t for t in records[0]["payload"]["tools"] if t["name"] == FINAL_RESULT][0]
        self.assertEqual(entry["description"], FINAL_DESCRIPTION)
        self.assertEqual(entry["parameters"]["required"], ["name", "population"])
        self.assertTrue(verify_file(self.path()).ok)
        outcome = replay(self.path(), demo_tools(), transcript=self.path("r.jsonl"))  # the recorded schema is used
        self.assertTrue(outcome.identical, outcome.difference)

    def test_other_calls_of_the_final_turn_are_not_run_and_the_sentinel_comes_first(self) -> None:
        ran: List[int] = []
        t = Tool("note", "", {"type": "object"}, lambda: ran.append(1))
        script = [ModelReply("", [ToolCall("note"), ToolCall(FINAL_RESULT, {"result": 3}), ToolCall("note")])]
        result = run(
            "t",
            ScriptedModel(script),
            [t],
            transcript=self.path(),
            max_steps=3,
            max_tokens=10**6,
            output_schema={"type": "integer"},
        )
        self.assertEqual((result.stop_reason, result.output, ran), ("final_result", 3, []))
        self.assertIn("(call 1 of step 1); 2 other tool call(s) not run", result.detail)
        result = run(
            "t",
            ScriptedModel([final({"result": 3}, "DONE")]),
            [t],
            transcript=self.path("s.jsonl"),
            max_steps=3,
            max_tokens=10**6,
            output_schema={"type": "integer"},
            stop_sentinel="DONE",
        )
        self.assertEqual((result.stop_reason, result.output), ("sentinel", "DONE"))

    def test_json_schemas_object_or_wrapped(self) -> None:
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        result = run(
            "t",
            ScriptedModel([final({"ok": True})]),
            [],
            transcript=self.path(),
            max_steps=2,
            max_tokens=100,
            output_schema=schema,
        )
        self.assertEqual(result.output, {"ok": True})
        result = run(
            "t",
            ScriptedModel([final({"result": [1, 2]})]),
            [],
            transcript=self.path("l.jsonl"),
            max_steps=2,
            max_tokens=100,
            output_schema=List[int],
        )
        self.assertEqual(result.output, [1, 2])
        tools = read_records(self.path("l.jsonl"))[0]["payload"]["tools"]
        self.assertEqual(
            tools[0]["parameters"]["properties"]["result"], {"type": "array", "items": {"type": "integer"}}
        )

    def test_misuse_raises_before_any_file(self) -> None:
        clash = Tool(FINAL_RESULT, "", {"type": "object"}, lambda: 1)
        for tools, schema in (([clash], {"type": "object"}), ([], "object"), ([], set)):
            with self.subTest(schema=schema), self.assertRaises(RunConfigError):
                run(
                    "t",
                    ScriptedModel([]),
                    tools,
                    transcript=self.path(),
                    max_steps=2,
                    max_tokens=100,
                    output_schema=schema,
                )
        self.assertFalse(os.path.exists(self.path()))
        twice = [Tool("add", "", {"type": "object"}, lambda: 1), Tool("add", "again", {"type": "object"}, lambda: 2)]
        # a name taken twice is said as such, not as final_result's
        with self.assertRaises(DuplicateToolError) as caught:
            run("t", ScriptedModel([]), twice, transcript=self.path(), max_steps=2, max_tokens=100, output_schema=City)
        self.assertEqual(str(caught.exception), "a tool named 'add' is already registered")
        self.assertFalse(os.path.exists(self.path()))
        run(
            "t", ScriptedModel([ModelReply("ok")]), [clash], transcript=self.path(), max_steps=2, max_tokens=100
        )  # without it: a tool like any

    def test_two_tools_of_one_other_name_are_a_duplicate_not_the_reserved_name(self) -> None:
        add = Tool("add", "", {"type": "object"}, lambda: 1)
        with self.assertRaises(DuplicateToolError) as caught:
            run(
                "t",
                ScriptedModel([]),
                [add, add],
                transcript=self.path(),
                max_steps=2,
                max_tokens=100,
                output_schema={"type": "object"},
            )
        self.assertNotIsInstance(caught.exception, RunConfigError)
        self.assertEqual(str(caught.exception), "a tool named 'add' is already registered")
        self.assertFalse(os.path.exists(self.path()))


class TestOnRecord(TempDir):
    def test_called_with_each_record_as_written(self) -> None:
        got: List[Dict[str, Any]] = []
        sizes: List[int] = []

        def on_record(record: Dict[str, Any]) -> None:
            got.append(record)
            sizes.append(len(read_lines(self.path())))  # already on disk when we hear of it

        self.recover_run_with(on_record)
        self.assertEqual(got, read_records(self.path()))
        self.assertEqual(sizes, list(range(1, len(got) + 1)))
        got[2]["payload"]["name"] = "changed"  # a copy: the run's own values are not ours to change
        self.assertEqual(read_records(self.path())[2]["payload"]["name"], "multiply")

    def recover_run_with(self, on_record: Any) -> None:
        from tests.support.helpers import recover_model

        run(
            "What is 6 * 7?",
            recover_model(),
            demo_tools(),
            transcript=self.path(),
            max_steps=8,
            max_tokens=2000,
            on_record=on_record,
        )

    def test_an_exception_from_it_propagates_leaving_a_verifiable_prefix(self) -> None:
        def broken(record: Dict[str, Any]) -> None:
            if record["seq"] == 2:
                raise RuntimeError("the log is full")

        with self.assertRaises(RuntimeError):
            self.recover_run_with(broken)
        verdict = verify_file(self.path())
        self.assertEqual((verdict.ok, verdict.count, verdict.complete), (True, 3, False))

    def test_the_command_line_prints_each_record_live(self) -> None:
        stream = io.StringIO()
        loop_cli_model.STREAM, loop_cli_model.PRINTED[:] = stream, []
        status = main(
            [
                "run",
                "--model",
                "tests.support.loop_cli_model:make",
                "--tools",
                "demo:demo_tools",
                "--task",
                "add",
                "--system",
                "Be exact.",
                "--max-steps",
                "4",
                "--max-tokens",
                "1000",
                "--max-tool-calls",
                "5",
                "-o",
                self.path(),
            ],
            out=stream,
        )
        self.assertEqual(status, 0, stream.getvalue())
        printed_by_turn_2 = loop_cli_model.PRINTED[0]
        self.assertIn("seq=2 add", printed_by_turn_2)  # the tool record of turn 1, printed before turn 2 began
        self.assertNotIn("seq=3", printed_by_turn_2)
        self.assertEqual(loop_cli_model.SEEN[-1][0], {"role": "system", "content": "Be exact."})
        task = read_records(self.path())[0]["payload"]
        self.assertEqual((task["system"], task["budgets"]["max_tool_calls"]), ("Be exact.", 5))
        self.assertEqual(stream.getvalue().count("seq=2 add"), 1)  # printed once
