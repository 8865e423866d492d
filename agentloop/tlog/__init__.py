"""Transparency-log formats other logs and witnesses already read: C2SP ``tlog-proof`` and ``tlog-witness``.

* :mod:`.tree_head` -- the note text of any C2SP ``tlog-checkpoint``;
* :mod:`.proof` -- ``c2sp.org/tlog-proof@v1`` files: write, parse, verify;
* :mod:`.bundle` -- tlog-proofs of a transcript's record and of a batch's ledger line;
* :mod:`.witness` -- a witness that needs no log: ``add-checkpoint`` answered
  from the request body and what it last cosigned;
* :mod:`.server` -- that witness over HTTP.
"""

from __future__ import annotations

from .bundle import check_agentloop_leaf, prove_ledger_line, prove_record
from .proof import TLOG_PROOF_HEADER, ProvedLeaf, TlogProof, parse_tlog_proof, verify_tlog_proof
from .tree_head import TreeHead, parse_tree_head
from .witness import Witness, WitnessAnswer, WitnessPolicy

__all__ = [
    "TLOG_PROOF_HEADER",
    "TlogProof",
    "ProvedLeaf",
    "parse_tlog_proof",
    "verify_tlog_proof",
    "TreeHead",
    "parse_tree_head",
    "prove_record",
    "prove_ledger_line",
    "check_agentloop_leaf",
    "Witness",
    "WitnessAnswer",
    "WitnessPolicy",
]
