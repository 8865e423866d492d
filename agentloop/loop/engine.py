"""The budgeted tool loop: model turn -> tool calls -> tool results -> repeat.

The loop is :func:`_loop`, one coroutine readable top to bottom in its five
numbered steps; :func:`run` drives it in the caller's thread (it never
suspends there: :class:`~agentloop.loop.calls.SyncRunner` blocks instead), and
:func:`run_async` awaits it on the caller's event loop.  Both write the same
bytes for the same inputs.  The loop touches no random source and reads a
clock only for ``max_seconds`` (below), recording every reading, so the
transcript is a pure function of ``(task, model, tools, budgets, recorded
readings)`` -- whatever the thread scheduling of parallel calls.

Three failure channels, never mixed:

* developer misuse raises at once, before the transcript is created
  (:class:`~agentloop.errors.RunConfigError`, ``SchemaError``, ...);
* model mistakes become ``tool`` records with ``ok: false`` that the model
  sees (unknown tool, unrecordable or invalid arguments, a tool raising or
  timing out, a result that cannot be recorded);
* run stops are one of :data:`~agentloop.STOP_REASONS`, written as the last record.

Stop precedence (pinned by tests), each check in this order:

====================  ====  =================  =====================================================
when                  #     reason             condition
====================  ====  =================  =====================================================
before each turn      1     step_budget        steps >= max_steps
(nothing spent yet)   2     time_budget        reading - start >= max_seconds (or the clock failed)
                      3     cost_unknown       ``prices`` has no entry for the model
the model call        4     model_error        it raised, or its reply is not a recordable ModelReply
after the turn is     5     sentinel           ``stop_sentinel`` is in the reply's text
recorded (its calls   6     final_result       a ``final_result`` call validates (``output_schema``)
not yet run)          7     no_tool_calls      the reply asks for no tools
                      8     token_budget       total tokens > max_tokens
                      9     cost_unknown       the turn's cost cannot be counted (no usage, no price)
                      10    cost_budget        total cost > max_cost
                      11    tool_call_budget   calls run + this turn's calls > max_tool_calls
====================  ====  =================  =====================================================

An answer (5-7) beats a budget (8-11): a reply that ends the run is taken
even from an over-budget turn, since nothing more would be spent.  A stop at
8-11 runs none of the turn's calls ("a turn whose calls would exceed
``max_tool_calls`` runs none of them").  Every call counts against
``max_tool_calls``, whether it fails as data or not.

The clock (``clock=``, default ``time.monotonic``) is read only when
``max_seconds`` is set, at two points: once when the run starts (recorded as
the task record's ``clock``) and once before each turn (recorded as that
turn's assistant record's ``clock``, or the stop record's when the run stops
there).  A replay given the recorded readings writes the same bytes
(:func:`agentloop.models.replay`).  A turn that starts within ``max_seconds``
runs to its end: bound its model call with the adapter's timeout and its
tools with ``timeout``/``tool_timeout``.

Approval (:mod:`agentloop.loop.approval`): in step 5 a call of a tool with
``requires_approval`` runs alone; once its arguments validate the
``approver`` is asked, and its answer runs, denies, modifies or terminates
(``approval_terminated``, written after that call's record) -- or defers:
the run then pauses before the call, with no stop record, the records made
durable and the checkpoint written; :func:`agentloop.resume` goes on.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Coroutine,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
    cast,
)

from .approval import ApprovalRequest, Verdict, approval_policy, closed, judge, seal_closed
from .budgets import Seconds, Spent
from .calls import (
    DEFAULT_MAX_WORKERS,
    AsyncRunner,
    Done,
    Job,
    Raised,
    Runner,
    SyncRunner,
    describe,
    groups,
    prepare,
    run_plain,
)
from ..canonical import MAX_SAFE_INTEGER, canonical_text, canonical_text_spliced, check_string, json_path, placeholder
from ..errors import UnrecordableError
from .final import FINAL_RESULT
from ..messages import (
    AWAITING_APPROVAL,
    PROVIDER_DATA_DEPTH,
    Message,
    Model,
    ModelReply,
    RunEnd,
    RunResult,
    StopReason,
    ToolCall,
    Usage,
    provider_data_problem,
    shown,
)
from .options import Approver, OnRecord, RunOptions, RunOverrides
from .plan import RECORD_OVERHEAD, PlannedCall, TurnPlan, plan_turn
from .prices import add, amount_text, turn_cost
from .records import plain_tool_text, plain_turn_text, tool_text, turn_text
from .start import _Run, prepare_run, read_clock
from ..tools.context import CallContext
from ..tools.registry import Tool, ToolRegistry
from ..transcript.checkpoint import ORIGIN_PREFIX
from ..transcript.writer import TranscriptWriter

if TYPE_CHECKING:
    from typing import Unpack  # PEP 692: a type checker targeting 3.11+ checks run()'s keywords

__all__ = [
    "run",
    "run_async",
    "run_as_recorded",
    "estimate_tokens",
    "approval_policy",
    "Approver",
    "Resumed",
    "MAX_ERROR_CHARS",
    "DEFAULT_MAX_WORKERS",
]


def estimate_tokens(emitted: str) -> int:
    """The seed's heuristic: ``max(1, len(emitted) // 4)``, in code points.

    It bounds the loop; it does not claim to be any model's tokenizer.
    """
    return max(1, len(emitted) // 4)


#: Exception messages and other error texts are cut to this many characters.
MAX_ERROR_CHARS = 2000


def _bounded(text: str) -> str:
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return "%s... (%d characters cut)" % (text[:MAX_ERROR_CHARS], len(text) - MAX_ERROR_CHARS)


def _reply_problem(reply: object) -> str:
    """Why ``reply`` cannot be taken as a turn ("" when it can).

    ``ModelReply`` checks itself when built, but a subclass or
    ``object.__setattr__`` can bypass that, so the loop checks again.
    """
    if not isinstance(reply, ModelReply):
        return "model returned %s, not ModelReply" % (type(reply).__name__,)
    if not isinstance(reply.text, str):
        return "model reply text is %s, not a str" % (type(reply.text).__name__,)
    if not isinstance(reply.tool_calls, tuple):
        return "model reply tool_calls is %s, not a tuple" % (type(reply.tool_calls).__name__,)
    data = getattr(reply, "provider_data", None)
    return (
        _calls_problem(reply.tool_calls)
        or (reply.usage is not None and _usage_problem(reply.usage))  # the two are "" for None: not asked
        or (data is not None and _data_problem(data))
        or _unrecordable(reply)
    )


def _calls_problem(calls: Tuple[object, ...]) -> str:
    for position, call in enumerate(calls):
        if not isinstance(call, ToolCall):
            return "model reply tool_calls[%d] is %s, not a ToolCall" % (position, type(call).__name__)
        if not isinstance(call.name, str) or not isinstance(call.id, str) or not isinstance(call.arguments, dict):
            return "model reply tool_calls[%d] has a name, id or arguments of the wrong type" % (position,)
        if not isinstance(call.arguments_error, str):
            return "model reply tool_calls[%d] has an arguments_error that is not a str" % (position,)
    return ""


def _usage_problem(usage: object) -> str:
    """Why a reply's ``usage`` cannot be counted ("" when it can, or is ``None``)."""
    if usage is None:
        return ""
    counts = [
        getattr(usage, name, None)
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
    ]
    if not isinstance(usage, Usage) or not all(type(n) is int and 0 <= n <= MAX_SAFE_INTEGER for n in counts):
        return "model reply usage is %s, not a Usage of two ints from 0 to 2**53-1" % (type(usage).__name__,)
    if usage.cache_read_tokens + usage.cache_write_tokens > usage.input_tokens:
        return "model reply usage has more cache tokens than input_tokens"
    if usage.reasoning_tokens > usage.output_tokens:
        return "model reply usage has more reasoning tokens than output_tokens"
    return ""


def _data_problem(data: object) -> str:
    """Why a reply's ``provider_data`` cannot be recorded and given back ("" when it can, or is ``None``)."""
    if data is None:
        return ""
    problem = provider_data_problem(data)
    if not problem:
        try:
            canonical_text(data, "$.provider_data", PROVIDER_DATA_DEPTH)
        except UnrecordableError as exc:
            problem = "is not recordable: %s" % (exc,)
    return "model reply provider_data %s" % (problem,) if problem else ""


def _unrecordable(reply: ModelReply) -> str:
    """Why the reply's strings cannot be recorded, naming the first such place ("" when they can)."""
    parts = [reply.text]
    for call in reply.tool_calls:
        parts += (call.name, call.id, call.arguments_error)
    if "".join(parts).isascii():  # (str.join reads each str's own characters) RFC 7493 refuses none of ASCII
        return ""
    try:  # checked, not encoded (the record encodes them once); on a failure, again one by one to name the place
        check_string(reply.text)
        for call in reply.tool_calls:
            check_string(call.name), check_string(call.id), check_string(call.arguments_error)
    except UnrecordableError:
        try:
            canonical_text(reply.text, "$.text")
            for position, call in enumerate(reply.tool_calls):
                canonical_text(call.name, "$.tool_calls[%d].name" % position)
                canonical_text(call.id, "$.tool_calls[%d].id" % position)
                canonical_text(call.arguments_error, "$.tool_calls[%d].arguments_error" % position)
        except UnrecordableError as exc:
            return "model reply is not recordable: %s" % (exc,)
    return ""


#: The payload :meth:`_Recorder.append_text` hands the writer with a payload's text: the writer reads the
#: text alone (:func:`~agentloop.transcript.writer.record_line`), and this can hold nothing.
_NO_PAYLOAD: Mapping[str, Any] = MappingProxyType({})


class _Recorder:
    """The transcript writer, plus ``on_record`` called with each record as written."""

    def __init__(self, out: TranscriptWriter, on_record: Optional[OnRecord], first: str = "") -> None:
        self.out = out
        self.on_record = on_record
        self.first = first  # the hash of record 0: the run's name, in its origin

    def append(
        self,
        kind: str,
        payload: Dict[str, Any],
        marked: Optional[Dict[str, Any]] = None,
        texts: Sequence[str] = (),
        assembled: Optional[str] = None,
    ) -> str:
        """Write one record; ``assembled`` is the payload's text put together from its members'
        texts (:mod:`agentloop.loop.records`), else ``marked`` is the payload with placeholders
        where the values of ``texts`` (already encoded) stand: the record is built around them,
        not encoded again."""
        payload_text = assembled
        if payload_text is None and marked is not None:
            payload_text = canonical_text_spliced(marked, texts, "$.payload", 1)
        if self.on_record is not None:
            return self._tell(kind, payload, payload_text)
        digest = self.out.append(kind, payload, payload_text)
        if not self.first:  # record 0
            self.first = digest
        return digest

    def append_text(self, kind: str, payload_text: str) -> str:
        """:meth:`append` of a record given only as its payload's text, when there is no ``on_record``
        to tell (the caller checks); return its hash."""
        digest = self.out.append(kind, _NO_PAYLOAD, payload_text)  # (the payload is read from its text alone)
        if not self.first:  # record 0
            self.first = digest
        return digest

    def _tell(self, kind: str, payload: Dict[str, Any], payload_text: Optional[str]) -> str:
        """:meth:`append` with ``on_record``: the record written, then told."""
        assert self.on_record is not None
        prev, seq = self.out.head, self.out.count
        digest = self.out.append(kind, payload, payload_text)
        if not seq:
            self.first = digest
        self.on_record({"hash": digest, "kind": kind, "payload": copy.deepcopy(payload), "prev": prev, "seq": seq})
        return digest


@dataclass
class Resumed:
    """Where a resumed run picks up (:mod:`agentloop.resume`): its open writer, the
    conversation and what was spent, and the turn whose calls still wait (if any)."""

    out: TranscriptWriter
    first: str
    messages: List[Message]
    spent: Spent
    plan: Optional[TurnPlan] = None
    answered: int = 0  # how many of the plan's calls have their tool record
    asked_by: str = ""  # the hash of the plan's assistant record


@dataclass(frozen=True)
class _Halt:
    """Step 5 ended the run early: a pause (``awaiting_approval``) or ``approval_terminated``."""

    reason: RunEnd
    detail: str
    pending: Tuple[ApprovalRequest, ...] = ()


def _turn_payload(
    plan: TurnPlan, reply: ModelReply, spent: Spent, tokens: int, cost: Optional[Decimal], reading: Optional[Seconds]
) -> Dict[str, Any]:
    """The assistant record of a turn; members beyond the first five only when they say something."""
    payload: Dict[str, Any] = {
        "step": spent.steps + 1,
        "text": reply.text,
        "tool_calls": [call.recorded() for call in plan.calls],
        "tokens": tokens,
        "total_tokens": spent.tokens + tokens,
    }
    if reply.usage is not None:
        payload["usage"] = reply.usage.recorded()
    if reply.truncated:
        payload["truncated"] = True
    if plan.provider_data is not None:
        payload["provider_data"] = plan.provider_data
    if cost is not None and spent.cost is not None:
        payload["cost"], payload["total_cost"] = amount_text(cost), amount_text(add(spent.cost, cost))
    if reading is not None:
        payload["clock"] = reading
    return payload


class _Ending:
    """How a run ends: its stop record (none for a pause, whose records are
    made durable first) and checkpoint, then the :class:`RunResult`."""

    def __init__(
        self, r: _Run, spent: Spent, record: "_Recorder", out: TranscriptWriter, messages: List[Message]
    ) -> None:
        self.r, self.spent, self.record, self.out, self.messages = r, spent, record, out, messages

    def both(self) -> Tuple[Callable[..., RunResult], Callable[[_Halt], RunResult]]:
        return self.stop, self.halt

    def _checkpoint(self) -> bool:
        """Write the run's checkpoint, if it has one (the records made durable first); whether it has."""
        options = self.r.options
        if options.checkpoint is None:
            return False
        self.out.checkpoint(options.checkpoint, options.key, options.signer)
        return True

    def stop(self, reason: StopReason, detail: str, reading: Optional[Seconds] = None, output: Any = None) -> RunResult:
        spent = self.spent
        payload: Dict[str, Any] = {
            "reason": reason,
            "steps": spent.steps,
            "tokens": spent.tokens,
            "detail": _bounded(detail),
        }
        if reading is not None:
            payload["clock"] = reading
        self.record.append("stop", payload)
        self._checkpoint()
        if reason in ("no_tool_calls", "sentinel"):
            output = self.messages[-1]["content"]
        cost = amount_text(self.spent.cost) if self.r.price is not None and self.spent.cost is not None else None
        return RunResult(
            reason, self.spent.steps, self.spent.tokens, self.out.count, self.out.head, _bounded(detail), output, cost
        )

    def halt(self, ended: _Halt) -> RunResult:
        if ended.reason != AWAITING_APPROVAL:
            return self.stop(ended.reason, ended.detail)
        # A pause: no stop record.  The records (and the file's name) are made durable, then the checkpoint is written.
        if not self._checkpoint():
            self.out.sync()
        cost = amount_text(self.spent.cost) if self.r.price is not None and self.spent.cost is not None else None
        return RunResult(
            AWAITING_APPROVAL,
            self.spent.steps,
            self.spent.tokens,
            self.out.count,
            self.out.head,
            _bounded(ended.detail),
            None,
            cost,
            ended.pending,
        )


def _opened(r: _Run, resumed: Optional[Resumed]) -> Tuple[Spent, TranscriptWriter]:
    """What the run has spent and the writer it appends with: new ones, or a resumed run's."""
    if resumed is not None:
        return resumed.spent, resumed.out
    options = r.options
    assert options.transcript is not None  # prepare_run requires it
    writer = TranscriptWriter(
        options.transcript,
        overwrite=options.overwrite,
        fsync=options.fsync,
        max_record_bytes=r.budgets.max_record_bytes,
        tree=options.checkpoint is not None,  # only a checkpoint asks for the root: no tree kept without one
    )
    return Spent(started=r.started), writer


def _turn_stop(r: _Run, reply: ModelReply, plan: TurnPlan, spent: Spent) -> Optional[Tuple[StopReason, str, None, Any]]:
    """Step 4 of :func:`_loop`: the stop a recorded turn calls for (5-11 of the precedence, in order), or ``None``.

    As :meth:`_Ending.stop`'s arguments: reason, detail, no clock reading, the output.
    """
    if r.budgets.stop_sentinel is not None and r.budgets.stop_sentinel in reply.text:
        sentinel = shown(r.budgets.stop_sentinel)
        return "sentinel", "the assistant's text contains the stop sentinel %s" % (sentinel,), None, None
    answer = None if r.final is None else r.final.answer(plan)
    if answer is not None:
        detail = "the model called %s with valid arguments (call %d of step %d); %d other tool call(s) not run" % (
            FINAL_RESULT,
            answer[0],
            spent.steps,
            len(plan.calls) - 1,
        )
        return "final_result", detail, None, answer[1]
    if not plan.calls:
        return "no_tool_calls", "the assistant asked for no tools", None, None
    due = r.budgets.after_turn(spent, len(plan.calls))
    return None if due is None else (due.reason, due.detail, None, None)


async def _loop(r: _Run, runner: Runner, resumed: Optional[Resumed] = None) -> RunResult:
    """The run, step by step (the module docstring has the stop precedence)."""
    spent, writer = _opened(r, resumed)
    with writer as out:
        record = _Recorder(out, r.options.on_record)
        if resumed is None:
            record.append("task", r.task_payload)
            messages = r.first_messages()
        else:
            record.first, messages = resumed.first, resumed.messages

        stop, halt = _Ending(r, spent, record, out, messages).both()
        # Under SyncRunner, a lone call that it would run as a plain call runs so here (no coroutine, no
        # runner), and a model its first ask found sync is called without a coroutine from then on.
        plain = isinstance(runner, SyncRunner)
        ask: Optional[PlainAsk] = None

        if resumed is not None and resumed.plan is not None:  # the turn a pause (or a crash) left unfinished
            ended = await _run_calls(
                r, runner, resumed.plan, spent.steps, record, messages, resumed.asked_by, resumed.answered
            )
            if ended is not None:
                return halt(ended)

        while True:
            # 1. Before the turn, nothing of it spent: read the clock (max_seconds
            #    only) and check the budgets that need nothing of the turn.
            reading, clock_problem = read_clock(r.clock) if r.clock is not None else (None, "")
            if clock_problem:
                return stop("time_budget", "max_seconds cannot be checked: %s" % (clock_problem,))
            due = r.budgets.before_turn(spent, reading, r.price, r.model_name)
            if due is not None:
                return stop(due.reason, due.detail, reading)

            # 2. One model turn; an Exception, a non-ModelReply or a reply that
            #    cannot be recorded is a model_error.
            shown_messages = (
                messages + [{"role": "user", "content": r.budgets.note(spent, reading)}]
                if r.budgets.tell_budgets
                else messages
            )
            try:
                reply = (
                    await runner.ask(r.model, shown_messages, r.manifest)
                    if ask is None
                    else ask(r.model, shown_messages, r.manifest)
                )
                ask = _plain_asker(runner, ask)
            except Exception as exc:
                return stop("model_error", "model raised %s" % (describe(exc),), reading)
            problem = _reply_problem(reply)
            if problem:
                return stop("model_error", problem, reading)

            # 3. Record the turn: its calls planned (arguments read once, kept
            #    out of the record when they cannot be recorded), its tokens
            #    (reported usage, else the estimate) and its cost counted.
            plan = plan_turn(reply, spent.steps + 1, r.budgets.max_record_bytes)
            tokens = (
                estimate_tokens(plan.emitted)
                if reply.usage is None
                else reply.usage.input_tokens + reply.usage.output_tokens
            )
            cost, cost_problem = turn_cost(r.price, reply.usage) if r.price is not None else (None, "")
            try:
                asked_by = _record_turn(record, plan, reply, spent, tokens, cost, reading)
            except UnrecordableError as exc:  # only a reply over max_record_bytes
                return stop("model_error", "model reply is not recordable: %s" % (exc,), reading)
            r.budgets.charge(spent, tokens, r.price is not None, cost, cost_problem)
            messages.append(plan.message())

            # 4. The stops a recorded turn can trigger, in their fixed order.
            ended_turn = _turn_stop(r, reply, plan, spent)
            if ended_turn is not None:
                return stop(*ended_turn)

            # 5. Run the calls (parallel-safe ones together, a gated one alone
            #    once its approver said so); every failure is a result the
            #    model sees, recorded in the model's order.
            spent.tool_calls += len(plan.calls)
            ended = (
                None
                if _ran_plainly(r, plain, plan, spent.steps, record, messages)
                else await _run_calls(r, runner, plan, spent.steps, record, messages, asked_by)
            )
            if ended is not None:
                return halt(ended)


def _record_turn(
    record: _Recorder,
    plan: TurnPlan,
    reply: ModelReply,
    spent: Spent,
    tokens: int,
    cost: Optional[Decimal],
    reading: Optional[Seconds],
) -> str:
    """Write a turn's assistant record (:func:`_turn_payload`), each call's arguments encoded once (by the
    plan): the payload's text assembled around them, else built around them with placeholders; return its
    hash.  The common turn's text (its five members only, nobody told of the record) is assembled from the
    members themselves, without the payload dict."""
    if (
        record.on_record is None
        and reading is None
        and cost is None
        and reply.usage is None
        and not reply.truncated
        and plan.provider_data is None
    ):
        text = plain_turn_text(spent.steps + 1, plan.text, tokens, plan.calls, spent.tokens + tokens)
        if text is not None:
            return record.append_text("assistant", text)
    payload = _turn_payload(plan, reply, spent, tokens, cost, reading)
    assembled = turn_text(payload, plan.calls)
    if assembled is not None:
        return record.append("assistant", payload, assembled=assembled)
    calls, texts = plan.marked_calls()
    return record.append("assistant", payload, dict(payload, tool_calls=calls), texts)


def _request(r: _Run, record: _Recorder, step: int, call: PlannedCall, asked_by: str) -> ApprovalRequest:
    text = call.arguments_text or canonical_text(call.arguments)
    return ApprovalRequest(
        ORIGIN_PREFIX + record.first,
        step,
        call.id,
        call.name,
        json.loads(text),
        hashlib.sha256(text.encode("utf-8")).hexdigest(),
        asked_by,
    )


def _identified(item: Union[Done, Job], record: _Recorder, step: int, call: PlannedCall) -> Union[Done, Job]:
    """A job whose tool takes a ``CallContext`` gets this call's: the same key whenever this call runs again."""
    if not isinstance(item, Job) or item.tool.context is None:
        return item
    context = CallContext.of(ORIGIN_PREFIX + record.first, step, call.id, call.name)
    return Job(item.tool, item.arguments, item.timeout, context)


def _gate(r: _Run, item: Union[Done, Job], call: PlannedCall) -> Optional[bool]:
    """For a call of a gated tool that passed its checks: whether it waits for the approver
    (a predicate asked once); ``None`` for any other call, and for a predicate's "no" in a run
    resumed from a file written before outcomes were recorded (it stays as it was)."""
    if not isinstance(item, Job) or call.arguments is None or not item.tool.gated:
        return None
    gate = item.tool.needs_approval(call.arguments)
    if gate is False and r.task_payload.get("predicate_outcomes") is not True:
        return None
    return gate


def _gated(r: _Run, item: Union[Done, Job], call: PlannedCall) -> bool:
    """Whether a call that passed its checks waits for the approver."""
    return _gate(r, item, call) is True


def _decided(result: Dict[str, Any], verdict: Optional[Verdict], gate: Optional[bool]) -> None:
    """The gate's outcome in a ``tool`` record: the decision taken, or ``"gated": false`` when a
    predicate let the call through unasked (``predicate_outcomes``); nothing for an ungated tool."""
    if verdict is not None:
        result["approval"] = verdict.member()
    elif gate is False:
        result["gated"] = False


def _act(verdict: Verdict, job: Job, call: PlannedCall) -> Union[Done, Job]:
    """The call as the decision leaves it: the job (approve), another job (a valid modify) or its failure."""
    if verdict.decision == "approve":
        return job
    if verdict.decision == "modify" and verdict.arguments is not None:
        error = job.tool.first_error(verdict.arguments, json_path("$", call.name))
        if error is not None:
            return (
                False,
                "invalid arguments (modified by %s): %s" % (json.dumps(verdict.by, ensure_ascii=False), error),
                "",
            )
        return Job(job.tool, json.loads(verdict.arguments_text), job.timeout, job.context)
    return False, verdict.error(), ""


async def _decide(r: _Run, runner: Runner, request: ApprovalRequest) -> Optional[Verdict]:
    """Ask the approver; an ``Exception`` from it denies (fail closed), ``KeyboardInterrupt`` propagates."""
    try:
        answer = await runner.decide(r.approver, request)
    except Exception as exc:
        return seal_closed(closed("the approver raised %s" % (describe(exc),)), request, r.options.approval_signer)
    verdict = judge(answer, request, r.budgets.max_record_bytes - RECORD_OVERHEAD, r.options.approval_signer)
    return seal_closed(verdict, request, r.options.approval_signer)


async def _run_calls(
    r: _Run,
    runner: Runner,
    plan: TurnPlan,
    step: int,
    record: _Recorder,
    messages: List[Message],
    asked_by: str,
    start: int = 0,
) -> Optional[_Halt]:
    """Step 5: each group's calls started together, their outcomes recorded in order as they come.

    A gated call is a group of its own: validated, then decided, then run
    (or not).  Returns a :class:`_Halt` when an approver deferred (nothing of
    the call done) or terminated (after the call's record); ``start`` skips
    the calls a resumed file already answers.
    """
    for whole in groups(plan.calls, r.registry):
        group = [position for position in whole if position >= start] if start else whole
        if not group:
            continue
        ready = [
            _identified(prepare(plan.calls[p], r.registry, r.budgets.tool_timeout), record, step, plan.calls[p])
            for p in group
        ]
        verdict: Optional[Verdict] = None
        gate = _gate(r, ready[0], plan.calls[group[0]]) if len(group) == 1 else None  # a gated call is a group of one
        if gate:
            call = plan.calls[group[0]]
            request = _request(r, record, step, call, asked_by)
            verdict = await _decide(r, runner, request)
            if verdict is None:
                return _pause(r, record, plan, step, group[0], request, asked_by)
            ready[0] = _act(verdict, cast(Job, ready[0]), call)
        handles = iter(runner.start([item for item in ready if isinstance(item, Job)]))
        for position, item in zip(group, ready):
            handle = next(handles) if isinstance(item, Job) else item
            outcome = handle if type(handle) is tuple else await runner.wait(handle)  # a Done as it is: no await
            if isinstance(outcome, Raised):  # KeyboardInterrupt, SystemExit...: the records so far stand
                raise outcome.exception
            _record_outcome(record, step, plan.calls[position], outcome, verdict, gate, messages)
        if verdict is not None and verdict.decision == "terminate":
            call = plan.calls[group[0]]
            return _Halt(
                "approval_terminated",
                "%s terminated the run at call %s (%s) of step %d: %s"
                % (
                    json.dumps(verdict.by, ensure_ascii=False),
                    json.dumps(call.id, ensure_ascii=False),
                    call.name,
                    step,
                    verdict.reason or "(no reason given)",
                ),
            )
    return None


#: :meth:`SyncRunner.ask_plainly`: a sync model's turn, asked without a coroutine.
PlainAsk = Callable[[Any, List[Message], List[Dict[str, Any]]], Any]


def _plain_asker(runner: Runner, ask: Optional[PlainAsk]) -> Optional[PlainAsk]:
    """After a turn: how to ask the model from then on without a coroutine (``ask``, once found), ``None``
    to await it (an :class:`AsyncRunner`, an async model)."""
    if ask is not None or not isinstance(runner, SyncRunner):
        return ask
    return runner.plain_asker()


def _ran_plainly(r: _Run, plain: bool, plan: TurnPlan, step: int, record: _Recorder, messages: List[Message]) -> bool:
    """Step 5 for a turn of one call that :func:`~agentloop.loop.calls.run_plain` runs (a plain tool, valid
    arguments): run, and recorded as :func:`_run_calls` records it; ``False``, nothing done, for any other turn."""
    if not plain or len(plan.calls) != 1:
        return False
    call = plan.calls[0]
    outcome = run_plain(call, r.registry, r.budgets.tool_timeout)
    if outcome is None:
        return False
    ok, _, text = outcome
    assembled = plain_tool_text(call.head_text, step, text) if ok and text and record.on_record is None else None
    if assembled is not None:
        try:
            record.append_text("tool", assembled)  # a value, recorded without its result dict: nobody is told
        except UnrecordableError:  # a result over max_record_bytes, nothing written: as _record_outcome records it
            assembled = None
    if assembled is None:
        _record_outcome(record, step, call, outcome, None, None, messages)
        return True
    messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "ok": True, "content": text})
    return True


def _record_outcome(
    record: _Recorder,
    step: int,
    call: PlannedCall,
    outcome: Done,
    verdict: Optional[Verdict],
    gate: Optional[bool],
    messages: List[Message],
) -> None:
    """A call's ``tool`` record (with the gate's outcome) and the message the model sees of it; a result
    over ``max_record_bytes`` is recorded as the call's failure."""
    ok, value, text = outcome
    result: Dict[str, Any] = {"step": step, "id": call.id, "name": call.name, "ok": ok}
    result["value" if ok else "error"] = value if ok else _bounded(value)
    if verdict is not None or gate is not None:
        _decided(result, verdict, gate)
    try:
        # the value was encoded once, by its snapshot: the record is built around that text
        assembled = tool_text(result, text, call.head_text)
        marked = dict(result, value=placeholder(0)) if assembled is None and ok and text else None
        record.append("tool", result, marked, [text], assembled)
    except UnrecordableError as exc:  # a result over max_record_bytes
        ok, value, text = False, "tool %r returned an unrecordable result: %s" % (call.name, exc), ""
        result = {"step": step, "id": call.id, "name": call.name, "ok": ok, "error": value}
        _decided(result, verdict, gate)
        record.append("tool", result)
    messages.append(
        {
            "role": "tool",
            "tool_call_id": call.id,
            "name": call.name,
            "ok": ok,
            "content": text if ok else result["error"],
        }
    )


def _pause(
    r: _Run, record: _Recorder, plan: TurnPlan, step: int, position: int, request: ApprovalRequest, asked_by: str
) -> _Halt:
    """The halt of a deferred call: its request, and those of the gated calls after it in the turn (not yet asked)."""
    pending = [request]
    for later in range(position + 1, len(plan.calls)):
        call = plan.calls[later]
        if _gated(r, prepare(call, r.registry, r.budgets.tool_timeout), call):
            pending.append(_request(r, record, step, call, asked_by))
    detail = "call %s (%s) of step %d awaits approval; %d gated call(s) of this turn wait in all" % (
        json.dumps(request.call_id, ensure_ascii=False),
        request.tool,
        step,
        len(pending),
    )
    return _Halt(AWAITING_APPROVAL, detail, tuple(pending))


def _drive(loop: Coroutine[Any, Any, RunResult]) -> RunResult:
    """Run a coroutine that never suspends (the loop under a :class:`SyncRunner`) to its end, without an event loop."""
    try:
        loop.send(None)
    except StopIteration as done:
        return cast(RunResult, done.value)
    loop.close()  # only an await on a real future suspends, and SyncRunner awaits none
    raise RuntimeError("the loop suspended outside an event loop")


def run(
    task: str,
    model: Model,
    tools: Union[ToolRegistry, Iterable[Tool]],
    options: Optional[RunOptions] = None,
    **overrides: Unpack[RunOverrides],
) -> RunResult:
    """Run ``model`` on ``task`` with ``tools`` and write the transcript.

    The options are a :class:`~agentloop.loop.options.RunOptions`, or
    keywords of the same names (``transcript=``, ``max_steps=``,
    ``max_tokens=`` required), or both: each keyword replaces that option of
    ``options``.  An unknown keyword raises
    :class:`~agentloop.errors.RunConfigError` naming it.

    The transcript file must not exist unless ``overwrite=True``.  Records are
    written as they happen; ``fsync=True`` also forces each to disk, and
    ``on_record`` (a callable) is called with each record (a dict) as written.
    No record may exceed ``max_record_bytes``: a tool result that would is
    refused as data, a model reply that would is a ``model_error``.
    ``KeyboardInterrupt`` and ``SystemExit`` (from the model, a tool or
    ``on_record``) propagate, leaving a verifiable prefix; every
    ``Exception`` from the model or a tool becomes data.  Developer mistakes
    raise before the transcript file is touched.  ``checkpoint=PATH`` writes
    the run's checkpoint there after the stop record (the records made
    durable first, then the checkpoint replaced atomically), HMAC-signed when
    ``key`` (bytes) is given and signed by ``signer`` (one signer or a list:
    an Ed25519 key from :mod:`agentloop.signing`, or anything with ``name``,
    ``key_id`` and ``sign(message)``) when given; an existing checkpoint file
    is refused unless ``overwrite=True``.

    ``system`` is a system prompt: recorded in the task record and given to
    the model as a first ``{"role": "system"}`` message.  ``output_schema``
    (a JSON Schema or a type) adds the reserved ``final_result`` tool
    (:mod:`agentloop.loop.final`).  Budgets beyond steps and tokens, each recorded
    only when set: ``max_tool_calls``; ``max_cost`` (USD, a decimal string)
    with ``prices`` (:mod:`agentloop.loop.prices`), which alone records each
    turn's cost; ``max_seconds`` by ``clock``; ``tell_budgets=True`` shows the
    model what remains before each turn (a last, transient user message).
    Tools run serially unless marked ``parallel=True``; at most
    ``max_workers`` sync tools run at once, and a call past its tool's
    ``timeout`` (else ``tool_timeout``) fails as data (:mod:`agentloop.loop.calls`).

    ``approver`` decides the calls of tools with ``requires_approval``
    (:mod:`agentloop.loop.approval`); a run with such tools and no approver is
    refused before it starts.  An approver that defers (returns ``None``)
    pauses the run: the result's ``stop_reason`` is ``"awaiting_approval"``,
    ``pending`` holds the requests, no stop record is written, the records
    are made durable and ``checkpoint`` is written; :func:`agentloop.resume`
    goes on from the file.  ``approval_signer`` (a note signer, e.g. an
    :class:`~agentloop.signing.Ed25519Signer`) signs every decision and is
    named in the task record (its key name and ID), so that a verifier can
    demand a note on each (:func:`agentloop.verify_approvals`).
    """
    r = prepare_run(task, model, tools, options, overrides)
    runner = SyncRunner(r.options.max_workers)
    try:
        return _drive(_loop(r, runner))
    finally:
        runner.close()


def run_as_recorded(
    task: str,
    model: Model,
    tools: Union[ToolRegistry, Iterable[Tool]],
    options: RunOptions,
    recorded: Mapping[str, Any],
) -> RunResult:
    """:func:`run`, for a replay of the run whose record 0's payload is ``recorded``: a run written before
    predicate outcomes were recorded (no ``predicate_outcomes``) is run again without them, so its task
    record and ``tool`` records are the ones it wrote (as :func:`agentloop.resume` goes on without them)."""
    r = prepare_run(task, model, tools, options)
    if "predicate_outcomes" not in recorded:
        r.task_payload.pop("predicate_outcomes", None)
    runner = SyncRunner(r.options.max_workers)
    try:
        return _drive(_loop(r, runner))
    finally:
        runner.close()


async def run_async(
    task: str,
    model: Any,
    tools: Union[ToolRegistry, Iterable[Tool]],
    options: Optional[RunOptions] = None,
    **overrides: Unpack[RunOverrides],
) -> RunResult:
    """:func:`run` as a coroutine, for callers inside an event loop: the same
    arguments, the same transcript bytes.

    The model is awaited: its ``acall(messages, manifest)`` coroutine method
    when it has one, else the model itself when its ``__call__`` is ``async
    def``, else the sync model runs in a thread (``run_in_executor``).
    ``async def`` tools run on the caller's event loop, sync ones on threads.
    The transcript is written in the event loop's thread, one ``write`` per
    record (a local file; not offloaded).
    """
    r = prepare_run(task, model, tools, options, overrides)
    runner = AsyncRunner(r.options.max_workers)
    try:
        return await _loop(r, runner)
    finally:
        runner.close()
