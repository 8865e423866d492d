"""Adapters under a hostile or careless server: the key in every form,
pickles without the key, whole-request deadlines, truncated replies, base URL
queries, the system message, acall."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import pickle
import time
from typing import Any, List
from unittest import mock

from agentloop import run
from agentloop.errors import ModelConnectionError, ModelResponseError
from agentloop.models import AnthropicMessages, HttpTransport, OpenAIChat, RetryPolicy
from agentloop.models.base import Endpoint

from tests.support.helpers import read_lines
from tests.support.loopback import Canned, anthropic_reply, openai_error, openai_reply
from tests.support.modelcase import LoopbackCase, some_tools

KEY = "sk-test-0123456789-SECRET-abcdef"
FORMS = (KEY, KEY[8:], base64.b64encode(KEY.encode()).decode()[4:-4], KEY.replace("-", "\\u002d"))


def escaped_arguments(text: str) -> str:
    """A tool call's ``arguments`` string whose JSON spells ``text`` with \\u escapes."""
    return '{"text": "%s"}' % (text.replace("-", "\\u002d"),)


class TestTheKeyInEveryForm(LoopbackCase):
    def run_openai(self, *script: Any) -> Any:
        server = self.serve(*script)
        model = OpenAIChat("gpt-test", base_url=server.openai_url, api_key=KEY, transport=self.transport(max_retries=0))
        result = run("t", model, some_tools("echo"), transcript=self.path(), max_steps=3, max_tokens=10**6)
        return result, b"".join(read_lines(self.path())).decode("utf-8")

    def assert_nowhere(self, *texts: str) -> None:
        for text in texts:
            for form in FORMS:
                self.assertNotIn(form, text)

    def test_raw_base64_and_cut_forms_are_redacted_in_text_and_arguments(self) -> None:
        encoded = base64.b64encode(("user:" + KEY).encode()).decode()
        urlsafe = base64.urlsafe_b64encode(("x" + KEY).encode()).decode()
        reply = openai_reply(
            "raw %s b64 %s url %s cut %s" % (KEY, encoded, urlsafe, KEY[:20]),
            [("c1", "echo", json.dumps({"text": KEY[11:] + " tail"}))],
        )
        result, transcript = self.run_openai(reply, openai_reply("done"))
        self.assertEqual(result.stop_reason, "no_tool_calls")
        self.assertIn("raw [redacted] b64 ", transcript)
        self.assertIn("cut [redacted]", transcript)
        self.assertIn('"text":"[redacted] tail"', transcript)
        self.assert_nowhere(transcript, result.detail)

    def test_a_u_escaped_key_inside_the_arguments_string_is_redacted_once_read(self) -> None:
        # The outer JSON is fine; the arguments string holds JSON whose string spells the key with \u escapes.
        reply = openai_reply("calling", [("c1", "echo", escaped_arguments(KEY))])
        result, transcript = self.run_openai(reply, openai_reply("done"))
        self.assertEqual(result.stop_reason, "no_tool_calls")
        self.assertIn('"arguments":{"text":"[redacted]"}', transcript)
        self.assert_nowhere(transcript, result.detail)

    def test_a_key_still_escaped_inside_a_read_value_is_refused_unquoted(self) -> None:
        # A JSON string inside the arguments' JSON string: the read value still spells the key with \u escapes.
        reply = openai_reply("calling", [("c1", "echo", json.dumps({"text": KEY.replace("-", "\\u002d")}))])
        result, transcript = self.run_openai(reply)
        self.assertEqual(result.stop_reason, "model_error")
        self.assertIn(
            "the reply holds the API key (or a secret header) in an escaped form; refused, not recorded", result.detail
        )
        self.assert_nowhere(transcript, result.detail)

    def test_a_doubly_escaped_key_in_unreadable_arguments_is_refused(self) -> None:
        reply = openai_reply("calling", [("c1", "echo", "not json " + KEY.replace("-", "\\u002d"))])
        result, transcript = self.run_openai(reply)
        self.assertEqual(result.stop_reason, "model_error")
        self.assert_nowhere(transcript, result.detail)

    def test_a_key_split_across_two_anthropic_text_blocks_is_redacted(self) -> None:
        body = anthropic_reply("first " + KEY[:13])
        body["content"].append({"type": "text", "text": KEY[13:] + " second"})
        body["content"].append({"type": "tool_use", "id": "t1", "name": "echo", "input": {"text": KEY}})
        server = self.serve(body, anthropic_reply("done"))
        model = AnthropicMessages("claude-test", base_url=server.url, api_key=KEY, transport=self.transport())
        result = run("t", model, some_tools("echo"), transcript=self.path(), max_steps=3, max_tokens=10**6)
        transcript = b"".join(read_lines(self.path())).decode("utf-8")
        self.assertIn('"text":"first [redacted] second"', transcript)
        self.assert_nowhere(transcript, result.detail)
        self.assert_nowhere(json.dumps(server.requests[1].body))  # nor sent back

    def test_an_escaped_key_in_an_error_body_is_withheld(self) -> None:
        message = "bad key " + KEY.replace("-", "%2D")
        result, transcript = self.run_openai(openai_error(401, message, "invalid_request_error"))
        self.assertEqual(result.stop_reason, "model_error")
        self.assertIn("the error text is withheld: it holds a secret in an escaped form", result.detail)
        self.assert_nowhere(transcript, result.detail, result.detail.replace("%2D", "-"))


class TestPickles(LoopbackCase):
    def test_an_adapter_pickles_without_its_key_and_rereads_it_from_the_environment(self) -> None:
        for cls, var, url in (
            (OpenAIChat, "OPENAI_API_KEY", "https://api.openai.com/v1"),
            (AnthropicMessages, "ANTHROPIC_API_KEY", "https://api.anthropic.com"),
        ):
            with self.subTest(cls.__name__):
                with mock.patch.dict(os.environ, {var: KEY}):
                    model = cls("m", base_url=url)
                    self.assertEqual(
                        model.headers().get("Authorization", model.headers().get("x-api-key")).split()[-1], KEY
                    )
                    data = pickle.dumps(model)
                for form in (KEY, KEY[8:], base64.b64encode(KEY.encode()).decode()[4:-4]):
                    self.assertNotIn(form.encode(), data)
                with mock.patch.dict(os.environ, {var: "sk-other-worker-key-0000"}):
                    again = pickle.loads(data)
                self.assertIn("sk-other-worker-key-0000", json.dumps(again.headers()))
                self.assertEqual(again.model_info(), model.model_info())
                with mock.patch.dict(
                    os.environ, {var: ""}
                ):  # the official host needs one: refused, naming the variable
                    with self.assertRaisesRegex(Exception, var):
                        pickle.loads(data)

    def test_a_key_given_directly_or_a_secret_header_is_not_pickled(self) -> None:
        for kwargs in ({"api_key": KEY}, {"api_key": "", "headers": {"api-key": "azure-secret-value"}}):
            with self.subTest(sorted(kwargs)):
                model = OpenAIChat("m", base_url="http://127.0.0.1:9/v1", **kwargs)
                with self.assertRaisesRegex(TypeError, "is not pickled") as caught:
                    pickle.dumps(model)
                self.assertNotIn(KEY, str(caught.exception))
        keyless = pickle.loads(pickle.dumps(OpenAIChat("m", base_url="http://127.0.0.1:9/v1", api_key="")))
        self.assertNotIn("Authorization", keyless.headers())

    def test_a_transport_and_an_endpoint_pickle_without_secrets(self) -> None:
        transport = pickle.loads(pickle.dumps(HttpTransport(timeout=3.0)))
        self.assertEqual(transport.timeout, 3.0)
        with mock.patch.dict(os.environ, {"OPENAI_API_KEY": KEY}):
            end = Endpoint(
                "m",
                base_url=None,
                api_key=None,
                system=None,
                params=None,
                headers=None,
                timeout=120.0,
                max_retries=2,
                transport=None,
                base_url_env="X_UNSET_URL",
                default_base_url="http://127.0.0.1:9",
                api_key_env="OPENAI_API_KEY",
            )
            data = pickle.dumps(end)
            self.assertEqual(pickle.loads(data).key, KEY)
        self.assertNotIn(KEY.encode(), data)


class TestDeadlines(LoopbackCase):
    def test_a_dripping_server_cannot_outlive_the_timeout(self) -> None:
        body = json.dumps(openai_reply("x" * 200)).encode()
        server = self.serve(Canned(body, drip=0.05))  # 0.05 s a byte: ~20 s for the whole body
        model = OpenAIChat(
            "gpt-test",
            base_url=server.openai_url,
            api_key="",
            transport=HttpTransport(timeout=1.0, retry=RetryPolicy(max_retries=0)),
        )
        start = time.monotonic()
        with self.assertRaises(ModelConnectionError) as caught:
            model([{"role": "user", "content": "t"}], [])
        elapsed = time.monotonic() - start
        self.assertLess(elapsed, 3.0, "a 1 s timeout lasted %.1f s" % elapsed)
        self.assertIn("no answer within the timeout of 1 s", str(caught.exception))

    def test_retries_are_bounded_in_total_time_and_announced(self) -> None:
        slow = Canned(openai_reply("late"), delay=30)
        server = self.serve(slow, slow, slow, slow, slow, slow)
        notices: List[str] = []
        transport = HttpTransport(
            timeout=0.5,
            retry=RetryPolicy(max_retries=5, initial_delay=0.1, max_total=1.4),
            on_retry=notices.append,
            jitter=lambda: 0.0,
        )
        model = OpenAIChat("gpt-test", base_url=server.openai_url, api_key=KEY, transport=transport)
        start = time.monotonic()
        with self.assertRaises(ModelConnectionError):
            model([{"role": "user", "content": "t"}], [])
        elapsed = time.monotonic() - start
        self.assertLess(elapsed, 2.5, "max_total 1.4 s lasted %.1f s" % elapsed)
        self.assertGreaterEqual(len(notices), 1)
        self.assertLess(len(notices), 5)
        self.assertTrue(
            notices[0].startswith(
                "openai at 127.0.0.1:%d: no answer within the timeout of 0.5 s; retry 1 of 5 in 0.1 s" % server.port
            ),
            notices[0],
        )
        self.assertNotIn(KEY, "".join(notices))


class TestShapes(LoopbackCase):
    def test_a_reply_cut_at_its_limit_is_recorded_truncated(self) -> None:
        server = self.serve(openai_reply("half an ans", finish_reason="length"))
        model = OpenAIChat("gpt-test", base_url=server.openai_url, api_key="", transport=self.transport())
        self.assertTrue(model([{"role": "user", "content": "t"}], []).truncated)
        server = self.serve(anthropic_reply("half", stop_reason="max_tokens"), anthropic_reply("whole"))
        claude = AnthropicMessages("claude-test", base_url=server.url, api_key="", transport=self.transport())
        result = run("t", claude, some_tools("echo"), transcript=self.path(), max_steps=2, max_tokens=10**6)
        record = json.loads(read_lines(self.path())[1])
        self.assertIs(record["payload"]["truncated"], True)
        self.assertEqual(result.stop_reason, "no_tool_calls")
        self.assertFalse(claude([{"role": "user", "content": "t"}], []).truncated)
        # The context window ran out mid-reply: cut as well (said in the stream's message_delta).
        server = self.serve(anthropic_reply("half", stop_reason="model_context_window_exceeded"))
        claude = AnthropicMessages(
            "claude-test", base_url=server.url, api_key="", transport=self.transport(), stream=True
        )
        self.assertTrue(claude([{"role": "user", "content": "t"}], []).truncated)

    def test_a_base_url_query_is_kept_after_the_appended_path(self) -> None:
        server = self.serve(openai_reply("ok"), anthropic_reply("ok"))
        OpenAIChat(
            "m", base_url=server.openai_url + "/?api-version=2024-10-21", api_key="", transport=self.transport()
        )([{"role": "user", "content": "t"}], [])
        AnthropicMessages("m", base_url=server.url + "?tenant=a%2Fb", api_key="", transport=self.transport())(
            [{"role": "user", "content": "t"}], []
        )
        self.assertEqual(
            [seen.path for seen in server.requests],
            ["/v1/chat/completions?api-version=2024-10-21", "/v1/messages?tenant=a%2Fb"],
        )

    def test_a_leading_system_message_overrides_the_constructors_system(self) -> None:
        server = self.serve(openai_reply("ok"), anthropic_reply("ok"), openai_reply("ok"))
        messages = [{"role": "system", "content": "from run"}, {"role": "user", "content": "t"}]
        OpenAIChat("m", base_url=server.openai_url, api_key="", system="from ctor", transport=self.transport())(
            messages, []
        )
        AnthropicMessages("m", base_url=server.url, api_key="", system="from ctor", transport=self.transport())(
            messages, []
        )
        OpenAIChat("m", base_url=server.openai_url, api_key="", system="from ctor", transport=self.transport())(
            messages[1:], []
        )
        first, second, third = (seen.body for seen in server.requests)
        self.assertEqual(
            first["messages"], [{"role": "system", "content": "from run"}, {"role": "user", "content": "t"}]
        )
        self.assertEqual((second["system"], second["messages"]), ("from run", [{"role": "user", "content": "t"}]))
        self.assertEqual(third["messages"][0], {"role": "system", "content": "from ctor"})

    def test_acall_runs_the_call_in_a_thread(self) -> None:
        first, second = (
            self.serve(openai_reply("one")),
            self.serve(anthropic_reply("two")),
        )  # concurrent: one server each
        messages = [{"role": "user", "content": "t"}]

        async def both() -> List[str]:
            a = OpenAIChat("m", base_url=first.openai_url, api_key="", transport=self.transport())
            b = AnthropicMessages("m", base_url=second.url, api_key="", transport=self.transport())
            replies = await asyncio.gather(a.acall(messages, []), b.acall(messages, []))
            return [r.text for r in replies]

        self.assertEqual(sorted(asyncio.run(both())), ["one", "two"])

    def test_a_reply_holding_a_key_fails_acall_too_without_quoting_it(self) -> None:
        server = self.serve(openai_reply("x %s" % KEY.replace("-", "%2d"), []))
        model = OpenAIChat("m", base_url=server.openai_url, api_key=KEY, transport=self.transport())
        with self.assertRaises(ModelResponseError) as caught:
            asyncio.run(model.acall([{"role": "user", "content": "t"}], []))
        self.assertNotIn(KEY[8:], str(caught.exception))
