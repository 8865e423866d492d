"""A run's start: every argument checked and record 0 made, before any file is touched.

:func:`prepare_run` turns ``(task, model, tools, options)`` into the
:class:`_Run` the loop (:mod:`agentloop.loop.engine`) drives; misuse raises
:class:`~agentloop.errors.RunConfigError` (or ``SchemaError``, ...) here,
never later.  The checks, in order: 1. the task and the model; 2. the
options (:class:`~agentloop.loop.options.RunOptions`, checked when built);
3. the transcript, checkpoint, key and signer; 4. ``output_schema`` and the
tools, and an approver for gated ones; 5. the model's ``model_info()``;
6. the clock's first reading (``max_seconds`` only); 7. the size of record 0.

:func:`planned_task_line` makes the same checks but 3 and 6 and returns
record 0's line without running anything: a batch learns each run's origin
from it before any worker starts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..canonical import MAX_SAFE_INTEGER, canonical_bytes, snapshot
from ..errors import RunConfigError, UnrecordableError
from ..messages import Message, shown
from ..tools.registry import ToolRegistry
from ..transcript.checkpoint import check_run_anchor
from ..transcript.format import GENESIS, PathLike
from ..transcript.writer import record_line
from .approval import approval_policy
from .budgets import Budgets, Seconds
from .calls import describe
from .final import FinalResult
from .options import Approver, Clock, RunOptions, options_from

__all__ = ["prepare_run", "planned_task_line", "TASK_RECORD_MARGIN"]

#: Record 0's payload may take ``max_record_bytes`` less this: room for the record's other members.
TASK_RECORD_MARGIN = 256


@dataclass(frozen=True)
class _Run:
    """Everything a run fixes before its first record."""

    task: str
    model: Any
    options: RunOptions
    registry: ToolRegistry
    budgets: Budgets
    task_payload: Dict[str, Any]
    final: Optional[FinalResult]
    clock: Optional[Clock]
    price: Optional[Dict[str, Decimal]]
    model_name: str
    started: Optional[Seconds]
    approver: Optional[Approver]
    #: The tools as the model sees them, from the registry (record 0 holds the same, its keys in RFC 8785
    #: order: a resumed run's recorded payload must not change what the model is sent).
    manifest: List[Dict[str, Any]]

    def first_messages(self) -> List[Message]:
        system: List[Message] = (
            [] if self.options.system is None else [{"role": "system", "content": self.options.system}]
        )
        return system + [{"role": "user", "content": self.task}]


@dataclass(frozen=True)
class _Fixed:
    """What a run's inputs fix, before a file or a clock is looked at: steps 4 and 5 of :func:`prepare_run`."""

    registry: ToolRegistry
    final: Optional[FinalResult]
    info: Optional[Dict[str, Any]]


def _checked(task: object, model: object, options: object, overrides: Mapping[str, Any]) -> RunOptions:
    """Steps 1 and 2: the task, the model and the options."""
    if not isinstance(task, str):
        raise RunConfigError("task", "must be a str, got %s" % (type(task).__name__,))
    if not callable(model):
        raise RunConfigError("model", "must be callable (messages, manifest) -> ModelReply")
    return options_from(options, overrides)


def _tools(tools: object, options: RunOptions, deferred: bool) -> Tuple[ToolRegistry, Optional[FinalResult]]:
    """Step 4: the run's tools; a run with gated tools needs an approver (unless it may defer them all)."""
    registry, final = options.toolset(tools)
    policy = approval_policy(registry)
    if policy and options.approver is None and not deferred:
        raise RunConfigError(
            "approver",
            "tools %s require approval, and no approver was given" % (", ".join(repr(name) for name in policy),),
        )
    return registry, final


def _model_info(model: object) -> Optional[Dict[str, Any]]:
    """Step 5: what ``model.model_info()`` says about the model, read once; ``None`` without one.

    A provider adapter names itself this way (provider, model name, host); the
    loop records the object as the task record's ``model`` member.  A plain
    callable has no ``model_info`` and its task record has no ``model`` key.
    """
    describe_model = getattr(model, "model_info", None)
    if describe_model is None:
        return None
    if not callable(describe_model):
        raise RunConfigError("model", "model_info must be a method returning a dict or None")
    try:
        info = describe_model()
    except Exception as exc:
        raise RunConfigError("model", "model_info() raised %s" % (describe(exc),)) from None
    if info is None:
        return None
    if not isinstance(info, dict):
        raise RunConfigError("model", "model_info() must return a dict or None, got %s" % (type(info).__name__,))
    try:
        recorded, _ = snapshot(info, "$.model", 2)
    except UnrecordableError as exc:
        raise RunConfigError("model", "model_info() is not recordable: %s" % (exc,)) from None
    return dict(recorded)


def read_clock(clock: Clock) -> Tuple[Optional[Seconds], str]:
    """``(reading, "")``, or ``(None, why the clock gave none)``: an int or a finite float is a reading."""
    try:
        value = clock()
    except Exception as exc:
        return None, "the clock raised %s" % (describe(exc),)
    if isinstance(value, float) and value - value == 0 and abs(value) <= MAX_SAFE_INTEGER:  # finite, in I-JSON's range
        return float(value), ""
    if isinstance(value, int) and not isinstance(value, bool) and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return int(value), ""
    return None, "the clock returned %s, not a number of seconds" % (shown(value),)


def _start_clock(options: RunOptions) -> Tuple[Optional[Clock], Optional[Seconds]]:
    """Step 6: the run's clock (``time.monotonic`` by default) and its first reading; none without ``max_seconds``."""
    if options.max_seconds is None:
        return None, None
    clock = options.clock or time.monotonic
    started, problem = read_clock(clock)
    if started is None:
        raise RunConfigError("clock", problem)
    return clock, started


def _fixed(model: object, tools: object, options: RunOptions, deferred: bool, transcript: Optional[PathLike]) -> _Fixed:
    """Steps 3 to 5 (3 only with a ``transcript``)."""
    if transcript is not None:
        check_run_anchor(transcript, options.checkpoint, options.key, options.overwrite, options.signer)
    registry, final = _tools(tools, options, deferred)
    return _Fixed(registry, final, _model_info(model))


def _sized(payload: Dict[str, Any], budgets: Budgets) -> Dict[str, Any]:
    """Step 7: everything record 0 holds, checked before the file is opened."""
    try:
        size = len(canonical_bytes(payload, "$.payload", depth=1))
    except UnrecordableError as exc:
        raise RunConfigError("task", str(exc)) from None
    if size > budgets.max_record_bytes - TASK_RECORD_MARGIN:
        raise RunConfigError(
            "task", "the task record (%d bytes) exceeds max_record_bytes %d" % (size, budgets.max_record_bytes)
        )
    return payload


def prepare_run(
    task: object,
    model: object,
    tools: object,
    options: object = None,
    overrides: Optional[Mapping[str, Any]] = None,
    deferred: bool = False,
) -> _Run:
    """Check every argument of a run and build what it fixes; raise before any file is touched.

    ``deferred``: a resumed run, whose gated calls may all defer (no approver needed).
    """
    opts = _checked(task, model, options, overrides or {})
    if opts.transcript is None:
        raise RunConfigError("transcript", "is required: the file the records are written to")
    fixed = _fixed(model, tools, opts, deferred, opts.transcript)
    info = fixed.info
    model_name = info.get("model") if info is not None else None
    model_name = model_name if isinstance(model_name, str) else ""
    budgets = opts.budgets()
    price = None if budgets.prices is None else budgets.prices.get(model_name)
    clock, started = _start_clock(opts)
    payload = _sized(opts.task_record(str(task), fixed.registry, info, started), budgets)
    return _Run(
        str(task),
        model,
        opts,
        fixed.registry,
        budgets,
        payload,
        fixed.final,
        clock,
        price,
        model_name,
        started,
        opts.approver,
        fixed.registry.manifest(),
    )


def planned_task_line(task: object, model: object, tools: object, options: object = None, **overrides: Any) -> bytes:
    """Record 0's line (with its ``\\n``) of the run ``run(task, model, tools, options, **overrides)``
    would write, computed without running anything: no file is touched, ``model`` only
    gives its ``model_info()``.

    The run's misuse raises here as ``run`` would (the transcript, checkpoint
    and key aside: they change no byte of record 0).  A run with
    ``max_seconds`` cannot be planned: its record 0 holds the clock reading
    taken when it starts.
    """
    opts = _checked(task, model, options, overrides)
    if opts.max_seconds is not None:
        raise RunConfigError(
            "max_seconds",
            "record 0 of a run with max_seconds holds the clock reading taken when it "
            "starts: it cannot be known before the run",
        )
    fixed = _fixed(model, tools, opts, False, None)
    payload = _sized(opts.task_record(str(task), fixed.registry, fixed.info), opts.budgets())
    return record_line("task", payload, GENESIS, 0)[1]
