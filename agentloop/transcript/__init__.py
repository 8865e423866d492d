"""The evidence file: a transcript and everything that anchors it.

* ``format`` -- the constants of format ``agentloop/1``, fault kinds, results;
* ``writer`` -- :class:`TranscriptWriter`, appending chained canonical lines;
* ``verify`` -- :func:`verify_file` / :func:`verify_records`, one streaming scan;
* ``durable`` and ``repair`` -- atomic replacement, locks, a torn last line;
* ``merkle``, ``checkpoint``, ``anchor`` and ``proofs`` -- the RFC 6962/9162
  tree over the records, its C2SP checkpoint note, a file checked against a
  checkpoint, and inclusion and consistency proofs.

``docs/format.md`` is the normative description of the format.
"""

from __future__ import annotations

from .format import (
    FAULT_KINDS,
    FIELDS,
    FORMAT,
    GENESIS,
    KINDS,
    MAX_LINE_BYTES,
    MAX_RECORD_BYTES,
    MIN_RECORD_BYTES,
    Fault,
    PathLike,
    VerifyResult,
    is_hash,
)
from .verify import iter_file, verify_file, verify_records
from .writer import TranscriptWriter

__all__ = [
    "FORMAT",
    "GENESIS",
    "FIELDS",
    "KINDS",
    "MAX_LINE_BYTES",
    "MAX_RECORD_BYTES",
    "MIN_RECORD_BYTES",
    "FAULT_KINDS",
    "Fault",
    "VerifyResult",
    "PathLike",
    "is_hash",
    "TranscriptWriter",
    "verify_records",
    "verify_file",
    "iter_file",
]
