"""A resumed batch against its earlier ledger: what was certified stays certified, or nothing is written.

:func:`agentloop.batch.run_many` with ``resume=True`` finds the ledger of an
earlier attempt.  Before anything runs (numbered as in :func:`check_earlier`
and :func:`altered_runs`):

1. the earlier ledger parses, is of this spec list (each line's name is a
   spec's and its origin the one that spec implies) and, when the batch
   keeps a checkpoint, matches it: its origin (the spec list), its size and
   root; a checkpoint that was signed must be checked with the same key
   (``key``, or an Ed25519 ``signer``) and carry a valid signature by it;
2. every transcript the earlier ledger certified (its last line is ``ok``)
   is still that file: the same bytes, records, head, tree and origin.
   Any that is not is *altered*: reported by name, never run again,
   overwritten or signed (:class:`~agentloop.errors.LedgerMismatchError`).

Without an earlier ledger, a checkpoint already at ``checkpoint`` is refused
(:func:`check_orphan`): it certified a ledger someone removed, and is never
overwritten.

The new ledger is then the earlier one plus a line for each run run again
(:mod:`agentloop.batch.ledger`), so an RFC 9162 consistency proof between
the two checkpoints holds; the driver checks that it does before it writes.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import AgentloopError, LedgerMismatchError, RunConfigError
from ..signing.hmac_sha256 import HmacKey
from ..signing.note import Signer
from .facts import difference, transcript_facts
from .ledger import (
    ManifestCheckpoint,
    check_extension,
    check_manifest_checkpoint,
    parse_manifest_checkpoint,
    prove_extension,
)
from .spec import RunSpec

__all__ = ["check_earlier", "altered_runs", "check_extends", "check_orphan"]


def _signers_of(note: ManifestCheckpoint, key: Optional[bytes], signer: Optional[Signer]) -> Tuple[List[Any], str]:
    """The verifiers this resume can check the earlier checkpoint's signatures with, and who signed that it cannot."""
    verifiers: List[Any] = []
    if key is not None:
        verifiers.append(HmacKey(note.origin, key))
    make = getattr(signer, "verifier", None)
    if signer is not None and callable(make):
        verifiers.append(make())
    known = {(v.name, bytes(v.key_id)) for v in verifiers}
    unchecked = [sig.name for sig in note.signatures if (sig.name, sig.key_id) not in known]
    return verifiers, ", ".join("the HMAC key" if name == note.origin else name for name in unchecked)


def _checkpoint(
    path: str, data: bytes, origin: str, key: Optional[bytes], signer: Optional[Signer]
) -> ManifestCheckpoint:
    """1. The earlier checkpoint at ``path`` is the earlier ledger's, of this batch, signed as it was."""
    if not os.path.lexists(path):
        raise LedgerMismatchError(
            "the earlier ledger has no checkpoint at %s to be checked against (it was removed?): "
            "nothing can show it is the ledger that was certified" % (path,)
        )
    try:
        with open(path, "rb") as handle:
            note = parse_manifest_checkpoint(handle.read(64 * 1024 + 1))
    except (OSError, AgentloopError) as exc:
        raise LedgerMismatchError("the earlier checkpoint %s cannot be read: %s" % (path, exc)) from None
    if note.origin != origin:
        raise LedgerMismatchError(
            "the earlier checkpoint is of another spec list (%s), not this one (%s)" % (note.origin, origin)
        )
    verifiers, unchecked = _signers_of(note, key, signer)
    if note.signatures and not verifiers:
        raise RunConfigError(
            "key/signer",
            "the earlier checkpoint %s is signed (%s): resume with the same key, so "
            "that its signature is checked and the new checkpoint is signed too" % (path, unchecked),
        )
    try:
        check_manifest_checkpoint(note, data, None, verifiers)
    except AgentloopError as exc:
        raise LedgerMismatchError("the earlier ledger does not match its checkpoint %s: %s" % (path, exc)) from None
    return note


def check_orphan(checkpoint: Optional[str]) -> None:
    """1. No earlier ledger: then no earlier checkpoint either.  One left without its ledger (the ledger removed)
    certified transcripts nothing can name any more; it is refused, never overwritten by a new one."""
    if checkpoint is not None and os.path.lexists(checkpoint):
        raise LedgerMismatchError(
            "the checkpoint %s is there, but not the ledger it certified (it was removed?): nothing can show which "
            "transcripts it certified; move the checkpoint away to start the batch afresh" % (checkpoint,)
        )


def check_earlier(
    lines: Iterable[Mapping[str, Any]],
    data: bytes,
    specs: Sequence[RunSpec],
    origins: Sequence[str],
    origin: str,
    checkpoint: Optional[str],
    key: Optional[bytes],
    signer: Optional[Signer],
) -> Optional[ManifestCheckpoint]:
    """1. The earlier ledger (parsed ``lines`` of ``data``, read once, in order) is of these specs and, with
    ``checkpoint``, matches it.

    Returns the earlier checkpoint (``None`` without one); raises
    :class:`~agentloop.errors.LedgerMismatchError` (or ``RunConfigError``
    for a signed checkpoint and no key to check it with).
    """
    expected = {spec.name: spec_origin for spec, spec_origin in zip(specs, origins)}
    for line in lines:
        if expected.get(line["name"]) != line["origin"]:
            what = "is not a spec of this batch"
            if line["name"] in expected:
                what = "has another origin than its spec implies"
            raise LedgerMismatchError(
                "the earlier ledger is of another spec list: its run %s %s" % (json.dumps(line["name"]), what)
            )
    return None if checkpoint is None else _checkpoint(checkpoint, data, origin, key, signer)


def altered_runs(
    certified: Mapping[str, Mapping[str, Any]], specs: Sequence[RunSpec], paths: Sequence[str]
) -> List[Tuple[str, str]]:
    """2. ``(name, why)`` of each run whose earlier ``ok`` line no longer describes its file (in spec order)."""
    altered = []
    for spec, path in zip(specs, paths):
        line = certified.get(spec.name)
        if line is None or line["status"] != "ok":
            continue
        facts = transcript_facts(path)
        why = "missing: the earlier ledger certified it" if not facts["exists"] else difference(line, facts)
        if why:
            altered.append((spec.name, why))
    return altered


def check_extends(
    earlier: Optional[ManifestCheckpoint], new: ManifestCheckpoint, data: Union[bytes, bytearray]
) -> None:
    """The new ledger extends the earlier one: an RFC 9162 consistency proof between their checkpoints holds."""
    if earlier is None:
        return
    try:
        check_extension(earlier, new, prove_extension(earlier.size, data))
    except AgentloopError as exc:  # the driver only appends: this would be a bug, and nothing is written
        raise LedgerMismatchError("the new ledger would not extend the earlier one: %s" % (exc,)) from None
