"""The command line of checkpoints, proofs and repair (wired into :mod:`agentloop.cli`).

::

    agentloop checkpoint FILE [--key-file K | --key-env VAR] [-o OUT] [--force]
    agentloop verify FILE --checkpoint CKPT [--since OLD_CKPT] [--exact] [--key-file K | --key-env VAR]
    agentloop prove FILE (--index I | --from M) [--size N] [-o OUT]
    agentloop check-proof PROOF --checkpoint CKPT [--key-file K | --key-env VAR]
    agentloop consistency OLD_CKPT NEW_CKPT --proof P [--key-file K | --key-env VAR]
    agentloop repair FILE
    agentloop report FILE --checkpoint CKPT [--key-file K | --key-env VAR]

Exit codes, as for every subcommand: 0 verified (or done), 1 a fault was
found or a proof does not hold (nothing is written then), 2 usage error
(bad arguments, an unusable key, a file that would be replaced, a
transcript locked by a live writer).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable, Dict, Optional, TextIO

from ..transcript.anchor import AnchoredResult, checkpoint_of, verify_checkpoint
from ..transcript.checkpoint import Checkpoint, load_key, read_checkpoint
from ..transcript.durable import lock_shared, write_atomic
from ..errors import BadSignatureError, MalformedCheckpointError, ProofError, RepairRefusedError, SigningKeyError
from ..transcript.proofs import (
    ConsistencyProof,
    Proof,
    check_consistency,
    check_proof,
    parse_proof,
    prove_consistency,
    prove_inclusion,
)
from ..transcript.repair import repair
from ..report import CheckpointStatus
from ..transcript.format import Fault, VerifyResult
from .output import count_arg, positive_arg, same_file

__all__ = [
    "add_commands",
    "add_verify_options",
    "add_report_options",
    "is_anchored",
    "verify_anchored",
    "report_checkpoint",
    "default_checkpoint_path",
]

#: ``cli._report``: prints a file's verdict line and its faults.
Reporter = Callable[[str, VerifyResult, TextIO], None]


def default_checkpoint_path(path: str) -> str:
    """``run.jsonl`` -> ``run.checkpoint``; any other name gets ``.checkpoint`` appended."""
    return path[: -len(".jsonl")] + ".checkpoint" if path.endswith(".jsonl") else path + ".checkpoint"


def _usage(command: str, message: str) -> int:
    print("agentloop %s: error: %s" % (command, message), file=sys.stderr)
    return 2


def _key_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--key-file", metavar="K", help="the HMAC-SHA256 key, in a file (one trailing newline is ignored)")
    group.add_argument("--key-env", metavar="VAR", help="the HMAC-SHA256 key, in an environment variable")


def _key(args: argparse.Namespace) -> Optional[bytes]:
    """The key the options name, or ``None``; ``SigningKeyError`` (exit 2) when unusable."""
    if args.key_file is None and args.key_env is None:
        return None
    return load_key(args.key_file, args.key_env)


def _has_key(args: argparse.Namespace) -> bool:
    return args.key_file is not None or args.key_env is not None



# --- verify --checkpoint / --since -------------------------------------------


def add_verify_options(verify: argparse.ArgumentParser) -> None:
    """``verify``'s checkpoint options."""
    verify.add_argument("--checkpoint", metavar="CKPT", help="the checkpoint the file must match (one FILE)")
    verify.add_argument("--since", metavar="OLD_CKPT", help="an older checkpoint the file must extend (one FILE)")
    verify.add_argument("--exact", action="store_true", help="records beyond --checkpoint are a failure")
    _key_options(verify)


def is_anchored(args: argparse.Namespace) -> bool:
    """Whether ``verify`` was given a checkpoint option."""
    return any(getattr(args, name, None) for name in ("checkpoint", "since", "exact", "key_file", "key_env"))


def _anchor_json(result: AnchoredResult) -> Dict[str, Any]:
    return {"anchored": result.anchored, "unanchored": result.unanchored, "root": result.root, "signed": result.signed}


def verify_anchored(args: argparse.Namespace, out: TextIO, report: Reporter, fault_json: Callable[[Fault], Dict[str, Any]]) -> int:
    """``verify FILE --checkpoint CKPT [--since OLD] [--exact] [--key-file K]``."""
    if len(args.files) != 1:
        return _usage("verify", "--checkpoint/--since take exactly one FILE")
    if args.checkpoint is None and args.since is None:
        return _usage("verify", "--exact and --key-file/--key-env need --checkpoint or --since")
    if args.exact and args.checkpoint is None:
        return _usage("verify", "--exact needs --checkpoint")
    if args.expect_count is not None or args.expect_head is not None:
        return _usage("verify", "--expect-count/--expect-head are not taken with --checkpoint/--since (a checkpoint holds both)")
    path = args.files[0]
    key = _key(args)
    result = verify_checkpoint(path, args.checkpoint, since=args.since, key=key, exact=args.exact)
    if args.json:
        entry = {"file": path, "ok": result.ok, "count": result.count, "head": result.head, "complete": result.complete,
                 "faults": [fault_json(f) for f in result.faults], "checkpoint": _anchor_json(result)}
        print(json.dumps([entry], indent=2, ensure_ascii=False), file=out)
        return 0 if result.ok else 1
    report(path, result, out)
    if result.ok:
        signed = ", signed by the key" if result.signed else ""
        if args.checkpoint is not None:
            print("%s: checkpoint %s: the first %d records match its root and head%s"
                  % (path, args.checkpoint, result.anchored, signed), file=out)
        if args.since is not None:
            print("%s: extends the older checkpoint %s%s" % (path, args.since, signed), file=out)
        if result.unanchored:
            print("note: %d record%s after the checkpoint %s not anchored by it (unanchored_tail; --exact makes this a failure)"
                  % (result.unanchored, "" if result.unanchored == 1 else "s", "is" if result.unanchored == 1 else "are"),
                  file=out)
        if key is None:
            print("note: the checkpoint's signature was not checked (no --key-file/--key-env)", file=out)
    return 0 if result.ok else 1


# --- report --checkpoint ---------------------------------------------------------


def add_report_options(report: argparse.ArgumentParser) -> None:
    """``report``'s checkpoint options."""
    report.add_argument("--checkpoint", metavar="CKPT", help="check the transcript against this checkpoint too")
    _key_options(report)


def report_checkpoint(args: argparse.Namespace) -> Optional[CheckpointStatus]:
    """``(ok, detail)`` for the report page's checkpoint line; ``None`` without ``--checkpoint``.

    A key without a checkpoint is a usage error (``SigningKeyError``, exit 2).
    """
    if args.checkpoint is None:
        if _has_key(args):
            raise SigningKeyError("--key-file/--key-env", "needs --checkpoint")
        return None
    result = verify_checkpoint(args.file, args.checkpoint, key=_key(args))
    if result.anchor_faults:
        first = result.anchor_faults[0]
        return False, "%s: %s" % (first.kind, first.detail)
    detail = "the first %d records match %s (root %s)" % (result.anchored, args.checkpoint, (result.root or "")[:16])
    if result.signed:
        detail += "; signed by the key given"
    else:
        detail += "; its signature was not checked"
    if result.unanchored:
        detail += "; %d later record%s not anchored" % (result.unanchored, "" if result.unanchored == 1 else "s")
    return True, detail


# --- checkpoint ------------------------------------------------------------------


def _cmd_checkpoint(args: argparse.Namespace, out: TextIO, report: Reporter) -> int:
    key = _key(args)
    target = default_checkpoint_path(args.file) if args.output is None else args.output
    if target != "-":
        if same_file(args.file, target):
            return _usage("checkpoint", "the checkpoint would replace the transcript %s" % (args.file,))
        if os.path.lexists(target) and not args.force:
            return _usage("checkpoint", "%s already exists (pass --force to replace it)" % (target,))
    try:
        handle = open(args.file, "rb")
    except OSError:
        handle = None  # checkpoint_of reports it as unreadable
    try:
        if handle is not None:
            lock_shared(handle.fileno(), args.file)  # refused while a writer holds the file
        ckpt, result = checkpoint_of(args.file, key)
    finally:
        if handle is not None:
            handle.close()
    if ckpt is None:
        if result.ok:
            print("%s: holds no record; nothing to checkpoint" % (args.file,), file=out)
        else:
            report(args.file, result, out)
            print("%s: no checkpoint written: the transcript does not verify" % (args.file,), file=out)
        return 1
    if target == "-":
        out.write(ckpt.to_bytes().decode("utf-8"))
        return 0
    write_atomic(target, ckpt.to_bytes())
    print("%s: ok, %d records, head %s" % (args.file, ckpt.size, ckpt.head), file=out)
    print("checkpoint: %s (root %s, %s)" % (target, ckpt.root, "signed" if key is not None else "unsigned"), file=out)
    return 0


# --- prove, check-proof, consistency -------------------------------------------------


def _cmd_prove(args: argparse.Namespace, out: TextIO, report: Reporter) -> int:
    try:
        proof: Proof
        if args.index is not None:
            proof = prove_inclusion(args.file, args.index, args.size)
        else:
            proof = prove_consistency(args.file, args.from_size, args.size)
    except ProofError as exc:
        print("%s: no proof: %s" % (args.file, exc), file=out)
        return 1
    text = json.dumps(proof.to_json(), indent=2) + "\n"
    if args.output is None or args.output == "-":
        out.write(text)
    else:
        if same_file(args.file, args.output):
            return _usage("prove", "the proof would replace the transcript %s" % (args.file,))
        write_atomic(args.output, text.encode("utf-8"))
        print("proof: %s" % (args.output,), file=out)
    return 0


def _read_proof(path: str) -> Proof:
    try:
        with open(path, "rb") as handle:
            data = handle.read(1 << 20)
    except OSError as exc:
        raise ProofError("cannot read %s: %s" % (path, exc.strerror or exc)) from None
    return parse_proof(data)


def _read_checkpoint(path: str, role: str) -> Checkpoint:
    try:
        return read_checkpoint(path)
    except OSError as exc:
        raise ProofError("unreadable: %s %s: %s" % (role, path, exc.strerror or exc)) from None


def _proof_failure(name: str, exc: Exception, out: TextIO) -> int:
    if isinstance(exc, MalformedCheckpointError):
        reason = "anchor_malformed: %s" % (exc,)
    elif isinstance(exc, BadSignatureError):
        reason = "bad_signature: %s" % (exc.reason,)
    else:
        reason = str(exc)
    print("%s: FAILED: %s" % (name, reason), file=out)
    return 1


def _cmd_check_proof(args: argparse.Namespace, out: TextIO, report: Reporter) -> int:
    key = _key(args)
    try:
        proof = _read_proof(args.proof)
        ckpt = _read_checkpoint(args.checkpoint, "checkpoint")
        check_proof(proof, ckpt, key)
    except (ProofError, MalformedCheckpointError, BadSignatureError) as exc:
        return _proof_failure(args.proof, exc, out)
    signed = "; signed by the key" if key is not None else "; its signature was not checked"
    if isinstance(proof, ConsistencyProof):
        print("%s: ok, the first %d records (root %s) are a prefix of the %d of checkpoint %s%s"
              % (args.proof, proof.old_size, proof.old_root, proof.size, args.checkpoint, signed), file=out)
    else:
        print("%s: ok, leaf hash %s is record %d of the %d of checkpoint %s%s"
              % (args.proof, proof.leaf_hash, proof.index, proof.size, args.checkpoint, signed), file=out)
    return 0


def _cmd_consistency(args: argparse.Namespace, out: TextIO, report: Reporter) -> int:
    key = _key(args)
    try:
        proof = _read_proof(args.proof)
        if not isinstance(proof, ConsistencyProof):
            raise ProofError("%s is an inclusion proof; make a consistency proof with 'agentloop prove FILE --from M'" % (args.proof,))
        old = _read_checkpoint(args.old, "old checkpoint")
        new = _read_checkpoint(args.new, "new checkpoint")
        check_consistency(old, new, proof, key)
    except (ProofError, MalformedCheckpointError, BadSignatureError) as exc:
        return _proof_failure(args.new, exc, out)
    signed = "; both signed by the key" if key is not None else "; their signatures were not checked"
    print("%s: ok, extends %s (%d records -> %d)%s" % (args.new, args.old, old.size, new.size, signed), file=out)
    return 0


# --- repair ---------------------------------------------------------------------------


def _cmd_repair(args: argparse.Namespace, out: TextIO, report: Reporter) -> int:
    try:
        done = repair(args.file)
    except RepairRefusedError as exc:
        print("%s: not repaired: %s" % (args.file, exc.reason), file=out)
        return 1
    except OSError as exc:
        print("%s: not repaired: unreadable: %s" % (args.file, exc.strerror or exc), file=out)
        return 1
    if done.removed:
        print("%s: removed a torn last line of %d bytes, saved to %s" % (args.file, done.removed, done.saved), file=out)
    else:
        print("%s: nothing to repair" % (args.file,), file=out)
    report(args.file, done.result, out)
    return 0 if done.result.ok else 1




def add_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]", report: Reporter) -> None:
    """Add ``checkpoint``, ``prove``, ``check-proof``, ``consistency`` and ``repair``."""

    def handler(command: Callable[[argparse.Namespace, TextIO, Reporter], int]) -> Callable[[argparse.Namespace, TextIO], int]:
        return lambda args, out: command(args, out, report)

    ckpt = sub.add_parser("checkpoint", help="verify a transcript, then write its checkpoint (its anchor)")
    ckpt.add_argument("file", metavar="FILE")
    ckpt.add_argument("-o", "--output", metavar="OUT", help="where to write it (default: FILE with .jsonl replaced by .checkpoint; - for stdout)")
    ckpt.add_argument("--force", action="store_true", help="replace an existing checkpoint file")
    _key_options(ckpt)
    ckpt.set_defaults(handler=handler(_cmd_checkpoint))

    prove = sub.add_parser("prove", help="print a Merkle inclusion or consistency proof from a transcript")
    prove.add_argument("file", metavar="FILE")
    which = prove.add_mutually_exclusive_group(required=True)
    which.add_argument("--index", type=count_arg, metavar="I", help="prove that record I is in the tree")
    which.add_argument("--from", dest="from_size", type=positive_arg, metavar="M", help="prove that the first M records are a prefix")
    prove.add_argument("--size", type=positive_arg, metavar="N", help="the tree of the first N records (default: all)")
    prove.add_argument("-o", "--output", metavar="OUT", help="write the proof there (default: stdout)")
    prove.set_defaults(handler=handler(_cmd_prove))

    check = sub.add_parser("check-proof", help="check a proof against a checkpoint, without the transcript")
    check.add_argument("proof", metavar="PROOF")
    check.add_argument("--checkpoint", required=True, metavar="CKPT")
    _key_options(check)
    check.set_defaults(handler=handler(_cmd_check_proof))

    cons = sub.add_parser("consistency", help="check that one checkpoint extends another, without the transcript")
    cons.add_argument("old", metavar="OLD_CKPT")
    cons.add_argument("new", metavar="NEW_CKPT")
    cons.add_argument("--proof", required=True, metavar="P", help="from 'agentloop prove FILE --from OLD_SIZE'")
    _key_options(cons)
    cons.set_defaults(handler=handler(_cmd_consistency))

    rep = sub.add_parser("repair", help="remove a torn last line (only), saving it beside the file")
    rep.add_argument("file", metavar="FILE")
    rep.set_defaults(handler=handler(_cmd_repair))
