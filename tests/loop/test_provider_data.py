"""A reply's ``provider_data``: recorded as it came, given back unchanged in every later turn, rebuilt
from the file alone by replay and resume; a run without it writes the bytes it always did."""

from __future__ import annotations

import json
from typing import Any, Dict, List

from agentloop import Approve, ModelReply, ScriptedModel, Tool, ToolCall, Usage, resume, run, verify_file
from agentloop.models import ReplayModel, replay

from tests.support.helpers import TempDir, read_lines, read_records

THINKING = {
    "api": "anthropic-messages",
    "items": [
        {"type": "thinking", "thinking": "40 and 2: add them.", "signature": "c2lnbmF0dXJl+/="},
        {"type": "redacted_thinking", "data": "b3BhcXVl"},
        {"type": "text", "text": "Adding."},
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 40, "b": 2}},
    ],
}


def add_tool(gated: bool = False) -> Tool:
    return Tool(
        "add",
        "Add two integers.",
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
        lambda a, b: {"sum": a + b},
        requires_approval=gated,
    )


class Seeing:
    """A model that keeps a deep copy of every conversation it is shown."""

    def __init__(self, replies: List[ModelReply]) -> None:
        self.replies = list(replies)
        self.seen: List[List[Dict[str, Any]]] = []

    def __call__(self, messages: List[Dict[str, Any]], manifest: List[Dict[str, Any]]) -> ModelReply:
        self.seen.append(json.loads(json.dumps(messages)))
        return self.replies[len(self.seen) - 1]


def replies() -> List[ModelReply]:
    return [
        ModelReply(
            "Adding.",
            [ToolCall("add", {"a": 40, "b": 2}, id="toolu_1")],
            Usage(100, 30, reasoning_tokens=12),
            provider_data=THINKING,
        ),
        ModelReply("42."),
    ]


class TestProviderData(TempDir):
    def test_recorded_as_given_and_given_back_in_the_next_turn(self) -> None:
        model = Seeing(replies())
        result = run("What is 40 + 2?", model, [add_tool()], transcript=self.path(), max_steps=4, max_tokens=1000)
        self.assertEqual(result.stop_reason, "no_tool_calls")
        assistant = read_records(self.path())[1]["payload"]
        self.assertEqual(assistant["provider_data"], THINKING)
        self.assertEqual(assistant["usage"], {"input_tokens": 100, "output_tokens": 30, "reasoning_tokens": 12})
        self.assertEqual(
            model.seen[1][1],
            {
                "role": "assistant",
                "content": "Adding.",
                "provider_data": THINKING,
                "tool_calls": [{"id": "toolu_1", "name": "add", "arguments": {"a": 40, "b": 2}}],
            },
        )
        self.assertNotIn("provider_data", read_records(self.path())[3]["payload"])  # only the turn that had it
        self.assertTrue(verify_file(self.path()).ok)

    def test_replay_gives_it_back_and_is_byte_identical(self) -> None:
        run(
            "What is 40 + 2?",
            ScriptedModel(replies()),
            [add_tool()],
            transcript=self.path(),
            max_steps=4,
            max_tokens=1000,
        )
        again = replay(self.path(), [add_tool()], transcript=self.path("again.jsonl"))
        self.assertTrue(again.identical, again.difference)
        model = ReplayModel.from_transcript(self.path())
        self.assertEqual(model._steps[0].reply.provider_data, THINKING)
        self.assertEqual(model._steps[1].before[-2]["provider_data"], THINKING)

    def test_a_paused_run_resumed_from_the_file_shows_the_model_what_the_uninterrupted_run_did(self) -> None:
        whole = Seeing(replies())
        run(
            "What is 40 + 2?",
            whole,
            [add_tool(True)],
            transcript=self.path("whole.jsonl"),
            max_steps=4,
            max_tokens=1000,
            approver=lambda request: Approve(by="alice"),
        )
        paused = Seeing(replies())
        first = run(
            "What is 40 + 2?",
            paused,
            [add_tool(True)],
            transcript=self.path(),
            max_steps=4,
            max_tokens=1000,
            approver=lambda request: None,
        )
        self.assertEqual(first.stop_reason, "awaiting_approval")
        later = Seeing(replies()[1:])
        resume(self.path(), later, [add_tool(True)], decisions={"toolu_1": Approve(by="alice")})
        self.assertEqual(later.seen[0], whole.seen[1])  # the thinking blocks, from the file alone
        self.assertEqual(read_lines(self.path()), read_lines(self.path("whole.jsonl")))

    def test_a_reply_whose_data_cannot_be_recorded_is_a_model_error(self) -> None:
        reply = ModelReply("x", provider_data={"api": "a", "items": []})
        object.__setattr__(reply, "provider_data", {"api": "a", "items": [{"n": float("nan")}]})
        result = run("t", ScriptedModel([reply]), [], transcript=self.path(), max_steps=2, max_tokens=100)
        self.assertEqual(result.stop_reason, "model_error")
        self.assertEqual(
            result.detail,
            "model reply provider_data is not recordable: $.provider_data.items[0].n: nan is not a JSON number",
        )
        object.__setattr__(reply, "provider_data", {"api": "a"})
        result = run("t", ScriptedModel([reply]), [], transcript=self.path("b.jsonl"), max_steps=2, max_tokens=100)
        self.assertEqual(
            result.detail, "model reply provider_data must have exactly the keys 'api' and 'items', got 'api'"
        )

    def test_a_reply_builds_a_copy_and_refuses_a_bad_shape(self) -> None:
        items = [{"type": "thinking"}]
        reply = ModelReply("x", provider_data={"api": "a", "items": items})
        items.append({"type": "more"})
        self.assertEqual(reply.provider_data, {"api": "a", "items": [{"type": "thinking"}]})
        for bad in ({"api": "", "items": []}, {"api": "a", "items": [1]}, {"api": "a", "items": [], "x": 1}, []):
            with self.subTest(bad), self.assertRaises((TypeError, ValueError)):
                ModelReply("x", provider_data=bad)  # type: ignore[arg-type]
        with self.assertRaises(ValueError):
            Usage(10, 5, reasoning_tokens=6)
