"""A model for ``agentloop run --mcp ... --model tests.support.mcp_cli_model:from_task`` whose script is the task.

The task is JSON: a list of turns, each a list of ``[tool, arguments]``
calls; the model asks for each turn's calls in order, then answers
``done`` -- so a command line names every call it makes, and the
transcript's task record holds the script.  Used by the command-line MCP
tests and by ``.ci/interop-mcp-servers``.  Stdlib only.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

from agentloop import ModelReply, ToolCall


class ScriptFromTask:
    """Turn N (counted from the assistant messages so far) asks for the task's turn N; after the last, ``done``."""

    def model_info(self) -> Dict[str, Any]:
        return {"provider": "test", "model": "script-from-task"}

    def __call__(self, messages: List[Dict[str, Any]], manifest: List[Dict[str, Any]]) -> ModelReply:
        turns = json.loads(next(m["content"] for m in messages if m["role"] == "user"))
        step = sum(1 for m in messages if m["role"] == "assistant")
        if step >= len(turns):
            return ModelReply("done")
        calls = [ToolCall(name, arguments, "c%d_%d" % (step, i)) for i, (name, arguments) in enumerate(turns[step])]
        return ModelReply("turn %d" % (step + 1,), calls)


def from_task() -> ScriptFromTask:
    """``tests.support.mcp_cli_model:from_task``"""
    return ScriptFromTask()
