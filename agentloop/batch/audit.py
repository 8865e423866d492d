"""A batch checked against its ledger: :func:`audit_batch`, behind ``agentloop verify --manifest``.

Every file given is read once (:func:`~agentloop.batch.facts.transcript_facts`),
in ``workers`` processes, and compared with the manifest line of the same
name (the file name without ``.jsonl``).  The verdict names runs that are
*missing* (an ``ok`` line with no file), *extra* (a file with no ``ok``
line), *repeated* (a second file for a run already given) and *altered* (a
file whose bytes, chain or tree differ from its line).
"""

from __future__ import annotations


import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..batch.executors import process_pool
from ..errors import AgentloopError
from ..signing.note import Verifier
from .facts import difference as _difference, transcript_facts
from .ledger import check_manifest_checkpoint, current, parse_ledger, parse_manifest_checkpoint

__all__ = ["AuditResult", "audit_batch", "run_name"]


def run_name(path: str) -> str:
    """The run a transcript file is for: its file name without ``.jsonl``."""
    base = os.path.basename(path)
    return base[: -len(".jsonl")] if base.endswith(".jsonl") else base


@dataclass(frozen=True)
class AuditResult:
    """The verdict on a batch.  Names are run names; ``extra`` holds paths.

    ``repeated`` holds ``(path, first)`` for a file that names the same run
    as a file given before it (``first``); it fails the audit like ``extra``,
    since two files cannot both be the run the ledger line describes.

    ``failed`` lists the runs whose ledger line (their last) is not ``ok``,
    as ``(name, status: error)``: runs the batch itself did not complete.
    They fail the audit as they fail the batch (``agentloop batch`` exits 1
    on them too).  ``checkpoint`` is ``None`` when none was checked (the
    ledger itself is then taken on trust), ``""`` when it holds, else the
    reason it does not.
    """

    runs: int
    verified: Tuple[str, ...]
    missing: Tuple[str, ...]
    extra: Tuple[str, ...]
    altered: Tuple[Tuple[str, str], ...]
    failed: Tuple[Tuple[str, str], ...]
    checkpoint: Optional[str] = None
    repeated: Tuple[Tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.repeated or self.altered or self.failed) and not self.checkpoint


def facts_of(paths: Sequence[str]) -> List[Dict[str, Any]]:
    """:func:`~agentloop.batch.facts.transcript_facts` of each path, in order (one task of a pool)."""
    return [transcript_facts(p) for p in paths]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _facts(paths: Sequence[str], workers: int) -> List[Dict[str, Any]]:
    """The facts of ``paths`` in ``workers`` processes: this one and ``workers - 1`` others.

    The paths are cut into ``workers`` contiguous slices of about the same
    number of bytes; this process reads the first while the pool reads the
    rest, so one worker costs no process and two cost one.
    """
    if workers <= 1 or len(paths) < 2:
        return facts_of(paths)
    sizes = [_size(p) + 256 for p in paths]  # 256: the cost of a file beyond its bytes
    slices: List[List[str]] = []
    total, start, acc = sum(sizes), 0, 0
    for index, size in enumerate(sizes):
        acc += size
        if acc * workers >= total * (len(slices) + 1) and len(slices) < workers - 1:
            slices.append(list(paths[start:index + 1]))
            start = index + 1
    slices.append(list(paths[start:]))
    with process_pool(len(slices) - 1, fork_if_alone=True) as pool:
        futures = [pool.submit(facts_of, part) for part in slices[1:]]
        out = facts_of(slices[0])
        for future in futures:
            out.extend(future.result())
    return out


def audit_batch(
    files: Sequence[str],
    manifest: str,
    *,
    checkpoint: Optional[str] = None,
    key: Optional[bytes] = None,
    verifiers: Sequence[Verifier] = (),
    require: Optional[Sequence[str]] = None,
    workers: int = 1,
) -> AuditResult:
    """Check ``files`` against the ledger in ``manifest`` (and its ``checkpoint`` note).

    1. the manifest parses (:func:`~agentloop.batch.ledger.parse_ledger`);
    2. with ``checkpoint``: it parses, covers exactly the manifest and,
       with ``key``/``verifiers``, is signed by them;
    3. the files (the manifest itself and the checkpoint skipped, so
       ``runs/*.jsonl`` can be passed) are read in ``workers`` processes;
    4. each is compared with its line: missing, extra, repeated, altered.

    A manifest or checkpoint that cannot be read or parsed raises
    (``OSError``, :class:`~agentloop.errors.MalformedManifestError`,
    :class:`~agentloop.errors.MalformedCheckpointError`).
    """
    # 1.
    with open(manifest, "rb") as handle:
        data = handle.read()
    lines = list(current(parse_ledger(data)).values())  # each run's last line: its status now
    # 2.
    verdict: Optional[str] = None
    if checkpoint is not None:
        with open(checkpoint, "rb") as handle:
            note = parse_manifest_checkpoint(handle.read(64 * 1024 + 1))
        try:
            check_manifest_checkpoint(note, data, key, verifiers, require)
            verdict = ""
        except AgentloopError as exc:
            verdict = str(exc)
    # 3.
    skip = {os.path.abspath(p) for p in (manifest, checkpoint) if p is not None}
    by_name: Dict[str, str] = {}
    extra: List[str] = []
    repeated: List[Tuple[str, str]] = []
    for path in files:
        if os.path.abspath(path) in skip:
            continue
        name = run_name(path)
        if name in by_name:
            repeated.append((path, by_name[name]))  # a second file for the same run
        else:
            by_name[name] = path
    ok_lines = {line["name"]: line for line in lines if line["status"] == "ok"}
    extra.extend(path for name, path in by_name.items() if name not in ok_lines)
    present = [name for name in ok_lines if name in by_name]
    facts = dict(zip(present, _facts([by_name[name] for name in present], workers)))
    # 4.
    altered = []
    verified = []
    for name in present:
        why = _difference(ok_lines[name], facts[name])
        if why:
            altered.append((name, why))
        else:
            verified.append(name)
    return AuditResult(
        runs=len(lines),
        verified=tuple(verified),
        missing=tuple(name for name in ok_lines if name not in by_name),
        extra=tuple(extra),
        repeated=tuple(repeated),
        altered=tuple(altered),
        failed=tuple(
            (line["name"], "%s: %s" % (line["status"], line.get("error", line.get("reason"))))
            for line in lines
            if line["status"] != "ok"
        ),
        checkpoint=verdict,
    )
