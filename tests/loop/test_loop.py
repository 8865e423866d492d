"""The loop: stop reasons and their precedence, budgets, failures as data."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import unittest
from typing import Any, Dict, List

from agentloop import (
    ModelReply,
    RunConfigError,
    SchemaError,
    ScriptedModel,
    Tool,
    ToolCall,
    TranscriptExistsError,
    estimate_tokens,
    run,
    verify_file,
)
from agentloop.canonical import canonical_text

from tests.support.helpers import TempDir, demo_tools, read_lines, read_records

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def add(a: int, b: int) -> ModelReply:
    return ModelReply("adding", [ToolCall("add", {"a": a, "b": b})])


class TestStopReasons(TempDir):
    def kinds(self) -> List[str]:
        return [r["kind"] for r in read_records(self.path())]

    def stop_payload(self) -> Dict[str, Any]:
        return read_records(self.path())[-1]["payload"]

    def test_no_tool_calls_is_the_ordinary_end(self) -> None:
        result = self.scripted_run([add(1, 2), ModelReply("3")])
        self.assertEqual((result.stop_reason, result.steps), ("no_tool_calls", 2))
        self.assertEqual(self.kinds(), ["task", "assistant", "tool", "assistant", "stop"])
        self.assertEqual(
            self.stop_payload(),
            {
                "reason": "no_tool_calls",
                "steps": 2,
                "tokens": result.tokens,
                "detail": "the assistant asked for no tools",
            },
        )

    def test_step_budget_caps_the_loop_and_matches_the_record_count(self) -> None:
        result = self.scripted_run([add(1, i) for i in range(20)], max_steps=3)
        records = read_records(self.path())
        self.assertEqual(result.stop_reason, "step_budget")
        self.assertEqual(result.steps, 3)
        self.assertEqual(sum(r["kind"] == "assistant" for r in records), 3)
        self.assertEqual(result.records, len(records))
        self.assertEqual(self.stop_payload()["detail"], "max_steps of 3 reached (steps=3)")

    def test_zero_steps_writes_task_then_stop(self) -> None:
        model = ScriptedModel([add(1, 2)])
        result = run("t", model, demo_tools(), transcript=self.path(), max_steps=0, max_tokens=100)
        self.assertEqual(self.kinds(), ["task", "stop"])
        self.assertEqual((result.stop_reason, result.steps, model.turns), ("step_budget", 0, 0))

    def test_token_budget_stops_the_loop_before_running_tools(self) -> None:
        calls: List[int] = []

        def counting_add(a: int, b: int) -> Dict[str, int]:
            calls.append(a)
            return {"sum": a + b}

        tool = Tool("add", "add", {"type": "object"}, counting_add)
        reply = ModelReply("x" * 40, [ToolCall("add", {"a": 1, "b": 2})])  # 40 + 3 + 13 = 56 chars: 14 tokens
        result = run("t", ScriptedModel([reply] * 5), [tool], transcript=self.path(), max_steps=10, max_tokens=20)
        self.assertEqual(result.stop_reason, "token_budget")
        self.assertEqual((result.steps, result.tokens), (2, 28))
        self.assertEqual(calls, [1])  # turn 1 ran its tool, the over-budget turn 2 did not
        self.assertEqual(self.kinds(), ["task", "assistant", "tool", "assistant", "stop"])
        self.assertEqual(self.stop_payload()["detail"], "max_tokens of 20 exceeded (tokens=28); 1 tool call(s) not run")

    def test_a_total_equal_to_the_budget_does_not_stop(self) -> None:
        reply = ModelReply("x" * 40, [ToolCall("echo", {"text": "a"})])  # 40 + 4 + 12 = 56 chars: 14 tokens
        result = self.scripted_run([reply, ModelReply("done")], max_tokens=14 + 1)
        self.assertEqual(result.stop_reason, "no_tool_calls")

    def test_sentinel_beats_tool_calls_and_the_tool_never_runs(self) -> None:
        result = self.scripted_run([ModelReply("all DONE", [ToolCall("fail", {})])], stop_sentinel="DONE")
        self.assertEqual(result.stop_reason, "sentinel")
        self.assertEqual(self.kinds(), ["task", "assistant", "stop"])

    def test_sentinel_beats_the_token_budget(self) -> None:
        result = self.scripted_run(
            [ModelReply("DONE " + "x" * 400, [ToolCall("fail", {})])], stop_sentinel="DONE", max_tokens=1
        )
        self.assertEqual(result.stop_reason, "sentinel")

    def test_no_tool_calls_beats_the_token_budget(self) -> None:
        result = self.scripted_run([ModelReply("x" * 400)], max_tokens=1)
        self.assertEqual(result.stop_reason, "no_tool_calls")

    def test_sentinel_is_matched_in_the_text_only(self) -> None:
        result = self.scripted_run(
            [ModelReply("no", [ToolCall("echo", {"text": "DONE"})]), ModelReply("ok")], stop_sentinel="DONE"
        )
        self.assertEqual(result.stop_reason, "no_tool_calls")

    def test_an_empty_sentinel_is_refused_as_a_value_error(self) -> None:
        with self.assertRaises(ValueError) as caught:
            self.scripted_run([ModelReply("x")], stop_sentinel="")
        self.assertIsInstance(caught.exception, RunConfigError)
        self.assertFalse(os.path.exists(self.path()))

    def test_model_raising_is_a_model_error_with_a_detail(self) -> None:
        def broken(messages: Any, manifest: Any) -> ModelReply:
            raise ConnectionError("the server hung up")

        result = run("t", broken, demo_tools(), transcript=self.path(), max_steps=3, max_tokens=100)
        self.assertEqual(result.stop_reason, "model_error")
        self.assertEqual(self.stop_payload()["detail"], "model raised ConnectionError: the server hung up")
        self.assertEqual(result.steps, 0)

    def test_model_returning_something_else_is_a_model_error(self) -> None:
        result = run(
            "t", lambda m, t: {"text": "hi"}, demo_tools(), transcript=self.path(), max_steps=3, max_tokens=100
        )
        self.assertEqual(result.stop_reason, "model_error")
        self.assertEqual(result.detail, "model returned dict, not ModelReply")

    def test_running_out_of_script_is_a_model_error(self) -> None:
        result = self.scripted_run([add(1, 2)])
        self.assertEqual(result.stop_reason, "model_error")
        self.assertEqual(
            result.detail, "model raised ScriptExhaustedError: the script has no reply for turn 2 (it holds 1)"
        )

    def test_a_reply_with_an_unrecordable_text_is_a_model_error_and_the_file_verifies(self) -> None:
        result = self.scripted_run([ModelReply("bad \ud800 text")])
        self.assertEqual(result.stop_reason, "model_error")
        self.assertEqual(
            result.detail, "model reply is not recordable: $.text: string has a lone surrogate U+D800 at index 4"
        )
        self.assertTrue(verify_file(self.path()).ok)

    def test_every_stop_reason_is_in_the_closed_set(self) -> None:
        from agentloop import STOP_REASONS

        self.assertEqual(
            set(STOP_REASONS),
            {
                "no_tool_calls",
                "sentinel",
                "step_budget",
                "token_budget",
                "model_error",  # agentloop 0.x
                "final_result",
                "tool_call_budget",
                "cost_budget",
                "cost_unknown",
                "time_budget",  # issue 12
                "approval_terminated",
            },  # issue 13
        )


class TestInterrupts(TempDir):
    def test_keyboard_interrupt_from_the_model_propagates_and_leaves_a_verifiable_prefix(self) -> None:
        def interrupted(messages: List[Any], manifest: Any) -> ModelReply:
            if len(messages) > 2:
                raise KeyboardInterrupt
            return add(1, 2)

        with self.assertRaises(KeyboardInterrupt):
            run("t", interrupted, demo_tools(), transcript=self.path(), max_steps=5, max_tokens=100)
        verdict = verify_file(self.path())
        self.assertEqual((verdict.ok, verdict.count, verdict.complete), (True, 3, False))

    def test_system_exit_from_a_tool_propagates(self) -> None:
        def exits() -> None:
            raise SystemExit(3)

        tool = Tool("exit", "exits", {"type": "object"}, exits)
        with self.assertRaises(SystemExit):
            run(
                "t",
                ScriptedModel([ModelReply("", [ToolCall("exit")])]),
                [tool],
                transcript=self.path(),
                max_steps=5,
                max_tokens=100,
            )
        self.assertEqual([r["kind"] for r in read_records(self.path())], ["task", "assistant"])
        self.assertTrue(verify_file(self.path()).ok)


class TestToolFailuresAreData(TempDir):
    def tool_records(self) -> List[Dict[str, Any]]:
        return [r["payload"] for r in read_records(self.path()) if r["kind"] == "tool"]

    def test_the_four_outcomes_of_the_recover_demo(self) -> None:
        self.recover_run()
        self.assertEqual(
            [(p["name"], p["ok"], p.get("error", p.get("value"))) for p in self.tool_records()],
            [
                ("multiply", False, "no tool named 'multiply' (have: add, echo, fail, greet)"),
                ("add", False, "invalid arguments: $.add.a: expected type integer, got str"),
                ("fail", False, "tool 'fail' raised RuntimeError: the tool is broken on purpose"),
                ("add", True, {"sum": 42}),
            ],
        )

    def test_unrecordable_results_are_refused_as_data(self) -> None:
        values = {"nan": float("nan"), "big": 2**80, "tuple": (1, 2), "surrogate": "\udc80", "integral": {"n": 1e17}}
        tools = [Tool(name, name, {"type": "object"}, (lambda v: lambda: v)(value)) for name, value in values.items()]
        script = [ModelReply("", [ToolCall(name) for name in values]), ModelReply("end")]
        result = run("t", ScriptedModel(script), tools, transcript=self.path(), max_steps=3, max_tokens=100)
        self.assertEqual(result.stop_reason, "no_tool_calls")
        self.assertEqual(
            [p["error"] for p in self.tool_records()],
            [
                "tool 'nan' returned an unrecordable result: $: nan is not a JSON number",
                (
                    "tool 'big' returned an unrecordable result: $: integer 1208925819614629174706176 "
                    "is outside the I-JSON range +/-(2**53-1)"
                ),
                "tool 'tuple' returned an unrecordable result: $: a tuple is not a JSON value",
                "tool 'surrogate' returned an unrecordable result: $: string has a lone surrogate U+DC80 at index 0",
                "tool 'integral' returned an unrecordable result: $.n: number 1e+17 is written as the integer "
                "100000000000000000, outside the I-JSON range +/-(2**53-1)",
            ],
        )
        self.assertTrue(verify_file(self.path()).ok)

    def test_unrecordable_arguments_are_kept_out_of_the_record(self) -> None:
        deep: Any = 0
        for _ in range(100_000):
            deep = [deep]
        script = [
            ModelReply(
                "",
                [
                    ToolCall("add", {"a": float("nan"), "b": 1}),
                    ToolCall("add", {"a": 2**80, "b": 1}),
                    ToolCall("echo", {"text": deep}),
                    ToolCall("add", {"a": 1, "b": 2}),
                    ToolCall("add", {"a": 2.0**53, "b": 1}),
                ],
            ),
            ModelReply("end"),
        ]
        self.scripted_run(script)
        turn = read_records(self.path())[1]["payload"]
        self.assertEqual([c["arguments"] for c in turn["tool_calls"]], [None, None, None, {"a": 1, "b": 2}, None])
        self.assertEqual(
            turn["tool_calls"][0]["arguments_error"], "unrecordable arguments: $.add.a: nan is not a JSON number"
        )
        errors = [p.get("error") for p in self.tool_records()]
        self.assertEqual(
            errors[:2],
            [
                "unrecordable arguments: $.add.a: nan is not a JSON number",
                (
                    "unrecordable arguments: $.add.a: integer 1208925819614629174706176 "
                    "is outside the I-JSON range +/-(2**53-1)"
                ),
            ],
        )
        self.assertTrue(errors[2].startswith("unrecordable arguments: $.echo.text"))
        self.assertIn("nesting deeper than the 64 levels a record may hold", errors[2])
        self.assertEqual(self.tool_records()[3]["value"], {"sum": 3})
        self.assertEqual(
            errors[4],
            "unrecordable arguments: $.add.a: number 9007199254740992.0 is written as the "
            "integer 9007199254740992, outside the I-JSON range +/-(2**53-1)",
        )
        self.assertTrue(verify_file(self.path()).ok)

    def test_depth_is_counted_where_the_value_sits_in_its_record(self) -> None:
        def nest(depth: int) -> Any:
            value: Any = 0
            for _ in range(depth):
                value = [value]
            return value

        # A result sits 2 levels deep in its record, arguments 4: 62 and 60 levels fit, one more does not.
        tools = [Tool("deep%d" % d, "", {"type": "object"}, (lambda d: lambda **kw: nest(d))(d)) for d in (62, 63)]
        calls = [
            ToolCall("deep62", {"a": nest(59)}),
            ToolCall("deep63", {"a": nest(59)}),
            ToolCall("deep62", {"a": nest(60)}),
        ]
        result = run(
            "t",
            ScriptedModel([ModelReply("", calls), ModelReply("end")]),
            tools,
            transcript=self.path(),
            max_steps=3,
            max_tokens=10**6,
        )
        self.assertEqual(result.stop_reason, "no_tool_calls")
        outcomes = [(p["ok"], p.get("error", "")[:40]) for p in self.tool_records()]
        self.assertEqual(
            outcomes,
            [
                (True, ""),
                (False, "tool 'deep63' returned an unrecordable r"),
                (False, "unrecordable arguments: $.deep62.a[0][0]"),
            ],
        )
        self.assertTrue(verify_file(self.path()).ok)

    def test_integers_too_long_to_print_are_refused_as_data(self) -> None:
        tool = Tool("huge", "", {"type": "object"}, lambda **kw: 10**5000)
        run(
            "t",
            ScriptedModel(
                [
                    ModelReply("", [ToolCall("huge", {"a": 10**5000})]),
                    ModelReply("", [ToolCall("huge")]),
                    ModelReply("end"),
                ]
            ),
            [tool],
            transcript=self.path(),
            max_steps=4,
            max_tokens=10**6,
        )
        self.assertEqual(
            [p["error"] for p in self.tool_records()],
            [
                (
                    "unrecordable arguments: $.huge.a: integer of about 5001 digits "
                    "is outside the I-JSON range +/-(2**53-1)"
                ),
                (
                    "tool 'huge' returned an unrecordable result: $: integer of about 5001 digits "
                    "is outside the I-JSON range +/-(2**53-1)"
                ),
            ],
        )
        self.assertTrue(verify_file(self.path()).ok)

    def test_values_that_read_differently_each_time_are_recorded_as_the_model_saw_them(self) -> None:
        class Shifty(dict):  # type: ignore[type-arg]
            reads = 0

            def __getitem__(self, key: str) -> Any:
                Shifty.reads += 1
                return Shifty.reads

        class Raising(dict):  # type: ignore[type-arg]
            def __getitem__(self, key: str) -> Any:
                raise RuntimeError("no")

        tools = [
            Tool("shifty", "", {"type": "object"}, lambda: Shifty(a=0)),
            Tool("raising", "", {"type": "object"}, lambda: Raising(a=0)),
        ]
        seen: List[Any] = []
        script = [
            ModelReply("", [ToolCall("shifty"), ToolCall("raising")]),
            lambda m, t: seen.append([x.get("content") for x in m[2:]]) or ModelReply("end"),
        ]
        run("t", ScriptedModel(script), tools, transcript=self.path(), max_steps=3, max_tokens=10**6)
        records = self.tool_records()
        self.assertEqual(seen[0][0], canonical_text(records[0]["value"]))
        self.assertEqual(
            records[1]["error"], "tool 'raising' returned an unrecordable result: $: could not be read: RuntimeError"
        )
        self.assertTrue(verify_file(self.path()).ok)

    def test_a_huge_argument_is_an_error_result_not_a_crash(self) -> None:
        huge = [
            ModelReply("", [ToolCall("echo", {"text": "x" * 5_000_000}), ToolCall("echo", {"text": "ok"})]),
            ModelReply("end"),
        ]
        self.scripted_run(huge, max_tokens=10**7)
        # Over max_record_bytes (1 MiB by default): kept out of the record, the call fails as data.
        self.assertEqual(
            [p.get("error", p.get("value")) for p in self.tool_records()],
            [
                "unrecordable arguments: $.echo: arguments of 5000023 bytes do not fit max_record_bytes 1048576",
                {"text": "ok"},
            ],
        )
        self.assertTrue(verify_file(self.path()).ok)
        self.scripted_run(huge, name="big.jsonl", max_tokens=10**7, max_record_bytes=16 * 2**20)
        errors = [r["payload"].get("error") for r in read_records(self.path("big.jsonl")) if r["kind"] == "tool"]
        self.assertEqual(
            errors[0], "invalid arguments: $.echo.text: string of length 5000000 is longer than maxLength 200"
        )

    def test_a_huge_result_is_refused_as_data_and_a_huge_text_is_a_model_error(self) -> None:
        big = Tool("big", "", {"type": "object"}, lambda: "y" * 2_000_000)
        script = ScriptedModel([ModelReply("", [ToolCall("big")]), ModelReply("z" * 2_000_000)])
        result = run("t", script, [big], transcript=self.path(), max_steps=5, max_tokens=10**7)
        self.assertEqual(
            self.tool_records()[0]["error"],
            "tool 'big' returned an unrecordable result: $: "
            "a tool record of 2000243 bytes exceeds max_record_bytes 1048576",
        )
        self.assertEqual((result.stop_reason, result.steps), ("model_error", 1))
        self.assertEqual(
            result.detail,
            "model reply is not recordable: $: an assistant record of 2000262 bytes exceeds max_record_bytes 1048576",
        )
        self.assertTrue(verify_file(self.path()).ok)

    def test_an_exception_whose_str_raises_is_still_recorded(self) -> None:
        class Nasty(Exception):
            def __str__(self) -> str:
                raise RuntimeError("no")

        def nasty() -> None:
            raise Nasty()

        def surrogate() -> None:
            raise ValueError("bad \ud800")

        tools = [Tool("nasty", "", {"type": "object"}, nasty), Tool("sur", "", {"type": "object"}, surrogate)]
        run(
            "t",
            ScriptedModel([ModelReply("", [ToolCall("nasty"), ToolCall("sur")]), ModelReply("end")]),
            tools,
            transcript=self.path(),
            max_steps=3,
            max_tokens=100,
        )
        self.assertEqual(
            [p["error"] for p in self.tool_records()],
            ["tool 'nasty' raised Nasty: <unprintable>", "tool 'sur' raised ValueError: bad \\ud800"],
        )

    def test_a_tool_with_no_tools_registered(self) -> None:
        run(
            "t",
            ScriptedModel([ModelReply("", [ToolCall("x")]), ModelReply("end")]),
            [],
            transcript=self.path(),
            max_steps=3,
            max_tokens=100,
        )
        self.assertEqual(self.tool_records()[0]["error"], "no tool named 'x' (have: none)")


class TestTurns(TempDir):
    def test_several_calls_run_in_order_with_derived_ids(self) -> None:
        script = [
            ModelReply(
                "",
                [
                    ToolCall("add", {"a": 1, "b": 1}),
                    ToolCall("greet", {"name": "Ada"}, id="mine"),
                    ToolCall("add", {"a": 2, "b": 2}),
                ],
            ),
            ModelReply("end"),
        ]
        self.scripted_run(script)
        records = read_records(self.path())
        self.assertEqual([c["id"] for c in records[1]["payload"]["tool_calls"]], ["call_1_0", "mine", "call_1_2"])
        self.assertEqual(
            [(r["payload"]["id"], r["payload"]["value"]) for r in records[2:5]],
            [("call_1_0", {"sum": 2}), ("mine", {"greeting": "Hello, Ada!"}), ("call_1_2", {"sum": 4})],
        )

    def test_the_messages_the_model_sees(self) -> None:
        seen: List[List[Dict[str, Any]]] = []

        def look(messages: List[Dict[str, Any]], manifest: List[Dict[str, Any]]) -> ModelReply:
            seen.append(json.loads(json.dumps(messages)))
            self.assertEqual([t["name"] for t in manifest], ["add", "echo", "fail", "greet"])
            return ModelReply("end")

        self.scripted_run([ModelReply("hi", [ToolCall("add", {"a": 1, "b": 2}), ToolCall("fail")]), look])
        self.assertEqual(
            seen[0],
            [
                {"role": "user", "content": "task"},
                {
                    "role": "assistant",
                    "content": "hi",
                    "tool_calls": [
                        {"id": "call_1_0", "name": "add", "arguments": {"a": 1, "b": 2}},
                        {"id": "call_1_1", "name": "fail", "arguments": {}},
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1_0", "name": "add", "ok": True, "content": '{"sum":3}'},
                {
                    "role": "tool",
                    "tool_call_id": "call_1_1",
                    "name": "fail",
                    "ok": False,
                    "content": "tool 'fail' raised RuntimeError: the tool is broken on purpose",
                },
            ],
        )

    def test_a_tool_mutating_its_arguments_changes_nothing_recorded(self) -> None:
        def mutate(items: List[int]) -> int:
            items.append(99)
            return len(items)

        tool = Tool("m", "", {"type": "object"}, mutate)
        seen: List[Any] = []
        script = [
            ModelReply("", [ToolCall("m", {"items": [1]})]),
            lambda m, t: seen.append(m[1]["tool_calls"][0]["arguments"]) or ModelReply("end"),
        ]
        run("t", ScriptedModel(script), [tool], transcript=self.path(), max_steps=3, max_tokens=100)
        self.assertEqual(seen, [{"items": [1]}])

    def test_token_estimate_counts_text_names_and_canonical_arguments(self) -> None:
        self.scripted_run([ModelReply("abcd" * 5, [ToolCall("add", {"b": 2, "a": 1})]), ModelReply("")])
        turns = [r["payload"] for r in read_records(self.path()) if r["kind"] == "assistant"]
        emitted = "abcd" * 5 + "add" + canonical_text({"a": 1, "b": 2})
        self.assertEqual(len(emitted), 36)
        self.assertEqual([(t["tokens"], t["total_tokens"]) for t in turns], [(9, 9), (1, 10)])
        self.assertEqual((estimate_tokens(""), estimate_tokens("abc"), estimate_tokens("a" * 9)), (1, 1, 2))

    def test_the_task_record(self) -> None:
        self.scripted_run([ModelReply("")], stop_sentinel="DONE", max_steps=4, max_tokens=99)
        task = read_records(self.path())[0]
        self.assertEqual((task["kind"], task["seq"], task["prev"]), ("task", 0, "0" * 64))
        payload = task["payload"]
        self.assertEqual(payload["format"], "agentloop/1")
        self.assertEqual(payload["task"], "task")
        self.assertEqual(payload["budgets"], {"max_steps": 4, "max_tokens": 99, "stop_sentinel": "DONE"})
        self.assertEqual([t["name"] for t in payload["tools"]], ["add", "echo", "fail", "greet"])

    def test_the_result_matches_the_file(self) -> None:
        result = self.recover_run()
        lines = read_lines(self.path())
        self.assertEqual((result.records, result.head), (len(lines), json.loads(lines[-1])["hash"]))


class TestMisuse(TempDir):
    def test_bad_budgets_and_models_raise_before_any_file_exists(self) -> None:
        for kwargs in ({"max_steps": -1}, {"max_steps": True}, {"max_tokens": 1.5}, {"max_tokens": None}):
            budgets: Dict[str, Any] = {"max_steps": 3, "max_tokens": 100}
            budgets.update(kwargs)
            with self.subTest(kwargs), self.assertRaises(RunConfigError):
                run("t", ScriptedModel([]), [], transcript=self.path(), **budgets)
        with self.assertRaises(RunConfigError) as caught:
            run("t", "not callable", [], transcript=self.path(), max_steps=1, max_tokens=1)  # type: ignore[arg-type]
        self.assertEqual(str(caught.exception), "model: must be callable (messages, manifest) -> ModelReply")
        with self.assertRaises(RunConfigError):
            run("bad \ud800", ScriptedModel([]), [], transcript=self.path(), max_steps=1, max_tokens=1)
        self.assertFalse(os.path.exists(self.path()))

    def test_an_existing_transcript_is_never_replaced_silently(self) -> None:
        self.recover_run()
        before = read_lines(self.path())
        with self.assertRaises(TranscriptExistsError):
            self.recover_run()
        self.assertEqual(read_lines(self.path()), before)
        run(
            "other",
            ScriptedModel([ModelReply("")]),
            [],
            transcript=self.path(),
            max_steps=1,
            max_tokens=1,
            overwrite=True,
        )
        self.assertEqual(len(read_lines(self.path())), 3)

    def test_model_reply_and_tool_call_check_their_types(self) -> None:
        with self.assertRaises(TypeError):
            ModelReply(text=None)  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            ModelReply("x", ["add"])  # type: ignore[list-item]
        with self.assertRaises(TypeError):
            ToolCall("add", '{"a": 1}')  # type: ignore[arg-type]
        self.assertEqual(ModelReply("x", [ToolCall("a")]).tool_calls, (ToolCall("a", {}, ""),))
        first, second = ToolCall("a"), ToolCall("a")
        self.assertIsNot(first.arguments, second.arguments)  # the default: a dict of each call's own

        @dataclasses.dataclass(frozen=True)
        class Tagged(ModelReply):  # a dataclass subclass: its generated __init__ runs the same checks
            tag: str = ""

        @dataclasses.dataclass(frozen=True)
        class NamedCall(ToolCall):
            note: str = ""

        with self.assertRaises(TypeError):
            Tagged(None, tag="t")  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            NamedCall(1)  # type: ignore[arg-type]
        self.assertEqual(Tagged("x", [NamedCall("a")], tag="t").tool_calls, (NamedCall("a"),))

        class Stripped(ModelReply):  # a plain subclass: its own __post_init__ runs, as with a generated __init__
            def __post_init__(self) -> None:
                super().__post_init__()
                object.__setattr__(self, "text", self.text.strip())

        class Strict(ToolCall):
            def __post_init__(self) -> None:
                if not self.id:
                    raise ValueError("an id is required")

        self.assertEqual(Stripped("  hi  ").text, "hi")
        with self.assertRaises(TypeError):
            Stripped(None)  # type: ignore[arg-type]
        with self.assertRaises(ValueError):
            Strict("a")
        self.assertEqual(Strict("a", id="c").id, "c")


class TestHardening(TempDir):
    """Cases found by attacking the loop as a hostile user would."""

    def test_setup_mistakes_never_touch_an_existing_transcript(self) -> None:
        self.recover_run()
        before = read_lines(self.path())
        for kwargs in ({"max_tokens": 2**60}, {"overwrite": "no"}, {"fsync": 1}, {"max_record_bytes": 100}):
            budgets: Dict[str, Any] = {"max_steps": 3, "max_tokens": 100, "overwrite": True}
            budgets.update(kwargs)
            with self.subTest(kwargs), self.assertRaises(RunConfigError):
                run("t", ScriptedModel([]), demo_tools(), transcript=self.path(), **budgets)
        deep: Any = 0
        for _ in range(58):  # fits in a schema alone, not at the depth the task record holds schemas
            deep = [deep]
        with self.assertRaises(SchemaError) as caught:
            Tool("deep", "", {"type": "object", "properties": {"a": {"const": deep}}}, lambda a: a)
        self.assertIn("nesting deeper than the 64 levels a record may hold", str(caught.exception))
        self.assertEqual(read_lines(self.path()), before)

    def test_a_reply_that_bypassed_its_own_checks_is_a_model_error(self) -> None:
        class Sneaky(ModelReply):
            def __init__(self, text: Any, tool_calls: Any = ()) -> None:  # none of ModelReply's checks
                self.__dict__.update(text=text, tool_calls=tool_calls, usage=None, truncated=False, provider_data=None)

        for reply, detail in [
            (Sneaky(None), "model reply text is NoneType, not a str"),  # type: ignore[arg-type]
            (Sneaky("x", [ToolCall("a")]), "model reply tool_calls is list, not a tuple"),
            (Sneaky("x", ({"name": "a"},)), "model reply tool_calls[0] is dict, not a ToolCall"),  # type: ignore[arg-type]
        ]:
            with self.subTest(detail):
                name = "s%d.jsonl" % len(detail)
                result = run("t", lambda m, t, r=reply: r, [], transcript=self.path(name), max_steps=2, max_tokens=10)
                self.assertEqual((result.stop_reason, result.detail), ("model_error", detail))
                self.assertTrue(verify_file(self.path(name)).ok)

    def test_mapping_arguments_become_a_dict(self) -> None:
        from types import MappingProxyType

        call = ToolCall("echo", MappingProxyType({"text": "hi"}))
        self.assertEqual(type(call.arguments), dict)
        self.scripted_run([ModelReply("", [call]), ModelReply("end")])
        self.assertEqual(read_records(self.path())[2]["payload"]["value"], {"text": "hi"})

    def test_duplicate_call_ids_in_a_turn_fail_as_data(self) -> None:
        calls = [
            ToolCall("echo", {"text": "a"}, id="c"),
            ToolCall("echo", {"text": "b"}, id="c"),
            ToolCall("echo", {"text": "d"}, id="call_1_3"),
            ToolCall("echo", {"text": "e"}),
        ]
        self.scripted_run([ModelReply("", calls), ModelReply("end")])
        tools = [r["payload"] for r in read_records(self.path()) if r["kind"] == "tool"]
        self.assertEqual(
            [(t["id"], t["ok"]) for t in tools], [("c", True), ("c", False), ("call_1_3", True), ("call_1_3", False)]
        )
        self.assertEqual(tools[1]["error"], 'call id "c" is used twice in this turn')

    def test_tools_registered_during_a_run_are_not_callable_in_it(self) -> None:
        from agentloop import ToolRegistry

        registry = ToolRegistry()

        def sneak() -> str:
            registry.register(Tool("secret", "", {"type": "object"}, lambda: "leaked"))
            return "done"

        registry.register(Tool("sneak", "", {"type": "object"}, sneak))
        script = ScriptedModel(
            [ModelReply("", [ToolCall("sneak")]), ModelReply("", [ToolCall("secret")]), ModelReply("end")]
        )
        run("t", script, registry, transcript=self.path(), max_steps=4, max_tokens=100)
        tools = [r["payload"] for r in read_records(self.path()) if r["kind"] == "tool"]
        self.assertEqual(tools[1]["error"], "no tool named 'secret' (have: sneak)")

    def test_error_texts_are_bounded(self) -> None:
        def loud() -> None:
            raise ValueError("x" * 10_000_000)

        run(
            "t",
            ScriptedModel([ModelReply("", [ToolCall("loud")]), ModelReply("end")]),
            [Tool("loud", "", {"type": "object"}, loud)],
            transcript=self.path(),
            max_steps=3,
            max_tokens=100,
        )
        error = [r["payload"] for r in read_records(self.path()) if r["kind"] == "tool"][0]["error"]
        self.assertTrue(error.endswith("... (9998031 characters cut)"), error[-60:])
        self.assertLess(os.path.getsize(self.path()), 10_000)

    def test_a_script_entry_that_is_not_a_reply_is_refused_when_built(self) -> None:
        with self.assertRaises(TypeError):
            ScriptedModel([42])  # type: ignore[list-item]


DETERMINISM_SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[2])
    from agentloop import run, ModelReply, ToolCall, ScriptedModel
    from demo import demo_tools, recover_model
    run("Unicode \u00e9\u20ac\U0001f600 and {'set': 1}", recover_model(), demo_tools(),
        transcript=sys.argv[1], max_steps=8, max_tokens=2000, stop_sentinel="\u2603")
    """
)


class TestDeterminism(TempDir):
    def test_identical_runs_produce_byte_identical_transcripts(self) -> None:
        self.recover_run("a.jsonl")
        self.recover_run("b.jsonl")
        first = b"".join(read_lines(self.path("a.jsonl")))
        self.assertEqual(first, b"".join(read_lines(self.path("b.jsonl"))))
        # Across processes and hash seeds too.
        outputs = []
        for seed in ("0", "1", "4242"):
            target = self.path("seed-%s.jsonl" % seed)
            env = dict(os.environ, PYTHONHASHSEED=seed)
            subprocess.run([sys.executable, "-c", DETERMINISM_SCRIPT, target, ROOT], check=True, env=env)
            with open(target, "rb") as handle:
                outputs.append(handle.read())
        self.assertEqual(len(set(outputs)), 1)
        self.assertTrue(verify_file(self.path("seed-0.jsonl")).ok)


if __name__ == "__main__":
    unittest.main()


class TestToolFailure(unittest.TestCase):
    def test_a_tool_failure_is_recorded_with_its_own_text(self) -> None:
        import tempfile
        import os
        from agentloop import ModelReply, ScriptedModel, Tool, ToolCall, ToolFailure, run, verify_file

        def boom(x: int) -> int:
            raise ToolFailure("exact text, no prefix")

        model = ScriptedModel([ModelReply("", [ToolCall("boom", {"x": 1})]), ModelReply("done")])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.jsonl")
            run("t", model, [Tool.from_function(boom)], transcript=path, max_steps=3, max_tokens=1000)
            self.assertTrue(verify_file(path).ok)
            with open(path, encoding="utf-8") as f:
                self.assertIn('"error":"exact text, no prefix","id"', f.read())


class TestOutputAndTruncation(unittest.TestCase):
    def test_output_is_the_answer_and_a_truncated_reply_is_recorded_and_replayed(self) -> None:
        import tempfile
        import os
        from agentloop import ModelReply, ScriptedModel, ToolCall, run
        from agentloop.models import replay

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.jsonl")
            model = ScriptedModel([ModelReply("the answer, cut", truncated=True)])
            result = run("t", model, [], transcript=path, max_steps=3, max_tokens=1000)
            self.assertEqual(result.output, "the answer, cut")
            with open(path, encoding="utf-8") as f:
                self.assertIn('"truncated":true', f.read())
            self.assertTrue(replay(path, [], transcript=os.path.join(tmp, "r.jsonl")).identical)
            budget = run(
                "t",
                ScriptedModel([ModelReply("x", [ToolCall("nope")])]),
                [],
                transcript=os.path.join(tmp, "b.jsonl"),
                max_steps=1,
                max_tokens=1000,
            )
            self.assertEqual(budget.stop_reason, "step_budget")
            self.assertIsNone(budget.output)
