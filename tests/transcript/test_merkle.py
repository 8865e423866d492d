"""RFC 6962 / RFC 9162 Merkle trees: the vectors, the known answers, a naive oracle.

Vectors: ``tests/vectors/merkle/`` (transparency-dev/merkle, Apache-2.0; see
its README for provenance and the three extra rules).  The oracle below is
RFC 9162 section 2.1 written as recursion, straight from the text, and every
proof agentloop builds for trees up to 64 leaves is compared with it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import unittest
from typing import Any, Dict, List, Optional, Tuple

from agentloop.errors import ProofError
from agentloop.transcript.merkle import (
    EMPTY_ROOT,
    CompactRange,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root_from_inclusion_proof,
    root_of,
    verify_consistency,
    verify_inclusion,
)

VECTORS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "merkle")


# --- the oracle: RFC 9162 section 2.1, recursive, over leaf *data* ----------


def _k(n: int) -> int:
    """The largest power of two smaller than n (n > 1)."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(data: List[bytes]) -> bytes:
    """MTH(D[n]) of section 2.1.1."""
    if not data:
        return hashlib.sha256(b"").digest()
    if len(data) == 1:
        return hashlib.sha256(b"\x00" + data[0]).digest()
    k = _k(len(data))
    return hashlib.sha256(b"\x01" + mth(data[:k]) + mth(data[k:])).digest()


def path(m: int, data: List[bytes]) -> List[bytes]:
    """PATH(m, D[n]) of section 2.1.3.1."""
    if len(data) <= 1:
        return []
    k = _k(len(data))
    if m < k:
        return path(m, data[:k]) + [mth(data[k:])]
    return path(m - k, data[k:]) + [mth(data[:k])]


def subproof(m: int, data: List[bytes], whole: bool) -> List[bytes]:
    """SUBPROOF(m, D[n], b) of section 2.1.4.1."""
    n = len(data)
    if m == n:
        return [] if whole else [mth(data)]
    k = _k(n)
    if m <= k:
        return subproof(m, data[:k], whole) + [mth(data[k:])]
    return subproof(m - k, data[k:], False) + [mth(data[:k])]


def leaf_data(n: int) -> List[bytes]:
    return [b"leaf %d" % i for i in range(n)]


# --- the vector files ----------------------------------------------------------


def _b64(value: Optional[str]) -> bytes:
    return base64.b64decode(value or "", validate=True)


def load(kind: str) -> List[Tuple[str, Dict[str, Any]]]:
    found = []
    for folder, _, files in os.walk(os.path.join(VECTORS, kind)):
        for name in sorted(files):
            if name.endswith(".json"):
                full = os.path.join(folder, name)
                with open(full, encoding="utf-8") as handle:
                    found.append((os.path.relpath(full, VECTORS), json.load(handle)))
    if not found:
        raise AssertionError("no %s vectors under %s" % (kind, VECTORS))
    return sorted(found)


def run_inclusion(case: Dict[str, Any]) -> bool:
    """True when verification succeeds."""
    try:
        verify_inclusion(
            case["leafIdx"],
            case["treeSize"],
            _b64(case["leafHash"]),
            [_b64(p) for p in case["proof"] or []],
            _b64(case["root"]),
        )
    except ProofError:
        return False
    return True


def run_consistency(case: Dict[str, Any]) -> bool:
    try:
        verify_consistency(
            case["size1"],
            case["size2"],
            _b64(case["root1"]),
            _b64(case["root2"]),
            [_b64(p) for p in case["proof"] or []],
        )
    except ProofError:
        return False
    return True


class TestVectors(unittest.TestCase):
    def test_all_98_inclusion_vectors(self) -> None:
        cases = load("inclusion")
        self.assertEqual(len(cases), 98)
        for name, case in cases:
            with self.subTest(name):
                self.assertEqual(run_inclusion(case), not case["wantErr"], case["desc"])

    def test_all_98_consistency_vectors(self) -> None:
        cases = load("consistency")
        self.assertEqual(len(cases), 98)
        for name, case in cases:
            with self.subTest(name):
                self.assertEqual(run_consistency(case), not case["wantErr"], case["desc"])

    def test_12_want_success_and_184_an_error(self) -> None:
        cases = load("inclusion") + load("consistency")
        self.assertEqual(sum(not case["wantErr"] for _, case in cases), 12)
        self.assertEqual(sum(bool(case["wantErr"]) for _, case in cases), 184)

    def test_the_file_each_extra_rule_exists_for(self) -> None:
        named = dict(load("inclusion") + load("consistency"))
        # rule 1: a 0-byte leaf hash and root would compare equal without the length check
        self.assertFalse(run_inclusion(named[os.path.join("inclusion", "single-entry", "empty-root-and-leaf.json")]))
        # rule 2: from size 0 is an error even to size 0
        self.assertFalse(
            run_consistency(
                named[os.path.join("consistency", "additional", "sizes-are-equal-zero-and-proof-is-empty.json")]
            )
        )
        # rule 3: equal sizes compare the roots as given (12-byte "roots" here)
        case = named[os.path.join("consistency", "additional", "sizes-are-equal-one-and-proof-is-empty.json")]
        self.assertNotEqual(len(_b64(case["root1"])), 32)
        self.assertTrue(run_consistency(case))


class TestKnownAnswers(unittest.TestCase):
    def rows(self) -> List[List[str]]:
        with open(os.path.join(VECTORS, "kat.tsv"), encoding="utf-8") as handle:
            rows = [line.rstrip("\n").split("\t") for line in handle if line.strip() and not line.startswith("#")]
        self.assertGreater(len(rows), 20)
        for row in rows:
            self.assertEqual(len(row), 4, row)
        return rows

    def test_kat_tsv(self) -> None:
        # Each row's recipe is in tests/vectors/merkle/README.md.
        leaves: Dict[int, bytes] = {}
        checked = 0
        for kind, a, b, expected in self.rows():
            with self.subTest(kind=kind, a=a, b=b):
                if kind == "empty_root":
                    self.assertEqual(EMPTY_ROOT.hex(), expected)
                    self.assertEqual(CompactRange().root().hex(), expected)
                elif kind == "leaf_hash":
                    self.assertEqual(leaf_hash(bytes.fromhex(a)).hex(), expected)
                elif kind == "node_hash":
                    self.assertEqual(node_hash(bytes.fromhex(a), bytes.fromhex(b)).hex(), expected)
                elif kind == "tree_leaf":
                    leaves[int(a)] = bytes.fromhex(b)
                    self.assertEqual(leaf_hash(bytes.fromhex(b)).hex(), expected)
                elif kind == "tree_root":
                    data = [leaves[i] for i in range(int(a))]
                    self.assertEqual(root_of([leaf_hash(d) for d in data]).hex(), expected)
                    self.assertEqual(mth(data).hex(), expected)
                else:
                    self.fail("unknown row kind %r" % (kind,))
                checked += 1
        self.assertEqual(checked, 21)  # 1 empty root, 2 leaf, 1 node, 8 tree leaves, 9 tree roots


class TestAgainstTheOracle(unittest.TestCase):
    def test_compact_range_root_at_every_size_up_to_130(self) -> None:
        data = leaf_data(130)
        tree = CompactRange()
        self.assertEqual(tree.root(), mth([]))
        for n in range(1, 131):
            tree.append_data(data[n - 1])
            self.assertEqual(tree.size, n)
            self.assertEqual(tree.root(), mth(data[:n]), n)

    def test_every_inclusion_proof_up_to_64_leaves(self) -> None:
        data = leaf_data(64)
        leaves = [leaf_hash(d) for d in data]
        for n in range(1, 65):
            root = mth(data[:n])
            for m in range(n):
                proof = inclusion_proof(leaves, m, n)
                self.assertEqual(proof, path(m, data[:n]), (m, n))
                verify_inclusion(m, n, leaves[m], proof, root)
                self.assertEqual(root_from_inclusion_proof(m, n, leaves[m], proof), root)

    def test_every_consistency_proof_m_le_n_up_to_64(self) -> None:
        data = leaf_data(64)
        leaves = [leaf_hash(d) for d in data]
        roots = [mth(data[:n]) for n in range(65)]
        pairs = 0
        for n in range(1, 65):
            for m in range(1, n + 1):
                proof = consistency_proof(leaves, m, n)
                self.assertEqual(proof, subproof(m, data[:n], True), (m, n))
                verify_consistency(m, n, roots[m], roots[n], proof)
                pairs += m < n
        self.assertEqual(pairs, 64 * 63 // 2)

    def test_every_mutated_proof_fails_up_to_24_leaves(self) -> None:
        data = leaf_data(24)
        leaves = [leaf_hash(d) for d in data]
        roots = [mth(data[:n]) for n in range(25)]
        for n in range(1, 25):
            for m in range(n):
                proof = inclusion_proof(leaves, m, n)
                for bad in _mutations(proof):
                    with self.assertRaises(ProofError, msg=(m, n)):
                        verify_inclusion(m, n, leaves[m], bad, roots[n])
                for other in (m + 1, m - 1):
                    if 0 <= other < n and leaves[other] != leaves[m]:
                        with self.assertRaises(ProofError):
                            verify_inclusion(other, n, leaves[m], proof, roots[n])
            for m in range(1, n):
                proof = consistency_proof(leaves, m, n)
                for bad in _mutations(proof):
                    with self.assertRaises(ProofError, msg=(m, n)):
                        verify_consistency(m, n, roots[m], roots[n], bad)
                with self.assertRaises(ProofError):
                    verify_consistency(m, n, roots[m - 1] if m > 1 else roots[n], roots[n], proof)

    def test_misuse_raises_proof_error_naming_the_value(self) -> None:
        leaves = [leaf_hash(d) for d in leaf_data(4)]
        with self.assertRaisesRegex(ProofError, "leaf index 4 is not in a tree of size 4"):
            inclusion_proof(leaves, 4, 4)
        with self.assertRaisesRegex(ProofError, "tree size 5 is not between 0 and the 4 leaves held"):
            inclusion_proof(leaves, 0, 5)
        with self.assertRaisesRegex(ProofError, "old size 0 is not between 1 and the new size 4"):
            consistency_proof(leaves, 0, 4)
        with self.assertRaisesRegex(ProofError, "leaf hash is 31 bytes, not a 32-byte hash"):
            verify_inclusion(0, 1, b"x" * 31, [], b"x" * 32)
        with self.assertRaisesRegex(ProofError, "a consistency proof from size 0 proves nothing"):
            verify_consistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, [])
        with self.assertRaisesRegex(ProofError, "smaller than the old size"):
            verify_consistency(3, 2, EMPTY_ROOT, EMPTY_ROOT, [])


def _mutations(proof: List[bytes]) -> List[List[bytes]]:
    """A bit flipped in each hash, each hash dropped, one hash added, and the order reversed."""
    out = []
    for i in range(len(proof)):
        flipped = bytearray(proof[i])
        flipped[i % 32] ^= 1
        out.append(proof[:i] + [bytes(flipped)] + proof[i + 1 :])
        out.append(proof[:i] + proof[i + 1 :])
    out.append(proof + [hashlib.sha256(b"extra").digest()])
    out.append([hashlib.sha256(b"extra").digest()] + proof)
    if len(proof) > 1 and proof != proof[::-1]:
        out.append(proof[::-1])
    return out


if __name__ == "__main__":
    unittest.main()
