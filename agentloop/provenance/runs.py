"""What agentloop states about one finished run, read once from its transcript, and about a batch.

Every format of this package describes a run by the same facts, taken
from :func:`agentloop.batch.facts.transcript_facts` in the one pass that
verifies the chain, hashes the file and builds its Merkle tree: so what is
signed is what was verified, byte for byte.  :func:`checked_batch` checks a
batch (its ledger against its checkpoint, each ``ok`` transcript against
its line) before an attestation or a receipt is signed about it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Tuple

from ..batch.facts import transcript_facts
from ..batch.ledger import check_manifest_checkpoint, parse_ledger, parse_manifest_checkpoint
from ..batch.worker import transcript_path
from ..canonical import canonical_bytes
from ..errors import MalformedCheckpointError, MalformedManifestError, ProofError, ProvenanceError, UnrecordableError
from ..transcript.checkpoint import ORIGIN_PREFIX
from ..transcript.durable import read_small

__all__ = [
    "MAX_READ_BYTES",
    "checked_facts",
    "run_fields",
    "ok_line",
    "differing",
    "read_file",
    "CheckedBatch",
    "checked_batch",
]

#: The longest manifest or checkpoint read here, in bytes.
MAX_READ_BYTES = 64 << 20

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


def read_file(path: str, what: str) -> bytes:
    """A manifest, checkpoint or bundle of at most :data:`MAX_READ_BYTES`; :class:`ProvenanceError` naming it."""
    try:
        return read_small(path, MAX_READ_BYTES)
    except OSError as exc:
        raise ProvenanceError("%s %s" % (what, path), "cannot be read: %s" % (exc.strerror or exc,)) from None


def _batch_origin(manifest: str, data: bytes) -> str:
    """The batch's origin, from the checkpoint beside the manifest, checked against it."""
    stem = manifest[: -len(".jsonl")] if manifest.endswith(".jsonl") else manifest
    path = stem + ".checkpoint"
    try:
        checkpoint = parse_manifest_checkpoint(read_file(path, "the ledger's checkpoint"))
        check_manifest_checkpoint(checkpoint, data)
    except (MalformedCheckpointError, ProofError) as exc:
        raise ProvenanceError("the ledger's checkpoint %s" % (path,), str(exc)) from None
    return checkpoint.origin


@dataclass(frozen=True)
class CheckedBatch:
    """A batch ledger that matches its checkpoint, and the facts of each ``ok`` transcript, which matches its line.

    ``data`` the ledger's bytes, ``lines`` its lines, ``origin`` its
    checkpoint's origin, ``facts`` per ``ok`` run's name.
    """

    data: bytes
    lines: Tuple[Dict[str, Any], ...]
    origin: str
    facts: Dict[str, Dict[str, Any]] = field(hash=False)


def checked_batch(manifest: str, purpose: str = "attested") -> CheckedBatch:
    """Check the batch whose ledger is ``manifest`` (transcripts beside it) before anything is signed about it.

    1. the ledger parses and its checkpoint (``manifest.checkpoint``) is its
       tree head; the checkpoint names the batch;
    2. every ``ok`` run's transcript verifies, ends in a stop record and is
       the one its line describes (bytes, chain, tree, stop).

    Raises :class:`~agentloop.errors.ProvenanceError` naming the file.
    """
    # 1.
    data = read_file(manifest, "manifest")
    try:
        lines = parse_ledger(data)
    except MalformedManifestError as exc:
        raise ProvenanceError("manifest %s" % (manifest,), str(exc)) from None
    origin = _batch_origin(manifest, data)
    # 2.
    folder = os.path.dirname(manifest)
    facts: Dict[str, Dict[str, Any]] = {}
    for line in lines:
        if line["status"] != "ok":
            continue
        path = transcript_path(folder, line["name"])
        found = checked_facts(path, purpose)
        key = differing(line, ok_line(line["name"], found))
        if key:
            raise ProvenanceError(path, "is not the transcript its ledger line describes: its %s differs" % (key,))
        facts[line["name"]] = found
    return CheckedBatch(data, tuple(dict(line) for line in lines), origin, facts)
