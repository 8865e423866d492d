"""Regenerate the hostile transcripts from ``payloads.json``.

    python3 tests/vectors/hostile/make.py

writes, next to this file:

* ``hostile.jsonl`` -- a transcript whose chain VERIFIES and whose every field
  a model or a tool could fill (task, model, sentinel, tool names and
  descriptions, call ids, argument keys and values, results, errors, the stop
  detail; the stop reason is one of the closed set, as the grammar of
  ``agentloop/1`` requires) holds every payload;
* ``hostile-broken.jsonl`` -- the same records with faults mixed in: lines that
  are not JSON, invalid UTF-8, a record that is a JSON string, a rewritten
  payload, a lone surrogate, nesting too deep to encode, an extra field, a
  record whose ``kind`` is a payload and a torn last line, each carrying
  payloads too.

Both are a pure function of ``payloads.json`` (the test suite checks the
files match this script's output).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))

from agentloop import FORMAT, TranscriptWriter  # noqa: E402


def payloads() -> List[str]:
    with open(os.path.join(HERE, "payloads.json"), encoding="utf-8") as handle:
        found = json.load(handle)
    if not found or not all(isinstance(p, str) for p in found):
        raise SystemExit("payloads.json must be a non-empty list of strings")
    return list(found)


def hostile_records(every: List[str]) -> List[Any]:
    """``(kind, payload)`` pairs shaped like what ``run`` writes, full of payloads."""
    joined = "\n".join(every)
    calls: List[Dict[str, Any]] = [{"id": p, "name": p, "arguments": {p: p}} for p in every]
    calls.append({"id": "unrecordable", "name": every[0], "arguments": None, "arguments_error": joined})
    records: List[Any] = [
        (
            "task",
            {
                "format": FORMAT,
                "task": joined,
                "model": {"provider": joined, "model": joined, "host": joined},
                "budgets": {"max_steps": 8, "max_tokens": 2000, "stop_sentinel": joined},
                "tools": [
                    {"name": p, "description": p, "parameters": {"type": "object", "properties": {p: {"type": "string"}}}}
                    for p in every
                ],
            },
        ),
        ("assistant", {"step": 1, "text": joined, "tool_calls": calls, "tokens": 10, "total_tokens": 10}),
    ]
    for position, call in enumerate(calls):
        tool: Dict[str, Any] = {"step": 1, "id": call["id"], "name": call["name"], "ok": position % 2 == 0}
        if position % 2 == 0:
            tool["value"] = {call["name"]: [call["name"], {"nested": call["name"]}]}
        else:
            tool["error"] = call.get("arguments_error", call["name"])
        records.append(("tool", tool))
    records.append(("assistant", {"step": 2, "text": joined * 40, "tool_calls": [], "tokens": 10, "total_tokens": 20}))
    records.append(("stop", {"reason": "no_tool_calls", "steps": 2, "tokens": 20, "detail": joined}))
    return records


def hostile_bytes(every: List[str]) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "h.jsonl")
        with TranscriptWriter(path) as out:
            for kind, payload in hostile_records(every):
                out.append(kind, payload)
        with open(path, "rb") as handle:
            return handle.read()


def broken_bytes(every: List[str]) -> bytes:
    lines = hostile_bytes(every).splitlines(keepends=True)
    first = every[0].encode("utf-8")
    rewritten = json.loads(lines[3])
    rewritten["payload"]["value"] = {"rewritten": every}
    surrogate = lines[4].replace(b'"step":1', b'"step":"\\ud800' + every[2].replace('"', "'").encode("utf-8") + b'"', 1)
    deep = b'{"hash":"x","kind":"deep","payload":' + b"[" * 200 + json.dumps(every[0]).encode("utf-8") + b"]" * 200
    deep += b',"prev":"x","seq":7}\n'
    extra = json.loads(lines[5])
    extra[every[2]] = every
    kind = {"hash": "0" * 64, "kind": every[0], "payload": {p: p for p in every}, "prev": "0" * 64, "seq": 99}
    return b"".join(
        lines[:3]
        + [first + b"\n", b"\xff\xfe " + every[2].encode("utf-8") + b"\n", json.dumps(every[0]).encode("utf-8") + b"\n"]
        + [json.dumps(rewritten, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n", surrogate, deep]
        + [json.dumps(extra, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"]
        + lines[6:]
        + [json.dumps(kind, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"]
        + [b'{"hash":"' + first]
    )


def main() -> int:
    every = payloads()
    for name, data in (("hostile.jsonl", hostile_bytes(every)), ("hostile-broken.jsonl", broken_bytes(every))):
        with open(os.path.join(HERE, name), "wb") as handle:
            handle.write(data)
        print("wrote %s (%d bytes)" % (name, len(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
