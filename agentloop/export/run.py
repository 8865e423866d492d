"""A transcript read for export: verified first, in the same pass that reads its records.

:func:`read_run` reads the file once with
:func:`~agentloop.transcript.verify.verify_file`: the records kept are the
very bytes the verdict judged, and the file's SHA-256 is taken on the way.
A transcript that does not verify is never exported
(:class:`~agentloop.errors.ExportError`): an export shows only what could be
checked, so a dashboard cannot show a tampered run as a clean one.  A run
without its stop record (paused, or cut short) verifies and is exported as
what it is.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ..errors import ExportError
from ..transcript.checkpoint import ORIGIN_PREFIX
from ..transcript.format import Fault, PathLike, VerifyResult
from ..transcript.verify import verify_file

__all__ = ["Run", "FailedRun", "read_run", "as_dict", "as_list", "as_int"]


def as_dict(value: object) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> List[Any]:
    return value if isinstance(value, list) else []


def as_int(value: object) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Run:
    """A verified transcript: its records in order, its verdict and its file's SHA-256.

    ``name`` is the run's name in a batch (``None`` for a file on its own).
    """

    records: Tuple[Dict[str, Any], ...]
    verdict: VerifyResult
    sha256: str
    name: Optional[str] = None

    @property
    def task(self) -> Dict[str, Any]:
        """The task record's payload."""
        return as_dict(self.records[0].get("payload"))

    @property
    def stop(self) -> Optional[Dict[str, Any]]:
        """The stop record's payload, or ``None`` for a run without one."""
        last = self.records[-1]
        return as_dict(last.get("payload")) if last.get("kind") == "stop" else None

    @property
    def origin(self) -> str:
        """``agentloop/1/<hash of record 0>``: the run's name everywhere else."""
        return ORIGIN_PREFIX + str(self.records[0].get("hash"))

    @property
    def head(self) -> str:
        """The last record's hash."""
        return str(self.verdict.head)

    @property
    def model(self) -> Dict[str, Any]:
        """What the model said of itself (``provider``, ``model``, ``host``), or ``{}``."""
        return as_dict(self.task.get("model"))

    def assistants(self) -> List[Dict[str, Any]]:
        """The payloads of the assistant records, in order."""
        return [as_dict(r.get("payload")) for r in self.records if r.get("kind") == "assistant"]


@dataclass(frozen=True)
class FailedRun:
    """A batch run the ledger lists without a transcript: ``worker_error`` or ``rejected``.

    ``why`` is the ledger's ``error`` (an exception's type name) or ``reason``.
    """

    name: str
    origin: str
    status: str
    why: str


def _first_fault(result: VerifyResult) -> str:
    first: Fault = result.faults[0]
    more = len(result.faults) - 1
    return "it does not verify: %s: %s: %s%s" % (
        first.where(),
        first.kind,
        first.detail,
        " (and %d more fault%s)" % (more, "" if more == 1 else "s") if more else "",
    )


def read_run(path: PathLike, name: Optional[str] = None) -> Run:
    """Read and verify the transcript at ``path`` in one pass.

    Raises :class:`~agentloop.errors.ExportError` naming the first fault when
    it does not verify (a missing or unreadable file included).
    """
    records: List[Dict[str, Any]] = []
    digest = hashlib.sha256()

    def keep(line: int, record: object, faults: List[Fault]) -> None:
        if isinstance(record, dict) and not faults:
            records.append(record)

    result = verify_file(path, on_line=keep, on_bytes=digest.update)
    if not result.ok:
        raise ExportError(os.fspath(path), _first_fault(result))
    return Run(tuple(records), result, digest.hexdigest(), name)
