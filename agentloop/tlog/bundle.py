"""tlog-proofs of agentloop's two logs: a transcript's records, a batch ledger's lines.

A transcript is a log whose entries are its record lines (each without its
``\\n``) and whose checkpoint is :mod:`agentloop.transcript.checkpoint`'s; a
batch ledger is a log whose entries are its RFC 8785 lines and whose
checkpoint is :mod:`agentloop.batch.ledger`'s.  :func:`prove_record` and
:func:`prove_ledger_line` write the C2SP ``tlog-proof@v1``
(:mod:`.proof`) that one entry is in the tree of a signed checkpoint, the
entry itself in the ``extra`` line.

tlog-proof leaves step 1 of verification, computing the leaf hash, to the
application ("This step is application specific"); :func:`check_agentloop_leaf`
is agentloop's: after :func:`~.proof.verify_tlog_proof` it reads the proved
entry as what its origin says it is, so a proof cannot pass a line that is
no record off as one.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, Optional

from ..batch.ledger import (
    MANIFEST_ORIGIN_PREFIX,
    ManifestCheckpoint,
    check_manifest_checkpoint,
    parse_ledger,
    parse_manifest_checkpoint,
    prove_run,
)
from ..canonical import canonical_bytes
from ..errors import MalformedCheckpointError, MalformedManifestError, ProofError, UnrecordableError
from ..transcript.anchor import scan_tree
from ..transcript.checkpoint import ORIGIN_PREFIX, Checkpoint, parse_checkpoint
from ..transcript.durable import open_input
from ..transcript.format import FIELDS, GENESIS, MAX_LINE_BYTES, PathLike
from ..transcript.merkle import inclusion_proof, leaf_hash, verify_inclusion
from .proof import ProvedLeaf, TlogProof

__all__ = ["prove_record", "prove_ledger_line", "check_agentloop_leaf", "describe_origin"]


def _short(value: Optional[str]) -> str:
    return "none" if value is None else value[:16] + "..."


def _read_line(path: PathLike, index: int) -> bytes:
    """Line ``index`` of ``path``, without its ``\\n``."""
    with open_input(path) as handle:
        for _ in range(index):
            if not handle.readline(MAX_LINE_BYTES + 2).endswith(b"\n"):
                raise ProofError("%s changed while it was read: line %d is gone" % (path, index))
        line = handle.readline(MAX_LINE_BYTES + 2)
    if not line.endswith(b"\n"):
        raise ProofError("%s changed while it was read: line %d is not whole" % (path, index))
    return line[:-1]


def prove_record(path: PathLike, checkpoint: Checkpoint, index: Optional[int] = None) -> TlogProof:
    """The tlog-proof that record ``index`` (default: the checkpoint's last) of ``path`` is in ``checkpoint``'s tree.

    1. the checkpoint is signed (a tlog-proof's checkpoint is checked
       against the log's keys; this function checks no signature);
    2. the file verifies, and its first ``checkpoint.size`` records give the
       checkpoint's run, root and head (records after them are allowed);
    3. the inclusion proof (RFC 9162 section 2.1.3.1) of the record's leaf,
       checked against the root before it is returned; the record line is the
       extra data.

    Raises :class:`~agentloop.errors.ProofError`.
    """
    # 1.
    if not checkpoint.signatures:
        raise ProofError("the checkpoint is not signed: a tlog-proof's checkpoint is checked against the log's keys")
    size = checkpoint.size
    if index is None:
        index = size - 1
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < size:
        raise ProofError("index %s is not a record of the checkpoint's %d (0 to %d)" % (index, size, size - 1))
    # 2.
    scan = scan_tree(path, [size], keep_leaves=True)
    if not scan.result.ok:
        fault = scan.result.faults[0]
        raise ProofError("%s does not verify (%s at %s): no proof is made from it" % (path, fault.kind, fault.where()))
    if scan.result.count < size:
        raise ProofError("the checkpoint covers %d records, %s has %d" % (size, path, scan.result.count))
    if scan.first != checkpoint.first:
        raise ProofError(
            "the checkpoint is for run %s, %s is run %s" % (_short(checkpoint.first), path, _short(scan.first))
        )
    if scan.at[size] != (checkpoint.root, checkpoint.head):
        raise ProofError("the first %d records of %s do not give the checkpoint's root and head" % (size, path))
    # 3.
    hashes = tuple(inclusion_proof(scan.leaves, index, size))
    line = _read_line(path, index)
    verify_inclusion(index, size, leaf_hash(line), hashes, bytes.fromhex(checkpoint.root))
    return TlogProof(index, hashes, checkpoint.to_note(), line)


def prove_ledger_line(ledger: bytes, checkpoint: ManifestCheckpoint, name: str) -> TlogProof:
    """The tlog-proof that run ``name``'s line is in the batch ledger of ``checkpoint``.

    The checkpoint must be signed and be the tree head of all of ``ledger``
    (:func:`~agentloop.batch.ledger.check_manifest_checkpoint`, no key);
    the proof is checked against its root before it is returned.  Raises
    :class:`~agentloop.errors.ProofError` (or ``MalformedManifestError``).
    """
    if not checkpoint.signatures:
        raise ProofError(
            "the ledger's checkpoint is not signed: a tlog-proof's checkpoint is checked against the log's keys"
        )
    check_manifest_checkpoint(checkpoint, ledger)
    index, proof = prove_run(ledger, name)
    line = ledger.split(b"\n")[index]
    hashes = tuple(bytes.fromhex(node) for node in proof)
    verify_inclusion(index, checkpoint.size, leaf_hash(line), hashes, bytes.fromhex(checkpoint.root))
    return TlogProof(index, hashes, checkpoint.note(), line)


def describe_origin(origin: str) -> str:
    """``run <hash>...``, ``batch <hash>...`` or the origin itself, for messages."""
    if origin.startswith(ORIGIN_PREFIX):
        return "run " + _short(origin[len(ORIGIN_PREFIX) :])
    if origin.startswith(MANIFEST_ORIGIN_PREFIX):
        return "batch " + _short(origin[len(MANIFEST_ORIGIN_PREFIX) :])
    return repr(origin[:100])


def _record(line: bytes, index: int) -> Dict[str, Any]:
    """The record a transcript's line ``index`` must hold: canonical, five members, its seq, its own hash."""
    try:
        record = json.loads(line.decode("utf-8"))
        canonical = canonical_bytes(record)
    except (UnicodeDecodeError, ValueError, UnrecordableError, RecursionError):
        raise ProofError("the proved entry is not a JSON record line") from None
    if canonical != line or not isinstance(record, dict) or tuple(sorted(record)) != FIELDS:
        raise ProofError(
            "the proved entry is not an agentloop/1 record line (RFC 8785, members %s)" % (", ".join(FIELDS),)
        )
    seq = record["seq"]
    if isinstance(seq, bool) or seq != index:
        raise ProofError("the proved record says seq %s, but it is entry %d" % (json.dumps(seq)[:20], index))
    body = canonical_bytes({key: value for key, value in record.items() if key != "hash"})
    if hashlib.sha256(body).hexdigest() != record["hash"]:
        raise ProofError("the proved record's hash is not the SHA-256 of its other members")
    if index == 0 and record["prev"] != GENESIS:
        raise ProofError("the proved record 0 does not start the chain")
    return dict(record)


def _transcript_leaf(proved: ProvedLeaf, note_bytes: bytes) -> str:
    try:
        checkpoint = parse_checkpoint(note_bytes)
    except MalformedCheckpointError as exc:
        raise ProofError("the checkpoint is not an agentloop/1 checkpoint: %s" % (exc,)) from None
    record = _record(proved.leaf, proved.index)
    if proved.index == 0 and record["hash"] != checkpoint.first:
        raise ProofError(
            "the proved record 0 has hash %s, the origin names %s" % (_short(record["hash"]), _short(checkpoint.first))
        )
    if proved.index == checkpoint.size - 1 and record["hash"] != checkpoint.head:
        raise ProofError(
            "the proved last record has hash %s, the checkpoint's head is %s"
            % (_short(record["hash"]), _short(checkpoint.head))
        )
    return "record %d (%s, hash %s)" % (proved.index, record["kind"], record["hash"])


def _ledger_leaf(proved: ProvedLeaf, note_bytes: bytes) -> str:
    try:
        parse_manifest_checkpoint(note_bytes)
        line = parse_ledger(proved.leaf + b"\n")[0]
    except MalformedCheckpointError as exc:
        raise ProofError("the checkpoint is not an agentloop-manifest/1 checkpoint: %s" % (exc,)) from None
    except MalformedManifestError as exc:
        raise ProofError("the proved entry is not a ledger line: %s" % (exc,)) from None
    return "the ledger line of run %s (%s)" % (json.dumps(line["name"])[:120], line["status"])


def check_agentloop_leaf(proved: ProvedLeaf, note_bytes: bytes) -> str:
    """Read a proved entry as what its log holds; return what it is, for messages.

    For an ``agentloop/1/`` origin the checkpoint must be an agentloop
    checkpoint (:func:`~agentloop.transcript.checkpoint.parse_checkpoint`)
    and the entry a record line: RFC 8785, its ``seq`` the index, its
    ``hash`` its own; record 0's hash the origin's, the last record's the
    checkpoint's ``head``.  For ``agentloop-manifest/1/`` the checkpoint is
    a ledger's and the entry a ledger line
    (:func:`~agentloop.batch.ledger.parse_ledger`).  Any other origin:
    ``entry N``, nothing more is known.  Raises :class:`~agentloop.errors.ProofError`.
    """
    if proved.origin.startswith(ORIGIN_PREFIX):
        return _transcript_leaf(proved, note_bytes)
    if proved.origin.startswith(MANIFEST_ORIGIN_PREFIX):
        return _ledger_leaf(proved, note_bytes)
    return "entry %d" % (proved.index,)
