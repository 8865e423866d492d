"""agentloop.CallContext: a tool's view of its call's identity, never the model's."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any, Dict, List

from agentloop import (
    CallContext,
    ModelReply,
    Modify,
    ScriptedModel,
    Tool,
    ToolCall,
    call_key,
    resume,
    run,
    run_async,
    tool,
    verify_file,
)
from agentloop.errors import ToolDefinitionError
from agentloop.models import replay

from tests.support.approval_fixtures import stateless
from tests.support.helpers import TempDir, read_records

SEEN: List[CallContext] = []


@tool
def pay(amount: int, ctx: CallContext) -> Dict[str, Any]:
    """Pay an amount.

    Args:
        amount: How much.
    """
    SEEN.append(ctx)
    return {"paid": amount}


@tool
def crash(ctx: CallContext) -> Dict[str, Any]:
    """Run, then the process "dies" before the record (SystemExit) the first time."""
    SEEN.append(ctx)
    if len(SEEN) == 1:
        raise SystemExit(9)
    return {"done": True}


def two_turns() -> ScriptedModel:
    return ScriptedModel(
        [
            ModelReply("a", [ToolCall("pay", {"amount": 1}, "x"), ToolCall("pay", {"amount": 2}, "y")]),
            ModelReply("b", [ToolCall("pay", {"amount": 1}, "x")]),
            ModelReply("done"),
        ]
    )


def documented_key(origin: str, step: int, call_id: str) -> str:
    """docs/tools.md: SHA-256 of the RFC 8785 bytes of ["agentloop-call-key/1", origin, step, call_id] (ASCII here,
    so json.dumps with sorted keys and no spaces is RFC 8785)."""
    text = json.dumps(["agentloop-call-key/1", origin, step, call_id], separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class TestCallContext(TempDir):
    def setUp(self) -> None:
        super().setUp()
        SEEN.clear()

    def test_the_model_never_sees_it_and_the_tool_gets_a_documented_key_per_call(self) -> None:
        self.assertEqual(sorted(pay.parameters["properties"]), ["amount"])
        run("t", two_turns(), [pay], transcript=self.path(), max_steps=5, max_tokens=1000)
        records = read_records(self.path())
        self.assertNotIn("ctx", json.dumps(records[0]["payload"]["tools"]))
        origin = "agentloop/1/" + records[0]["hash"]
        self.assertEqual(
            [(c.step, c.call_id, c.tool, c.origin) for c in SEEN],
            [(1, "x", "pay", origin), (1, "y", "pay", origin), (2, "x", "pay", origin)],
        )
        keys = [c.key for c in SEEN]
        self.assertEqual(keys, [documented_key(origin, c.step, c.call_id) for c in SEEN])
        self.assertEqual(keys, [call_key(origin, c.step, c.call_id) for c in SEEN])
        self.assertEqual(len(set(keys)), 3)  # the same id at another step is another call
        run("another task", two_turns(), [pay], transcript=self.path("b.jsonl"), max_steps=5, max_tokens=1000)
        self.assertFalse(set(keys) & {c.key for c in SEEN[3:]})  # another run: other keys
        run("t", two_turns(), [pay], transcript=self.path("c.jsonl"), max_steps=5, max_tokens=1000)
        self.assertEqual(
            [c.key for c in SEEN[6:]], keys
        )  # the same inputs: the same origin, so the same keys (docs/tools.md)

    def test_the_same_call_gets_the_same_key_after_a_crash_on_resume_and_in_a_replay(self) -> None:
        model = stateless(ModelReply("go", [ToolCall("crash", {}, "c1")]))  # the same reply for the same conversation
        with self.assertRaises(SystemExit):
            run("t", model, [crash], transcript=self.path(), max_steps=3, max_tokens=1000)
        self.assertEqual(len(read_records(self.path())), 2)  # the call ran; its record was never written
        resume(self.path(), model, [crash], rerun_unrecorded=True)
        self.assertTrue(verify_file(self.path(), require_complete=True).ok)
        outcome = replay(self.path(), [crash], transcript=self.path("r.jsonl"))
        self.assertTrue(outcome.identical, outcome.difference)
        self.assertEqual(len(SEEN), 3)
        self.assertEqual(len({c.key for c in SEEN}), 1)

    def test_async_tools_and_modified_calls_get_it_too(self) -> None:
        got: List[CallContext] = []

        async def slow(n: int, ctx: CallContext) -> int:
            got.append(ctx)
            return n

        gated = Tool.from_function(slow, requires_approval=True)
        model = ScriptedModel([ModelReply("a", [ToolCall("slow", {"n": 1}, "s")]), ModelReply("done")])
        asyncio.run(
            run_async(
                "t",
                model,
                [gated],
                transcript=self.path(),
                max_steps=3,
                max_tokens=100,
                approver=lambda request: Modify({"n": 2}, "al"),
            )
        )
        self.assertEqual([(c.call_id, c.tool) for c in got], [("s", "slow")])
        self.assertEqual(read_records(self.path())[2]["payload"]["value"], 2)

    def test_a_string_annotation_is_understood_and_misuse_is_refused(self) -> None:
        self.assertEqual(
            pay.fn.__annotations__["ctx"], "CallContext"
        )  # this module has from __future__ import annotations
        self.assertEqual((pay.context, sorted(pay.parameters["properties"])), ("ctx", ["amount"]))
        unannotated = Tool("t", "d", {"type": "object", "properties": {"ctx": {"type": "string"}}}, lambda ctx: ctx)
        self.assertIsNone(unannotated.context)  # only the annotation makes a parameter the CallContext

        def two(a: CallContext, b: CallContext) -> None:
            pass

        with self.assertRaisesRegex(ToolDefinitionError, "both CallContext"):
            Tool.from_function(two)

        def hand(x: int, ctx: CallContext) -> int:
            return x

        with self.assertRaisesRegex(ToolDefinitionError, "schema cannot also name it"):
            Tool("h", "d", {"type": "object", "properties": {"ctx": {}}}, hand)
        self.assertEqual(
            Tool("h", "d", {"type": "object", "properties": {"x": {"type": "integer"}}}, hand).context, "ctx"
        )
