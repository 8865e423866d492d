"""Models and tools for the batch tests, named by reference (``tests.support.batch_models:factory``)
so that process-pool, Dask and Ray workers can import them."""

from __future__ import annotations

import os
from typing import Any, Dict, List

from agentloop import ModelReply, ToolCall, ToolRegistry, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


#: ``tests.support.batch_models:tools``
tools = ToolRegistry([add])


class CountingModel:
    """Adds twice, then answers: a 3-turn run, a pure function of the task.

    A task ``crash-if:PATH`` makes the process exit at once (``os._exit``)
    while ``PATH`` exists: a worker dying mid-batch.
    """

    def model_info(self) -> Dict[str, Any]:
        return {"provider": "test", "model": "counting"}

    def __call__(self, messages: List[Any], manifest: List[Dict[str, Any]]) -> ModelReply:
        task = messages[0]["content"]
        if task.startswith("crash-if:") and os.path.exists(task[len("crash-if:") :]):
            os._exit(7)
        turns = sum(1 for m in messages if m["role"] == "assistant")
        if turns < 2:
            return ModelReply(
                "step %d of %s" % (turns, task), (ToolCall("add", {"a": turns, "b": len(task)}, "c%d" % turns),)
            )
        return ModelReply("done: %s" % (task,))


def factory() -> CountingModel:
    """``tests.support.batch_models:factory``: a fresh model per run."""
    return CountingModel()


class PidModel(CountingModel):
    """Names its process in ``model_info``: the task record a worker writes differs from the driver's."""

    def model_info(self) -> Dict[str, Any]:
        return {"provider": "test", "model": "pid-%d" % (os.getpid(),)}


def pid_factory() -> PidModel:
    """``tests.support.batch_models:pid_factory``"""
    return PidModel()
