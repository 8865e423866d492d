"""Tools and models for the approval tests (tests/test_approval*.py): importable by name,
so ``agentloop run --model tests.support.approval_fixtures:make_model --tools tests.support.approval_fixtures:TOOLS``
works.

The models are stateless: each reply is chosen by the number of assistant
turns in the messages, so a paused run and its resume (another model object,
even another process) ask for the same calls.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List

from agentloop import ModelReply, Tool, ToolCall, ToolRegistry

#: Each real invocation of a tool, as (tool name, arguments): the count the tests check.
CALLS: List[Any] = []
#: A path no terminal should act on: ESC (a colour change) and U+202E (right-to-left override).
HOSTILE = "/tmp/\x1b[31mred\u202eevil"


def _delete(path: str) -> Dict[str, str]:
    CALLS.append(("delete", {"path": path}))
    return {"deleted": path}


def _look(path: str) -> Dict[str, Any]:
    CALLS.append(("look", {"path": path}))
    return {"exists": True, "path": path}


def _pay(amount: int) -> Dict[str, int]:
    CALLS.append(("pay", {"amount": amount}))
    return {"paid": amount}


def delete_tool(**options: Any) -> Tool:
    return Tool(
        "delete",
        "Delete a file.",
        {
            "type": "object",
            "properties": {"path": {"type": "string", "minLength": 1}},
            "required": ["path"],
            "additionalProperties": False,
        },
        _delete,
        requires_approval=options.pop("requires_approval", True),
        **options,
    )


def look_tool(**options: Any) -> Tool:
    return Tool(
        "look",
        "Look at a file.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        _look,
        **options,
    )


def pay_tool() -> Tool:
    """Gated by a predicate: only amounts over 100 need a person."""
    return Tool(
        "pay",
        "Pay an amount.",
        {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]},
        _pay,
        requires_approval=lambda arguments: arguments["amount"] > 100,
    )


def tools() -> ToolRegistry:
    return ToolRegistry([delete_tool(), look_tool()])


#: For the command line: ``--tools tests.support.approval_fixtures:TOOLS``.
TOOLS = tools()


def stateless(*replies: ModelReply) -> Callable[[List[Dict[str, Any]], Any], ModelReply]:
    """A model giving ``replies[n]`` when the messages hold n assistant turns (then a plain answer)."""

    def model(messages: List[Dict[str, Any]], manifest: Any) -> ModelReply:
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        return replies[turn] if turn < len(replies) else ModelReply("done after %d turns" % (turn,))

    return model


def delete_model(path: str = "/tmp/x", call_id: str = "c1") -> Callable[[List[Dict[str, Any]], Any], ModelReply]:
    """Turn 1 asks to delete ``path``; turn 2 answers with what the tool said."""

    def answer(messages: List[Dict[str, Any]], manifest: Any) -> ModelReply:
        return ModelReply("the tool said: %s" % (messages[-1]["content"],))

    first = ModelReply("deleting", [ToolCall("delete", {"path": path}, call_id)])

    def model(messages: List[Dict[str, Any]], manifest: Any) -> ModelReply:
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        return first if turn == 0 else answer(messages, manifest)

    return model


def make_model() -> Callable[[List[Dict[str, Any]], Any], ModelReply]:
    """For the command line: a model that asks to delete :data:`HOSTILE`."""
    return delete_model(HOSTILE)
