"""Runs as an Inspect AI eval log, in its JSON form (log format version 2).

The shape is Inspect's own (UKGovernmentBEIS/inspect_ai,
``src/inspect_ai/log/_log.py``: ``EvalLog``, ``EvalSpec``, ``EvalSample``,
``EvalResults``, ``EvalStats``; ``src/inspect_ai/model/_chat_message.py``;
``src/inspect_ai/tool/_tool_call.py``; ``src/inspect_ai/model/_model_output.py``),
so ``inspect_ai.log.read_eval_log`` reads it and ``inspect view`` shows it.
One sample per run:

* ``input``: the task; ``messages``: the system prompt (when recorded), the
  task, then one assistant message per assistant record (with its
  ``tool_calls``) and one tool message per tool record (its value as the
  RFC 8785 JSON text the model saw, or its error); every message's
  ``metadata`` holds its record's ``seq`` and ``hash``;
* ``output``: the last assistant message, with Inspect's stop reason
  (``max_tokens`` for a truncated reply, ``tool_calls``, else ``stop``);
* ``model_usage``: the tokens the provider reported, summed, and the cost;
* ``limit``: the budget the run hit (``turn``, ``token``, ``cost``, ``time``,
  or ``custom`` for ``max_tool_calls``); ``error``: a ``model_error`` stop;
* ``metadata``: the verdict (``verified``), record count, ``head``, origin,
  the file's SHA-256, and the stop reason, detail, steps, tokens and cost.

A batch run without a transcript is a sample with an ``error`` and no
messages.  The log is a pure function of the runs and ``start`` (the
transcript records no date: ``created`` is ``start``, the Unix epoch by
default).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
from decimal import Decimal
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..canonical import canonical_bytes
from .run import FailedRun, Run, as_dict, as_int, as_list

__all__ = ["INSPECT_LOG_VERSION", "inspect_log", "inspect_json", "is_inspect_export", "model_key"]

#: The Inspect eval log format version written (``EvalLog.version``).
INSPECT_LOG_VERSION = 2
#: Every export begins like this (:func:`is_inspect_export`): Inspect's own eval ids never start ``agentloop-``.
_PREFIX = re.compile(
    rb'\A\{\n  "version": 2,\n  "status": "success",\n  "eval": \{\n    "eval_id": "agentloop-[0-9a-f]{24}",\n'
)
#: Budget stops as Inspect sample limits: (limit type, the task record's budget behind it).
_LIMITS = {
    "step_budget": ("turn", "max_steps"),
    "token_budget": ("token", "max_tokens"),
    "cost_budget": ("cost", "max_cost"),
    "time_budget": ("time", "max_seconds"),
    "tool_call_budget": ("custom", "max_tool_calls"),
}

Message = Dict[str, Any]


def model_key(run: Run) -> str:
    """Inspect's ``provider/model`` name of the run's model (``unknown`` for what was not recorded)."""
    model = run.model
    provider = model.get("provider") if isinstance(model.get("provider"), str) else "unknown"
    name = model.get("model") if isinstance(model.get("model"), str) else "unknown"
    return "%s/%s" % (provider, name)


def _iso(start: int) -> str:
    return datetime.datetime.fromtimestamp(start, datetime.timezone.utc).isoformat()


def _meta(record: Dict[str, Any]) -> Dict[str, Any]:
    return {"seq": record.get("seq"), "hash": record.get("hash")}


def _assistant(record: Dict[str, Any], model: str) -> Message:
    payload = as_dict(record.get("payload"))
    calls = []
    for call in as_list(payload.get("tool_calls")):
        c = as_dict(call)
        item: Dict[str, Any] = {
            "id": c.get("id"),
            "function": c.get("name"),
            "arguments": as_dict(c.get("arguments")),
            "type": "function",
        }
        if "arguments_error" in c:
            item["parse_error"] = c.get("arguments_error")
        calls.append(item)
    return {
        "id": str(record.get("hash"))[:16],
        "content": payload.get("text"),
        "source": "generate",
        "role": "assistant",
        "tool_calls": calls or None,
        "model": model,
        "metadata": _meta(record),
    }


def _tool(record: Dict[str, Any]) -> Message:
    payload = as_dict(record.get("payload"))
    ok = payload.get("ok") is True
    message: Message = {
        "id": str(record.get("hash"))[:16],
        "content": canonical_bytes(payload.get("value")).decode("utf-8") if ok else payload.get("error"),
        "role": "tool",
        "tool_call_id": payload.get("id"),
        "function": payload.get("name"),
        "metadata": _meta(record),
    }
    if not ok:
        denied = as_dict(payload.get("approval")).get("decision") in ("deny", "terminate")
        message["error"] = {"type": "approval" if denied else "unknown", "message": payload.get("error")}
    return message


def _messages(run: Run, model: str) -> List[Message]:
    first = run.records[0]
    task, prefix = run.task, str(first.get("hash"))[:16]
    messages: List[Message] = []
    if isinstance(task.get("system"), str):
        messages.append(
            {
                "id": prefix + "-system",
                "content": task["system"],
                "source": "input",
                "role": "system",
                "metadata": _meta(first),
            }
        )
    messages.append(
        {
            "id": prefix + "-user",
            "content": task.get("task"),
            "source": "input",
            "role": "user",
            "metadata": _meta(first),
        }
    )
    for record in run.records[1:]:
        if record.get("kind") == "assistant":
            messages.append(_assistant(record, model))
        elif record.get("kind") == "tool":
            messages.append(_tool(record))
    return messages


def _usage(run: Run) -> Dict[str, Any]:
    """``ModelUsage`` from the usage the provider reported (``{}`` when no turn reported any)."""
    turns = run.assistants()
    usages = [as_dict(p.get("usage")) for p in turns if "usage" in p]
    if not usages:
        return {}
    total: Dict[str, Any] = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    for usage in usages:
        inputs, outputs = as_int(usage.get("input_tokens")) or 0, as_int(usage.get("output_tokens")) or 0
        total["input_tokens"] += inputs
        total["output_tokens"] += outputs
        total["total_tokens"] += inputs + outputs
        for ours, theirs in (
            ("cache_read_tokens", "input_tokens_cache_read"),
            ("cache_write_tokens", "input_tokens_cache_write"),
        ):
            if as_int(usage.get(ours)):
                total[theirs] = total.get(theirs, 0) + (as_int(usage.get(ours)) or 0)
    cost = turns[-1].get("total_cost")
    if isinstance(cost, str):
        total["total_cost"] = float(Decimal(cost))
    return {model_key(run): total}


def _output(run: Run, messages: List[Message], model: str) -> Dict[str, Any]:
    last = next((m for m in reversed(messages) if m["role"] == "assistant"), None)
    if last is None:
        return {"model": model, "choices": [], "completion": ""}
    payload = as_dict(run.assistants()[-1])
    reason = "max_tokens" if payload.get("truncated") is True else "tool_calls" if last["tool_calls"] else "stop"
    usage = as_dict(payload.get("usage"))
    output: Dict[str, Any] = {
        "model": model,
        "choices": [{"message": last, "stop_reason": reason}],
        "completion": last["content"],
    }
    if usage:
        inputs, outputs = as_int(usage.get("input_tokens")) or 0, as_int(usage.get("output_tokens")) or 0
        output["usage"] = {"input_tokens": inputs, "output_tokens": outputs, "total_tokens": inputs + outputs}
    return output


def _limit(run: Run) -> Optional[Dict[str, Any]]:
    stop = run.stop or {}
    kind = _LIMITS.get(str(stop.get("reason")))
    if kind is None:
        return None
    value = as_dict(run.task.get("budgets")).get(kind[1])
    if isinstance(value, str):
        value = float(Decimal(value))
    return (
        {"type": kind[0], "limit": value} if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    )


def _run_metadata(run: Run) -> Dict[str, Any]:
    stop = run.stop
    turns = run.assistants()
    meta: Dict[str, Any] = {
        "verdict": "verified",
        "records": run.verdict.count,
        "head": run.head,
        "origin": run.origin,
        "sha256": run.sha256,
        "complete": stop is not None,
        "stop_reason": stop.get("reason") if stop else None,
        "stop_detail": stop.get("detail") if stop else None,
        "steps": as_int(stop.get("steps")) if stop else len(turns),
        "tokens": as_int(stop.get("tokens")) if stop else (as_int(turns[-1].get("total_tokens")) if turns else 0),
    }
    if turns and isinstance(turns[-1].get("total_cost"), str):
        meta["cost"] = turns[-1]["total_cost"]
    return meta


def _sample(run: Run, number: int) -> Dict[str, Any]:
    model = model_key(run)
    messages = _messages(run, model)
    sample: Dict[str, Any] = {
        "id": run.name if run.name is not None else number,
        "epoch": 1,
        "input": run.task.get("task"),
        "target": "",
        "messages": messages,
        "output": _output(run, messages, model),
        "metadata": _run_metadata(run),
        "model_usage": _usage(run),
        "turn_count": len(run.assistants()),
    }
    limit = _limit(run)
    if limit is not None:
        sample["limit"] = limit
    stop = run.stop or {}
    if stop.get("reason") == "model_error":
        sample["error"] = {"message": "model_error: %s" % (stop.get("detail"),), "traceback": "", "traceback_ansi": ""}
    return sample


def _failed_sample(run: FailedRun) -> Dict[str, Any]:
    message = "%s: %s (the batch has no transcript of this run)" % (run.status, run.why)
    return {
        "id": run.name,
        "epoch": 1,
        "input": "",
        "target": "",
        "metadata": {
            "verdict": "no transcript",
            "origin": run.origin,
            "ledger_status": run.status,
            "ledger_why": run.why,
        },
        "error": {"message": message, "traceback": "", "traceback_ansi": ""},
    }


def _add_usage(total: Dict[str, Dict[str, Any]], usage: Dict[str, Dict[str, Any]]) -> None:
    for model, counts in usage.items():
        into = total.setdefault(model, {})
        for key, value in counts.items():
            into[key] = into.get(key, 0) + value


def _ids(runs: Sequence[Union[Run, FailedRun]]) -> Tuple[str, str]:
    """The eval and run ids: from the runs' heads and origins, so the same runs give the same ids."""
    digest = hashlib.sha256(
        "\n".join(r.head if isinstance(r, Run) else r.origin for r in runs).encode("utf-8")
    ).hexdigest()
    return "agentloop-" + digest[:24], "agentloop-" + digest[24:48]


def inspect_log(runs: Sequence[Union[Run, FailedRun]], *, dataset: str = "agentloop", start: int = 0) -> Dict[str, Any]:
    """The eval log of ``runs`` (one sample each, in order), as a JSON value.

    ``dataset`` names the dataset (the file or the batch); ``start`` is the
    Unix time (seconds) written as ``created``.
    """
    samples = [_sample(r, n) if isinstance(r, Run) else _failed_sample(r) for n, r in enumerate(runs, 1)]
    ok = [r for r in runs if isinstance(r, Run)]
    usage: Dict[str, Dict[str, Any]] = {}
    for sample in samples:
        _add_usage(usage, sample.get("model_usage", {}))
    eval_id, run_id = _ids(runs)
    created = _iso(start)
    return {
        "version": INSPECT_LOG_VERSION,
        "status": "success",
        "eval": {
            "eval_id": eval_id,
            "run_id": run_id,
            "created": created,
            "task": "agentloop",
            "task_version": 0,
            "dataset": {"name": dataset, "samples": len(samples), "sample_ids": [s["id"] for s in samples]},
            "model": model_key(ok[0]) if ok else "unknown/unknown",
            "config": {},
            "metadata": {"exported_by": "agentloop export --inspect", "transcript_format": "agentloop/1"},
        },
        "plan": {"name": "plan", "steps": [{"solver": "agentloop.run", "params": {}}], "config": {}},
        "results": {
            "total_samples": len(samples),
            "completed_samples": sum(1 for r in ok if r.stop is not None),
            "scores": [],
        },
        "stats": {"started_at": created, "completed_at": created, "model_usage": usage},
        "samples": samples,
    }


def inspect_json(runs: Sequence[Union[Run, FailedRun]], *, dataset: str = "agentloop", start: int = 0) -> bytes:
    """:func:`inspect_log` as the bytes written: indented UTF-8 JSON and a newline."""
    log = inspect_log(runs, dataset=dataset, start=start)
    return json.dumps(log, ensure_ascii=False, indent=2, allow_nan=False).encode("utf-8") + b"\n"


def is_inspect_export(head: bytes) -> bool:
    """Whether ``head``, a file's first bytes, begin a log :func:`inspect_json` wrote."""
    return _PREFIX.match(head) is not None
