"""Streaming on the three adapters against the stand-in's streams: a streamed run writes the bytes the
unstreamed one writes, text arrives as it comes (the key kept out), and a stream that breaks, stalls,
runs past its deadline or cannot be read is a model error, never a half reply, and is not resent."""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import sys
from typing import Any, Callable, List, Tuple
from unittest import mock

from agentloop import Approve, resume, run, verify_file
from agentloop.models import (
    AnthropicMessages,
    HttpTransport,
    ModelConnectionError,
    ModelResponseError,
    OpenAIChat,
    OpenAIResponses,
    replay,
)
from agentloop.models.streaming import TextRelay

from tests.support.helpers import read_lines, read_records
from tests.support.loopback import Canned, anthropic_reply, openai_error, openai_reply, responses_reply
from tests.support.loopback_streams import chat_events, sse
from tests.support.modelcase import NOW, LoopbackCase, some_tools

THINKING = {"type": "enabled", "budget_tokens": 2048}


class StreamCase(LoopbackCase):
    def adapters(self) -> List[Tuple[str, Callable[..., Any]]]:
        """Each API, as a factory of adapters on this test's server (the stand-in's default model: add, then quote)."""
        return [
            (
                "chat",
                lambda **o: OpenAIChat("gpt-test", base_url=self.server.openai_url, api_key="sk-test-key-0123", **o),
            ),
            (
                "responses",
                lambda **o: OpenAIResponses(
                    "gpt-test", base_url=self.server.openai_url, api_key="sk-test-key-0123", **o
                ),
            ),
            (
                "anthropic",
                lambda **o: AnthropicMessages(
                    "claude-test", base_url=self.server.url, api_key="sk-ant-key-0123", thinking=THINKING, **o
                ),
            ),
        ]

    def go(self, make: Callable[..., Any], name: str, tools: Any = None, **options: Any) -> Any:
        options.setdefault("transport", self.transport())
        return run(
            "What is 40 + 2?",
            make(**options),
            tools or some_tools("add"),
            transcript=self.path(name),
            max_steps=4,
            max_tokens=100_000,
        )


class TestSameBytes(StreamCase):
    def test_a_streamed_run_writes_the_bytes_of_the_unstreamed_run_on_every_api(self) -> None:
        self.server = self.serve()
        for api, make in self.adapters():
            with self.subTest(api):
                self.server.requests.clear()
                pieces: List[str] = []
                plain = self.go(make, api + "-plain.jsonl")
                streamed = self.go(make, api + "-stream.jsonl", stream=True, on_text=pieces.append)
                self.assertEqual((plain.stop_reason, streamed.stop_reason), ("no_tool_calls", "no_tool_calls"))
                self.assertEqual(
                    read_lines(self.path(api + "-stream.jsonl")), read_lines(self.path(api + "-plain.jsonl"))
                )
                texts = [
                    r["payload"]["text"]
                    for r in read_records(self.path(api + "-plain.jsonl"))
                    if r["kind"] == "assistant"
                ]
                self.assertEqual("".join(pieces), "".join(texts))
                self.assertGreaterEqual(len(pieces), 1)  # held back near the key's length: a short text comes whole
                asked = self.server.requests[2:]
                self.assertTrue(all(seen.body["stream"] is True for seen in asked))
                self.assertTrue(all(seen.headers["accept"] == "text/event-stream" for seen in asked))
                unstreamed = [dict(seen.body) for seen in self.server.requests[:2]]
                for seen, plain_body in zip(asked, unstreamed):
                    body = dict(seen.body)
                    body.pop("stream")
                    if api == "chat":
                        self.assertEqual(body.pop("stream_options"), {"include_usage": True})
                    self.assertEqual(body, plain_body)  # the same request, stream asked for

    def test_a_streamed_reasoning_run_replays_and_resumes_to_the_uninterrupted_bytes(self) -> None:
        self.server = self.serve()
        gated = [dataclasses.replace(t, requires_approval=True) for t in some_tools("add")]
        for api, make in self.adapters()[1:]:
            with self.subTest(api):
                whole = run(
                    "What is 40 + 2?",
                    make(stream=True, transport=self.transport()),
                    gated,
                    transcript=self.path(api + "-whole.jsonl"),
                    max_steps=4,
                    max_tokens=100_000,
                    approver=lambda request: Approve(by="alice"),
                )
                self.assertEqual(whole.stop_reason, "no_tool_calls")
                self.assertIn("provider_data", read_records(self.path(api + "-whole.jsonl"))[1]["payload"])
                paused = run(
                    "What is 40 + 2?",
                    make(stream=True, transport=self.transport()),
                    gated,
                    transcript=self.path(api + ".jsonl"),
                    max_steps=4,
                    max_tokens=100_000,
                    approver=lambda request: None,
                )
                self.assertEqual(paused.stop_reason, "awaiting_approval")
                call_id = read_records(self.path(api + ".jsonl"))[1]["payload"]["tool_calls"][0]["id"]
                resume(
                    self.path(api + ".jsonl"),
                    make(stream=True, transport=self.transport()),
                    gated,
                    decisions={call_id: Approve(by="alice")},
                )
                self.assertEqual(read_lines(self.path(api + ".jsonl")), read_lines(self.path(api + "-whole.jsonl")))
                # recorded tools: a recorded approval authorises its own run only, so real gated tools are not rerun
                again = replay(self.path(api + ".jsonl"), "recorded", transcript=self.path(api + "-replay.jsonl"))
                self.assertTrue(again.identical, again.difference)

    def test_without_a_key_each_piece_is_shown_as_it_comes(self) -> None:
        self.server = self.serve(openai_reply("Twenty characters!!!"))
        pieces: List[str] = []
        OpenAIChat(
            "m",
            base_url=self.server.openai_url,
            api_key="",
            stream=True,
            on_text=pieces.append,
            transport=self.transport(),
        )([{"role": "user", "content": "t"}], [])
        self.assertEqual(pieces, ["Twen", "ty c", "hara", "cter", "s!!!"])

    def test_a_server_that_answers_json_to_a_stream_request_is_read_as_json(self) -> None:
        self.server = self.serve(Canned(openai_reply("plain"), stream=False))
        model = OpenAIChat("m", base_url=self.server.openai_url, api_key="", stream=True, transport=self.transport())
        self.assertEqual(model([{"role": "user", "content": "t"}], []).text, "plain")

    def test_an_error_status_before_the_stream_is_retried_as_ever(self) -> None:
        self.server = self.serve(openai_error(500, "busy", "server_error"), openai_reply("after"))
        model = OpenAIChat("m", base_url=self.server.openai_url, api_key="", stream=True, transport=self.transport())
        self.assertEqual(model([{"role": "user", "content": "t"}], []).text, "after")
        self.assertEqual((len(self.server.requests), self.waits), (2, [0.5]))

    def test_a_streamed_turn_keeps_the_connection_for_the_next(self) -> None:
        self.server = self.serve()
        self.go(self.adapters()[0][1], "kept.jsonl", stream=True)
        self.assertEqual((len(self.server.requests), self.server.connections), (2, 1))


class TestBrokenStreams(StreamCase):
    def failing(self, *script: Any, make: str = "chat", **transport: Any) -> Tuple[Any, Exception]:
        self.server = self.serve(*script)
        factory = dict(self.adapters())[make]
        http = HttpTransport(
            timeout=transport.pop("timeout", 5),
            sleep=self.waits.append,
            clock=lambda: NOW,
            jitter=lambda: 0.0,
            **transport,
        )
        self.addCleanup(http.close)
        model = factory(stream=True, transport=http)
        with self.assertRaises((ModelConnectionError, ModelResponseError)) as caught:
            model([{"role": "user", "content": "t"}], [])
        return model, caught.exception

    def test_a_stream_cut_short_is_a_model_error_and_not_resent(self) -> None:
        for api, body in (
            ("chat", openai_reply("a long enough answer")),
            ("responses", responses_reply("a long enough answer")),
            ("anthropic", anthropic_reply("a long enough answer")),
        ):
            with self.subTest(api):
                self.waits.clear()
                _, error = self.failing(Canned(body, cut=3), make=api)
                self.assertIsInstance(error, ModelConnectionError)
                self.assertRegex(str(error), r"the stream was cut short after 3 event\(s\): connection failed: ")
                self.assertEqual((len(self.server.requests), self.waits), (1, []))

    def test_a_stream_that_ends_before_its_last_event(self) -> None:
        events = [sse(None, {"choices": [{"index": 0, "delta": {"content": "half"}, "finish_reason": None}]})]
        _, error = self.failing(Canned(events=events))
        self.assertTrue(
            str(error).endswith("the stream was cut short after 1 event(s): it ended before its last event"), error
        )

    def test_a_gap_longer_than_the_idle_timeout(self) -> None:
        _, error = self.failing(Canned(openai_reply("slow answer"), gap=2.0), idle_timeout=0.3)
        self.assertIn(
            "the stream was cut short after 1 event(s): no event within the idle_timeout of 0.3 s", str(error)
        )

    def test_the_whole_stream_within_the_timeout(self) -> None:
        # Each gap (0.5 s) within the idle limit (1 s); the whole (over 4 s) past the timeout (2 s).
        _, error = self.failing(
            Canned(openai_reply("a slow answer in many pieces"), gap=0.5), timeout=2.0, idle_timeout=1.0
        )
        self.assertRegex(
            str(error), r"the stream was cut short after \d+ event\(s\): no answer within the timeout of 2 s"
        )
        self.assertEqual(len(self.server.requests), 1)

    def test_an_event_that_cannot_be_read_and_an_error_event(self) -> None:
        _, error = self.failing(Canned(events=[sse(None, "{not json")]))
        self.assertIn('unexpected response: $stream[0]: the event\'s data is not JSON: "{not json"', str(error))
        overloaded = sse("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        _, error = self.failing(Canned(events=[overloaded]), make="anthropic")
        self.assertIn("$stream[0]: the stream reported an error: overloaded_error: Overloaded", str(error))
        failed = sse(
            "error", {"type": "error", "code": "server_error", "message": "The model broke.", "sequence_number": 0}
        )
        _, error = self.failing(Canned(events=[failed]), make="responses")
        self.assertIn("the stream reported an error: server_error: The model broke.", str(error))

    def test_a_stream_that_is_not_utf8_is_refused_as_a_whole_body_is(self) -> None:
        events = [
            sse(
                n, d if isinstance(d, str) else json.dumps(d, ensure_ascii=False)
            )  # UTF-8 on the wire, as the APIs send it
            for n, d in chat_events(openai_reply("caf\u00e9 au lait"))
        ]
        split = b"".join(events).index("\u00e9".encode("utf-8")) + 1  # a character cut in two between writes
        whole = b"".join(events)
        self.server = self.serve(Canned(events=[whole[:split], whole[split:]]))
        model = OpenAIChat("m", base_url=self.server.openai_url, api_key="", stream=True, transport=self.transport())
        self.assertEqual(model([{"role": "user", "content": "t"}], []).text, "caf\u00e9 au lait")
        bad = [event.replace("caf\u00e9".encode("utf-8"), b"caf\xe9") for event in events]  # Latin-1, not UTF-8
        _, error = self.failing(Canned(events=bad))
        self.assertIsInstance(error, ModelResponseError)
        self.assertIn("unexpected response: $: the stream is not UTF-8 (invalid continuation byte)", str(error))

    def test_an_error_or_unreadable_event_that_quotes_the_key_is_redacted(self) -> None:
        keys = {"chat": "sk-test-key-0123", "responses": "sk-test-key-0123", "anthropic": "sk-ant-key-0123"}
        for make, event in (
            (
                "chat",
                lambda key: sse(None, {"error": {"message": "Incorrect API key provided: " + key, "type": "auth"}}),
            ),
            ("responses", lambda key: sse("error", {"type": "error", "code": key, "message": "key " + key})),
            ("anthropic", lambda key: sse("error", {"type": "error", "error": {"type": "x", "message": "key " + key}})),
            ("chat", lambda key: sse(None, "not JSON, but the key: " + key)),
            ("anthropic", lambda key: sse(None, {"type": "content_block_stop", "index": key})),
            ("chat", lambda key: sse(None, {"error": {"message": "escaped: " + key.replace("-", "\\u002d")}})),
        ):
            with self.subTest(make, event=event("K")):
                _, error = self.failing(Canned(events=[event(keys[make])]), make=make)
                self.assertIsInstance(error, ModelResponseError)
                self.assertNotIn(keys[make][3:], str(error))
                self.assertRegex(str(error), r"\[redacted\]|withheld")

    def test_an_on_text_that_raises_ends_the_call_and_nothing_is_sent_again(self) -> None:
        def broken(text: str) -> None:
            raise BrokenPipeError(32, "Broken pipe")  # e.g. printing to a pipe whose reader is gone

        self.server = self.serve(Canned(openai_reply("a reply long enough")), Canned(openai_reply("again")))
        model = self.adapters()[0][1](stream=True, on_text=broken, transport=self.transport())
        with self.assertRaises(BrokenPipeError):
            model([{"role": "user", "content": "t"}], [])
        self.assertEqual((len(self.server.requests), self.waits), (1, []))  # not taken for a connection that failed

    def test_a_run_whose_stream_breaks_records_no_half_reply(self) -> None:
        self.server = self.serve(Canned(openai_reply("a half reply never recorded"), cut=4))
        result = self.go(self.adapters()[0][1], "cut.jsonl", stream=True)
        self.assertEqual(result.stop_reason, "model_error")
        self.assertEqual([r["kind"] for r in read_records(self.path("cut.jsonl"))], ["task", "stop"])
        self.assertTrue(verify_file(self.path("cut.jsonl")).ok)


class TestTextRelay(StreamCase):
    def test_the_key_is_kept_out_of_the_text_shown_even_split_across_pieces(self) -> None:
        key = "sk-live-0123456789abcdef"
        shown: List[str] = []
        relay = TextRelay(shown.append, [key])
        for piece in ["The key is sk-li", "ve-01234", "56789abc", "def, and more text follows here at length."]:
            relay(piece)
        relay.flush()
        self.assertEqual("".join(shown), "The key is [redacted], and more text follows here at length.")
        plain: List[str] = []
        TextRelay(plain.append)("at once")
        self.assertEqual(plain, ["at once"])

    def test_a_streamed_reply_that_echoes_the_key_shows_and_records_it_redacted(self) -> None:
        self.server = self.serve(openai_reply("echo: sk-test-key-0123 done"))
        shown: List[str] = []
        model = self.adapters()[0][1](stream=True, on_text=shown.append, transport=self.transport())
        reply = model([{"role": "user", "content": "t"}], [])
        self.assertEqual(reply.text, "echo: [redacted] done")
        self.assertEqual("".join(shown), "echo: [redacted] done")
        self.assertNotIn("sk-test", json.dumps(shown))


class TestCommandLine(StreamCase):
    def test_run_stream_shows_the_text_on_stderr_escaped_and_writes_the_same_transcript(self) -> None:
        self.server = self.serve(
            openai_reply("Let me\tadd \x1b[31mthem.", [("c1", "add", '{"a": 40, "b": 2}')]),
            openai_reply("It is 42.\nDone."),
            openai_reply("Let me\tadd \x1b[31mthem.", [("c1", "add", '{"a": 40, "b": 2}')]),
            openai_reply("It is 42.\nDone."),
        )
        argv = [
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
        ]
        with mock.patch.dict(os.environ, {"OPENAI_API_KEY": ""}):
            status, out, err = self.cli(*argv, "--stream", "-o", self.path("s.jsonl"))
            self.assertEqual(status, 0, err)
            self.assertEqual(err, "Let me\tadd \\u001b[31mthem.\nIt is 42.\nDone.\n")
            status, plain_out, plain_err = self.cli(*argv, "--no-stream", "-o", self.path("p.jsonl"))
        self.assertEqual((status, plain_err), (0, ""))
        self.assertEqual(out.replace("s.jsonl", "p.jsonl"), plain_out)
        self.assertEqual(read_lines(self.path("s.jsonl")), read_lines(self.path("p.jsonl")))
        self.assertEqual([seen.body.get("stream") for seen in self.server.requests], [True, True, None, None])

    def test_stream_is_on_by_default_only_when_stderr_is_a_terminal(self) -> None:
        from agentloop.cli.modelopts import live_text

        class Terminal(io.StringIO):
            def isatty(self) -> bool:
                return True

        args = argparse.Namespace(stream=None)
        with mock.patch.object(sys, "stderr", Terminal()):
            self.assertIsNotNone(live_text(args))
            self.assertIsNone(live_text(argparse.Namespace(stream=False)))
        with mock.patch.object(sys, "stderr", io.StringIO()):
            self.assertIsNone(live_text(args))
            self.assertIsNotNone(live_text(argparse.Namespace(stream=True)))
