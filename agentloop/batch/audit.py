"""A batch checked against its ledger: :func:`audit_batch`, behind ``agentloop verify --manifest``.

Every file given is read once (:func:`~agentloop.batch.facts.transcript_facts`),
in ``workers`` processes, and compared with the manifest line of the same
name (the file name without ``.jsonl``).  The verdict names runs that are
*missing* (an ``ok`` line with no file), *extra* (a file with no ``ok``
line), *repeated* (a second file for a run already given) and *altered* (a
file whose bytes, chain or tree differ from its line).
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from ..processes import process_pool
from ..errors import AgentloopError
from ..signing.note import Verifier
from .facts import difference as _difference, transcript_facts
from .ledger import check_manifest_checkpoint, iter_ledger, line_at, parse_manifest_checkpoint

__all__ = ["AuditResult", "audit_batch", "attestation_path", "run_name"]


def attestation_path(manifest: str) -> str:
    """Where ``batch --attest`` writes the batch's in-toto attestation: ``<manifest>.intoto.jsonl``
    (in-toto ``spec/v1/bundle.md``; :func:`agentloop.provenance.intoto.default_name`)."""
    return manifest + ".intoto.jsonl"


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


def differences(pairs: Sequence[Tuple[str, Mapping[str, Any]]]) -> List[str]:
    """For each ``(path, ledger line)``, why the file is not the run its line describes
    ("" when it is): a task of the pool."""
    return [_difference(line, transcript_facts(path)) for path, line in pairs]


#: Files per task of :func:`audit_batch`'s pool: small enough to keep each reply and the queue short.
CHUNK = 64

_Pair = Tuple[str, Mapping[str, Any]]


def _chunks(pairs: Iterable[_Pair]) -> Iterator[List[_Pair]]:
    """``pairs`` in lists of :data:`CHUNK`, made as they are asked for."""
    pairs = iter(pairs)
    chunk = list(itertools.islice(pairs, CHUNK))
    while chunk:
        yield chunk
        chunk = list(itertools.islice(pairs, CHUNK))


def _differences(pairs: Iterable[_Pair], count: int, workers: int) -> List[str]:
    """:func:`differences` of the ``count`` ``pairs`` in ``workers`` processes: this one and ``workers - 1`` others.

    The pairs go out in chunks of :data:`CHUNK`, made as they are sent, at
    most two per pool process at a time, and this process judges a chunk
    whenever the pool has its share: so one worker costs no process, two
    cost one, and what is in flight (and in memory) does not grow with the
    number of files; only each file's answer is kept (``""`` when it matches).
    """
    if workers <= 1 or count <= CHUNK:
        return [why for chunk in _chunks(pairs) for why in differences(chunk)]
    results: List[List[str]] = []
    with process_pool(workers - 1, fork_if_alone=True) as pool:
        pending: Dict["concurrent.futures.Future[List[str]]", int] = {}
        for index, chunk in enumerate(_chunks(pairs)):
            results.append([])
            if len(pending) < 2 * (workers - 1):
                pending[pool.submit(differences, chunk)] = index
                continue
            results[index] = differences(chunk)
            done, _ = concurrent.futures.wait(pending, timeout=0)
            for future in done:
                results[pending.pop(future)] = future.result()
        for future in concurrent.futures.as_completed(pending):
            results[pending[future]] = future.result()
    return [why for chunk in results for why in chunk]


def _last_lines(data: bytes) -> Tuple[Dict[str, int], List[Tuple[str, str]], int]:
    """1. The manifest parsed one line at a time (:func:`~agentloop.batch.ledger.iter_ledger`): each run whose
    last line is ``ok`` with that line's offset (in the order names first appear), the failed runs as
    ``(name, status: error)``, and how many runs there are.  Only offsets are kept, not parsed lines."""
    last: Dict[str, int] = {}
    for offset, line in iter_ledger(data):
        last[line["name"]] = offset  # each run's last line: its status now
    failed: List[Tuple[str, str]] = []
    for name, offset in last.items():
        line = line_at(data, offset)
        if line["status"] != "ok":
            failed.append((name, "%s: %s" % (line["status"], line.get("error", line.get("reason")))))
    runs = len(last)
    for name, _ in failed:
        del last[name]  # what is left: the runs whose last line is ok
    return last, failed, runs


def _files_by_name(
    files: Sequence[str], manifest: str, checkpoint: Optional[str], ok_lines: Mapping[str, int]
) -> Tuple[Dict[str, str], List[Tuple[str, str]]]:
    """3. Each file given by its run name (the manifest, checkpoint and attestation skipped), and the
    ``(path, first)`` of each file that names a run already given."""
    skip = {os.path.abspath(p) for p in (manifest, checkpoint) if p is not None}
    if run_name(attestation_path(manifest)) not in ok_lines:  # the batch's attestation, unless a run has its name
        skip.add(os.path.abspath(attestation_path(manifest)))
    by_name: Dict[str, str] = {}
    repeated: List[Tuple[str, str]] = []
    for path in files:
        if os.path.abspath(path) in skip:
            continue
        name = run_name(path)
        if name in by_name:
            repeated.append((path, by_name[name]))  # a second file for the same run
        else:
            by_name[name] = path
    return by_name, repeated


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
    3. the files (the manifest itself, the checkpoint and the batch's
       attestation :func:`attestation_path` skipped, so ``runs/*.jsonl`` can
       be passed) are read in ``workers`` processes,
       a few dozen at a time, and each compared there with its line;
    4. missing, extra, repeated and altered files are named.

    A manifest or checkpoint that cannot be read or parsed raises
    (``OSError``, :class:`~agentloop.errors.MalformedManifestError`,
    :class:`~agentloop.errors.MalformedCheckpointError`).  Beyond the files
    given and the manifest's bytes, memory holds per run its name, the
    offset of its last line and its answer, never the parsed ledger.
    """
    # 1.
    with open(manifest, "rb") as handle:
        data = handle.read()
    ok_lines, failed, runs = _last_lines(data)
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
    by_name, repeated = _files_by_name(files, manifest, checkpoint, ok_lines)
    extra = [path for name, path in by_name.items() if name not in ok_lines]
    present = [name for name in ok_lines if name in by_name]
    # 4.
    pairs = ((by_name[name], line_at(data, ok_lines[name])) for name in present)
    altered = []
    verified = []
    for name, why in zip(present, _differences(pairs, len(present), workers)):
        if why:
            altered.append((name, why))
        else:
            verified.append(name)
    return AuditResult(
        runs=runs,
        verified=tuple(verified),
        missing=tuple(name for name in ok_lines if name not in by_name),
        extra=tuple(extra),
        repeated=tuple(repeated),
        altered=tuple(altered),
        failed=tuple(failed),
        checkpoint=verdict,
    )
