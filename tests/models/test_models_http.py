"""The shared transport: which failures are retried, how long it waits, what it never follows or sends."""

from __future__ import annotations

import email.utils
import os
import socket
from typing import Any, Dict
from unittest import mock

from agentloop.models import (
    HttpTransport,
    ModelAPIError,
    ModelConfigError,
    ModelConnectionError,
    ModelResponseError,
    RetryPolicy,
)
from agentloop.models.http import endpoint_host, provider_message, redact

from tests.support.loopback import Canned, openai_error, openai_reply
from tests.support.modelcase import NOW, LoopbackCase

OK = openai_reply("fine")


class TransportCase(LoopbackCase):
    def post(self, *script: Any, **transport: Any) -> Dict[str, Any]:
        self.server = self.serve(*script)
        return self.transport(**transport).post_json(
            self.server.url + "/x",
            {"Content-Type": "application/json"},
            {"q": 1},
            provider="test",
            secrets=["sk-secret"],
        )

    def failure(self, *script: Any, **transport: Any) -> Exception:
        with self.assertRaises((ModelAPIError, ModelConnectionError, ModelResponseError)) as caught:
            self.post(*script, **transport)
        return caught.exception


class TestRetries(TransportCase):
    def test_retried_statuses_back_off_exponentially_then_succeed(self) -> None:
        for status in (408, 409, 429, 500, 502, 503, 529):
            with self.subTest(status):
                self.waits.clear()
                answer = self.post(Canned(b"", status), Canned(b"", status), OK)
                self.assertEqual(answer["choices"][0]["message"]["content"], "fine")
                self.assertEqual(self.waits, [0.5, 1.0])  # min(0.5 * 2**n, 8), jitter 0

    def test_other_statuses_fail_at_once(self) -> None:
        for status in (400, 401, 403, 404, 413, 422):
            with self.subTest(status):
                error = self.failure(openai_error(status, "no", "invalid_request_error"), OK)
                self.assertIsInstance(error, ModelAPIError)
                self.assertEqual((error.status, error.attempts), (status, 1))  # type: ignore[attr-defined]
                self.assertEqual((len(self.server.requests), self.waits), (1, []))

    def test_the_last_failure_is_raised_with_the_attempts(self) -> None:
        error = self.failure(*[openai_error(503, "busy", "server_error")] * 3)
        self.assertEqual(
            str(error),
            "test at 127.0.0.1:%d: HTTP 503: server_error: busy (gave up after 3 attempts)" % self.server.port,
        )
        self.assertEqual(self.waits, [0.5, 1.0])

    def test_jitter_shortens_the_wait_by_up_to_a_quarter_and_the_wait_is_capped(self) -> None:
        self.post(Canned(b"", 500), OK, jitter=0.5)
        self.assertEqual(self.waits, [0.5 * (1 - 0.125)])
        policy = RetryPolicy(max_retries=10)
        self.assertEqual([policy.backoff(n, 0.0) for n in range(7)], [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0])

    def test_retry_after_seconds_milliseconds_and_http_date_are_honoured(self) -> None:
        date = email.utils.formatdate(NOW + 5, usegmt=True)
        cases = [
            ({"Retry-After": "2"}, 2.0),
            ({"Retry-After": "1.5"}, 1.5),
            ({"retry-after-ms": "150"}, 0.15),
            ({"Retry-After": date}, 5.0),
            ({"Retry-After": "soon"}, 0.5),
            ({"Retry-After": "0"}, 0.0),
        ]
        for headers, wait in cases:
            with self.subTest(headers):
                self.waits.clear()
                self.post(Canned(b"", 429, headers), OK)
                self.assertEqual(self.waits, [wait])

    def test_a_retry_after_beyond_the_limit_is_not_waited_for(self) -> None:
        error = self.failure(openai_error(429, "slow down", "rate_limit_error", headers={"Retry-After": "600"}), OK)
        self.assertIn(
            "HTTP 429: rate_limit_error: slow down "
            '(Retry-After: "600" is longer than max_retry_after 60 s: not retried)',
            str(error),
        )
        self.assertEqual((len(self.server.requests), self.waits), (1, []))

    def test_x_should_retry_overrides_the_status(self) -> None:
        self.assertEqual(self.failure(Canned(b"", 500, {"x-should-retry": "false"}), OK).attempts, 1)  # type: ignore[attr-defined]
        self.post(Canned(b"", 400, {"x-should-retry": "true"}), OK)
        self.assertEqual(self.waits, [0.5])

    def test_a_refused_connection_is_retried_then_raised(self) -> None:
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()  # nothing listens on port now
        transport = self.transport()
        with self.assertRaises(ModelConnectionError) as caught:
            transport.post_json("http://127.0.0.1:%d/x" % port, {}, {}, provider="test")
        self.assertTrue(
            str(caught.exception).startswith("test at 127.0.0.1:%d: connection failed: ConnectionRefusedError" % port)
        )
        self.assertTrue(str(caught.exception).endswith("(gave up after 3 attempts)"))
        self.assertEqual(self.waits, [0.5, 1.0])

    def test_a_timeout_is_retried(self) -> None:
        answer = self.post(Canned(OK, delay=10), OK, timeout=0.3)
        self.assertEqual(answer["choices"][0]["message"]["content"], "fine")
        self.assertEqual((len(self.server.requests), self.waits), (2, [0.5]))

    def test_a_timeout_alone_is_retried_then_raised(self) -> None:
        error = self.failure(*[Canned(OK, delay=10)] * 2, timeout=0.2, max_retries=1)
        self.assertEqual(
            str(error),
            "test at 127.0.0.1:%d: no answer within the timeout of 0.2 s (gave up after 2 attempts)" % self.server.port,
        )


class TestAnswers(TransportCase):
    def test_a_redirect_is_not_followed(self) -> None:
        error = self.failure(Canned(b"", 307, {"Location": "http://127.0.0.1:9/elsewhere"}), OK)
        self.assertEqual(
            str(error),
            "test at 127.0.0.1:%d: HTTP 307: redirect to http://127.0.0.1:9/elsewhere not followed; (empty body)"
            % self.server.port,
        )
        self.assertEqual(len(self.server.requests), 1)

    def test_a_success_that_is_not_a_json_object_is_a_response_error(self) -> None:
        self.assertIn("unexpected response: $: the body is not JSON", str(self.failure(Canned(b"<html>hi</html>"))))
        self.assertIn("unexpected response: $: expected a JSON object, got list", str(self.failure(Canned([1]))))  # type: ignore[arg-type]

    def test_the_providers_message_is_read_from_each_documented_shape(self) -> None:
        cases = [
            (
                b'{"error": {"message": "Bad key", "type": "invalid_request_error", '
                b'"param": null, "code": "invalid_api_key"}}',
                "invalid_request_error/invalid_api_key: Bad key",
            ),
            (
                b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
                "overloaded_error: Overloaded",
            ),
            (b'{"error": "model not loaded"}', "model not loaded"),
            (b'{"detail": "Not Found"}', "Not Found"),
            (b"<html>502 Bad Gateway</html>", "<html>502 Bad Gateway</html>"),
            (b"", "(empty body)"),
        ]
        for raw, message in cases:
            with self.subTest(message):
                self.assertEqual(provider_message(raw), message)

    def test_the_body_is_sent_as_compact_utf8_json(self) -> None:
        self.server = self.serve(OK)
        self.transport().post_json(
            self.server.url + "/x", {"Content-Type": "application/json"}, {"t": "é", "n": [1, 2]}, provider="p"
        )
        self.assertEqual(self.server.requests[0].raw, '{"t":"é","n":[1,2]}'.encode("utf-8"))

    def test_a_loopback_request_never_goes_through_a_proxy(self) -> None:
        with mock.patch.dict(
            os.environ,
            {"http_proxy": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "no_proxy": "", "NO_PROXY": ""},
        ):
            self.post(OK)
        self.assertEqual(len(self.server.requests), 1)


class TestHelpers(TransportCase):
    def test_redact_and_endpoint_host(self) -> None:
        self.assertEqual(redact("key sk-1 and sk-1 again", ["sk-1", ""]), "key [redacted] and [redacted] again")
        self.assertEqual(endpoint_host("https://api.openai.com/v1?key=x"), "api.openai.com")
        self.assertEqual(endpoint_host("http://127.0.0.1:8080/v1"), "127.0.0.1:8080")
        self.assertEqual(endpoint_host("http://[::1]:8080/v1"), "[::1]:8080")

    def test_policies_are_checked(self) -> None:
        for options in (
            {"max_retries": -1},
            {"max_retries": True},
            {"initial_delay": float("nan")},
            {"max_delay": 1e9},
        ):
            with self.subTest(options):
                with self.assertRaises(ModelConfigError):
                    RetryPolicy(**options)
        with self.assertRaises(ModelConfigError):
            HttpTransport(timeout=0)
