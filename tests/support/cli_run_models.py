"""Models and tools for ``agentloop run --model tests.support.cli_run_models:NAME`` in tests/cli/test_cli_run.py.

Each factory is a model's whole behaviour, named on the command line the
way a user names theirs (``MODULE:FACTORY``).
"""

from __future__ import annotations

from typing import Any, Dict, List

from agentloop import ModelReply, ScriptedModel, ToolCall, ToolRegistry, Usage, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def leave(code: int) -> int:
    """Exit the process (a tool that calls sys.exit)."""
    raise SystemExit(code)


@tool
def interrupt() -> int:
    """Stand in for Ctrl-C pressed while this tool runs."""
    raise KeyboardInterrupt


@tool
def wreck(path: str) -> int:
    """Overwrite the first byte of the file at ``path`` (the run's own transcript), then exit."""
    with open(path, "r+b") as handle:
        handle.write(b"X")
    raise SystemExit(0)


#: ``tests.support.cli_run_models:tools``
tools = ToolRegistry([add, leave, interrupt, wreck])


def adds_forever() -> ScriptedModel:
    """Asks for add(1, 2) on every turn: a run that only a budget stops."""
    return ScriptedModel([ModelReply("again", [ToolCall("add", {"a": 1, "b": 2})], usage=Usage(6, 4))] * 50)


def exits() -> ScriptedModel:
    """Asks for leave(3): the tool raises SystemExit(3)."""
    return ScriptedModel([ModelReply("bye", [ToolCall("leave", {"code": 3})], usage=Usage(3, 2))])


def interrupted() -> ScriptedModel:
    """Asks for interrupt(): Ctrl-C during a tool."""
    return ScriptedModel([ModelReply("stop", [ToolCall("interrupt", {})], usage=Usage(3, 2))])


def wrecks() -> ScriptedModel:
    """Asks for wreck(path) with the task as the path."""
    return ScriptedModel(
        [lambda messages, manifest: ModelReply("", [ToolCall("wreck", {"path": messages[0]["content"]})])]
    )


class _ExitsAtOnce:
    """A model whose model_info() (asked before the transcript is opened) raises SystemExit."""

    def model_info(self) -> Dict[str, Any]:
        raise SystemExit(9)

    def __call__(self, messages: List[Any], manifest: List[Dict[str, Any]]) -> ModelReply:
        return ModelReply("never")


def exits_at_once() -> _ExitsAtOnce:
    return _ExitsAtOnce()


def priced() -> ScriptedModel:
    """One answer of 1000 tokens from a model named ``m`` (so a price table applies)."""
    return ScriptedModel([ModelReply("priced answer", usage=Usage(600, 400))], info={"model": "m"})


def raises() -> Any:
    raise RuntimeError("the factory is broken")


def gives_a_number() -> int:
    return 7


#: Not a factory at all.
NOT_CALLABLE = 3
