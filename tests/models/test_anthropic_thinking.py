"""AnthropicMessages with extended thinking and prompt caching against the loopback Messages API:
thinking blocks back byte for byte before the tool results, replay and resume from the file alone,
the cache breakpoints, the command line."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, List
from unittest import mock

from agentloop import Approve, resume, run, verify_file
from agentloop.models import AnthropicMessages, ModelAPIError, ModelConfigError, replay
from agentloop.models.anthropic import messages_api_reply

from tests.support.helpers import read_lines, read_records
from tests.support.loopback import PromptCache, anthropic_reply, sealed
from tests.support.modelcase import LoopbackCase, some_tools

THINKING = {"type": "enabled", "budget_tokens": 2048}
EPHEMERAL = {"type": "ephemeral"}


def gated(registry: Any) -> List[Any]:
    return [dataclasses.replace(tool, requires_approval=True) for tool in registry]


class ThinkingCase(LoopbackCase):
    def model(self, **options: Any) -> AnthropicMessages:
        options.setdefault("api_key", "sk-ant-test-key")
        options.setdefault("transport", self.transport())
        return AnthropicMessages("claude-test", base_url=self.server.url, **options)


class TestThinking(ThinkingCase):
    def test_the_thinking_blocks_go_back_byte_for_byte_before_the_tool_results(self) -> None:
        self.server = self.serve()  # the stand-in thinks when thinking is enabled, calls add, then quotes the result
        result = run(
            "What is 40 + 2?",
            self.model(thinking=THINKING),
            some_tools("add"),
            transcript=self.path(),
            max_steps=4,
            max_tokens=100_000,
        )
        self.assertEqual((result.stop_reason, result.steps), ("no_tool_calls", 2))
        first, second = (seen.body for seen in self.server.requests)
        self.assertEqual(first["thinking"], THINKING)
        blocks = anthropic_reply(
            "Let me add them.", [("toolu_add_1", "add", {"a": 40, "b": 2})], thinking="40 and 2: the add tool."
        )["content"]
        self.assertEqual(
            blocks[0],
            {"type": "thinking", "thinking": "40 and 2: the add tool.", "signature": sealed("40 and 2: the add tool.")},
        )
        self.assertEqual(second["messages"][1], {"role": "assistant", "content": blocks})
        self.assertEqual(second["messages"][2]["content"][0]["type"], "tool_result")
        # every string of the blocks goes back as the server sent it (members in RFC 8785 order, as recorded)
        self.assertIn(
            json.dumps(blocks[0], sort_keys=True, separators=(",", ":")).encode("utf-8"), self.server.requests[1].raw
        )
        payload = read_records(self.path())[1]["payload"]
        self.assertEqual(payload["provider_data"], {"api": "anthropic-messages", "items": blocks})
        self.assertEqual(payload["text"], "Let me add them.")
        self.assertTrue(verify_file(self.path()).ok)

    def test_the_stand_in_refuses_a_turn_without_its_thinking_or_with_a_changed_signature(self) -> None:
        """The negative control: without the blocks, or with one changed, the API refuses the next turn."""
        self.server = self.serve()
        model = self.model(thinking=THINKING)
        call = {"id": "t1", "name": "add", "arguments": {"a": 1, "b": 2}}
        result = {"role": "tool", "tool_call_id": "t1", "name": "add", "ok": True, "content": "3"}
        plain = {"role": "assistant", "content": "Adding.", "tool_calls": [call]}
        changed = dict(
            plain,
            provider_data={
                "api": "anthropic-messages",
                "items": [
                    {"type": "thinking", "thinking": "edited", "signature": sealed("original")},
                    {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1, "b": 2}},
                ],
            },
        )
        for turn in (plain, changed):
            with self.subTest(turn["content"]), self.assertRaises(ModelAPIError) as caught:
                model([{"role": "user", "content": "t"}, turn, result], [])
            self.assertEqual(caught.exception.status, 400)

    def test_a_blank_text_block_the_api_sent_is_not_sent_back(self) -> None:
        """The API answers with empty text blocks (before a tool_use, or streamed with no text)
        and refuses them back."""
        reply = anthropic_reply("", [("t1", "add", {"a": 40, "b": 2})], thinking="Add them.")
        reply["content"].insert(2, {"type": "text", "text": " \n"})
        self.server = self.serve(reply)  # then the stand-in's own answer, which refuses a blank text block
        result = run(
            "What is 40 + 2?",
            self.model(thinking=THINKING),
            some_tools("add"),
            transcript=self.path(),
            max_steps=4,
            max_tokens=100_000,
        )
        self.assertEqual((result.stop_reason, result.steps), ("no_tool_calls", 2), result.detail)
        recorded = read_records(self.path())[1]["payload"]["provider_data"]["items"]
        self.assertEqual(
            [b["type"] for b in recorded], ["thinking", "text", "text", "tool_use"]
        )  # the evidence: as sent
        sent = self.server.requests[1].body["messages"][1]["content"]
        self.assertEqual([b["type"] for b in sent], ["thinking", "tool_use"])
        self.assertEqual(sent[0], recorded[0])

    def test_a_pause_then_resume_from_the_file_alone_sends_the_uninterrupted_requests(self) -> None:
        tools = gated(some_tools("add"))
        self.server = self.serve()
        run(
            "What is 40 + 2?",
            self.model(thinking=THINKING),
            tools,
            transcript=self.path("whole.jsonl"),
            max_steps=4,
            max_tokens=100_000,
            approver=lambda request: Approve(by="alice"),
        )
        whole = [seen.raw for seen in self.server.requests]
        self.server.requests.clear()
        paused = run(
            "What is 40 + 2?",
            self.model(thinking=THINKING),
            tools,
            transcript=self.path(),
            max_steps=4,
            max_tokens=100_000,
            approver=lambda request: None,
        )
        self.assertEqual((paused.stop_reason, len(self.server.requests)), ("awaiting_approval", 1))
        ended = resume(
            self.path(), self.model(thinking=THINKING), tools, decisions={"toolu_add_1": Approve(by="alice")}
        )
        self.assertEqual(ended.stop_reason, "no_tool_calls", ended.detail)  # the stand-in took the thinking blocks
        self.assertEqual([seen.raw for seen in self.server.requests], whole)
        self.assertEqual(read_lines(self.path()), read_lines(self.path("whole.jsonl")))

    def test_a_thinking_run_replays_byte_for_byte(self) -> None:
        self.server = self.serve()
        run(
            "What is 40 + 2?",
            self.model(thinking=THINKING),
            some_tools("add"),
            transcript=self.path(),
            max_steps=4,
            max_tokens=100_000,
        )
        outcome = replay(self.path(), "recorded", transcript=self.path("again.jsonl"))
        self.assertTrue(outcome.identical, outcome.difference)

    def test_redacted_thinking_and_the_thinking_token_count(self) -> None:
        body = anthropic_reply(
            "ok",
            thinking="hm",
            redacted="b3BhcXVl",
            usage={"input_tokens": 10, "output_tokens": 50, "output_tokens_details": {"thinking_tokens": 40}},
        )
        reply = messages_api_reply(body)
        self.assertEqual([b["type"] for b in reply.provider_data["items"]], ["thinking", "redacted_thinking", "text"])
        self.assertEqual(reply.usage.recorded(), {"input_tokens": 10, "output_tokens": 50, "reasoning_tokens": 40})
        self.assertIsNone(messages_api_reply(anthropic_reply("plain")).provider_data)

    def test_the_thinking_parameter_is_checked_and_recorded(self) -> None:
        self.server = self.serve()
        for thinking in (
            {"type": "enabled", "budget_tokens": 1000},
            {"type": "enabled", "budget_tokens": 4096},
            {"type": "enabled"},
            {"budget_tokens": 2048},
            "on",
            {"type": "enabled", "budget_tokens": True},
        ):
            with self.subTest(thinking), self.assertRaises(ModelConfigError) as caught:
                self.model(thinking=thinking)
            self.assertEqual(caught.exception.parameter, "thinking")
        with self.assertRaises(ModelConfigError):
            self.model(params={"thinking": THINKING})  # reserved: give it as thinking=
        info = self.model(thinking={"type": "adaptive"}, max_tokens=8000).model_info()
        self.assertEqual(info["params"], {"thinking": {"type": "adaptive"}, "max_tokens": 8000})


class TestCache(ThinkingCase):
    def test_breakpoints_tools_system_the_newest_message_and_where_the_last_request_ended(self) -> None:
        self.server = self.serve()
        run(
            "What is 40 + 2?",
            self.model(cache=True),
            some_tools("add", "fail"),
            transcript=self.path(),
            max_steps=4,
            max_tokens=100_000,
            system="You add.",
        )
        first, second = (seen.body for seen in self.server.requests)
        self.assertEqual(first["system"], [{"type": "text", "text": "You add.", "cache_control": EPHEMERAL}])
        self.assertEqual([t.get("cache_control") for t in first["tools"]], [None, EPHEMERAL])
        task = {"role": "user", "content": [{"type": "text", "text": "What is 40 + 2?", "cache_control": EPHEMERAL}]}
        self.assertEqual(first["messages"], [task])
        self.assertEqual(json.dumps(first).count('"cache_control"'), 3)
        self.assertEqual(second["messages"][0], task)  # where the first request wrote: read back exactly
        self.assertNotIn("cache_control", json.dumps(second["messages"][1]))
        self.assertEqual(second["messages"][-1]["content"][-1]["cache_control"], EPHEMERAL)
        self.assertEqual(json.dumps(second).count('"cache_control"'), 4)  # the API's limit
        self.assertEqual(read_records(self.path())[0]["payload"]["model"]["cache"], True)

    def test_each_turn_reads_what_the_last_wrote_with_a_budget_note_or_many_calls(self) -> None:
        """A budget note after the results (not in the next request), or a turn of more than 20 blocks (past
        the API's look-back): each request still reads back the prefix the one before it wrote."""
        for calls, tell in ((1, True), (11, False)):
            with self.subTest(calls=calls, tell_budgets=tell):
                store = PromptCache(minimum=0)

                def turn(number: int) -> Any:
                    def answer(seen: Any) -> Any:
                        usage = store.usage(seen.body, 5)
                        if number == 4:
                            return anthropic_reply("Done.", usage=usage)
                        return anthropic_reply(
                            "Adding.",
                            [("t%d_%d" % (number, i), "add", {"a": i, "b": number}) for i in range(calls)],
                            usage=usage,
                        )

                    return answer

                self.server = self.serve(*(turn(number) for number in range(1, 5)))
                run(
                    "Add.",
                    self.model(cache=True),
                    some_tools("add"),
                    transcript=self.path("c%d.jsonl" % calls),
                    max_steps=4,
                    max_tokens=10**6,
                    max_tool_calls=100,
                    tell_budgets=tell,
                )
                usages = [
                    r["payload"]["usage"]
                    for r in read_records(self.path("c%d.jsonl" % calls))
                    if r["kind"] == "assistant"
                ]
                for before, after in zip(usages, usages[1:]):  # all the earlier request wrote, read back
                    self.assertEqual(
                        after["cache_read_tokens"], before.get("cache_read_tokens", 0) + before["cache_write_tokens"]
                    )
                for body in (seen.body for seen in self.server.requests):
                    self.assertLessEqual(json.dumps(body).count('"cache_control"'), 4)

    def test_a_cached_run_records_and_prices_what_the_stand_in_reads_and_writes(self) -> None:
        store = PromptCache(minimum=0)
        replies = [
            lambda seen: anthropic_reply("One.", [("t1", "add", {"a": 1, "b": 2})], usage=store.usage(seen.body, 5)),
            lambda seen: anthropic_reply("Two.", usage=store.usage(seen.body, 5)),
        ]
        self.server = self.serve(*replies)
        prices = {"claude-test": {"input": "3", "cache_write": "3.75", "cache_read": "0.30", "output": "15"}}
        result = run(
            "Add 1 and 2.",
            self.model(cache=True),
            some_tools("add"),
            transcript=self.path(),
            max_steps=4,
            max_tokens=100_000,
            system="S" * 400,
            prices=prices,
        )
        first, second = (r["payload"]["usage"] for r in read_records(self.path()) if r["kind"] == "assistant")
        self.assertEqual((first.get("cache_read_tokens"), first["cache_write_tokens"] > 100), (None, True))
        self.assertEqual(second["cache_read_tokens"], first["cache_write_tokens"])  # the first turn's prompt, read back
        self.assertGreater(second["cache_write_tokens"], 0)  # and the new turn written
        self.assertEqual(result.stop_reason, "no_tool_calls")
        self.assertIsNotNone(result.cost)

    def test_without_cache_the_requests_are_unchanged(self) -> None:
        self.server = self.serve()
        run("t", self.model(), some_tools("add"), transcript=self.path(), max_steps=4, max_tokens=100_000)
        self.assertNotIn(b"cache_control", b"".join(seen.raw for seen in self.server.requests))
        self.assertNotIn("cache", read_records(self.path())[0]["payload"]["model"])
        with self.assertRaises(ModelConfigError):
            self.model(cache="yes")


class TestCommandLine(ThinkingCase):
    def test_thinking_and_cache_from_the_command_line_then_resume_needs_them(self) -> None:
        self.server = self.serve()
        with mock.patch.dict(os.environ, {"ANTHROPIC_API_KEY": ""}):
            status, out, err = self.cli(
                "run",
                "--model",
                "anthropic:claude-test",
                "--base-url",
                self.server.url,
                "--tools",
                "demo:demo_tools",
                "--task",
                "What is 40 + 2?",
                "--max-steps",
                "4",
                "--max-tokens",
                "100000",
                "--thinking",
                "2048",
                "--cache",
                "-o",
                self.path(),
            )
        self.assertEqual((status, err), (0, ""), out)
        body = self.server.requests[0].body
        self.assertEqual((body["thinking"], body["messages"][0]["content"][0]["cache_control"]), (THINKING, EPHEMERAL))
        self.assertEqual(self.cli("replay", self.path(), "--recorded-tools", "-o", self.path("r.jsonl"))[0], 0)

    def test_options_of_another_provider_are_refused(self) -> None:
        cases = [
            (("--model", "openai:gpt", "--thinking", "2048"), "--thinking: only goes with anthropic: models"),
            (("--model", "openai-responses:gpt", "--cache"), "--cache: only goes with anthropic: models"),
            (("--model", "anthropic:claude", "--prompt-cache-key", "k"), "--prompt-cache-key: only goes with openai:"),
        ]
        for argv, message in cases:
            with self.subTest(argv):
                status, _, err = self.cli(
                    "run",
                    *argv,
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
                self.assertIn(message, err)
