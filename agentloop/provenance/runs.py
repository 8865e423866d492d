"""What agentloop states about one finished run, read once from its transcript.

Every format of this package describes a run by the same facts, taken
from :func:`agentloop.batch.facts.transcript_facts` in the one pass that
verifies the chain, hashes the file and builds its Merkle tree: so what is
signed is what was verified, byte for byte.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

from ..batch.facts import transcript_facts
from ..canonical import canonical_bytes
from ..errors import ProvenanceError, UnrecordableError
from ..transcript.checkpoint import ORIGIN_PREFIX

__all__ = ["checked_facts", "run_fields", "ok_line", "differing"]

_MISSING = object()


def checked_facts(path: str, purpose: str = "attested") -> Dict[str, Any]:
    """The facts (``task`` included) of a transcript that verifies and ends in a stop record.

    Raises :class:`~agentloop.errors.ProvenanceError` naming the file: it
    cannot be read, does not verify, or is an unfinished run; ``purpose``
    ends the message (``nothing is attested that was not verified``).
    """
    facts = transcript_facts(path, task=True)
    if not facts["exists"]:
        raise ProvenanceError(path, "cannot be read: %s" % (facts["fault"],))
    if not facts["ok"]:
        raise ProvenanceError(
            path, "does not verify (%s): nothing is %s that was not verified" % (facts["fault"], purpose)
        )
    if not facts["complete"] or facts["task"] is None:
        raise ProvenanceError(path, "does not end in a stop record: an unfinished run is not %s" % (purpose,))
    return facts


def run_fields(facts: Mapping[str, Any]) -> Dict[str, Any]:
    """The run's fields in agentloop's predicates.

    ``origin``, ``records``, ``head``, ``root``, ``stop``, ``steps``,
    ``tokens``, ``model``, ``tools``, ``budgets``.

    ``model`` and ``budgets`` are record 0's own (``model`` is ``None``
    when it has none); ``tools`` the names it offered, sorted.
    """
    task: Mapping[str, Any] = facts["task"]
    tools = task.get("tools")
    names = (
        sorted(t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str))
        if isinstance(tools, list)
        else []
    )
    return {
        "origin": ORIGIN_PREFIX + facts["first"],
        "records": facts["records"],
        "head": facts["head"],
        "root": facts["root"],
        "stop": facts["stop"],
        "steps": facts["steps"],
        "tokens": facts["tokens"],
        "model": task.get("model"),
        "tools": names,
        "budgets": task.get("budgets"),
    }


def ok_line(name: str, facts: Mapping[str, Any]) -> Dict[str, Any]:
    """The batch ledger line of run ``name`` finished ``ok`` with these facts (:mod:`agentloop.batch.ledger`)."""
    return {
        "name": name,
        "origin": ORIGIN_PREFIX + facts["first"],
        "status": "ok",
        "records": facts["records"],
        "head": facts["head"],
        "root": facts["root"],
        "stop": facts["stop"],
        "sha256": facts["sha256"],
    }


def _same(one: Any, other: Any) -> bool:
    """Equal as JSON: their RFC 8785 bytes (so ``true`` is not ``1``, as it is in Python)."""
    if one is _MISSING or other is _MISSING:
        return one is other
    try:
        return canonical_bytes(one) == canonical_bytes(other)
    except UnrecordableError:
        return False


def differing(expected: Mapping[str, Any], found: Mapping[str, Any]) -> str:
    """The first key, in sorted order, whose values differ between the two as JSON (``""`` when none)."""
    for key in sorted(set(expected) | set(found), key=str):
        if not _same(expected.get(key, _MISSING), found.get(key, _MISSING)):
            return str(key)
    return ""
