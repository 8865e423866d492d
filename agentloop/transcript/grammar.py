"""The ``agentloop/1`` payload grammar: what each record's payload holds, and how a run adds up.

The chain (:mod:`agentloop.transcript.verify`) proves that the records are the
ones written, in order; this module checks that they say something a run can
say (``docs/format.md``, section 2).  A record that breaks it is one
``bad_payload`` fault naming its first problem.  Checked, per kind:

* ``task`` -- ``task`` a string; ``budgets`` an object with ``max_steps`` and
  ``max_tokens`` (integers >= 0), ``stop_sentinel`` (string or null) and,
  when present, ``max_record_bytes`` (an integer >= 1), ``max_tool_calls``
  (an integer >= 0), ``max_cost`` (a decimal string), ``prices`` (model ->
  object of decimal strings), ``max_seconds`` and ``tool_timeout`` (numbers
  > 0) and ``tell_budgets`` (``true``); ``tools`` an array
  of objects with ``name`` and ``description`` (strings) and ``parameters``
  (an object); ``model``, when present, an object; ``approval``, when
  present, an object mapping tool names to ``"always"`` or ``"predicate"``.
* ``assistant`` -- ``step`` one more than the assistant records before it;
  ``text`` a string; ``tool_calls`` an array of objects with ``id`` and
  ``name`` (strings) and ``arguments`` (an object, or null together with an
  ``arguments_error`` string); ``tokens`` an integer >= 0 and
  ``total_tokens`` the previous total plus ``tokens``; ``usage``, when
  present, ``{input_tokens, output_tokens}`` (integers >= 0) adding up to
  ``tokens``; ``truncated``, when present, ``true``; ``provider_data``,
  when present, an object whose ``api`` is a string and ``items`` an array
  of objects (the items themselves are the provider's: not checked).  It may not come while
  calls of the previous turn still await their ``tool`` records.
* ``tool`` -- answers the next call of the last assistant record: ``step``
  is that record's, ``id`` and ``name`` are the call's; ``ok`` a boolean,
  with ``value`` (any JSON) exactly when true and ``error`` (a string)
  exactly when false; ``approval``, when present, an object with
  ``decision`` (one of :data:`agentloop.messages.APPROVAL_DECISIONS`),
  ``by`` (a string, or null for a fail-closed denial), ``reason`` (a
  string) exactly for ``deny`` and ``terminate`` (whose call has ``ok``
  false), ``arguments`` (an object) exactly for ``modify``, and ``note``
  (a string) when signed.
* ``stop`` -- ``reason`` one of :data:`agentloop.messages.STOP_REASONS`
  (read when the record is checked, so a new reason is known at once);
  ``steps`` the number of assistant records; ``tokens`` the last
  ``total_tokens`` (0 without one); ``detail`` a string.

Members not named here are ignored (``docs/format.md`` section 8: new
optional members may appear within ``agentloop/1``).  Every test is
type-exact (``true`` is not ``1``) and never hashes a value from the file, so
no JSON value of any type can make a check raise.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Dict, List, Mapping, Tuple

from .. import messages
from .format import _a, _json_type, _short
from .gates import Gates

__all__ = ["Grammar"]

_COUNT = "an integer >= 0"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


_DECIMAL = re.compile(r"(0|[1-9][0-9]*)(\.[0-9]+)?\Z")


def _is_decimal(value: object) -> bool:
    """A plain decimal string as recorded amounts and prices are (``"0.075"``): no sign, no exponent."""
    return isinstance(value, str) and _DECIMAL.match(value) is not None


def _is_price_table(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(prices, dict) and all(_is_decimal(p) for p in prices.values()) for prices in value.values()
    )


_TESTS: Dict[str, Callable[[Any], bool]] = {
    "a decimal string": _is_decimal,
    "a number > 0": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0,
    "true": lambda v: v is True,
    "an object of prices (decimal strings) per model": _is_price_table,
    "a string": lambda v: isinstance(v, str),
    "a string or null": lambda v: v is None or isinstance(v, str),
    "an object": lambda v: isinstance(v, dict),
    "an array": lambda v: isinstance(v, list),
    "a boolean": lambda v: isinstance(v, bool),
    _COUNT: _is_count,
    "an integer >= 1": lambda v: _is_int(v) and v >= 1,
}


def _member(where: str, obj: Mapping[str, Any], name: str, want: str, optional: bool = False) -> str:
    """Why ``obj[name]`` is not ``want`` (a key of ``_TESTS``), or ``""``."""
    if name not in obj:
        return "" if optional else "%s has no %r" % (where, name)
    value = obj[name]
    if _TESTS[want](value):
        return ""
    return "%s.%s is %s, expected %s" % (where, name, _shown(value), want)


def _shown(value: object) -> str:
    """A value in a detail: bounded ASCII; a string always quoted (``"3"`` is not ``3``)."""
    if isinstance(value, str):
        return json.dumps(value[:12] + ("..." if len(value) > 12 else ""))
    if isinstance(value, (dict, list)) or value is None or isinstance(value, bool):
        return _a(_json_type(value)) if value is not None else "null"
    return _short(value)


def _first(*problems: str) -> str:
    return next((p for p in problems if p), "")


def _usage_problem(usage: object, tokens: int) -> str:
    """An assistant record's ``usage`` (when an object): two counts adding up to ``tokens``."""
    if not isinstance(usage, dict):
        return ""
    problem = _first(
        _member("payload.usage", usage, "input_tokens", _COUNT),
        _member("payload.usage", usage, "output_tokens", _COUNT),
    )
    if problem:
        return problem
    if usage["input_tokens"] + usage["output_tokens"] != tokens:
        return "payload.tokens is %s, expected %d (usage input_tokens plus output_tokens)" % (
            _shown(tokens),
            usage["input_tokens"] + usage["output_tokens"],
        )
    return ""


def _provider_data(data: object) -> str:
    """Why an assistant record's ``provider_data`` (an object, when present) is not ``{"api": string,
    "items": [object, ...]}``, or ``""``; the items themselves are the provider's and not checked."""
    if not isinstance(data, dict):
        return ""
    problem = _first(
        _member("payload.provider_data", data, "api", "a string"),
        _member("payload.provider_data", data, "items", "an array"),
    )
    if problem:
        return problem
    for position, item in enumerate(data["items"]):
        if not isinstance(item, dict):
            return "payload.provider_data.items[%d] is %s, expected an object" % (position, _a(_json_type(item)))
    return ""


def _call_problem(where: str, call: object) -> str:
    """One entry of an assistant record's ``tool_calls``."""
    if not isinstance(call, dict):
        return "%s is %s, expected an object" % (where, _a(_json_type(call)))
    problem = _first(
        _member(where, call, "id", "a string"),
        _member(where, call, "name", "a string"),
    )
    if problem:
        return problem
    if "arguments" not in call:
        return "%s has no 'arguments'" % (where,)
    arguments = call["arguments"]
    if arguments is None:
        return _member(where, call, "arguments_error", "a string")
    if not isinstance(arguments, dict):
        return "%s.arguments is %s, expected an object or null" % (where, _shown(arguments))
    if "arguments_error" in call:
        return "%s has an 'arguments_error' beside its arguments" % (where,)
    return ""


def _plain_assistant(payload: Mapping[str, Any]) -> bool:
    """The common assistant payload, cheaply: ``True`` only when every member check of
    :meth:`Grammar._assistant` passes (exact built-in types, none of the optional members)."""
    if type(payload) is not dict:  # a subclass may answer get() otherwise: the full checks decide
        return False
    step, tokens, total = payload.get("step"), payload.get("tokens"), payload.get("total_tokens")
    return (
        type(step) is int
        and step >= 0
        and type(payload.get("text")) is str
        and type(payload.get("tool_calls")) is list
        and type(tokens) is int
        and tokens >= 0
        and type(total) is int
        and total >= 0
        and "usage" not in payload
        and "truncated" not in payload
        and "provider_data" not in payload
    )


def _plain_call(call: object) -> bool:
    """A tool call :func:`_call_problem` finds nothing in, cheaply: ``True`` only when it finds nothing."""
    return (
        type(call) is dict
        and type(call.get("id")) is str
        and type(call.get("name")) is str
        and type(call.get("arguments")) is dict
        and "arguments_error" not in call
    )


def _plain_tool(payload: Mapping[str, Any]) -> bool:
    """The common tool payload, cheaply: ``True`` only when :func:`_tool_members` finds nothing."""
    if type(payload) is not dict:  # a subclass may answer get() otherwise: the full checks decide
        return False
    step = payload.get("step")
    return (
        type(step) is int
        and step >= 0
        and type(payload.get("id")) is str
        and type(payload.get("name")) is str
        and type(payload.get("ok")) is bool
        and "approval" not in payload
    )


def _tool_members(payload: Mapping[str, Any]) -> str:
    return _first(
        _member("payload", payload, "step", _COUNT),
        _member("payload", payload, "id", "a string"),
        _member("payload", payload, "name", "a string"),
        _member("payload", payload, "ok", "a boolean"),
        _member("payload", payload, "approval", "an object", optional=True),
    )


class Grammar:
    """The payload checks of one transcript, record by record, in O(1) state
    (plus the calls of the current turn, which one record bounds)."""

    def __init__(self) -> None:
        self.steps = 0  # assistant records so far
        self.tokens = 0  # the last total_tokens
        self.step_calls: List[Tuple[object, object]] = []  # (id, name) of the last assistant's calls
        self.answered = 0  # how many of them have their tool record
        self.gates = Gates.unknown()  # what the task record says about approval (agentloop.transcript.gates)

    def problem(self, kind: str, payload: object) -> str:
        """Check one record of a known ``kind`` (in its legal place); return its first problem or ``""``."""
        if not isinstance(payload, dict):
            if kind == "assistant":  # the turn still counts, so later steps are judged against it
                self.steps += 1
                self.step_calls, self.answered = [], 0
            return "payload is %s, expected an object" % (_a(_json_type(payload)),)
        if kind == "task":
            return self._task(payload)
        if kind == "assistant":
            return self._assistant(payload)
        if kind == "tool":
            return self._tool(payload)
        return self._stop(payload)

    def _task(self, payload: Mapping[str, Any]) -> str:
        problem = self._task_members(payload)
        if not problem:
            self.gates = Gates.of(payload)
        return problem

    @staticmethod
    def _task_members(payload: Mapping[str, Any]) -> str:
        problem = _first(
            _member("payload", payload, "task", "a string"),
            _member("payload", payload, "budgets", "an object"),
            _member("payload", payload, "tools", "an array"),
            _member("payload", payload, "model", "an object", optional=True),
            _member("payload", payload, "approval", "an object", optional=True),
        )
        if problem:
            return problem
        for name, rule in payload.get("approval", {}).items():
            if rule not in ("always", "predicate"):
                return 'payload.approval[%s] is %s, expected "always" or "predicate"' % (_shown(name), _shown(rule))
        problem = Gates.task_problem(payload)
        if problem:
            return problem
        budgets = payload["budgets"]
        problem = _first(
            _member("payload.budgets", budgets, "max_steps", _COUNT),
            _member("payload.budgets", budgets, "max_tokens", _COUNT),
            _member("payload.budgets", budgets, "stop_sentinel", "a string or null"),
            _member("payload.budgets", budgets, "max_record_bytes", "an integer >= 1", optional=True),
            _member("payload.budgets", budgets, "max_tool_calls", _COUNT, optional=True),
            _member("payload.budgets", budgets, "max_cost", "a decimal string", optional=True),
            _member(
                "payload.budgets", budgets, "prices", "an object of prices (decimal strings) per model", optional=True
            ),
            _member("payload.budgets", budgets, "max_seconds", "a number > 0", optional=True),
            _member("payload.budgets", budgets, "tool_timeout", "a number > 0", optional=True),
            _member("payload.budgets", budgets, "tell_budgets", "true", optional=True),
        )
        if problem:
            return problem
        for position, entry in enumerate(payload["tools"]):
            where = "payload.tools[%d]" % (position,)
            if not isinstance(entry, dict):
                return "%s is %s, expected an object" % (where, _a(_json_type(entry)))
            problem = _first(
                _member(where, entry, "name", "a string"),
                _member(where, entry, "description", "a string"),
                _member(where, entry, "parameters", "an object"),
            )
            if problem:
                return problem
        return ""

    def _assistant(self, payload: Mapping[str, Any]) -> str:
        waiting, previous, total = self._tally(payload)
        if waiting > 0:
            return "an assistant record while %d call(s) of step %d await their tool records" % (waiting, previous)
        problem = "" if _plain_assistant(payload) else self._assistant_members(payload)
        if problem:
            return problem
        if payload["step"] != previous + 1:
            return "payload.step is %s, expected %d (one more than the assistant records before it)" % (
                _shown(payload["step"]),
                previous + 1,
            )
        tokens, running = payload["tokens"], payload["total_tokens"]
        if running != total + tokens:
            return "payload.total_tokens is %s, expected %d (the previous total %d plus tokens %d)" % (
                _shown(running),
                total + tokens,
                total,
                tokens,
            )
        problem = _usage_problem(payload.get("usage"), tokens)
        for position, call in enumerate(payload["tool_calls"]):
            if not problem and not _plain_call(call):
                problem = _call_problem("payload.tool_calls[%d]" % (position,), call)
        return problem or _provider_data(payload.get("provider_data"))

    @staticmethod
    def _assistant_members(payload: Mapping[str, Any]) -> str:
        return _first(
            _member("payload", payload, "step", _COUNT),
            _member("payload", payload, "text", "a string"),
            _member("payload", payload, "tool_calls", "an array"),
            _member("payload", payload, "tokens", _COUNT),
            _member("payload", payload, "total_tokens", _COUNT),
            _member("payload", payload, "usage", "an object", optional=True),
            _member("payload", payload, "truncated", "true", optional=True),
            _member("payload", payload, "provider_data", "an object", optional=True),
        )

    def _tally(self, payload: Mapping[str, Any]) -> Tuple[int, int, int]:
        """Count an assistant record, whatever it holds: ``(calls still awaited, steps and tokens before it)``."""
        waiting = len(self.step_calls) - self.answered
        previous, total = self.steps, self.tokens
        self.steps += 1
        self.step_calls, self.answered = [], 0
        calls = payload.get("tool_calls")
        if isinstance(calls, list):
            self.step_calls = [(c.get("id"), c.get("name")) if isinstance(c, dict) else (None, None) for c in calls]
        tokens, running = payload.get("tokens"), payload.get("total_tokens")
        if isinstance(running, int) and _is_count(running):
            self.tokens = running
        elif isinstance(tokens, int) and _is_count(tokens):
            self.tokens = total + tokens
        return waiting, previous, total

    def _tool(self, payload: Mapping[str, Any]) -> str:
        if self.answered >= len(self.step_calls):
            return "a tool record with no call awaiting its result (step %d asked for %d)" % (
                self.steps,
                len(self.step_calls),
            )
        call_id, name = self.step_calls[self.answered]
        self.answered += 1
        problem = "" if _plain_tool(payload) else _tool_members(payload)
        if problem:
            return problem
        if "approval" in payload:
            problem = self._approval(payload["approval"], payload["ok"])
            if problem:
                return problem
        if payload["step"] != self.steps:
            return "payload.step is %s, expected %d (the step that asked for the call)" % (
                _shown(payload["step"]),
                self.steps,
            )
        if payload["id"] != call_id or payload["name"] != name:
            return "payload answers call %s (%s), expected call %s (%s), call %d of step %d" % (
                _shown(payload["id"]),
                _shown(payload["name"]),
                _shown(call_id),
                _shown(name),
                self.answered - 1,
                self.steps,
            )
        if payload["ok"]:
            if "value" not in payload:
                return "payload has ok true and no 'value'"
            if "error" in payload:
                return "payload has ok true and an 'error'"
        elif "value" in payload:
            return "payload has ok false and a 'value'"
        else:
            problem = _member("payload", payload, "error", "a string")
        return problem or self.gates.problem(payload)

    @staticmethod
    def _approval(member: Mapping[str, Any], ok: bool) -> str:
        decisions = tuple(messages.APPROVAL_DECISIONS)
        decision = member.get("decision")
        if not isinstance(decision, str) or decision not in decisions:  # str first: never hash a list
            return "payload.approval.decision is %s, not one of %s" % (_shown(decision), ", ".join(decisions))
        problem = _first(
            "" if "by" in member and member["by"] is None else _member("payload.approval", member, "by", "a string"),
            _member("payload.approval", member, "note", "a string", optional=True),
        )
        if problem:
            return problem
        if decision in ("deny", "terminate"):
            if ok:
                return "payload has ok true and a %s decision" % (decision,)
            problem = _member("payload.approval", member, "reason", "a string")
        elif "reason" in member:
            problem = "payload.approval has a 'reason' with a %s decision" % (decision,)
        if problem:
            return problem
        if decision == "modify":
            problem = _member("payload.approval", member, "arguments", "an object")
        elif "arguments" in member:
            problem = "payload.approval has 'arguments' with a %s decision" % (decision,)
        if problem:
            return problem
        if member["by"] is None and decision != "deny":
            return "payload.approval.by is null with a %s decision (only a fail-closed deny has no one)" % (decision,)
        return ""

    def _stop(self, payload: Mapping[str, Any]) -> str:
        problem = _first(
            _member("payload", payload, "reason", "a string"),
            _member("payload", payload, "steps", _COUNT),
            _member("payload", payload, "tokens", _COUNT),
            _member("payload", payload, "detail", "a string"),
        )
        if problem:
            return problem
        reasons = tuple(messages.STOP_REASONS)  # read now: the closed set of this version
        if payload["reason"] not in reasons:
            return "payload.reason is %s, not one of %s" % (_shown(payload["reason"]), ", ".join(reasons))
        if payload["steps"] != self.steps:
            return "payload.steps is %s, but the run has %d assistant records" % (_shown(payload["steps"]), self.steps)
        if payload["tokens"] != self.tokens:
            return "payload.tokens is %s, but the last total_tokens is %d" % (_shown(payload["tokens"]), self.tokens)
        return ""
