"""COSE Receipts of inclusion (RFC 9942) in a batch ledger: the batch operator as a small transparency service.

A batch ledger (:mod:`agentloop.batch.ledger`) is an RFC 6962 / RFC 9162
Merkle tree over its lines: verifiable data structure ``RFC9162_SHA256``,
value 1 (RFC 9942 section 5.1).  For every run, :func:`issue_receipts`
signs a Receipt of Inclusion of its ledger line (RFC 9942 section
5.2.1)::

    18([<<{1: -8,                              / alg: EdDSA /
           4: '<key name>+<8 hex key ID>',     / kid /
           15: {1: "<issuer>",                 / CWT Claims (RFC 9597): iss /
                2: "agentloop/1/<hash>"},      / sub: the run's origin /
           395: 1}>>,                          / vds: RFC9162_SHA256 /
        {396: {-1: [<<[size, index, [hash, ...]]>>]}},   / vdp: one inclusion proof /
        nil,                                   / the payload, the ledger's root, detached /
        '<64-byte Ed25519 signature>'])

The inclusion proof (RFC 9942 section 5.2) is the CBOR array ``[tree-size,
leaf-index, inclusion-path]`` in a byte string; the path is RFC 9162
section 2.1.3.1's, from :func:`agentloop.transcript.merkle.inclusion_proof`.
The payload, the Merkle root of the ledger at ``tree-size``, is detached
(RFC 9942 section 4.4: detached payloads "force verifiers to recompute the
root from the proof").  The CWT claims make it a SCITT Receipt too (RFC
9943 section 6: the protected header of "a Signed Statement and a Receipt
MUST include the CWT Claims header parameter" with ``iss`` and ``sub``);
its subject is the run's origin, the one of the run's Signed Statement.

The entry a receipt proves is the ledger line's bytes, RFC 8785 JSON
without its newline; its leaf hash is SHA-256(0x00 || line) (RFC 9162
section 2.1.1).  :func:`check_receipt` verifies in RFC 9942 section 5.2.1's
order: the proof applied to the entry gives a root, then the signature
over that root.

RFC 9942's CDDL gives the inclusion path as ``[+ bstr]``: at least one
hash.  A ledger of one line has an empty path, so :func:`issue_receipts`
refuses it; its checkpoint alone proves its one line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from ..batch.ledger import parse_ledger
from ..canonical import canonical_bytes
from ..errors import BadSignatureError, MalformedCBORError, MalformedManifestError, ProvenanceError, UnrecordableError
from ..signing.note import Ed25519Verifier, Signer
from ..transcript.merkle import HASH_SIZE, inclusion_proof, leaf_hash, root_from_inclusion_proof, root_of
from . import cbor
from .cose import (
    ALG,
    CLAIM_ISS,
    CLAIM_SUB,
    CWT_CLAIMS,
    EDDSA,
    KID,
    VDP,
    VDS,
    key_label,
    parse_sign1,
    sign1,
    verify_sign1,
)
from .scitt import check_claims, check_issuer

__all__ = ["RFC9162_SHA256", "INCLUSION_PROOFS", "ReceiptCheck", "issue_receipts", "check_receipt", "receipt_name"]

#: RFC 9942 section 5.1: the verifiable data structure RFC9162_SHA256.
RFC9162_SHA256 = 1
#: RFC 9942 section 5.2 (IANA "COSE Verifiable Data Structure Proofs"): inclusion proofs.
INCLUSION_PROOFS = -1
_MAX_PATH = 64


@dataclass(frozen=True)
class ReceiptCheck:
    """A receipt that holds: the entry is leaf ``index`` of the ledger of ``size`` lines with ``root``."""

    signer: str
    issuer: str
    subject: str
    index: int
    size: int
    root: str


def _lines(data: bytes) -> List[bytes]:
    return data.split(b"\n")[:-1]


def issue_receipts(data: bytes, signer: Signer, issuer: str) -> List[Tuple[str, bytes]]:
    """``(run name, receipt)`` for every line of ledger ``data``, in ledger order.

    The ledger must parse (:func:`agentloop.batch.ledger.parse_ledger`) and
    hold at least two lines (see the module docstring).  Raises
    :class:`~agentloop.errors.ProvenanceError`.
    """
    try:
        lines = parse_ledger(data)
    except MalformedManifestError as exc:
        raise ProvenanceError("manifest", str(exc)) from None
    if len(lines) < 2:
        raise ProvenanceError(
            "manifest",
            "a ledger of one line has an empty inclusion path, which RFC 9942's "
            "inclusion-path ([+ bstr]) does not allow: no receipt is issued (its checkpoint proves the line)",
        )
    issuer = check_issuer(issuer)
    leaves = [leaf_hash(line) for line in _lines(data)]
    size, root = len(leaves), root_of(leaves)
    kid = key_label(signer.name, signer.key_id).encode("utf-8")
    out: List[Tuple[str, bytes]] = []
    for index, line in enumerate(lines):
        proof = cbor.encode([size, index, inclusion_proof(leaves, index, size)])
        protected = {
            ALG: EDDSA,
            KID: kid,
            CWT_CLAIMS: {CLAIM_ISS: issuer, CLAIM_SUB: line["origin"]},
            VDS: RFC9162_SHA256,
        }
        out.append((line["name"], sign1(protected, {VDP: {INCLUSION_PROOFS: [proof]}}, root, signer, detached=True)))
    return out


def _proof(unprotected: Mapping[Any, Any], what: str) -> Tuple[int, int, List[bytes]]:
    """The one inclusion proof in the unprotected header: ``{396: {-1: [bstr .cbor [size, index, [+ bstr]]]}}``."""
    vdp = unprotected.get(VDP)
    if set(unprotected) != {VDP} or not isinstance(vdp, dict) or set(vdp) != {INCLUSION_PROOFS}:
        raise ProvenanceError(what + " unprotected header", "must be exactly {396 (vdp): {-1: [inclusion proof]}}")
    proofs = vdp[INCLUSION_PROOFS]
    if not isinstance(proofs, list) or len(proofs) != 1 or not isinstance(proofs[0], bytes):
        raise ProvenanceError(what + " vdp -1 (inclusion proofs)", "must be an array of one byte string")
    try:
        proof = cbor.decode(proofs[0])
    except MalformedCBORError as exc:
        raise ProvenanceError(what + " inclusion proof", "not deterministic CBOR: %s" % (exc,)) from None
    if not isinstance(proof, list) or len(proof) != 3:
        raise ProvenanceError(
            what + " inclusion proof", "must be [tree-size, leaf-index, inclusion-path] (RFC 9942 section 5.2)"
        )
    size, index, path = proof
    for name, value in (("tree-size", size), ("leaf-index", index)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ProvenanceError(what + " inclusion proof " + name, "must be an unsigned integer")
    if (
        not isinstance(path, list)
        or not 1 <= len(path) <= _MAX_PATH
        or not all(isinstance(h, bytes) and len(h) == HASH_SIZE for h in path)
    ):
        raise ProvenanceError(
            what + " inclusion proof inclusion-path", "must be 1 to %d hashes of 32 bytes ([+ bstr])" % (_MAX_PATH,)
        )
    return size, index, path


def check_receipt(
    data: bytes, line: Mapping[str, Any], verifiers: Sequence[Ed25519Verifier], issuer: Optional[str] = None
) -> ReceiptCheck:
    """Check that ledger ``line`` is in the ledger a trusted key signed, by the receipt ``data``.

    1. a tagged COSE_Sign1 (:func:`~agentloop.provenance.cose.parse_sign1`)
       whose protected header is exactly alg (EdDSA), kid, CWT claims
       (``iss``, ``sub``) and vds 1 (RFC9162_SHA256); the payload detached;
       the subject is the line's ``origin``; with ``issuer``, ``iss`` is it;
    2. the inclusion proof applied to the line's leaf gives a root (RFC
       9162 section 2.1.3.2; :class:`~agentloop.errors.ProofError` if it
       cannot be a proof for that index and size);
    3. the signature over that root (RFC 9942 section 5.2.1) by the trusted
       key the kid names (:class:`~agentloop.errors.BadSignatureError`).
    """
    what = "receipt"
    # 1.
    message = parse_sign1(data, what)
    if set(message.protected) != {ALG, KID, CWT_CLAIMS, VDS}:
        raise ProvenanceError(
            what + " protected header",
            "holds labels %s, not exactly 1, 4, 15 and 395" % (sorted(message.protected, key=str),),
        )
    if message.protected[VDS] != RFC9162_SHA256:
        raise ProvenanceError(
            what + " protected header 395 (vds)", "is %r, not RFC9162_SHA256 (1)" % (message.protected[VDS],)
        )
    claims = check_claims(message.protected[CWT_CLAIMS], what)
    if message.payload is not None:
        raise ProvenanceError(what + " payload", "must be detached (nil): the verifier computes the root")
    if claims[CLAIM_SUB] != line.get("origin"):
        raise ProvenanceError(
            what + " CWT claim 2 (sub)",
            "is %s, not the run's origin %s" % (claims[CLAIM_SUB][:100], line.get("origin")),
        )
    if issuer is not None and claims[CLAIM_ISS] != issuer:
        raise ProvenanceError(what + " CWT claim 1 (iss)", "is %r, not %r" % (claims[CLAIM_ISS][:200], issuer))
    size, index, path = _proof(message.unprotected, what)
    # 2.
    try:
        entry = canonical_bytes(dict(line))
    except UnrecordableError as exc:
        raise ProvenanceError("the ledger line", str(exc)) from None
    root = root_from_inclusion_proof(index, size, leaf_hash(entry), path)
    # 3.
    try:
        verifier = verify_sign1(message, verifiers, payload=root, what=what)
    except BadSignatureError as exc:
        if "does not verify" not in exc.reason:
            raise
        raise BadSignatureError(
            "receipt: the signature does not verify over the root %s... that the inclusion proof gives "
            "for this line of %d: the line, the proof or the signature is not what was signed" % (root.hex()[:16], size)
        ) from None
    return ReceiptCheck(verifier.name, claims[CLAIM_ISS], claims[CLAIM_SUB], index, size, root.hex())


def receipt_name(folder: str, name: str) -> str:
    """Where run ``name``'s receipt goes: ``FOLDER/NAME.receipt.cose``."""
    return os.path.join(folder, name + ".receipt.cose")
