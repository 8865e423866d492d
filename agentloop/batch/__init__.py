"""Batches: many runs on the executor you already have, and one ledger that proves which transcripts belong.

Modules, importing downhill in this order:

* :mod:`~agentloop.batch.spec` -- :class:`RunSpec`, its JSON form, the record 0 it implies;
* :mod:`~agentloop.batch.facts` -- what a transcript file says about itself, read once;
* :mod:`~agentloop.batch.worker` -- :func:`run_one`, the function shipped to executors;
* :mod:`~agentloop.batch.ledger` -- the ``agentloop-manifest/1`` ledger, its root, checkpoint and proofs;
* :mod:`~agentloop.batch.driver` -- :func:`run_many`, the driver;
* :mod:`~agentloop.batch.audit` -- a batch checked against its ledger, in parallel.
"""

from __future__ import annotations

from .audit import AuditResult, audit_batch
from .ledger import (
    ManifestCheckpoint,
    check_extension,
    check_manifest_checkpoint,
    check_run_proof,
    parse_ledger,
    parse_manifest_checkpoint,
    prove_extension,
    prove_run,
)
from .driver import BatchResult, RunEntry, run_many
from .spec import RunSpec, read_specs

__all__ = [
    "RunSpec",
    "read_specs",
    "run_many",
    "RunEntry",
    "BatchResult",
    "audit_batch",
    "AuditResult",
    "ManifestCheckpoint",
    "parse_ledger",
    "parse_manifest_checkpoint",
    "check_manifest_checkpoint",
    "prove_run",
    "check_run_proof",
    "prove_extension",
    "check_extension",
]
