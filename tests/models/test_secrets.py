"""An API key set in the environment reaches the provider's header and nothing else."""

from __future__ import annotations

import json
import os
from unittest import mock

from agentloop import run
from agentloop.models import AnthropicMessages, ModelAPIError, ModelConfigError, OpenAIChat

from tests.support.helpers import read_lines
from tests.support.loopback import Canned, anthropic_error, openai_error, openai_reply
from tests.support.modelcase import LoopbackCase, some_tools

KEY = "sk-test-0123456789-SECRET-abcdef"


class TestKeys(LoopbackCase):
    def assert_nowhere(self, *texts: str) -> None:
        for text in texts:
            self.assertNotIn(KEY, text)
            self.assertNotIn(KEY[8:], text)  # not even most of it

    def test_a_failing_cli_run_never_shows_the_key_even_when_the_server_echoes_it(self) -> None:
        # A hostile or careless server quotes the key back in its error message, a header and a redirect.
        echo = "Incorrect API key provided: %s. Bearer %s" % (KEY, KEY)
        server = self.serve(
            openai_error(401, echo, "invalid_request_error", "invalid_api_key", headers={"x-request-id": KEY})
        )
        with mock.patch.dict(os.environ, {"OPENAI_API_KEY": KEY}):
            status, out, err = self.cli(
                "run",
                "--model",
                "openai:gpt-test",
                "--base-url",
                server.openai_url,
                "--tools",
                "demo:demo_tools",
                "--task",
                "t",
                "--max-steps",
                "2",
                "--max-tokens",
                "99",
                "-o",
                self.path(),
            )
        self.assertEqual(status, 1)
        self.assertEqual(server.requests[0].headers["authorization"], "Bearer " + KEY)  # it was sent, where it belongs
        transcript = b"".join(read_lines(self.path())).decode("utf-8")
        self.assertIn(
            "HTTP 401: invalid_request_error/invalid_api_key: Incorrect API key provided: [redacted].", transcript
        )
        self.assert_nowhere(out, err, transcript)

    def test_exception_texts_reprs_and_records_hold_no_key(self) -> None:
        server = self.serve(
            anthropic_error(403, "permission_error", "key %s is not allowed" % KEY),
            Canned(b"", 307, {"Location": "http://x/?k=" + KEY}),
        )
        with mock.patch.dict(os.environ, {"ANTHROPIC_API_KEY": KEY}):
            model = AnthropicMessages("claude-test", base_url=server.url, transport=self.transport())
        for _ in range(2):
            with self.assertRaises(ModelAPIError) as caught:
                model([{"role": "user", "content": "t"}], [])
            self.assert_nowhere(str(caught.exception), repr(caught.exception), repr(model), str(caught.exception.args))
        self.assertEqual(server.requests[0].headers["x-api-key"], KEY)

    def test_a_successful_run_records_no_key(self) -> None:
        server = self.serve(openai_reply("hi"))
        with mock.patch.dict(os.environ, {"OPENAI_API_KEY": KEY}):
            model = OpenAIChat("gpt-test", base_url=server.openai_url, transport=self.transport())
        result = run("t", model, some_tools("add"), transcript=self.path(), max_steps=2, max_tokens=99)
        self.assert_nowhere(
            b"".join(read_lines(self.path())).decode("utf-8"), result.detail, repr(model), str(model.model_info())
        )

    def test_a_reply_that_quotes_the_key_is_recorded_redacted(self) -> None:
        server = self.serve(
            openai_reply("your key is %s" % KEY, [("c", "echo", '{"text": "%s"}' % KEY)]), openai_reply("done")
        )
        model = OpenAIChat("gpt-test", base_url=server.openai_url, api_key=KEY, transport=self.transport())
        run("t", model, some_tools("echo"), transcript=self.path(), max_steps=3, max_tokens=999)
        transcript = b"".join(read_lines(self.path())).decode("utf-8")
        self.assertIn("your key is [redacted]", transcript)
        self.assert_nowhere(transcript)
        self.assert_nowhere(json.dumps(server.requests[1].body))  # nor sent back in the conversation

    def test_a_key_with_a_newline_is_refused_without_being_shown(self) -> None:
        with self.assertRaises(ModelConfigError) as caught:
            OpenAIChat("m", api_key=KEY + "\nX-Injected: 1", base_url="http://127.0.0.1:9/v1")
        self.assertEqual(
            str(caught.exception),
            "api_key: the key holds whitespace, control or non-Latin-1 characters (it is not shown)",
        )
        self.assert_nowhere(str(caught.exception))


class TestReviewFindings(LoopbackCase):
    """Leaks and nondeterminism found by a review; each pinned here."""

    def test_a_json_escaped_key_in_a_reply_is_redacted(self) -> None:
        escaped = KEY.replace("-", "\\u002d")
        server = self.serve(
            Canned(
                json.dumps(
                    {
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": "leak PLACEHOLDER"},
                            }
                        ]
                    }
                )
                .replace("PLACEHOLDER", escaped)
                .encode(),
                200,
                {"Content-Type": "application/json"},
            )
        )
        model = OpenAIChat("gpt-test", base_url=server.openai_url, api_key=KEY, transport=self.transport())
        run("t", model, some_tools("add"), transcript=self.path(), max_steps=2, max_tokens=99)
        transcript = b"".join(read_lines(self.path())).decode("utf-8")
        self.assertIn("leak [redacted]", transcript)
        self.assertNotIn(KEY[4:], transcript)

    def test_a_key_across_the_length_cut_of_an_error_is_redacted_first(self) -> None:
        message = "x" * (500 - len(KEY) + 1) + KEY
        server = self.serve(openai_error(400, message, "invalid_request_error", "bad"))
        model = OpenAIChat("gpt-test", base_url=server.openai_url, api_key=KEY, transport=self.transport())
        result = run("t", model, some_tools("add"), transcript=self.path(), max_steps=2, max_tokens=99)
        self.assertEqual(result.stop_reason, "model_error")
        self.assertNotIn(KEY[:12], b"".join(read_lines(self.path())).decode("utf-8"))

    def test_a_header_value_with_a_newline_is_refused_without_being_shown(self) -> None:
        with self.assertRaises(ModelConfigError) as caught:
            OpenAIChat("gpt-test", base_url="http://127.0.0.1:9/v1", headers={"api-key": "azure-SECRET-0123456789\n"})
        self.assertNotIn("SECRET", str(caught.exception))
        with self.assertRaises(ModelConfigError):
            OpenAIChat("gpt-test", base_url="http://127.0.0.1:9/v1", api_key="sk-\u20acuro")

    def test_a_long_retry_after_date_is_recorded_as_sent_not_against_the_clock(self) -> None:
        from agentloop.models import HttpTransport, RetryPolicy

        date = "Wed, 02 Dec 2026 23:59:59 GMT"
        texts = []
        busy = openai_error(429, "slow down", "rate_limit_error", "rl", headers={"Retry-After": date})
        server = self.serve(busy, busy)
        for clock in (1_000_000.0, 1_000_100.5):
            transport = HttpTransport(
                timeout=5.0,
                retry=RetryPolicy(max_retries=2),
                sleep=lambda s: None,
                clock=lambda c=clock: c,
                jitter=lambda: 0.0,
            )
            model = OpenAIChat("gpt-test", base_url=server.openai_url, transport=transport)
            texts.append(
                run(
                    "t",
                    model,
                    some_tools("add"),
                    transcript=self.path("r%d.jsonl" % len(texts)),
                    max_steps=2,
                    max_tokens=99,
                ).detail
            )
        self.assertEqual(texts[0], texts[1])
        self.assertIn('Retry-After: "%s" is longer than max_retry_after 60 s' % date, texts[0])
