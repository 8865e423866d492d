"""COSE_Sign1 (RFC 9052) with EdDSA over Ed25519: build, sign, read, verify.

A COSE_Sign1 message (RFC 9052 section 4.2) is the CBOR array
``[protected, unprotected, payload, signature]`` under tag 18:
``protected`` is the byte string of an encoded header map (section 3),
``unprotected`` a map, ``payload`` a byte string or ``nil`` when it is
detached (section 4.1), ``signature`` a byte string.  What is signed is the
``Sig_structure`` (section 4.4)::

    Sig_structure = ["Signature1", body_protected, external_aad, payload]

with ``external_aad`` empty here, encoded as CBOR; for a detached payload
the verifier supplies the payload.  The algorithm is EdDSA, label 1 value
-8 (RFC 9053 section 2.2), with Ed25519 keys (RFC 8032): the signature is
the 64 bytes of RFC 8032 section 5.1.6 over those bytes.

Everything agentloop writes is deterministic CBOR
(:mod:`agentloop.provenance.cbor`, RFC 8949 section 4.2.1), and
:func:`parse_sign1` reads nothing else, so a changed byte in a header, the
payload or the signature is refused (or fails the signature).

Header labels used (IANA "COSE Header Parameters"): 1 ``alg`` and 3
``content type`` (RFC 9052 section 3.1), 4 ``kid`` (section 3.1), 15 ``CWT
Claims`` (RFC 9597 section 2), 395 ``vds`` and 396 ``vdp`` (RFC 9942
section 2).  CWT claim keys: 1 ``iss``, 2 ``sub`` (RFC 8392 section 4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from ..errors import BadSignatureError, MalformedCBORError, ProvenanceError
from ..signing.note import Ed25519Verifier, Signer
from . import cbor

__all__ = [
    "COSE_SIGN1_TAG",
    "ALG",
    "CONTENT_TYPE",
    "KID",
    "CWT_CLAIMS",
    "VDS",
    "VDP",
    "CLAIM_ISS",
    "CLAIM_SUB",
    "EDDSA",
    "Sign1",
    "key_label",
    "sig_structure",
    "sign1",
    "parse_sign1",
    "verify_sign1",
]

#: RFC 9052 section 4.2: the CBOR tag of a COSE_Sign1 message.
COSE_SIGN1_TAG = 18
#: RFC 9052 section 3.1, common header parameters.
ALG, CONTENT_TYPE, KID = 1, 3, 4
#: RFC 9597 section 2: the CWT Claims header parameter.
CWT_CLAIMS = 15
#: RFC 9942 section 2: the verifiable data structure and its proofs.
VDS, VDP = 395, 396
#: RFC 8392 section 4 (IANA "CWT Claims"): issuer and subject.
CLAIM_ISS, CLAIM_SUB = 1, 2
#: RFC 9053 section 2.2: EdDSA.
EDDSA = -8
#: The longest COSE message read, in bytes.
MAX_COSE_BYTES = 1 << 20


@dataclass(frozen=True)
class Sign1:
    """A COSE_Sign1 message as read: the protected header's bytes and map, the rest as they are."""

    protected_bytes: bytes
    protected: Dict[Any, Any]
    unprotected: Dict[Any, Any]
    payload: Optional[bytes]
    signature: bytes


def key_label(name: str, key_id: bytes) -> str:
    """``<key name>+<8 hex of the key ID>``: how a key is named in a ``kid`` and a DSSE ``keyid``.

    The first two fields of the key's Go ``note`` verifier key string
    (:mod:`agentloop.signing.keys`), so one key has one name in every format.
    """
    return "%s+%s" % (name, key_id.hex())


def sig_structure(protected_bytes: bytes, payload: bytes) -> bytes:
    """RFC 9052 section 4.4: the CBOR ``["Signature1", protected, h'', payload]`` that is signed."""
    return cbor.encode(["Signature1", protected_bytes, b"", payload])


def sign1(
    protected: Dict[Any, Any], unprotected: Dict[Any, Any], payload: bytes, signer: Signer, detached: bool = False
) -> bytes:
    """A tagged COSE_Sign1 message (RFC 9052 section 4.2), deterministic CBOR.

    ``protected`` is encoded to bytes and signed with ``payload`` (section
    4.4); with ``detached`` the message carries ``nil`` in its place
    (section 4.1).  ``signer`` is an Ed25519 signer: ``protected`` must name
    EdDSA (label 1, -8).
    """
    if protected.get(ALG) != EDDSA:
        raise ProvenanceError("COSE protected header 1 (alg)", "must be EdDSA (-8): agentloop signs with Ed25519")
    protected_bytes = cbor.encode(protected)
    signature = signer.sign(sig_structure(protected_bytes, payload))
    body = [protected_bytes, unprotected, None if detached else payload, signature]
    return cbor.encode(cbor.Tag(COSE_SIGN1_TAG, body))


def _fail(what: str, reason: str) -> ProvenanceError:
    return ProvenanceError(what, reason)


def parse_sign1(data: bytes, what: str = "COSE_Sign1") -> Sign1:
    """Read a tagged COSE_Sign1 message strictly.

    1. at most :data:`MAX_COSE_BYTES`, one deterministically encoded CBOR
       item (:func:`agentloop.provenance.cbor.decode`);
    2. tag 18 around an array of four (RFC 9052 section 4.2);
    3. ``protected``: a byte string holding a deterministically encoded
       map, not empty here (the algorithm is protected); ``unprotected`` a
       map; ``payload`` a byte string or ``nil``; ``signature`` a byte string.

    Raises :class:`~agentloop.errors.ProvenanceError` naming ``what`` and
    the rule (a CBOR fault quotes the byte at fault).
    """
    # 1.
    if len(data) > MAX_COSE_BYTES:
        raise _fail(what, "longer than %d bytes" % (MAX_COSE_BYTES,))
    try:
        item = cbor.decode(data)
    except MalformedCBORError as exc:
        raise _fail(what, "not deterministic CBOR: %s" % (exc,)) from None
    # 2.
    if not isinstance(item, cbor.Tag) or item.number != COSE_SIGN1_TAG:
        raise _fail(what, "not a tagged COSE_Sign1 (tag 18, RFC 9052 section 4.2)")
    body = item.value
    if not isinstance(body, list) or len(body) != 4:
        raise _fail(what, "a COSE_Sign1 is an array of 4: protected, unprotected, payload, signature")
    return _parts(body, what)


def _parts(body: List[Any], what: str) -> Sign1:
    """3. The four parts, each of its type; the protected header decoded."""
    protected_bytes, unprotected, payload, signature = body
    if not isinstance(protected_bytes, bytes) or not protected_bytes:
        raise _fail(what + " protected header", "must be a non-empty byte string")
    try:
        protected = cbor.decode(protected_bytes)
    except MalformedCBORError as exc:
        raise _fail(what + " protected header", "not deterministic CBOR: %s" % (exc,)) from None
    if not isinstance(protected, dict):
        raise _fail(what + " protected header", "must encode a map")
    if not isinstance(unprotected, dict):
        raise _fail(what + " unprotected header", "must be a map")
    if payload is not None and not isinstance(payload, bytes):
        raise _fail(what + " payload", "must be a byte string or nil")
    if not isinstance(signature, bytes):
        raise _fail(what + " signature", "must be a byte string")
    return Sign1(protected_bytes, protected, unprotected, payload, signature)


def verify_sign1(
    message: Sign1, verifiers: Sequence[Ed25519Verifier], payload: Optional[bytes] = None, what: str = "COSE_Sign1"
) -> Ed25519Verifier:
    """Check the EdDSA signature of ``message`` with the trusted key its ``kid`` names; return that key.

    1. the protected header says EdDSA (label 1, -8) and holds a ``kid``
       (label 4, a byte string) that is the :func:`key_label` of one of
       ``verifiers``;
    2. the payload: the message's own, or ``payload`` when the message's is
       detached (``nil``); one must be given, not both;
    3. the Ed25519 signature over the Sig_structure (RFC 9052 section 4.4).

    Raises :class:`~agentloop.errors.ProvenanceError` (1, 2) or
    :class:`~agentloop.errors.BadSignatureError` (1: no trusted key; 3).
    """
    # 1.
    if message.protected.get(ALG) != EDDSA:
        raise _fail(what + " protected header 1 (alg)", "is %r, not EdDSA (-8)" % (message.protected.get(ALG),))
    kid = message.protected.get(KID)
    if not isinstance(kid, bytes):
        raise _fail(what + " protected header 4 (kid)", "must be a byte string naming the key")
    by_label = {key_label(v.name, v.key_id).encode("utf-8"): v for v in verifiers}
    verifier = by_label.get(kid)
    if verifier is None:
        raise BadSignatureError(
            "%s is signed by %s, which is not a trusted key (--trust)"
            % (what, kid.decode("utf-8", "backslashreplace")[:100])
        )
    # 2.
    if message.payload is not None and payload is not None:
        raise _fail(what + " payload", "is attached, and another was given")
    signed = message.payload if message.payload is not None else payload
    if signed is None:
        raise _fail(what + " payload", "is detached (nil), and none was given")
    # 3.
    if not verifier.verify(sig_structure(message.protected_bytes, signed), message.signature):
        raise BadSignatureError("%s: the EdDSA signature by %s does not verify" % (what, verifier.name))
    return verifier
