"""The driver: :func:`run_many` runs a list of specs on any ``concurrent.futures.Executor`` and writes the ledger.

It schedules nothing itself: ``executor=None`` runs the specs one after
another in this process; otherwise every spec is one ``executor.submit``
of :func:`agentloop.batch.worker.run_one` with a JSON string, on whatever
engine the caller already has (a thread or process pool, Dask's
``Client.get_executor(pure=False)``, :class:`agentloop.batch.executors.RayExecutor`).

Trust nothing that comes back (numbered in :func:`run_many`'s body):

1. each run's record 0 is computed before anything runs, from the spec,
   the tools manifest and the model's ``model_info()``;
2. every transcript is re-read by the driver: the chain must verify, end in
   a stop record, and begin with exactly that record 0;
3. a worker that raises (or dies) is a ``worker_error`` line holding the
   exception's *type* only; the message goes to a side log;
4. a process pool broken by a dying worker takes down every run it held, so
   those runs are run again one at a time, each in a one-process pool
   (started from a fork server, new after each death): only the run that
   kills its own process is blamed, on every attempt;
5. results are placed in spec order, never completion order.
"""

from __future__ import annotations

import array
import base64
import binascii
import concurrent.futures
import hashlib
import itertools
import json

import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from ..processes import process_pool
from ..errors import LedgerMismatchError, RunConfigError
from ..models.spec import model_from_spec
from ..signing.note import Signer
from ..tools.loader import load_tools
from ..tools.registry import ToolRegistry
from ..transcript.checkpoint import ORIGIN_PREFIX, check_key
from ..canonical import canonical_bytes
from ..transcript.durable import write_atomic
from .facts import transcript_facts
from .earlier import altered_runs, check_earlier, check_extends, check_orphan
from .ledger import (
    GrowingLedger,
    LastLines,
    ManifestCheckpoint,
    batch_origin,
    iter_ledger,
    sign_checkpoint,
)
from .spec import RunSpec, expected_task_line, spec_list_hash
from .worker import MAX_TRANSFER_BYTES, make_job, publish, run_one, transcript_path

__all__ = ["RunEntry", "BatchResult", "run_many"]

#: Worker error messages in the side log are cut to this many characters.
_MAX_LOGGED = 2000


@dataclass(frozen=True)
class RunEntry:
    """One spec's outcome.  ``status`` is ``ok``, ``worker_error`` or ``rejected``.

    ``origin`` is ``agentloop/1/<hash of the expected record 0>``; for ``ok``
    the transcript's facts follow; ``error`` is the exception type
    (``worker_error``) or the rejection reason (``rejected``); ``message``
    the worker's full error text (never in the ledger); ``resumed`` says
    the transcript was already there and was only checked.
    """

    name: str
    status: str
    origin: str
    path: str
    records: int = 0
    head: str = ""
    root: str = ""
    sha256: str = ""
    stop: str = ""
    steps: Optional[int] = None
    tokens: Optional[int] = None
    cost: Optional[float] = None
    error: str = ""
    message: str = ""
    resumed: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def ledger_line(self) -> Dict[str, Any]:
        """The entry's manifest line (see :mod:`agentloop.batch.ledger`)."""
        line: Dict[str, Any] = {"name": self.name, "origin": self.origin, "status": self.status}
        if self.status == "ok":
            line.update(records=self.records, head=self.head, root=self.root, stop=self.stop, sha256=self.sha256)
        elif self.status == "worker_error":
            line["error"] = self.error
        else:
            line["reason"] = self.error
        return line


@dataclass(frozen=True)
class BatchResult:
    """What :func:`run_many` returns: one entry per spec in spec order, and the ledger.

    ``entries`` is empty when ``run_many`` was called with
    ``keep_entries=False``; ``runs`` (how many specs the batch has) and
    ``failed`` (the entries that are not ``ok``, in spec order) are there
    either way.  ``extends`` is ``None`` unless a manifest already existed
    (``resume=True``); then it says whether the new ledger extends the old
    one (the old lines are its prefix, so an RFC 9162 consistency proof
    exists).
    """

    entries: Tuple[RunEntry, ...]
    origin: str
    manifest: str
    root: str
    checkpoint: bytes
    checkpoint_path: Optional[str]
    error_log: Optional[str]
    extends: Optional[bool] = None
    failed: Tuple[RunEntry, ...] = ()
    runs: int = 0

    def __post_init__(self) -> None:
        # built with entries only (as before keep_entries): failed and runs are the entries', as they were
        if not self.failed:
            object.__setattr__(self, "failed", tuple(entry for entry in self.entries if not entry.ok))
        if not self.runs:
            object.__setattr__(self, "runs", len(self.entries))

    @property
    def ok(self) -> bool:
        """Every run is ``ok``."""
        return not self.failed and all(entry.ok for entry in self.entries)


Progress = Callable[[RunEntry, int, int], None]


def _check_arguments(
    specs: object, model: object, tools: object, out_dir: object, transfer: object, max_transfer_bytes: object
) -> List[RunSpec]:
    if not isinstance(specs, (list, tuple)) or not specs:
        raise RunConfigError("specs", "must be a non-empty list of RunSpec")
    for index, spec in enumerate(specs):
        if not isinstance(spec, RunSpec):
            raise RunConfigError("specs[%d]" % (index,), "must be a RunSpec, got %s" % (type(spec).__name__,))
    names = set()
    for spec in specs:
        if spec.name in names:
            raise RunConfigError(
                "specs", "the name %s is used twice (it names the transcript)" % (json.dumps(spec.name),)
            )
        names.add(spec.name)
    for parameter, value in (("model", model), ("tools", tools), ("out_dir", out_dir)):
        if not isinstance(value, str) or not value:
            raise RunConfigError(parameter, "must be a non-empty str (a reference a worker resolves itself)")
    if transfer not in ("path", "bytes"):
        raise RunConfigError("transfer", "must be 'path' or 'bytes', got %s" % (json.dumps(transfer, default=repr),))
    if isinstance(max_transfer_bytes, bool) or not isinstance(max_transfer_bytes, int) or max_transfer_bytes < 1:
        raise RunConfigError("max_transfer_bytes", "must be a positive int")
    return list(specs)


def _expected(specs: Sequence[RunSpec], registry: ToolRegistry, model: str) -> bytes:
    """1. Each spec's expected origin, computed without running anything (see :func:`expected_task_line`):
    the 32 bytes of its record 0's hash, one after another (``ORIGIN_PREFIX`` and the hex are made when asked)."""
    planner = model_from_spec(model)
    digests = bytearray()
    for spec in specs:
        digests += bytes.fromhex(json.loads(expected_task_line(spec, registry, planner))["hash"])
    return bytes(digests)


def _judge(spec: RunSpec, origin: str, path: str, resumed: bool = False) -> RunEntry:
    """2. The entry for the transcript at ``path``: ``ok`` only if it verifies, is complete and has ``origin``."""
    facts = transcript_facts(path)
    reason = ""
    if not facts["exists"]:
        reason = "missing"
    elif not facts["ok"]:
        reason = "does_not_verify"
    elif not facts["complete"]:
        reason = "incomplete"
    elif ORIGIN_PREFIX + str(facts["first"]) != origin:
        reason = "wrong_task_record"
    if reason:
        return RunEntry(spec.name, "rejected", origin, path, error=reason, message=facts["fault"])
    return RunEntry(
        spec.name,
        "ok",
        origin,
        path,
        records=facts["records"],
        head=facts["head"],
        root=facts["root"],
        sha256=facts["sha256"],
        stop=facts["stop"] or "",
        steps=facts["steps"],
        tokens=facts["tokens"],
        cost=facts["cost"],
        resumed=resumed,
    )


def _failure(spec: RunSpec, origin: str, path: str, exc: BaseException) -> RunEntry:
    """3. A worker error: the type for the ledger, the bounded message for the side log."""
    try:
        message = str(exc)
    except Exception:
        message = "<unprintable>"
    if len(message) > _MAX_LOGGED:
        message = message[:_MAX_LOGGED] + "... (%d characters cut)" % (len(message) - _MAX_LOGGED,)
    return RunEntry(spec.name, "worker_error", origin, path, error=type(exc).__name__, message=message)


def _receive(spec: RunSpec, origin: str, path: str, reply: object, max_bytes: int) -> RunEntry:
    """The entry for a worker's answer; with ``transfer="bytes"`` the driver publishes the bytes first."""
    try:
        answer = json.loads(reply) if isinstance(reply, str) else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or answer.get("name") != spec.name:
        return RunEntry(spec.name, "rejected", origin, path, error="bad_reply")
    if "data" in answer:
        try:
            data = base64.b64decode(str(answer["data"]).encode("ascii"), validate=True)
        except (binascii.Error, ValueError, UnicodeEncodeError):
            return RunEntry(spec.name, "rejected", origin, path, error="bad_reply")
        if len(data) > max_bytes:
            return RunEntry(
                spec.name, "rejected", origin, path, error="bad_reply", message="%d bytes returned" % (len(data),)
            )
        temp = path + ".tmp"
        try:
            with open(temp, "wb") as handle:
                handle.write(data)
            publish(temp, path)
        except Exception as exc:
            return _failure(spec, origin, path, exc)
    return _judge(spec, origin, path)


def _isolated(
    jobs: List[Tuple[int, str]], workers: int
) -> Iterator[Tuple[int, Optional[str], Optional[BaseException]]]:
    """4. Run each job alone in a one-process pool (reused until a job breaks it), ``workers`` at a time."""
    local = threading.local()
    pools: List[concurrent.futures.ProcessPoolExecutor] = []
    lock = threading.Lock()

    def one(job: str) -> Tuple[Optional[str], Optional[BaseException]]:
        pool = getattr(local, "pool", None)
        if pool is None:
            pool = local.pool = process_pool(1)  # from a fork server: never forked from these threads
            with lock:
                pools.append(pool)
        try:
            return pool.submit(run_one, job).result(), None
        except concurrent.futures.BrokenExecutor as exc:
            local.pool = None
            return None, exc
        except Exception as exc:
            return None, exc

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as threads:
            futures = {threads.submit(one, job): index for index, job in jobs}
            for future in concurrent.futures.as_completed(futures):
                reply, error = future.result()
                yield futures[future], reply, error
    finally:
        for pool in pools:
            pool.shutdown(wait=True)


def _side_log(path: str, failed: Sequence[RunEntry]) -> Optional[str]:
    """3. The full texts of worker errors and rejections (``failed``, in spec order); ``None`` when there are none."""
    lines = ["%s: %s: %s\n" % (e.name, e.error, e.message.encode("unicode_escape").decode("ascii")) for e in failed]
    if not lines:
        if os.path.lexists(path):  # an earlier attempt's log no longer describes this ledger
            os.unlink(path)
        return None
    write_atomic(path, "".join(lines).encode("ascii"))
    return path


def _earlier(
    previous: Optional[bytes],
    batch: "_Batch",
    origin: str,
    checkpoint: Optional[str],
    key: Optional[bytes],
    signer: Optional[Signer],
) -> Tuple[Mapping[str, Mapping[str, Any]], Optional[ManifestCheckpoint]]:
    """An earlier ledger's last line per run (read on demand: :class:`~agentloop.batch.ledger.LastLines`), and
    its checkpoint: a malformed, foreign or altered one is refused (:mod:`agentloop.batch.earlier`), never
    overwritten.  ``({}, None)`` without one; a checkpoint without its ledger is refused too (it certified
    transcripts no line can name any more)."""
    if previous is None:
        check_orphan(checkpoint)
        return {}, None
    offsets: Dict[str, int] = {}

    def lines() -> Iterator[Dict[str, Any]]:  # each line once, its offset noted: the last one a run's
        for offset, line in iter_ledger(previous):
            offsets[line["name"]] = offset
            yield line

    specs, indices = batch.spec_list, range(len(batch.spec_list))
    origins = [batch.origin(index) for index in indices]
    note = check_earlier(lines(), previous, specs, origins, origin, checkpoint, key, signer)
    certified = LastLines(previous, offsets)
    altered = altered_runs(certified, specs, [batch.path(index) for index in indices])
    if altered:
        raise LedgerMismatchError(
            "%d run(s) the earlier ledger certified are not those files any more" % (len(altered),), altered
        )
    return certified, note


def _kept(
    spec: RunSpec, origin: str, path: str, resume: bool, certified: Mapping[str, Mapping[str, Any]]
) -> Optional[RunEntry]:
    """The entry of a transcript kept as it is: one the earlier ledger certified (checked already: the very
    file), or with ``resume`` one that exists, verifies and has the expected origin; ``None``: run it."""
    if certified.get(spec.name, {}).get("status") == "ok":
        return _judge(spec, origin, path, resumed=True)
    if resume and os.path.lexists(path):
        entry = _judge(spec, origin, path, resumed=True)
        return entry if entry.ok else None
    return None


def run_many(
    specs: Sequence[RunSpec],
    *,
    model: str,
    tools: str,
    out_dir: str,
    executor: Optional[concurrent.futures.Executor] = None,
    manifest: Optional[str] = None,
    checkpoint: Optional[str] = None,
    signer: Optional[Signer] = None,
    key: Optional[bytes] = None,
    resume: bool = False,
    transfer: str = "path",
    max_transfer_bytes: int = MAX_TRANSFER_BYTES,
    progress: Optional[Progress] = None,
    keep_entries: bool = True,
) -> BatchResult:
    """Run every spec with ``model`` and ``tools`` and write ``OUT_DIR/NAME.jsonl`` for each, then the ledger.

    ``model`` is a model reference (``openai:MODEL``, ``anthropic:MODEL`` or
    ``MODULE:FACTORY``) and ``tools`` a tools reference (``MODULE:REGISTRY``
    or ``MODULE:FACTORY``); each worker resolves them itself, reading API
    keys from its own environment.  The driver resolves them too, once, for
    the tools manifest and ``model_info()`` (it never calls the model).

    ``manifest`` (default ``OUT_DIR/manifest.jsonl``) receives the ledger;
    ``checkpoint``, if given, its checkpoint note, signed with the HMAC
    ``key`` (bytes) and/or ``signer`` (any
    :class:`agentloop.signing.note.Signer`, e.g. an
    :class:`~agentloop.signing.note.Ed25519Signer`).  Worker errors'
    messages go to the manifest's side log (``manifest.errors.log``).
    ``resume=True`` keeps each transcript that exists, verifies and has the
    expected origin, and runs the rest; without it an existing manifest is
    refused.  With an earlier ledger, a transcript it certified must still be
    that file (and the ledger its ``checkpoint``'s, checked with ``key`` or
    ``signer`` when it was signed): else
    :class:`~agentloop.errors.LedgerMismatchError` names every altered run
    and nothing is run or written (:mod:`agentloop.batch.earlier`).  The new
    ledger is the earlier one with a line appended for each run run again.
    ``transfer="bytes"`` has workers return the transcript (at
    most ``max_transfer_bytes``) instead of writing into ``out_dir``.
    ``progress(entry, done, total)`` is called in completion order.

    Misuse raises :class:`~agentloop.errors.RunConfigError` before anything
    runs; run failures are entries, never exceptions.  At most
    :data:`IN_FLIGHT` runs (or four per worker of a larger pool) are
    submitted at a time, each job built as it is submitted, and each run's
    ledger line is appended (in spec order) as it settles.  So beyond the
    specs given, memory grows with the runs by the ledger's bytes, 32 bytes a
    run (its expected origin) and the entries returned; with
    ``keep_entries=False`` the result holds no entry but the failed ones
    (``progress`` still sees every entry), for batches too big to keep.
    """
    spec_list = _check_arguments(specs, model, tools, out_dir, transfer, max_transfer_bytes)
    if key is not None:
        key = check_key(key, "key")
    if (key is not None or signer is not None) and checkpoint is None:
        raise RunConfigError("key/signer", "given without checkpoint=: nothing would be signed")
    os.makedirs(out_dir, exist_ok=True)
    manifest_path = manifest if manifest is not None else os.path.join(out_dir, "manifest.jsonl")
    _check_paths(spec_list, out_dir, manifest_path, checkpoint)
    previous = _previous_ledger(manifest_path, resume)

    # 1. expected origins, before anything runs; an earlier ledger checked against its files
    origins = _expected(spec_list, load_tools(tools, "tools"), model)
    how = (model, tools, out_dir, transfer, max_transfer_bytes)
    batch = _Batch(spec_list, origins, how, progress, keep_entries, GrowingLedger(previous or b""))
    origin = batch_origin(spec_list_hash(spec_list))
    earlier_note, todo = _start(batch, previous, resume, origin, checkpoint, key, signer)
    earlier = None if previous is None else (len(previous), hashlib.sha256(previous).digest())
    del previous  # the ledger grown holds its bytes; a second copy would be kept to the end for nothing
    if executor is None:
        for index in todo:
            batch.run_here(index)
    else:
        broken = batch.run_on(executor, todo)
        if broken:  # 4.
            workers = min(len(broken), max(1, getattr(executor, "_max_workers", None) or os.cpu_count() or 1))
            for index, answer, error in _isolated([(i, batch.job(i)) for i in sorted(broken)], workers):
                batch.finish(index, answer, error)
    return _write_ledger(batch, origin, manifest_path, checkpoint, key, signer, earlier, earlier_note)


#: How many runs :func:`run_many` keeps submitted to an executor at once (at least four per worker of its pool).
IN_FLIGHT = 256


def _check_paths(spec_list: Sequence[RunSpec], out_dir: str, manifest_path: str, checkpoint: Optional[str]) -> None:
    """The manifest and checkpoint may not be a run's transcript (``OUT_DIR/NAME.jsonl``)."""
    folder = os.path.abspath(out_dir)
    for parameter, other in (("manifest", manifest_path), ("checkpoint", checkpoint)):
        if other is None or os.path.dirname(os.path.abspath(other)) != folder:
            continue
        base = os.path.basename(os.path.abspath(other))
        if base.endswith(".jsonl") and any(spec.name + ".jsonl" == base for spec in spec_list):
            raise RunConfigError(parameter, "%s is also a run's transcript" % (other,))


def _start(
    batch: "_Batch",
    previous: Optional[bytes],
    resume: bool,
    origin: str,
    checkpoint: Optional[str],
    key: Optional[bytes],
    signer: Optional[Signer],
) -> Tuple[Optional[ManifestCheckpoint], "array.array[int]"]:
    """The earlier ledger checked (:func:`_earlier`), the runs kept as they are settled: the earlier
    checkpoint and the runs left to run, in spec order (its last lines, read on demand, are then let go)."""
    certified, earlier_note = _earlier(previous, batch, origin, checkpoint, key, signer)
    return earlier_note, batch.kept(resume, certified)


def _previous_ledger(manifest_path: str, resume: bool) -> Optional[bytes]:
    """The ledger an earlier attempt left (``resume=True`` only; refused if malformed), else ``None``."""
    if not os.path.lexists(manifest_path):
        return None
    if not resume:
        raise RunConfigError(
            "manifest", "%s already exists (pass resume=True to continue that batch)" % (manifest_path,)
        )
    with open(manifest_path, "rb") as handle:
        previous = handle.read()
    for _ in iter_ledger(previous):  # a malformed earlier ledger is refused, not overwritten
        pass
    return previous


class _Batch:
    """The runs of one :func:`run_many` call, settled in any order; their ledger lines appended in spec order (5.).

    Per run it holds the spec given, the 32 bytes of its expected origin and,
    with ``keep``, its entry; an entry that is not ``ok`` is kept either way
    (for the side log and ``BatchResult.failed``).  The ledger's lines are
    :class:`~agentloop.batch.ledger.GrowingLedger`'s bytes.
    """

    def __init__(
        self,
        spec_list: List[RunSpec],
        origins: bytes,
        how: Tuple[str, str, str, str, int],
        progress: Optional[Progress],
        keep: bool,
        ledger: GrowingLedger,
    ) -> None:
        self.spec_list, self.origins, self.how, self.progress = spec_list, origins, how, progress
        self.entries: Optional[List[Optional[RunEntry]]] = [None] * len(spec_list) if keep else None
        self.failed: Dict[int, RunEntry] = {}
        self.ledger = ledger
        self.done = 0

    def origin(self, index: int) -> str:
        """Run ``index``'s expected origin, ``agentloop/1/<hex>``."""
        return ORIGIN_PREFIX + self.origins[32 * index : 32 * index + 32].hex()

    def path(self, index: int) -> str:
        return transcript_path(self.how[2], self.spec_list[index].name)

    def job(self, index: int) -> str:
        model, tools, out_dir, transfer, max_bytes = self.how
        return make_job(self.spec_list[index], model, tools, out_dir, transfer, max_bytes)

    def settle(self, index: int, entry: RunEntry, fresh: bool = True) -> None:
        """Run ``index`` ends as ``entry``; ``fresh``: its ledger line is appended (not one an earlier ledger holds)."""
        if self.entries is not None:
            self.entries[index] = entry
        if not entry.ok:
            self.failed[index] = entry
        self.ledger.put(index, canonical_bytes(entry.ledger_line()) if fresh else b"")
        self.done += 1
        if self.progress is not None:
            self.progress(entry, self.done, len(self.spec_list))

    def kept(self, resume: bool, certified: Mapping[str, Mapping[str, Any]]) -> "array.array[int]":
        """Settle each run kept as it is (:func:`_kept`); return the others, to run."""
        todo = array.array("q")
        for index, spec in enumerate(self.spec_list):
            entry = _kept(spec, self.origin(index), self.path(index), resume, certified)
            if entry is not None:
                self.settle(index, entry, certified.get(spec.name, {}).get("status") != "ok")
            else:
                todo.append(index)
        return todo

    def finish(self, index: int, reply: Optional[str], error: Optional[BaseException]) -> None:
        spec, origin, path = self.spec_list[index], self.origin(index), self.path(index)
        if error is not None:
            self.settle(index, _failure(spec, origin, path, error))
        else:
            self.settle(index, _receive(spec, origin, path, reply, self.how[4]))

    def run_here(self, index: int) -> None:
        try:
            reply = run_one(self.job(index))
        except Exception as exc:
            self.finish(index, None, exc)
        else:
            self.finish(index, reply, None)

    def run_on(self, executor: concurrent.futures.Executor, todo: Iterable[int]) -> List[int]:
        """Run ``todo`` on ``executor``, a window at a time; return the runs a broken pool took down."""
        window = max(IN_FLIGHT, 4 * (getattr(executor, "_max_workers", None) or 1))
        waiting = iter(todo)
        futures: Dict["concurrent.futures.Future[str]", int] = {}
        broken: List[int] = []
        while True:
            for index in itertools.islice(waiting, window - len(futures)):
                self._submit(executor, index, futures, broken)
            if not futures:
                return broken
            done, _ = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:  # 5. completion order drives only progress; entries land at their index
                self._collect(future, futures.pop(future), broken)

    def _submit(
        self, executor: concurrent.futures.Executor, index: int, futures: Dict[Any, int], broken: List[int]
    ) -> None:
        try:
            future = executor.submit(run_one, self.job(index))
        except concurrent.futures.BrokenExecutor:
            broken.append(index)
        except Exception as exc:
            self.finish(index, None, exc)
        else:
            if future in futures:  # a future handed out twice answers the run it was first given, not this one
                name = self.spec_list[futures[future]].name
                self.finish(index, None, RuntimeError("the executor returned the future of run %s again" % (name,)))
            else:
                futures[future] = index

    def _collect(self, future: "concurrent.futures.Future[str]", index: int, broken: List[int]) -> None:
        try:
            error = future.exception()
        except concurrent.futures.CancelledError as exc:  # cancelled by someone else: a failure like any other
            error = exc
        if isinstance(error, concurrent.futures.BrokenExecutor):
            broken.append(index)  # 4. maybe this run, maybe another that shared the pool
        elif error is not None:
            self.finish(index, None, error)
        else:
            self.finish(index, future.result(), None)

    def results(self) -> Tuple[Tuple[RunEntry, ...], Tuple[RunEntry, ...]]:
        """Every entry in spec order (``()`` unless kept) and the failed ones; every index was settled once."""
        failed = tuple(self.failed[index] for index in sorted(self.failed))
        if self.entries is None:
            return (), failed
        return tuple(entry for entry in self.entries if entry is not None), failed


def _write_ledger(
    batch: _Batch,
    origin: str,
    manifest_path: str,
    checkpoint: Optional[str],
    key: Optional[bytes],
    signer: Optional[Signer],
    earlier: Optional[Tuple[int, bytes]],
    earlier_note: Optional[ManifestCheckpoint],
) -> BatchResult:
    """The ledger (the earlier one grown by a line for each run not certified before), checked to extend the
    earlier checkpoint, then written."""
    ledger = batch.ledger
    if batch.done != len(batch.spec_list) or ledger.waiting:  # a ledger missing a run is never written or signed
        raise LedgerMismatchError(
            "%d of %d runs settled, %d ledger lines waiting: nothing is written"
            % (batch.done, len(batch.spec_list), ledger.waiting)
        )
    unsigned = ManifestCheckpoint(origin, ledger.size, ledger.root())
    made = sign_checkpoint(unsigned, key, () if signer is None else (signer,))
    if earlier_note is not None:
        check_extends(earlier_note, made, ledger.data)
    write_atomic(manifest_path, ledger.data)
    note = made.to_bytes()
    if checkpoint is not None:
        write_atomic(checkpoint, note)
    stem = manifest_path[: -len(".jsonl")] if manifest_path.endswith(".jsonl") else manifest_path
    entries, failed = batch.results()
    log = _side_log(stem + ".errors.log", failed)
    extends = None
    if earlier is not None:  # the earlier bytes are the new ledger's prefix (hashed in place, not copied)
        with memoryview(ledger.data) as view:
            extends = hashlib.sha256(view[: earlier[0]]).digest() == earlier[1]
    return BatchResult(
        entries, origin, manifest_path, unsigned.root, note, checkpoint, log, extends, failed, len(batch.spec_list)
    )
