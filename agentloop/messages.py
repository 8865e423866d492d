"""What the loop and a model exchange: messages, replies, tool calls, usage, and how a run ended.

These are plain frozen dataclasses and dict shapes, shared by the loop
(:mod:`agentloop.loop.engine`), the scripted model and the provider adapters
(:mod:`agentloop.models`), so none of them imports another to speak.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import json
from types import MappingProxyType
from typing import Any, Callable, Dict, Iterable, List, Literal, Mapping, Optional, Sequence, Tuple, Union, get_args

from .canonical import MAX_SAFE_INTEGER, describe_integer, snapshot
from .errors import MessageError, UnrecordableError


def shown(value: object) -> str:
    if isinstance(value, (bool, float)) or value is None:
        return repr(value)
    if isinstance(value, int):
        shown = describe_integer(value)
        return shown if shown[:1] != "o" else "an integer " + shown
    if isinstance(value, str):
        return json.dumps(value[:40])
    return "a %s" % (type(value).__name__,)


__all__ = [
    "STOP_REASONS",
    "StopReason",
    "RunEnd",
    "AWAITING_APPROVAL",
    "APPROVAL_DECISIONS",
    "Message",
    "ToolCall",
    "Usage",
    "ModelReply",
    "Model",
    "RunResult",
    "provider_data_problem",
]

#: The closed set of reasons a run stops for (their precedence: :mod:`agentloop.loop.engine`),
#: as a type; :data:`STOP_REASONS` is the same set as a tuple.
StopReason = Literal[
    "no_tool_calls",
    "sentinel",
    "step_budget",
    "token_budget",
    "model_error",
    "final_result",  # the model called final_result with arguments that validate (output_schema=)
    "tool_call_budget",  # the turn's calls would take the run past max_tool_calls
    "cost_budget",  # the running cost exceeds max_cost
    "cost_unknown",  # prices= is set but a turn's cost cannot be counted (no usage, no price)
    "time_budget",  # max_seconds have passed by the clock, read before a turn
    "approval_terminated",  # an approver answered Terminate for a gated call (agentloop.loop.approval)
]
#: The reasons of :data:`StopReason`, in its order.
STOP_REASONS: Tuple[StopReason, ...] = get_args(StopReason)

#: ``RunResult.stop_reason`` of a run paused for a human decision: never written
#: as a stop record (the file ends mid-turn), so not one of :data:`STOP_REASONS`.
AWAITING_APPROVAL: Literal["awaiting_approval"] = "awaiting_approval"
#: How a run ended or paused: ``RunResult.stop_reason``.
RunEnd = Union[StopReason, Literal["awaiting_approval"]]
#: The decisions an ``approval`` member of a tool record may hold (docs/approvals.md).
APPROVAL_DECISIONS = ("approve", "deny", "modify", "terminate")

#: A message the model sees: a plain dict with a ``"role"`` key.  Shapes:
#:
#: * ``{"role": "system", "content": system}`` (first, only when ``run(system=...)`` is given)
#: * ``{"role": "user", "content": task}``
#: * ``{"role": "assistant", "content": text, "tool_calls": [{"id", "name", "arguments"}]}``
#:   (``arguments`` is ``None`` when the model sent arguments that cannot be recorded),
#:   plus ``"provider_data"`` when the reply carried some (:attr:`ModelReply.provider_data`)
#: * ``{"role": "tool", "tool_call_id": id, "name": name, "ok": bool, "content": str}``
#:   (``content`` is the RFC 8785 JSON text of the value when ``ok``, else the error)
Message = Dict[str, Any]


#: ``ToolCall``'s default arguments: read-only, copied into a dict of each call's own.
_NO_ARGUMENTS: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, init=False)
class ToolCall:
    """One tool call the model asks for.  An empty ``id`` is filled in by the
    loop as ``call_<step>_<position>`` (both from 1 and 0 respectively).

    A non-empty ``arguments_error`` says the model's arguments could not be
    read at all (a provider adapter sets it for arguments that are not valid
    JSON).  The loop then treats the call exactly like one with unrecordable
    arguments: ``arguments`` is ignored, the record holds ``"arguments": null``
    and ``"arguments_error"`` (this text, verbatim), and the call fails as data
    with this text as its error.
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""
    arguments_error: str = ""

    def __init__(
        self, name: str, arguments: Mapping[str, Any] = _NO_ARGUMENTS, id: str = "", arguments_error: str = ""
    ) -> None:
        # the generated __init__ of a frozen dataclass and its checks, in one call (not object.__setattr__ per field)
        self.__dict__.update(_call_fields(name, arguments, id, arguments_error))
        if type(self) is not ToolCall:  # a subclass's own __post_init__, as the generated __init__ would call it
            self.__post_init__()

    def __post_init__(self) -> None:
        """The checks again: for a subclass, whose own ``__post_init__`` may call this (``__init__`` calls
        a subclass's, and a dataclass subclass's generated ``__init__`` calls it instead of ``__init__``)."""
        for key, value in _call_fields(self.name, self.arguments, self.id, self.arguments_error).items():
            object.__setattr__(self, key, value)


def _call_fields(name: object, arguments: object, id: object, arguments_error: object) -> Dict[str, Any]:
    """A :class:`ToolCall`'s fields, checked (:class:`MessageError` naming the first bad one); a mapping
    that is not a dict is copied into one."""
    if not isinstance(name, str):
        raise MessageError("ToolCall.name", "must be a str, got %s" % (type(name).__name__,))
    if type(arguments) is not dict:  # a plain dict, the common case, skips the ABC check
        if not isinstance(arguments, Mapping):
            raise MessageError("ToolCall.arguments", "must be a mapping, got %s" % (type(arguments).__name__,))
        if not isinstance(arguments, dict):
            arguments = dict(arguments)  # the default too: a dict of its own
    if not isinstance(id, str):
        raise MessageError("ToolCall.id", "must be a str, got %s" % (type(id).__name__,))
    if not isinstance(arguments_error, str):
        raise MessageError("ToolCall.arguments_error", "must be a str, got %s" % (type(arguments_error).__name__,))
    return {"name": name, "arguments": arguments, "id": id, "arguments_error": arguments_error}


@dataclass(frozen=True)
class Usage:
    """The tokens a provider reported for one turn: its prompt and its reply.

    When a :class:`ModelReply` carries it, the assistant record stores it and
    the turn counts ``input_tokens + output_tokens`` against ``max_tokens``
    instead of :func:`estimate_tokens`.

    ``cache_read_tokens`` and ``cache_write_tokens`` say how many of the
    ``input_tokens`` were read from / written to the provider's prompt cache
    (they are part of ``input_tokens``, never added to it, so their sum cannot
    exceed it); the assistant record holds each only when it is not 0.  Only
    the cost (``run(prices=...)``) tells them apart: they are priced at
    ``cache_read`` / ``cache_write`` and the rest of the input at ``input``.

    ``reasoning_tokens`` says how many of the ``output_tokens`` the model
    spent thinking (OpenAI ``output_tokens_details.reasoning_tokens``,
    Anthropic ``output_tokens_details.thinking_tokens``): part of
    ``output_tokens`` and priced as output; recorded only when not 0.
    """

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __post_init__(self) -> None:
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SAFE_INTEGER:
                raise MessageError("Usage." + name, "must be an int from 0 to 2**53-1, got %s" % (shown(value),))
        if self.cache_read_tokens + self.cache_write_tokens > self.input_tokens:
            raise MessageError(
                "Usage.cache_read_tokens + cache_write_tokens",
                "(%d + %d) exceed input_tokens %d (they are part of it)"
                % (self.cache_read_tokens, self.cache_write_tokens, self.input_tokens),
            )
        if self.reasoning_tokens > self.output_tokens:
            raise MessageError(
                "Usage.reasoning_tokens",
                "%d exceeds output_tokens %d (it is part of it)" % (self.reasoning_tokens, self.output_tokens),
            )

    def recorded(self) -> Dict[str, int]:
        """The assistant record's ``usage`` member: the two counts, and the cache and reasoning counts
        that are not 0."""
        shape = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cache_read_tokens:
            shape["cache_read_tokens"] = self.cache_read_tokens
        if self.cache_write_tokens:
            shape["cache_write_tokens"] = self.cache_write_tokens
        if self.reasoning_tokens:
            shape["reasoning_tokens"] = self.reasoning_tokens
        return shape


#: How deep ``provider_data`` sits in its record (record > payload > provider_data).
PROVIDER_DATA_DEPTH = 2


def provider_data_problem(value: object) -> str:
    """Why ``value`` cannot be a reply's ``provider_data`` ("" when it can): it must be
    ``{"api": str, "items": [object, ...]}`` and nothing else, plain JSON that can be recorded."""
    if not isinstance(value, dict):
        return 'must be a dict {"api": str, "items": [...]}, got %s' % (type(value).__name__,)
    if set(value) != {"api", "items"}:
        return "must have exactly the keys 'api' and 'items', got %s" % (
            ", ".join(repr(k) for k in sorted(map(str, value))) or "none",
        )
    if not isinstance(value["api"], str) or not value["api"]:
        return "['api'] must be a non-empty str naming the provider's API"
    items = value["items"]
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        return "['items'] must be a list of dicts (the provider's own items, as it sent them)"
    return ""


def _provider_data_copy(value: object) -> Dict[str, Any]:
    """A plain-JSON copy of a reply's ``provider_data``, or :class:`MessageError` saying why there is none."""
    try:
        data, _ = snapshot(value, "ModelReply.provider_data", PROVIDER_DATA_DEPTH)
    except UnrecordableError as exc:
        raise MessageError("ModelReply.provider_data", "is not recordable: %s" % (exc,)) from None
    problem = provider_data_problem(data)
    if problem:
        raise MessageError("ModelReply.provider_data", problem)
    copied: Dict[str, Any] = data
    return copied


@dataclass(frozen=True, init=False)
class ModelReply:
    """What the model said in one turn: its text, the tools it asks for,
    (optionally) the :class:`Usage` its provider reported, and whether the
    provider cut the reply short at its output limit (``truncated``: OpenAI
    ``finish_reason: "length"``, Anthropic ``stop_reason: "max_tokens"``).
    A truncated reply is recorded with ``"truncated": true`` in its assistant
    record (the member is absent otherwise).

    ``provider_data`` is what the provider needs back to continue the
    conversation and the loop cannot rebuild from the text and the calls
    (OpenAI Responses reasoning items with their ``encrypted_content``,
    Anthropic ``thinking`` blocks with their signatures):
    ``{"api": name, "items": [the provider's items, as sent]}``.  The loop
    never reads it: it records it as the assistant record's
    ``provider_data`` member and gives it back, unchanged, in the assistant
    message of every later turn (``docs/format.md``); a copy is taken when
    the reply is built."""

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    usage: Optional[Usage] = None
    truncated: bool = False
    provider_data: Optional[Mapping[str, Any]] = None

    def __init__(
        self,
        text: str = "",
        tool_calls: Sequence[ToolCall] = (),
        usage: Optional[Usage] = None,
        truncated: bool = False,
        provider_data: Optional[Mapping[str, Any]] = None,
    ) -> None:
        # the generated __init__ of a frozen dataclass and its checks, in one call (not object.__setattr__ per field)
        self.__dict__.update(_reply_fields(text, tool_calls, usage, truncated, provider_data))
        if type(self) is not ModelReply:  # a subclass's own __post_init__, as the generated __init__ would call it
            self.__post_init__()

    def __post_init__(self) -> None:
        """The checks again: for a subclass, whose own ``__post_init__`` may call this (``__init__`` calls
        a subclass's, and a dataclass subclass's generated ``__init__`` calls it instead of ``__init__``)."""
        fields = _reply_fields(self.text, self.tool_calls, self.usage, self.truncated, self.provider_data)
        for key, value in fields.items():
            object.__setattr__(self, key, value)


def _reply_fields(
    text: object, tool_calls: object, usage: object, truncated: object, provider_data: object
) -> Dict[str, Any]:
    """A :class:`ModelReply`'s fields, checked (:class:`MessageError` naming the first bad one): the
    calls as a tuple, a copy of ``provider_data``."""
    if not isinstance(text, str):
        raise MessageError("ModelReply.text", "must be a str, got %s" % (type(text).__name__,))
    plain = type(tool_calls) is tuple or type(tool_calls) is list  # the common case skips the ABC check
    if not plain and (isinstance(tool_calls, (str, bytes)) or not isinstance(tool_calls, Iterable)):
        raise MessageError(
            "ModelReply.tool_calls", "must be a sequence of ToolCall, got %s" % (type(tool_calls).__name__,)
        )
    calls: Tuple[Any, ...] = tuple(tool_calls)  # type: ignore[arg-type]  # an Iterable, checked above
    for call in calls:
        if not isinstance(call, ToolCall):
            raise MessageError("ModelReply.tool_calls", "must hold ToolCall, got %s" % (type(call).__name__,))
    if usage is not None and not isinstance(usage, Usage):
        raise MessageError("ModelReply.usage", "must be a Usage or None, got %s" % (type(usage).__name__,))
    if not isinstance(truncated, bool):
        raise MessageError("ModelReply.truncated", "must be True or False, got %s" % (type(truncated).__name__,))
    data = None if provider_data is None else _provider_data_copy(provider_data)
    return {"text": text, "tool_calls": calls, "usage": usage, "truncated": truncated, "provider_data": data}


#: A model: any callable ``(messages, manifest) -> ModelReply``.  :func:`agentloop.run_async`
#: (and :func:`agentloop.run`) also take one whose ``__call__`` is ``async def``, and
#: ``run_async`` prefers an ``acall`` coroutine method when the model has one.
Model = Callable[[List[Message], List[Dict[str, Any]]], ModelReply]


@dataclass(frozen=True)
class RunResult:
    """How a run ended.  ``records`` is the number of records written and
    ``head`` the hash of the last one (the ``stop`` record).  ``output`` is
    the run's answer: the last assistant text when the run ended on one
    (``no_tool_calls`` or ``sentinel``); with ``output_schema``, the validated
    (and, for a type, converted) arguments of the ``final_result`` call that
    ended it (``final_result``); ``None`` after any other stop.  ``cost`` is
    the run's total cost in USD as a decimal string when ``prices`` were
    given and every turn's cost was counted, else ``None``.  ``pending`` holds
    the :class:`~agentloop.loop.approval.ApprovalRequest` of each gated call left
    undecided when the run paused (``stop_reason == "awaiting_approval"``:
    no stop record was written), else it is empty."""

    stop_reason: RunEnd
    steps: int
    tokens: int
    records: int
    head: str
    detail: str = ""
    output: Any = None
    cost: Optional[str] = None
    pending: Tuple[Any, ...] = ()
