"""A run's options as one value: :class:`RunOptions`, and the task record written from it and read back into it.

Every option of :func:`agentloop.run` lives here once: its name, type and
default (the fields of :class:`RunOptions`), its check (made when the value
is built, so an option value that exists is a valid one), and how it is
recorded in record 0 (:meth:`RunOptions.task_record`, ``docs/format.md``
"task") and read back (:meth:`RunOptions.from_task_record`).  ``run`` and
``run_async`` take a ``RunOptions`` and/or the same options as keywords
(:func:`options_from`); :func:`agentloop.resume`, :func:`agentloop.models.replay`
and a batch's :class:`~agentloop.batch.RunSpec` build theirs from the record
or the spec with the same value.

Two kinds of option: the *recorded* ones (the budgets, ``system`` and
``output_schema``: they are in record 0, so a transcript says them and
``from_task_record`` gives them back), and the ones that say where and how
a run is written and driven (``transcript``, ``overwrite``, ``fsync``,
``checkpoint``, ``key``, ``signer``, ``on_record``, ``clock``,
``max_workers``, ``approver``), which no record holds; ``approval_signer``
is named in record 0 (its key's name and ID, never the key) when it is set.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Tuple, TypedDict, Union

from ..errors import DuplicateToolError, RunConfigError, WrongTypeError
from ..messages import shown
from ..tools.registry import Tool, ToolRegistry, tool_sources
from ..transcript.checkpoint import SignerArg
from ..transcript.format import FORMAT, MAX_RECORD_BYTES, PathLike
from .approval import ApprovalRequest, approval_members, approval_policy, check_approval_signer
from .budgets import Budgets, Seconds, budgets_from
from .calls import DEFAULT_MAX_WORKERS
from .final import FINAL_RESULT, FinalResult, final_result

__all__ = [
    "RunOptions",
    "RunOverrides",
    "OPTION_NAMES",
    "RECORDED_OPTIONS",
    "options_from",
    "OnRecord",
    "Clock",
    "Approver",
]

#: ``run(on_record=...)``: called with each record (a dict) as it is written.
OnRecord = Callable[[Dict[str, Any]], Any]
#: ``run(clock=...)``: returns a number of seconds (read only with ``max_seconds``).
Clock = Callable[[], Seconds]
#: ``run(approver=...)``: called with an :class:`~agentloop.loop.approval.ApprovalRequest`, returns a
#: decision (``Approve``, ``Deny``, ``Modify``, ``Terminate``) or ``None`` to defer; may be ``async def``.
Approver = Callable[[ApprovalRequest], Any]
#: ``run(prices=...)``: USD per million tokens by model name (:mod:`agentloop.loop.prices`).
PriceArg = Mapping[str, Mapping[str, Union[str, Decimal, int]]]

#: The largest ``max_workers``.
MAX_WORKERS = 1024


@dataclass(frozen=True)
class RunOptions:
    """Every option of one run, checked when built (a bad one raises
    :class:`~agentloop.errors.RunConfigError` naming it).

    ``RunOptions(max_steps=8, max_tokens=2000, transcript="run.jsonl")`` is
    ``run(..., max_steps=8, max_tokens=2000, transcript="run.jsonl")``;
    :func:`dataclasses.replace` makes a changed copy.  Each option is
    described at :func:`agentloop.run` and in ``docs/loop.md``.
    ``transcript`` may be left ``None`` in a value that is not run yet (a
    resume, a batch spec fill it in); ``run`` requires it.
    """

    max_steps: int
    max_tokens: int
    transcript: Optional[PathLike] = None
    stop_sentinel: Optional[str] = None
    overwrite: bool = False
    fsync: bool = False
    max_record_bytes: int = MAX_RECORD_BYTES
    checkpoint: Optional[PathLike] = None
    key: Optional[bytes] = None
    signer: SignerArg = None
    system: Optional[str] = None
    output_schema: Any = None
    on_record: Optional[OnRecord] = None
    max_tool_calls: Optional[int] = None
    max_cost: Union[str, Decimal, int, None] = None
    prices: Optional[PriceArg] = None
    max_seconds: Optional[Seconds] = None
    clock: Optional[Clock] = None
    tell_budgets: bool = False
    tool_timeout: Optional[Seconds] = None
    max_workers: int = DEFAULT_MAX_WORKERS
    approver: Optional[Approver] = None
    approval_signer: Any = None

    def __post_init__(self) -> None:
        budgets = self.budgets()  # every budget, in budgets_from's order
        for name in ("overwrite", "fsync"):
            if not isinstance(getattr(self, name), bool):
                raise RunConfigError(name, "must be True or False, got %s" % (shown(getattr(self, name)),))
        if self.system is not None and not isinstance(self.system, str):
            raise RunConfigError("system", "must be None or a str, got %s" % (shown(self.system),))
        _check_callables(self, budgets)
        check_approval_signer(self.approval_signer)

    def budgets(self) -> Budgets:
        """The run's budgets, checked (:func:`~agentloop.loop.budgets.budgets_from`)."""
        return budgets_from(
            self.max_steps,
            self.max_tokens,
            self.stop_sentinel,
            self.max_record_bytes,
            self.max_tool_calls,
            self.max_cost,
            self.prices,
            self.max_seconds,
            self.tool_timeout,
            self.tell_budgets,
        )

    def toolset(self, tools: object) -> Tuple[ToolRegistry, Optional[FinalResult]]:
        """The run's tools: ``tools`` (a ``ToolRegistry`` or an iterable of ``Tool``),
        plus the ``final_result`` tool of ``output_schema`` when it is set.

        They are fixed here: registering more during the run changes nothing,
        so the recorded manifest stays the whole truth.
        """
        final = None if self.output_schema is None else final_result(self.output_schema)
        if isinstance(tools, (str, bytes)) or not isinstance(tools, Iterable):
            raise WrongTypeError("tools", "a ToolRegistry or an iterable of Tool", tools)
        servers = getattr(tools, "servers", ())  # servers all of whose tools were refused: named in the record too
        try:
            registry = ToolRegistry([*tools] + ([] if final is None else [final.tool]), servers)
        except DuplicateToolError as exc:
            if final is None or exc.name != FINAL_RESULT:
                raise
            raise RunConfigError(
                "output_schema", "the tool name %r is reserved for the final result" % (FINAL_RESULT,)
            ) from None
        return registry, final

    def task_record(
        self, task: str, registry: ToolRegistry, model: Optional[Dict[str, Any]] = None, clock: Optional[Seconds] = None
    ) -> Dict[str, Any]:
        """Record 0's payload (``docs/format.md``, "task") of a run of ``task`` with these options.

        ``registry`` is the run's tools (:meth:`toolset`), ``model`` what the
        model says of itself (``model_info()``), ``clock`` the reading at the
        start (``max_seconds`` only).  Members beyond the first four only when
        they say something, so the records of runs without them keep their bytes.
        """
        payload: Dict[str, Any] = {
            "format": FORMAT,
            "task": task,
            "budgets": self.budgets().recorded(),
            "tools": registry.manifest(),
        }
        policy = approval_policy(registry)
        if policy:
            payload["approval"] = policy
        payload.update(approval_members(policy, self.approval_signer))  # {} unless used: records unchanged
        if model is not None:
            payload["model"] = model
        if self.system is not None:
            payload["system"] = self.system
        payload.update(tool_sources(registry))  # e.g. "mcp": the servers behind MCP tools; nothing for local tools
        if clock is not None:
            payload["clock"] = clock
        return payload

    @classmethod
    def from_task_record(cls, record: Mapping[str, Any], tools: Optional[Iterable[Tool]] = None) -> "RunOptions":
        """The recorded options of a run: its budgets, ``system`` and ``output_schema``.

        ``record`` is record 0 (``{"kind": "task", "payload": ...}``) or its
        payload.  ``output_schema`` is the recorded ``final_result`` tool's
        parameters, unless ``tools`` (the tools the run is given again) has a
        tool of that name of its own.  The other options keep their defaults;
        :meth:`task_record` of the result, with the recorded tools and model,
        gives the recorded payload back (its ``clock`` aside).
        """
        payload = (
            record["payload"] if record.get("kind") == "task" and isinstance(record.get("payload"), Mapping) else record
        )
        budgets = payload.get("budgets")
        if not isinstance(budgets, Mapping) or not all(name in budgets for name in _REQUIRED):
            raise RunConfigError("task record", "has no budgets object with max_steps and max_tokens")
        system = payload.get("system")
        return cls(
            max_steps=budgets["max_steps"],
            max_tokens=budgets["max_tokens"],
            **{name: budgets[name] for name in _NEWER_BUDGETS if name in budgets},
            **({} if system is None else {"system": system}),
            output_schema=_recorded_schema(payload, tools),
        )


def _check_callables(options: RunOptions, budgets: Budgets) -> None:
    """The checks of the options that are objects, not data."""
    if options.on_record is not None and not callable(options.on_record):
        raise RunConfigError("on_record", "must be None or a callable taking each record (a dict)")
    if options.clock is not None and (not callable(options.clock) or budgets.max_seconds is None):
        raise RunConfigError("clock", "must be a callable returning seconds, and is read only with max_seconds")
    workers = options.max_workers
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise RunConfigError("max_workers", "must be an int from 1 to %d, got %s" % (MAX_WORKERS, shown(workers)))
    if options.approver is not None and not callable(options.approver):
        raise RunConfigError("approver", "must be None or a callable taking an ApprovalRequest")


#: The budgets a task record holds only when they were set (the first three are always there).
_NEWER_BUDGETS = (
    "stop_sentinel",
    "max_record_bytes",
    "max_tool_calls",
    "max_cost",
    "prices",
    "max_seconds",
    "tool_timeout",
    "tell_budgets",
)


def _recorded_schema(payload: Mapping[str, Any], tools: Optional[Iterable[Tool]]) -> Any:
    """The recorded ``final_result`` tool's parameters, or ``None`` (none recorded, or ``tools`` has its own)."""
    recorded = payload.get("tools")
    final = (
        [t for t in recorded if isinstance(t, dict) and t.get("name") == FINAL_RESULT]
        if isinstance(recorded, list)
        else []
    )
    own = isinstance(tools, Iterable) and any(
        getattr(t, "name", None) == FINAL_RESULT for t in tools
    )  # run() refuses other tools
    if not final or own:
        return None
    return final[0].get("parameters")


#: The option names, in the order of :class:`RunOptions`.
OPTION_NAMES: Tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RunOptions))
#: The options record 0 holds (:meth:`RunOptions.from_task_record` gives them back).
RECORDED_OPTIONS = frozenset(("max_steps", "max_tokens", "system", "output_schema") + _NEWER_BUDGETS)
_REQUIRED = ("max_steps", "max_tokens")


class RunOverrides(TypedDict, total=False):
    """The options as keywords of ``run(task, model, tools, options=None, **overrides)``:
    the fields of :class:`RunOptions`, with the same types (a test keeps the two equal)."""

    max_steps: int
    max_tokens: int
    transcript: Optional[PathLike]
    stop_sentinel: Optional[str]
    overwrite: bool
    fsync: bool
    max_record_bytes: int
    checkpoint: Optional[PathLike]
    key: Optional[bytes]
    signer: SignerArg
    system: Optional[str]
    output_schema: Any
    on_record: Optional[OnRecord]
    max_tool_calls: Optional[int]
    max_cost: Union[str, Decimal, int, None]
    prices: Optional[PriceArg]
    max_seconds: Optional[Seconds]
    clock: Optional[Clock]
    tell_budgets: bool
    tool_timeout: Optional[Seconds]
    max_workers: int
    approver: Optional[Approver]
    approval_signer: Any


def options_from(options: object, overrides: Mapping[str, Any]) -> RunOptions:
    """``options`` (a :class:`RunOptions` or ``None``) with ``overrides`` (option keywords) put in.

    An unknown keyword raises :class:`~agentloop.errors.RunConfigError`
    naming it; without ``options``, ``max_steps`` and ``max_tokens`` are required.
    """
    if options is not None and not isinstance(options, RunOptions):
        raise RunConfigError("options", "must be a RunOptions or None, got %s" % (type(options).__name__,))
    for name in overrides:
        if name not in OPTION_NAMES:
            near = difflib.get_close_matches(str(name), OPTION_NAMES, 1)
            hint = "did you mean %s? " % (near[0],) if near else ""
            raise RunConfigError(
                str(name), "is not an option of run() (%sthe options: %s)" % (hint, ", ".join(OPTION_NAMES))
            )
    if options is None:
        missing = [name for name in _REQUIRED if name not in overrides]
        if missing:
            raise RunConfigError(missing[0], "is required (a keyword, or options=RunOptions(...))")
        return RunOptions(**overrides)
    return dataclasses.replace(options, **overrides) if overrides else options
