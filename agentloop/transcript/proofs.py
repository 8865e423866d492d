"""Merkle proofs about a transcript, as JSON documents checked without the file.

An inclusion proof shows that a record line is leaf ``index`` of the tree
of ``size`` records (RFC 9162 section 2.1.3); a consistency proof shows that
the tree of ``old_size`` records is a prefix of the tree of ``size``
(section 2.1.4).  Either is checked against a checkpoint
(:mod:`agentloop.transcript.checkpoint`) alone: whoever holds the checkpoint needs
neither the transcript nor trust in whoever sent the proof.

Documents (hashes are lowercase hex; ``leaf_hash`` is
``SHA-256(0x00 || the record's line without \\n)``)::

    {"kind": "inclusion", "origin": "agentloop/1/<hex>", "index": 3, "size": 11,
     "leaf_hash": "<hex>", "proof": ["<hex>", ...], "root": "<hex>"}
    {"kind": "consistency", "origin": "agentloop/1/<hex>", "old_size": 5, "size": 11,
     "old_root": "<hex>", "root": "<hex>", "proof": ["<hex>", ...]}

:func:`parse_proof` refuses any other shape (an unknown member, a wrong
type, a hash that is not 64 hex digits) with
:class:`~agentloop.errors.ProofError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .anchor import scan_tree
from .checkpoint import ORIGIN_PREFIX, Checkpoint, check_trusted, verify_signatures
from ..signing.note import Verifier
from ..errors import ProofError, SigningKeyError
from .merkle import consistency_proof, inclusion_proof, root_of, verify_consistency, verify_inclusion
from .format import PathLike

__all__ = [
    "InclusionProof",
    "ConsistencyProof",
    "Proof",
    "prove_inclusion",
    "prove_consistency",
    "parse_proof",
    "check_proof",
    "check_consistency",
]

#: More hashes than a tree of 2^53 leaves can need (2 per level).
MAX_PROOF_HASHES = 2 * 53 + 2
#: A proof document larger than this is refused unread.
MAX_PROOF_BYTES = 64 * 1024
_MAX_SIZE = 2**53 - 1
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class InclusionProof:
    """Record ``index``'s leaf is in the tree of ``size`` records with ``root``."""

    first: str
    index: int
    size: int
    leaf_hash: str
    proof: Tuple[str, ...]
    root: str

    def to_json(self) -> Dict[str, Any]:
        """The document, as a JSON object."""
        return {
            "kind": "inclusion",
            "origin": ORIGIN_PREFIX + self.first,
            "index": self.index,
            "size": self.size,
            "leaf_hash": self.leaf_hash,
            "proof": list(self.proof),
            "root": self.root,
        }


@dataclass(frozen=True)
class ConsistencyProof:
    """The tree of ``old_size`` records with ``old_root`` is a prefix of the one of ``size`` with ``root``."""

    first: str
    old_size: int
    size: int
    old_root: str
    root: str
    proof: Tuple[str, ...]

    def to_json(self) -> Dict[str, Any]:
        """The document, as a JSON object."""
        return {
            "kind": "consistency",
            "origin": ORIGIN_PREFIX + self.first,
            "old_size": self.old_size,
            "size": self.size,
            "old_root": self.old_root,
            "root": self.root,
            "proof": list(self.proof),
        }


Proof = Union[InclusionProof, ConsistencyProof]


def _leaves(path: PathLike, size: Optional[int]) -> Tuple[str, Tuple[bytes, ...], int]:
    """The verified file's run name, its leaf hashes and the tree size to prove in."""
    scan = scan_tree(path, keep_leaves=True)
    result = scan.result
    if not result.ok:
        raise ProofError(
            "%s does not verify (%s at %s): no proof is made from it"
            % (path, result.faults[0].kind, result.faults[0].where())
        )
    if scan.first is None:
        raise ProofError("%s holds no record" % (path,))
    if size is None:
        size = result.count
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= result.count:
        raise ProofError("size %s is not between 1 and the file's %d records" % (size, result.count))
    return scan.first, scan.leaves, size


def prove_inclusion(path: PathLike, index: int, size: Optional[int] = None) -> InclusionProof:
    """The inclusion proof of record ``index`` in the first ``size`` records (default: all).

    The file must verify.  Raises :class:`~agentloop.errors.ProofError`.
    """
    first, leaves, size = _leaves(path, size)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < size:
        raise ProofError("index %s is not a record of a tree of size %d (0 to %d)" % (index, size, size - 1))
    path_hashes = inclusion_proof(leaves, index, size)
    root = _root(leaves, size)
    return InclusionProof(first, index, size, leaves[index].hex(), tuple(h.hex() for h in path_hashes), root)


def prove_consistency(path: PathLike, old_size: int, size: Optional[int] = None) -> ConsistencyProof:
    """The consistency proof from the first ``old_size`` records to the first ``size`` (default: all).

    The file must verify.  Raises :class:`~agentloop.errors.ProofError`.
    """
    first, leaves, size = _leaves(path, size)
    if isinstance(old_size, bool) or not isinstance(old_size, int) or not 1 <= old_size <= size:
        raise ProofError("old size %s is not between 1 and the size %d" % (old_size, size))
    hashes = consistency_proof(leaves, old_size, size)
    return ConsistencyProof(
        first, old_size, size, _root(leaves, old_size), _root(leaves, size), tuple(h.hex() for h in hashes)
    )


def _root(leaves: Tuple[bytes, ...], size: int) -> str:
    return root_of(leaves[:size]).hex()


# --- reading a document ------------------------------------------------------


def _hex(value: object, where: str) -> str:
    if not isinstance(value, str) or len(value) != 64 or not _HEX.issuperset(value):
        raise ProofError("proof %s must be 64 lowercase hex digits" % (where,))
    return value


def _int(value: object, where: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= _MAX_SIZE:
        raise ProofError("proof %s must be an integer from %d to 2**53-1" % (where, low))
    return value


def parse_proof(data: Union[bytes, str]) -> Proof:
    """Parse a proof document strictly; raises :class:`~agentloop.errors.ProofError`.

    1. a JSON object of at most :data:`MAX_PROOF_BYTES`, with no duplicated member;
    2. ``kind`` is ``inclusion`` or ``consistency`` and the members are exactly
       that kind's;
    3. ``origin`` is ``agentloop/1/`` and 64 hex digits; sizes and index are
       integers in range; every hash is 64 lowercase hex digits; at most
       :data:`MAX_PROOF_HASHES` proof hashes.
    """
    # 1.
    if len(data) > MAX_PROOF_BYTES:
        raise ProofError("the proof document is longer than %d bytes" % (MAX_PROOF_BYTES,))

    def no_duplicates(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
        names = [name for name, _ in pairs]
        if len(set(names)) != len(names):
            raise ProofError("the proof document repeats a member")
        return dict(pairs)

    try:
        doc = json.loads(data, object_pairs_hook=no_duplicates)
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, ProofError):
            raise
        raise ProofError("the proof document is not JSON: %s" % (str(exc)[:80],)) from None
    if not isinstance(doc, dict):
        raise ProofError("the proof document is not a JSON object")
    # 2.
    kind = doc.get("kind")
    members = {
        "inclusion": {"kind", "origin", "index", "size", "leaf_hash", "proof", "root"},
        "consistency": {"kind", "origin", "old_size", "size", "old_root", "root", "proof"},
    }
    if kind not in members:
        raise ProofError("proof kind must be 'inclusion' or 'consistency'")
    if set(doc) != members[kind]:
        extra, missing = sorted(set(doc) - members[kind]), sorted(members[kind] - set(doc))
        raise ProofError(
            "%s proof members: %s"
            % (
                kind,
                "; ".join(
                    part
                    for part in (
                        "missing " + ", ".join(missing) if missing else "",
                        "unexpected " + ", ".join(repr(e)[:40] for e in extra) if extra else "",
                    )
                    if part
                ),
            )
        )
    # 3.
    origin = doc["origin"]
    if not isinstance(origin, str) or not origin.startswith(ORIGIN_PREFIX):
        raise ProofError("proof origin must be %r and 64 hex digits" % (ORIGIN_PREFIX,))
    first = _hex(origin[len(ORIGIN_PREFIX) :], "origin")
    hashes = doc["proof"]
    if not isinstance(hashes, list) or len(hashes) > MAX_PROOF_HASHES:
        raise ProofError("proof hashes must be a list of at most %d" % (MAX_PROOF_HASHES,))
    path = tuple(_hex(h, "proof[%d]" % i) for i, h in enumerate(hashes))
    size = _int(doc["size"], "size", 1)
    if kind == "inclusion":
        index = _int(doc["index"], "index", 0)
        return InclusionProof(first, index, size, _hex(doc["leaf_hash"], "leaf_hash"), path, _hex(doc["root"], "root"))
    old_size = _int(doc["old_size"], "old_size", 1)
    return ConsistencyProof(first, old_size, size, _hex(doc["old_root"], "old_root"), _hex(doc["root"], "root"), path)


# --- checking it -------------------------------------------------------------


def _same_run(proof: Proof, checkpoint: Checkpoint, role: str) -> None:
    if proof.first != checkpoint.first:
        raise ProofError(
            "the proof is about run %s..., the %s about run %s..." % (proof.first[:16], role, checkpoint.first[:16])
        )


def _signatures(
    checkpoints: Sequence[Checkpoint], key: Optional[bytes], trusted: Sequence[Verifier], require: Sequence[str]
) -> None:
    """Step 1 of the checks below: each checkpoint's signatures, when a key or trusted keys are given."""
    if require and not trusted:
        raise SigningKeyError("require", "given without trusted keys")
    verifiers = check_trusted(trusted, require, key)
    if key is None and not verifiers:
        return
    for checkpoint in checkpoints:
        verify_signatures(checkpoint, verifiers, require, key)


def check_proof(
    proof: Proof,
    checkpoint: Checkpoint,
    key: Optional[bytes] = None,
    *,
    trusted: Sequence[Verifier] = (),
    require: Sequence[str] = (),
) -> None:
    """Check a proof against one checkpoint, without the transcript.

    1. with ``key`` or ``trusted`` keys, the checkpoint's signatures
       (:func:`~agentloop.transcript.checkpoint.verify_signatures`:
       ``BadSignatureError``; misuse such as a ``require`` name no trusted
       key has is ``SigningKeyError``);
    2. the proof and the checkpoint are about the same run;
    3. the proof's tree is the checkpoint's: same ``size`` and ``root``;
    4. the proof itself (RFC 9162 section 2.1.3.2 or 2.1.4.2).

    For a consistency proof this shows that the tree of ``old_size`` records
    with ``old_root`` is a prefix of the checkpoint's.  Raises
    :class:`~agentloop.errors.ProofError` (or ``BadSignatureError``).
    """
    # 1.
    _signatures([checkpoint], key, trusted, require)
    # 2.
    _same_run(proof, checkpoint, "checkpoint")
    # 3.
    if proof.size != checkpoint.size:
        raise ProofError(
            "the proof is for a tree of %d records, the checkpoint has %d (make it with --size %d)"
            % (proof.size, checkpoint.size, checkpoint.size)
        )
    if proof.root != checkpoint.root:
        raise ProofError(
            "the proof's root %s... is not the checkpoint's %s..." % (proof.root[:16], checkpoint.root[:16])
        )
    # 4.
    path = [bytes.fromhex(h) for h in proof.proof]
    root = bytes.fromhex(checkpoint.root)
    if isinstance(proof, InclusionProof):
        verify_inclusion(proof.index, proof.size, bytes.fromhex(proof.leaf_hash), path, root)
    else:
        verify_consistency(proof.old_size, proof.size, bytes.fromhex(proof.old_root), root, path)


def check_consistency(
    old: Checkpoint,
    new: Checkpoint,
    proof: ConsistencyProof,
    key: Optional[bytes] = None,
    *,
    trusted: Sequence[Verifier] = (),
    require: Sequence[str] = (),
) -> None:
    """Check that checkpoint ``new`` extends checkpoint ``old``, without the transcript.

    1. with ``key`` or ``trusted`` keys, both checkpoints' signatures, as
       :func:`check_proof` (``BadSignatureError``);
    2. both checkpoints and the proof are about the same run;
    3. ``new`` is not smaller than ``old`` (that would be a rollback);
    4. the proof goes from ``old``'s size and root to ``new``'s;
    5. the proof itself (RFC 9162 section 2.1.4.2); equal sizes also need equal heads.

    Raises :class:`~agentloop.errors.ProofError` (or ``BadSignatureError``).
    """
    # 1.
    _signatures([old, new], key, trusted, require)
    # 2.
    if old.first != new.first:
        raise ProofError("the checkpoints are of different runs (%s... and %s...)" % (old.first[:16], new.first[:16]))
    _same_run(proof, old, "checkpoints")
    # 3.
    if new.size < old.size:
        raise ProofError(
            "the new checkpoint covers %d records, fewer than the old one's %d: a rollback" % (new.size, old.size)
        )
    # 4.
    if (proof.old_size, proof.old_root) != (old.size, old.root):
        raise ProofError(
            "the proof starts from %d records with root %s..., the old checkpoint has %d with %s..."
            % (proof.old_size, proof.old_root[:16], old.size, old.root[:16])
        )
    if (proof.size, proof.root) != (new.size, new.root):
        raise ProofError(
            "the proof ends at %d records with root %s..., the new checkpoint has %d with %s..."
            % (proof.size, proof.root[:16], new.size, new.root[:16])
        )
    # 5.
    path = [bytes.fromhex(h) for h in proof.proof]
    verify_consistency(old.size, new.size, bytes.fromhex(old.root), bytes.fromhex(new.root), path)
    if old.size == new.size and old.head != new.head:
        raise ProofError("two checkpoints of %d records with one root but different heads" % (old.size,))
