"""A turn's plan: the model's tool calls, each read once into what is recorded, shown and run.

:func:`plan_turn` is pure: given a reply, the step and the record size limit,
it returns a frozen :class:`TurnPlan` and touches nothing else.  Each call's
arguments are read once into a plain-JSON snapshot that the record, the model
and the tool all share; arguments that cannot be recorded (or that the
adapter could not read: ``ToolCall.arguments_error``) are kept out of the
record (``arguments: null`` plus the reason), and such a call fails as data
with that reason as its error.

A later decision about a call (an approval: :mod:`agentloop.loop.approval`) is
taken between planning and running, against the planned call's recorded
arguments; :func:`plan_from_record` rebuilds a recorded turn's plan.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..canonical import canonical_text, json_path, placeholder, snapshot, string_text
from ..errors import UnrecordableError
from ..messages import PROVIDER_DATA_DEPTH, Message, ModelReply

__all__ = [
    "PlannedCall",
    "TurnPlan",
    "plan_turn",
    "plan_from_record",
    "head_text",
    "ARGUMENTS_DEPTH",
    "RECORD_OVERHEAD",
]

#: How deep a call's arguments sit in their record (record > payload >
#: tool_calls > call > arguments): :data:`~agentloop.canonical.MAX_DEPTH` bounds the whole record.
ARGUMENTS_DEPTH = 4
#: Room kept in an assistant record for everything but the text and the arguments.
RECORD_OVERHEAD = 4096


@dataclass(frozen=True, init=False)
class PlannedCall:
    """One call as recorded: its ``id`` (the model's, or ``call_<step>_<position>``),
    ``name``, ``arguments`` (a plain-JSON snapshot, ``None`` when not recordable)
    and ``problem`` (``""`` when the call may run, else the error it fails with)."""

    id: str
    name: str
    arguments: Optional[Dict[str, Any]]
    problem: str = ""
    arguments_text: str = field(default="", compare=False, repr=False)  # their RFC 8785 text
    head_text: str = field(default="", compare=False, repr=False)  # '"id":ID,"name":NAME' (head_text), or ""

    def __init__(
        self,
        id: str,
        name: str,
        arguments: Optional[Dict[str, Any]],
        problem: str = "",
        arguments_text: str = "",
        head_text: str = "",
    ) -> None:
        # the generated __init__ of a frozen dataclass, in one call instead of object.__setattr__ per field
        self.__dict__.update(
            id=id, name=name, arguments=arguments, problem=problem, arguments_text=arguments_text, head_text=head_text
        )

    def recorded(self) -> Dict[str, Any]:
        """The call in the assistant record: ``{id, name, arguments}``, plus
        ``arguments_error`` when the arguments are kept out."""
        entry: Dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.arguments is None:
            entry["arguments_error"] = self.problem
        return entry

    def shown(self) -> Dict[str, Any]:
        """The call in the assistant message the model sees next."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, init=False)
class TurnPlan:
    """A reply's calls in the model's order, and the text the token estimate counts
    (the reply's text, each call's name and its arguments' canonical JSON); and the
    reply's ``provider_data`` (a plain-JSON copy), given back to the model unread."""

    text: str
    calls: Tuple[PlannedCall, ...]
    emitted: str
    provider_data: Optional[Dict[str, Any]] = None

    def __init__(
        self, text: str, calls: Tuple[PlannedCall, ...], emitted: str, provider_data: Optional[Dict[str, Any]] = None
    ) -> None:
        self.__dict__.update(text=text, calls=calls, emitted=emitted, provider_data=provider_data)  # as PlannedCall's

    def marked_calls(self) -> Tuple[List[Dict[str, Any]], List[str]]:
        """The assistant record's ``tool_calls`` with each call's recorded arguments replaced by a
        :func:`~agentloop.canonical.placeholder`, and their texts (from the snapshots): to splice
        with :func:`~agentloop.canonical.canonical_text_spliced`, each value encoded once."""
        entries: List[Dict[str, Any]] = []
        texts: List[str] = []
        for call in self.calls:
            entry = call.recorded()
            if call.arguments is not None and call.arguments_text:
                entry["arguments"] = placeholder(len(texts))
                texts.append(call.arguments_text)
            entries.append(entry)
        return entries, texts

    def message(self) -> Message:
        """The assistant message the model sees in later turns."""
        message: Message = {
            "role": "assistant",
            "content": self.text,
            "tool_calls": [call.shown() for call in self.calls],
        }
        if self.provider_data is not None:
            message["provider_data"] = self.provider_data
        return message


def plan_turn(reply: ModelReply, step: int, max_record_bytes: int) -> TurnPlan:
    """Read ``reply``'s calls for step ``step`` (from 1) into a :class:`TurnPlan`.

    Arguments are kept in the record while they fit in it, in order: a call
    whose arguments would push the assistant record past ``max_record_bytes``
    has them kept out instead.  A call id used twice in the turn fails as data.
    """
    calls: List[PlannedCall] = []
    emitted = [reply.text]
    seen = set()
    room = max_record_bytes - _utf8_size(reply.text) - RECORD_OVERHEAD
    data = getattr(reply, "provider_data", None)
    if data is not None:  # plain JSON already (ModelReply, and the loop's check, saw to it)
        data, text = snapshot(data, "$.provider_data", PROVIDER_DATA_DEPTH)
        room -= _utf8_size(text)
    for position, call in enumerate(reply.tool_calls):
        call_id = call.id or "call_%d_%d" % (step, position)
        problem = "call id %s is used twice in this turn" % (json.dumps(call_id),) if call_id in seen else ""
        seen.add(call_id)
        arguments, text, unrecordable = _read_arguments(
            call.name, call.arguments, call.arguments_error, call_id, room, max_record_bytes
        )
        if arguments is None:
            problem = problem or unrecordable
            emitted.append(call.name)
        else:
            room -= _utf8_size(text) + len(call.name) + len(call_id)
            emitted.append(call.name + text)
        calls.append(PlannedCall(call_id, call.name, arguments, problem, text, head_text(call_id, call.name)))
    return TurnPlan(reply.text, tuple(calls), "".join(emitted), data)


def head_text(call_id: object, name: object) -> str:
    """``"id":ID,"name":NAME``, the members an assistant record's call and its ``tool`` record
    share (RFC 8785 section 3.2.3: in key order), encoded once for both; ``""`` unless both
    are plain strings I-JSON allows (:func:`~agentloop.canonical.string_text`)."""
    id_text, name_text = string_text(call_id), string_text(name)
    return "" if id_text is None or name_text is None else '"id":%s,"name":%s' % (id_text, name_text)


def plan_from_record(payload: Dict[str, Any]) -> TurnPlan:
    """The plan of a recorded assistant record (``payload`` of a verified file), as
    :func:`plan_turn` made it: the same calls, ids, arguments and problems.

    :func:`agentloop.resume` uses it to finish a turn a pause or a crash left unfinished.
    """
    calls: List[PlannedCall] = []
    seen = set()
    for call in payload["tool_calls"]:
        call_id, name, arguments = call["id"], call["name"], call["arguments"]
        problem = "call id %s is used twice in this turn" % (json.dumps(call_id),) if call_id in seen else ""
        seen.add(call_id)
        if arguments is None:
            calls.append(PlannedCall(call_id, name, None, call.get("arguments_error", "")))  # recorded as the problem
        else:
            calls.append(PlannedCall(call_id, name, arguments, problem, canonical_text(arguments)))
    return TurnPlan(payload["text"], tuple(calls), "", payload.get("provider_data"))


def _read_arguments(
    name: str, arguments: Any, arguments_error: str, call_id: str, room: int, max_record_bytes: int
) -> Tuple[Optional[Dict[str, Any]], str, str]:
    """``(snapshot, its canonical text, "")``, or ``(None, "", why they are kept out)``."""
    if arguments_error:  # the adapter could not read them: that text is the error, verbatim
        return None, "", arguments_error
    try:
        value, text = snapshot(arguments, _call_path(name), ARGUMENTS_DEPTH)
    except UnrecordableError as exc:
        return None, "", "unrecordable arguments: %s" % (exc,)
    size = _utf8_size(text) + len(name) + len(call_id)
    if size > room:
        reason = "arguments of %d bytes do not fit max_record_bytes %d" % (size, max_record_bytes)
        return None, "", "unrecordable arguments: %s" % (UnrecordableError(_call_path(name), reason),)
    return value, text, ""


def _call_path(name: str) -> str:
    """``json_path("$", name)``: the path of a call's arguments, made once per tool name (a regex match each;
    a ``str`` subclass, which may write itself otherwise, each time)."""
    return _plain_call_path(name) if type(name) is str else json_path("$", name)


_plain_call_path = functools.lru_cache(maxsize=256)(functools.partial(json_path, "$"))


def _utf8_size(text: str) -> int:
    """``len(text.encode("utf-8"))``, without the copy when ``text`` is an ASCII ``str``."""
    return len(text) if type(text) is str and text.isascii() else len(text.encode("utf-8"))
