"""Resume a run from its transcript: after a pause for approval, or after a crash mid-turn.

The transcript already is the saved state.  :func:`read_pending` reads what
waits (the calls of the last assistant record that have no tool record);
:func:`resume` checks the decisions given against it, appends to the same
file and goes on with the loop (:mod:`agentloop.loop.engine`) exactly where it
stopped, so a pause then ``resume`` with decision D writes byte for byte the
file an approver answering D inline writes.  ``docs/approvals.md`` is the guide.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union, cast

from .approval import Approve, ApprovalRequest, Deny, Modify, Terminate
from .budgets import Spent
from .calls import DEFAULT_MAX_WORKERS, Job, SyncRunner, is_async_callable, prepare
from ..canonical import canonical_bytes, canonical_text
from ..errors import RunConfigError
from .engine import Resumed, _drive, _loop
from ..messages import Message, RunResult
from .options import Approver, Clock, OnRecord, RunOptions
from .plan import TurnPlan, plan_from_record
from .start import prepare_run
from ..signing.note import Verifier
from ..tools.registry import Tool, ToolRegistry
from ..transcript.anchor import verify_checkpoint
from ..transcript.checkpoint import ORIGIN_PREFIX
from ..transcript.durable import check_output, lock_exclusive, open_input
from ..transcript.format import PathLike
from ..transcript.verify import iter_file, verify_file
from ..transcript.writer import TranscriptWriter

__all__ = ["PendingCall", "Pending", "read_pending", "resume"]

_DECISIONS = (Approve, Deny, Modify, Terminate)


@dataclass(frozen=True)
class PendingCall:
    """A call of the last turn with no tool record: ``position`` in the turn, its id,
    tool, recorded arguments (``None`` when they were kept out), their SHA-256
    (``""`` then), and the recorded policy of its tool (``"always"``,
    ``"predicate"``, or ``None`` for a tool that needs no approval)."""

    position: int
    call_id: str
    tool: str
    arguments: Optional[Dict[str, Any]]
    arguments_sha256: str
    policy: Optional[str]


@dataclass(frozen=True)
class Pending:
    """What a transcript leaves waiting: the run's ``origin``, the last turn's
    ``step`` and ``assistant_hash``, its unanswered ``calls``, and, for a
    finished run, its stop reason (``stop``; no call waits then)."""

    origin: str
    step: int
    assistant_hash: str
    calls: Tuple[PendingCall, ...]
    stop: Optional[str]
    records: int


@dataclass
class _State:
    """A verified file read back: its records' hashes and what the loop needs to go on."""

    records: List[Dict[str, Any]]
    lines: List[bytes]
    task: Dict[str, Any]
    messages: List[Message]
    spent: Spent
    last_assistant: int  # index of the last assistant record (0: none)
    answered: int  # tool records after it
    stop: Optional[str]


def _read(path: PathLike) -> _State:
    """Read a transcript that verifies (the caller has checked) into a :class:`_State`."""
    records = [cast(Dict[str, Any], record) for _, record, _ in iter_file(path)]
    with open_input(path) as handle:
        lines = handle.readlines()  # a verified file: every line whole, ending in a newline
    task = records[0]["payload"]
    messages: List[Message] = ([{"role": "system", "content": task["system"]}] if "system" in task else []) + [
        {"role": "user", "content": task["task"]}
    ]
    spent = Spent(started=task.get("clock"))
    last, answered, stop = 0, 0, None
    for index, record in enumerate(records[1:], 1):
        kind, payload = record["kind"], record["payload"]
        if kind == "assistant":
            last, answered = index, 0
            spent.steps, spent.tokens = payload["step"], payload["total_tokens"]
            spent.tool_calls += len(payload["tool_calls"])
            if "total_cost" in payload:
                spent.cost = Decimal(payload["total_cost"])
            messages.append(plan_from_record(payload).message())
        elif kind == "tool":
            answered += 1
            ok = payload["ok"]
            content = canonical_text(payload["value"]) if ok is True else payload["error"]
            messages.append(
                {"role": "tool", "tool_call_id": payload["id"], "name": payload["name"], "ok": ok, "content": content}
            )
        elif kind == "stop":
            stop = payload["reason"]
    return _State(records, lines, task, messages, spent, last, answered, stop)


def _verified(path: PathLike) -> None:
    verdict = verify_file(path)
    if not verdict.ok:
        raise RunConfigError("transcript", "%s does not verify: %s" % (path, verdict.faults[0]))


def _pending_of(state: _State) -> Pending:
    first = state.records[0]["hash"]
    policy = state.task.get("approval") if isinstance(state.task.get("approval"), dict) else {}
    if not state.last_assistant:
        return Pending(ORIGIN_PREFIX + first, 0, "", (), state.stop, len(state.records))
    assistant = state.records[state.last_assistant]
    plan = plan_from_record(assistant["payload"])
    calls = []
    if state.stop is None:
        for position, call in enumerate(plan.calls[state.answered :], state.answered):
            sha = "" if call.arguments is None else hashlib.sha256(call.arguments_text.encode("utf-8")).hexdigest()
            rule = policy.get(call.name) if isinstance(policy, dict) else None
            calls.append(
                PendingCall(position, call.id, call.name, call.arguments, sha, rule if isinstance(rule, str) else None)
            )
    return Pending(
        ORIGIN_PREFIX + first,
        assistant["payload"]["step"],
        assistant["hash"],
        tuple(calls),
        state.stop,
        len(state.records),
    )


def read_pending(transcript: PathLike) -> Pending:
    """What waits in ``transcript``: the calls of its last assistant record with no tool record.

    The file must verify (``RunConfigError`` otherwise).  A finished run
    (a stop record) has none; its ``stop`` names the reason.
    """
    _verified(transcript)
    return _pending_of(_read(transcript))


def _first_change(recorded: Dict[str, Any], now: Dict[str, Any]) -> str:
    for name in sorted(set(recorded) | set(now)):
        if name == "clock":
            continue
        if name not in recorded or name not in now or canonical_bytes(recorded[name]) != canonical_bytes(now[name]):
            return name
    return ""


def _combined(decisions: Mapping[str, Any], step: int, approver: Optional[Approver]) -> Optional[Approver]:
    """The approver of the resumed run: ``decisions`` for the pending turn's calls, then ``approver`` (else defer)."""
    if not decisions and approver is None:
        return None
    if approver is not None and is_async_callable(approver):

        async def asynchronous(request: ApprovalRequest) -> Any:
            if request.step == step and request.call_id in decisions:
                return decisions[request.call_id]
            return await approver(request)

        return asynchronous

    def synchronous(request: ApprovalRequest) -> Any:
        if request.step == step and request.call_id in decisions:
            return decisions[request.call_id]
        return None if approver is None else approver(request)

    return synchronous


#: ``resume(clock=RESUMED_CLOCK)``: go on from the last recorded reading, the pause not counted.
RESUMED_CLOCK = "resumed"


def _resumed_clock(records: Sequence[Dict[str, Any]]) -> Clock:
    """``time.monotonic`` moved to go on from the last ``clock`` reading in ``records``."""
    readings = [r["payload"]["clock"] for r in records if isinstance(r["payload"], dict) and "clock" in r["payload"]]
    if not readings:
        raise RunConfigError("clock", "the run has max_seconds and the transcript holds no clock reading to go on from")
    last = readings[-1]
    start = time.monotonic()
    return lambda: last + (time.monotonic() - start)


def _clock_of(
    clock: Union[Clock, str, None], recorded: RunOptions, records: Sequence[Dict[str, Any]]
) -> Optional[Clock]:
    """Step 3 of :func:`resume`: the resumed run's clock (``clock=RESUMED_CLOCK`` made one);
    a run with ``max_seconds`` needs one."""
    resumed = json.dumps(RESUMED_CLOCK)
    if isinstance(clock, str):
        if clock != RESUMED_CLOCK:
            raise RunConfigError("clock", "must be a callable or %s, got %s" % (resumed, json.dumps(clock)))
        clock = _resumed_clock(records) if recorded.max_seconds is not None else None
    if recorded.max_seconds is not None and clock is None:
        raise RunConfigError(
            "clock",
            "the run has max_seconds: resume needs clock=, a clock that goes on from "
            "the recorded readings (clock=%s: the pause not counted)" % (resumed,),
        )
    return clock


def resume(
    transcript: PathLike,
    model: Any,
    tools: Union[ToolRegistry, Iterable[Tool]],
    *,
    decisions: Optional[Mapping[str, Any]] = None,
    approver: Optional[Approver] = None,
    rerun_unrecorded: bool = False,
    anchor: Optional[PathLike] = None,
    trusted: Sequence[Verifier] = (),
    checkpoint: Optional[PathLike] = None,
    key: Optional[bytes] = None,
    signer: Any = None,
    overwrite: bool = False,
    fsync: bool = False,
    on_record: Optional[OnRecord] = None,
    clock: Union[Clock, str, None] = None,
    max_workers: int = DEFAULT_MAX_WORKERS,
    approval_signer: Any = None,
) -> RunResult:
    """Go on with the run in ``transcript``, appending to it; return how it ended (or paused again).

    ``decisions`` maps the id of a pending gated call to ``Approve``,
    ``Deny``, ``Modify`` or ``Terminate``; ``approver`` answers every other
    gated call (the pending ones without a decision, and those of later
    turns); without one they defer, and the run pauses again.  ``model`` and
    ``tools`` must give the recorded task record (the same tools, schemas and
    approval policy, the same model info); the budgets, system prompt and
    output schema are the recorded ones.

    1. The arguments are checked; the file is opened and locked (a live
       writer is refused: ``TranscriptLockedError``).
    2. The file must verify, and must not hold a stop record.  With
       ``anchor`` (the checkpoint written at the pause), the file must be
       exactly the records it covers (``verify_checkpoint(exact=True)``, its
       signatures checked with ``key``/``trusted`` when given): a file edited
       since, every hash recomputed, is refused here.
    3. ``tools`` and ``model`` must give the recorded task record.
    4. The pending calls are read from the file.  Every decision must name a
       pending call that needs approval, and a decision's
       ``arguments_sha256``, when given, must be that call's.  The first
       pending call must be one that needs approval (where a pause stops),
       unless ``rerun_unrecorded=True``: an ungated call with no record may
       have run before a crash, and would run again.
    5. The loop goes on from there: the rest of the turn, then the next turns.

    ``approval_signer`` must be the recorded run's (the task record names
    it), and signs the decisions taken here.
    ``checkpoint``, ``key`` and ``signer`` are as for :func:`agentloop.run`
    (the checkpoint written at the next pause or at the stop; refused if it
    exists unless ``overwrite=True``; keep the pause checkpoint elsewhere to
    prove the two consistent).  A run with ``max_seconds`` needs ``clock=``,
    a clock whose readings go on from the recorded ones; ``clock="resumed"``
    is such a clock, ``time.monotonic`` counted on from the last recorded
    reading, so the time the run spent paused does not count (the command
    line's ``resume`` uses it).  Misuse raises
    :class:`~agentloop.errors.RunConfigError` before anything is appended.
    """
    given = _given(decisions, approver, rerun_unrecorded)  # 1.
    path = os.fspath(transcript)
    flags = (
        os.O_WRONLY
        | os.O_APPEND
        | getattr(os, "O_BINARY", 0)
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_NOCTTY", 0)
    )
    fd = os.open(path, flags)
    owned = True
    try:
        check_output(fd, path)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        lock_exclusive(fd, path)
        state = _unfinished(path, anchor, key, trusted)  # 2.
        # 3.
        task = state.task
        tool_list = tools if isinstance(tools, ToolRegistry) else list(tools)  # a registry keeps its servers
        recorded = RunOptions.from_task_record(task, tool_list)
        options = dataclasses.replace(
            recorded,
            transcript=path,
            overwrite=overwrite,
            fsync=fsync,
            checkpoint=checkpoint,
            key=key if checkpoint is not None else None,
            signer=signer,
            on_record=on_record,
            clock=_clock_of(clock, recorded, state.records),
            max_workers=max_workers,
            approver=_combined(given, 0, approver),
            approval_signer=approval_signer,
        )
        r = prepare_run(task["task"], model, tool_list, options, deferred=True)
        if "predicate_outcomes" not in task:  # a file written before outcomes were recorded goes on without them
            r.task_payload.pop("predicate_outcomes", None)
        changed = _first_change(task, r.task_payload)
        if changed:
            raise RunConfigError(
                "tools", "the model and tools given do not give the recorded task record: its %r differs" % (changed,)
            )
        # 4.
        pending = _pending_of(state)
        plan: Optional[TurnPlan] = None
        if pending.calls:
            plan = plan_from_record(state.records[state.last_assistant]["payload"])
            _check_decisions(r, plan, pending, given, rerun_unrecorded)
        elif given:
            raise RunConfigError(
                "decisions", "call %s is not pending: no call waits in %s" % (json.dumps(next(iter(given))), path)
            )
        r = dataclasses.replace(
            r, task_payload=task, started=task.get("clock"), approver=_combined(given, pending.step, approver)
        )
        out = TranscriptWriter.continuing(
            path, fd, state.lines, fsync=fsync, max_record_bytes=r.budgets.max_record_bytes
        )
        owned = False  # the writer closes fd from here
    finally:
        if owned:
            os.close(fd)
    # 5.
    resumed = Resumed(
        out, state.records[0]["hash"], state.messages, state.spent, plan, state.answered, pending.assistant_hash
    )
    runner = SyncRunner(r.options.max_workers)
    try:
        return _drive(_loop(r, runner, resumed))
    finally:
        runner.close()


def _given(decisions: Optional[Mapping[str, Any]], approver: object, rerun_unrecorded: object) -> Dict[str, Any]:
    """Step 1 of :func:`resume`: the arguments that are not the file's; the decisions as a dict."""
    given: Dict[str, Any] = dict(decisions or {})
    for call_id, decision in given.items():
        if not isinstance(call_id, str) or not isinstance(decision, _DECISIONS):
            raise RunConfigError(
                "decisions",
                "must map call ids (str) to Approve, Deny, Modify or Terminate; "
                "got %s for %s" % (type(decision).__name__, json.dumps(str(call_id))),
            )
    if approver is not None and not callable(approver):
        raise RunConfigError("approver", "must be None or a callable taking an ApprovalRequest")
    if not isinstance(rerun_unrecorded, bool):
        raise RunConfigError("rerun_unrecorded", "must be True or False")
    return given


def _unfinished(path: str, anchor: Optional[PathLike], key: Optional[bytes], trusted: Sequence[Verifier]) -> _State:
    """Step 2 of :func:`resume`: the file verifies, holds no stop record, and is exactly what ``anchor`` covers."""
    _verified(path)
    state = _read(path)
    if state.stop is not None:
        raise RunConfigError(
            "transcript", "%s is a finished run (stop record: %s): nothing to resume" % (path, state.stop)
        )
    if anchor is not None:
        anchored = verify_checkpoint(path, anchor, key=key, trusted=trusted, exact=True)
        if not anchored.ok:
            raise RunConfigError(
                "anchor", "%s does not match the checkpoint %s: %s" % (path, anchor, anchored.faults[0])
            )
    return state


def _check_decisions(r: Any, plan: TurnPlan, pending: Pending, given: Dict[str, Any], rerun_unrecorded: bool) -> None:
    """Step 4 of :func:`resume`: each decision names a pending gated call with its arguments;
    the first pending call is gated."""
    gated: Dict[str, str] = {}
    first_gated: Optional[bool] = None
    for item in pending.calls:
        call = plan.calls[item.position]
        ready = prepare(call, r.registry, r.budgets.tool_timeout)
        needs = isinstance(ready, Job) and call.arguments is not None and ready.tool.needs_approval(call.arguments)
        if first_gated is None:
            first_gated = needs or not isinstance(ready, Job)  # a call failing as data never ran anything
        if needs:
            gated.setdefault(item.call_id, item.arguments_sha256)
    ids = [item.call_id for item in pending.calls]
    for call_id, decision in given.items():
        if call_id not in ids:
            raise RunConfigError(
                "decisions",
                "call %s is not pending (pending: %s)" % (json.dumps(call_id), ", ".join(json.dumps(i) for i in ids)),
            )
        if call_id not in gated:
            raise RunConfigError("decisions", "call %s is pending but needs no approval" % (json.dumps(call_id),))
        if decision.arguments_sha256 is not None and decision.arguments_sha256 != gated[call_id]:
            raise RunConfigError(
                "decisions",
                "the decision for call %s is bound to arguments with SHA-256 %s, but the pending call's are %s"
                % (json.dumps(call_id), decision.arguments_sha256, gated[call_id]),
            )
    if not first_gated and not rerun_unrecorded:
        first = pending.calls[0]
        raise RunConfigError(
            "rerun_unrecorded",
            "call %s (%s) of step %d has no record and needs no approval: it may already "
            "have run before the run ended; pass rerun_unrecorded=True to run it again"
            % (json.dumps(first.call_id), first.tool, pending.step),
        )
