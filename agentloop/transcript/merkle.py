"""RFC 6962 / RFC 9162 Merkle trees over a transcript's records: hashing, proofs.

The leaves of a transcript's tree are its record lines, in order, each
without its terminating ``\\n``.  Hashing is RFC 9162 section 2.1.1 (RFC
6962 section 2.1) with SHA-256:

* leaf hash  = SHA-256(0x00 || line);
* node hash  = SHA-256(0x01 || left || right);
* the root of the empty tree = SHA-256("").

:class:`CompactRange` keeps the root of a growing tree in O(log n) hashes,
so a writer pays one leaf hash and, amortised, one node hash per record.
The proof functions build inclusion proofs (RFC 9162 section 2.1.3.1) and
consistency proofs (section 2.1.4.1) from the list of leaf hashes, and
verify them (sections 2.1.3.2 and 2.1.4.2) with three rules RFC 9162 leaves
implicit, which the transparency-dev/merkle vectors pin (see
``tests/vectors/merkle/README.md``):

1. a hash whose length is not 32 bytes is refused before anything is hashed;
2. a consistency proof from size 0 is an error, even to size 0;
3. a consistency proof between equal sizes holds exactly when it is empty
   and the two roots are equal byte for byte.

Hashes are ``bytes`` here; the rest of agentloop shows them as hex.
"""

from __future__ import annotations

import hashlib
from typing import List, Sequence, Union

from ..errors import ProofError

__all__ = [
    "HASH_SIZE",
    "EMPTY_ROOT",
    "leaf_hash",
    "node_hash",
    "root_of",
    "CompactRange",
    "inclusion_proof",
    "consistency_proof",
    "root_from_inclusion_proof",
    "verify_inclusion",
    "verify_consistency",
]

Bytes = Union[bytes, bytearray, memoryview]

#: SHA-256 digests are 32 bytes.
HASH_SIZE = 32
#: RFC 9162 section 2.1.1: MTH({}) = SHA-256() -- the root of the empty tree.
EMPTY_ROOT = hashlib.sha256(b"").digest()

_LEAF = b"\x00"
_NODE = b"\x01"


def leaf_hash(data: Bytes) -> bytes:
    """RFC 9162 section 2.1.1: MTH({d(0)}) = SHA-256(0x00 || d(0))."""
    h = hashlib.sha256(_LEAF)
    h.update(data)
    return h.digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 9162 section 2.1.1: SHA-256(0x01 || MTH(left) || MTH(right))."""
    return hashlib.sha256(_NODE + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two smaller than ``n`` (``n > 1``): RFC 9162's ``k``."""
    return 1 << ((n - 1).bit_length() - 1)


def root_of(leaves: Sequence[bytes]) -> bytes:
    """The Merkle Tree Hash of a list of *leaf hashes* (RFC 9162 section 2.1.1).

    Computed bottom up in O(n) hashes and O(log n) memory, through
    :class:`CompactRange`, so that every root agentloop reports comes from
    the same code.
    """
    tree = CompactRange()
    for leaf in leaves:
        tree.append(leaf)
    return tree.root()


def _range_root(leaves: Sequence[bytes], start: int, end: int) -> bytes:
    """MTH(D[start:end]) of leaf hashes, without copying the list."""
    tree = CompactRange()
    for index in range(start, end):
        tree.append(leaves[index])
    return tree.root()


class CompactRange:
    """The root of a growing Merkle tree, in O(log n) memory.

    The tree of ``n`` leaves is a sequence of perfect subtrees, one per bit
    set in ``n``, largest (leftmost) first; the range holds their roots.
    Appending a leaf merges equal-sized subtrees like a binary carry, so it
    costs one node hash amortised; :meth:`root` folds the subtrees from the
    right, as RFC 9162 section 2.1.1's split at the largest power of two
    below ``n`` does.
    """

    __slots__ = ("_size", "_peaks")

    def __init__(self) -> None:
        self._size = 0
        self._peaks: List[bytes] = []

    @property
    def size(self) -> int:
        """The number of leaves appended."""
        return self._size

    def append(self, leaf: bytes) -> None:
        """Add one leaf *hash* on the right."""
        node, carry = leaf, self._size
        while carry & 1:
            node = node_hash(self._peaks.pop(), node)
            carry >>= 1
        self._peaks.append(node)
        self._size += 1

    def append_data(self, data: Bytes) -> None:
        """Add the leaf whose data is ``data`` (a record line without ``\\n``): :meth:`append` of
        :func:`leaf_hash`, the hashes made in line (one record's work, for each record written)."""
        node, carry, peaks = hashlib.sha256(_LEAF + data).digest(), self._size, self._peaks
        while carry & 1:
            node = hashlib.sha256(_NODE + peaks.pop() + node).digest()
            carry >>= 1
        peaks.append(node)
        self._size += 1

    def root(self) -> bytes:
        """MTH of the leaves so far; :data:`EMPTY_ROOT` when there are none."""
        if not self._peaks:
            return EMPTY_ROOT
        node = self._peaks[-1]
        for peak in reversed(self._peaks[:-1]):
            node = node_hash(peak, node)
        return node


# --- proofs, built (RFC 9162 sections 2.1.3.1 and 2.1.4.1) ------------------


def _check_sizes(leaves: Sequence[bytes], size: int) -> None:
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= len(leaves):
        raise ProofError("tree size %r is not between 0 and the %d leaves held" % (size, len(leaves)))


def inclusion_proof(leaves: Sequence[bytes], index: int, size: int) -> List[bytes]:
    """PATH(index, D[0:size]), bottom to top (RFC 9162 section 2.1.3.1).

    ``leaves`` are leaf hashes; ``0 <= index < size <= len(leaves)``.
    """
    _check_sizes(leaves, size)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < size:
        raise ProofError("leaf index %r is not in a tree of size %d" % (index, size))
    path: List[bytes] = []
    start, end = 0, size
    # Walk down from the root, keeping each sibling subtree's root; the path
    # is read bottom up, so it is reversed at the end.
    while end - start > 1:
        k = _split(end - start)
        if index - start < k:
            path.append(_range_root(leaves, start + k, end))
            end = start + k
        else:
            path.append(_range_root(leaves, start, start + k))
            start += k
    path.reverse()
    return path


def consistency_proof(leaves: Sequence[bytes], old_size: int, new_size: int) -> List[bytes]:
    """PROOF(old_size, D[0:new_size]) (RFC 9162 section 2.1.4.1).

    ``0 < old_size <= new_size <= len(leaves)``; equal sizes give ``[]``.
    """
    _check_sizes(leaves, new_size)
    if isinstance(old_size, bool) or not isinstance(old_size, int) or not 0 < old_size <= new_size:
        raise ProofError("old size %r is not between 1 and the new size %d" % (old_size, new_size))
    proof: List[bytes] = []
    # SUBPROOF(m, D[start:end], b), unrolled: each step appends one sibling.
    m, start, end, whole = old_size, 0, new_size, True
    while m != end - start:
        k = _split(end - start)
        if m <= k:
            proof.append(_range_root(leaves, start + k, end))
            end = start + k
        else:
            proof.append(_range_root(leaves, start, start + k))
            start, m, whole = start + k, m - k, False
    if not whole:  # SUBPROOF(m, D[m], false) = {MTH(D[m])}
        proof.append(_range_root(leaves, start, end))
    proof.reverse()
    return proof


# --- proofs, verified (RFC 9162 sections 2.1.3.2 and 2.1.4.2) ---------------


def _check_hash(name: str, value: object) -> bytes:
    """Rule 1: every hash is exactly 32 bytes, checked before hashing."""
    if not isinstance(value, (bytes, bytearray)) or len(value) != HASH_SIZE:
        length = len(value) if isinstance(value, (bytes, bytearray)) else None
        raise ProofError(
            "%s is %s, not a %d-byte hash"
            % (name, "%d bytes" % length if length is not None else type(value).__name__, HASH_SIZE)
        )
    return bytes(value)


def _check_size(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProofError("%s %r is not a non-negative integer" % (name, value))
    return value


def root_from_inclusion_proof(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """The root an inclusion proof leads to (RFC 9162 section 2.1.3.2, steps 1-3).

    Raises :class:`~agentloop.errors.ProofError` when the proof cannot be
    for a leaf ``index`` of a tree of ``size`` (wrong length, bad hash).
    """
    index, size = _check_size("leaf index", index), _check_size("tree size", size)
    leaf = _check_hash("leaf hash", leaf)
    hashes = [_check_hash("proof[%d]" % i, p) for i, p in enumerate(proof)]
    # 1. leaf_index must be smaller than tree_size.
    if index >= size:
        raise ProofError("leaf index %d is not in a tree of size %d" % (index, size))
    # 2. fn = leaf_index, sn = tree_size - 1, r = the leaf hash.
    fn, sn, r = index, size - 1, leaf
    # 3. Fold each proof hash in, on the side the index bits say.
    for p in hashes:
        # 3a. A proof longer than the tree is high fails.
        if sn == 0:
            raise ProofError("the proof has %d hashes, too many for leaf %d of %d" % (len(hashes), index, size))
        # 3b. p is a left sibling when fn is odd or fn is the last node of its level.
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while fn and not fn & 1:  # fn == sn, a left child: climb to where it is a right one
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        # 3c. Up one level.
        fn >>= 1
        sn >>= 1
    # 4 (first half). The proof must reach the top.
    if sn != 0:
        raise ProofError("the proof has %d hashes, too few for leaf %d of %d" % (len(hashes), index, size))
    return r


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> None:
    """Check that ``leaf`` is leaf ``index`` of the tree of ``size`` with ``root``.

    RFC 9162 section 2.1.3.2: steps 1-3 in :func:`root_from_inclusion_proof`,
    then step 4, the root comparison.  Returns ``None``; raises
    :class:`~agentloop.errors.ProofError` saying why otherwise.
    """
    root = _check_hash("root", root)
    computed = root_from_inclusion_proof(index, size, leaf, proof)
    if computed != root:
        raise ProofError("the proof leads to root %s, not %s" % (computed.hex(), root.hex()))


def verify_consistency(old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]) -> None:
    """Check that the tree of ``old_size`` with ``old_root`` is a prefix of the newer one.

    RFC 9162 section 2.1.4.2, with the three rules of the module docstring.
    Returns ``None``; raises :class:`~agentloop.errors.ProofError` otherwise.
    """
    old_size, new_size = _check_size("old size", old_size), _check_size("new size", new_size)
    # Rule 2 (before rule 3): nothing is consistent with the empty tree here.
    if old_size == 0:
        raise ProofError("a consistency proof from size 0 proves nothing")
    if new_size < old_size:
        raise ProofError("the new size %d is smaller than the old size %d" % (new_size, old_size))
    # Rule 3: equal sizes -- equal roots and an empty proof, compared as given.
    if old_size == new_size:
        if len(proof):
            raise ProofError("a proof between equal sizes must be empty, it has %d hashes" % (len(proof),))
        if bytes(old_root) != bytes(new_root):
            raise ProofError("equal sizes %d with different roots" % (old_size,))
        return
    # Rule 1.
    old_root, new_root = _check_hash("old root", old_root), _check_hash("new root", new_root)
    path = [_check_hash("proof[%d]" % i, p) for i, p in enumerate(proof)]
    # 1. An empty proof is an error when 0 < old_size < new_size.
    if not path:
        raise ProofError("the proof is empty, but %d < %d" % (old_size, new_size))
    # 2. When old_size is a power of two, the old root is the first node.
    if old_size & (old_size - 1) == 0:
        path.insert(0, old_root)
    # 3. fn = old_size - 1, sn = new_size - 1.
    fn, sn = old_size - 1, new_size - 1
    # 4. Skip the levels where the old tree's last node is a right child.
    while fn & 1:
        fn >>= 1
        sn >>= 1
    # 5. fr and sr both start from the first node.
    fr = sr = path[0]
    # 6. Fold the rest in: fr rebuilds the old root, sr the new one.
    for c in path[1:]:
        # 6a.
        if sn == 0:
            raise ProofError("the proof has %d hashes, too many for %d -> %d" % (len(proof), old_size, new_size))
        # 6b.
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while fn and not fn & 1:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        # 6c.
        fn >>= 1
        sn >>= 1
    # 7. Both roots rebuilt and the top reached.
    if sn != 0:
        raise ProofError("the proof has %d hashes, too few for %d -> %d" % (len(proof), old_size, new_size))
    if fr != old_root:
        raise ProofError("the proof rebuilds old root %s, not %s" % (fr.hex(), old_root.hex()))
    if sr != new_root:
        raise ProofError("the proof rebuilds new root %s, not %s" % (sr.hex(), new_root.hex()))
