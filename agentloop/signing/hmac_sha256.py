"""agentloop's HMAC-SHA256 note signatures, as one kind of note key among others.

This is the one implementation of the scheme a checkpoint's HMAC signature
uses (:mod:`agentloop.transcript.checkpoint`), packaged as a :class:`~agentloop.signing.note.Signer` and
:class:`~agentloop.signing.note.Verifier` so an HMAC signature can sit in a
note next to Ed25519 signatures and cosignatures.

The signature is HMAC-SHA256 (RFC 2104) of the note text.  C2SP
signed-note ("Signatures") recommends ``key ID = SHA-256(key name || 0x0A ||
signature type || public key)[:4]``; an HMAC key has no public part, so the
type is 0xFF ("signature types without an identifier byte ... followed by a
longer identifier") with the identifier ``agentloop-hmac-sha256``, and the
"public key" is a fingerprint, HMAC-SHA256(key, "agentloop checkpoint key id")::

    key ID = SHA-256(name || 0x0A || 0xFF || "agentloop-hmac-sha256" || fingerprint)[:4]

Anyone who can verify an HMAC signature can also make one: it proves only
that a holder of the key signed.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field

from ..errors import SigningKeyError
from .keys import is_valid_key_name

__all__ = ["HMAC_TYPE", "MIN_HMAC_KEY_BYTES", "HmacKey", "hmac_key_id", "check_hmac_key"]

#: The signature type byte 0xFF and its identifier.
HMAC_TYPE = b"\xffagentloop-hmac-sha256"
#: The shortest HMAC key accepted, in bytes (32 random bytes are recommended).
MIN_HMAC_KEY_BYTES = 16
_FINGERPRINT_LABEL = b"agentloop checkpoint key id"


def hmac_key_id(name: str, key: bytes) -> bytes:
    """The 4-byte key ID of HMAC ``key`` under key name ``name`` (the formula above)."""
    fingerprint = hmac.new(key, _FINGERPRINT_LABEL, hashlib.sha256).digest()
    return hashlib.sha256(name.encode("utf-8") + b"\n" + HMAC_TYPE + fingerprint).digest()[:4]


def check_hmac_key(key: object, source: str = "key") -> bytes:
    """``key`` as ``bytes`` if it can sign, else :class:`~agentloop.errors.SigningKeyError` naming ``source``."""
    if not isinstance(key, (bytes, bytearray)):
        raise SigningKeyError(source, "must be bytes, got %s" % (type(key).__name__,))
    if len(key) < MIN_HMAC_KEY_BYTES:
        raise SigningKeyError(
            source,
            "is %d bytes; at least %d are needed (32 random bytes are recommended)" % (len(key), MIN_HMAC_KEY_BYTES),
        )
    return bytes(key)


@dataclass(frozen=True)
class HmacKey:
    """An HMAC-SHA256 key under a key name: both a note signer and a note verifier.

    :mod:`agentloop.transcript.checkpoint` uses the checkpoint's origin as the name.
    The key is secret: ``repr`` does not show it.
    """

    name: str
    key: bytes = field(repr=False)
    key_id: bytes = field(init=False)

    def __post_init__(self) -> None:
        if not is_valid_key_name(self.name):
            raise SigningKeyError("hmac key", "%r is not a key name" % (self.name,))
        object.__setattr__(self, "key", check_hmac_key(self.key, "hmac key"))
        object.__setattr__(self, "key_id", hmac_key_id(self.name, self.key))

    def sign(self, message: bytes) -> bytes:
        """HMAC-SHA256 of ``message`` (32 bytes)."""
        return hmac.new(self.key, message, hashlib.sha256).digest()

    def verify(self, message: bytes, signature: bytes) -> bool:
        """True when ``signature`` is the HMAC of ``message``; constant-time comparison."""
        return hmac.compare_digest(self.sign(message), bytes(signature))
