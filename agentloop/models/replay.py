"""Replay: a recorded run's replies, given back in order, as a model.

Everything needed to replay a run is in its transcript: the task record
holds the task, the budgets, the tools and (for an adapter's run) the model
info; each assistant record holds a reply (text, tool calls with their ids
and arguments or ``arguments_error``, usage); the tool records hold what the
model was shown next.  :class:`ReplayModel` rebuilds, for every step, the
messages the loop gave the model, and refuses to go on (raises
:class:`~agentloop.errors.ReplayMismatchError`, so the loop stops with
``model_error`` naming the step) when the conversation it is asked to
continue is not the recorded one -- a tool that now answers differently, a
changed tool list.

:func:`replay` re-runs the task with the recorded replies and the tools
given, writes a new transcript and compares it with the original:
:func:`first_difference` is ``None`` when the two files are byte-identical,
else the first record that differs and how.  A run that ended because its
model raised is replayed to the same end: the replay raises an exception of
the recorded name with the recorded message, so the stop record is the same
too.  Not reproducible, and reported as a difference at the stop record: a
run that ended because a reply was of the wrong type or too big to record.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple, Union

from ..loop.approval import ApprovalRequest, RecordedDecision
from ..canonical import canonical_bytes, canonical_text
from ..errors import AgentloopError, ReplayError, ReplayMismatchError, RunConfigError, ToolFailure, UnrecordableError
from ..loop.final import FINAL_RESULT
from ..loop.budgets import BUDGET_NOTE_PREFIX
from ..loop.calls import is_async_callable
from ..loop.engine import MAX_ERROR_CHARS, run_as_recorded
from ..loop.options import RunOptions
from ..loop.plan import plan_from_record
from ..messages import Message, ModelReply, RunResult, ToolCall, Usage
from ..tools.registry import Tool, ToolRegistry, ToolServer
from ..transcript.format import PathLike
from ..transcript.durable import open_input
from ..transcript.verify import iter_file, verify_file

__all__ = ["ReplayModel", "Difference", "ReplayResult", "first_difference", "replay", "REPLAY_REFUSED"]

#: Why a replay with real tools denies a call the recording shows approved (or modified), unless an approver decides.
REPLAY_REFUSED = (
    "replay with real tools: the recorded decision authorised the original run, not this replay; "
    "an approver must decide again (agentloop replay --approve)"
)

_RAISED = "model raised "
_CUT = re.compile(r"\.\.\. \((\d+) characters cut\)\Z")
_SHOWN_CHARS = 80


class _Absent:
    def __repr__(self) -> str:
        return "absent"


_ABSENT = _Absent()


def _same(a: object, b: object) -> bool:
    """JSON equality, type-exact (``true`` is not ``1``), by RFC 8785 text."""
    try:
        return canonical_bytes(a) == canonical_bytes(b)
    except UnrecordableError:
        return repr(a) == repr(b)


def _shown(value: object) -> str:
    if value is _ABSENT:
        return "nothing"
    try:
        text = json.dumps(value, sort_keys=True)  # ASCII, escaped: safe to record and to print
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def _first_change(old: object, new: object, path: str) -> Optional[Tuple[str, object, object]]:
    """The first place where ``old`` and ``new`` differ: ``(path, old value, new value)``, or ``None``."""
    if _same(old, new):
        return None
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            where = (
                "%s.%s" % (path, key)
                if re.match(r"[A-Za-z_][A-Za-z0-9_]*\Z", key)
                else "%s[%s]" % (path, json.dumps(key))
            )
            change = _first_change(old.get(key, _ABSENT), new.get(key, _ABSENT), where)
            if change is not None:
                return change
    if isinstance(old, list) and isinstance(new, list):
        for index in range(min(len(old), len(new))):
            change = _first_change(old[index], new[index], "%s[%d]" % (path, index))
            if change is not None:
                return change
        return ("%s (length)" % (path,), len(old), len(new))
    return (path, old, new)


def _change_text(change: Tuple[str, object, object], old_name: str, new_name: str) -> str:
    path, old, new = change
    return "%s: %s %s, %s %s" % (path, old_name, _shown(old), new_name, _shown(new))


@dataclass(frozen=True)
class _Step:
    before: List[Message]  # the messages the model was given for this step
    reply: ModelReply


class _RecordedFailure(AgentloopError):
    """Raised by a replay where the recorded model raised; named and worded as the recorded exception."""


def _reproduction(detail: str) -> Optional[BaseException]:
    """An exception the loop describes as exactly ``detail`` (``model raised Name: message``), or ``None``."""
    if not detail.startswith(_RAISED):
        return None
    body = detail[len(_RAISED) :]
    cut = _CUT.search(detail)
    if cut is not None and len(detail) - len(cut.group(0)) == MAX_ERROR_CHARS:
        # The loop cut the detail to MAX_ERROR_CHARS: pad the message back to
        # the original length so the loop cuts it the same way.
        body = detail[len(_RAISED) : MAX_ERROR_CHARS] + "." * int(cut.group(1))
    name, _, message = body.partition(": ")
    try:
        kind = type(name, (_RecordedFailure,), {"__module__": __name__})
    except (TypeError, ValueError):
        return None
    failure: BaseException = kind(message)
    return failure


def _uncut(text: str) -> str:
    """A text the loop cuts to exactly ``text`` (``_bounded``): ``text`` itself, or,
    when it ends in the loop's own cut, the prefix padded back to its length."""
    cut = _CUT.search(text)
    if cut is not None and len(text) - len(cut.group(0)) == MAX_ERROR_CHARS:
        return text[:MAX_ERROR_CHARS] + "." * int(cut.group(1))
    return text


def _recorded_results(records: List[Any]) -> List[Tuple[str, bytes, Dict[str, Any]]]:
    """``(name, RFC 8785 arguments, tool payload)`` of each recorded tool record
    whose call had recordable arguments (the only calls a tool is run for)."""
    calls: Dict[Tuple[Any, Any], Any] = {}
    results: List[Tuple[str, bytes, Dict[str, Any]]] = []
    for record in records[1:]:
        kind, payload = record["kind"], record["payload"]
        if kind == "assistant":
            calls = {(payload["step"], c["id"]): c.get("arguments") for c in payload["tool_calls"]}
        elif kind == "tool":
            arguments = calls.get((payload["step"], payload["id"]))
            approval = payload.get("approval")
            if isinstance(approval, dict) and approval.get("decision") == "modify":
                arguments = approval.get("arguments")  # the tool ran with the approver's arguments
            elif isinstance(approval, dict) and approval.get("decision") != "approve":
                continue  # denied or terminated: the tool did not run
            if isinstance(arguments, dict):
                results.append((payload["name"], canonical_bytes(arguments), payload))
    return results


def _gated_calls(records: List[Any]) -> Set[Tuple[str, bytes]]:
    """``(name, RFC 8785 arguments)`` of each call the recording shows gated: those whose tool
    record holds an ``approval`` member, and those a pause left waiting (no stop record)."""
    gated: Set[Tuple[str, bytes]] = set()
    calls: Dict[Any, Any] = {}
    answered: Set[Any] = set()
    for record in records[1:]:
        kind, payload = record["kind"], record["payload"]
        if kind == "assistant":
            calls = {c["id"]: c for c in payload["tool_calls"]}
            answered = set()
        elif kind == "tool":
            answered.add(payload["id"])
            call = calls.get(payload["id"])
            if isinstance(payload.get("approval"), dict) and call is not None and isinstance(call["arguments"], dict):
                gated.add((call["name"], canonical_bytes(call["arguments"])))
    if records and records[-1]["kind"] != "stop":
        gated.update(
            (c["name"], canonical_bytes(c["arguments"]))
            for i, c in calls.items()
            if i not in answered and isinstance(c["arguments"], dict)
        )
    return gated


def _reply(payload: Dict[str, Any]) -> ModelReply:
    calls = []
    for call in payload["tool_calls"]:
        if call["arguments"] is None:
            calls.append(
                ToolCall(call["name"], {}, call["id"], call.get("arguments_error") or "unrecordable arguments")
            )
        else:
            calls.append(ToolCall(call["name"], call["arguments"], call["id"]))
    usage = payload.get("usage")
    return ModelReply(
        payload["text"],
        calls,
        None
        if usage is None
        else Usage(
            usage["input_tokens"],
            usage["output_tokens"],
            usage.get("cache_read_tokens", 0),
            usage.get("cache_write_tokens", 0),
            usage.get("reasoning_tokens", 0),
        ),
        truncated=payload.get("truncated") is True,
        provider_data=payload.get("provider_data"),
    )


class _RecordedSigner:
    """The run's approval signer as its task record names it (``name``, ``key_id``): no key, so it never signs.

    A replay writes the same task record; every recorded decision keeps its
    recorded note, and a new decision, which this cannot sign, is denied
    (fail closed) by the loop.
    """

    def __init__(self, name: str, key_id: str, source: str) -> None:
        self.name = name
        try:
            self.key_id = bytes.fromhex(key_id)
        except ValueError:
            self.key_id = b""
        self._source = source

    def sign(self, message: bytes) -> bytes:
        raise ReplayError(self._source, "a replay holds no approval signer's key: it cannot sign a new decision")


class _RecordedClock:
    """A clock that gives back a run's recorded readings in order (``run(max_seconds=...)``)."""

    def __init__(self, readings: List[Any], source: str) -> None:
        self._readings = iter(readings)
        self._source = source

    def __call__(self) -> Any:
        reading = next(self._readings, None)
        if reading is None:
            raise ReplayError(self._source, "it holds no more clock readings")
        return reading


class _RecordedServer(ToolServer):
    """A tool server as the task record describes it: it describes itself
    exactly so again (:func:`agentloop.tools.registry.tool_sources`), so a
    replay with recorded tools writes the same task record with no server."""

    def __init__(self, member: str, description: Dict[str, Any]) -> None:
        self.record_member = member
        self._description = description

    def describe(self, names: Optional[Iterable[str]] = None) -> Dict[str, Any]:
        return copy.deepcopy(self._description)


@dataclass(frozen=True)
class _RecordedTool(Tool):
    """A stand-in tool that also says where the original came from (an MCP server, say)."""

    origin: Optional[_RecordedServer] = field(default=None, compare=False, repr=False)

    def server(self) -> Optional[ToolServer]:
        return self.origin


def _recorded_origins(task: Mapping[str, Any]) -> Dict[str, _RecordedServer]:
    """Tool name -> the recorded server behind it, from the task record's ``mcp`` member."""
    origins: Dict[str, _RecordedServer] = {}
    servers = task.get("mcp")
    for entry in servers if isinstance(servers, list) else []:
        tools = entry.get("tools") if isinstance(entry, dict) else None
        if isinstance(tools, dict):
            origin = _RecordedServer("mcp", entry)
            for name in tools:
                origins.setdefault(name, origin)
    return origins


class ReplayModel:
    """The replies of a recorded run, in order, as a model; it checks each
    conversation it is asked to continue against the recording.

    Build it with :meth:`from_transcript`.  The step it answers is read from
    the messages (one more than the assistant turns in them), so it holds no
    state and can replay the same run again.
    """

    def __init__(
        self,
        task: Dict[str, Any],
        steps: List[_Step],
        after: List[Message],
        stop: Optional[Dict[str, Any]],
        source: str,
    ) -> None:
        self._task = task
        self._steps = steps
        self._after = after
        self._stop = stop
        self.source = source
        self._readings: List[Any] = []
        self._results: List[Tuple[str, bytes, Dict[str, Any]]] = []
        self._decisions: Dict[Tuple[Any, Any], Dict[str, Any]] = {}
        self._gated: Set[Tuple[str, bytes]] = set()

    @classmethod
    def from_transcript(cls, path: PathLike) -> "ReplayModel":
        """Read a transcript, which must verify; raise :class:`~agentloop.errors.ReplayError` otherwise."""
        name = str(path)
        verdict = verify_file(path)
        if not verdict.ok:
            raise ReplayError(name, "it does not verify: %s" % (verdict.faults[0],))
        records = [record for _, record, _ in iter_file(path)]
        try:
            return cls._build(records, name)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise ReplayError(
                name, "it holds a record this version of agentloop cannot replay (%s: %s)" % (type(exc).__name__, exc)
            ) from None

    @classmethod
    def _build(cls, records: List[Any], source: str) -> "ReplayModel":
        if not records:
            raise ReplayError(source, "it holds no records")
        task = records[0]["payload"]
        system: List[Message] = [{"role": "system", "content": task["system"]}] if "system" in task else []
        messages: List[Message] = system + [{"role": "user", "content": task["task"]}]
        steps: List[_Step] = []
        stop = None
        for record in records[1:]:
            kind, payload = record["kind"], record["payload"]
            if kind == "assistant":
                steps.append(_Step(list(messages), _reply(payload)))
                messages.append(plan_from_record(payload).message())
            elif kind == "tool":
                ok = payload["ok"]
                content = canonical_text(payload["value"]) if ok is True else payload["error"]
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": payload["id"],
                        "name": payload["name"],
                        "ok": ok,
                        "content": content,
                    }
                )
            elif kind == "stop":
                stop = payload
        model = cls(task, steps, messages, stop, source)
        # The clock readings of a max_seconds run, in the order the loop took them.
        model._readings = [r["payload"]["clock"] for r in records if "clock" in r["payload"]]
        model._results = _recorded_results(records)
        model._decisions = {
            (r["payload"]["step"], r["payload"]["id"]): r["payload"]["approval"]
            for r in records
            if r["kind"] == "tool" and isinstance(r["payload"].get("approval"), dict)
        }
        model._gated = _gated_calls(records)
        return model

    @property
    def task(self) -> str:
        """The recorded task."""
        return str(self._task["task"])

    @property
    def task_payload(self) -> Dict[str, Any]:
        """The recorded task record's payload (a copy)."""
        return copy.deepcopy(self._task)

    @property
    def budgets(self) -> Dict[str, Any]:
        """The recorded ``{max_steps, max_tokens, stop_sentinel}``."""
        return dict(self._task["budgets"])

    @property
    def tools(self) -> List[Dict[str, Any]]:
        """The recorded manifest."""
        return list(self._task["tools"])

    @property
    def steps(self) -> int:
        """How many replies the recording holds."""
        return len(self._steps)

    def run_options(self, tools: Union[ToolRegistry, Iterable[Tool]]) -> RunOptions:
        """The recorded run's options (:meth:`RunOptions.from_task_record
        <agentloop.loop.options.RunOptions.from_task_record>`: its budgets, ``system``
        and ``output_schema``, the recorded ``final_result`` parameters when ``tools``
        has no tool of that name), with, for ``max_seconds``, a clock that gives back
        the recorded readings in order, and for gated tools the recorded decisions
        as the approver (:meth:`recorded_approver`)."""
        options = RunOptions.from_task_record(self._task, tools)
        if options.max_seconds is not None:
            options = dataclasses.replace(options, clock=_RecordedClock(self._readings, self.source))
        if isinstance(self._task.get("approval"), dict):
            options = dataclasses.replace(options, approver=self.recorded_approver())
        signer = self._task.get("approval_signer")
        if isinstance(signer, dict):  # named again in the task record; it cannot sign a new decision
            options = dataclasses.replace(
                options,
                approval_signer=_RecordedSigner(str(signer.get("name")), str(signer.get("key_id")), self.source),
            )
        return options

    def again_approver(
        self,
        approver: Optional[Callable[[ApprovalRequest], Any]] = None,
        on_refused: Optional[Callable[[ApprovalRequest], None]] = None,
    ) -> Callable[[ApprovalRequest], Any]:
        """The approver of a replay with real tools: a recorded decision authorised the original run only.

        A recorded denial or termination is taken as recorded (nothing runs);
        a recorded approve or modify is decided again by ``approver``, and
        without one denied (fail closed, :data:`REPLAY_REFUSED`; ``on_refused``
        is told); a call with no recorded decision (the run paused there) goes
        to ``approver``, else defers again.
        """
        decisions = dict(self._decisions)

        def recorded(request: ApprovalRequest) -> Tuple[bool, Any]:
            member = decisions.get((request.step, request.call_id))
            if member is not None and member.get("decision") in ("deny", "terminate"):
                return True, RecordedDecision(dict(member))
            if approver is not None:
                return False, None
            if member is None:
                return True, None
            if on_refused is not None:
                on_refused(request)
            return True, RecordedDecision({"decision": "deny", "by": None, "reason": REPLAY_REFUSED})

        if approver is not None and is_async_callable(approver):

            async def asynchronous(request: ApprovalRequest) -> Any:
                done, answer = recorded(request)
                return answer if done else await approver(request)

            return asynchronous

        def synchronous(request: ApprovalRequest) -> Any:
            done, answer = recorded(request)
            return answer if done or approver is None else approver(request)

        return synchronous

    def recorded_approver(self) -> Callable[[ApprovalRequest], Optional[RecordedDecision]]:
        """The recorded approval decisions as an approver: each gated call gets the decision
        its tool record holds (by step and call id), taken as recorded (who, why, a signed
        note, a fail-closed denial); a call with none -- the run paused there -- defers again."""
        decisions = dict(self._decisions)

        def approver(request: ApprovalRequest) -> Optional[RecordedDecision]:
            member = decisions.get((request.step, request.call_id))
            return None if member is None else RecordedDecision(dict(member))

        return approver

    def recorded_tools(self) -> ToolRegistry:
        """Stand-ins for the recorded tools (``replay(..., tools="recorded")``):
        the recorded manifest, each tool giving back its recorded results
        instead of running anything (no side effects).

        Each call must match a recorded call of that tool, by name and by
        arguments (RFC 8785 equal), not yet answered; it then returns the
        recorded ``value``, or fails (``ToolFailure``) with exactly the
        recorded ``error``.  A call that matches none fails as data saying
        so, and the replay then differs from the original.  Matching by
        name and arguments, not by order, keeps parallel-safe calls right.
        """
        pending = list(self._results)
        lock = threading.Lock()

        def stand_in(name: str) -> Callable[..., Any]:
            def answer(**arguments: Any) -> Any:
                try:
                    key = canonical_bytes(arguments)
                except UnrecordableError:
                    key = b""
                with lock:
                    found = next((i for i, (n, a, _) in enumerate(pending) if n == name and a == key), None)
                    if found is None:
                        raise ToolFailure(
                            "replay with recorded tools: no recorded call of %s with these arguments "
                            "is left to answer: %s" % (json.dumps(name), _shown(arguments))
                        )
                    payload = pending.pop(found)[2]
                if payload.get("ok") is True:
                    return payload.get("value")
                raise ToolFailure(_uncut(str(payload.get("error", ""))))

            return answer

        entries = [e for e in self.tools if isinstance(e, dict) and e.get("name") != FINAL_RESULT]
        recorded = self._task.get("approval")
        policy: Dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        # A predicate is not recorded: a stand-in gates exactly the calls the recording shows gated.
        gated = set(self._gated)

        def rule(name: str) -> Any:
            if policy.get(name) == "always":
                return True
            if policy.get(name) != "predicate":
                return False
            return lambda arguments: (name, canonical_bytes(arguments)) in gated

        origins = _recorded_origins(self._task)
        servers = self._task.get("mcp")
        toolless = [
            _RecordedServer("mcp", entry)
            for entry in (servers if isinstance(servers, list) else [])
            if isinstance(entry, dict) and not entry.get("tools")
        ]  # every tool refused: named all the same
        return ToolRegistry(
            [
                _RecordedTool(
                    e["name"],
                    e["description"],
                    e["parameters"],
                    stand_in(e["name"]),
                    requires_approval=rule(e["name"]),
                    origin=origins.get(e["name"]),
                )
                for e in entries
            ],
            servers=toolless,
        )

    def model_info(self) -> Optional[Dict[str, Any]]:
        """The recorded model info (so the replay's task record is the original's), or ``None``."""
        info = self._task.get("model")
        return dict(info) if isinstance(info, dict) else None

    def _check(
        self, step: int, expected: List[Message], messages: List[Message], manifest: List[Dict[str, Any]]
    ) -> None:
        change = _first_change(self.tools, manifest, "tools")
        if change is not None:
            raise ReplayMismatchError(
                step, "the tools differ from the recorded ones: %s" % (_change_text(change, "recorded", "now"),)
            )
        change = _first_change(expected, list(messages), "messages")
        if change is not None:
            raise ReplayMismatchError(
                step, "the conversation differs from the recorded one: %s" % (_change_text(change, "recorded", "got"),)
            )

    def __call__(self, messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
        if (
            self._task["budgets"].get("tell_budgets") is True
            and messages
            and isinstance(messages[-1], dict)
            and str(messages[-1].get("content")).startswith(BUDGET_NOTE_PREFIX)
        ):
            messages = messages[:-1]  # run(tell_budgets=True)'s transient note: derived, not recorded
        step = 1 + sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        if step <= len(self._steps):
            self._check(step, self._steps[step - 1].before, messages, manifest)
            return self._steps[step - 1].reply
        self._check(step, self._after, messages, manifest)
        if self._stop is not None and self._stop.get("reason") == "model_error":
            failure = _reproduction(str(self._stop.get("detail", "")))
            if failure is not None:
                raise failure
            raise ReplayMismatchError(
                step,
                "the recorded run ended here with a model error a replay cannot reproduce: %s"
                % (self._stop.get("detail"),),
            )
        ending = (
            "it ends without a stop record"
            if self._stop is None
            else "it stopped with %s" % (self._stop.get("reason"),)
        )
        raise ReplayMismatchError(
            step, "the recording holds no reply for step %d (%d recorded; %s)" % (step, len(self._steps), ending)
        )


@dataclass(frozen=True)
class Difference:
    """The first record where two transcripts differ: ``index`` from 0, ``line`` from 1."""

    index: int
    line: int
    detail: str

    def __str__(self) -> str:
        return "record %d (line %d): %s" % (self.index, self.line, self.detail)


def _lines(path: PathLike) -> Iterator[bytes]:
    with open_input(path) as handle:
        for line in handle:
            yield line


def _describe_records(old_line: bytes, new_line: bytes) -> str:
    try:
        old, new = json.loads(old_line), json.loads(new_line)
    except ValueError:
        return "the lines differ and one is not JSON"
    if not isinstance(old, dict) or not isinstance(new, dict):
        return "the lines differ"
    kind = old.get("kind")
    for key in ("kind", "payload", "seq", "prev", "hash"):
        change = _first_change(old.get(key, _ABSENT), new.get(key, _ABSENT), "$." + key)
        if change is not None:
            return "%s record: %s" % (kind, _change_text(change, "original", "replay"))
    return "the bytes differ (%r vs %r)" % (old_line[:40], new_line[:40])


def first_difference(original: PathLike, replayed: PathLike) -> Optional[Difference]:
    """``None`` when the two files are byte-identical, else where they first differ and how."""
    old_lines, new_lines = _lines(original), _lines(replayed)
    index = 0
    while True:
        old, new = next(old_lines, None), next(new_lines, None)
        if old is None and new is None:
            return None
        if old is None or new is None:
            which, extra = ("original", new) if old is None else ("replay", old)
            assert extra is not None
            try:
                kind = json.loads(extra).get("kind")
            except (ValueError, AttributeError):
                kind = None
            return Difference(index, index + 1, "the %s ends before this %s record" % (which, kind))
        if old != new:
            return Difference(index, index + 1, _describe_records(old, new))
        index += 1


@dataclass(frozen=True)
class ReplayResult:
    """A replay's run and how its transcript compares with the original's."""

    original: str
    transcript: str
    run: RunResult
    difference: Optional[Difference]

    @property
    def identical(self) -> bool:
        """Whether the new transcript is byte-identical to the original."""
        return self.difference is None


def replay(
    path: PathLike,
    tools: Union[ToolRegistry, Iterable[Tool], str],
    *,
    transcript: PathLike,
    overwrite: bool = False,
    approver: Optional[Callable[[ApprovalRequest], Any]] = None,
    on_refused: Optional[Callable[[ApprovalRequest], None]] = None,
) -> ReplayResult:
    """Re-run the task of the transcript at ``path`` with its recorded replies
    and ``tools``, write ``transcript``, and compare the two files.

    ``tools`` are the user's real tools, which run again (with whatever side
    effects they have), or ``"recorded"``: then no tool runs, and each call
    gets back its recorded result once its name and arguments match a
    recorded call (:meth:`ReplayModel.recorded_tools`); the new transcript
    must still be byte-identical.  The task, budgets and sentinel are the
    recorded ones.  Raises :class:`~agentloop.errors.ReplayError` if ``path``
    does not verify.

    Approvals: with ``"recorded"`` tools the recorded decisions are fed
    back (nothing runs).  With real tools a recorded approval never runs a
    gated tool: it authorised the original run, not this one.  ``approver``
    decides such calls again; without one they are denied, fail closed
    (:data:`REPLAY_REFUSED`, and ``on_refused(request)`` is called), so the
    replay differs from the original there
    (:meth:`ReplayModel.again_approver`).
    """
    model = ReplayModel.from_transcript(path)
    again = False
    if isinstance(tools, str):
        if tools != "recorded":
            raise RunConfigError("tools", 'must be tools or "recorded", got %s' % (json.dumps(tools[:40]),))
        tools = model.recorded_tools()
    else:
        again = True
    options = model.run_options(tools)
    if again and (options.approver is not None or approver is not None):
        options = dataclasses.replace(options, approver=model.again_approver(approver, on_refused))
    options = dataclasses.replace(options, transcript=transcript, overwrite=overwrite)
    result = run_as_recorded(model.task, model, tools, options, model.task_payload)
    return ReplayResult(str(path), str(transcript), result, first_difference(path, transcript))
