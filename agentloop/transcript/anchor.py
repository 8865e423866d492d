"""A transcript against its checkpoints: the missing tail, rewrites, forks.

The chain alone cannot see records missing from the end, and whoever can
write the file can recompute every hash.  A checkpoint
(:mod:`agentloop.transcript.checkpoint`) kept elsewhere closes both gaps: it pins the
record count, the RFC 6962 Merkle root over the record lines
(:mod:`agentloop.transcript.merkle`) and the last hash, and its signatures (HMAC,
Ed25519 note keys, witness cosignatures: :mod:`agentloop.signing`) pin who
made it and who saw it.

:func:`verify_checkpoint` is :func:`~agentloop.transcript.verify_file`
plus these checks, in one streaming pass.  Its faults, beside the chain's:

* ``truncated`` -- fewer records than the checkpoint covers;
* ``anchor_mismatch`` -- the first N records do not give the checkpoint's
  origin (another run), root (rewritten records) or head;
* ``unanchored_tail`` -- records beyond the checkpoint; counted in
  :attr:`AnchoredResult.unanchored` always, a fault only with ``exact=True``;
* ``bad_signature`` -- a key or trusted keys were given and a checkpoint
  fails signed-note's rules for them
  (:func:`~agentloop.transcript.checkpoint.verify_signatures`);
* ``anchor_malformed`` / ``unreadable`` -- the checkpoint itself is bad.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

from .checkpoint import (
    Checkpoint,
    SignerArg,
    check_key,
    check_signers,
    check_trusted,
    read_checkpoint,
    sign_checkpoint,
    verify_signatures,
)
from ..errors import BadSignatureError, MalformedCheckpointError, SigningKeyError
from ..signing.note import Verifier
from .merkle import CompactRange, leaf_hash
from .format import MAX_LINE_BYTES, Fault, PathLike, VerifyResult
from .verify import scan, Chain

__all__ = [
    "ANCHOR_FAULT_KINDS",
    "AnchoredResult",
    "TreeScan",
    "scan_tree",
    "verify_checkpoint",
    "checkpoint_of",
]

#: The fault kinds only a checkpoint check reports (also in ``FAULT_KINDS``).
ANCHOR_FAULT_KINDS = ("truncated", "anchor_mismatch", "unanchored_tail", "bad_signature", "anchor_malformed")

CheckpointSource = Union[Checkpoint, PathLike]


@dataclass(frozen=True)
class AnchoredResult(VerifyResult):
    """:class:`~agentloop.transcript.VerifyResult` plus what the checkpoints said.

    ``root`` is the hex Merkle root over every record of the file,
    ``anchored`` the number of records the checkpoint covers when they match
    it (0 otherwise), ``unanchored`` the number of records after them
    (reported, a fault only with ``exact``), ``signed`` whether a key or
    trusted keys were given and every checkpoint checked passed the
    signature rules, ``signers`` the names of the trusted keys whose
    signatures verified on ``checkpoint`` (on ``since`` when it is alone;
    the HMAC key's name is the origin).
    ``anchor_faults`` are the faults the checkpoints found (they are also
    in ``faults``, after the chain's).
    """

    root: Optional[str] = None
    anchored: int = 0
    unanchored: int = 0
    signed: bool = False
    anchor_faults: Tuple[Fault, ...] = field(default=())
    signers: Tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class TreeScan:
    """One pass over a transcript: the verdict, the tree, the heads at chosen sizes.

    ``first`` is record 0's ``hash`` (``None`` without records);
    ``at[n] = (root, head)`` for each size asked for that the file reaches;
    ``leaves`` holds every leaf hash when asked for (proofs need them).
    """

    result: VerifyResult
    first: Optional[str]
    root: str
    at: Dict[int, Tuple[str, Optional[str]]] = field(default_factory=dict)
    leaves: Tuple[bytes, ...] = ()


def scan_tree(
    path: PathLike, sizes: Sequence[int] = (), *, keep_leaves: bool = False, max_line_bytes: int = MAX_LINE_BYTES
) -> TreeScan:
    """Verify ``path`` as :func:`~agentloop.transcript.verify_file` does, and build its tree.

    Every line that parses is a record and a leaf, hashed as RFC 6962 says
    (``SHA-256(0x00 || line)``, the line without ``\\n``).  Never raises.
    """
    wanted = frozenset(sizes)
    tree = CompactRange()
    faults: List[Fault] = []
    chain = Chain()
    first: Optional[str] = None
    at: Dict[int, Tuple[str, Optional[str]]] = {}
    leaves: List[bytes] = []

    def on_record(line: bytes) -> None:
        leaf = leaf_hash(line)
        tree.append(leaf)
        if keep_leaves:
            leaves.append(leaf)

    for _, record, found, chain in scan(path, max_line_bytes, on_record):
        faults.extend(found)
        if record is None:
            continue
        # the chain has just checked the record whose leaf was appended
        if tree.size == 1:
            first = chain.head
        if tree.size in wanted:
            at[tree.size] = (tree.root().hex(), chain.head)
    head = chain.head if chain.index else None
    result = VerifyResult(not faults, chain.index, head, tuple(faults), chain.last_kind == "stop")
    return TreeScan(result, first, tree.root().hex(), at, tuple(leaves))


def _load(source: CheckpointSource, role: str, faults: List[Fault]) -> Optional[Checkpoint]:
    """The checkpoint, or ``None`` with an ``unreadable`` or ``anchor_malformed`` fault."""
    if isinstance(source, Checkpoint):
        return source
    name = os.fspath(source)
    try:
        return read_checkpoint(name)
    except OSError as exc:
        faults.append(
            Fault(None, None, "unreadable", "%s %s: %s: %s" % (role, name, type(exc).__name__, exc.strerror or exc))
        )
    except MalformedCheckpointError as exc:
        faults.append(Fault(None, exc.line, "anchor_malformed", "%s %s: %s" % (role, name, exc)))
    return None


def _short(value: Optional[str]) -> str:
    return "none" if value is None else value[:16] + "..."


def _match(scan: TreeScan, checkpoint: Checkpoint, role: str, faults: List[Fault]) -> bool:
    """Steps 4a-4d of :func:`verify_checkpoint` for one checkpoint."""
    count = scan.result.count
    # 4a. the file reaches the checkpoint's size
    if count < checkpoint.size:
        missing = checkpoint.size - count
        faults.append(
            Fault(
                None,
                None,
                "truncated",
                "the %s covers %d records, the file has %d: %d missing from the end"
                % (role, checkpoint.size, count, missing),
            )
        )
        return False
    # 4b. the same run: record 0's hash is the origin's
    if scan.first != checkpoint.first:
        faults.append(
            Fault(
                0,
                None,
                "anchor_mismatch",
                "the %s is for run %s, this transcript is run %s"
                % (role, _short(checkpoint.first), _short(scan.first)),
            )
        )
        return False
    root, head = scan.at[checkpoint.size]
    # 4c. the first N records give its root
    if root != checkpoint.root:
        faults.append(
            Fault(
                None,
                None,
                "anchor_mismatch",
                "the first %d records give root %s, the %s holds %s"
                % (checkpoint.size, _short(root), role, _short(checkpoint.root)),
            )
        )
        return False
    # 4d. and its head
    if head != checkpoint.head:
        faults.append(
            Fault(
                checkpoint.size - 1,
                None,
                "anchor_mismatch",
                "record %d has hash %s, the %s holds head %s"
                % (checkpoint.size - 1, _short(head), role, _short(checkpoint.head)),
            )
        )
        return False
    return True


def verify_checkpoint(
    path: PathLike,
    checkpoint: Optional[CheckpointSource] = None,
    *,
    since: Optional[CheckpointSource] = None,
    key: Optional[bytes] = None,
    trusted: Sequence[Verifier] = (),
    require: Sequence[str] = (),
    exact: bool = False,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> AnchoredResult:
    """Verify a transcript and check it against a checkpoint and/or an older one.

    ``checkpoint`` is the transcript's anchor: records beyond it are
    counted in ``unanchored`` and are a fault (``unanchored_tail``) only when
    ``exact``.  ``since`` is an older checkpoint the file must extend (same
    first N records), for rollbacks and forks.  Each is a
    :class:`~agentloop.transcript.checkpoint.Checkpoint` or a path.  With ``key``, each
    must carry a valid HMAC signature by it; with ``trusted`` (note
    verifiers: :class:`~agentloop.signing.Ed25519Verifier`,
    :class:`~agentloop.signing.CosignatureVerifier`, ...), each must pass
    signed-note's rules -- unknown keys ignored, a trusted key's bad
    signature a fault, at least one trusted signature, every ``require``
    name among the signers (:func:`~agentloop.transcript.checkpoint.verify_signatures`).
    Never raises on any file or checkpoint content (a bad ``key``, a
    ``trusted`` entry that is no verifier, or a ``require`` name no trusted
    key has raises ``SigningKeyError`` before anything is read).

    1. read the checkpoints (``unreadable``, ``anchor_malformed``);
    2. with a key or trusted keys, check their signatures (``bad_signature``);
    3. verify the file, building its Merkle tree, in one pass;
    4. for each checkpoint: a) the file reaches its size (``truncated``),
       b) record 0 names the same run, c) the first N records give its root,
       d) record N-1 is its head (``anchor_mismatch``);
    5. count the records beyond ``checkpoint`` (``unanchored_tail`` if exact).
    """
    if key is not None:
        key = check_key(key)
    if require and not trusted:
        raise SigningKeyError("require", "given without trusted keys")
    trusted = check_trusted(trusted, require, key)
    checks = key is not None or bool(trusted)
    faults: List[Fault] = []
    # 1.
    roles = [
        (role, _load(source, role, faults))
        for role, source in (("checkpoint", checkpoint), ("older checkpoint", since))
        if source is not None
    ]
    loaded = [(role, ckpt) for role, ckpt in roles if ckpt is not None]
    # 2.
    signed = checks and len(loaded) == len(roles) and bool(roles)
    signers: Tuple[str, ...] = ()
    if checks:
        for role, ckpt in loaded:
            try:
                names = verify_signatures(ckpt, trusted, require, key)
            except BadSignatureError as exc:
                faults.append(Fault(None, None, "bad_signature", "%s: %s" % (role, exc.reason)))
                signed = False
                continue
            if role == "checkpoint" or not signers:
                signers = names
    # 3.
    scan = scan_tree(path, [ckpt.size for _, ckpt in loaded], max_line_bytes=max_line_bytes)
    # 4.
    anchored = unanchored = 0
    for role, ckpt in loaded:
        matched = _match(scan, ckpt, role, faults)
        # 5.
        if role == "checkpoint" and matched:
            anchored = ckpt.size
            unanchored = scan.result.count - ckpt.size
            if exact and unanchored:
                faults.append(
                    Fault(
                        ckpt.size,
                        None,
                        "unanchored_tail",
                        "%d record%s after the %d the checkpoint covers"
                        % (unanchored, "" if unanchored == 1 else "s", ckpt.size),
                    )
                )
    result = scan.result
    return AnchoredResult(
        ok=result.ok and not faults,
        count=result.count,
        head=result.head,
        faults=result.faults + tuple(faults),
        complete=result.complete,
        root=scan.root,
        anchored=anchored,
        unanchored=unanchored,
        signed=signed,
        anchor_faults=tuple(faults),
        signers=signers if signed else (),
    )


def checkpoint_of(
    path: PathLike, key: Optional[bytes] = None, signer: SignerArg = None
) -> Tuple[Optional[Checkpoint], VerifyResult]:
    """The checkpoint of a transcript file as it is, signed by ``key`` and ``signer`` if given.

    ``signer`` is one note signer or a list of them, as for
    :func:`~agentloop.transcript.checkpoint.sign_checkpoint`.  The file is
    verified first: the checkpoint is ``None`` when it has any fault or no
    record (a checkpoint vouches for what it covers).
    """
    if key is not None:
        key = check_key(key)
    check_signers(signer)
    scan = scan_tree(path)
    result = scan.result
    if not result.ok or not result.count or scan.first is None or result.head is None:
        return None, result
    head = Checkpoint(scan.first, result.count, scan.root, result.head)
    return sign_checkpoint(head, key, signer), result
