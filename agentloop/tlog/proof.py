"""C2SP ``tlog-proof@v1``: an offline proof that one entry is in a log, with the log's checkpoint.

The format (c2sp.org/tlog-proof, "Format"): lines ending in ``\\n``::

    c2sp.org/tlog-proof@v1
    extra <base64 of opaque extra data>          (optional)
    index <the entry's zero-based index>
    <base64 of one SHA-256 inclusion proof hash>  (zero or more)

    <the checkpoint, a signed note, verbatim>

* line 1 is exactly ``c2sp.org/tlog-proof@v1``;
* the ``extra`` line is optional; the extra data "is not authenticated" and
  applications "MUST NOT implicitly trust" it.  agentloop puts the logged
  entry itself there (a transcript's record line, a ledger's line), so the
  verifier recomputes the leaf hash from it and the inclusion proof, checked
  against the signed root, is what authenticates it;
* ``index`` is "an ASCII decimal with no leading zeroes (unless the index is
  ``0``)";
* the inclusion proof is RFC 6962 section 2.1.1's (RFC 9162 section
  2.1.3), "from the leaf's sibling hash up to the root's child hash", one
  base64 hash per non-empty line;
* an empty line, then the log's checkpoint (C2SP ``tlog-checkpoint``, a
  ``signed-note``) with any witness cosignatures (``tlog-cosignature``).

Base64 is RFC 4648 section 4, read in its one canonical spelling, as every
note here is.  Verification is the spec's "Verifying a tlog proof", the four
steps numbered in :func:`verify_tlog_proof`.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ..errors import BadSignatureError, MalformedNoteError, ProofError, SigningKeyError
from ..signing.cosignature import CosignatureVerifier
from ..signing.hmac_sha256 import HmacKey
from ..signing.note import MAX_NOTE_BYTES, Note, Verifier, parse_note, strict_b64decode, verify_note
from ..transcript.format import MAX_LINE_BYTES
from ..transcript.merkle import leaf_hash, verify_inclusion
from .tree_head import TreeHead, parse_decimal, parse_tree_head

__all__ = [
    "TLOG_PROOF_HEADER",
    "MAX_PROOF_HASHES",
    "MAX_EXTRA_BYTES",
    "MAX_TLOG_PROOF_BYTES",
    "TlogProof",
    "ProvedLeaf",
    "is_tlog_proof",
    "parse_tlog_proof",
    "verify_tlog_proof",
]

#: tlog-proof "Format": the first line.
TLOG_PROOF_HEADER = "c2sp.org/tlog-proof@v1"
#: A tree of at most 2^63 leaves needs at most 63 inclusion hashes.
MAX_PROOF_HASHES = 63
#: The longest extra data read: agentloop's longest record line.
MAX_EXTRA_BYTES = MAX_LINE_BYTES
#: A tlog-proof longer than this is refused unread.
MAX_TLOG_PROOF_BYTES = 4 * ((MAX_EXTRA_BYTES + 2) // 3) + 64 * (MAX_PROOF_HASHES + 1) + MAX_NOTE_BYTES + 64
_HEADER = (TLOG_PROOF_HEADER + "\n").encode("ascii")
_HASH_SIZE = 32


@dataclass(frozen=True)
class TlogProof:
    """A parsed tlog-proof: the entry's ``index``, its inclusion ``hashes``, the signed ``checkpoint``, ``extra``."""

    index: int
    hashes: Tuple[bytes, ...]
    checkpoint: Note
    extra: Optional[bytes] = None

    def to_bytes(self) -> bytes:
        """The file's bytes (tlog-proof "Format")."""
        lines = [TLOG_PROOF_HEADER]
        if self.extra is not None:
            lines.append("extra " + base64.b64encode(self.extra).decode("ascii"))
        lines.append("index %d" % (self.index,))
        lines.extend(base64.b64encode(node).decode("ascii") for node in self.hashes)
        return ("\n".join(lines) + "\n\n").encode("ascii") + self.checkpoint.to_bytes()

    def tree_head(self) -> TreeHead:
        """The checkpoint's origin, size and root (:func:`~.tree_head.parse_tree_head`)."""
        return parse_tree_head(self.checkpoint)


def is_tlog_proof(data: bytes) -> bool:
    """Whether ``data`` starts with the tlog-proof header line."""
    return bytes(data[: len(_HEADER)]) == _HEADER


def _fail(line: Optional[int], reason: str) -> ProofError:
    return ProofError("tlog-proof line %d: %s" % (line, reason) if line is not None else "tlog-proof: %s" % (reason,))


def _next_line(data: bytes, pos: int, number: int) -> Tuple[bytes, int]:
    end = data.find(b"\n", pos)
    if end < 0:
        raise _fail(number, "no terminating newline (the checkpoint must follow an empty line)")
    return data[pos:end], end + 1


def _extra(line: bytes, number: int) -> bytes:
    try:
        extra = strict_b64decode(line[len(b"extra ") :].decode("ascii"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _fail(number, "the extra data is not canonical base64 (%s)" % (exc,)) from None
    if len(extra) > MAX_EXTRA_BYTES:
        raise _fail(number, "the extra data is longer than %d bytes" % (MAX_EXTRA_BYTES,))
    return extra


def _index(line: bytes, number: int) -> int:
    if not line.startswith(b"index "):
        raise _fail(number, "expected 'index <decimal>'")
    index = parse_decimal(line[len(b"index ") :].decode("ascii", "replace"))
    if index is None:
        raise _fail(number, "the index is not a decimal with no leading zero (at most 2**63-1)")
    return index


def _hash(line: bytes, number: int) -> bytes:
    try:
        node = strict_b64decode(line.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _fail(number, "an inclusion proof line is not canonical base64 (%s)" % (exc,)) from None
    if len(node) != _HASH_SIZE:
        raise _fail(number, "an inclusion proof line is a 32-byte SHA-256 hash, not %d bytes" % (len(node),))
    return node


def parse_tlog_proof(data: bytes) -> TlogProof:
    """Parse a tlog-proof strictly, verifying nothing; :class:`~agentloop.errors.ProofError` names the line.

    1. at most :data:`MAX_TLOG_PROOF_BYTES`; line 1 is the header;
    2. an optional ``extra`` line of canonical base64;
    3. ``index`` and a decimal with no leading zero;
    4. up to :data:`MAX_PROOF_HASHES` lines, each canonical base64 of 32 bytes, then an empty line;
    5. the rest is a signed note (:func:`~agentloop.signing.note.parse_note`) whose text is a
       tlog-checkpoint (:func:`~.tree_head.parse_tree_head`), with at least one signature;
    6. the index is below the checkpoint's tree size.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise ProofError("a tlog-proof is bytes, not %s" % (type(data).__name__,))
    data = bytes(data)
    # 1.
    if len(data) > MAX_TLOG_PROOF_BYTES:
        raise _fail(None, "longer than %d bytes" % (MAX_TLOG_PROOF_BYTES,))
    if not is_tlog_proof(data):
        raise _fail(1, "the first line must be %r" % (TLOG_PROOF_HEADER,))
    pos, number = len(_HEADER), 2
    # 2.
    line, pos = _next_line(data, pos, number)
    extra: Optional[bytes] = None
    if line.startswith(b"extra "):
        extra = _extra(line, number)
        number += 1
        line, pos = _next_line(data, pos, number)
    # 3.
    index = _index(line, number)
    # 4.
    hashes: List[bytes] = []
    while True:
        number += 1
        line, pos = _next_line(data, pos, number)
        if not line:
            break
        if len(hashes) == MAX_PROOF_HASHES:
            raise _fail(number, "more than %d inclusion proof lines" % (MAX_PROOF_HASHES,))
        hashes.append(_hash(line, number))
    # 5.
    try:
        note = parse_note(data[pos:], what="checkpoint")
        head = parse_tree_head(note)
    except MalformedNoteError as exc:
        where = number + exc.line if exc.line is not None else None
        raise _fail(where, "the checkpoint: %s" % (exc.reason,)) from None
    # 6.
    if index >= head.size:
        raise _fail(number - len(hashes) - 1, "index %d is not an entry of a tree of %d" % (index, head.size))
    return TlogProof(index, tuple(hashes), note, extra)


@dataclass(frozen=True)
class ProvedLeaf:
    """What :func:`verify_tlog_proof` established: ``leaf`` is entry ``index`` of the log ``origin`` of ``size``.

    ``signers`` are the trusted keys whose signatures verified (the log's
    and the witnesses'), ``witnesses`` those of them that are cosigners.
    """

    origin: str
    size: int
    root: bytes
    index: int
    leaf: bytes
    signers: Tuple[str, ...]
    witnesses: Tuple[str, ...]
    extensions: Tuple[str, ...] = ()


def _leaf(proof: TlogProof, leaf: Optional[bytes]) -> bytes:
    if leaf is None:
        if proof.extra is None:
            raise ProofError("the tlog-proof has no extra line: the logged entry must be given (--leaf)")
        return proof.extra
    if proof.extra is not None and proof.extra != leaf:
        raise ProofError("the tlog-proof's extra data is not the entry given")
    return bytes(leaf)


def _keys(
    head: TreeHead, trusted: Sequence[Verifier], require: Sequence[str], key: Optional[bytes]
) -> Tuple[List[Verifier], List[str]]:
    """The verifiers and required names, before anything is checked; misuse is ``SigningKeyError``."""
    if isinstance(trusted, (str, bytes)) or isinstance(require, (str, bytes)):
        raise SigningKeyError("trusted" if isinstance(trusted, (str, bytes)) else "require", "must be a list")
    verifiers: List[Verifier] = list(trusted)
    names = list(require)
    if key is not None:
        verifiers.append(HmacKey(head.origin, key))
        names.append(head.origin)
    if not verifiers:
        raise SigningKeyError("trusted", "a tlog-proof is checked against the log's keys: none given")
    known = {verifier.name for verifier in verifiers}
    for name in names:
        if name not in known:
            raise SigningKeyError("require", "no trusted key is named %r" % (name,))
    return verifiers, names


def _check_signatures(
    proof: TlogProof, verifiers: Sequence[Verifier], names: Sequence[str]
) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """Steps 2 and 3 of :func:`verify_tlog_proof`: ``(signers, witnesses)``."""
    verified = verify_note(proof.checkpoint, verifiers, names)
    cosigners = {(v.name, bytes(v.key_id)) for v in verifiers if isinstance(v, CosignatureVerifier)}
    logs = [sig.name for sig in verified.verified if sig.key not in cosigners]
    if not logs:
        raise BadSignatureError("no trusted log key signed the checkpoint (only witness cosignatures verified)")
    witnesses = tuple(sig.name for sig in verified.verified if sig.key in cosigners)
    return verified.signers, witnesses


def verify_tlog_proof(
    proof: TlogProof,
    trusted: Sequence[Verifier] = (),
    *,
    leaf: Optional[bytes] = None,
    require: Sequence[str] = (),
    origin: Optional[str] = None,
    key: Optional[bytes] = None,
) -> ProvedLeaf:
    """Verify a tlog-proof (tlog-proof, "Verifying a tlog proof"), every step required.

    ``trusted`` holds the log's keys (note verifiers, ``Ed25519Verifier``)
    and the witnesses' (``CosignatureVerifier``); ``key`` an HMAC key
    (agentloop's, key name the origin) that must have signed; ``require``
    names keys that must have signed (a witness quorum by name); ``origin``
    the one origin accepted.  ``leaf`` is the logged entry's bytes, known
    out of band; without it the extra data is the entry (and with it, the
    extra data must be that entry).

    1. compute the leaf hash: RFC 6962 ``SHA-256(0x00 || entry)``;
    2. the origin is acceptable (``origin``, when given) and the checkpoint
       is signed by a trusted log key (C2SP signed-note rules: unknown keys
       ignored, a trusted key's bad signature a fault);
    3. every trusted witness's cosignature verifies, and every ``require``
       name signed;
    4. the inclusion proof binds the leaf hash to the signed root (RFC 9162
       section 2.1.3.2).

    Every step is required; the hash-only ones run first (the origin, then
    step 4 before the signatures of steps 2 and 3), so a forged proof costs
    no signature verification.

    Raises :class:`~agentloop.errors.ProofError` (1, 2's origin, 4),
    :class:`~agentloop.errors.BadSignatureError` (2, 3), or
    :class:`~agentloop.errors.SigningKeyError` (misuse: no key at all, a
    ``require`` name no trusted key has).
    """
    head = proof.tree_head()
    verifiers, names = _keys(head, trusted, require, key)
    # 1.
    entry = _leaf(proof, leaf)
    hashed = leaf_hash(entry)
    # 2. (the origin)
    if origin is not None and head.origin != origin:
        raise ProofError("the checkpoint's origin %r is not the one accepted, %r" % (head.origin[:100], origin[:100]))
    # 4.
    try:
        verify_inclusion(proof.index, head.size, hashed, proof.hashes, head.root)
    except ProofError as exc:
        raise ProofError(
            "the inclusion proof of entry %d does not reach the checkpoint's root: %s" % (proof.index, exc.reason)
        ) from None
    # 2. and 3.
    signers, witnesses = _check_signatures(proof, verifiers, names)
    return ProvedLeaf(head.origin, head.size, head.root, proof.index, entry, signers, witnesses, head.extensions)
