"""The note text of any C2SP ``tlog-checkpoint``: origin, tree size, root hash, extension lines.

tlog-checkpoint, "Note text": "a sequence of at least three non-empty
lines":

1. the **origin**, non-empty ("clients MUST NOT assume that the origin is
   following" the recommended URL form);
2. the **tree size**, "the ASCII decimal representation of the number of
   leaves in the tree, with no leading zeroes (unless the tree is empty, in
   which case the tree size is ``0``)";
3. the **root hash**, base64 (RFC 4648 section 4) of the RFC 6962 root:
   here always 32 bytes of SHA-256;
4. any further lines are **extension lines**, which "MUST be non-empty".

agentloop's own checkpoints (:mod:`agentloop.transcript.checkpoint`,
:mod:`agentloop.batch.ledger`) are stricter forms of this; a witness or a
tlog-proof verifier reads any log's checkpoint through :func:`parse_tree_head`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ..errors import MalformedNoteError
from ..signing.note import Note, strict_b64decode

__all__ = ["MAX_TREE_SIZE", "TreeHead", "parse_tree_head", "parse_decimal"]

#: The largest tree size read: a u64, as Go's ``int64`` sizes and C2SP's "u64" allow.
MAX_TREE_SIZE = 2**63 - 1
_HASH_SIZE = 32


def parse_decimal(text: str) -> Optional[int]:
    """An ASCII decimal with no sign and no leading zero (``0`` alone is zero), at most 2^63-1; else ``None``."""
    if not text or not text.isascii() or not text.isdigit() or len(text) > 19:
        return None
    if text[0] == "0" and text != "0":
        return None
    value = int(text)
    return value if value <= MAX_TREE_SIZE else None


@dataclass(frozen=True)
class TreeHead:
    """A checkpoint's tree head: ``origin``, ``size`` leaves, 32-byte ``root``, ``extensions`` lines."""

    origin: str
    size: int
    root: bytes
    extensions: Tuple[str, ...] = ()


def parse_tree_head(note: Note, what: str = "checkpoint") -> TreeHead:
    """The tree head of a signed note's text, by tlog-checkpoint "Note text" (rules in the module docstring).

    Raises :class:`~agentloop.errors.MalformedNoteError` naming the line of the note.
    """
    lines = note.text.split("\n")[:-1]  # the text ends in "\n" (signed-note "Format")
    if len(lines) < 3:
        raise MalformedNoteError(len(lines) + 1, "a checkpoint needs an origin, a tree size and a root hash line", what)
    for number, content in enumerate(lines, 1):
        if not content:
            raise MalformedNoteError(number, "an empty line in the checkpoint text (its lines are non-empty)", what)
    size = parse_decimal(lines[1])
    if size is None:
        raise MalformedNoteError(2, "the tree size is not a decimal with no leading zero (at most 2**63-1)", what)
    try:
        root = strict_b64decode(lines[2])
    except ValueError as exc:
        raise MalformedNoteError(3, "the root hash is %s" % (exc,), what) from None
    if len(root) != _HASH_SIZE:
        raise MalformedNoteError(3, "the root hash is %d bytes, not a 32-byte SHA-256" % (len(root),), what)
    return TreeHead(lines[0], size, root, tuple(lines[3:]))
