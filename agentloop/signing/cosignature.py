"""Witness cosignatures: C2SP ``tlog-cosignature``, ``cosignature/v1``.

A cosignature is a note signature on a checkpoint by a witness
(tlog-cosignature, "Format"):

* the key ID is ``SHA-256(<name> || "\\n" || 0x04 || 32-byte Ed25519 witness public key)[:4]``
  (signature type 0x04; a witness vkey is a Go-format verifier key of that type);
* the signature is a 72-byte ``timestamped_signature``: a big-endian
  ``u64`` timestamp (seconds since the UNIX epoch) and a 64-byte Ed25519
  signature;
* the signed message ("Signed message") is two newline-terminated lines,
  ``cosignature/v1`` and ``time <timestamp, decimal, no leading zeroes>``,
  followed by the checkpoint's note text including its final newline and no
  signature line.  The time in the message is the one in the signature.

Cosignatures of other types (an ML-DSA witness, for one) have other key IDs:
:func:`~agentloop.signing.note.verify_note` ignores them as unknown keys,
as signed-note requires.  Only Ed25519 ``cosignature/v1`` is verified here.

:func:`verifier_from_key` turns any verifier key agentloop knows (0x01 note
keys, 0x04 witness keys) into a verifier, so ``--trust`` can take either.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence, Union

from ..errors import BadArgumentError, SigningKeyError
from . import backend, ed25519
from .keys import (
    ALG_COSIGNATURE_V1,
    ALG_ED25519,
    SignerKey,
    VerifierKey,
    check_key_type,
    ed25519_key_id,
    parse_signer_key,
    parse_verifier_key,
)
from .note import Ed25519Signer, Ed25519Verifier, Note, NoteSignature, Verifier, sign_note, verify_note

__all__ = [
    "COSIGNATURE_HEADER",
    "COSIGNATURE_SIZE",
    "CosignatureSigner",
    "CosignatureVerifier",
    "cosigned_message",
    "cosignature_timestamp",
    "cosign",
    "verifier_from_key",
    "signer_from_key",
]

#: The header line: "the fixed string ``cosignature/v1``, and provides domain separation".
COSIGNATURE_HEADER = "cosignature/v1"
#: ``struct timestamped_signature { u64 timestamp; u8 signature[64]; }``.
COSIGNATURE_SIZE = 8 + ed25519.SIGNATURE_SIZE
_MAX_TIMESTAMP = 2**64 - 1


def cosigned_message(text: Union[bytes, str], timestamp: int) -> bytes:
    """tlog-cosignature "Signed message": ``cosignature/v1\\ntime <t>\\n`` then the note text."""
    if isinstance(timestamp, bool) or not isinstance(timestamp, int) or not 0 <= timestamp <= _MAX_TIMESTAMP:
        raise BadArgumentError("timestamp", "must be a u64 (an int from 0 to 2**64-1), got %r" % (timestamp,))
    body = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return ("%s\ntime %d\n" % (COSIGNATURE_HEADER, timestamp)).encode("ascii") + body


def cosignature_timestamp(signature: Union[NoteSignature, bytes]) -> int:
    """The timestamp (seconds since the epoch) of a 72-byte ``timestamped_signature``."""
    raw = signature.signature if isinstance(signature, NoteSignature) else bytes(signature)
    if len(raw) != COSIGNATURE_SIZE:
        raise BadArgumentError(
            "signature",
            "must be a %d-byte cosignature/v1 timestamped_signature, got %d bytes" % (COSIGNATURE_SIZE, len(raw)),
        )
    return int.from_bytes(raw[:8], "big")


@dataclass(frozen=True)
class CosignatureVerifier:
    """A witness's ``cosignature/v1`` key: a note verifier of signature type 0x04."""

    name: str
    public_key: bytes
    key_id: bytes = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "key_id", ed25519_key_id("witness key", self.name, ALG_COSIGNATURE_V1, self.public_key)
        )

    def verify(self, message: bytes, signature: bytes) -> bool:
        """True when ``signature`` is a ``timestamped_signature`` over ``message`` at its own time."""
        if len(signature) != COSIGNATURE_SIZE:
            return False
        stamp = int.from_bytes(signature[:8], "big")
        return ed25519.verify(self.public_key, cosigned_message(message, stamp), bytes(signature[8:]))

    def text(self) -> str:
        """The Go-format verifier key string (type 0x04)."""
        return VerifierKey(self.name, ALG_COSIGNATURE_V1, self.public_key).text()


@dataclass(frozen=True)
class CosignatureSigner:
    """A witness's ``cosignature/v1`` signer, holding a 0x04 :class:`~agentloop.signing.keys.SignerKey`.

    ``timestamp`` fixes the time signed (so a cosignature is a pure function
    of its inputs); ``None`` takes :func:`time.time` at each :meth:`sign`.
    Signing goes through :mod:`agentloop.signing.backend`.
    """

    key: SignerKey
    timestamp: Optional[int] = None
    allow_slow_unsafe_signer: bool = False

    def __post_init__(self) -> None:
        check_key_type("signer key", self.key.name, self.key.alg, ALG_COSIGNATURE_V1, "a cosignature/v1 key (0x04)")

    @property
    def name(self) -> str:
        """The witness's key name."""
        return self.key.name

    @property
    def key_id(self) -> bytes:
        """The 4-byte key ID (type 0x04)."""
        return self.key.key_id

    def at(self, timestamp: int) -> "CosignatureSigner":
        """The same key, signing at ``timestamp``."""
        return CosignatureSigner(self.key, timestamp, self.allow_slow_unsafe_signer)

    def sign(self, message: bytes) -> bytes:
        """The 72-byte ``timestamped_signature`` over the note text ``message``."""
        stamp = int(time.time()) if self.timestamp is None else self.timestamp
        signature = backend.sign(self.key.seed, cosigned_message(message, stamp), self.allow_slow_unsafe_signer)
        return stamp.to_bytes(8, "big") + signature

    def verifier(self) -> CosignatureVerifier:
        """The matching verifier."""
        return CosignatureVerifier(self.key.name, self.key.public_key)


def verifier_from_key(key: Union[str, VerifierKey]) -> Union[Ed25519Verifier, CosignatureVerifier]:
    """A verifier for a Go-format verifier key: type 0x01 (note signer) or 0x04 (witness)."""
    parsed = parse_verifier_key(key) if isinstance(key, str) else key
    if parsed.alg == ALG_COSIGNATURE_V1:
        return CosignatureVerifier(parsed.name, parsed.public_key)
    return Ed25519Verifier.from_key(parsed)


def signer_from_key(
    skey: Union[str, SignerKey], timestamp: Optional[int] = None, allow_slow_unsafe_signer: bool = False
) -> Union[Ed25519Signer, CosignatureSigner]:
    """A signer for a Go-format signer key: type 0x01 (note signer) or 0x04 (witness, at ``timestamp``)."""
    parsed = (
        parse_signer_key(skey, allow_slow_unsafe_signer=allow_slow_unsafe_signer) if isinstance(skey, str) else skey
    )
    if parsed.alg == ALG_COSIGNATURE_V1:
        return CosignatureSigner(parsed, timestamp, allow_slow_unsafe_signer)
    if parsed.alg == ALG_ED25519:
        return Ed25519Signer(parsed, allow_slow_unsafe_signer)
    raise SigningKeyError("signer key %s" % (parsed.name,), "of unknown type 0x%02x" % (parsed.alg,))


def cosign(
    note: Note, log_verifiers: Iterable[Verifier], witness: CosignatureSigner, require: Sequence[str] = ()
) -> Note:
    """Act as a witness: check the log's signature on ``note``, then add the cosignature.

    tlog-witness "add-checkpoint": the witness "MUST verify the checkpoint
    signature against the public key(s) it trusts for the checkpoint origin,
    and it MUST ignore signatures from unknown keys".  The consistency proof
    from the last size the witness saw is the caller's to check before this.
    Raises :class:`~agentloop.errors.BadSignatureError` when the log's
    signature does not verify.
    """
    verify_note(note, log_verifiers, require)
    return sign_note(note, witness)
