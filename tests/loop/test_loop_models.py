"""What the loop gained for real models: reported usage, unreadable arguments, and the model's name in the task
record."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from agentloop import ModelReply, RunConfigError, ScriptedModel, ToolCall, run
from agentloop.messages import Usage
from agentloop.loop import estimate_tokens

from tests.support.helpers import TempDir, demo_tools, read_records


class Named(ScriptedModel):
    """A scripted model that names itself, as an adapter does."""

    def __init__(self, script: List[Any], info: Any) -> None:
        super().__init__(script)
        self.info = info

    def model_info(self) -> Optional[Dict[str, Any]]:
        if isinstance(self.info, Exception):
            raise self.info
        return self.info  # type: ignore[no-any-return]


class TestReplyShape(TempDir):
    def test_the_old_constructors_still_work_and_usage_defaults_to_none(self) -> None:
        self.assertEqual(ModelReply("t", [ToolCall("add", {"a": 1})]).usage, None)
        self.assertEqual(ModelReply(text="", tool_calls=()), ModelReply())
        self.assertEqual(ToolCall("add", {}, "id").arguments_error, "")
        self.assertEqual(ModelReply("t", (), Usage(3, 4)).usage, Usage(3, 4))

    def test_bad_types_are_refused_when_built(self) -> None:
        bad: Any = (1, 2)
        for build in (
            lambda: Usage(-1, 0),
            lambda: Usage(True, 0),
            lambda: Usage(1, 2**53),
            lambda: ModelReply("t", (), bad),
            lambda: ToolCall("add", {}, "", bad),
        ):
            with self.subTest():
                with self.assertRaises(TypeError):
                    build()

    def test_a_usage_that_bypassed_its_checks_is_a_model_error(self) -> None:
        usage = Usage(1, 2)
        object.__setattr__(usage, "output_tokens", 1.5)
        result = self.scripted_run([ModelReply("t", (), usage)])
        self.assertEqual(
            (result.stop_reason, result.detail),
            ("model_error", "model reply usage is Usage, not a Usage of two ints from 0 to 2**53-1"),
        )


class TestUsage(TempDir):
    def test_reported_usage_is_recorded_and_replaces_the_heuristic(self) -> None:
        result = self.scripted_run(
            [
                ModelReply("adding", [ToolCall("add", {"a": 1, "b": 2})], Usage(120, 30)),
                ModelReply("a reply whose usage is unknown"),
            ]
        )
        records = read_records(self.path())
        first, second = records[1]["payload"], records[3]["payload"]
        self.assertEqual((first["usage"], first["tokens"]), ({"input_tokens": 120, "output_tokens": 30}, 150))
        self.assertNotIn("usage", second)
        self.assertEqual(second["tokens"], estimate_tokens("a reply whose usage is unknown"))
        self.assertEqual(result.tokens, 150 + second["tokens"])

    def test_the_token_budget_counts_reported_usage_with_the_same_precedence(self) -> None:
        reply = ModelReply("x", [ToolCall("echo", {"text": "hi"})], Usage(15, 5))
        result = self.scripted_run([reply] * 5, max_tokens=50)
        self.assertEqual((result.stop_reason, result.steps, result.tokens), ("token_budget", 3, 60))
        self.assertEqual(result.detail, "max_tokens of 50 exceeded (tokens=60); 1 tool call(s) not run")
        self.assertEqual(
            [r["kind"] for r in read_records(self.path())],
            ["task", "assistant", "tool", "assistant", "tool", "assistant", "stop"],
        )

    def test_usage_of_zero_is_recorded_as_reported(self) -> None:
        result = self.scripted_run([ModelReply("hello there", (), Usage(0, 0))])
        self.assertEqual(result.tokens, 0)


class TestUnreadableArguments(TempDir):
    def test_an_arguments_error_fails_the_call_as_data_like_unrecordable_arguments(self) -> None:
        seen: List[List[Dict[str, Any]]] = []

        def second(messages: List[Dict[str, Any]], manifest: List[Dict[str, Any]]) -> ModelReply:
            seen.append(messages)
            return ModelReply("ok")

        error = 'arguments are not valid JSON (Expecting value: line 1 column 1 (char 0)): "nope"'
        result = self.scripted_run([ModelReply("try", [ToolCall("add", {"a": 1, "b": 2}, "c1", error)]), second])
        self.assertEqual(result.stop_reason, "no_tool_calls")
        records = read_records(self.path())
        self.assertEqual(
            records[1]["payload"]["tool_calls"],
            [{"id": "c1", "name": "add", "arguments": None, "arguments_error": error}],
        )
        self.assertEqual(
            records[1]["payload"]["tokens"], estimate_tokens("try" + "add")
        )  # the name only, as for unrecordable ones
        self.assertEqual(records[2]["payload"], {"step": 1, "id": "c1", "name": "add", "ok": False, "error": error})
        self.assertEqual(seen[0][1]["tool_calls"], [{"id": "c1", "name": "add", "arguments": None}])
        self.assertEqual(seen[0][2]["content"], error)

    def test_a_duplicate_id_still_comes_first(self) -> None:
        self.scripted_run(
            [ModelReply("t", [ToolCall("add", {"a": 1, "b": 2}, "c"), ToolCall("add", {}, "c", "bad json")])]
        )
        calls = read_records(self.path())[1]["payload"]["tool_calls"]
        self.assertEqual(calls[1]["arguments_error"], 'call id "c" is used twice in this turn')

    def test_an_unrecordable_arguments_error_text_is_a_model_error(self) -> None:
        result = self.scripted_run([ModelReply("t", [ToolCall("add", {}, "c", "bad \ud800")])])
        self.assertEqual(result.stop_reason, "model_error")
        self.assertIn("$.tool_calls[0].arguments_error", result.detail)


class TestModelInfo(TempDir):
    def go(self, info: Any) -> Any:
        return run(
            "t", Named([ModelReply("hi")], info), demo_tools(), transcript=self.path(), max_steps=1, max_tokens=99
        )

    def test_the_adapters_info_is_the_task_records_model(self) -> None:
        self.go({"provider": "openai", "model": "gpt-x", "host": "api.openai.com"})
        task = read_records(self.path())[0]["payload"]
        self.assertEqual(task["model"], {"provider": "openai", "model": "gpt-x", "host": "api.openai.com"})

    def test_no_info_no_key(self) -> None:
        self.go(None)
        self.assertNotIn("model", read_records(self.path())[0]["payload"])
        self.scripted_run([ModelReply("hi")], name="plain.jsonl")
        self.assertEqual(
            sorted(read_records(self.path("plain.jsonl"))[0]["payload"]), ["budgets", "format", "task", "tools"]
        )

    def test_bad_info_is_refused_before_the_file_is_created(self) -> None:
        cases = [
            (["not", "a", "dict"], "model: model_info() must return a dict or None, got list"),
            ({"n": float("nan")}, "model: model_info() is not recordable: $.model.n: nan is not a JSON number"),
            (RuntimeError("no"), "model: model_info() raised RuntimeError: no"),
        ]
        for info, message in cases:
            with self.subTest(message):
                with self.assertRaises(RunConfigError) as caught:
                    self.go(info)
                self.assertEqual(str(caught.exception), message)
                self.assertFalse(os.path.exists(self.path()))  # the file was never opened
