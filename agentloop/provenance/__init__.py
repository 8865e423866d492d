"""Proofs of runs and batches in the formats transparency systems already check.

A layer above :mod:`agentloop.transcript`, :mod:`agentloop.signing` and
:mod:`agentloop.batch`; modules, importing downhill in this order:

* :mod:`~agentloop.provenance.cbor` -- deterministic CBOR (RFC 8949 section 4.2.1);
* :mod:`~agentloop.provenance.cose` -- COSE_Sign1 with EdDSA (RFC 9052);
* :mod:`~agentloop.provenance.dsse` -- DSSE v1 envelopes and PAE;
* :mod:`~agentloop.provenance.runs` -- what is stated about a run, read once;
* :mod:`~agentloop.provenance.intoto` -- in-toto Statement v1 attestations of a run or a batch;
* :mod:`~agentloop.provenance.scitt` -- SCITT signed statements over a checkpoint (RFC 9943);
* :mod:`~agentloop.provenance.receipts` -- COSE receipts of inclusion in a batch ledger (RFC 9942).

Producing and verifying are standard library only; signing is
:mod:`agentloop.signing`'s (``cryptography`` when installed, the
pure-Python signer only by explicit opt-in).
"""

from __future__ import annotations

from .cbor import UNDEFINED, Simple, Tag
from .cbor import decode as cbor_decode
from .cbor import encode as cbor_encode
from .cose import Sign1, parse_sign1, sign1, verify_sign1
from .dsse import Envelope, envelope_line, pae, parse_envelope, sign_envelope, verify_envelope
from .intoto import (
    BATCH_PREDICATE,
    RUN_PREDICATE,
    Attestation,
    FilesChecked,
    attest_batch,
    attest_run,
    check_files,
    read_bundle,
)
from .receipts import ReceiptCheck, check_receipt, issue_receipts
from .scitt import StatementCheck, check_ledger_statement, check_statement, make_statement, sign_statement

__all__ = [
    "Attestation",
    "BATCH_PREDICATE",
    "Envelope",
    "FilesChecked",
    "RUN_PREDICATE",
    "ReceiptCheck",
    "Sign1",
    "Simple",
    "StatementCheck",
    "Tag",
    "UNDEFINED",
    "attest_batch",
    "attest_run",
    "cbor_decode",
    "cbor_encode",
    "check_files",
    "check_ledger_statement",
    "check_receipt",
    "check_statement",
    "envelope_line",
    "issue_receipts",
    "make_statement",
    "pae",
    "parse_envelope",
    "parse_sign1",
    "read_bundle",
    "sign1",
    "sign_envelope",
    "sign_statement",
    "verify_envelope",
    "verify_sign1",
]
