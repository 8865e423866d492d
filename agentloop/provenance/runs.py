"""What agentloop states about one finished run, read once from its transcript, and about a batch.

Every format of this package describes a run by the same facts, taken
from :func:`agentloop.batch.facts.transcript_facts` in the one pass that
verifies the chain, hashes the file and builds its Merkle tree: so what is
signed is what was verified, byte for byte.  :func:`checked_ledger` checks
a batch's ledger against the checkpoint beside it, before a signed
statement is made of it; :func:`checked_batch` that and each ``ok``
transcript against its line, before an attestation or a receipt is signed
about the batch.  :func:`is_ledger` tells a ledger from a transcript.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Sequence, Tuple

from ..batch.facts import transcript_facts
from ..batch.ledger import (
    ManifestCheckpoint,
    check_manifest_checkpoint,
    make_checkpoint,
    parse_ledger,
    parse_manifest_checkpoint,
)
from ..batch.worker import transcript_path
from ..canonical import canonical_bytes
from ..errors import (
    BadSignatureError,
    MalformedCheckpointError,
    MalformedManifestError,
    ProofError,
    ProvenanceError,
    UnrecordableError,
)
from ..transcript.checkpoint import ORIGIN_PREFIX
from ..signing.note import Verifier
from ..transcript.durable import read_small

__all__ = [
    "MAX_READ_BYTES",
    "checked_facts",
    "run_fields",
    "ok_line",
    "differing",
    "read_file",
    "is_ledger",
    "ledger_checkpoint_path",
    "CheckedLedger",
    "checked_ledger",
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


def is_ledger(path: str) -> bool:
    """Whether ``path`` holds a batch ledger: its first line is a JSON object with ``status`` and no ``hash``.

    Every ledger line has a ``status`` (:mod:`agentloop.batch.ledger`) and
    every transcript record a ``hash``; anything else is taken for a
    transcript, whose verification then says what is wrong with it.
    Raises :class:`~agentloop.errors.ProvenanceError` if it cannot be read.
    """
    try:
        with open(path, "rb") as handle:
            head = handle.readline(4096)
    except OSError as exc:
        raise ProvenanceError(path, "cannot be read: %s" % (exc.strerror or exc,)) from None
    try:
        first = json.loads(head.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(first, dict) and "status" in first and "hash" not in first


def ledger_checkpoint_path(manifest: str) -> str:
    """The checkpoint beside a ledger: ``.jsonl`` replaced by ``.checkpoint`` (``manifest.checkpoint``)."""
    stem = manifest[: -len(".jsonl")] if manifest.endswith(".jsonl") else manifest
    return stem + ".checkpoint"


@dataclass(frozen=True)
class CheckedLedger:
    """A batch ledger that parses and is the tree head of the checkpoint beside it.

    ``data`` its bytes, ``lines`` its lines, ``checkpoint`` its checkpoint
    as :func:`~agentloop.batch.ledger.make_checkpoint` gives it, unsigned:
    the origin (which names the spec list) from the file beside it, the
    size and root recomputed from ``data``.
    """

    data: bytes
    lines: Tuple[Dict[str, Any], ...]
    checkpoint: ManifestCheckpoint


def checked_ledger(manifest: str, verifiers: Sequence[Verifier] = ()) -> CheckedLedger:
    """Check the ledger ``manifest`` before anything is stated about it; the runs' transcripts are not read.

    1. the ledger parses (:func:`~agentloop.batch.ledger.parse_ledger`);
    2. the checkpoint beside it (:func:`ledger_checkpoint_path`) parses and
       its size and root are the ledger's; its origin names the batch.  A
       signature line by one of ``verifiers`` (the stating key's own) must
       verify; other signatures are not checked: a ledger is signed with the
       batch's key, which whoever states it need not hold (``verify
       --manifest M --checkpoint C --trust PUB`` checks them).

    Raises :class:`~agentloop.errors.ProvenanceError` naming the file.
    """
    # 1.
    data = read_file(manifest, "manifest")
    try:
        lines = parse_ledger(data)
    except MalformedManifestError as exc:
        raise ProvenanceError("manifest %s" % (manifest,), str(exc)) from None
    # 2.
    path = ledger_checkpoint_path(manifest)
    try:
        checkpoint = parse_manifest_checkpoint(read_file(path, "the ledger's checkpoint"))
        signed = {(line.name, line.key_id) for line in checkpoint.signatures}
        own = [verifier for verifier in verifiers if (verifier.name, verifier.key_id) in signed]
        check_manifest_checkpoint(checkpoint, data, verifiers=own)
    except (MalformedCheckpointError, ProofError, BadSignatureError) as exc:
        raise ProvenanceError("the ledger's checkpoint %s" % (path,), str(exc)) from None
    return CheckedLedger(data, tuple(dict(line) for line in lines), make_checkpoint(checkpoint.origin, data))


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
    ledger = checked_ledger(manifest)
    # 2.
    folder = os.path.dirname(manifest)
    facts: Dict[str, Dict[str, Any]] = {}
    for line in ledger.lines:
        if line["status"] != "ok":
            continue
        path = transcript_path(folder, line["name"])
        found = checked_facts(path, purpose)
        key = differing(line, ok_line(line["name"], found))
        if key:
            raise ProvenanceError(path, "is not the transcript its ledger line describes: its %s differs" % (key,))
        facts[line["name"]] = found
    return CheckedBatch(ledger.data, ledger.lines, ledger.checkpoint.origin, facts)
