"""The stand-in's streams: an answer of each API cut into the server-sent events that API would send.

Built from the providers' published event shapes (see agentloop/models/streaming.py for the pages and
the SDK types), so that a test can ask the same content streamed and unstreamed and compare:

* :func:`chat_events` -- ``chat.completion.chunk`` objects: the role, the content and refusal in
  pieces, each tool call's id and name then its arguments in pieces, the finish reason, a usage
  chunk with no choices (``stream_options.include_usage``), then ``[DONE]``;
* :func:`responses_events` -- ``response.created``, ``response.in_progress``, per output item
  ``response.output_item.added``, its content (``response.content_part.added``,
  ``response.output_text.delta`` pieces and ``.done``, ``response.content_part.done``; or
  ``response.function_call_arguments.delta`` pieces and ``.done``; a reasoning item's summary as
  ``response.reasoning_summary_text.delta``), ``response.output_item.done``, and last
  ``response.completed`` (or ``response.incomplete``) carrying the whole response;
* :func:`anthropic_events` -- ``message_start`` (content empty, output_tokens 1), per block
  ``content_block_start`` (its text, input, thinking and signature empty), the deltas
  (``text_delta``, ``input_json_delta``, ``thinking_delta`` then ``signature_delta``),
  ``content_block_stop``, a ``ping``, ``message_delta`` (stop reason, final usage), ``message_stop``.

Each event is ``(event name or None, data)``, data a JSON object or a string; :func:`sse` writes one.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, List, Optional, Tuple, Union

__all__ = ["chat_events", "responses_events", "anthropic_events", "sse", "events_for", "PIECE"]

Data = Union[Dict[str, Any], str]
StreamEvent = Tuple[Optional[str], Data]
#: Characters per text or arguments delta (small, so that every reply comes in several).
PIECE = 4


def _pieces(text: str) -> List[str]:
    return [text[at : at + PIECE] for at in range(0, len(text), PIECE)] or []


def sse(name: Optional[str], data: Data) -> bytes:
    """One event as it goes on the wire (a JSON object compact, as the APIs send it)."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = "event: %s\n" % (name,) if name else ""
    return (head + "data: " + text + "\n\n").encode("utf-8")


def chat_events(body: Dict[str, Any]) -> List[StreamEvent]:
    head = {
        "id": body.get("id"),
        "object": "chat.completion.chunk",
        "created": body.get("created"),
        "model": body.get("model"),
    }
    choice = body["choices"][0]
    message = choice["message"]

    def chunk(delta: Dict[str, Any], finish: Optional[str] = None) -> StreamEvent:
        return None, dict(head, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])

    events = [
        chunk({"role": "assistant", "content": ""} if message.get("content") is not None else {"role": "assistant"})
    ]
    events += [chunk({"content": piece}) for piece in _pieces(message.get("content") or "")]
    events += [chunk({"refusal": piece}) for piece in _pieces(message.get("refusal") or "")]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": function["name"], "arguments": ""},
                        }
                    ]
                }
            )
        )
        arguments = (
            function["arguments"] if isinstance(function["arguments"], str) else json.dumps(function["arguments"])
        )
        events += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}) for piece in _pieces(arguments)
        ]
    events.append(chunk({}, choice.get("finish_reason")))
    if "usage" in body:
        events.append((None, dict(head, choices=[], usage=body["usage"])))
    events.append((None, "[DONE]"))
    return events


def responses_events(body: Dict[str, Any]) -> List[StreamEvent]:
    events: List[StreamEvent] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append((kind, dict({"type": kind, "sequence_number": len(events)}, **fields)))

    start = dict(copy.deepcopy(body), status="in_progress", output=[], usage=None, incomplete_details=None)
    emit("response.created", response=start)
    emit("response.in_progress", response=start)
    for index, item in enumerate(body["output"]):
        _item_events(emit, index, item)
    last = {"completed": "response.completed", "incomplete": "response.incomplete", "failed": "response.failed"}
    emit(last.get(body.get("status", "completed"), "response.completed"), response=body)
    return events


def _item_events(emit: Any, index: int, item: Dict[str, Any]) -> None:
    kind = item["type"]
    empty = copy.deepcopy(item)
    if kind == "message":
        empty["content"], empty["status"] = [], "in_progress"
    elif kind == "function_call":
        empty["arguments"], empty["status"] = "", "in_progress"
    elif kind == "reasoning":
        empty["summary"] = []
    emit("response.output_item.added", output_index=index, item=empty)
    if kind == "message":
        for part_index, part in enumerate(item["content"]):
            ids = dict(item_id=item["id"], output_index=index, content_index=part_index)
            if part["type"] == "output_text":
                emit("response.content_part.added", part=dict(part, text=""), **ids)
                for piece in _pieces(part["text"]):
                    emit("response.output_text.delta", delta=piece, logprobs=[], **ids)
                emit("response.output_text.done", text=part["text"], logprobs=[], **ids)
            else:
                emit("response.content_part.added", part=dict(part, refusal=""), **ids)
                for piece in _pieces(part["refusal"]):
                    emit("response.refusal.delta", delta=piece, **ids)
                emit("response.refusal.done", refusal=part["refusal"], **ids)
            emit("response.content_part.done", part=part, **ids)
    elif kind == "function_call":
        for piece in _pieces(item["arguments"]):
            emit("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece)
        emit(
            "response.function_call_arguments.done", item_id=item["id"], output_index=index, arguments=item["arguments"]
        )
    elif kind == "reasoning":
        for summary_index, part in enumerate(item.get("summary") or []):
            for piece in _pieces(part["text"]):
                emit(
                    "response.reasoning_summary_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    summary_index=summary_index,
                    delta=piece,
                )
    emit("response.output_item.done", output_index=index, item=item)


def anthropic_events(body: Dict[str, Any]) -> List[StreamEvent]:
    events: List[StreamEvent] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append((kind, dict({"type": kind}, **fields)))

    usage = dict(body.get("usage") or {})
    start_usage = dict(usage, output_tokens=1)
    emit(
        "message_start",
        message=dict(copy.deepcopy(body), content=[], stop_reason=None, stop_sequence=None, usage=start_usage),
    )
    for index, block in enumerate(body["content"]):
        _block_events(emit, index, block)
        if index == 0:
            emit("ping")
    emit(
        "message_delta",
        delta={"stop_reason": body.get("stop_reason"), "stop_sequence": body.get("stop_sequence")},
        usage={"output_tokens": usage.get("output_tokens", 0)},
    )
    emit("message_stop")
    return events


def _block_events(emit: Any, index: int, block: Dict[str, Any]) -> None:
    kind = block["type"]
    empty = dict(block)
    if kind == "text":
        empty["text"] = ""
    elif kind == "tool_use":
        empty["input"] = {}
    elif kind == "thinking":
        empty["thinking"], empty["signature"] = "", ""
    emit("content_block_start", index=index, content_block=empty)
    if kind == "text":
        for piece in _pieces(block["text"]):
            emit("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
    elif kind == "tool_use":
        for piece in _pieces(json.dumps(block["input"])):
            emit("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece})
    elif kind == "thinking":
        for piece in _pieces(block["thinking"]):
            emit("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece})
        emit("content_block_delta", index=index, delta={"type": "signature_delta", "signature": block["signature"]})
    emit("content_block_stop", index=index)


def events_for(path: str, body: Dict[str, Any]) -> List[StreamEvent]:
    """The events the API at ``path`` streams for the answer ``body``."""
    if path.endswith("/chat/completions"):
        return chat_events(body)
    if path.endswith("/responses"):
        return responses_events(body)
    return anthropic_events(body)
