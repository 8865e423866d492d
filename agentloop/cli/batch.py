"""``agentloop batch`` and ``agentloop verify --manifest``: run a batch, check a batch.

``batch TASKS.jsonl --model SPEC --tools REF --out DIR`` runs one spec per
line of TASKS.jsonl (:class:`agentloop.batch.RunSpec` JSON) through
:func:`agentloop.batch.run_many`: serially, on ``--workers N`` processes,
``--threads N`` threads, a Dask cluster (``--executor dask://HOST:PORT``) or
the executor a ``MODULE:FACTORY`` returns.  It writes ``DIR/NAME.jsonl``,
the ledger ``DIR/manifest.jsonl`` and its checkpoint
``DIR/manifest.checkpoint`` (signed with ``--sign KEYFILE``: an Ed25519
signer key, ``PRIVATE+KEY+...``, or an HMAC key).  On a terminal a live
line shows runs done, failed, tokens, cost, elapsed time and an estimate;
a summary table follows at the end.

Exit codes: 0 every run is ``ok`` in the ledger; 1 some run failed
(``worker_error`` or ``rejected``), or ``--resume`` found a transcript the
earlier ledger certified altered (``ALTERED NAME``; nothing is run or
written) or an earlier ledger that does not match its checkpoint; 2 usage
or configuration error.
``verify --manifest``: 0 every transcript matches the ledger (and the
checkpoint holds), 1 a run is missing, extra, repeated or altered, a run
failed in the batch (a ``worker_error`` or ``rejected`` line: ``batch``
exits 1 on it too), or the checkpoint fails; 2 usage error.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib
import json
import os
import time
from typing import Any, Callable, Dict, Optional, TextIO, Tuple

from ..batch.audit import AuditResult, audit_batch
from ..batch.driver import BatchResult, RunEntry, run_many
from ..batch.spec import read_specs
from ..processes import process_pool
from ..errors import LedgerMismatchError, RunConfigError
from ..signing.keys import read_signer_key
from ..signing.note import Ed25519Signer, Signer
from ..tools.loader import import_reference
from ..signing.backend import cryptography_available
from ..transcript.checkpoint import MAX_KEY_FILE_BYTES, load_key
from ..transcript.durable import read_small
from .keys import add_unsafe_option, load_trusted
from .output import Commands, EXIT_FAULT, EXIT_OK, Refused, emit, positive_arg, quote

__all__ = ["add_commands", "verify_manifest"]

_SIGNER_PREFIX = b"PRIVATE+KEY+"


def _executor(args: argparse.Namespace) -> Tuple[Optional[concurrent.futures.Executor], Callable[[], None]]:
    """The executor the options name, and how to close what this command opened."""
    if args.workers is not None:
        pool: concurrent.futures.Executor = process_pool(args.workers)
        return pool, pool.shutdown
    if args.threads is not None:
        threads = concurrent.futures.ThreadPoolExecutor(max_workers=args.threads)
        return threads, threads.shutdown
    if args.executor is None:
        return None, lambda: None
    if args.executor.startswith("dask://"):
        try:  # only when asked for: agentloop depends on no engine
            distributed = importlib.import_module("distributed")
        except ImportError:
            raise RunConfigError(
                "--executor", "dask:// needs the distributed package (pip install 'dask[distributed]')"
            ) from None
        client = distributed.Client("tcp://" + args.executor[len("dask://") :])
        # pure=False: Dask would otherwise run identical submissions once.
        return client.get_executor(pure=False), client.close
    factory = import_reference(args.executor, "--executor", "mypool:make_executor")
    made = factory() if callable(factory) else factory
    if not isinstance(made, concurrent.futures.Executor):
        raise RunConfigError("--executor", "%s did not give a concurrent.futures.Executor" % (args.executor,))
    return made, made.shutdown


def _signing(path: Optional[str], unsafe: bool) -> Tuple[Optional[bytes], Optional[Signer]]:
    """``--sign KEYFILE``: an Ed25519 signer key file (checked by signing once now) or an HMAC key.

    Without ``cryptography`` an Ed25519 key signs only with
    ``--unsafe-pure-python-signer`` (as for ``agentloop checkpoint``)."""
    if path is None:
        return None, None
    try:
        head = read_small(path, MAX_KEY_FILE_BYTES)[: len(_SIGNER_PREFIX)]
    except OSError as exc:
        raise Refused("--sign", "cannot read %s: %s" % (path, exc.strerror or exc)) from None
    if head != _SIGNER_PREFIX:
        return load_key(path), None
    if not unsafe and not cryptography_available():
        raise Refused(
            "--sign",
            "signing with an Ed25519 key needs the 'cryptography' package (pip install "
            "agentloop[sign]); --unsafe-pure-python-signer signs with the slow pure-Python signer instead",
        )
    signer = Ed25519Signer(read_signer_key(path, allow_slow_unsafe_signer=unsafe), allow_slow_unsafe_signer=unsafe)
    signer.sign(b"agentloop batch: can this key sign?\n")  # fail before the batch, not after it
    return None, signer


class _Progress:
    """The live line: runs done, failed, tokens, cost, elapsed, estimate (a terminal only)."""

    def __init__(self, out: TextIO, live: bool) -> None:
        self.out = out
        self.live = live
        self.start = time.monotonic()
        self.failed = self.tokens = 0
        self.cost = 0.0
        self.priced = False
        self.line = ""

    def __call__(self, entry: RunEntry, done: int, total: int) -> None:
        self.failed += not entry.ok
        self.tokens += entry.tokens or 0
        if entry.cost is not None:
            self.cost += entry.cost
            self.priced = True
        if not self.live:
            return
        elapsed = time.monotonic() - self.start
        left = elapsed / done * (total - done) if done else 0.0
        cost = " | cost %.4f" % (self.cost,) if self.priced else ""
        self.line = "%d/%d done | %d failed | %d tokens%s | %.1fs elapsed | ~%.0fs left " % (
            done,
            total,
            self.failed,
            self.tokens,
            cost,
            elapsed,
            left,
        )
        emit(self.out, self.line, end="\r")  # the next line is written over this one

    def end(self) -> None:
        if self.live and self.line:
            emit(self.out, self.line)


def _summary(result: BatchResult, out: TextIO) -> None:
    """The table: one row per run, then the stop reasons and failures counted."""
    width = max(4, max(len(e.name) for e in result.entries))
    emit(out, "%-*s  %-12s  %-14s  %6s  %9s" % (width, "run", "status", "stop", "steps", "tokens"))
    reasons: Dict[str, int] = {}
    for e in result.entries:
        if e.ok:
            reasons[e.stop] = reasons.get(e.stop, 0) + 1
            emit(
                out,
                "%-*s  %-12s  %-14s  %6s  %9s"
                % (
                    width,
                    e.name,
                    "ok" + (" (resumed)" if e.resumed else ""),
                    quote(e.stop)[1:-1],
                    "-" if e.steps is None else e.steps,
                    "-" if e.tokens is None else e.tokens,
                ),
            )
        else:
            emit(out, "%-*s  %-12s  %s" % (width, e.name, e.status, quote(e.error)[1:-1]))
    counts = ", ".join("%s %d" % (quote(k)[1:-1], v) for k, v in sorted(reasons.items()))
    emit(out, "stops: %s" % (counts or "none",))
    emit(
        out,
        "runs: %d, ok %d, failed %d"
        % (len(result.entries), len(result.entries) - len(result.failed), len(result.failed)),
    )


def _cmd_batch(args: argparse.Namespace, out: TextIO) -> int:
    specs = read_specs(args.tasks)
    key, signer = _signing(args.sign, args.unsafe_pure_python_signer)
    manifest = os.path.join(args.out, "manifest.jsonl")
    checkpoint = os.path.join(args.out, "manifest.checkpoint")
    executor, close = _executor(args)
    progress = _Progress(out, out.isatty())
    try:
        result = run_many(
            specs,
            model=args.model,
            tools=args.tools,
            out_dir=args.out,
            executor=executor,
            manifest=manifest,
            checkpoint=checkpoint,
            signer=signer,
            key=key,
            resume=args.resume,
            transfer=args.transfer,
            progress=progress,
        )
    except LedgerMismatchError as exc:  # evidence that changed: reported, never re-run, overwritten or re-signed
        for name, why in exc.altered:
            emit(out, "ALTERED %s: %s" % (quote(name), quote(why)[1:-1]))
        emit(
            out,
            "refused: %s; nothing was run, and %s and %s were left as they were" % (exc.reason, manifest, checkpoint),
        )
        return EXIT_FAULT
    finally:
        progress.end()
        close()
    _summary(result, out)
    emit(out, "manifest: %s (%d runs, root %s)" % (result.manifest, len(result.entries), result.root))
    emit(out, "checkpoint: %s%s" % (checkpoint, " (signed)" if key is not None or signer is not None else ""))
    if result.error_log is not None:
        emit(out, "worker errors: %s" % (result.error_log,))
    if result.extends is not None:
        emit(out, "ledger: %s the earlier manifest" % ("extends" if result.extends else "does NOT extend",))
    return EXIT_OK if result.ok else EXIT_FAULT


def _audit_json(manifest: str, result: AuditResult, signed: bool) -> Dict[str, Any]:
    """``verify --manifest --json``: every member is documented in docs/batch.md ("verify --manifest --json")."""
    return {
        "manifest": manifest,
        "ok": result.ok,
        "runs": result.runs,
        "verified": len(result.verified),
        "missing": list(result.missing),
        "extra": list(result.extra),
        "repeated": [{"path": p, "first": f} for p, f in result.repeated],
        "altered": [{"name": n, "why": w} for n, w in result.altered],
        "failed": [{"name": n, "status": s} for n, s in result.failed],
        "checkpoint": result.checkpoint,
        "ledger_trusted": result.checkpoint is None,
        "signature_checked": result.checkpoint is not None and signed,
    }


def verify_manifest(args: argparse.Namespace, out: TextIO) -> int:
    """``verify FILES --manifest M [--checkpoint C] [--key-file K] [--trust VKEY]... [--require NAME]...
    [--workers N]``."""
    if getattr(args, "since", None) or getattr(args, "exact", False):
        raise Refused("--manifest", "--since and --exact are for one transcript's checkpoint")
    if args.expect_count is not None or args.expect_head is not None:
        raise Refused("--manifest", "--expect-count/--expect-head are for one transcript")
    key = load_key(args.key_file, args.key_env) if args.key_file is not None or args.key_env is not None else None
    verifiers = load_trusted(args)  # --trust (and --require), as for one transcript's checkpoint
    if (key is not None or verifiers) and args.checkpoint is None:
        raise Refused("--key-file/--key-env/--trust", "need --checkpoint (the manifest's checkpoint)")
    try:
        result = audit_batch(
            args.files,
            args.manifest,
            checkpoint=args.checkpoint,
            key=key,
            verifiers=verifiers,
            require=list(args.require) if verifiers else None,
            workers=args.workers or 1,
        )
    except OSError as exc:
        raise Refused(exc.filename or args.manifest, "cannot be read: %s" % (exc.strerror or exc,)) from None
    if args.json:
        signed = key is not None or bool(verifiers)
        emit(out, json.dumps(_audit_json(args.manifest, result, signed), indent=2, ensure_ascii=True), lines=True)
        return EXIT_OK if result.ok else EXIT_FAULT
    for name, why in result.altered:
        emit(out, "ALTERED %s: %s" % (quote(name), quote(why)[1:-1]))
    for name in result.missing:
        emit(out, "MISSING %s: the ledger lists it, no file was given" % (quote(name),))
    for path in result.extra:
        emit(out, "EXTRA %s: no ok run of that name in the ledger" % (quote(path),))
    for path, first in result.repeated:
        emit(out, "REPEATED %s: names the same run as %s, given before it" % (quote(path), quote(first)))
    for name, status in result.failed:
        emit(out, "FAILED %s: the run failed in the batch (%s)" % (quote(name), quote(status)[1:-1]))
    if result.checkpoint is not None:
        emit(
            out,
            "checkpoint %s: %s"
            % (quote(args.checkpoint), "ok" if not result.checkpoint else "FAILED: " + result.checkpoint),
        )
        if not result.checkpoint and key is None and not verifiers:
            emit(out, "note: the checkpoint's signature was not checked (no --trust or --key-file/--key-env)")
    else:
        emit(
            out,
            "note: the ledger itself was taken on trust: whoever can write it can rewrite it and its transcripts "
            "together; check it against its checkpoint kept elsewhere (--checkpoint, with --trust or --key-file)",
        )
    emit(
        out,
        "%s: %s: %d of %d transcripts match the ledger (%d runs)"
        % (
            "ok" if result.ok else "FAILED",
            quote(args.manifest),
            len(result.verified),
            len(result.verified) + len(result.missing) + len(result.altered),
            result.runs,
        ),
    )
    return EXIT_OK if result.ok else EXIT_FAULT


def add_commands(sub: Commands) -> None:
    """Register ``batch``."""
    batch = sub.add_parser(
        "batch",
        epilog="exit status: 0 every run ok, 1 some run failed (worker_error or rejected), 2 usage error",
    )
    batch.add_argument(
        "tasks",
        metavar="TASKS.jsonl",
        help='one spec per line: {"name":..., "task":..., "max_steps":..., "max_tokens":...}',
    )
    batch.add_argument("--model", required=True, metavar="SPEC", help="openai:MODEL, anthropic:MODEL or MODULE:FACTORY")
    batch.add_argument("--tools", required=True, metavar="MODULE:REGISTRY", help="the tools, e.g. demo:demo_tools")
    batch.add_argument(
        "--out", required=True, metavar="DIR", help="where NAME.jsonl, manifest.jsonl and manifest.checkpoint go"
    )
    engine = batch.add_mutually_exclusive_group()
    engine.add_argument("--workers", type=positive_arg, metavar="N", help="a pool of N processes")
    engine.add_argument(
        "--threads", type=positive_arg, metavar="N", help="a pool of N threads (runs waiting on an API)"
    )
    engine.add_argument(
        "--executor",
        metavar="URL|MODULE:FACTORY",
        help="dask://HOST:PORT, or a factory returning a concurrent.futures.Executor",
    )
    batch.add_argument(
        "--resume", action="store_true", help="keep the transcripts that verify with the expected origin; run the rest"
    )
    batch.add_argument(
        "--sign",
        metavar="KEYFILE",
        help="sign the checkpoint: an Ed25519 signer key (PRIVATE+KEY+...) or an HMAC key file",
    )
    add_unsafe_option(batch)
    batch.add_argument(
        "--transfer",
        choices=("path", "bytes"),
        default="path",
        help="bytes: workers return transcripts (no shared file system)",
    )
    batch.set_defaults(handler=_cmd_batch)
