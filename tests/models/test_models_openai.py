"""OpenAIChat against a loopback Chat Completions server: the exact requests, the parsed replies, a full loop."""

from __future__ import annotations

import unittest

import json
import os
from typing import Any, Dict, List, Tuple
from unittest import mock

from agentloop import ToolCall, run, verify_file
from agentloop.models import HttpTransport, ModelConfigError, ModelConnectionError, ModelResponseError, OpenAIChat
from agentloop.models.openai import chat_messages, chat_reply

from tests.support.helpers import read_lines, read_records
from tests.support.loopback import Canned, openai_error, openai_reply
from tests.support.modelcase import LoopbackCase, bodies, some_tools

ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}
GREET = {
    "type": "function",
    "function": {
        "name": "greet",
        "description": "Greet someone by name.",
        "parameters": {
            "type": "object",
            "properties": {"name": {"type": "string", "minLength": 1}},
            "required": ["name"],
            "additionalProperties": False,
        },
        "strict": False,  # minLength is not in strict mode's subset
    },
}


def json_error(text: str) -> str:
    try:
        json.loads(text)
    except ValueError as exc:
        return str(exc)
    raise AssertionError("valid JSON: %s" % text)


class OpenAICase(LoopbackCase):
    def model(self, **options: Any) -> OpenAIChat:
        options.setdefault("api_key", "sk-test-key")
        options.setdefault("transport", self.transport())
        return OpenAIChat("gpt-test", base_url=self.server.openai_url, **options)

    def run_loop(self, *script: Any, tools: Any = None, **options: Any) -> Any:
        self.server = self.serve(*script)
        tools = some_tools("add", "greet") if tools is None else tools
        return run(
            "What is 40 + 2?", self.model(**options), tools, transcript=self.path(), max_steps=6, max_tokens=10_000
        )


class TestRequests(OpenAICase):
    def test_a_full_loop_sends_the_documented_bodies_and_headers(self) -> None:
        result = self.run_loop(
            openai_reply(
                "Two calls.", [("call_a", "add", '{"a": 40, "b": 2}'), ("call_b", "greet", '{"name": "Ada"}')]
            ),
            openai_reply(None, [("call_c", "add", '{"a": 1,')]),
            openai_reply("Done: 42."),
        )
        self.assertEqual((result.stop_reason, result.steps), ("no_tool_calls", 3))
        self.assertTrue(verify_file(self.path()).ok)
        sent = self.server.requests
        self.assertEqual([s.path for s in sent], ["/v1/chat/completions"] * 3)
        for seen in sent:
            self.assertEqual(seen.headers["authorization"], "Bearer sk-test-key")
            self.assertEqual(seen.headers["content-type"], "application/json")
        self.assertEqual(
            sent[0].body,
            {"model": "gpt-test", "messages": [{"role": "user", "content": "What is 40 + 2?"}], "tools": [ADD, GREET]},
        )
        self.assertEqual(
            sent[2].body["messages"],
            [
                {"role": "user", "content": "What is 40 + 2?"},
                {
                    "role": "assistant",
                    "content": "Two calls.",
                    "tool_calls": [
                        {
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "add", "arguments": '{"a":40,"b":2}'},
                        },
                        {
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "greet", "arguments": '{"name":"Ada"}'},
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "call_a", "content": '{"sum":42}'},
                {"role": "tool", "tool_call_id": "call_b", "content": '{"greeting":"Hello, Ada!"}'},
                # the unreadable arguments go back as {} with content null; the result says why
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_c", "type": "function", "function": {"name": "add", "arguments": "{}"}}
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": "call_c",
                    "content": 'arguments are not valid JSON (%s): "{\\"a\\": 1,"' % json_error('{"a": 1,'),
                },
            ],
        )
        self.assertEqual(sent[2].body["tools"], [ADD, GREET])

    def test_no_tools_means_no_tools_key_and_system_and_params_are_sent(self) -> None:
        self.server = self.serve(openai_reply("Hi."))
        model = self.model(system="Be brief.", params={"temperature": 0, "max_completion_tokens": 50})
        run("Hello", model, [], transcript=self.path(), max_steps=1, max_tokens=100)
        self.assertEqual(
            bodies(self.server),
            [
                {
                    "model": "gpt-test",
                    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}],
                    "temperature": 0,
                    "max_completion_tokens": 50,
                }
            ],
        )
        task = read_records(self.path())[0]["payload"]
        self.assertEqual(
            task["model"],
            {
                "provider": "openai",
                "model": "gpt-test",
                "host": "127.0.0.1:%d" % self.server.port,
                "system": "Be brief.",
                "params": {"temperature": 0, "max_completion_tokens": 50},
            },
        )

    def test_a_call_without_id_gets_the_loops_id_and_the_result_is_tied_to_it(self) -> None:
        self.run_loop(openai_reply(None, [("", "add", '{"a": 1, "b": 2}')]), openai_reply("3"))
        second = self.server.requests[1].body["messages"]
        self.assertEqual(second[1]["tool_calls"][0]["id"], "call_1_0")
        self.assertEqual(second[2], {"role": "tool", "tool_call_id": "call_1_0", "content": '{"sum":3}'})

    def test_without_a_key_a_local_server_gets_no_authorization_header(self) -> None:
        self.server = self.serve(openai_reply("Hi."))
        with mock.patch.dict(os.environ, {"OPENAI_API_KEY": ""}):
            model = OpenAIChat("local", base_url=self.server.openai_url, transport=self.transport())
        run("Hello", model, [], transcript=self.path(), max_steps=1, max_tokens=100)
        self.assertNotIn("authorization", self.server.requests[0].headers)

    def test_the_key_comes_from_the_environment(self) -> None:
        self.server = self.serve(openai_reply("Hi."))
        with mock.patch.dict(os.environ, {"OPENAI_API_KEY": "sk-from-env"}):
            model = OpenAIChat("gpt-test", base_url=self.server.openai_url, transport=self.transport())
        model([{"role": "user", "content": "Hello"}], [])
        self.assertEqual(self.server.requests[0].headers["authorization"], "Bearer sk-from-env")


class TestReplies(OpenAICase):
    def test_a_plain_answer_with_usage(self) -> None:
        reply = chat_reply(openai_reply("Hello there."))
        self.assertEqual(reply.text, "Hello there.")
        self.assertEqual(reply.tool_calls, ())
        self.assertEqual((reply.usage.input_tokens, reply.usage.output_tokens), (11, 7))  # type: ignore[union-attr]

    def test_several_tool_calls_keep_their_order_ids_and_arguments(self) -> None:
        reply = chat_reply(openai_reply(None, [("c1", "add", '{"a": 1, "b": 2}'), ("c2", "echo", '{"text": "x"}')]))
        self.assertEqual(reply.text, "")
        self.assertEqual(
            reply.tool_calls, (ToolCall("add", {"a": 1, "b": 2}, "c1"), ToolCall("echo", {"text": "x"}, "c2"))
        )

    def test_arguments_that_are_not_a_json_object_become_the_calls_error(self) -> None:
        cases = {
            '{"a": 1 "b": 2}': 'arguments are not valid JSON (%s): "{\\"a\\": 1 \\"b\\": 2}"'
            % json_error('{"a": 1 "b": 2}'),
            "[1, 2]": 'arguments must be a JSON object, got an array: "[1, 2]"',
            '{"a": 1, "a": 2}': 'arguments are not valid JSON (duplicate key "a"): "{\\"a\\": 1, \\"a\\": 2}"',
            '{"a": NaN}': 'arguments are not valid JSON (NaN is not JSON): "{\\"a\\": NaN}"',
            "": "",  # nothing: no arguments
        }
        for arguments, error in cases.items():
            with self.subTest(arguments):
                call = chat_reply(openai_reply(None, [("c", "add", arguments)])).tool_calls[0]
                self.assertEqual((call.arguments, call.arguments_error), ({}, error))

    def test_malformed_arguments_fail_that_call_as_data_and_the_run_goes_on(self) -> None:
        result = self.run_loop(
            openai_reply("Trying.", [("c1", "add", '{"a": 40, "b":'), ("c2", "add", '{"a": 40, "b": 2}')]),
            openai_reply("42."),
        )
        self.assertEqual(result.stop_reason, "no_tool_calls")
        records = read_records(self.path())
        error = 'arguments are not valid JSON (%s): "{\\"a\\": 40, \\"b\\":"' % json_error('{"a": 40, "b":')
        self.assertEqual(
            records[1]["payload"]["tool_calls"][0],
            {"id": "c1", "name": "add", "arguments": None, "arguments_error": error},
        )
        self.assertEqual(records[2]["payload"], {"step": 1, "id": "c1", "name": "add", "ok": False, "error": error})
        self.assertEqual(records[3]["payload"]["value"], {"sum": 42})

    def test_a_refusal_is_the_text_and_ends_the_run(self) -> None:
        result = self.run_loop(openai_reply(None, refusal="I can't help with that."))
        self.assertEqual(result.stop_reason, "no_tool_calls")
        self.assertEqual(read_records(self.path())[1]["payload"]["text"], "I can't help with that.")

    def test_an_empty_reply_ends_the_run_with_empty_text(self) -> None:
        result = self.run_loop(openai_reply(None, usage=None))
        self.assertEqual(result.stop_reason, "no_tool_calls")
        assistant = read_records(self.path())[1]["payload"]
        self.assertEqual((assistant["text"], assistant["tokens"]), ("", 1))  # no usage: the heuristic
        self.assertNotIn("usage", assistant)

    def test_reported_usage_is_recorded_and_counted(self) -> None:
        result = self.run_loop(
            openai_reply(None, [("c", "add", '{"a": 1, "b": 2}')], usage=(100, 20)), openai_reply("3", usage=(130, 2))
        )
        records = read_records(self.path())
        self.assertEqual(records[1]["payload"]["usage"], {"input_tokens": 100, "output_tokens": 20})
        self.assertEqual((records[1]["payload"]["tokens"], records[3]["payload"]["total_tokens"]), (120, 252))
        self.assertEqual(result.tokens, 252)

    def test_a_usage_that_cannot_be_read_stops_the_run_never_a_guess(self) -> None:
        for usage, where in (
            (
                {"prompt_tokens": 100000.5, "completion_tokens": 5},
                "$.usage.prompt_tokens: expected a token count (an integer >= 0), got 100000.5",
            ),
            (
                {"prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 11}},
                "$.usage: 11 cached tokens is more than the prompt's 10",
            ),
            ({"prompt_tokens": 2**70, "completion_tokens": 5}, "$.usage: a token count beyond 2**53-1"),
            ({"completion_tokens": 5}, "$.usage.prompt_tokens: expected a token count (an integer >= 0), got nothing"),
            ([100, 5], "$.usage: expected an object, got list"),
            ({"prompt_tokens": 10}, "$.usage.completion_tokens: expected a token count (an integer >= 0), got nothing"),
        ):
            with self.subTest(where):
                if os.path.exists(self.path()):
                    os.unlink(self.path())
                result = self.run_loop(dict(openai_reply("hi"), usage=usage))
                self.assertEqual(result.stop_reason, "model_error")
                self.assertTrue(result.detail.endswith("unexpected response: " + where), result.detail)
                self.assertTrue(verify_file(self.path()).ok)
        os.unlink(self.path())
        result = self.run_loop(dict(openai_reply("hi"), usage={"prompt_tokens": 100000.0, "completion_tokens": 5}))
        self.assertEqual((result.stop_reason, result.tokens), ("no_tool_calls", 100005))  # an integral float is a count
        for empty in ({}, {"total_tokens": 15}):  # no count at all: as if absent, the estimate
            os.unlink(self.path())
            result = self.run_loop(dict(openai_reply("hi"), usage=empty))
            self.assertEqual((result.stop_reason, result.tokens), ("no_tool_calls", 1))

    def test_a_body_of_the_wrong_shape_is_a_model_error_naming_the_place(self) -> None:
        cases: List[Tuple[Dict[str, Any], str]] = [
            ({"choices": []}, "$.choices: expected at least one choice, got none"),
            ({"object": "chat.completion"}, "$.choices: expected list, got nothing"),
            ({"choices": [{"message": {"content": 5}}]}, "$.choices[0].message.content: expected str, got int"),
            (
                {
                    "choices": [
                        {
                            "message": {
                                "content": None,
                                "tool_calls": [{"id": "c", "type": "function", "function": {"arguments": "{}"}}],
                            }
                        }
                    ]
                },
                "$.choices[0].message.tool_calls[0].function.name: expected str, got nothing",
            ),
        ]
        for body, where in cases:
            with self.subTest(where):
                with self.assertRaises(ModelResponseError) as caught:
                    chat_reply(body, "openai", "h")
                self.assertEqual(str(caught.exception), "openai at h: unexpected response: " + where)


class TestFailures(OpenAICase):
    def test_an_error_body_stops_the_run_with_status_and_the_providers_message(self) -> None:
        result = self.run_loop(
            openai_error(
                400,
                "Invalid value for 'model'.",
                "invalid_request_error",
                "model_not_found",
                headers={"x-request-id": "req_42"},
            )
        )
        self.assertEqual(result.stop_reason, "model_error")
        self.assertEqual(
            result.detail,
            "model raised ModelAPIError: openai at 127.0.0.1:%d: HTTP 400: invalid_request_error/model_not_found: "
            "Invalid value for 'model'. [request-id req_42]" % self.server.port,
        )
        self.assertEqual((len(self.server.requests), self.waits), (1, []))  # a 400 is not retried

    def test_429_with_retry_after_then_success(self) -> None:
        result = self.run_loop(
            openai_error(429, "Rate limit reached.", "requests", "rate_limit_exceeded", {"Retry-After": "3"}),
            openai_reply("Fine."),
        )
        self.assertEqual(result.stop_reason, "no_tool_calls")
        self.assertEqual(self.waits, [3.0])

    def test_500_then_success(self) -> None:
        result = self.run_loop(openai_error(500, "The server had an error.", "server_error"), openai_reply("Fine."))
        self.assertEqual((result.stop_reason, self.waits), ("no_tool_calls", [0.5]))

    def test_a_timeout_is_retried_then_raised(self) -> None:
        self.server = self.serve(Canned(openai_reply("late"), delay=10), Canned(openai_reply("late"), delay=10))
        model = OpenAIChat(
            "gpt-test",
            base_url=self.server.openai_url,
            api_key="k",
            transport=self.transport(max_retries=1, timeout=0.3),
        )
        with self.assertRaises(ModelConnectionError) as caught:
            model([{"role": "user", "content": "x"}], [])
        self.assertEqual(
            str(caught.exception),
            "openai at 127.0.0.1:%d: no answer within the timeout of 0.3 s (gave up after 2 attempts)"
            % self.server.port,
        )
        self.assertEqual((len(self.server.requests), self.waits), (2, [0.5]))

    def test_a_bad_base_url_from_the_environment_is_said_to_come_from_there(self) -> None:
        with mock.patch.dict(os.environ, {"OPENAI_BASE_URL": "https://sk-SECRET5@"}):
            with self.assertRaises(ModelConfigError) as caught:
                OpenAIChat("m", api_key="k")
        self.assertEqual(
            str(caught.exception),
            "base_url: must not hold credentials (user:password@) ($OPENAI_BASE_URL); pass api_key= instead",
        )

    def test_the_official_endpoint_needs_a_key(self) -> None:
        with mock.patch.dict(os.environ, {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}):
            with self.assertRaises(ModelConfigError) as caught:
                OpenAIChat("gpt-4o-mini")
        self.assertEqual(str(caught.exception), "api_key: no API key: pass api_key= or set OPENAI_API_KEY")

    def test_bad_configuration_is_refused_at_once(self) -> None:
        cases = [
            (
                dict(base_url="ftp://x/v1"),
                'base_url: must be an http:// or https:// URL with a host, got scheme "ftp" and host "x"',
            ),
            (
                dict(base_url="http://u:p@127.0.0.1/v1"),
                "base_url: must not hold credentials (user:password@); pass api_key= instead",
            ),
            # A URL that may hold a key is never quoted whole.
            (
                dict(base_url="htps://me:sk-SECRET1@h/v1"),
                "base_url: must not hold credentials (user:password@); pass api_key= instead",
            ),
            (
                dict(base_url="https://sk-SECRET2@"),
                "base_url: must not hold credentials (user:password@); pass api_key= instead",
            ),
            (dict(base_url="http://[sk-SECRET6]/v1"), "base_url: is not a URL that can be read (a bracketed host?)"),
            (dict(base_url="http://[::1/v1"), "base_url: is not a URL that can be read (a bracketed host?)"),
            (
                dict(base_url="sk-SECRET3"),
                'base_url: must be an http:// or https:// URL with a host, got scheme "" and no host',
            ),
            (
                dict(base_url="localhost:8000/v1?key=sk-SECRET4"),
                'base_url: must be an http:// or https:// URL with a host, got scheme "localhost" and no host',
            ),
            (
                dict(base_url="http://127.0.0.1/v1", params={"messages": []}),
                "params: 'messages' is set by the adapter itself",
            ),
            (
                dict(base_url="http://127.0.0.1/v1", params={"t": float("nan")}),
                "params: $.params.t: nan is not a JSON number",
            ),
            (
                dict(base_url="http://127.0.0.1/v1", transport=HttpTransport(), timeout=3),
                "transport: give timeout, max_retries and on_retry to the HttpTransport, not beside it",
            ),
        ]
        for options, message in cases:
            with self.subTest(message):
                with self.assertRaises(ModelConfigError) as caught:
                    OpenAIChat("m", api_key="k", **options)  # type: ignore[arg-type]
                self.assertEqual(str(caught.exception), message)
        for url in ("http://[::1]:8080/v1", "http://[fe80::1%25eth0]/v1"):  # a bracketed host that is an IPv6 address
            OpenAIChat("m", api_key="k", base_url=url)


class TestMessages(OpenAICase):
    def test_chat_messages_maps_every_role(self) -> None:
        messages: List[Dict[str, Any]] = [
            {"role": "user", "content": "t"},
            {"role": "assistant", "content": "", "tool_calls": []},
        ]
        self.assertEqual(
            chat_messages(messages, "sys"),
            [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "t"},
                {"role": "assistant", "content": ""},
            ],
        )
        with self.assertRaises(ModelConfigError):
            chat_messages([{"role": "narrator", "content": "x"}])

    def test_a_full_loop_replays_byte_identically(self) -> None:
        self.run_loop(
            openai_reply("Two calls.", [("call_a", "add", '{"a": 40, "b": 2}'), ("call_b", "greet", '{"name": ""}')]),
            openai_reply(None, [("call_c", "add", "not json")], usage=(50, 3)),
            openai_reply("Done."),
        )
        self.assertTrue(verify_file(self.path()).ok)
        status, out, err = self.cli(
            "replay", self.path(), "--tools", "tests.support.modelcase:add_and_greet", "-o", self.path("r.jsonl")
        )
        self.assertEqual((status, err), (0, ""), out)
        self.assertIn("replay: identical to %s\n" % self.path(), out)
        self.assertEqual(read_lines(self.path()), read_lines(self.path("r.jsonl")))
        self.assertEqual(len(self.server.requests), 3)  # the replay made no request


class TestCommandLine(OpenAICase):
    def test_agentloop_run_against_the_loopback_server_prints_each_record_and_the_stop(self) -> None:
        self.server = self.serve()  # the server's default model: add(40, 2), then quote the result
        with mock.patch.dict(os.environ, {"OPENAI_API_KEY": ""}):
            status, out, err = self.cli(
                "run",
                "--model",
                "openai:gpt-test",
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
                "-o",
                self.path(),
            )
        self.assertEqual((status, err), (0, ""))
        lines = out.splitlines()
        self.assertTrue(lines[0].startswith("seq=0 task     max_steps=4 max_tokens=2000 tools=add,echo,fail,greet"))
        self.assertIn('seq=2 add      ok=True  value={"sum": 42}', lines)
        self.assertIn("stop: no_tool_calls (steps=2, tokens=36): the assistant asked for no tools", lines)
        result = verify_file(self.path())
        self.assertIn("transcript: %s (5 records, head %s)" % (self.path(), result.head), lines)
        self.assertEqual(self.cli("replay", self.path(), "--tools", "demo:demo_tools")[0], 0)

    def test_agentloop_run_writes_a_signed_checkpoint_that_verifies(self) -> None:
        self.server = self.serve()
        with mock.patch.dict(os.environ, {"AGENTLOOP_TEST_KEY": "k" * 32}):
            status, out, err = self.cli(
                "run",
                "--model",
                "openai:gpt-test",
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
                "-o",
                self.path(),
                "--checkpoint",
                self.path("t.ckpt"),
                "--key-env",
                "AGENTLOOP_TEST_KEY",
            )
            self.assertEqual((status, err), (0, ""), out)
            self.assertIn("checkpoint: %s (signed)" % self.path("t.ckpt"), out.splitlines())
            status, out, _ = self.cli(
                "verify", self.path(), "--checkpoint", self.path("t.ckpt"), "--key-env", "AGENTLOOP_TEST_KEY"
            )
        self.assertEqual(status, 0, out)

    def test_a_url_model_needs_a_model_name(self) -> None:
        status, _, err = self.cli(
            "run",
            "--model",
            "http://127.0.0.1:9/v1",
            "--tools",
            "demo:demo_tools",
            "--task",
            "t",
            "--max-steps",
            "1",
            "--max-tokens",
            "1",
            "-o",
            self.path(),
        )
        self.assertEqual(status, 2)
        self.assertIn("--model-name: an OpenAI-compatible URL needs --model-name", err)
        self.assertFalse(os.path.exists(self.path()))

    def test_an_unreachable_server_ends_on_model_error_with_exit_1(self) -> None:
        server = self.serve()
        port = server.port
        server.stop()  # nothing listens there any more
        status, out, _ = self.cli(
            "run",
            "--model",
            "http://127.0.0.1:%d/v1" % port,
            "--model-name",
            "m",
            "--max-retries",
            "0",
            "--tools",
            "demo:demo_tools",
            "--task",
            "t",
            "--max-steps",
            "1",
            "--max-tokens",
            "9",
            "-o",
            self.path(),
        )
        self.assertEqual(status, 1)
        self.assertIn(
            "stop: model_error (steps=0, tokens=0): model raised ModelConnectionError: openai at 127.0.0.1:%d: "
            "connection failed: ConnectionRefusedError" % port,
            out,
        )


class TestCachedUsage(unittest.TestCase):
    """Cached prompt tokens, as each API reports them, become Usage's cache counts (for cache prices)."""

    def test_openai_cached_tokens_are_part_of_the_prompt(self) -> None:
        from agentloop.models.base import usage_from

        answer = {
            "usage": {"prompt_tokens": 100, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 60}}
        }
        usage = usage_from(
            answer, "prompt_tokens", "completion_tokens", ("prompt_tokens_details.cached_tokens",), cache_included=True
        )
        self.assertEqual(
            (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens),  # type: ignore[union-attr]
            (100, 7, 60, 0),
        )
        plain = usage_from(
            {"usage": {"prompt_tokens": 5, "completion_tokens": 1}},
            "prompt_tokens",
            "completion_tokens",
            ("prompt_tokens_details.cached_tokens",),
            cache_included=True,
        )
        self.assertEqual((plain.input_tokens, plain.cache_read_tokens), (5, 0))  # type: ignore[union-attr]
        lying = {"usage": {"prompt_tokens": 10, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 60}}}
        self.assertIsNone(
            usage_from(
                lying,
                "prompt_tokens",
                "completion_tokens",
                ("prompt_tokens_details.cached_tokens",),
                cache_included=True,
            )
        )  # more cached than the prompt: malformed, not counted
