"""DSSE v1.0.2 (Dead Simple Signing Envelope): PAE, the JSON envelope, Ed25519 signatures.

DSSE ``protocol.md``, "Signature Definition": a signature is over the
Pre-Authentication Encoding of the payload type and the body::

    PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body

``SP`` one ASCII space, ``LEN`` the byte length in ASCII decimal with no
leading zero, ``type`` the UTF-8 bytes of the payload type.  The signature
here is Ed25519 (RFC 8032) by an agentloop note key
(:mod:`agentloop.signing`).

The envelope (DSSE ``envelope.md``, "Standard JSON envelope") is a JSON
object ``{"payload": base64(body), "payloadType": type, "signatures":
[{"keyid": KEYID, "sig": base64(signature)}]}``.  agentloop writes it as
one line of RFC 8785 canonical JSON, base64 in the standard alphabet with
padding, and ``keyid`` the key's ``<name>+<8 hex key ID>``
(:func:`agentloop.provenance.cose.key_label`).

Reading (:func:`parse_envelope`) follows "Parsing rules": ``payload``,
``payloadType``, ``signatures`` and each ``sig`` are required; ``keyid``
is optional; unknown members are ignored; base64 may be standard or
URL-safe ("verifiers MUST accept either"), but must be one alphabet and
canonical (padding, no stray bits), so a field has one spelling per
alphabet.  Verifying (:func:`verify_envelope`, "Protocol", "To verify")
uses only the trusted keys; a signature's ``keyid`` narrows the keys
tried, and agentloop requires it (an agreement "out of band" the protocol
allows): a signature without one, or naming no trusted key, counts for
nothing.  The payload returned is the very bytes verified ("MUST NOT
re-parse the envelope after verification").
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple

from ..canonical import canonical_bytes
from ..errors import BadSignatureError, ProvenanceError
from ..signing.note import Ed25519Verifier, Signer
from .cose import key_label

__all__ = ["DsseSignature", "Envelope", "pae", "sign_envelope", "envelope_line", "parse_envelope", "verify_envelope"]

#: The longest envelope line read, in bytes.
MAX_ENVELOPE_BYTES = 16 << 20
_STANDARD = re.compile(r"\A[A-Za-z0-9+/]*={0,2}\Z")
_URLSAFE = re.compile(r"\A[A-Za-z0-9_-]*={0,2}\Z")


@dataclass(frozen=True)
class DsseSignature:
    """One entry of ``signatures``: the ``keyid`` hint (``""`` when unset) and the signature bytes."""

    keyid: str
    sig: bytes


@dataclass(frozen=True)
class Envelope:
    """A DSSE envelope: the payload type, the payload bytes, the signatures."""

    payload_type: str
    payload: bytes
    signatures: Tuple[DsseSignature, ...]


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE "Signature Definition": ``DSSEv1 LEN(type) type LEN(body) body``, lengths in bytes."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def sign_envelope(payload_type: str, payload: bytes, signers: Sequence[Signer]) -> Envelope:
    """The envelope of ``payload``, signed over its PAE by each signer in order (DSSE "To sign")."""
    message = pae(payload_type, payload)
    return Envelope(
        payload_type, payload, tuple(DsseSignature(key_label(s.name, s.key_id), s.sign(message)) for s in signers)
    )


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def envelope_line(envelope: Envelope) -> bytes:
    """The envelope as one line of RFC 8785 JSON and ``\\n``: one attestation of a ``.intoto.jsonl`` bundle."""
    signatures: List[Dict[str, Any]] = []
    for one in envelope.signatures:
        entry: Dict[str, Any] = {"sig": _b64(one.sig)}
        if one.keyid:
            entry["keyid"] = one.keyid
        signatures.append(entry)
    doc = {"payload": _b64(envelope.payload), "payloadType": envelope.payload_type, "signatures": signatures}
    return canonical_bytes(doc) + b"\n"


def _decode_b64(text: object, where: str) -> bytes:
    """Standard or URL-safe base64 (DSSE "Protocol"), one alphabet, canonical."""
    if not isinstance(text, str):
        raise ProvenanceError(where, "must be a base64 string")
    standard = _STANDARD.match(text) is not None
    if not standard and _URLSAFE.match(text) is None:
        raise ProvenanceError(where, "is not base64 in one alphabet (standard or URL-safe)")
    try:
        raw = base64.b64decode(text, altchars=None if standard else b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise ProvenanceError(where, "is not valid base64") from None
    again = base64.b64encode(raw, altchars=None if standard else b"-_").decode("ascii")
    if again != text:
        raise ProvenanceError(where, "is not canonical base64 (padding or stray bits)")
    return raw


def _no_duplicates(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise ProvenanceError("DSSE envelope", "repeats a member")
    return dict(pairs)


def parse_envelope(data: bytes, what: str = "DSSE envelope") -> Envelope:
    """Read one JSON envelope (DSSE ``envelope.md``, "Parsing rules").

    1. at most :data:`MAX_ENVELOPE_BYTES` of UTF-8 JSON, an object, no
       member twice;
    2. ``payloadType`` a string, ``payload`` base64;
    3. ``signatures`` a non-empty array of objects, each with ``sig``
       (base64) and optionally ``keyid`` (a string).

    Raises :class:`~agentloop.errors.ProvenanceError` naming the member.
    """
    # 1.
    if len(data) > MAX_ENVELOPE_BYTES:
        raise ProvenanceError(what, "longer than %d bytes" % (MAX_ENVELOPE_BYTES,))
    try:
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        if isinstance(exc, ProvenanceError):
            raise
        raise ProvenanceError(what, "is not a JSON text") from None
    if not isinstance(doc, dict):
        raise ProvenanceError(what, "is not a JSON object")
    # 2.
    payload_type = doc.get("payloadType")
    if not isinstance(payload_type, str):
        raise ProvenanceError(what + " $.payloadType", "must be a string")
    payload = _decode_b64(doc.get("payload"), what + " $.payload")
    # 3.
    entries = doc.get("signatures")
    if not isinstance(entries, list) or not entries:
        raise ProvenanceError(what + " $.signatures", "must be a non-empty array")
    signatures: List[DsseSignature] = []
    for index, entry in enumerate(entries):
        where = "%s $.signatures[%d]" % (what, index)
        if not isinstance(entry, dict):
            raise ProvenanceError(where, "must be an object")
        keyid = entry.get("keyid", "")
        if not isinstance(keyid, str):
            raise ProvenanceError(where + ".keyid", "must be a string")
        signatures.append(DsseSignature(keyid, _decode_b64(entry.get("sig"), where + ".sig")))
    return Envelope(payload_type, payload, tuple(signatures))


def verify_envelope(
    envelope: Envelope, verifiers: Sequence[Ed25519Verifier], what: str = "DSSE envelope"
) -> Tuple[str, ...]:
    """The names of the trusted keys whose signatures verify; ``()`` when no signature names a trusted key.

    DSSE "Protocol", "To verify", with agentloop's rules:

    1. a signature whose ``keyid`` names no trusted key (or has none) is
       ignored -- the hint may only narrow the keys tried;
    2. a signature whose ``keyid`` names a trusted key must verify over
       PAE(payloadType, payload): one that does not is a fault
       (:class:`~agentloop.errors.BadSignatureError`), as in C2SP
       signed-note, even when another verifies.

    The caller refuses an envelope for which this returns ``()``.
    """
    message = pae(envelope.payload_type, envelope.payload)
    by_label = {key_label(v.name, v.key_id): v for v in verifiers}
    good: List[str] = []
    for index, one in enumerate(envelope.signatures):
        verifier = by_label.get(one.keyid)
        if verifier is None:  # 1.
            continue
        if not verifier.verify(message, one.sig):  # 2.
            raise BadSignatureError("%s: signatures[%d] by %s does not verify" % (what, index, verifier.name))
        if verifier.name not in good:
            good.append(verifier.name)
    return tuple(good)
