"""The command line of checkpoints, proofs and repair (wired into :mod:`agentloop.cli`).

::

    agentloop checkpoint FILE [--key-file K | --key-env VAR] [--sign KEY]... [--unsafe-pure-python-signer]
        [-o OUT] [--force | --overwrite]
    agentloop verify FILE --checkpoint CKPT [--since OLD_CKPT] [--exact] [--key-file K | --key-env VAR]
        [--trust VKEY]... [--require NAME]...
    agentloop prove FILE (--index I | --from M) [--size N] [-o OUT [--overwrite]]
    agentloop check-proof PROOF --checkpoint CKPT [--key-file K | --key-env VAR] [--trust VKEY]... [--require NAME]...
    agentloop consistency OLD_CKPT NEW_CKPT --proof P [--key-file K | --key-env VAR] [--trust VKEY]...
        [--require NAME]...
    agentloop repair FILE
    agentloop report FILE --checkpoint CKPT [--key-file K | --key-env VAR] [--trust VKEY]... [--require NAME]...

``--trust`` (public keys, :mod:`.keys`) and ``--key-file``/``--key-env``
(the HMAC key, always required to have signed when given) may be combined;
the rules are :func:`~agentloop.transcript.checkpoint.verify_signatures`'.

Exit codes, as for every subcommand: 0 verified (or done), 1 a fault was
found or a proof does not hold (nothing is written then; ``repair``: the
file was not repaired, or does not verify after it), 2 usage error (bad
arguments, an unusable key, a file that would be replaced without
``--force``/``--overwrite``, an output folder that does not exist or a file
that cannot be written, an input that is not a regular file -- a directory,
a device, a FIFO, refused before a byte is read -- a transcript locked by a
live writer), 70 internal error, 130 Ctrl-C, 141 standard output closed
early.  Every error is one line on stderr naming the file.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, Dict, Optional, Sequence, TextIO

from ..transcript.anchor import AnchoredResult, checkpoint_of, verify_checkpoint
from ..transcript.checkpoint import Checkpoint, load_key, read_checkpoint, verify_signatures
from ..transcript.durable import lock_shared
from ..errors import (
    BadSignatureError,
    MalformedCheckpointError,
    ProofError,
    RepairRefusedError,
    SigningKeyError,
    TranscriptLockedError,
)
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
from .keys import add_sign_options, add_trust_options, load_signers, load_trusted, signer_names
from .output import (
    Commands,
    check_input,
    check_output,
    complain,
    count_arg,
    emit,
    fault_json,
    positive_arg,
    report_verdict,
    same_file,
    write_file,
)

__all__ = [
    "add_commands",
    "add_verify_options",
    "add_report_options",
    "is_anchored",
    "verify_anchored",
    "report_checkpoint",
    "default_checkpoint_path",
]


def default_checkpoint_path(path: str) -> str:
    """``run.jsonl`` -> ``run.checkpoint``; any other name gets ``.checkpoint`` appended."""
    return path[: -len(".jsonl")] + ".checkpoint" if path.endswith(".jsonl") else path + ".checkpoint"


def _usage(command: str, message: str) -> int:
    complain(command, message)
    return 2


def _key_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--key-file", metavar="K", help="the HMAC-SHA256 key, in a file (one trailing newline is ignored)"
    )
    group.add_argument("--key-env", metavar="VAR", help="the HMAC-SHA256 key, in an environment variable")


def _key(args: argparse.Namespace) -> Optional[bytes]:
    """The key the options name, or ``None``; ``SigningKeyError`` (exit 2) when unusable."""
    if args.key_file is None and args.key_env is None:
        return None
    return load_key(args.key_file, args.key_env)


def _has_key(args: argparse.Namespace) -> bool:
    return args.key_file is not None or args.key_env is not None or bool(args.trust) or bool(args.require)


def _signed(args: argparse.Namespace, key: Optional[bytes], names: Sequence[str], plural: bool = False) -> str:
    """How a checked checkpoint was signed, for the ok line: HMAC alone keeps its old words."""
    if not args.trust:
        return ("both signed by the key" if plural else "signed by the key") if key is not None else ""
    return "%ssigned by %s" % ("both " if plural else "", signer_names(names))


# --- verify --checkpoint / --since -------------------------------------------


def add_verify_options(verify: argparse.ArgumentParser) -> None:
    """``verify``'s checkpoint options."""
    verify.add_argument("--checkpoint", metavar="CKPT", help="the checkpoint the file must match (one FILE)")
    verify.add_argument("--since", metavar="OLD_CKPT", help="an older checkpoint the file must extend (one FILE)")
    verify.add_argument("--exact", action="store_true", help="records beyond --checkpoint are a failure")
    _key_options(verify)
    add_trust_options(verify)


def is_anchored(args: argparse.Namespace) -> bool:
    """Whether ``verify`` was given a checkpoint option."""
    return any(
        getattr(args, name, None)
        for name in ("checkpoint", "since", "exact", "key_file", "key_env", "trust", "require")
    )


def _anchor_json(result: AnchoredResult) -> Dict[str, Any]:
    return {
        "anchored": result.anchored,
        "unanchored": result.unanchored,
        "root": result.root,
        "signed": result.signed,
        "signers": list(result.signers),
    }


def verify_anchored(args: argparse.Namespace, out: TextIO) -> int:
    """``verify FILE --checkpoint CKPT [--since OLD] [--exact] [--key-file K]``."""
    if len(args.files) != 1:
        return _usage("verify", "--checkpoint/--since take exactly one FILE")
    if args.checkpoint is None and args.since is None:
        return _usage("verify", "--exact, --trust, --require and --key-file/--key-env need --checkpoint or --since")
    if args.exact and args.checkpoint is None:
        return _usage("verify", "--exact needs --checkpoint")
    if args.expect_count is not None or args.expect_head is not None:
        return _usage(
            "verify", "--expect-count/--expect-head are not taken with --checkpoint/--since (a checkpoint holds both)"
        )
    path = args.files[0]
    for name in [path] + [c for c in (args.checkpoint, args.since) if c is not None]:
        check_input(name, pipe=name == path)
    key = _key(args)
    trusted = load_trusted(args)
    result = verify_checkpoint(
        path, args.checkpoint, since=args.since, key=key, trusted=trusted, require=args.require, exact=args.exact
    )
    if args.json:
        entry = {
            "file": path,
            "ok": result.ok,
            "count": result.count,
            "head": result.head,
            "complete": result.complete,
            "faults": [fault_json(f) for f in result.faults],
            "checkpoint": _anchor_json(result),
        }
        emit(out, json.dumps([entry], indent=2, ensure_ascii=False), lines=True)
        return 0 if result.ok else 1
    report_verdict(path, result, out)
    if result.ok:
        signed = ", " + _signed(args, key, result.signers) if result.signed else ""
        if args.checkpoint is not None:
            emit(
                out,
                "%s: checkpoint %s: the first %d records match its root and head%s"
                % (path, args.checkpoint, result.anchored, signed),
            )
        if args.since is not None:
            emit(out, "%s: extends the older checkpoint %s%s" % (path, args.since, signed))
        if result.unanchored:
            emit(
                out,
                "note: %d record%s after the checkpoint %s not anchored by it "
                "(unanchored_tail; --exact makes this a failure)"
                % (result.unanchored, "" if result.unanchored == 1 else "s", "is" if result.unanchored == 1 else "are"),
            )
        if key is None and not trusted:
            emit(out, "note: the checkpoint's signature was not checked (no --trust or --key-file/--key-env)")
    return 0 if result.ok else 1


# --- report --checkpoint ---------------------------------------------------------


def add_report_options(report: argparse.ArgumentParser) -> None:
    """``report``'s checkpoint options."""
    report.add_argument("--checkpoint", metavar="CKPT", help="check the transcript against this checkpoint too")
    _key_options(report)
    add_trust_options(report)


def report_checkpoint(args: argparse.Namespace) -> Optional[CheckpointStatus]:
    """``(ok, detail)`` for the report page's checkpoint line; ``None`` without ``--checkpoint``.

    A key without a checkpoint is a usage error (``SigningKeyError``, exit 2).
    """
    if args.checkpoint is None:
        if _has_key(args):
            raise SigningKeyError("--key-file/--key-env/--trust/--require", "needs --checkpoint")
        return None
    check_input(args.checkpoint, pipe=False)
    key = _key(args)
    result = verify_checkpoint(args.file, args.checkpoint, key=key, trusted=load_trusted(args), require=args.require)
    if result.anchor_faults:
        first = result.anchor_faults[0]
        return False, "%s: %s" % (first.kind, first.detail)
    detail = "the first %d records match %s (root %s)" % (result.anchored, args.checkpoint, (result.root or "")[:16])
    if result.signed:
        detail += "; signed by the key given" if not args.trust else "; " + _signed(args, key, result.signers)
    else:
        detail += "; its signature was not checked"
    if result.unanchored:
        detail += "; %d later record%s not anchored" % (result.unanchored, "" if result.unanchored == 1 else "s")
    return True, detail


# --- checkpoint ------------------------------------------------------------------


def _cmd_checkpoint(args: argparse.Namespace, out: TextIO) -> int:
    key = _key(args)
    signers = load_signers(args)
    check_input(args.file, pipe=False)
    target = default_checkpoint_path(args.file) if args.output is None else args.output
    if target != "-":
        if same_file(args.file, target):
            return _usage("checkpoint", "the checkpoint would replace the transcript %s" % (args.file,))
        check_output(target, args.force, "--force")
    try:
        handle = open(args.file, "rb")
    except OSError:
        handle = None  # checkpoint_of reports it as unreadable
    try:
        if handle is not None:
            lock_shared(handle.fileno(), args.file)  # refused while a writer holds the file
        ckpt, result = checkpoint_of(args.file, key, signers)
    finally:
        if handle is not None:
            handle.close()
    if ckpt is None:
        if result.ok:
            emit(out, "%s: holds no record; nothing to checkpoint" % (args.file,))
        else:
            report_verdict(args.file, result, out)
            emit(out, "%s: no checkpoint written: the transcript does not verify" % (args.file,))
        return 1
    if target == "-":
        emit(out, ckpt.to_bytes().decode("utf-8"), lines=True, end="")
        return 0
    write_file(target, ckpt.to_bytes())
    emit(out, "%s: ok, %d records, head %s" % (args.file, ckpt.size, ckpt.head))
    how = "signed" if key is not None else "unsigned"
    if signers:
        how = "signed by %s" % (signer_names(([ckpt.origin] if key is not None else []) + [s.name for s in signers]),)
    emit(out, "checkpoint: %s (root %s, %s)" % (target, ckpt.root, how))
    return 0


# --- prove, check-proof, consistency -------------------------------------------------


def _cmd_prove(args: argparse.Namespace, out: TextIO) -> int:
    if args.index is None and args.from_size is None:
        return _usage("prove", "one of the arguments --index --from is required (or --bundle)")
    check_input(args.file, pipe=False)
    if args.output is not None and args.output != "-":
        if same_file(args.file, args.output):
            return _usage("prove", "the proof would replace the transcript %s" % (args.file,))
        check_output(args.output, args.overwrite)
    try:
        proof: Proof
        if args.index is not None:
            proof = prove_inclusion(args.file, args.index, args.size)
        else:
            proof = prove_consistency(args.file, args.from_size, args.size)
    except ProofError as exc:
        emit(out, "%s: no proof: %s" % (args.file, exc))
        return 1
    text = json.dumps(proof.to_json(), indent=2) + "\n"
    if args.output is None or args.output == "-":
        emit(out, text, lines=True, end="")
    else:
        write_file(args.output, text.encode("utf-8"))
        emit(out, "proof: %s" % (args.output,))
    return 0


def _read_proof(path: str) -> Proof:
    check_input(path, pipe=False)
    try:
        with open(path, "rb") as handle:
            data = handle.read(1 << 20)
    except OSError as exc:
        raise ProofError("cannot read %s: %s" % (path, exc.strerror or exc)) from None
    return parse_proof(data)


def _read_checkpoint(path: str, role: str) -> Checkpoint:
    check_input(path, pipe=False)
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
    emit(out, "%s: FAILED: %s" % (name, reason))
    return 1


def _cmd_check_proof(args: argparse.Namespace, out: TextIO) -> int:
    if args.checkpoint is None and os.path.lexists(args.proof):  # a missing PROOF is reported as such, below
        return _usage("check-proof", "the argument --checkpoint is required (a tlog-proof alone carries its own)")
    key = _key(args)
    trusted = load_trusted(args)
    try:
        proof = _read_proof(args.proof)
        ckpt = _read_checkpoint(args.checkpoint, "checkpoint")
        check_proof(proof, ckpt, key, trusted=trusted, require=args.require)
        names = verify_signatures(ckpt, trusted, args.require, key) if trusted else ()
    except (ProofError, MalformedCheckpointError, BadSignatureError) as exc:
        return _proof_failure(args.proof, exc, out)
    signed = "; " + _signed(args, key, names) if key is not None or trusted else "; its signature was not checked"
    if isinstance(proof, ConsistencyProof):
        emit(
            out,
            "%s: ok, the first %d records (root %s) are a prefix of the %d of checkpoint %s%s"
            % (args.proof, proof.old_size, proof.old_root, proof.size, args.checkpoint, signed),
        )
    else:
        emit(
            out,
            "%s: ok, leaf hash %s is record %d of the %d of checkpoint %s%s"
            % (args.proof, proof.leaf_hash, proof.index, proof.size, args.checkpoint, signed),
        )
    return 0


def _cmd_consistency(args: argparse.Namespace, out: TextIO) -> int:
    key = _key(args)
    trusted = load_trusted(args)
    names: Sequence[str] = ()
    try:
        proof = _read_proof(args.proof)
        if not isinstance(proof, ConsistencyProof):
            raise ProofError(
                "%s is an inclusion proof; make a consistency proof with 'agentloop prove FILE --from M'"
                % (args.proof,)
            )
        old = _read_checkpoint(args.old, "old checkpoint")
        new = _read_checkpoint(args.new, "new checkpoint")
        check_consistency(old, new, proof, key, trusted=trusted, require=args.require)
        if trusted:
            names = sorted(
                set(verify_signatures(old, trusted, args.require, key))
                & set(verify_signatures(new, trusted, args.require, key))
            )
    except (ProofError, MalformedCheckpointError, BadSignatureError) as exc:
        return _proof_failure(args.new, exc, out)
    signed = (
        "; " + _signed(args, key, names, plural=True)
        if key is not None or trusted
        else "; their signatures were not checked"
    )
    emit(out, "%s: ok, extends %s (%d records -> %d)%s" % (args.new, args.old, old.size, new.size, signed))
    return 0


# --- repair ---------------------------------------------------------------------------


def _cmd_repair(args: argparse.Namespace, out: TextIO) -> int:
    check_input(args.file, pipe=False)
    try:
        done = repair(args.file)
    except RepairRefusedError as exc:
        emit(out, "%s: not repaired: %s" % (args.file, exc.reason))
        return 1
    except TranscriptLockedError:  # a live writer: a usage error (exit 2), as for every command
        raise
    except OSError as exc:
        emit(out, "%s: not repaired: unreadable: %s" % (args.file, exc.strerror or exc))
        return 1
    if done.removed:
        emit(out, "%s: removed a torn last line of %d bytes, saved to %s" % (args.file, done.removed, done.saved))
    else:
        emit(out, "%s: nothing to repair" % (args.file,))
    report_verdict(args.file, done.result, out)
    return 0 if done.result.ok else 1


def add_commands(sub: Commands) -> None:
    """Add ``checkpoint``, ``prove``, ``check-proof``, ``consistency`` and ``repair``."""
    ckpt = sub.add_parser("checkpoint")
    ckpt.add_argument("file", metavar="FILE")
    ckpt.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="where to write it (default: FILE with .jsonl replaced by .checkpoint; - for stdout)",
    )
    ckpt.add_argument("--force", "--overwrite", dest="force", action="store_true", help="replace an existing file OUT")
    _key_options(ckpt)
    add_sign_options(ckpt)
    ckpt.set_defaults(handler=_cmd_checkpoint)

    prove = sub.add_parser("prove")
    prove.add_argument("file", metavar="FILE")
    which = prove.add_mutually_exclusive_group()
    which.add_argument("--index", type=count_arg, metavar="I", help="prove that record I is in the tree")
    which.add_argument(
        "--from", dest="from_size", type=positive_arg, metavar="M", help="prove that the first M records are a prefix"
    )
    prove.add_argument("--size", type=positive_arg, metavar="N", help="the tree of the first N records (default: all)")
    prove.add_argument("-o", "--output", metavar="OUT", help="write the proof there (default: stdout)")
    prove.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    prove.set_defaults(handler=_cmd_prove)

    check = sub.add_parser("check-proof")
    check.add_argument("proof", metavar="PROOF")
    check.add_argument("--checkpoint", metavar="CKPT", help="the checkpoint a JSON proof is checked against")
    _key_options(check)
    add_trust_options(check)
    check.set_defaults(handler=_cmd_check_proof)

    cons = sub.add_parser("consistency")
    cons.add_argument("old", metavar="OLD_CKPT")
    cons.add_argument("new", metavar="NEW_CKPT")
    cons.add_argument("--proof", required=True, metavar="P", help="from 'agentloop prove FILE --from OLD_SIZE'")
    _key_options(cons)
    add_trust_options(cons)
    cons.set_defaults(handler=_cmd_consistency)

    rep = sub.add_parser("repair")
    rep.add_argument("file", metavar="FILE")
    rep.set_defaults(handler=_cmd_repair)
