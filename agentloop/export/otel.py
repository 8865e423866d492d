"""A run as OpenTelemetry GenAI spans: one OTLP/JSON ``ExportTraceServiceRequest``.

The conventions followed are :data:`~.semconv.SEMCONV_VERSION` (see
:mod:`.semconv`).  Each run is one trace:

* one ``invoke_agent`` span (kind INTERNAL: the agent runs in-process) for
  the run, from its task record ("Invoke agent internal span");
* one ``chat {model}`` span per assistant record, child of the run span
  (kind CLIENT when the model is a server, INTERNAL otherwise; "Inference"):
  model, provider, token usage, finish reason;
* one ``execute_tool {name}`` span per tool record, child of the run span
  (kind INTERNAL; "Execute tool span"): tool name, call id, ok or error.

Every span carries its record's ``agentloop.record.seq`` and
``agentloop.record.hash``; the ids are the hashes themselves: the trace id
is the first 32 hex digits of the transcript's head, a span id the first
16 of its record's hash.  The same transcript always gives the same spans.
In a batch, two runs may be the same transcript (a deterministic model, the
same task twice), and a collector merges spans that share a trace id: there
a run's trace id is the first 32 hex digits of the SHA-256 of its name, a
newline and its head (:func:`trace_id`).
A transcript records no wall-clock time, so the spans are laid on a logical
timeline: record ``seq`` N spans ``[start + N ms, start + N+1 ms)``, and the
run span covers them all.

Content -- the task, the system prompt, tool definitions, the assistant's
messages, tool-call arguments and results, error and stop texts -- is
written only with ``include_content=True`` ("Recording content on
attributes": opt-in), in structured form.

The JSON follows the OTLP "JSON Protobuf Encoding" (opentelemetry-proto
``docs/specification.md``): lowerCamelCase member names, ids as hex
strings, enums as integers, 64-bit integers as decimal strings.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import semconv as sc
from .run import FailedRun, Run, as_dict, as_int, as_list

__all__ = ["otel_request", "otel_json", "is_otel_export", "trace_id", "SPAN_KIND", "STATUS_CODE"]

#: ``opentelemetry.proto.trace.v1.Span.SpanKind`` values.
SPAN_KIND = {"internal": 1, "server": 2, "client": 3}
#: ``opentelemetry.proto.trace.v1.Status.StatusCode`` values (UNSET is 0: no status written).
STATUS_CODE = {"ok": 1, "error": 2}
#: The logical length of one record on the timeline, in nanoseconds.
TICK = 1_000_000
#: The service every export names (``service.name``), and its instrumentation scope.
SERVICE = "agentloop"
#: Every export begins with these bytes (:func:`is_otel_export`).
_PREFIX = b'{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"agentloop"}}]}'

Attribute = Dict[str, Any]
Span = Dict[str, Any]


def _any(value: object) -> Dict[str, Any]:
    """A JSON value as an OTLP ``AnyValue`` (structured: arrays and objects stay so)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": str(k), "value": _any(v)} for k, v in value.items()]}}
    return {}  # null: an empty AnyValue


def trace_id(head: str, name: Optional[str] = None) -> str:
    """A run's trace id: the first 32 hex digits of ``head`` (its transcript's head, or for a batch run
    without a transcript its origin's hash), or of ``SHA-256(name + "\\n" + head)`` for a batch run ``name``."""
    if name is None:
        return head[:32]
    return hashlib.sha256(("%s\n%s" % (name, head)).encode("utf-8")).hexdigest()[:32]


def _attributes(pairs: Sequence[Tuple[str, object]]) -> List[Attribute]:
    """``KeyValue`` list of the pairs whose value is not ``None``, in order."""
    return [{"key": key, "value": _any(value)} for key, value in pairs if value is not None]


def _server(host: object) -> Tuple[Optional[str], Optional[int]]:
    """``server.address`` and ``server.port`` from a task record's ``host`` (``h``, ``h:p``, ``[v6]:p``)."""
    if not isinstance(host, str) or not host:
        return None, None
    if host.startswith("["):
        address, _, rest = host[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        address, sep, port = host.rpartition(":")
        if not sep:
            address, port = host, ""
    return address or None, int(port) if port.isdigit() and port.isascii() and len(port) <= 5 else None


class _Timeline:
    """Span times: record ``seq`` N at ``start + N`` ticks, one tick long."""

    def __init__(self, start_ns: int) -> None:
        self.start = start_ns

    def at(self, seq: int) -> Tuple[str, str]:
        return str(self.start + seq * TICK), str(self.start + (seq + 1) * TICK)


def _span(
    trace: str,
    span_id: str,
    parent: Optional[str],
    name: str,
    kind: str,
    times: Tuple[str, str],
    attributes: Sequence[Tuple[str, object]],
    error: Optional[str] = None,
) -> Span:
    """One ``Span``; ``error`` (a message, possibly empty) sets its status to ERROR."""
    span: Span = {"traceId": trace, "spanId": span_id}
    if parent is not None:
        span["parentSpanId"] = parent
    span.update(
        {
            "name": name,
            "kind": SPAN_KIND[kind],
            "startTimeUnixNano": times[0],
            "endTimeUnixNano": times[1],
            "attributes": _attributes(attributes),
        }
    )
    if error is not None:
        span["status"] = {"code": STATUS_CODE["error"], "message": error} if error else {"code": STATUS_CODE["error"]}
    return span


def _usage_total(run: Run) -> Tuple[Optional[int], Optional[int]]:
    """Input and output tokens summed over the turns, when every turn reported usage."""
    turns = run.assistants()
    usages = [as_dict(p.get("usage")) for p in turns if "usage" in p]
    if not turns or len(usages) != len(turns):
        return None, None
    return sum(as_int(u.get("input_tokens")) or 0 for u in usages), sum(
        as_int(u.get("output_tokens")) or 0 for u in usages
    )


def _finish_reason(payload: Dict[str, Any]) -> str:
    """``length`` for a truncated reply, ``tool_call`` when it asked for tools, else ``stop``
    (the values of ``gen-ai-output-messages.json``'s ``FinishReason``)."""
    if payload.get("truncated") is True:
        return "length"
    return "tool_call" if as_list(payload.get("tool_calls")) else "stop"


def _output_message(payload: Dict[str, Any]) -> List[Dict[str, Any]]:
    """``gen_ai.output.messages`` of one assistant record."""
    parts: List[Dict[str, Any]] = []
    text = payload.get("text")
    if isinstance(text, str) and text:
        parts.append({"type": "text", "content": text})
    for call in as_list(payload.get("tool_calls")):
        c = as_dict(call)
        parts.append({"type": "tool_call", "id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments")})
    return [{"role": "assistant", "parts": parts, "finish_reason": _finish_reason(payload)}]


class _Trace:
    """The spans of one run, built record by record."""

    def __init__(self, run: Run, content: bool, start_ns: int) -> None:
        self.run = run
        self.content = content
        self.times = _Timeline(start_ns)
        self.trace = trace_id(run.head, run.name)
        self.root = str(run.records[0].get("hash"))[:16]
        model = run.model
        self.model_name = model.get("model") if isinstance(model.get("model"), str) else None
        self.provider = model.get("provider") if isinstance(model.get("provider"), str) else "unknown"
        self.address, self.port = _server(model.get("host"))
        self.calls: Dict[object, Dict[str, Any]] = {}  # call id -> the call, from the last assistant record
        self.descriptions = {
            as_dict(t).get("name"): as_dict(t).get("description") for t in as_list(run.task.get("tools"))
        }

    def _record(self, record: Dict[str, Any]) -> List[Tuple[str, object]]:
        return [(sc.RECORD_SEQ, record.get("seq")), (sc.RECORD_HASH, record.get("hash"))]

    def _model(self) -> List[Tuple[str, object]]:
        return [
            (sc.PROVIDER_NAME, self.provider),
            (sc.REQUEST_MODEL, self.model_name),
            (sc.CONVERSATION_ID, self.run.origin),
            (sc.SERVER_ADDRESS, self.address),
            (sc.SERVER_PORT, self.port),
        ]

    def root_span(self) -> Span:
        run, task, stop = self.run, self.run.task, self.run.stop or {}
        inputs, outputs = _usage_total(run)
        turns = run.assistants()
        attributes = (
            [(sc.OPERATION_NAME, "invoke_agent")]
            + self._model()
            + [
                (sc.USAGE_INPUT_TOKENS, inputs),
                (sc.USAGE_OUTPUT_TOKENS, outputs),
                (sc.RUN_NAME, run.name),
                (sc.STOP_REASON, stop.get("reason")),
                (sc.STEPS, as_int(stop.get("steps")) if stop else len(turns)),
                (
                    sc.TOKENS,
                    as_int(stop.get("tokens")) if stop else as_int(turns[-1].get("total_tokens")) if turns else 0,
                ),
                (sc.COST, turns[-1].get("total_cost") if turns else None),
                (sc.TRANSCRIPT_HEAD, run.head),
                (sc.TRANSCRIPT_RECORDS, len(run.records)),
            ]
            + self._record(run.records[0])
        )
        if self.content:
            system = task.get("system")
            attributes += [
                (sc.SYSTEM_INSTRUCTIONS, [{"type": "text", "content": system}] if isinstance(system, str) else None),
                (sc.INPUT_MESSAGES, [{"role": "user", "parts": [{"type": "text", "content": task.get("task")}]}]),
                (sc.TOOL_DEFINITIONS, [dict(as_dict(t), type="function") for t in as_list(task.get("tools"))] or None),
            ]
        error = None
        if stop.get("reason") == "model_error":
            attributes.append((sc.ERROR_TYPE, "model_error"))
            error = str(stop.get("detail")) if self.content else ""
        last = len(run.records)
        return _span(
            self.trace,
            self.root,
            None,
            "invoke_agent",
            "internal",
            (self.times.at(0)[0], self.times.at(last - 1)[1]),
            attributes,
            error,
        )

    def chat_span(self, record: Dict[str, Any]) -> Span:
        payload = as_dict(record.get("payload"))
        self.calls = {as_dict(c).get("id"): as_dict(c) for c in as_list(payload.get("tool_calls"))}
        usage = as_dict(payload.get("usage"))
        attributes = (
            [(sc.OPERATION_NAME, "chat")]
            + self._model()
            + [
                (sc.RESPONSE_FINISH_REASONS, [_finish_reason(payload)]),
                (sc.USAGE_INPUT_TOKENS, as_int(usage.get("input_tokens"))),
                (sc.USAGE_OUTPUT_TOKENS, as_int(usage.get("output_tokens"))),
                (sc.USAGE_CACHE_READ, as_int(usage.get("cache_read_tokens"))),
                (sc.USAGE_CACHE_CREATION, as_int(usage.get("cache_write_tokens"))),
                (sc.STEP, as_int(payload.get("step"))),
                (sc.TOKENS, as_int(payload.get("tokens"))),
                (sc.COST, payload.get("cost") if isinstance(payload.get("cost"), str) else None),
            ]
            + self._record(record)
        )
        if self.content:
            attributes.append((sc.OUTPUT_MESSAGES, _output_message(payload)))
        name = "chat %s" % (self.model_name,) if self.model_name else "chat"
        kind = "client" if self.address else "internal"
        return _span(
            self.trace,
            str(record.get("hash"))[:16],
            self.root,
            name,
            kind,
            self.times.at(int(record["seq"])),
            attributes,
        )

    def tool_span(self, record: Dict[str, Any]) -> Span:
        payload = as_dict(record.get("payload"))
        name, call_id = payload.get("name"), payload.get("id")
        approval = as_dict(payload.get("approval"))
        ok = payload.get("ok") is True
        attributes = [
            (sc.OPERATION_NAME, "execute_tool"),
            (sc.TOOL_NAME, name),
            (sc.TOOL_CALL_ID, call_id),
            (sc.TOOL_TYPE, "function"),
            (sc.TOOL_DESCRIPTION, self.descriptions.get(name) if isinstance(name, str) else None),
            (sc.STEP, as_int(payload.get("step"))),
            (sc.APPROVAL_DECISION, approval.get("decision")),
        ] + self._record(record)
        if not ok:
            attributes.append((sc.ERROR_TYPE, "tool_error"))
        if self.content:
            arguments = (
                approval["arguments"]
                if approval.get("decision") == "modify"
                else self.calls.get(call_id, {}).get("arguments")
            )
            attributes += [
                (sc.TOOL_CALL_ARGUMENTS, arguments),
                (sc.TOOL_CALL_RESULT, payload.get("value") if ok else None),
            ]
        error = None if ok else (str(payload.get("error")) if self.content else "")
        return _span(
            self.trace,
            str(record.get("hash"))[:16],
            self.root,
            "execute_tool %s" % (name,),
            "internal",
            self.times.at(int(record["seq"])),
            attributes,
            error,
        )

    def spans(self) -> List[Span]:
        out = [self.root_span()]
        for record in self.run.records[1:]:
            if record.get("kind") == "assistant":
                out.append(self.chat_span(record))
            elif record.get("kind") == "tool":
                out.append(self.tool_span(record))
        return out


def _failed_span(run: FailedRun, start_ns: int) -> Span:
    """The one span of a batch run without a transcript: its ledger line, as an error."""
    digest = run.origin.rsplit("/", 1)[-1]
    attributes = [
        (sc.OPERATION_NAME, "invoke_agent"),
        (sc.PROVIDER_NAME, "unknown"),
        (sc.CONVERSATION_ID, run.origin),
        (sc.RUN_NAME, run.name),
        (sc.LEDGER_STATUS, run.status),
        (sc.ERROR_TYPE, run.status),
    ]
    return _span(
        trace_id(digest, run.name),
        digest[32:48],
        None,
        "invoke_agent",
        "internal",
        _Timeline(start_ns).at(0),
        attributes,
        "%s: %s" % (run.status, run.why),
    )


def otel_request(
    runs: Sequence[Union[Run, FailedRun]], *, include_content: bool = False, start_ns: int = 0
) -> Dict[str, Any]:
    """The ``ExportTraceServiceRequest`` of ``runs`` (one trace each), as a JSON value.

    ``start_ns`` is the Unix time, in nanoseconds, at which each run's
    logical timeline begins (default 0: the transcript records no date).
    """
    spans: List[Span] = []
    for run in runs:
        spans.extend(
            _Trace(run, include_content, start_ns).spans() if isinstance(run, Run) else [_failed_span(run, start_ns)]
        )
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes([(sc.SERVICE_NAME, SERVICE)])},
                "scopeSpans": [{"scope": {"name": SERVICE}, "spans": spans, "schemaUrl": sc.SCHEMA_URL}],
                "schemaUrl": sc.SCHEMA_URL,
            }
        ]
    }


def otel_json(runs: Sequence[Union[Run, FailedRun]], *, include_content: bool = False, start_ns: int = 0) -> bytes:
    """:func:`otel_request` as the bytes written and sent: compact UTF-8 JSON and a newline."""
    body = otel_request(runs, include_content=include_content, start_ns=start_ns)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8") + b"\n"


def is_otel_export(head: bytes) -> bool:
    """Whether ``head``, a file's first bytes, begin an export :func:`otel_json` wrote."""
    return head.startswith(_PREFIX)
