"""Signed notes: C2SP ``signed-note`` and Go's ``golang.org/x/mod/sumdb/note``.

A signed note is a text, a blank line, and signature lines (C2SP
signed-note, "Format")::

    <text, ending in a newline>

    — <key name> <base64(4-byte key ID || signature)>
    — <another key name> <base64(...)>

The signature covers the text "including the final newline but not the
separating blank line" (Go's ``note`` package doc, "Signed Note Format").
Any kind of key can sign: a :class:`Signer` is a key name, a 4-byte key ID
and a ``sign(message) -> bytes``; a :class:`Verifier` a name, a key ID and a
``verify(message, signature) -> bool`` (Go's ``Signer`` and ``Verifier``
interfaces).  Here: :class:`Ed25519Signer`/:class:`Ed25519Verifier`
(signature type 0x01), :class:`agentloop.signing.hmac_sha256.HmacKey`
(agentloop's HMAC checkpoint signatures, type 0xFF), and
:mod:`agentloop.signing.cosignature` (witness cosignatures, type 0x04).

Verification, :func:`verify_note` (C2SP signed-note, "Signatures"):

1. a signature whose (name, key ID) is not a trusted key's is ignored
   ("Verifiers MUST ignore signatures from unknown keys, even if they share
   a name or ID (but not both) with a known key");
2. every signature by a trusted key is verified ("verifiers MUST verify the
   signature"; Go checks only the first of repeated ones) and one that fails
   is a fault, :class:`~agentloop.errors.BadSignatureError` ("clients
   SHOULD reject the whole note"; Go's ``InvalidSignatureError``);
3. no verifying trusted signature is a fault ("clients MUST reject the
   note"; Go's ``UnverifiedNoteError``);
4. each name in ``require`` must be among the verified signers.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Protocol, Sequence, Tuple, Union

from ..errors import BadSignatureError, MalformedNoteError, SigningKeyError, WrongTypeError
from . import backend, ed25519
from .keys import (
    ALG_ED25519,
    SignerKey,
    VerifierKey,
    check_key_type,
    ed25519_key_id,
    is_valid_key_name,
    parse_signer_key,
    parse_verifier_key,
)

__all__ = [
    "MAX_NOTE_BYTES",
    "MAX_SIGNATURES",
    "Signer",
    "Verifier",
    "Ed25519Signer",
    "Ed25519Verifier",
    "NoteSignature",
    "Note",
    "VerifiedNote",
    "parse_note",
    "parse_signature_line",
    "strict_b64decode",
    "sign_note",
    "verify_note",
    "open_note",
]

#: A note longer than this is refused unread.  A note of 100 post-quantum
#: signatures ("up to nearly 5kB" each, signed-note "Format") fits.
MAX_NOTE_BYTES = 1024 * 1024
#: Go's ``Open`` refuses more than 100 signatures; signed-note asks for at least 16.
MAX_SIGNATURES = 100

_EM_DASH = "\u2014"
_SIG_PREFIX = _EM_DASH + " "
_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")

#: What a key of type 0x01 is, in errors.
_NOTE_KEY = "an Ed25519 note key (0x01)"


class Verifier(Protocol):
    """A key that checks note signatures: Go's ``note.Verifier``."""

    @property
    def name(self) -> str:
        """The key name in the signature line."""

    @property
    def key_id(self) -> bytes:
        """The 4-byte key ID (Go: ``KeyHash``)."""

    def verify(self, message: bytes, signature: bytes) -> bool:
        """True when ``signature`` (without the key ID) is valid for ``message``."""


class Signer(Protocol):
    """A key that makes note signatures: Go's ``note.Signer``."""

    @property
    def name(self) -> str:
        """The key name in the signature line."""

    @property
    def key_id(self) -> bytes:
        """The 4-byte key ID (Go: ``KeyHash``)."""

    def sign(self, message: bytes) -> bytes:
        """The signature of ``message`` (without the key ID)."""


@dataclass(frozen=True)
class Ed25519Verifier:
    """An Ed25519 note verifier (signature type 0x01, C2SP signed-note "Ed25519 signatures").

    ``key_id = SHA-256(name || 0x0A || 0x01 || public key)[:4]``.
    Verification is pure Python (:func:`agentloop.signing.ed25519.verify`).
    """

    name: str
    public_key: bytes
    key_id: bytes = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key_id", ed25519_key_id("verifier", self.name, ALG_ED25519, self.public_key))

    @classmethod
    def from_key(cls, key: Union[str, VerifierKey]) -> "Ed25519Verifier":
        """From a ``<name>+<hash>+<base64>`` verifier key of type 0x01 (text or parsed)."""
        parsed = parse_verifier_key(key) if isinstance(key, str) else key
        check_key_type("verifier key", parsed.name, parsed.alg, ALG_ED25519, _NOTE_KEY)
        return cls(parsed.name, parsed.public_key)

    def verify(self, message: bytes, signature: bytes) -> bool:
        """RFC 8032 Ed25519 verification of ``signature`` over ``message``."""
        return ed25519.verify(self.public_key, message, signature)

    def text(self) -> str:
        """The Go verifier key string."""
        return VerifierKey(self.name, ALG_ED25519, self.public_key).text()


@dataclass(frozen=True)
class Ed25519Signer:
    """An Ed25519 note signer holding a parsed 0x01 :class:`~agentloop.signing.keys.SignerKey`.

    Signing goes through :mod:`agentloop.signing.backend`: ``cryptography``
    when installed, the pure-Python signer only with
    ``allow_slow_unsafe_signer=True``, else
    :class:`~agentloop.errors.SigningKeyError` at :meth:`sign`.
    """

    key: SignerKey
    allow_slow_unsafe_signer: bool = False

    def __post_init__(self) -> None:
        check_key_type("signer key", self.key.name, self.key.alg, ALG_ED25519, _NOTE_KEY)

    @classmethod
    def from_key(cls, skey: str, allow_slow_unsafe_signer: bool = False) -> "Ed25519Signer":
        """From a ``PRIVATE+KEY+<name>+<hash>+<base64>`` signer key of type 0x01."""
        return cls(parse_signer_key(skey, allow_slow_unsafe_signer=allow_slow_unsafe_signer), allow_slow_unsafe_signer)

    @property
    def name(self) -> str:
        """The key name."""
        return self.key.name

    @property
    def key_id(self) -> bytes:
        """The 4-byte key ID."""
        return self.key.key_id

    def sign(self, message: bytes) -> bytes:
        """The 64-byte RFC 8032 signature of ``message``."""
        return backend.sign(self.key.seed, message, self.allow_slow_unsafe_signer)

    def verifier(self) -> Ed25519Verifier:
        """The matching verifier."""
        return Ed25519Verifier(self.key.name, self.key.public_key)


@dataclass(frozen=True)
class NoteSignature:
    """One signature line: ``— <name> base64(key_id || signature)``."""

    name: str
    key_id: bytes
    signature: bytes

    def line(self) -> str:
        """The line, without its newline."""
        return "%s%s %s" % (_SIG_PREFIX, self.name, base64.b64encode(self.key_id + self.signature).decode("ascii"))

    @property
    def key(self) -> Tuple[str, bytes]:
        """``(name, key_id)``: what identifies the signing key."""
        return (self.name, self.key_id)


@dataclass(frozen=True)
class Note:
    """A note's text (ending in ``\\n``) and its signatures, in order."""

    text: str
    signatures: Tuple[NoteSignature, ...] = ()

    def message(self) -> bytes:
        """The bytes every signature covers: the text in UTF-8, final newline included."""
        return self.text.encode("utf-8")

    def to_bytes(self) -> bytes:
        """The signed note: text, a blank line, one line per signature."""
        lines = "".join(sig.line() + "\n" for sig in self.signatures)
        return (self.text + "\n" + lines).encode("utf-8")


@dataclass(frozen=True)
class VerifiedNote:
    """The result of :func:`verify_note`: the note, and which signatures verified."""

    note: Note
    verified: Tuple[NoteSignature, ...]
    unverified: Tuple[NoteSignature, ...]

    @property
    def signers(self) -> Tuple[str, ...]:
        """The names of the keys whose signatures verified, in note order."""
        return tuple(sig.name for sig in self.verified)


def strict_b64decode(text: str) -> bytes:
    """Canonical standard base64 (RFC 4648 section 4) or ``ValueError``: one spelling per value."""
    if not text or not _B64.issuperset(text):
        raise ValueError("not standard base64")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not standard base64") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise ValueError("not canonical base64 (padding or trailing bits)")
    return raw


def parse_signature_line(line: str, number: int = 1, what: str = "note") -> NoteSignature:
    """One signature line, without its newline (signed-note "Signatures").

    An em dash and a space, a key name (Go's ``isValidName``), a space, and
    canonical base64 of at least 5 bytes: a 4-byte key ID and a signature.
    Go splits at the first space after the prefix, as here.  Raises
    :class:`~agentloop.errors.MalformedNoteError` naming line ``number``.
    """
    if not line.startswith(_SIG_PREFIX):
        raise MalformedNoteError(number, "a signature line starts with an em dash (U+2014) and a space", what)
    name, _, blob = line[len(_SIG_PREFIX) :].partition(" ")
    if not is_valid_key_name(name):
        raise MalformedNoteError(number, "a key name must be non-empty, with no space or '+'", what)
    try:
        raw = strict_b64decode(blob)
    except ValueError as exc:
        raise MalformedNoteError(number, "the signature is %s" % (exc,), what) from None
    if len(raw) < 5:
        raise MalformedNoteError(number, "a signature holds a 4-byte key ID and at least 1 byte", what)
    return NoteSignature(name, raw[:4], raw[4:])


def _check_text(text: str, what: str = "note") -> None:
    """signed-note "Format": valid UTF-8, no control character below U+0020 but newline."""
    for number, content in enumerate(text.split("\n"), 1):
        bad = next((ch for ch in content if ord(ch) < 0x20 or 0xD800 <= ord(ch) <= 0xDFFF), None)
        if bad is not None:
            kind = "a lone surrogate" if ord(bad) >= 0xD800 else "control character"
            raise MalformedNoteError(number, "%s U+%04X" % (kind, ord(bad)), what)


def parse_note(
    data: bytes, max_bytes: int = MAX_NOTE_BYTES, max_signatures: int = MAX_SIGNATURES, what: str = "note"
) -> Note:
    """Parse a signed note strictly, verifying nothing.

    1. at most ``max_bytes``; valid UTF-8 with no control character but
       newline (signed-note "Format"; Go's ``Open``);
    2. the text ends at the last empty line ("the text is separated from the
       signatures by the last empty line in the note"); it keeps its final
       newline and may hold empty lines;
    3. after it, one or more signature lines, each ending in a newline, each
       :func:`parse_signature_line`; at most ``max_signatures`` (Go: 100).

    Raises :class:`~agentloop.errors.MalformedNoteError` naming the line.
    """
    # 1. size, encoding, characters
    if not isinstance(data, (bytes, bytearray)):
        raise WrongTypeError("a note", "bytes", data)
    if len(data) > max_bytes:
        raise MalformedNoteError(None, "longer than %d bytes" % (max_bytes,), what)
    try:
        whole = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedNoteError(bytes(data).count(b"\n", 0, exc.start) + 1, "invalid UTF-8", what) from None
    _check_text(whole, what)

    # 2. the text: up to and including the newline before the last blank line
    split = whole.rfind("\n\n")
    if split < 0:
        raise MalformedNoteError(None, "no blank line before the signatures", what)
    text, block = whole[: split + 1], whole[split + 2 :]
    first = text.count("\n") + 2  # the line number of the first signature line
    if not block:
        raise MalformedNoteError(first, "no signature line after the blank line", what)
    if not block.endswith("\n"):
        raise MalformedNoteError(first + block.count("\n"), "no terminating newline", what)

    # 3. signature lines
    signatures: List[NoteSignature] = []
    for number, line in enumerate(block[:-1].split("\n"), first):
        if len(signatures) == max_signatures:
            raise MalformedNoteError(number, "more than %d signatures" % (max_signatures,), what)
        signatures.append(parse_signature_line(line, number, what))
    return Note(text, tuple(signatures))


def sign_note(note: Union[Note, str], *signers: Signer) -> Note:
    """``note`` with a signature by each of ``signers`` added (Go's ``Sign``).

    The text must end in a newline and be note text (no control character).
    As in Go, an existing signature by the same key (same name and key ID)
    as a new one is dropped, the others are kept in order, and the new ones
    follow.  Ed25519 signing is deterministic, so signing the same text with
    the same key gives the same bytes.
    """
    if isinstance(note, str):
        note = Note(note)
    if not note.text.endswith("\n"):
        raise MalformedNoteError(None, "the text must end in a newline")
    _check_text(note.text)
    message = note.message()
    new: List[NoteSignature] = []
    for signer in signers:
        if not is_valid_key_name(signer.name):
            raise SigningKeyError("signer", "%r is not a key name" % (signer.name,))
        key_id = bytes(signer.key_id)
        if len(key_id) != 4:
            raise SigningKeyError("signer %s" % (signer.name,), "a key ID is 4 bytes, not %d" % (len(key_id),))
        new.append(NoteSignature(signer.name, key_id, bytes(signer.sign(message))))
    replaced = {sig.key for sig in new}
    kept = [sig for sig in note.signatures if sig.key not in replaced]
    if len(kept) + len(new) > MAX_SIGNATURES:
        raise MalformedNoteError(None, "more than %d signatures" % (MAX_SIGNATURES,))
    return Note(note.text, tuple(kept + new))


def _index(verifiers: Iterable[Verifier]) -> Dict[Tuple[str, bytes], Verifier]:
    """Trusted keys by (name, key ID); two different keys under one pair is misuse (Go: "ambiguous key")."""
    known: Dict[Tuple[str, bytes], Verifier] = {}
    for verifier in verifiers:
        pair = (verifier.name, bytes(verifier.key_id))
        if pair in known and known[pair] != verifier:
            raise SigningKeyError(
                "trusted keys",
                "ambiguous key %s+%s: two trusted keys share its name and key ID" % (pair[0], pair[1].hex()),
            )
        known[pair] = verifier
    return known


def _describe(sigs: Sequence[NoteSignature]) -> str:
    return ", ".join("%s+%s" % (sig.name, sig.key_id.hex()) for sig in sigs) or "no signature"


def verify_note(note: Note, verifiers: Iterable[Verifier], require: Sequence[str] = ()) -> VerifiedNote:
    """Check ``note``'s signatures against the trusted ``verifiers``.

    The rules are numbered in the module docstring and in the body.  A
    ``require`` name no trusted key has is misuse
    (:class:`~agentloop.errors.SigningKeyError`); a note that fails a rule
    raises :class:`~agentloop.errors.BadSignatureError`.
    """
    known = _index(verifiers)
    names = {name for name, _ in known}
    for name in require:
        if name not in names:
            raise SigningKeyError("require", "no trusted key is named %r" % (name,))
    message = note.message()
    verified: List[NoteSignature] = []
    unverified: List[NoteSignature] = []
    for sig in note.signatures:
        verifier = known.get(sig.key)
        # 1. unknown keys are ignored (kept once, as Go drops repeated identical lines)
        if verifier is None:
            if sig not in unverified:
                unverified.append(sig)
            continue
        # 2. every signature by a known key must verify
        if not verifier.verify(message, sig.signature):
            raise BadSignatureError("invalid signature for key %s+%s" % (sig.name, sig.key_id.hex()))
        if sig.key not in {v.key for v in verified}:
            verified.append(sig)
    # 3. at least one trusted signature
    if not verified:
        raise BadSignatureError("no signature by a trusted key (the note holds %s)" % (_describe(note.signatures),))
    # 4. required signers
    have = {sig.name for sig in verified}
    for name in require:
        if name not in have:
            raise BadSignatureError("required signer %r did not sign (verified: %s)" % (name, _describe(verified)))
    return VerifiedNote(note, tuple(verified), tuple(unverified))


def open_note(data: bytes, verifiers: Iterable[Verifier], require: Sequence[str] = ()) -> VerifiedNote:
    """:func:`parse_note` then :func:`verify_note` (Go's ``Open``)."""
    return verify_note(parse_note(data), verifiers, require)
