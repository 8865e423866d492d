"""AnthropicMessages against a loopback Messages API server: the exact requests, the parsed replies, a full loop."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List
from unittest import mock

from agentloop import ToolCall, run, verify_file
from agentloop.models import AnthropicMessages, ModelConfigError, ModelResponseError
from agentloop.models.anthropic import messages_api_messages, messages_api_reply

from tests.support.helpers import read_lines, read_records
from tests.support.loopback import anthropic_error, anthropic_reply
from tests.support.modelcase import LoopbackCase, bodies, some_tools

ADD = {
    "name": "add",
    "description": "Add two integers.",
    "input_schema": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
}
FAIL = {
    "name": "fail",
    "description": "A tool that always raises.",
    "input_schema": {"type": "object", "additionalProperties": False},
}


class AnthropicCase(LoopbackCase):
    def model(self, **options: Any) -> AnthropicMessages:
        options.setdefault("api_key", "sk-ant-test-key")
        options.setdefault("transport", self.transport())
        return AnthropicMessages("claude-test", base_url=self.server.url, **options)

    def run_loop(self, *script: Any, name: str = "t.jsonl", **options: Any) -> Any:
        self.server = self.serve(*script)
        return run(
            "What is 40 + 2?",
            self.model(**options),
            some_tools("add", "fail"),
            transcript=self.path(name),
            max_steps=6,
            max_tokens=10_000,
        )


class TestRequests(AnthropicCase):
    def test_a_full_loop_sends_the_documented_bodies_and_headers(self) -> None:
        result = self.run_loop(
            anthropic_reply("Two calls.", [("toolu_1", "add", {"a": 40, "b": 2}), ("toolu_2", "fail", {})]),
            anthropic_reply(None, [("toolu_3", "add", [1, 2])]),
            anthropic_reply("Done: 42."),
        )
        self.assertEqual((result.stop_reason, result.steps), ("no_tool_calls", 3))
        self.assertTrue(verify_file(self.path()).ok)
        sent = self.server.requests
        self.assertEqual([s.path for s in sent], ["/v1/messages"] * 3)
        for seen in sent:
            self.assertEqual(seen.headers["x-api-key"], "sk-ant-test-key")
            self.assertEqual(seen.headers["anthropic-version"], "2023-06-01")
            self.assertEqual(seen.headers["content-type"], "application/json")
            self.assertNotIn("authorization", seen.headers)
        self.assertEqual(
            sent[0].body,
            {
                "model": "claude-test",
                "max_tokens": 4096,
                "messages": [{"role": "user", "content": "What is 40 + 2?"}],
                "tools": [ADD, FAIL],
            },
        )
        self.assertEqual(
            sent[2].body["messages"],
            [
                {"role": "user", "content": "What is 40 + 2?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Two calls."},
                        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 40, "b": 2}},
                        {"type": "tool_use", "id": "toolu_2", "name": "fail", "input": {}},
                    ],
                },
                # both results of the turn in one user message, in call order; a failure is is_error
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"sum":42}'},
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_2",
                            "content": "tool 'fail' raised RuntimeError: the tool is broken on purpose",
                            "is_error": True,
                        },
                    ],
                },
                # no text: no text block; the input that was not an object goes back as {}
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_3", "name": "add", "input": {}}]},
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_3",
                            "content": "tool_use input must be a JSON object, got an array",
                            "is_error": True,
                        },
                    ],
                },
            ],
        )

    def test_system_max_tokens_and_params_are_sent_and_recorded(self) -> None:
        self.server = self.serve(anthropic_reply("Hi."))
        model = self.model(system="Be brief.", max_tokens=256, params={"temperature": 0.5})
        run("Hello", model, [], transcript=self.path(), max_steps=1, max_tokens=100)
        self.assertEqual(
            bodies(self.server),
            [
                {
                    "model": "claude-test",
                    "max_tokens": 256,
                    "system": "Be brief.",
                    "messages": [{"role": "user", "content": "Hello"}],
                    "temperature": 0.5,
                }
            ],
        )
        self.assertEqual(
            read_records(self.path())[0]["payload"]["model"],
            {
                "provider": "anthropic",
                "model": "claude-test",
                "host": "127.0.0.1:%d" % self.server.port,
                "params": {"max_tokens": 256, "temperature": 0.5},
                "system": "Be brief.",
            },
        )

    def test_the_official_endpoint_needs_a_key_and_max_tokens_is_checked(self) -> None:
        with mock.patch.dict(os.environ, {"ANTHROPIC_API_KEY": "", "ANTHROPIC_BASE_URL": ""}):
            with self.assertRaises(ModelConfigError) as caught:
                AnthropicMessages("claude-sonnet-4-5")
        self.assertEqual(str(caught.exception), "api_key: no API key: pass api_key= or set ANTHROPIC_API_KEY")
        with self.assertRaises(ModelConfigError):
            AnthropicMessages("claude-sonnet-4-5", api_key="k", max_tokens=0)
        with self.assertRaises(ModelConfigError):
            AnthropicMessages("c", api_key="k", base_url="http://127.0.0.1/", params={"system": "x"})


class TestReplies(AnthropicCase):
    def test_text_blocks_join_and_tool_uses_keep_order_and_ids(self) -> None:
        body = anthropic_reply("I will ", [("toolu_a", "add", {"a": 1, "b": 2}), ("toolu_b", "echo", {"text": "x"})])
        body["content"].insert(1, {"type": "text", "text": "use two tools."})
        body["content"].insert(0, {"type": "thinking", "thinking": "hm", "signature": "s"})
        reply = messages_api_reply(body)
        self.assertEqual(reply.text, "I will use two tools.")
        self.assertEqual(
            reply.tool_calls, (ToolCall("add", {"a": 1, "b": 2}, "toolu_a"), ToolCall("echo", {"text": "x"}, "toolu_b"))
        )

    def test_usage_counts_cached_input_and_is_recorded(self) -> None:
        usage = {
            "input_tokens": 13,
            "output_tokens": 5,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 50,
        }
        result = self.run_loop(anthropic_reply("Hi.", usage=usage))
        assistant = read_records(self.path())[1]["payload"]
        self.assertEqual(
            assistant["usage"],
            {"input_tokens": 163, "output_tokens": 5, "cache_read_tokens": 50, "cache_write_tokens": 100},
        )
        self.assertEqual((assistant["tokens"], result.tokens), (168, 168))
        self.assertEqual(
            messages_api_reply(
                anthropic_reply("x", usage={"input_tokens": 1, "output_tokens": 2, "cache_read_input_tokens": None})
            ).usage.input_tokens,
            1,
        )  # type: ignore[union-attr]

    def test_a_usage_that_cannot_be_read_is_a_model_error(self) -> None:
        with self.assertRaises(ModelResponseError) as caught:
            messages_api_reply(
                anthropic_reply("x", usage={"input_tokens": 1, "output_tokens": 2, "cache_creation_input_tokens": "9"})
            )
        self.assertTrue(
            str(caught.exception).endswith(
                '$.usage.cache_creation_input_tokens: expected a token count (an integer >= 0), got "9"'
            ),
            str(caught.exception),
        )

    def test_a_refusal_or_an_empty_reply_ends_the_run(self) -> None:
        for body in (anthropic_reply(None, stop_reason="refusal"), anthropic_reply("", stop_reason="end_turn")):
            with self.subTest(body["stop_reason"]):
                name = body["stop_reason"] + ".jsonl"
                result = self.run_loop(body, name=name)
                self.assertEqual(
                    (result.stop_reason, read_records(self.path(name))[1]["payload"]["text"]), ("no_tool_calls", "")
                )

    def test_a_body_of_the_wrong_shape_is_a_model_error_naming_the_place(self) -> None:
        for body, where in (
            ({"type": "message"}, "$.content: expected list, got nothing"),
            (
                {"content": [{"type": "tool_use", "name": "add", "input": {}}]},
                "$.content[0].id: expected str, got nothing",
            ),
        ):
            with self.subTest(where):
                with self.assertRaises(ModelResponseError) as caught:
                    messages_api_reply(body, "anthropic", "h")
                self.assertEqual(str(caught.exception), "anthropic at h: unexpected response: " + where)


class TestFailures(AnthropicCase):
    def test_529_overloaded_then_success_is_retried(self) -> None:
        result = self.run_loop(anthropic_error(529, "overloaded_error", "Overloaded"), anthropic_reply("Fine."))
        self.assertEqual((result.stop_reason, self.waits), ("no_tool_calls", [0.5]))

    def test_429_with_retry_after_exhausted_names_status_and_message(self) -> None:
        limited = anthropic_error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            {"retry-after": "7", "request-id": "req_011"},
        )
        result = self.run_loop(limited, limited, limited)
        self.assertEqual(self.waits, [7.0, 7.0])
        self.assertEqual(
            result.detail,
            "model raised ModelAPIError: anthropic at 127.0.0.1:%d: HTTP 429: rate_limit_error: "
            "Number of request tokens has exceeded your per-minute rate limit [request-id req_011] "
            "(gave up after 3 attempts)" % self.server.port,
        )

    def test_an_authentication_error_fails_at_once(self) -> None:
        result = self.run_loop(anthropic_error(401, "authentication_error", "invalid x-api-key"))
        self.assertTrue(result.detail.endswith("HTTP 401: authentication_error: invalid x-api-key"))
        self.assertEqual(len(self.server.requests), 1)


class TestMessages(AnthropicCase):
    def test_a_final_assistant_text_is_a_plain_string_and_blank_text_is_not_a_block(self) -> None:
        messages: List[Dict[str, Any]] = [
            {"role": "user", "content": "t"},
            {"role": "assistant", "content": "  ", "tool_calls": [{"id": "u", "name": "add", "arguments": None}]},
            {"role": "tool", "tool_call_id": "u", "name": "add", "ok": True, "content": "1"},
            {"role": "assistant", "content": "bye", "tool_calls": []},
        ]
        self.assertEqual(
            messages_api_messages(messages),
            [
                {"role": "user", "content": "t"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "u", "name": "add", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u", "content": "1"}]},
                {"role": "assistant", "content": "bye"},
            ],
        )

    def test_a_full_loop_replays_byte_identically(self) -> None:
        self.run_loop(
            anthropic_reply("Two calls.", [("toolu_1", "add", {"a": 40, "b": 2}), ("toolu_2", "fail", {})]),
            anthropic_reply(None, [("toolu_3", "add", "oops")]),
            anthropic_reply("Done."),
        )
        status, out, err = self.cli(
            "replay", self.path(), "--tools", "tests.support.modelcase:add_and_fail", "-o", self.path("r.jsonl")
        )
        self.assertEqual((status, err), (0, ""), out)
        self.assertEqual(read_lines(self.path()), read_lines(self.path("r.jsonl")))
        task = json.loads(read_lines(self.path("r.jsonl"))[0])["payload"]
        self.assertEqual(task["model"]["provider"], "anthropic")

    def test_agentloop_run_with_an_anthropic_model(self) -> None:
        self.server = self.serve()
        with mock.patch.dict(os.environ, {"ANTHROPIC_API_KEY": "sk-ant-env"}):
            status, out, _ = self.cli(
                "run",
                "--model",
                "anthropic:claude-test",
                "--base-url",
                self.server.url,
                "--max-output-tokens",
                "100",
                "--tools",
                "demo:demo_tools",
                "--task",
                "What is 40 + 2?",
                "--max-steps",
                "4",
                "--max-tokens",
                "2000",
                "-o",
                self.path(),
            )
        self.assertEqual(status, 0, out)
        self.assertEqual(self.server.requests[0].headers["x-api-key"], "sk-ant-env")
        self.assertEqual(self.server.requests[0].body["max_tokens"], 100)
        self.assertIn("stop: no_tool_calls (steps=2, tokens=36)", out)
