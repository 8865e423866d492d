"""OpenAIResponses against a loopback Responses API: the exact requests, reasoning items carried
from turn to turn, replay and resume from the file alone, the reply mapping, the command line."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Dict
from unittest import mock

from agentloop import Approve, ToolCall, resume, run, verify_file
from agentloop.models import ModelAPIError, ModelConfigError, ModelResponseError, OpenAIResponses, replay
from agentloop.models.responses import responses_input, responses_reply

from tests.support.helpers import read_lines, read_records
from tests.support.loopback import responses_reply as canned_reply, sealed
from tests.support.modelcase import LoopbackCase, some_tools

ADD = {
    "type": "function",
    "name": "add",
    "description": "Add two integers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
    "strict": True,
}


class ResponsesCase(LoopbackCase):
    def model(self, **options: Any) -> OpenAIResponses:
        options.setdefault("api_key", "sk-test-key-0123")
        options.setdefault("transport", self.transport())
        return OpenAIResponses("gpt-test", base_url=self.server.openai_url, **options)

    def run_loop(self, *script: Any, name: str = "t.jsonl", tools: Any = None, **options: Any) -> Any:
        self.server = self.serve(*script)
        return run(
            "What is 40 + 2?",
            self.model(**options),
            tools or some_tools("add"),
            transcript=self.path(name),
            max_steps=6,
            max_tokens=10_000,
        )


class TestRequests(ResponsesCase):
    def test_a_reasoning_run_sends_its_reasoning_items_back_with_the_items_that_followed_them(self) -> None:
        result = self.run_loop()  # the stand-in's default model: it reasons, calls add, then quotes the result
        self.assertEqual((result.stop_reason, result.steps), ("no_tool_calls", 2))
        sent = self.server.requests
        self.assertEqual([s.path for s in sent], ["/v1/responses"] * 2)
        self.assertEqual(sent[0].headers["authorization"], "Bearer sk-test-key-0123")
        self.assertEqual(
            sent[0].body,
            {
                "model": "gpt-test",
                "input": [{"role": "user", "content": "What is 40 + 2?"}],
                "store": False,
                "include": ["reasoning.encrypted_content"],
                "tools": [ADD],
            },
        )
        first_output = canned_reply(
            None, [("call_add_1", "add", '{"a": 40, "b": 2}')], reasoning="Use add.", reasoning_tokens=4
        )["output"]
        self.assertEqual(
            sent[1].body["input"],
            [{"role": "user", "content": "What is 40 + 2?"}]
            + first_output
            + [{"type": "function_call_output", "call_id": "call_add_1", "output": '{"sum":42}'}],
        )
        records = read_records(self.path())
        self.assertEqual(records[1]["payload"]["provider_data"], {"api": "openai-responses", "items": first_output})
        self.assertEqual(
            records[1]["payload"]["usage"], {"input_tokens": 11, "output_tokens": 7, "reasoning_tokens": 4}
        )
        self.assertEqual(records[3]["payload"]["text"], 'The tools said: {"sum":42}.')
        self.assertTrue(verify_file(self.path()).ok)

    def test_the_stand_in_refuses_a_reasoning_item_changed_or_alone(self) -> None:
        """The negative control of the test above: the stand-in checks what the real API checks."""
        self.server = self.serve()
        model = self.model()
        item = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": sealed("rs_1")}
        turn = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c", "name": "add", "arguments": {"a": 1, "b": 2}}],
            "provider_data": {
                "api": "openai-responses",
                "items": [
                    item,
                    {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "add", "arguments": "{}"},
                ],
            },
        }
        result = {"role": "tool", "tool_call_id": "c", "name": "add", "ok": True, "content": "3"}
        model([{"role": "user", "content": "t"}, turn, result], [])  # accepted as sent
        for broken in ([dict(item, encrypted_content="sealed:0")], [item]):
            with self.subTest(broken), self.assertRaises(ModelAPIError) as caught:
                model(
                    [
                        {"role": "user", "content": "t"},
                        dict(turn, provider_data={"api": "openai-responses", "items": broken}),
                        result,
                    ],
                    [],
                )
            self.assertEqual(caught.exception.status, 400)

    def test_turns_without_reasoning_are_rebuilt_from_the_text_and_calls(self) -> None:
        self.run_loop(
            canned_reply("Two calls.", [("c1", "add", '{"a": 40, "b": 2}'), ("c2", "add", "[1]")]),
            canned_reply("Done."),
        )
        self.assertNotIn("provider_data", read_records(self.path())[1]["payload"])
        self.assertEqual(
            self.server.requests[1].body["input"][1:],
            [
                {"role": "assistant", "content": "Two calls."},
                {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a":40,"b":2}'},
                {"type": "function_call", "call_id": "c2", "name": "add", "arguments": "{}"},  # unreadable: back as {}
                {"type": "function_call_output", "call_id": "c1", "output": '{"sum":42}'},
                {
                    "type": "function_call_output",
                    "call_id": "c2",
                    "output": 'arguments must be a JSON object, got an array: "[1]"',
                },
            ],
        )

    def test_system_params_store_and_the_prompt_cache_key(self) -> None:
        self.server = self.serve(canned_reply("ok"), canned_reply("ok"))
        model = self.model(system="Be brief.", params={"reasoning": {"effort": "low"}}, prompt_cache_key="run-7")
        model([{"role": "user", "content": "t"}], [])
        stored = self.model(store=True)
        stored([{"role": "system", "content": "From run."}, {"role": "user", "content": "t"}], [])
        self.assertEqual(
            self.server.requests[0].body,
            {
                "model": "gpt-test",
                "input": [{"role": "user", "content": "t"}],
                "store": False,
                "include": ["reasoning.encrypted_content"],
                "instructions": "Be brief.",
                "reasoning": {"effort": "low"},
                "prompt_cache_key": "run-7",
            },
        )
        self.assertEqual(
            self.server.requests[1].body,
            {
                "model": "gpt-test",
                "input": [{"role": "user", "content": "t"}],
                "store": True,
                "instructions": "From run.",
            },
        )
        self.assertEqual(
            model.model_info(),
            {
                "provider": "openai",
                "api": "responses",
                "model": "gpt-test",
                "host": "127.0.0.1:%d" % self.server.port,
                "system": "Be brief.",
                "params": {"reasoning": {"effort": "low"}, "prompt_cache_key": "run-7"},
            },
        )
        self.assertEqual(stored.model_info()["store"], True)
        self.assertEqual(model.url, self.server.openai_url + "/responses")

    def test_misuse_is_refused(self) -> None:
        self.server = self.serve()
        for options, parameter in (
            ({"store": 1}, "store"),
            ({"params": {"input": []}}, "params"),
            ({"prompt_cache_key": ""}, "prompt_cache_key"),
            ({"prompt_cache_key": "a", "params": {"prompt_cache_key": "b"}}, "prompt_cache_key"),
        ):
            with self.subTest(options), self.assertRaises(ModelConfigError) as caught:
                self.model(**options)
            self.assertEqual(caught.exception.parameter, parameter)
        with self.assertRaises(ModelConfigError) as caught:
            self.model(prompt_cache_key="")
        self.assertIn('must be a non-empty str, got ""', str(caught.exception))  # not "got str"
        with self.assertRaises(ModelConfigError):
            responses_input([{"role": "robot", "content": "x"}])


class TestReplies(ResponsesCase):
    def reply(self, body: Dict[str, Any]) -> Any:
        return responses_reply(body, "openai", "h")

    def test_text_refusal_incomplete_and_usage(self) -> None:
        reply = self.reply(canned_reply("Hello", usage=(100, 20), cached=60, reasoning_tokens=5))
        self.assertEqual(
            (reply.text, reply.tool_calls, reply.truncated, reply.provider_data), ("Hello", (), False, None)
        )
        self.assertEqual(
            reply.usage.recorded(),
            {"input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 60, "reasoning_tokens": 5},
        )
        self.assertEqual(
            self.reply(canned_reply(None, refusal="I cannot help with that.")).text, "I cannot help with that."
        )
        self.assertTrue(self.reply(canned_reply("cut", status="incomplete", incomplete="max_output_tokens")).truncated)
        self.assertFalse(self.reply(canned_reply("cut", status="incomplete", incomplete="content_filter")).truncated)
        self.assertEqual(self.reply(canned_reply("x", usage=None)).usage, None)

    def test_calls_and_their_arguments(self) -> None:
        reply = self.reply(canned_reply(None, [("c1", "add", '{"a": 1, "b": 2}'), ("c2", "add", "{oops")]))
        self.assertEqual(reply.tool_calls[0], ToolCall("add", {"a": 1, "b": 2}, "c1"))
        self.assertTrue(reply.tool_calls[1].arguments_error.startswith("arguments are not valid JSON"))

    def test_a_failed_response_and_bad_shapes_are_response_errors(self) -> None:
        failed = dict(canned_reply("x"), status="failed", error={"code": "server_error", "message": "The model broke."})
        cases = [
            (failed, "$.status: the response failed (server_error: The model broke.)"),
            ({"output": {}}, "$.output: expected list, got dict"),
            ({"output": [1]}, "$.output[0]: expected an object"),
            ({"output": [{"type": "function_call", "name": "add"}]}, "$.output[0].call_id: expected str, got nothing"),
            (
                {"output": [{"type": "message", "content": [{"type": "output_text"}]}]},
                "$.output[0].content[0].text: expected str, got nothing",
            ),
            (
                dict(
                    canned_reply("x"),
                    usage={"input_tokens": 5, "output_tokens": 2, "output_tokens_details": {"reasoning_tokens": 3}},
                ),
                "$.usage.output_tokens_details.reasoning_tokens: 3 reasoning tokens is more than the output's 2",
            ),
        ]
        for body, message in cases:
            with self.subTest(message), self.assertRaises(ModelResponseError) as caught:
                self.reply(body)  # type: ignore[arg-type]
            self.assertEqual(str(caught.exception), "openai at h: unexpected response: " + message)


class TestReplayAndResume(ResponsesCase):
    def test_a_reasoning_run_replays_byte_for_byte_with_no_server(self) -> None:
        self.run_loop()
        outcome = replay(self.path(), some_tools("add"), transcript=self.path("again.jsonl"))
        self.assertTrue(outcome.identical, outcome.difference)
        self.assertEqual(len(self.server.requests), 2)

    def test_a_pause_then_resume_from_the_file_sends_what_the_uninterrupted_run_sent(self) -> None:
        gated = [_gate(t) for t in some_tools("add")]
        self.server = self.serve()
        run(
            "What is 40 + 2?",
            self.model(),
            gated,
            transcript=self.path("whole.jsonl"),
            max_steps=6,
            max_tokens=10_000,
            approver=lambda request: Approve(by="alice"),
        )
        whole = [seen.raw for seen in self.server.requests]
        self.server.requests.clear()
        paused = run(
            "What is 40 + 2?",
            self.model(),
            gated,
            transcript=self.path(),
            max_steps=6,
            max_tokens=10_000,
            approver=lambda request: None,
        )
        self.assertEqual(paused.stop_reason, "awaiting_approval")
        fresh = self.model()  # a new process would build a new adapter: nothing but the file carries the reasoning
        ended = resume(self.path(), fresh, gated, decisions={"call_add_1": Approve(by="alice")})
        self.assertEqual(ended.stop_reason, "no_tool_calls", ended.detail)  # the stand-in took the reasoning items
        self.assertEqual([seen.raw for seen in self.server.requests], whole)
        self.assertEqual(read_lines(self.path()), read_lines(self.path("whole.jsonl")))


def _gate(tool: Any) -> Any:
    return dataclasses.replace(tool, requires_approval=True)


class TestCommandLine(ResponsesCase):
    def test_run_with_openai_responses_and_replay(self) -> None:
        self.server = self.serve()
        with mock.patch.dict(os.environ, {"OPENAI_API_KEY": ""}):
            status, out, err = self.cli(
                "run",
                "--model",
                "openai-responses:gpt-test",
                "--base-url",
                self.server.openai_url,
                "--tools",
                "demo:demo_tools",
                "--task",
                "What is 40 + 2?",
                "--max-steps",
                "4",
                "--max-tokens",
                "2000",
                "--max-output-tokens",
                "500",
                "--prompt-cache-key",
                "k1",
                "-o",
                self.path(),
            )
        self.assertEqual((status, err), (0, ""), out)
        self.assertEqual(self.server.requests[0].body["max_output_tokens"], 500)
        self.assertEqual(self.server.requests[0].body["prompt_cache_key"], "k1")
        task = read_records(self.path())[0]["payload"]
        self.assertEqual(task["model"]["params"], {"max_output_tokens": 500, "prompt_cache_key": "k1"})
        self.assertEqual(self.cli("replay", self.path(), "--tools", "demo:demo_tools")[0], 0)
        self.assertEqual(json.loads(read_lines(self.path())[1])["payload"]["provider_data"]["api"], "openai-responses")
