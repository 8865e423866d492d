"""Checkpoints: a transcript's tree head as a C2SP ``tlog-checkpoint`` note.

A checkpoint is the small anchor kept somewhere else than the transcript.
Its bytes are a C2SP signed note (https://c2sp.org/signed-note@v1.0.0)
whose text is a C2SP checkpoint (https://c2sp.org/tlog-checkpoint)::

    agentloop/1/<64 hex: the hash of record 0, which names the run>
    <the record count, decimal>
    <base64 of the RFC 6962 Merkle root over the records>
    head <64 hex: the hash of the last record>

    — agentloop/1/<...> <base64 of key ID || HMAC-SHA256>

tlog-checkpoint "Note text": line 1 is the origin, line 2 the tree size
"with no leading zeroes", line 3 the base64 (RFC 4648 section 4) root hash,
any further lines "extension lines"; agentloop writes exactly one, ``head``.
The origin uses ``/`` rather than a space before the hash because the
origin SHOULD hold no spaces and the signature's key name, which SHOULD
match it, MUST hold none (signed-note "Format").  signed-note "Format": the
text ends in a newline, then a blank line, then signature lines
``— <key name> <base64(4-byte key ID || signature)>``.  An unsigned
checkpoint is the text and the blank line with no signature line.

Signatures are HMAC-SHA256 (RFC 2104) over the note text, under a key the
user holds, with the key ID of :mod:`agentloop.signing.hmac_sha256` (the one
implementation of the scheme)::

    key ID = SHA-256(origin || 0x0A || 0xFF || "agentloop-hmac-sha256" || fingerprint)[:4]

The key name is the checkpoint's origin.  A signature under another name
or key ID is another key's and is ignored, as signed-note requires.  What an
HMAC proves: that someone holding the key made the checkpoint.  Anyone with
the key can forge one, so it protects against a party that can write the
transcript and the checkpoint but never sees the key.

Public-key signatures (:mod:`agentloop.signing`) sit beside it: any
:class:`~agentloop.signing.note.Signer` -- an Ed25519 note key (type 0x01)
or a witness's ``cosignature/v1`` key (type 0x04) -- signs the same text
under its own key name, which the user chose and which need not be the
origin (one key signs many runs; each run has its own origin).
:func:`sign_checkpoint` adds the HMAC signature first (so an HMAC-only
checkpoint is byte for byte what :func:`sign` makes), then one per signer
in order; Ed25519 signing is deterministic (RFC 8032 section 5.1.6), so the
signed checkpoint is a pure function of the tree head and the keys.
:func:`verify_signatures` applies signed-note's rules to a set of trusted
keys (numbered there).

:func:`parse_checkpoint` is strict: every rule it enforces is numbered in
its docstring and body, and a broken one raises
:class:`~agentloop.errors.MalformedCheckpointError` naming the line.
"""

from __future__ import annotations

import base64
import binascii
import errno
import os
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Sequence, Tuple, Union, cast

from ..errors import BadSignatureError, MalformedCheckpointError, RunConfigError, SigningKeyError
from ..signing.hmac_sha256 import MIN_HMAC_KEY_BYTES, HmacKey, check_hmac_key, hmac_key_id
from ..signing.note import Note, NoteSignature, Signer, Verifier, sign_note, verify_note
from .durable import read_small

__all__ = [
    "ORIGIN_PREFIX",
    "MAX_CHECKPOINT_BYTES",
    "MAX_SIGNATURES",
    "MIN_KEY_BYTES",
    "Signature",
    "Checkpoint",
    "parse_checkpoint",
    "read_checkpoint",
    "key_id",
    "sign",
    "verify_signature",
    "sign_checkpoint",
    "verify_signatures",
    "check_signers",
    "check_trusted",
    "load_key",
    "check_key",
    "check_run_anchor",
]

PathLike = Union[str, "os.PathLike[str]"]

#: Every agentloop/1 checkpoint's origin is this, then the hash of record 0.
ORIGIN_PREFIX = "agentloop/1/"
#: A checkpoint longer than this is refused unread (``anchor_malformed``).
MAX_CHECKPOINT_BYTES = 64 * 1024
#: signed-note: verifiers "MUST accept at least up to 16 signatures"; more are refused.
MAX_SIGNATURES = 16
#: The shortest HMAC key accepted, in bytes (32 random bytes are recommended).
MIN_KEY_BYTES = MIN_HMAC_KEY_BYTES
#: The largest record count: ``seq`` is an I-JSON integer.
MAX_SIZE = 2**53 - 1

_EM_DASH = "\u2014"
_HEX = frozenset("0123456789abcdef")
_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")


def _is_hex64(text: str) -> bool:
    return len(text) == 64 and _HEX.issuperset(text)


@dataclass(frozen=True)
class Signature:
    """One signed-note signature line: ``— <name> base64(key_id || signature)``."""

    name: str
    key_id: bytes
    signature: bytes

    def line(self) -> str:
        """The line, without its newline."""
        blob = base64.b64encode(self.key_id + self.signature).decode("ascii")
        return "%s %s %s" % (_EM_DASH, self.name, blob)


@dataclass(frozen=True)
class Checkpoint:
    """A transcript's tree head after ``size`` records.

    ``first`` is the hex hash of record 0 (the run's name, in the origin),
    ``root`` the hex RFC 6962 Merkle root over the first ``size`` record
    lines, ``head`` the hex hash of record ``size - 1``.  Hashes are hex
    here, as everywhere in agentloop; only the note's root line is base64.
    """

    first: str
    size: int
    root: str
    head: str
    signatures: Tuple[Signature, ...] = field(default=())

    @property
    def origin(self) -> str:
        """``agentloop/1/<first>``: the log's identity, and the signing key's name."""
        return ORIGIN_PREFIX + self.first

    def text(self) -> bytes:
        """The note text: the four lines a signature covers, each ending in ``\\n``."""
        root = base64.b64encode(bytes.fromhex(self.root)).decode("ascii")
        return ("%s\n%d\n%s\nhead %s\n" % (self.origin, self.size, root, self.head)).encode("ascii")

    def to_bytes(self) -> bytes:
        """The whole note: text, blank line, one line per signature."""
        lines = "".join(sig.line() + "\n" for sig in self.signatures)
        return self.text() + b"\n" + lines.encode("utf-8")

    def unsigned(self) -> "Checkpoint":
        """The same tree head without signatures."""
        return replace(self, signatures=())

    def to_note(self) -> Note:
        """The checkpoint as a :class:`~agentloop.signing.note.Note` (same text, same signatures)."""
        sigs = tuple(NoteSignature(s.name, s.key_id, s.signature) for s in self.signatures)
        return Note(self.text().decode("ascii"), sigs)


def _b64(text: str, line: int, what: str) -> bytes:
    """Strict standard base64 with padding (RFC 4648 section 4): one spelling per value."""
    if not text or not _B64.issuperset(text):
        raise MalformedCheckpointError(line, "%s is not standard base64" % (what,))
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError):
        raise MalformedCheckpointError(line, "%s is not standard base64" % (what,)) from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise MalformedCheckpointError(line, "%s is not in canonical base64 (padding or trailing bits)" % (what,))
    return raw


def parse_checkpoint(data: bytes) -> Checkpoint:
    """Parse a checkpoint's bytes, refusing anything but the one spelling.

    1. at most :data:`MAX_CHECKPOINT_BYTES`, valid UTF-8, no control
       character but ``\\n`` (signed-note "Format"), ending in ``\\n``;
    2. four text lines, a blank line, then signature lines: no other empty
       line (the text is separated "by the last empty line");
    3. line 1, the origin: ``agentloop/1/`` and 64 lowercase hex digits;
    4. line 2, the size: decimal, no sign, "no leading zeroes", at least 1
       (record 0 names the run) and at most 2^53 - 1;
    5. line 3, the root: canonical base64 of exactly 32 bytes;
    6. line 4, the one extension line: ``head`` and 64 lowercase hex
       digits; when the size is 1 it is record 0's hash;
    7. each signature line: an em dash, a space, a key name (non-empty, no
       space, no ``+``), a space, canonical base64 of a 4-byte key ID and at
       least one byte of signature; at most :data:`MAX_SIGNATURES`.
    """
    lines = _lines(data)  # 1.
    _layout(lines)  # 2.
    first = _origin(lines[0])  # 3.
    size = _size(lines[1])  # 4.
    root = _b64(lines[2], 3, "root")  # 5.
    if len(root) != 32:
        raise MalformedCheckpointError(3, "root is %d bytes, not a 32-byte SHA-256" % (len(root),))
    head = _head(lines[3], size, first)  # 6.
    signatures = tuple(_signature(content, number) for number, content in enumerate(lines[5:], 6))  # 7.
    return Checkpoint(first, size, root.hex(), head, signatures)


def _lines(data: bytes) -> List[str]:
    """Step 1 of :func:`parse_checkpoint`: size, encoding, characters; the lines without the last newline."""
    if len(data) > MAX_CHECKPOINT_BYTES:
        raise MalformedCheckpointError(None, "longer than %d bytes" % (MAX_CHECKPOINT_BYTES,))
    if not data:
        raise MalformedCheckpointError(None, "empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedCheckpointError(data.count(b"\n", 0, exc.start) + 1, "invalid UTF-8") from None
    for number, content in enumerate(text.split("\n"), 1):
        bad = next((ch for ch in content if ord(ch) < 0x20 or ord(ch) == 0x7F), None)
        if bad is not None:
            raise MalformedCheckpointError(number, "control character U+%04X" % (ord(bad),))
    if not text.endswith("\n"):
        raise MalformedCheckpointError(text.count("\n") + 1, "no terminating newline")
    return text[:-1].split("\n")


def _layout(lines: List[str]) -> None:
    """Step 2: four text lines, the blank line, signatures."""
    if len(lines) < 5 or lines[4] != "":
        blank = next((i for i, content in enumerate(lines[:5], 1) if content == ""), None)
        if blank is not None and blank < 5:
            raise MalformedCheckpointError(blank, "an empty line inside the note text (it needs 4 lines)")
        if len(lines) < 5:
            raise MalformedCheckpointError(len(lines) + 1, "no blank line after the 4 text lines")
        raise MalformedCheckpointError(5, "a fifth text line: only one extension line (head) is allowed")
    for number, content in enumerate(lines[5:], 6):
        if content == "":
            raise MalformedCheckpointError(number, "an empty line among the signatures")


def _origin(origin: str) -> str:
    """Step 3: the origin; returns record 0's hash."""
    if not origin.startswith(ORIGIN_PREFIX) or not _is_hex64(origin[len(ORIGIN_PREFIX) :]):
        raise MalformedCheckpointError(1, "origin must be %r and 64 lowercase hex digits" % (ORIGIN_PREFIX,))
    return origin[len(ORIGIN_PREFIX) :]


def _size(size_text: str) -> int:
    """Step 4: the size."""
    if not size_text.isascii() or not size_text.isdigit() or len(size_text) > 16:
        raise MalformedCheckpointError(2, "size must be a decimal number")
    if size_text[0] == "0":
        raise MalformedCheckpointError(2, "size must be at least 1, with no leading zero")
    size = int(size_text)
    if size > MAX_SIZE:
        raise MalformedCheckpointError(2, "size %d exceeds 2**53-1" % (size,))
    return size


def _head(head_line: str, size: int, first: str) -> str:
    """Step 6: the ``head`` extension line."""
    if not head_line.startswith("head ") or not _is_hex64(head_line[5:]):
        raise MalformedCheckpointError(4, "extension line must be 'head' and 64 lowercase hex digits")
    head = head_line[5:]
    if size == 1 and head != first:
        raise MalformedCheckpointError(4, "a checkpoint of 1 record must have record 0's hash as head")
    return head


def _signature(content: str, number: int) -> Signature:
    """Step 7: one signature line (line ``number``)."""
    if number > 5 + MAX_SIGNATURES:
        raise MalformedCheckpointError(number, "more than %d signatures" % (MAX_SIGNATURES,))
    parts = content.split(" ")
    if len(parts) != 3 or parts[0] != _EM_DASH:
        raise MalformedCheckpointError(number, "a signature line is '\u2014 <key name> <base64>'")
    name, blob = parts[1], parts[2]
    if not name or "+" in name or any(ch.isspace() for ch in name):
        raise MalformedCheckpointError(number, "a key name must be non-empty, with no space or '+'")
    raw = _b64(blob, number, "signature")
    if len(raw) < 5:
        raise MalformedCheckpointError(number, "a signature holds a 4-byte key ID and at least 1 byte")
    return Signature(name, raw[:4], raw[4:])


def read_checkpoint(path: PathLike) -> Checkpoint:
    """Read and parse a checkpoint file.

    ``OSError`` propagates; bad content raises
    :class:`~agentloop.errors.MalformedCheckpointError`.  At most
    :data:`MAX_CHECKPOINT_BYTES` + 1 bytes are read.
    """
    try:
        data = read_small(path, MAX_CHECKPOINT_BYTES)
    except OSError as exc:
        if exc.errno != errno.EFBIG:
            raise
        data = b"x" * (MAX_CHECKPOINT_BYTES + 1)  # too long: parse_checkpoint says so, as before
    return parse_checkpoint(data)


#: The 4-byte signed-note key ID of HMAC ``key`` under key name ``name``
#: (:func:`agentloop.signing.hmac_sha256.hmac_key_id`).
key_id = hmac_key_id
#: ``key`` as ``bytes`` if it can sign, else ``SigningKeyError`` (:func:`agentloop.signing.hmac_sha256.check_hmac_key`).
check_key = check_hmac_key


def sign(checkpoint: Checkpoint, key: bytes) -> Checkpoint:
    """``checkpoint`` with an HMAC-SHA256 signature by ``key`` added.

    The signature covers :meth:`Checkpoint.text`; a signature already made
    by the same key (same name and key ID) is replaced, others are kept.
    """
    mine = HmacKey(checkpoint.origin, check_key(key))
    kept = tuple(s for s in checkpoint.signatures if (s.name, s.key_id) != (mine.name, mine.key_id))
    return replace(checkpoint, signatures=kept + (Signature(mine.name, mine.key_id, mine.sign(checkpoint.text())),))


def verify_signature(checkpoint: Checkpoint, key: bytes) -> None:
    """Check that ``key`` signed ``checkpoint``.

    signed-note "Signatures": signatures from other keys (another name or
    key ID) are ignored; every signature whose name and key ID match the key
    must verify, and at least one must.  Raises
    :class:`~agentloop.errors.BadSignatureError` saying which rule failed.
    """
    hmac_key = HmacKey(checkpoint.origin, check_key(key))
    kid = hmac_key.key_id
    mine = [s for s in checkpoint.signatures if s.name == hmac_key.name and s.key_id == kid]
    if not mine:
        if not checkpoint.signatures:
            raise BadSignatureError("the checkpoint is not signed")
        others = ", ".join("%s/%s" % (s.name[:24], s.key_id.hex()) for s in checkpoint.signatures)
        raise BadSignatureError("no signature by this key (key ID %s); the checkpoint holds %s" % (kid.hex(), others))
    for sig in mine:
        if not hmac_key.verify(checkpoint.text(), sig.signature):
            raise BadSignatureError("the signature by key ID %s does not match the checkpoint's text" % (kid.hex(),))


SignerArg = Union[None, Signer, Sequence[Signer]]


def check_signers(signer: object, source: str = "signer") -> Tuple[Signer, ...]:
    """``signer`` (``None``, one signer, or a list or tuple of them) as a tuple of signers.

    A signer is any :class:`~agentloop.signing.note.Signer`: a valid key
    name, a 4-byte key ID and ``sign``.  Anything else raises
    :class:`~agentloop.errors.SigningKeyError` naming ``source``.
    """
    if signer is None:
        return ()
    items = list(signer) if isinstance(signer, (list, tuple)) else [signer]
    for index, item in enumerate(items):
        where = source if not isinstance(signer, (list, tuple)) else "%s[%d]" % (source, index)
        name, kid = getattr(item, "name", None), getattr(item, "key_id", None)
        if isinstance(item, (str, bytes, bytearray)) or not callable(getattr(item, "sign", None)):
            raise SigningKeyError(
                where, "must be a note signer (agentloop.signing.Ed25519Signer, ...), got %s" % (type(item).__name__,)
            )
        if not isinstance(name, str) or not name or "+" in name or any(ch.isspace() or ord(ch) < 0x20 for ch in name):
            raise SigningKeyError(where, "has no valid key name")
        if not isinstance(kid, (bytes, bytearray)) or len(kid) != 4:
            raise SigningKeyError(where, "has no 4-byte key ID")
    return tuple(cast(Signer, item) for item in items)


def sign_checkpoint(checkpoint: Checkpoint, key: Optional[bytes] = None, signers: SignerArg = None) -> Checkpoint:
    """``checkpoint`` signed by the HMAC ``key`` (if given), then by each of ``signers``.

    The HMAC signature is :func:`sign`'s, so with no signer the bytes are
    exactly those of ``sign(checkpoint, key)``.  Each signer then signs the
    note text (:func:`~agentloop.signing.note.sign_note`: a signature by the
    same name and key ID is replaced, others kept, new ones follow in order).
    More than :data:`MAX_SIGNATURES` signatures raise
    :class:`~agentloop.errors.SigningKeyError` (the note could not be read
    back).  Signing errors (no ``cryptography`` and no opt-in) propagate.
    """
    chosen = check_signers(signers)
    if key is not None:
        checkpoint = sign(checkpoint, key)
    if not chosen:
        return checkpoint
    note = sign_note(checkpoint.to_note(), *chosen)
    if len(note.signatures) > MAX_SIGNATURES:
        raise SigningKeyError(
            "signers",
            "the checkpoint would hold %d signatures; at most %d are allowed" % (len(note.signatures), MAX_SIGNATURES),
        )
    return replace(checkpoint, signatures=tuple(Signature(s.name, s.key_id, s.signature) for s in note.signatures))


def check_trusted(
    trusted: Sequence[Verifier] = (), require: Sequence[str] = (), key: Optional[bytes] = None
) -> Tuple[Verifier, ...]:
    """Check a verification request before anything is read; return the trusted verifiers.

    Misuse raises :class:`~agentloop.errors.SigningKeyError`: a trusted key
    that is not a verifier, two different trusted keys with one name and key
    ID (Go: "ambiguous key"), a ``require`` name that no trusted key has (the
    HMAC key of ``key`` is always required, so it is never named).
    """
    if isinstance(trusted, (str, bytes)) or isinstance(require, (str, bytes)):
        raise SigningKeyError(
            "trusted" if isinstance(trusted, (str, bytes)) else "require", "must be a list, not a single str or bytes"
        )
    verifiers = tuple(trusted)
    known: Dict[Tuple[str, bytes], Verifier] = {}
    for index, verifier in enumerate(verifiers):
        name, kid = getattr(verifier, "name", None), getattr(verifier, "key_id", None)
        if (
            not isinstance(name, str)
            or not isinstance(kid, (bytes, bytearray))
            or not callable(getattr(verifier, "verify", None))
        ):
            raise SigningKeyError(
                "trusted[%d]" % (index,),
                "must be a note verifier (agentloop.signing.Ed25519Verifier, ...), got %s" % (type(verifier).__name__,),
            )
        pair = (name, bytes(kid))
        if pair in known and known[pair] != verifier:
            raise SigningKeyError(
                "trusted keys",
                "ambiguous key %s+%s: two trusted keys share its name and key ID" % (name, pair[1].hex()),
            )
        known[pair] = verifier
    names = {name for name, _ in known}
    for name in require:
        if not isinstance(name, str) or name not in names:
            raise SigningKeyError("require", "no trusted key is named %r" % (name,))
    if key is not None:
        check_key(key)
    return verifiers


def verify_signatures(
    checkpoint: Checkpoint, trusted: Sequence[Verifier] = (), require: Sequence[str] = (), key: Optional[bytes] = None
) -> Tuple[str, ...]:
    """Check ``checkpoint``'s signatures; return the names of the trusted keys that verified.

    C2SP signed-note "Signatures", with the HMAC ``key`` as one more trusted
    key that is also required (the caller named that very key):

    1. with ``key``, its HMAC signature must be there and verify
       (:func:`verify_signature`, whose messages are kept);
    2. a signature by a key not in ``trusted`` (another name or key ID, an
       ML-DSA cosignature) is ignored;
    3. every signature by a trusted key must verify: one that does not is a
       fault, even when another verifies;
    4. at least one trusted signature must verify;
    5. each name in ``require`` must be among those that verified.

    Raises :class:`~agentloop.errors.BadSignatureError` (a fault) or
    :class:`~agentloop.errors.SigningKeyError` (misuse, as
    :func:`check_trusted`).
    """
    verifiers = check_trusted(trusted, require, key)
    if key is None and not verifiers:
        raise SigningKeyError("trusted", "no trusted key and no HMAC key: nothing to verify with")
    names: List[str] = []
    # 1.
    if key is not None:
        verify_signature(checkpoint, key)
        names.append(checkpoint.origin)
        if not verifiers:
            return tuple(names)
        verifiers = verifiers + (HmacKey(checkpoint.origin, key),)
    # 2.-5. (verify_note numbers the same rules)
    verified = verify_note(checkpoint.to_note(), verifiers, require)
    return tuple(verified.signers)


#: The longest key file read; a longer one is refused, never cut.
MAX_KEY_FILE_BYTES = 1 << 20


def load_key(path: Optional[PathLike] = None, env: Optional[str] = None) -> bytes:
    """Read a signing key from a file or an environment variable (exactly one).

    A key file's bytes are the key, with one trailing ``\\n`` (or ``\\r\\n``)
    removed, so ``echo`` and editors do not change it; an environment
    variable's value is taken as UTF-8.  The key must be at least
    :data:`MIN_KEY_BYTES` bytes.  Raises
    :class:`~agentloop.errors.SigningKeyError`.
    """
    if path is not None and env is None:
        source = "file %s" % (os.fspath(path),)
        try:  # a regular file of at most 1 MiB: never a FIFO, a device, or a longer file cut short
            key = read_small(path, MAX_KEY_FILE_BYTES)
        except OSError as exc:
            raise SigningKeyError(source, "cannot be read: %s" % (exc.strerror or exc,)) from None
        if key.endswith(b"\r\n"):
            key = key[:-2]
        elif key.endswith(b"\n"):
            key = key[:-1]
    elif env is not None and path is None:
        source = "environment variable %s" % (env,)
        value = os.environ.get(env)
        if value is None:
            raise SigningKeyError(source, "is not set")
        key = value.encode("utf-8", "surrogateescape")
    else:
        raise SigningKeyError("source", "give exactly one of a key file and an environment variable")
    return check_key(key, source)


def check_run_anchor(
    transcript: PathLike, checkpoint: object, key: object, overwrite: bool, signer: object = None
) -> None:
    """The checks :func:`agentloop.run` makes on ``checkpoint=``, ``key=`` and ``signer=`` before it starts.

    Raises :class:`~agentloop.errors.RunConfigError`: a key or signer
    without a checkpoint (nothing would be signed), a checkpoint that is not
    a path, is the transcript's own path, or already exists without
    ``overwrite``, a key that is not bytes of at least
    :data:`MIN_KEY_BYTES`, and a signer that is not one or cannot sign (each
    signs a test message now, so a missing ``cryptography`` is found before
    the run, not after it).
    """
    if checkpoint is None:
        if key is not None:
            raise RunConfigError("key", "given without checkpoint=: nothing would be signed")
        if signer is not None:
            raise RunConfigError("signer", "given without checkpoint=: nothing would be signed")
        return
    try:
        for one in check_signers(signer):
            one.sign(b"agentloop signer check\n")
    except SigningKeyError as exc:
        raise RunConfigError("signer", "%s %s" % (exc.source, exc.reason)) from None
    if not isinstance(checkpoint, (str, os.PathLike)):
        raise RunConfigError("checkpoint", "must be a path, got %s" % (type(checkpoint).__name__,))
    name = os.fspath(checkpoint)
    if not isinstance(name, str) or not name:
        raise RunConfigError("checkpoint", "must be a non-empty str path")
    if os.path.abspath(name) == os.path.abspath(os.fspath(transcript)):
        raise RunConfigError("checkpoint", "is the transcript's own path %s" % (name,))
    if not overwrite and os.path.lexists(name):
        raise RunConfigError("checkpoint", "%s already exists (pass overwrite=True to replace it)" % (name,))
    if key is not None:
        try:
            check_key(key)
        except SigningKeyError as exc:
            raise RunConfigError("key", exc.reason) from None
