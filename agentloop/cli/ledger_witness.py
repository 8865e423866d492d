"""``agentloop witness-request OLD NEW --ledger MANIFEST``: the add-checkpoint body for a batch ledger's checkpoint.

A batch ledger is a log of its lines (:mod:`agentloop.batch.ledger`), and
its checkpoint a C2SP tlog-checkpoint of three text lines (origin
``agentloop-manifest/1/...``, size, root), which a witness cosigns as it
does a transcript's (``cosign --request``, ``witness serve``).  This is
``witness-request`` for it: the body is ``old <size>``, the RFC 9162
consistency proof from OLD to NEW computed from the ledger's first NEW-size
lines (which must give NEW's root, and with an OLD checkpoint the proof must
hold between the two roots: checked before anything is printed), a blank
line, and NEW.  :mod:`.keys` hands a NEW whose origin names a batch here,
so a transcript's request imports no batch code.
"""

from __future__ import annotations

import argparse
from typing import List, TextIO, Tuple

from ..batch.ledger import (
    ManifestCheckpoint,
    check_extension,
    check_manifest_checkpoint,
    parse_manifest_checkpoint,
    prove_extension,
)
from ..errors import MalformedCheckpointError, ProofError
from ..signing.witness import build_add_checkpoint_request
from ..transcript.durable import read_small
from .output import Refused, check_input, emit

__all__ = ["ledger_witness_request"]

_MAX_LEDGER_BYTES = 1 << 30
_MAX_CHECKPOINT_BYTES = 64 * 1024


def _failed(name: str, reason: str, out: TextIO) -> int:
    emit(out, "%s: FAILED: %s" % (name, reason))
    return 1


def _read(path: str, limit: int) -> bytes:
    check_input(path, pipe=False)
    try:
        return read_small(path, limit)
    except OSError as exc:
        raise Refused(path, "cannot read it: %s" % (exc.strerror or exc,)) from None


def _checkpoint(path: str) -> ManifestCheckpoint:
    """A ledger checkpoint; :class:`MalformedCheckpointError` if it is not one."""
    return parse_manifest_checkpoint(_read(path, _MAX_CHECKPOINT_BYTES))


def _prefix(args: argparse.Namespace, new: ManifestCheckpoint) -> bytes:
    """The ledger's first NEW-size lines, which must give NEW's root; :class:`ProofError` if they do not."""
    if args.ledger is None:
        raise Refused(
            "--ledger", "is needed to compute the consistency proof to the ledger checkpoint %s" % (args.new,)
        )
    lines = _read(args.ledger, _MAX_LEDGER_BYTES).split(b"\n")[:-1]
    if len(lines) < new.size:
        raise ProofError("%s has %d lines, fewer than the checkpoint's %d" % (args.ledger, len(lines), new.size))
    prefix = b"".join(line + b"\n" for line in lines[: new.size])
    try:
        check_manifest_checkpoint(new, prefix)
    except ProofError as exc:
        raise ProofError("the first %d lines of %s do not give it: %s" % (new.size, args.ledger, exc)) from None
    return prefix


def _old_and_proof(args: argparse.Namespace, new: ManifestCheckpoint) -> Tuple[int, List[bytes]]:
    """OLD's size and the consistency proof from it to NEW, checked; :class:`ProofError` or
    :class:`MalformedCheckpointError` (naming OLD) if there is none."""
    old = None if args.old.isascii() and args.old.isdigit() else _checkpoint(args.old)
    old_size = int(args.old) if old is None else old.size
    if old_size > new.size:
        raise ProofError(
            "the new checkpoint covers %d lines, fewer than the %d of OLD: a rollback" % (new.size, old_size)
        )
    if old_size == 0:  # tlog-witness: "The proof MUST be empty if the old size is zero"
        return 0, []
    proof = prove_extension(old_size, _prefix(args, new))
    if old is not None:
        check_extension(old, new, proof)
    return old_size, [bytes.fromhex(node) for node in proof]


def ledger_witness_request(args: argparse.Namespace, out: TextIO) -> int:
    """``witness-request OLD NEW --ledger MANIFEST`` for a NEW that is a batch ledger's checkpoint."""
    if args.transcript is not None:
        raise Refused("--transcript", "NEW is a batch ledger's checkpoint: give its ledger with --ledger MANIFEST")
    try:
        new = _checkpoint(args.new)
    except MalformedCheckpointError as exc:
        return _failed(args.new, "anchor_malformed: %s" % (exc,), out)
    if not new.signatures:
        raise Refused(args.new, "is not signed: a witness verifies the log's signature (agentloop batch --sign KEY)")
    try:
        old_size, proof = _old_and_proof(args, new)
    except MalformedCheckpointError as exc:
        return _failed(args.old, "anchor_malformed: %s" % (exc,), out)
    except ProofError as exc:
        return _failed(args.new, str(exc), out)
    body = build_add_checkpoint_request(old_size, proof, new.to_bytes())
    emit(out, body.decode("utf-8"), lines=True, end="")
    return 0
