"""The RFC 8785 texts of the records a loop step writes, assembled from their members' texts.

Each step writes an assistant record and a ``tool`` record per call
(``docs/format.md`` section 3).  Their members are the loop's own counts,
the reply's strings and values already encoded once by a snapshot (a call's
arguments, a tool's result); so in the common shapes below the payload's
RFC 8785 text (section 3.2.3: members sorted by key) is put together from
those texts with one format, instead of being encoded and proven whole.
Every other shape -- a member these functions do not write (``clock``,
``cost``, ``provider_data``, an approval, a call whose arguments are kept out), a string
of a ``str`` subclass or one RFC 7493 refuses, an integer beyond
+/-(2**53 - 1) -- gives ``None``, and the caller encodes the payload as
before (:func:`agentloop.canonical.canonical_text_spliced`), which also
raises the error such a member calls for.  tests/loop/test_encode_once.py
compares the records written so against the same records encoded whole.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from ..canonical import MAX_SAFE_INTEGER, string_text
from .plan import PlannedCall, head_text

__all__ = ["turn_text", "plain_turn_text", "tool_text", "plain_tool_text"]

# The members of an assistant record that turn_text writes: always, and when the reply says so.
_TURN_MEMBERS = frozenset(("step", "text", "tokens", "tool_calls", "total_tokens"))
_TURN_OPTIONAL = _TURN_MEMBERS | {"truncated", "usage"}
_USAGE_MEMBERS = frozenset(
    ("cache_read_tokens", "cache_write_tokens", "input_tokens", "output_tokens", "reasoning_tokens")
)


def _counts(*values: object) -> bool:
    """Whether each of ``values`` is an ``int`` (not a subclass, not a bool) an RFC 8785 record may hold."""
    for value in values:
        if type(value) is not int or not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return False
    return True


def _calls_text(calls: Sequence[PlannedCall]) -> Optional[str]:
    """``[{"arguments", "id", "name"}, ...]`` of calls whose arguments are all recorded (their texts made
    by the plan)."""
    entries = []
    for call in calls:
        head = call.head_text or head_text(call.id, call.name)
        if call.arguments is None or not call.arguments_text or not head:
            return None
        entries.append('{"arguments":%s,%s}' % (call.arguments_text, head))
    return "[%s]" % (",".join(entries),)


def _tail(payload: Dict[str, Any]) -> Optional[str]:
    """The members after ``total_tokens``, in key order: ``"truncated": true`` and ``usage``, when present."""
    tail = ""
    if "truncated" in payload:
        if payload["truncated"] is not True:
            return None
        tail = ',"truncated":true'
    if "usage" in payload:
        usage = payload["usage"]
        if type(usage) is not dict or not _USAGE_MEMBERS.issuperset(usage) or not _counts(*usage.values()):
            return None
        tail += ',"usage":{%s}' % (",".join('"%s":%d' % (name, usage[name]) for name in sorted(usage)),)
    return tail


def turn_text(payload: Dict[str, Any], calls: Sequence[PlannedCall]) -> Optional[str]:
    """The text of an assistant record's payload ``{step, text, tokens, tool_calls, total_tokens}``, with
    ``truncated`` and ``usage`` when present, whose ``tool_calls`` are ``calls`` recorded; ``None`` for
    any other shape."""
    if not _TURN_MEMBERS.issubset(payload) or not _TURN_OPTIONAL.issuperset(payload):
        return None
    tail = _tail(payload) if len(payload) > len(_TURN_MEMBERS) else ""
    if tail is None:
        return None
    return plain_turn_text(payload["step"], payload["text"], payload["tokens"], calls, payload["total_tokens"], tail)


def plain_turn_text(
    step: object, text: object, tokens: object, calls: Sequence[PlannedCall], total: object, tail: str = ""
) -> Optional[str]:
    """The text of an assistant record's payload of exactly ``{step, text, tokens, tool_calls, total_tokens}``
    (its ``tool_calls`` are ``calls`` recorded), followed by ``tail`` (the text of its later members, from
    :func:`_tail`); ``None`` when a member cannot be written so (a ``str`` subclass, a count beyond
    +/-(2**53 - 1), a call whose arguments are kept out...): no payload dict to build for the common turn."""
    if type(step) is not int or type(tokens) is not int or type(total) is not int:  # _counts, inline
        return None
    if not (-MAX_SAFE_INTEGER <= step <= MAX_SAFE_INTEGER and -MAX_SAFE_INTEGER <= tokens <= MAX_SAFE_INTEGER):
        return None
    if not -MAX_SAFE_INTEGER <= total <= MAX_SAFE_INTEGER:
        return None
    text_text = string_text(text)
    calls_text = _calls_text(calls)
    if text_text is None or calls_text is None:
        return None
    return '{"step":%d,"text":%s,"tokens":%d,"tool_calls":%s,"total_tokens":%d%s}' % (
        step,
        text_text,
        tokens,
        calls_text,
        total,
        tail,
    )


def tool_text(result: Dict[str, Any], value_text: str, head: str = "") -> Optional[str]:
    """The text of a ``tool`` record's payload ``{id, name, ok, step}`` plus ``value`` (its text
    ``value_text``, when ``ok``) or ``error`` (a string); ``None`` for any other shape (an approval).
    ``head``, when given, is the :func:`~agentloop.loop.plan.head_text` of the result's ``id`` and
    ``name`` (the planned call's, made once)."""
    if len(result) != 5:
        return None
    step = result["step"]
    head = head or head_text(result["id"], result["name"])
    if not head or not _counts(step):
        return None
    if result["ok"] is True and value_text and "value" in result:
        return plain_tool_text(head, step, value_text)
    error = string_text(result.get("error")) if result["ok"] is False else None
    if error is None:
        return None
    return '{"error":%s,%s,"ok":false,"step":%d}' % (error, head, step)


def plain_tool_text(head: str, step: int, value_text: str) -> Optional[str]:
    """The text of a ``tool`` record's payload ``{id, name, ok: true, step, value}`` from its members' texts:
    ``head`` (:func:`~agentloop.loop.plan.head_text`), the step and the value's text; ``None`` when ``head``
    is ``""`` or the step is not a count a record may hold."""
    if not head or type(step) is not int or not -MAX_SAFE_INTEGER <= step <= MAX_SAFE_INTEGER:
        return None
    return '{%s,"ok":true,"step":%d,"value":%s}' % (head, step, value_text)
