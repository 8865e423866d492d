"""Signer and verifier keys in the text formats of Go's ``golang.org/x/mod/sumdb/note``.

Go's ``note`` package (``note.go``: ``GenerateKey``, ``NewSigner``,
``NewVerifier``, ``keyHash``) writes an Ed25519 key pair as two strings::

    PRIVATE+KEY+<name>+<hash>+<base64(0x01 || 32-byte seed)>     (the signer key)
    <name>+<hash>+<base64(0x01 || 32-byte public key)>           (the verifier key)

``<hash>`` is 8 hex digits (written lowercase; read in either case, as Go's
``strconv.ParseUint`` does) of the key hash, Go's ``keyHash``: the
first 4 bytes, big-endian, of ``SHA-256(name || 0x0A || alg || public key)``,
which is also the note signature's key ID (C2SP ``signed-note``,
"Signatures" and "Ed25519 signatures"; ``alg`` is the signature type byte,
0x01 for Ed25519).  The base64 may itself hold ``+``: as Go's ``chop`` does,
the text is split at the first ``+`` (twice more for a signer key) and the
rest is the key.

Parsing follows ``NewVerifier``/``NewSigner``: the name must be valid
(``isValidName``: non-empty, no Unicode space, no ``+``), the hash exactly 8
hex digits, the key non-empty base64 whose first byte is the algorithm and
whose rest has the algorithm's length, and the hash must equal the key hash
recomputed from the name and public key (for a signer key, after deriving
the public key from the seed).  Stricter than Go, and never in a way that
refuses a key Go writes: the base64 must be canonical (RFC 4648 section 4,
padded, no stray bits), and a name may hold no control character (a note
line could never carry it).

Two algorithms are known here: 0x01 Ed25519 note signatures, and 0x04
``cosignature/v1`` witness keys (C2SP ``tlog-cosignature``, "Format": a
vkey "with signature type 0x04 and the 32-byte Ed25519 witness public key").
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass, field
from typing import Tuple, Union

from ..errors import SigningKeyError
from . import backend, ed25519

__all__ = [
    "ALG_ED25519",
    "ALG_COSIGNATURE_V1",
    "PRIVATE_KEY_PREFIX",
    "SignerKey",
    "VerifierKey",
    "key_hash",
    "check_key_name",
    "is_valid_key_name",
    "generate_key",
    "encode_signer_key",
    "encode_verifier_key",
    "parse_signer_key",
    "parse_verifier_key",
    "read_signer_key",
    "read_verifier_key",
    "write_signer_key",
    "write_verifier_key",
]

PathLike = Union[str, "os.PathLike[str]"]

#: Signature type 0x01: Ed25519 note signatures (C2SP signed-note, "Signature types").
ALG_ED25519 = 0x01
#: Signature type 0x04: timestamped Ed25519 witness cosignatures (C2SP tlog-cosignature).
ALG_COSIGNATURE_V1 = 0x04
#: Go's ``NewSigner``: a signer key starts with this, "to avoid confusion with the public server key".
PRIVATE_KEY_PREFIX = "PRIVATE+KEY+"

_KNOWN_ALGS = {ALG_ED25519: "Ed25519", ALG_COSIGNATURE_V1: "cosignature/v1 (Ed25519)"}
_MAX_KEY_TEXT = 4096
_HEXDIGITS = frozenset("0123456789abcdefABCDEF")
_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
# Go's unicode.IsSpace: the Unicode White_Space property.
_SPACES = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def is_valid_key_name(name: object) -> bool:
    """Go's ``isValidName``: a non-empty str with no Unicode space and no ``+``.

    C2SP signed-note, "Format": "Key names MUST be non-empty and MUST NOT
    contain any Unicode spaces or plus (U+002B) characters."  Also refused:
    control characters below U+0020 (no note may hold one, "Format") and
    lone surrogates (not UTF-8).
    """
    if not isinstance(name, str) or not name or "+" in name:
        return False
    for ch in name:
        if ch in _SPACES or ord(ch) < 0x20 or 0xD800 <= ord(ch) <= 0xDFFF:
            return False
    return True


def check_key_name(name: object, source: str = "key name") -> str:
    """``name`` if :func:`is_valid_key_name`, else :class:`~agentloop.errors.SigningKeyError`."""
    if not isinstance(name, str) or not is_valid_key_name(name):
        raise SigningKeyError(
            source, "%r is not a key name: it must be non-empty, with no space, '+' or control character" % (name,)
        )
    return name


def key_hash(name: str, alg: int, public_key: bytes) -> bytes:
    """Go's ``keyHash``: ``SHA-256(name || 0x0A || alg || public key)[:4]``, the key ID.

    C2SP signed-note, "Signatures": "key ID = SHA-256(key name || 0x0A ||
    signature type || public key)[:4]".
    """
    return hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([alg]) + bytes(public_key)).digest()[:4]


def ed25519_key_id(what: str, name: str, alg: int, public_key: bytes) -> bytes:
    """The key ID (:func:`key_hash`) of a verifier of type ``alg`` named ``name`` holding the
    Ed25519 ``public_key``; :class:`~agentloop.errors.SigningKeyError` naming ``what`` when the
    name is not a key name or the key is not a valid Ed25519 public key."""
    if not is_valid_key_name(name):
        raise SigningKeyError(what, "%r is not a key name" % (name,))
    if not ed25519.is_valid_public_key(public_key):
        raise SigningKeyError("%s %s" % (what, name), "is not a valid Ed25519 public key")
    return key_hash(name, alg, public_key)


def check_key_type(what: str, name: str, alg: int, want: int, kind: str) -> None:
    """:class:`~agentloop.errors.SigningKeyError` ("``what name``: is of type 0x.., not ``kind``")
    unless the key's type ``alg`` is ``want``."""
    if alg != want:
        raise SigningKeyError("%s %s" % (what, name), "is of type 0x%02x, not %s" % (alg, kind))


@dataclass(frozen=True)
class VerifierKey:
    """A parsed verifier key: a name, an algorithm byte, a 32-byte public key.

    ``key_id`` is :func:`key_hash` of the three; :meth:`text` is the Go
    ``<name>+<hash>+<base64>`` string.
    """

    name: str
    alg: int
    public_key: bytes
    key_id: bytes = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key_id", key_hash(self.name, self.alg, self.public_key))

    def text(self) -> str:
        """``<name>+<8 hex>+<base64(alg || public key)>``."""
        return encode_verifier_key(self.name, self.public_key, self.alg)


@dataclass(frozen=True)
class SignerKey:
    """A parsed signer key: a name, an algorithm byte, the 32-byte seed and its public key.

    The seed is secret: ``repr`` does not show it.
    """

    name: str
    alg: int
    seed: bytes = field(repr=False)
    public_key: bytes
    key_id: bytes = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key_id", key_hash(self.name, self.alg, self.public_key))

    def verifier_key(self) -> VerifierKey:
        """The matching public :class:`VerifierKey`."""
        return VerifierKey(self.name, self.alg, self.public_key)

    def text(self) -> str:
        """``PRIVATE+KEY+<name>+<8 hex>+<base64(alg || seed)>``."""
        return "%s%s+%s+%s" % (PRIVATE_KEY_PREFIX, self.name, self.key_id.hex(), _b64(bytes([self.alg]) + self.seed))


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def encode_verifier_key(name: str, public_key: bytes, alg: int = ALG_ED25519) -> str:
    """Go's ``NewEd25519VerifierKey``: ``<name>+<hash>+<base64(alg || public key)>``."""
    check_key_name(name)
    if alg not in _KNOWN_ALGS:
        raise SigningKeyError("verifier key", "unknown algorithm 0x%02x" % (alg,))
    if not ed25519.is_valid_public_key(public_key):
        raise SigningKeyError("verifier key", "is not a valid Ed25519 public key")
    return "%s+%s+%s" % (name, key_hash(name, alg, public_key).hex(), _b64(bytes([alg]) + bytes(public_key)))


def encode_signer_key(name: str, seed: bytes, alg: int = ALG_ED25519, allow_slow_unsafe_signer: bool = False) -> str:
    """``PRIVATE+KEY+<name>+<hash>+<base64(alg || seed)>`` (Go's ``GenerateKey``)."""
    check_key_name(name)
    if alg not in _KNOWN_ALGS:
        raise SigningKeyError("signer key", "unknown algorithm 0x%02x" % (alg,))
    public = backend.public_key(seed, allow_slow_unsafe_signer)
    return SignerKey(name, alg, bytes(seed), public).text()


def generate_key(name: str, alg: int = ALG_ED25519, allow_slow_unsafe_signer: bool = False) -> Tuple[str, str]:
    """A new key pair for ``name``: ``(signer key text, verifier key text)``.

    Go's ``GenerateKey``; the seed is 32 bytes of :func:`os.urandom`.  The
    public key is derived by :mod:`~agentloop.signing.backend`
    (``cryptography``, or the unsafe pure signer when allowed).  ``alg`` is
    :data:`ALG_ED25519` for a note signer, :data:`ALG_COSIGNATURE_V1` for a
    witness.
    """
    check_key_name(name)
    seed = backend.new_seed()
    skey = encode_signer_key(name, seed, alg, allow_slow_unsafe_signer)
    public = backend.public_key(seed, allow_slow_unsafe_signer)
    return skey, encode_verifier_key(name, public, alg)


def _chop(text: str) -> Tuple[str, str]:
    """Go's ``chop(s, "+")``: the text before the first ``+`` and after it ("" if none)."""
    before, _, after = text.partition("+")
    return before, after


def _split_key(text: object, source: str, what: str) -> Tuple[str, bytes, int, bytes]:
    """``<name>+<hash>+<base64>`` as name, hash, algorithm byte and key material."""
    if not isinstance(text, str):
        raise SigningKeyError(source, "a %s must be a str, got %s" % (what, type(text).__name__))
    if len(text) > _MAX_KEY_TEXT:
        raise SigningKeyError(source, "is longer than %d characters: not a %s" % (_MAX_KEY_TEXT, what))
    name, rest = _chop(text)
    hash16, key64 = _chop(rest)
    if not is_valid_key_name(name):
        raise SigningKeyError(source, "malformed %s: the name %r is not a key name" % (what, name))
    if len(hash16) != 8 or not _HEXDIGITS.issuperset(hash16):
        raise SigningKeyError(source, "malformed %s: the key hash must be 8 hex digits" % (what,))
    if not key64 or not _B64.issuperset(key64):
        raise SigningKeyError(source, "malformed %s: the key is not standard base64" % (what,))
    try:
        raw = base64.b64decode(key64.encode("ascii"), validate=True)
    except (binascii.Error, ValueError):
        raise SigningKeyError(source, "malformed %s: the key is not standard base64" % (what,)) from None
    if _b64(raw) != key64:
        raise SigningKeyError(source, "malformed %s: the key is not canonical base64" % (what,))
    alg, material = raw[0], raw[1:]
    if alg not in _KNOWN_ALGS:
        raise SigningKeyError(source, "%s of unknown algorithm 0x%02x" % (what, alg))
    if len(material) != 32:
        raise SigningKeyError(
            source, "malformed %s: an %s key is 32 bytes, not %d" % (what, _KNOWN_ALGS[alg], len(material))
        )
    return name, bytes.fromhex(hash16), alg, material


def parse_verifier_key(text: str, source: str = "verifier key") -> VerifierKey:
    """Parse ``<name>+<hash>+<base64>`` as Go's ``NewVerifier`` does, checking the hash.

    Also refused: a public key that is not a valid Ed25519 point of large
    order (see :func:`agentloop.signing.ed25519.is_valid_public_key`).
    Raises :class:`~agentloop.errors.SigningKeyError`.
    """
    name, hash_given, alg, public = _split_key(text, source, "verifier key")
    if key_hash(name, alg, public) != hash_given:
        raise SigningKeyError(
            source, "the key hash %s does not match the key (Go's errVerifierHash)" % (hash_given.hex(),)
        )
    if not ed25519.is_valid_public_key(public):
        raise SigningKeyError(source, "is not a valid Ed25519 public key")
    return VerifierKey(name, alg, public)


def parse_signer_key(text: str, source: str = "signer key", allow_slow_unsafe_signer: bool = False) -> SignerKey:
    """Parse ``PRIVATE+KEY+<name>+<hash>+<base64>`` as Go's ``NewSigner`` does.

    The hash is of the public key, so the public key is derived from the seed
    first (by :mod:`~agentloop.signing.backend`) and the hash checked
    against it.  Raises :class:`~agentloop.errors.SigningKeyError`; its
    message never holds the key.
    """
    if not isinstance(text, str) or not text.startswith(PRIVATE_KEY_PREFIX):
        raise SigningKeyError(source, "malformed signer key: it must start with %r" % (PRIVATE_KEY_PREFIX,))
    name, hash_given, alg, seed = _split_key(text[len(PRIVATE_KEY_PREFIX) :], source, "signer key")
    public = backend.public_key(seed, allow_slow_unsafe_signer)
    if key_hash(name, alg, public) != hash_given:
        raise SigningKeyError(
            source, "the key hash %s does not match the key (Go's errSignerHash)" % (hash_given.hex(),)
        )
    return SignerKey(name, alg, seed, public)


def _read_text(path: PathLike, source: str) -> str:
    try:
        with open(os.fspath(path), "rb") as handle:
            data = handle.read(_MAX_KEY_TEXT + 3)
    except OSError as exc:
        raise SigningKeyError(source, "cannot be read: %s" % (exc.strerror or exc,)) from None
    if data.endswith(b"\r\n"):
        data = data[:-2]
    elif data.endswith(b"\n"):
        data = data[:-1]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SigningKeyError(source, "is not UTF-8 text") from None


def read_signer_key(path: PathLike, allow_slow_unsafe_signer: bool = False) -> SignerKey:
    """Read a signer key file: the key text, one trailing newline allowed."""
    source = "file %s" % (os.fspath(path),)
    return parse_signer_key(_read_text(path, source), source, allow_slow_unsafe_signer)


def read_verifier_key(path: PathLike) -> VerifierKey:
    """Read a verifier key file: the key text, one trailing newline allowed."""
    source = "file %s" % (os.fspath(path),)
    return parse_verifier_key(_read_text(path, source), source)


def _write_new(path: PathLike, text: str, mode: int) -> None:
    name = os.fspath(path)
    source = "file %s" % (name,)
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        raise SigningKeyError(source, "already exists; not overwriting a key") from None
    except OSError as exc:
        raise SigningKeyError(source, "cannot be created: %s" % (exc.strerror or exc,)) from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text + "\n")
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        os.unlink(name)
        raise


def write_signer_key(path: PathLike, skey_text: str) -> None:
    """Create ``path`` with mode 0600 holding ``skey_text`` and a newline.

    Refuses (:class:`~agentloop.errors.SigningKeyError`) if the path exists:
    a private key is never overwritten.  The text must start with
    :data:`PRIVATE_KEY_PREFIX`.
    """
    if not isinstance(skey_text, str) or not skey_text.startswith(PRIVATE_KEY_PREFIX):
        raise SigningKeyError(
            "file %s" % (os.fspath(path),),
            "refusing to write a signer key that does not start with %r" % (PRIVATE_KEY_PREFIX,),
        )
    _write_new(path, skey_text, 0o600)


def write_verifier_key(path: PathLike, vkey_text: str) -> None:
    """Create ``path`` with mode 0644 holding ``vkey_text`` and a newline; refuses to overwrite."""
    if not isinstance(vkey_text, str) or vkey_text.startswith(PRIVATE_KEY_PREFIX):
        raise SigningKeyError("file %s" % (os.fspath(path),), "refusing to write a private key as a verifier key")
    _write_new(path, vkey_text, 0o644)
