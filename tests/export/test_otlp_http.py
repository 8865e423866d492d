"""Sending spans to an OTLP/HTTP collector: a stand-in collector on 127.0.0.1 (port 0) gets the body."""

from __future__ import annotations

import base64
import json
import os
import socket
import threading
import time
import unittest

from agentloop.errors import BadArgumentError, CollectorError
from agentloop.export import collector, otel_json, read_run, send_otlp
from agentloop.export import otlp_http
from tests.export.fixtures import Collector

VECTORS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "export")
TOKEN = "Bearer sk-otlp-0123456789abcdef"


def json_string(answer: bytes) -> bytes:
    return json.dumps(answer.decode("utf-8")).encode("utf-8")


def body() -> bytes:
    return otel_json([read_run(os.path.join(VECTORS, "answer.jsonl"))])


class TestSending(unittest.TestCase):
    def test_the_collector_gets_the_same_bytes_at_v1_traces_with_the_headers(self) -> None:
        data = body()
        with Collector() as c:
            sent = send_otlp(data, c.url, headers={"Authorization": TOKEN, "x-tenant": "t1"}, spans=4)
            send_otlp(data, c.url + "/api/public/otel/?region=eu", spans=4)
        self.assertEqual((sent.status, sent.spans), (200, 4))
        (path, headers, got), (path2, _, _) = c.requests
        self.assertEqual((path, got), ("/v1/traces", data))
        self.assertEqual(path2, "/api/public/otel/v1/traces?region=eu")
        self.assertEqual(
            (headers["Content-Type"], headers["Authorization"], headers["x-tenant"]), ("application/json", TOKEN, "t1")
        )

    def test_a_refusal_is_an_error_that_never_shows_the_token(self) -> None:
        with Collector([(401, b'{"message": "bad token ' + TOKEN.encode() + b'"}')]) as c:
            with self.assertRaises(CollectorError) as caught:
                send_otlp(body(), c.url + "/path?key=secret-in-query", headers={"Authorization": TOKEN})
        text = str(caught.exception)
        self.assertTrue(text.startswith("collector at 127.0.0.1:%d: HTTP 401: " % (c.port,)), text)
        for secret in (TOKEN, "sk-otlp", "secret-in-query", "/path"):
            self.assertNotIn(secret, text)
        self.assertIn("[redacted]", text)

    def test_what_a_collector_echoes_of_a_header_is_redacted_before_the_answer_is_cut(self) -> None:
        basic = "Basic " + base64.b64encode(b"pk-lf-public:sk-lf-secret-0123").decode("ascii")
        cases = [
            (TOKEN, b"x" * 190 + TOKEN.encode()),  # cut at 200 characters, inside the token
            (TOKEN, b'{"error": "invalid token sk-otlp-0123456789abcdef"}'),  # the token without its scheme
            (basic, b'{"error": "no project for secret key sk-lf-secret-0123"}'),  # the password of a Basic credential
            (TOKEN, b'{"echo": "Bearer sk\\u002dotlp-0123456789abcdef"}'),  # behind an escape: not shown
        ]
        answers = [(500, answer) for _, answer in cases] + [
            (200, b'{"partialSuccess": {"rejectedSpans": 1, "errorMessage": ' + json_string(answer) + b"}}")
            for _, answer in cases
        ]
        with Collector(answers) as c:
            for value, _ in cases + cases:
                with self.assertRaises(CollectorError) as caught:
                    send_otlp(body(), c.url, headers={"Authorization": value}, spans=4)
                text = str(caught.exception)
                self.assertRegex(text, r"HTTP 500: |rejected 1 of 4 spans: ")
                for secret in ("sk-otlp", "sk-lf-secret", "otlp-0123", "456789abcdef"):
                    self.assertNotIn(secret, text, value)

    def test_the_timeout_bounds_the_whole_exchange(self) -> None:
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            done = threading.Event()

            def drip() -> None:  # a status line, then a header line one byte at a time, forever
                conn, _ = server.accept()
                with conn:
                    conn.recv(65536)
                    conn.sendall(b"HTTP/1.1 200 OK\r\n")
                    for _ in range(200):  # 10 seconds at most, so that a test without the deadline fails, not hangs
                        if done.is_set():
                            return
                        try:
                            conn.sendall(b"X")
                        except OSError:
                            return
                        time.sleep(0.05)

            thread = threading.Thread(target=drip, daemon=True)
            thread.start()
            began = time.monotonic()
            try:
                with self.assertRaises(CollectorError) as caught:
                    send_otlp(body(), "http://127.0.0.1:%d" % (server.getsockname()[1],), timeout=0.5)
            finally:
                done.set()
            self.assertLess(time.monotonic() - began, 5)
            self.assertIn("no answer within 0.5 seconds", str(caught.exception))
            thread.join(5)

    def test_rejected_spans_are_a_failure(self) -> None:
        answer = b'{"partialSuccess": {"rejectedSpans": "2", "errorMessage": "span too old"}}'
        with Collector([(200, answer)]) as c, self.assertRaises(CollectorError) as caught:
            send_otlp(body(), c.url, spans=4)
        self.assertIn("rejected 2 of 4 spans: span too old", str(caught.exception))
        with Collector([(200, b'{"partialSuccess": {}}')]) as c:
            self.assertEqual(send_otlp(body(), c.url, spans=4).status, 200)  # an empty partialSuccess is success

    def test_a_2xx_answer_that_is_no_otlp_response_is_a_failure(self) -> None:
        with Collector([(200, b"<!doctype html><title>App</title>"), (200, b"[]"), (202, b"")]) as c:
            for _ in range(2):
                with self.assertRaises(CollectorError) as caught:
                    send_otlp(body(), c.url, spans=4)
                self.assertIn("HTTP 200, but the answer is no OTLP/JSON response", str(caught.exception))
            self.assertEqual(send_otlp(body(), c.url, spans=4).status, 202)  # an empty body is let pass

    def test_a_redirect_is_not_followed(self) -> None:
        with Collector([(307, b"")]) as c, self.assertRaises(CollectorError) as caught:
            send_otlp(body(), c.url, headers={"Authorization": TOKEN})
        self.assertIn("HTTP 307: a redirect, which is not followed", str(caught.exception))
        self.assertEqual(len(c.requests), 1)

    def test_no_collector_is_an_error_naming_the_host(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        with self.assertRaises(CollectorError) as caught:
            send_otlp(body(), "http://127.0.0.1:%d/x" % (port,), timeout=2)
        self.assertTrue(str(caught.exception).startswith("collector at 127.0.0.1:%d: cannot send: " % (port,)))

    def test_a_body_over_the_limit_is_not_sent(self) -> None:
        saved = otlp_http.MAX_BODY
        otlp_http.MAX_BODY = 100
        self.addCleanup(setattr, otlp_http, "MAX_BODY", saved)
        with Collector() as c, self.assertRaises(BadArgumentError):
            send_otlp(body(), c.url)
        self.assertEqual(c.requests, [])


class TestEndpointsAndHeaders(unittest.TestCase):
    def test_unfit_endpoints_are_refused_without_being_quoted(self) -> None:
        cases = {
            "http://user:hunter2@127.0.0.1:4318": "must not hold credentials",
            "ftp://collector/hunter2": "must be an http:// or https:// URL with a host",
            "http:///hunter2": "must be an http:// or https:// URL with a host",
            "http://collector/hunter2#frag": "must not have a #fragment",
            "http://collector:99999/hunter2": "has a bad port",
            "http://[hunter2]/x": "is not a URL that can be read",
        }
        for url, reason in cases.items():
            with self.subTest(url), self.assertRaises(BadArgumentError) as caught:
                collector(url)
            self.assertIn(reason, str(caught.exception))
            self.assertNotIn("hunter2", str(caught.exception))

    def test_the_host_shown_is_host_and_port_only(self) -> None:
        self.assertEqual(collector("https://otel.example:4318/api/otel?token=x").host, "otel.example:4318")
        self.assertEqual(collector("http://[::1]:4318").host, "[::1]:4318")
        self.assertEqual(collector("https://otel.example/").target, "/v1/traces")

    def test_unfit_headers_are_refused_without_their_value(self) -> None:
        for headers in (
            {"Authorization": "Bearer x\r\nInjected: 1"},
            {"Bad Name": "v"},
            {"Content-Type": "text/plain"},
            {"A": ""},
        ):
            with self.subTest(headers), Collector() as c, self.assertRaises(BadArgumentError) as caught:
                send_otlp(body(), c.url, headers=headers)
            self.assertNotIn("Injected", str(caught.exception))
            self.assertEqual(c.requests, [])


if __name__ == "__main__":
    unittest.main()
