"""The stream collectors (agentloop.models.streaming) event by event: what they rebuild, and every event
they refuse, each named by its place in the stream."""

from __future__ import annotations

import json
from typing import Any, List

from agentloop.errors import ModelResponseError
from agentloop.models import HttpTransport, ModelConfigError, OpenAIChat
from agentloop.models.http import unescaped_view
from agentloop.models.streaming import ChatCollector, MessagesCollector, ResponsesCollector, TextRelay
from agentloop.wire.sse import Event

from tests.support.loopback import Canned, anthropic_reply, openai_reply, responses_reply
from tests.support.loopback_streams import anthropic_events, chat_events, responses_events
from tests.support.modelcase import LoopbackCase


def feed(collector: Any, *events: Any) -> Any:
    for name, data in events:
        collector.feed(Event(name or "message", data if isinstance(data, str) else json.dumps(data)))
    return collector


def refused(collector: Any, *events: Any) -> str:
    try:
        feed(collector, *events)
    except ModelResponseError as exc:
        return "%s: %s" % (exc.path, exc.reason)
    raise AssertionError("accepted")


class TestRebuilt(LoopbackCase):
    def test_each_collector_rebuilds_the_unstreamed_body_and_passes_the_text_on(self) -> None:
        cases = [
            (
                ChatCollector,
                openai_reply("Hello there", [("c1", "add", '{"a": 1}'), ("c2", "add", "{}")], refusal=None),
                chat_events,
            ),
            (
                ResponsesCollector,
                responses_reply("Hello there", [("c1", "add", '{"a": 1}')], reasoning="Think."),
                responses_events,
            ),
            (
                MessagesCollector,
                anthropic_reply("Hello there", [("t1", "add", {"a": 1})], thinking="Hm.", redacted="eA=="),
                anthropic_events,
            ),
        ]
        for kind, body, events in cases:
            with self.subTest(kind.__name__):
                shown: List[str] = []
                collector = feed(kind("p", "h", TextRelay(shown.append)), *events(body))
                self.assertTrue(collector.done)
                rebuilt = collector.result()
                if kind is ChatCollector:
                    self.assertEqual(
                        rebuilt["choices"][0]["message"]["tool_calls"], body["choices"][0]["message"]["tool_calls"]
                    )
                    self.assertEqual(rebuilt["usage"], body["usage"])
                elif kind is ResponsesCollector:
                    self.assertEqual(rebuilt, body)
                else:
                    self.assertEqual(rebuilt["content"], body["content"])
                    self.assertEqual(rebuilt["usage"], body["usage"])
                self.assertEqual("".join(shown), "Hello there")

    def test_a_refusal_citations_and_events_after_the_last(self) -> None:
        chat = feed(ChatCollector("p", "h", TextRelay(None)), *chat_events(openai_reply(None, refusal="No.")))
        self.assertEqual(
            chat.result()["choices"][0]["message"], {"role": "assistant", "content": None, "refusal": "No."}
        )
        feed(chat, (None, "not even JSON"))  # after [DONE]: ignored
        claude = MessagesCollector("p", "h", TextRelay(None))
        feed(
            claude,
            ("message_start", {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 3}}}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "citations_delta", "citation": {"type": "char_location"}},
                },
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}},
            ),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {"type": "tool_use", "id": "t", "name": "n", "input": {}},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": "[1, "},
                },
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "2"}},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 1}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use"},
                    "usage": {"output_tokens": 9, "input_tokens": None},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        )
        result = claude.result()
        self.assertEqual(result["content"][0], {"type": "text", "text": "x", "citations": [{"type": "char_location"}]})
        self.assertEqual(result["content"][1]["input"], "[1, 2")  # not JSON: read as a call whose input is no object
        self.assertEqual(
            (result["stop_reason"], result["usage"]), ("tool_use", {"input_tokens": 3, "output_tokens": 9})
        )


class TestRefused(LoopbackCase):
    def test_events_that_cannot_be_read_are_named_by_their_place(self) -> None:
        chat = lambda: ChatCollector("p", "h", TextRelay(None))  # noqa: E731
        responses = lambda: ResponsesCollector("p", "h", TextRelay(None))  # noqa: E731
        claude = lambda: MessagesCollector("p", "h", TextRelay(None))  # noqa: E731
        start = ("message_start", {"type": "message_start", "message": {"id": "m"}})
        block = (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
        tool = (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "t", "name": "n", "input": {}},
            },
        )
        stop = ("content_block_stop", {"type": "content_block_stop", "index": 0})

        def json_piece(text: str) -> Any:
            return (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": text},
                },
            )

        cases = [
            (chat(), [(None, "[1]")], "$stream[0]: the event's data is not a JSON object"),
            (
                chat(),
                [(None, {"error": {"message": "Overloaded", "type": "server_error"}})],
                "$stream[0]: the stream reported an error: server_error: Overloaded",
            ),
            (chat(), [(None, {"choices": {}})], "$stream[0]: expected a list of choices"),
            (
                chat(),
                [(None, {"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "x"}]}}]})],
                "$stream[0]: a tool_calls delta without an integer index",
            ),
            (
                chat(),
                [(None, {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1}]}}]})],
                "$stream[0]: a tool_calls delta for index 1 before index 0",
            ),
            (
                responses(),
                [(None, {"type": "response.completed"})],
                "$stream[0]: response.completed without a response object",
            ),
            (
                responses(),
                [(None, {"type": "error", "message": "boom"})],
                "$stream[0]: the stream reported an error: boom",
            ),
            (claude(), [(None, {"type": "message_start"})], "$stream[0]: message_start without a message"),
            (
                claude(),
                [start, (None, {"type": "content_block_start", "index": 0})],
                "$stream[1]: content_block_start without a content_block",
            ),
            (
                claude(),
                [start, (None, {"type": "content_block_start", "index": 2, "content_block": {}})],
                "$stream[1]: a content block index that is not the next one: 2",
            ),
            (
                claude(),
                [start, block, (None, {"type": "content_block_start", "index": 0, "content_block": {}})],
                "$stream[2]: content block 0 started twice",
            ),
            (
                claude(),
                [start, (None, {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}})],
                "$stream[1]: a delta for content block 0, which has not started",
            ),
            (
                claude(),
                [start, block, (None, {"type": "content_block_delta", "index": 0})],
                "$stream[2]: content_block_delta without a delta",
            ),
            (
                claude(),
                [start, (None, {"type": "content_block_stop", "index": True})],
                "$stream[1]: a content block index that is not the next one: true",
            ),
            (
                claude(),
                [(None, {"type": "error", "error": "just a string"})],
                "$stream[0]: the stream reported an error",
            ),
            (
                claude(),
                [start, tool, json_piece('{"a": 1, "a": 2}'), stop],
                '$stream[3]: content block 0\'s input: duplicate key "a"',
            ),  # a whole reply with it is refused too
            (
                claude(),
                [start, tool, json_piece('{"a": NaN}'), stop],
                "$stream[3]: content block 0's input: NaN is not JSON",
            ),
        ]
        for collector, events, message in cases:
            with self.subTest(message):
                self.assertEqual(refused(collector, *events), message)

    def test_the_text_relay_withholds_a_key_behind_an_escape(self) -> None:
        shown: List[str] = []
        relay = TextRelay(shown.append, ["sk-0123456789abcdef"])
        relay("escaped: sk\\u002d0123456789abcdef, the end")
        relay.flush()
        self.assertEqual(shown, ["[withheld]"])  # held back whole (it has escapes), then withheld at the end
        relay.flush()  # nothing held: nothing passed
        self.assertEqual(len(shown), 1)

    def test_the_text_relay_shows_no_escaped_key_that_arrives_in_small_pieces(self) -> None:
        key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdef"
        around = "LaTeX \\frac{a}{b}, 50% off, C:\\dir\\file. " * 4
        forms = {
            "\\u": "".join("\\u%04x" % ord(c) for c in key),
            "\\\\u": "".join("\\\\u%04x" % ord(c) for c in key),
            "%": "".join("%%%02X" % ord(c) for c in key),
            "one escape": key[:5] + "\\u%04x" % ord(key[5]) + key[6:],
        }
        for name, form in forms.items():
            for size in (1, 4, 9):
                with self.subTest(name, size=size):
                    shown: List[str] = []
                    relay = TextRelay(shown.append, [key])
                    text = around + form + around * 10
                    for at in range(0, len(text), size):
                        relay(text[at : at + size])
                    relay.flush()
                    seen = unescaped_view("".join(shown))
                    self.assertIn("[withheld]", shown)
                    longest = max(
                        n for n in range(len(key) + 1) if any(key[i : i + n] in seen for i in range(len(key) - n + 1))
                    )
                    self.assertLess(longest, len(key) // 3)  # at most a cut piece too short to be recognised
                    self.assertTrue("".join(shown).endswith("file. "), shown[-2:])  # the text after it is shown


class TestStreamLimits(LoopbackCase):
    def test_a_stream_longer_than_the_limit_and_a_transport_misconfigured(self) -> None:
        self.server = self.serve(Canned(openai_reply("x" * 400)))
        http = HttpTransport(timeout=5, max_response_bytes=300)
        self.addCleanup(http.close)
        model = OpenAIChat("m", base_url=self.server.openai_url, api_key="", stream=True, transport=http)
        with self.assertRaises(ModelResponseError) as caught:
            model([{"role": "user", "content": "t"}], [])
        self.assertIn("$: the stream is longer than 300 bytes", str(caught.exception))
        for options, parameter in (({"keep_alive": "yes"}, "keep_alive"), ({"idle_timeout": 0}, "idle_timeout")):
            with self.subTest(options), self.assertRaises(ModelConfigError) as refused_:
                HttpTransport(**options)
            self.assertEqual(refused_.exception.parameter, parameter)
        with self.assertRaises(ModelConfigError):
            OpenAIChat("m", base_url=self.server.openai_url, api_key="", stream="yes")  # type: ignore[arg-type]
        with self.assertRaises(ModelConfigError):
            OpenAIChat("m", base_url=self.server.openai_url, api_key="", on_text="print")  # type: ignore[arg-type]
