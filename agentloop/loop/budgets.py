"""A run's budgets: checked once when the run starts, then by one helper around each turn.

:class:`Budgets` holds every limit of a run, built and checked by
:func:`budgets_from` (a bad value raises
:class:`~agentloop.errors.RunConfigError` before any file is touched), and
knows how it is recorded in the task record (:meth:`Budgets.recorded`: the
limits a run of older versions had are always there, every newer one only
when set, so old transcripts keep their bytes).

:class:`Spent` is what the run has used so far.  The loop asks
:meth:`Budgets.before_turn` before each model call and
:meth:`Budgets.after_turn` once a turn is recorded; each returns the
:class:`Stop` to write, or ``None``.  The order inside each is the
precedence documented in :mod:`agentloop.loop.engine`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Dict, Optional, Union

from ..canonical import MAX_SAFE_INTEGER, format_number
from ..errors import RunConfigError
from ..messages import StopReason, shown
from .prices import Prices, add, amount_text, parse_amount, price_table, recorded_table
from ..transcript.format import MAX_RECORD_BYTES, MIN_RECORD_BYTES

__all__ = ["Budgets", "Spent", "Stop", "budgets_from", "seconds_value", "BUDGET_NOTE_PREFIX"]

Seconds = Union[int, float]

#: The transient message that tells the model what remains starts so (``tell_budgets=True``).
BUDGET_NOTE_PREFIX = "[agentloop] Budget left:"


@dataclass(frozen=True)
class Stop:
    """A stop the budgets call for: a reason of :data:`~agentloop.STOP_REASONS` and its detail."""

    reason: StopReason
    detail: str


@dataclass
class Spent:
    """What a run has used so far; ``cost`` is ``None`` once a turn's cost could not be counted."""

    steps: int = 0
    tokens: int = 0
    tool_calls: int = 0
    cost: Optional[Decimal] = field(default_factory=lambda: Decimal(0))
    started: Optional[Seconds] = None  # the clock reading when the run started (max_seconds only)
    cost_problem: str = ""  # why the last turn's cost could not be counted


def seconds_value(value: object, name: str, allow_zero: bool) -> Seconds:
    """A number of seconds: an int or a finite float, > 0 (or >= 0 when ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RunConfigError(name, "must be a number of seconds, got %s" % (shown(value),))
    if isinstance(value, float) and not math.isfinite(value):
        raise RunConfigError(name, "must be a finite number of seconds, got %r" % (value,))
    if value < 0 or (value == 0 and not allow_zero) or abs(value) > MAX_SAFE_INTEGER:
        raise RunConfigError(
            name, "must be %s 0 and at most 2**53-1, got %s" % (">=" if allow_zero else ">", shown(value))
        )
    return value


def _count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SAFE_INTEGER:
        raise RunConfigError(name, "must be an int from 0 to 2**53-1, got %s" % (shown(value),))
    return value


def _seconds_text(value: Seconds) -> str:
    return str(value) if isinstance(value, int) else format_number(value)


@dataclass(frozen=True)
class Budgets:
    """Every limit of one run (see :func:`agentloop.run` for each)."""

    max_steps: int
    max_tokens: int
    stop_sentinel: Optional[str] = None
    max_record_bytes: int = MAX_RECORD_BYTES
    max_tool_calls: Optional[int] = None
    max_cost: Optional[Decimal] = None
    prices: Optional[Prices] = None
    max_seconds: Optional[Seconds] = None
    tool_timeout: Optional[Seconds] = None
    tell_budgets: bool = False

    def recorded(self) -> Dict[str, Any]:
        """The task record's ``budgets``: the first three always, every other one only when set."""
        budgets: Dict[str, Any] = {
            "max_steps": self.max_steps,
            "max_tokens": self.max_tokens,
            "stop_sentinel": self.stop_sentinel,
        }
        if self.max_record_bytes != MAX_RECORD_BYTES:
            budgets["max_record_bytes"] = self.max_record_bytes
        if self.max_tool_calls is not None:
            budgets["max_tool_calls"] = self.max_tool_calls
        if self.max_cost is not None:
            budgets["max_cost"] = amount_text(self.max_cost)
        if self.prices is not None:
            budgets["prices"] = recorded_table(self.prices)
        if self.max_seconds is not None:
            budgets["max_seconds"] = self.max_seconds
        if self.tool_timeout is not None:
            budgets["tool_timeout"] = self.tool_timeout
        if self.tell_budgets:
            budgets["tell_budgets"] = True
        return budgets

    # -- the one helper the loop asks, before and after each turn ------------

    def before_turn(
        self, spent: Spent, reading: Optional[Seconds], price: Optional[Dict[str, Decimal]], model: str
    ) -> Optional[Stop]:
        """The stop due before the next model call (nothing of the turn is spent yet), or ``None``.

        In order: ``step_budget``, ``time_budget``, ``cost_unknown`` (no price for the model).
        """
        if spent.steps >= self.max_steps:
            return Stop("step_budget", "max_steps of %d reached (steps=%d)" % (self.max_steps, spent.steps))
        if self.max_seconds is not None and reading is not None and spent.started is not None:
            elapsed = reading - spent.started
            if elapsed >= self.max_seconds:
                return Stop(
                    "time_budget",
                    "max_seconds of %s reached (%s seconds since the start, by the recorded clock readings)"
                    % (_seconds_text(self.max_seconds), _seconds_text(elapsed)),
                )
        if self.prices is not None and price is None:
            return Stop(
                "cost_unknown",
                "prices has no entry for the model %s (have: %s); nothing was spent"
                % (
                    shown(model) if model else "(a model without model_info()['model'])",
                    ", ".join(sorted(self.prices)),
                ),
            )
        return None

    def charge(self, spent: Spent, tokens: int, priced: bool, cost: Optional[Decimal], cost_problem: str) -> None:
        """Add one recorded turn to ``spent``: its tokens and, when ``priced``, its cost
        (``None``, with ``cost_problem`` saying why, when it could not be counted)."""
        spent.steps += 1
        spent.tokens += tokens
        if not priced:
            return
        spent.cost_problem = cost_problem
        if cost is None:
            spent.cost = None
        elif spent.cost is not None:
            spent.cost = add(spent.cost, cost)

    def after_turn(self, spent: Spent, calls: int) -> Optional[Stop]:
        """The budget stop due once a turn asking for ``calls`` tool calls is recorded (its calls not yet run),
        or ``None``.

        In order: ``token_budget``, ``cost_unknown``, ``cost_budget``, ``tool_call_budget``.
        """
        if (
            spent.tokens <= self.max_tokens
            and not spent.cost_problem
            and self.max_cost is None
            and self.max_tool_calls is None
        ):
            return None  # no stop can be due: the common case, without the detail's text
        not_run = "%d tool call(s) not run" % (calls,)
        if spent.tokens > self.max_tokens:
            return Stop(
                "token_budget", "max_tokens of %d exceeded (tokens=%d); %s" % (self.max_tokens, spent.tokens, not_run)
            )
        if spent.cost_problem:
            return Stop(
                "cost_unknown",
                "the cost of step %d cannot be counted: %s; %s" % (spent.steps, spent.cost_problem, not_run),
            )
        if self.max_cost is not None and spent.cost is not None and spent.cost > self.max_cost:
            return Stop(
                "cost_budget",
                "max_cost of %s USD exceeded (cost=%s USD); %s"
                % (amount_text(self.max_cost), amount_text(spent.cost), not_run),
            )
        if self.max_tool_calls is not None and spent.tool_calls + calls > self.max_tool_calls:
            return Stop(
                "tool_call_budget",
                "max_tool_calls of %d would be exceeded (%d run, %d more asked for); %s"
                % (self.max_tool_calls, spent.tool_calls, calls, not_run),
            )
        return None

    def note(self, spent: Spent, reading: Optional[Seconds]) -> str:
        """What remains, as the transient message ``tell_budgets=True`` shows the model before a turn."""
        parts = [
            "%d of %d steps" % (self.max_steps - spent.steps, self.max_steps),
            "%d of %d tokens" % (max(0, self.max_tokens - spent.tokens), self.max_tokens),
        ]
        if self.max_tool_calls is not None:
            parts.append("%d of %d tool calls" % (max(0, self.max_tool_calls - spent.tool_calls), self.max_tool_calls))
        if self.max_cost is not None and spent.cost is not None:
            parts.append(
                "%s of %s USD" % (amount_text(max(Decimal(0), self.max_cost - spent.cost)), amount_text(self.max_cost))
            )
        if self.max_seconds is not None and reading is not None and spent.started is not None:
            left = max(0.0, self.max_seconds - (reading - spent.started))
            parts.append("%.1f of %s seconds" % (left, _seconds_text(self.max_seconds)))
        return "%s %s." % (BUDGET_NOTE_PREFIX, ", ".join(parts))


def budgets_from(
    max_steps: object,
    max_tokens: object,
    stop_sentinel: object,
    max_record_bytes: object,
    max_tool_calls: object,
    max_cost: object,
    prices: object,
    max_seconds: object,
    tool_timeout: object,
    tell_budgets: object,
) -> Budgets:
    """Check every budget argument of :func:`agentloop.run`; raise :class:`~agentloop.errors.RunConfigError`
    naming the first bad one."""
    steps, tokens = _count(max_steps, "max_steps"), _count(max_tokens, "max_tokens")
    if stop_sentinel is not None and (not isinstance(stop_sentinel, str) or stop_sentinel == ""):
        raise RunConfigError(
            "stop_sentinel", "must be None or a non-empty str (every text contains %s)" % (shown(stop_sentinel),)
        )
    if (
        isinstance(max_record_bytes, bool)
        or not isinstance(max_record_bytes, int)
        or max_record_bytes < MIN_RECORD_BYTES
    ):
        raise RunConfigError(
            "max_record_bytes", "must be an int of at least %d, got %s" % (MIN_RECORD_BYTES, shown(max_record_bytes))
        )
    calls = None if max_tool_calls is None else _count(max_tool_calls, "max_tool_calls")
    table = None if prices is None else price_table(prices)
    cost = None if max_cost is None else parse_amount(max_cost, "max_cost")
    if cost is not None and table is None:
        raise RunConfigError("max_cost", 'needs prices={model name: {"input": ..., "output": ...}} to count the cost')
    seconds = None if max_seconds is None else seconds_value(max_seconds, "max_seconds", allow_zero=True)
    timeout = None if tool_timeout is None else seconds_value(tool_timeout, "tool_timeout", allow_zero=False)
    if not isinstance(tell_budgets, bool):
        raise RunConfigError("tell_budgets", "must be True or False, got %s" % (shown(tell_budgets),))
    sentinel = stop_sentinel if isinstance(stop_sentinel, str) else None
    return Budgets(steps, tokens, sentinel, max_record_bytes, calls, cost, table, seconds, timeout, tell_budgets)
