"""Payloads of the agentloop/1 grammar, for tests that write transcripts by hand.

The verifier checks each payload (agentloop.transcript.grammar): a task
record needs its task, budgets and tools; steps, tokens and tool records
must add up.  ``Run`` hands out payloads that do, in the order a writer
appends them::

    run = Run()
    with TranscriptWriter(path) as out:
        out.append("task", run.task())
        out.append("assistant", run.assistant(calls=1))
        out.append("tool", run.tool({"sum": 42}))
        out.append("stop", run.stop())

``records(n)`` gives ``n`` ``(kind, payload)`` pairs of an unfinished run.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

Payload = Dict[str, Any]


class Run:
    def __init__(self) -> None:
        self.steps = 0
        self.tokens = 0
        self.waiting: List[Tuple[str, str]] = []

    @staticmethod
    def task(task: str = "t", **extra: Any) -> Payload:
        payload: Payload = {
            "format": "agentloop/1",
            "task": task,
            "budgets": {"max_steps": 100, "max_tokens": 10**6, "stop_sentinel": None},
            "tools": [],
        }
        payload.update(extra)
        return payload

    def assistant(self, calls: int = 0, text: str = "", tokens: int = 1, name: str = "echo") -> Payload:
        self.steps += 1
        self.tokens += tokens
        self.waiting = [("call_%d_%d" % (self.steps, i), name) for i in range(calls)]
        return {
            "step": self.steps,
            "text": text,
            "tool_calls": [{"id": i, "name": n, "arguments": {}} for i, n in self.waiting],
            "tokens": tokens,
            "total_tokens": self.tokens,
        }

    def tool(self, value: Any = None, ok: bool = True, error: str = "failed") -> Payload:
        call_id, name = self.waiting.pop(0)
        payload: Payload = {"step": self.steps, "id": call_id, "name": name, "ok": ok}
        payload["value" if ok else "error"] = value if ok else error
        return payload

    def stop(self, reason: str = "no_tool_calls", detail: str = "") -> Payload:
        return {"reason": reason, "steps": self.steps, "tokens": self.tokens, "detail": detail}


def records(count: int, value: Any = None) -> List[Tuple[str, Payload]]:
    """``count`` records of an unfinished run: a task, then turns of one call each."""
    run = Run()
    out: List[Tuple[str, Payload]] = [("task", run.task())]
    while len(out) < count:
        if run.waiting:
            out.append(("tool", run.tool(value)))
        else:
            out.append(("assistant", run.assistant(calls=1)))
    return out
