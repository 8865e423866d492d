"""The body of a C2SP ``tlog-witness`` ``add-checkpoint`` request, and of its response.

tlog-witness, "add-checkpoint": "The request body MUST be a sequence of an
old size line, zero or more consistency proof lines, and an empty line,
followed by a checkpoint.  Each line MUST terminate in a newline"::

    old 20852014
    PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=
    jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=

    example.com/behind-the-sofa
    20852163
    CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=

    — example.com/behind-the-sofa Az3grlgtzPICa5OS8npVm...

* the old size line: ``old``, a space, the size "as an ASCII decimal with no
  leading zeroes (unless the size is zero ...)";
* each proof line "MUST encode a single hash in base64" (here: a 32-byte
  SHA-256 node, RFC 6962/9162 consistency proof order); at most 63; none
  when the old size is zero ("The proof MUST be empty if the old size is
  zero");
* the checkpoint is a signed note (C2SP ``signed-note``) whose text is a
  C2SP ``tlog-checkpoint`` (origin, size, root hash lines); the old size
  must not exceed its size ("Otherwise ... 400 Bad Request").

The response to a successful request is "one or more note signature lines"
(the cosignatures): :func:`format_add_checkpoint_response` and
:func:`parse_add_checkpoint_response`.

Only the text formats live here; checking the proof is
:mod:`agentloop.transcript.proofs`' job and checking signatures
:func:`~agentloop.signing.note.verify_note`'s.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import List, Sequence, Tuple

from ..errors import BadArgumentError, MalformedNoteError, WrongTypeError
from .note import MAX_NOTE_BYTES, Note, NoteSignature, strict_b64decode, parse_note, parse_signature_line

__all__ = [
    "MAX_PROOF_LINES",
    "HASH_SIZE",
    "AddCheckpointRequest",
    "build_add_checkpoint_request",
    "parse_add_checkpoint_request",
    "checkpoint_size",
    "format_add_checkpoint_response",
    "parse_add_checkpoint_response",
]

#: "The client MUST NOT send more than 63 consistency proof lines."
MAX_PROOF_LINES = 63
#: A proof line's hash: SHA-256.
HASH_SIZE = 32
_WHAT = "witness request"
_MAX_SIZE = 2**64 - 1


def _decimal(text: str) -> int:
    """A decimal with no sign and no leading zero (``0`` alone is zero), or ``ValueError``."""
    if not text or not text.isascii() or not text.isdigit() or (text[0] == "0" and text != "0") or len(text) > 20:
        raise ValueError(text)
    value = int(text)
    if value > _MAX_SIZE:
        raise ValueError(text)
    return value


def checkpoint_size(note: Note) -> int:
    """The tree size of a checkpoint note: its second text line (tlog-checkpoint "Note text").

    Raises :class:`~agentloop.errors.MalformedNoteError` if the text lacks
    the origin, size and root hash lines.
    """
    lines = note.text.split("\n")
    if len(lines) < 4 or not lines[0]:
        raise MalformedNoteError(None, "the checkpoint needs an origin, a size and a root hash line", _WHAT)
    try:
        return _decimal(lines[1])
    except ValueError:
        raise MalformedNoteError(
            None, "the checkpoint's size line is not a decimal with no leading zero", _WHAT
        ) from None


@dataclass(frozen=True)
class AddCheckpointRequest:
    """An ``add-checkpoint`` request: the old size, the proof hashes, the signed checkpoint."""

    old_size: int
    proof: Tuple[bytes, ...]
    checkpoint: Note

    def to_bytes(self) -> bytes:
        """The request body."""
        lines = ["old %d\n" % (self.old_size,)]
        lines.extend(base64.b64encode(node).decode("ascii") + "\n" for node in self.proof)
        return "".join(lines).encode("ascii") + b"\n" + self.checkpoint.to_bytes()


def _check(old_size: int, proof: Sequence[bytes], checkpoint: Note) -> None:
    if isinstance(old_size, bool) or not isinstance(old_size, int) or not 0 <= old_size <= _MAX_SIZE:
        raise MalformedNoteError(1, "the old size must be an integer from 0 to 2**64-1", _WHAT)
    if len(proof) > MAX_PROOF_LINES:
        raise MalformedNoteError(
            2 + MAX_PROOF_LINES, "more than %d consistency proof lines" % (MAX_PROOF_LINES,), _WHAT
        )
    for number, node in enumerate(proof, 2):
        if not isinstance(node, (bytes, bytearray)) or len(node) != HASH_SIZE:
            raise MalformedNoteError(number, "a consistency proof line is a %d-byte hash" % (HASH_SIZE,), _WHAT)
    if old_size == 0 and proof:
        raise MalformedNoteError(2, "the proof must be empty when the old size is 0", _WHAT)
    if not checkpoint.signatures:
        raise MalformedNoteError(None, "the checkpoint is not signed", _WHAT)
    size = checkpoint_size(checkpoint)
    if old_size > size:
        raise MalformedNoteError(1, "the old size %d exceeds the checkpoint's size %d" % (old_size, size), _WHAT)


def build_add_checkpoint_request(old_size: int, proof: Sequence[bytes], checkpoint: bytes) -> bytes:
    """The body of an ``add-checkpoint`` request (the rules are in the module docstring).

    ``proof`` is the consistency proof from ``old_size`` to the checkpoint's
    size as 32-byte hashes, ``checkpoint`` the signed checkpoint's bytes.
    Raises :class:`~agentloop.errors.MalformedNoteError`.
    """
    note = parse_note(checkpoint)
    nodes = tuple(bytes(node) if isinstance(node, bytearray) else node for node in proof)
    _check(old_size, nodes, note)
    return AddCheckpointRequest(old_size, nodes, note).to_bytes()


def _proof_lines(data: bytes, pos: int) -> Tuple[List[bytes], int]:
    """Step 2 of :func:`parse_add_checkpoint_request`: the proof hashes from line 2, and where the checkpoint starts."""
    proof: List[bytes] = []
    number = 2
    while True:
        end = data.find(b"\n", pos)
        if end < 0:
            raise MalformedNoteError(number, "no empty line before the checkpoint", _WHAT)
        line = data[pos:end]
        pos = end + 1
        if not line:
            return proof, pos
        if len(proof) == MAX_PROOF_LINES:
            raise MalformedNoteError(number, "more than %d consistency proof lines" % (MAX_PROOF_LINES,), _WHAT)
        try:
            node = strict_b64decode(line.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            raise MalformedNoteError(number, "a consistency proof line must be canonical base64", _WHAT) from None
        if len(node) != HASH_SIZE:
            why = "a consistency proof line is a %d-byte hash, not %d" % (HASH_SIZE, len(node))
            raise MalformedNoteError(number, why, _WHAT)
        proof.append(node)
        number += 1


def parse_add_checkpoint_request(body: bytes, check: bool = True) -> AddCheckpointRequest:
    """Parse an ``add-checkpoint`` request body strictly.

    1. ``old <size>``, a decimal with no leading zero, then a newline;
    2. up to 63 lines of canonical base64 of a 32-byte hash, then an empty line;
    3. the rest is a signed note (:func:`~agentloop.signing.note.parse_note`)
       with at least one signature, a checkpoint of size >= the old size;
       no proof when the old size is 0.  ``check=False`` leaves these three
       rules to the caller (a witness answers each with its own status code).

    Raises :class:`~agentloop.errors.MalformedNoteError` naming the line of
    the body (a fault inside the checkpoint names the checkpoint's line).
    """
    if not isinstance(body, (bytes, bytearray)):
        raise WrongTypeError("a request body", "bytes", body)
    if len(body) > MAX_NOTE_BYTES + 4096:
        raise MalformedNoteError(None, "longer than %d bytes" % (MAX_NOTE_BYTES + 4096,), _WHAT)
    data = bytes(body)
    # 1. the old size line
    end = data.find(b"\n")
    if end < 0 or not data.startswith(b"old "):
        raise MalformedNoteError(1, "the first line must be 'old <size>'", _WHAT)
    try:
        old_size = _decimal(data[4:end].decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise MalformedNoteError(1, "the old size is not a decimal with no leading zero", _WHAT) from None
    # 2. proof lines up to the empty line
    proof, pos = _proof_lines(data, end + 1)
    # 3. the checkpoint
    note = parse_note(data[pos:], what="checkpoint")
    if check:
        _check(old_size, proof, note)
    return AddCheckpointRequest(old_size, tuple(proof), note)


def format_add_checkpoint_response(signatures: Sequence[NoteSignature]) -> bytes:
    """A 200 response body: "one or more note signature lines", each ending in a newline."""
    if not signatures:
        raise BadArgumentError("signatures", "must hold at least one cosignature (a response holds one or more)")
    return "".join(sig.line() + "\n" for sig in signatures).encode("utf-8")


def parse_add_checkpoint_response(body: bytes) -> Tuple[NoteSignature, ...]:
    """The signature lines of a 200 response (each :func:`~agentloop.signing.note.parse_signature_line`).

    To check them, add them to the checkpoint (``Note(text, sigs +
    these)``) and :func:`~agentloop.signing.note.verify_note` with the
    witness keys trusted, as tlog-witness suggests.
    """
    what = "witness response"
    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedNoteError(None, "invalid UTF-8", what) from None
    if not text:
        raise MalformedNoteError(None, "no signature line", what)
    if not text.endswith("\n"):
        raise MalformedNoteError(text.count("\n") + 1, "no terminating newline", what)
    return tuple(parse_signature_line(line, number, what) for number, line in enumerate(text[:-1].split("\n"), 1))
