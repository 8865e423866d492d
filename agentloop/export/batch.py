"""A batch read for export or display: its ledger's verdict first, then each run.

:func:`load_batch` takes the verdict of
:func:`~agentloop.batch.audit.audit_batch` over every ``*.jsonl`` file in the
manifest's folder: the verdict ``agentloop verify DIR/*.jsonl --manifest
DIR/manifest.jsonl`` prints, never one computed another way.
:func:`read_batch` goes on only when that verdict holds, and reads each run
the ledger lists as ``ok`` again with :func:`~.run.read_run`, checking that
its bytes are still the ones the ledger names (their SHA-256).  A run the
ledger lists as ``worker_error`` or ``rejected`` has no transcript: it is a
:class:`~.run.FailedRun`.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

from ..batch.audit import AuditResult, audit_batch
from ..batch.ledger import current, ledger_root, parse_ledger
from ..errors import ExportError
from ..signing.note import Verifier
from .run import FailedRun, Run, read_run

__all__ = ["Batch", "load_batch", "read_batch", "batch_problems"]

#: How many runs a problem list names before it counts the rest.
_NAMED = 5


@dataclass(frozen=True)
class Batch:
    """A ledger and its verdict: ``lines`` in ledger order, ``audit`` from :func:`audit_batch`.

    ``root`` is the ledger's RFC 6962 root (hex) and ``sha256`` its file's.
    """

    manifest: str
    lines: List[Dict[str, Any]]
    audit: AuditResult
    root: str
    sha256: str

    @property
    def folder(self) -> str:
        return os.path.dirname(self.manifest) or "."

    def transcript(self, name: str) -> str:
        """Where the run ``name``'s transcript is: ``NAME.jsonl`` beside the manifest."""
        return os.path.join(self.folder, name + ".jsonl")


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def load_batch(
    manifest: str,
    *,
    checkpoint: Optional[str] = None,
    key: Optional[bytes] = None,
    verifiers: Sequence[Verifier] = (),
    require: Optional[Sequence[str]] = None,
) -> Batch:
    """The ledger at ``manifest`` and the verdict on the transcripts beside it.

    1. the manifest parses (:func:`~agentloop.batch.ledger.parse_ledger`);
    2. :func:`~agentloop.batch.audit.audit_batch` checks every ``*.jsonl``
       file of its folder against it (and the ``checkpoint`` note, signed by
       ``key``/``verifiers`` when given);
    3. the manifest is read again: a ledger that changed meanwhile is an
       :class:`~agentloop.errors.ExportError`.

    ``OSError`` and :class:`~agentloop.errors.MalformedManifestError` (and,
    for the checkpoint, :class:`~agentloop.errors.MalformedCheckpointError`)
    propagate.
    """
    # 1.
    data = _read(manifest)
    lines = parse_ledger(data)
    # 2.
    folder = os.path.dirname(manifest) or "."
    files = sorted(glob.glob(os.path.join(glob.escape(folder), "*.jsonl")))
    audit = audit_batch(files, manifest, checkpoint=checkpoint, key=key, verifiers=verifiers, require=require)
    # 3.
    if _read(manifest) != data:
        raise ExportError(manifest, "the manifest changed while it was checked")
    return Batch(manifest, lines, audit, ledger_root(data), hashlib.sha256(data).hexdigest())


def _names(items: Sequence[str]) -> str:
    shown = ", ".join(json.dumps(n, ensure_ascii=False) for n in items[:_NAMED])
    return shown + (" and %d more" % (len(items) - _NAMED,) if len(items) > _NAMED else "")


def batch_problems(audit: AuditResult) -> List[str]:
    """What fails the ledger's verdict, one phrase per kind of problem (``[]`` when it holds)."""
    problems = []
    if audit.altered:
        problems.append("%d altered (%s)" % (len(audit.altered), _names([n for n, _ in audit.altered])))
    if audit.missing:
        problems.append("%d missing (%s)" % (len(audit.missing), _names(list(audit.missing))))
    if audit.extra:
        problems.append(
            "%d extra file%s (%s)" % (len(audit.extra), "" if len(audit.extra) == 1 else "s", _names(list(audit.extra)))
        )
    if audit.repeated:
        problems.append("%d repeated (%s)" % (len(audit.repeated), _names([p for p, _ in audit.repeated])))
    if audit.checkpoint:
        problems.append("the checkpoint fails: %s" % (audit.checkpoint,))
    return problems


def read_batch(
    manifest: str,
    *,
    checkpoint: Optional[str] = None,
    key: Optional[bytes] = None,
    verifiers: Sequence[Verifier] = (),
    require: Optional[Sequence[str]] = None,
) -> List[Union[Run, FailedRun]]:
    """Every run of the batch at ``manifest``, in ledger order, once its verdict holds.

    A run is its last ledger line (:func:`~agentloop.batch.ledger.current`):
    a line a resumed batch retried is not a run of its own.

    Raises :class:`~agentloop.errors.ExportError` when the ledger's verdict
    fails (a run altered, missing, an extra or repeated file, a checkpoint
    that does not hold) or a transcript changed after it was checked.
    """
    batch = load_batch(manifest, checkpoint=checkpoint, key=key, verifiers=verifiers, require=require)
    problems = batch_problems(batch.audit)
    if problems:
        raise ExportError(manifest, "the ledger's verdict fails: " + "; ".join(problems))
    runs: List[Union[Run, FailedRun]] = []
    for line in current(batch.lines).values():  # a run's last line: a retry supersedes the line that failed
        name = line["name"]
        if line["status"] != "ok":
            runs.append(FailedRun(name, line["origin"], line["status"], str(line.get("error", line.get("reason")))))
            continue
        run = read_run(batch.transcript(name), name)
        if run.sha256 != line["sha256"] or run.origin != line["origin"]:
            raise ExportError(batch.transcript(name), "it changed after the ledger's verdict was taken")
        runs.append(run)
    return runs
