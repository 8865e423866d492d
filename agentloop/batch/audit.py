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
import json
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..processes import process_pool
from ..errors import AgentloopError
from ..signing.note import Verifier
from .facts import difference as _difference, transcript_facts
from .ledger import check_manifest_checkpoint, current, parse_ledger, parse_manifest_checkpoint

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
#: While this process checks the ledger, each pool process is handed one chunk more for every this many chunks
#: (checking a ledger line costs about a twentieth of reading its transcript).
LEAD = 16


def _differences(
    pairs: Sequence[Tuple[str, Mapping[str, Any]]], workers: int, first: Callable[[], None] = lambda: None
) -> List[str]:
    """:func:`differences` of ``pairs`` in ``workers`` processes: this one and ``workers - 1`` others,
    once ``first()`` has returned (when it raises, so does this, and no result is taken).

    The pairs go out in chunks of :data:`CHUNK`, at most two per pool
    process at a time, and this process judges a chunk whenever the pool has
    its share: so one worker costs no process, two cost one, and what is in
    flight (and in memory) does not grow with the number of files.  Only
    while this process runs ``first()`` does the pool hold more: one chunk
    per pool process for every :data:`LEAD`.
    """
    if workers <= 1 or len(pairs) <= CHUNK:
        first()
        return differences(pairs)
    chunks = [pairs[at : at + CHUNK] for at in range(0, len(pairs), CHUNK)]
    results: List[List[str]] = [[] for _ in chunks]
    following = iter(range(len(chunks)))
    with process_pool(workers - 1, fork_if_alone=True) as pool:
        pending: Dict["concurrent.futures.Future[List[str]]", int] = {}
        for index in itertools.islice(following, (workers - 1) * (2 + len(chunks) // LEAD)):
            pending[pool.submit(differences, chunks[index])] = index
        try:
            first()
        except BaseException:
            for future in pending:
                future.cancel()
            raise
        for index in following:
            if len(pending) < 2 * (workers - 1):
                pending[pool.submit(differences, chunks[index])] = index
                continue
            results[index] = differences(chunks[index])
            done, _ = concurrent.futures.wait(pending, timeout=0)
            for future in done:
                results[pending.pop(future)] = future.result()
        for future in concurrent.futures.as_completed(pending):
            results[pending[future]] = future.result()
    return [why for chunk in results for why in chunk]


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

    With ``workers`` above 1 and a manifest whose lines load as JSON objects
    that name their run and status, 1. and 2. run in this process while the
    pool reads the first files, and are done before any file's verdict is
    taken: the result, and what raises, are those of 1. and 2. run first.

    A manifest or checkpoint that cannot be read or parsed raises
    (``OSError``, :class:`~agentloop.errors.MalformedManifestError`,
    :class:`~agentloop.errors.MalformedCheckpointError`).
    """
    # 1.
    with open(manifest, "rb") as handle:
        data = handle.read()
    loaded = _loaded(data) if workers > 1 else None
    checked: Dict[str, Any] = {}

    def check() -> None:
        """1. and 2., raising as they do: before anything else, or, when the lines could be ``loaded``
        (and their files given to the pool), while the pool reads the first files."""
        checked["lines"] = parse_ledger(data)
        checked["checkpoint"] = _checkpoint_verdict(data, checkpoint, key, verifiers, require)

    if loaded is None:
        check()
        loaded = checked["lines"]
    lines = list(current(loaded).values())  # each run's last line: its status now
    # 3.
    ok_lines = {line["name"]: line for line in lines if line["status"] == "ok"}
    skip = {os.path.abspath(p) for p in (manifest, checkpoint) if p is not None}
    if run_name(attestation_path(manifest)) not in ok_lines:  # the batch's attestation, unless a run has its name
        skip.add(os.path.abspath(attestation_path(manifest)))
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
    extra.extend(path for name, path in by_name.items() if name not in ok_lines)
    present = [name for name in ok_lines if name in by_name]
    # 4.
    altered = []
    verified = []
    pairs = [(by_name[name], ok_lines[name]) for name in present]
    for name, why in zip(present, _differences(pairs, workers, check if "lines" not in checked else lambda: None)):
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
        checkpoint=checked["checkpoint"],
    )


def _loaded(data: bytes) -> Optional[List[Dict[str, Any]]]:
    """The manifest's lines as :func:`~agentloop.batch.ledger.parse_ledger` loads them, before it checks them, when
    each is an object with a string ``name`` and ``status`` (so the runs to read are known); else ``None``."""
    if not data.endswith(b"\n"):
        return None
    out = []
    for raw in data[:-1].split(b"\n"):
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None
        if type(value) is not dict or type(value.get("name")) is not str or type(value.get("status")) is not str:
            return None
        out.append(value)
    return out


def _checkpoint_verdict(
    data: bytes, checkpoint: Optional[str], key: Optional[bytes], verifiers: Sequence[Verifier], require: Any
) -> Optional[str]:
    """2. ``None`` without a ``checkpoint``, ``""`` when it holds for the manifest ``data``, else why not."""
    if checkpoint is None:
        return None
    with open(checkpoint, "rb") as handle:
        note = parse_manifest_checkpoint(handle.read(64 * 1024 + 1))
    try:
        check_manifest_checkpoint(note, data, key, verifiers, require)
    except AgentloopError as exc:
        return str(exc)
    return ""
