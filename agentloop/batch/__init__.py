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

import importlib
from typing import TYPE_CHECKING, Any, Dict, List

if TYPE_CHECKING:
    from .audit import AuditResult, audit_batch
    from .driver import BatchResult, RunEntry, run_many
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
    from .spec import RunSpec, read_specs

#: Each name of the face and the module it lives in.  They are imported on first use (PEP 562), so a
#: command that reads a ledger (``prove``, ``cosign``, ``statement``) does not import the driver and,
#: through it, the models and the loop.
_HOME: Dict[str, str] = {
    "AuditResult": ".audit",
    "audit_batch": ".audit",
    "BatchResult": ".driver",
    "RunEntry": ".driver",
    "run_many": ".driver",
    "ManifestCheckpoint": ".ledger",
    "check_extension": ".ledger",
    "check_manifest_checkpoint": ".ledger",
    "check_run_proof": ".ledger",
    "parse_ledger": ".ledger",
    "parse_manifest_checkpoint": ".ledger",
    "prove_extension": ".ledger",
    "prove_run": ".ledger",
    "RunSpec": ".spec",
    "read_specs": ".spec",
}

if not TYPE_CHECKING:  # type checkers read the imports above instead

    def __getattr__(name: str) -> Any:
        """A name of the face, imported from its module on first use (PEP 562)."""
        home = _HOME.get(name)
        if home is None:
            raise AttributeError("module %r has no attribute %r" % (__name__, name))
        value = getattr(importlib.import_module(home, __name__), name)
        globals()[name] = value  # the next lookup does not come here
        return value

    def __dir__() -> List[str]:
        return sorted(set(globals()) | set(_HOME))


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
