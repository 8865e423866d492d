"""The approval part of the ``agentloop/1`` payload grammar: gated calls have their decisions.

``docs/format.md`` section 2 ("The payload grammar", the ``task`` and
``tool`` rules on approval).  The task record says which tools are gated
(``approval``: name -> ``"always"`` or ``"predicate"``), whether each call of
a predicate-gated tool records the predicate's outcome
(``predicate_outcomes: true``) and whether decisions are signed
(``approval_signer``).  Then, for a ``tool`` record whose base members are
well formed (:class:`~agentloop.transcript.grammar.Grammar` checked them),
in a run whose task record breaks no rule of the grammar (after one that
does, what is gated is not known, and these rules are not applied):

1. ``gated``, when present, is ``false``, stands on a call of a
   predicate-gated tool in a run that records outcomes, and never beside
   ``approval``;
2. ``approval`` stands only on a call of a gated tool;
3. a call that ran (``ok: true``) of a tool gated ``"always"`` has its
   ``approval``; of a tool gated by a predicate, in a run that records
   outcomes, its ``approval`` or ``"gated": false``;
4. in a run that names an ``approval_signer``, every decision a person made
   (``by`` not null) carries a ``note`` (whose signature
   :func:`agentloop.verify_approvals` checks against the key).

A decision stripped from a call that ran, or a note stripped from a decision,
is so a ``bad_payload`` at that record, with no key needed.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Tuple

__all__ = ["Gates"]

_HEX = frozenset("0123456789abcdef")


def _key_id(value: object) -> bool:
    return isinstance(value, str) and len(value) == 8 and _HEX.issuperset(value)


def _name(value: object) -> str:
    return json.dumps(value[:40] if isinstance(value, str) else value)


class Gates:
    """What a run's task record says about approval, and the rules it sets for its ``tool`` records."""

    def __init__(self, rules: Mapping[str, str], outcomes: bool, signer: bool, known: bool = True) -> None:
        self.rules: Dict[str, str] = dict(rules)
        self.outcomes = outcomes
        self.signer = signer
        self.known = known  # False until a task record that breaks no rule says what is gated

    def key(self) -> Tuple[bool, bool, bool, Tuple[Tuple[str, str], ...]]:
        """The gates as a value to compare (a part of a file judged apart must have seen these:
        :mod:`agentloop.transcript.parallel`)."""
        rules = tuple(sorted((name, json.dumps(rule, sort_keys=True)) for name, rule in self.rules.items()))
        return self.known, self.outcomes, self.signer, rules

    @classmethod
    def unknown(cls) -> "Gates":
        """Before a sound task record (or after one that breaks a rule): nothing to judge tool records by."""
        return cls({}, False, False, known=False)

    @staticmethod
    def task_problem(payload: Mapping[str, Any]) -> str:
        """The first problem of the task record's ``approval_signer`` and ``predicate_outcomes`` ("" when none)."""
        has_policy = isinstance(payload.get("approval"), dict)
        if "predicate_outcomes" in payload:
            if payload["predicate_outcomes"] is not True:
                return "payload.predicate_outcomes is not true (the member is true when set, absent otherwise)"
            if not has_policy:
                return "payload has 'predicate_outcomes' and no 'approval'"
        if "approval_signer" in payload:
            signer = payload["approval_signer"]
            if (
                not isinstance(signer, dict)
                or not isinstance(signer.get("name"), str)
                or not _key_id(signer.get("key_id"))
            ):
                return 'payload.approval_signer is not {"name": a string, "key_id": 8 lowercase hex digits}'
            if not has_policy:
                return "payload has 'approval_signer' and no 'approval'"
        return ""

    @classmethod
    def of(cls, payload: Mapping[str, Any]) -> "Gates":
        """The gates of a task record that passed :meth:`task_problem` (and the grammar's own checks)."""
        policy = payload.get("approval")
        rules = {name: rule for name, rule in policy.items()} if isinstance(policy, dict) else {}
        return cls(rules, payload.get("predicate_outcomes") is True, "approval_signer" in payload)

    def problem(self, payload: Mapping[str, Any]) -> str:
        """The first problem of a ``tool`` record (``name`` a string, ``ok`` a boolean, ``approval`` well formed)."""
        if not self.known or not self.rules and "gated" not in payload and "approval" not in payload:
            return ""  # nothing gated, nothing claimed: no rule below can apply
        name = payload["name"]
        rule = self.rules.get(name)
        member = payload.get("approval")
        problem = self._outcome(payload, rule, member) if "gated" in payload else ""
        if problem:
            return problem
        if member is not None and rule is None:
            return "payload has an 'approval', but the task record gates no tool %s" % (_name(name),)
        if payload["ok"] is True and member is None:
            if rule == "always":
                return "payload has ok true and no 'approval', but the task record gates tool %s always" % (
                    _name(name),
                )
            if rule == "predicate" and self.outcomes and "gated" not in payload:
                return (
                    "payload has ok true and neither 'approval' nor \"gated\": false, but the task record gates "
                    "tool %s by a predicate and records its outcomes" % (_name(name),)
                )
        if self.signer and member is not None and member.get("by") is not None and "note" not in member:
            return "payload.approval has no 'note', but the task record names an approval signer"
        return ""

    def _outcome(self, payload: Mapping[str, Any], rule: Any, member: Any) -> str:
        """Rule 1: ``"gated": false``, on a predicate's call in a run that records outcomes, without a decision."""
        if payload["gated"] is not False:
            return "payload.gated is not false (the member is false when set, absent otherwise)"
        if member is not None:
            return "payload has both 'gated' and 'approval'"
        if rule != "predicate" or not self.outcomes:
            return "payload has 'gated', but the task record records no predicate outcome for tool %s" % (
                _name(payload["name"]),
            )
        return ""
