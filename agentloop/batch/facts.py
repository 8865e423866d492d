"""What one transcript file says about itself, read once: :func:`transcript_facts`.

The driver of a batch judges every transcript a worker hands back with it,
and ``agentloop verify --manifest`` compares every file with its ledger
line with it, in as many processes as asked.  Its answer is a plain JSON
object, so it can come back from a process pool.
"""

from __future__ import annotations

import hashlib
from typing import Any, Dict, List, Mapping, Optional

from ..transcript.format import Fault, PathLike
from ..transcript.checkpoint import ORIGIN_PREFIX
from ..transcript.merkle import CompactRange, leaf_hash
from ..transcript.verify import scan

__all__ = ["transcript_facts", "difference"]


def _int(value: object) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def transcript_facts(path: PathLike, task: bool = False) -> Dict[str, Any]:
    """One pass over ``path``: verify the chain, hash the file, build the Merkle tree.

    Returns ``exists``, ``ok`` (the chain verifies), ``complete`` (it ends
    in a stop record), ``records``, ``first`` (record 0's hash), ``head``,
    ``root`` (hex RFC 6962 root over the record lines), ``sha256`` (of the
    bytes read), ``fault`` (the first fault, ``kind: detail``, or ``""``) and
    from the stop record ``stop``, ``steps``, ``tokens`` and ``cost`` (when
    it holds one).  With ``task``, also ``task``: record 0's payload (a
    dict, or ``None``), read in the same pass.  Never raises for a bad or
    missing file.
    """
    digest = hashlib.sha256()
    tree = CompactRange()
    faults: List[Fault] = []
    last: Any = None
    chain = None
    first: List[str] = []
    task_payload: List[Any] = []

    def on_record(body: bytes) -> None:
        tree.append(leaf_hash(body))

    for _, record, found, chain in scan(path, on_record=on_record, on_bytes=digest.update):
        faults.extend(found)
        if record is not None:
            last = record
            if not first and isinstance(record, dict) and isinstance(record.get("hash"), str):
                first.append(record["hash"])
                task_payload.append(record.get("payload") if record.get("kind") == "task" else None)
    exists = not any(f.kind == "unreadable" and f.line is None for f in faults)
    payload = last.get("payload") if isinstance(last, dict) and last.get("kind") == "stop" else None
    stop: Dict[str, Any] = payload if isinstance(payload, dict) else {}
    cost = stop.get("cost")
    facts: Dict[str, Any] = {
        "exists": exists,
        "ok": not faults,
        "complete": chain is not None and chain.last_kind == "stop",
        "records": chain.index if chain is not None else 0,
        "first": first[0] if first else None,
        "head": chain.head if chain is not None and chain.index else None,
        "root": tree.root().hex(),
        "sha256": digest.hexdigest(),
        "fault": "%s: %s" % (faults[0].kind, faults[0].detail) if faults else "",
        "stop": stop.get("reason") if isinstance(stop.get("reason"), str) else None,
        "steps": _int(stop.get("steps")),
        "tokens": _int(stop.get("tokens")),
        "cost": cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
    }
    if task:
        facts["task"] = task_payload[0] if task_payload and isinstance(task_payload[0], dict) else None
    return facts


def difference(line: Mapping[str, Any], facts: Mapping[str, Any]) -> str:
    """Why a file (its :func:`transcript_facts`) is not the one its ``ok`` ledger line describes ("" when it is)."""
    if not facts["exists"]:
        return "cannot be read: %s" % (facts["fault"],)
    if not facts["ok"]:
        return "does not verify: %s" % (facts["fault"],)
    if facts["sha256"] != line["sha256"]:
        return "its SHA-256 is %s..., the ledger says %s..." % (facts["sha256"][:16], line["sha256"][:16])
    for key in ("records", "head", "root", "stop"):
        if facts[key] != line[key]:
            return "its %s differs from the ledger's" % (key,)
    if ORIGIN_PREFIX + str(facts["first"]) != line["origin"]:
        return "its origin differs from the ledger's"
    return ""
