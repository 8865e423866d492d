"""The transcript: an append-only JSONL file whose records form a SHA-256 chain.

Format ``agentloop/1``
---------------------
* One record per line, UTF-8, each line terminated by ``\\n``.
* A record is exactly ``{"hash", "kind", "payload", "prev", "seq"}`` and its
  line is the RFC 8785 serialisation of that object
  (:mod:`agentloop.canonical`).
* ``hash`` is the lowercase hex SHA-256 of the RFC 8785 bytes of the record
  *without* its ``hash`` member; ``seq`` counts from 0; ``prev`` is the previous
  record's ``hash``, 64 zeros for record 0.
* Record 0 is a ``task`` record whose payload carries ``"format": "agentloop/1"``.

Because ``"hash"`` sorts first among the five keys, a canonical line is
``{"hash":"<64 hex>",`` followed by the hashed bytes minus their opening brace;
the writer builds lines that way and encodes each record once.

What the chain proves and what it does not: it detects modification,
reordering and removal of records *that are followed by others*.  It cannot
see that records are missing from the end -- the surviving prefix is itself a
valid chain -- and whoever can write the file can recompute every hash.  Both
need an anchor kept elsewhere (an expected count or head hash, or a
checkpoint: :mod:`agentloop.transcript.anchor`).  The writer keeps the RFC 6962 Merkle
root of the records as it goes (:mod:`agentloop.transcript.merkle`), so it can write a
checkpoint at any point (:meth:`TranscriptWriter.checkpoint`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Literal, Optional, Tuple, Union, get_args

from ..canonical import describe_integer


__all__ = [
    "FORMAT",
    "GENESIS",
    "FIELDS",
    "KINDS",
    "MAX_LINE_BYTES",
    "MAX_RECORD_BYTES",
    "MIN_RECORD_BYTES",
    "MAX_RECORD_BYTES_LIMIT",
    "PARSE_DEPTH",
    "MAX_FAULTS",
    "FAULT_KINDS",
    "FaultKind",
    "Fault",
    "VerifyResult",
    "PathLike",
    "is_hash",
]

PathLike = Union[str, "os.PathLike[str]"]

#: The format marker record 0 carries in its payload.
FORMAT = "agentloop/1"
#: ``prev`` of record 0.
GENESIS = "0" * 64
#: The five members of every record, in canonical order.
FIELDS = ("hash", "kind", "payload", "prev", "seq")
#: The record kinds of format agentloop/1.
KINDS = ("task", "assistant", "tool", "stop")
#: Lines longer than this are not read by default (``bad_json``), so one
#: hostile line cannot exhaust memory; ``verify_file(max_line_bytes=...)``.
MAX_LINE_BYTES = 16 * 1024 * 1024
#: Lines nesting deeper than this are ``bad_json`` whatever the Python's own
#: parser limit (which differs between 3.8 and 3.13); deeper than MAX_DEPTH
#: but within this is a record with an ``unserialisable_payload``.
PARSE_DEPTH = 512
#: The default largest record, in bytes with its newline, a writer accepts.
MAX_RECORD_BYTES = 1024 * 1024
#: The smallest ``max_record_bytes`` allowed (room for any error record).
MIN_RECORD_BYTES = 64 * 1024
#: The largest ``max_record_bytes`` a writer accepts: the verifier's default
#: line limit, so agentloop never writes a line its own verifier will not read.
#: A larger value is refused up front (``RunConfigError``), not recorded.
MAX_RECORD_BYTES_LIMIT = MAX_LINE_BYTES
#: How many faults verification keeps by default (``verify_file(max_faults=)``,
#: ``agentloop verify --max-faults``).  Past them it stops judging line by line:
#: a ``too_many_faults`` fault says how many lines and bytes went unexamined.
#: A verdict is decided by its first fault; the cap keeps a hostile file's cost
#: (time and memory) within that of a valid file of the same size.
MAX_FAULTS = 100

#: Every fault kind verification can report, as a type; :data:`FAULT_KINDS` is the same set as a tuple.
FaultKind = Literal[
    # per record
    "not_an_object",  # the record is not a JSON object
    "missing_fields",  # one of the five members is absent
    "unexpected_fields",  # a member outside the five (the hash does not cover it)
    "seq_gap",  # seq is not the expected position
    "prev_mismatch",  # prev is not the previous record's hash
    "hash_mismatch",  # hash is not the SHA-256 of the record's other members
    "unserialisable_payload",  # the record holds a value RFC 8785/I-JSON cannot encode
    "not_canonical",  # the line's bytes are not the RFC 8785 form of its record
    "unknown_format",  # record 0 is not an agentloop/1 task record
    "unexpected_kind",  # a kind outside task/assistant/tool/stop, a second task, a record after stop
    "bad_payload",  # a payload breaks the agentloop/1 grammar (see verify.Chain._grammar)
    # against an outside expectation (verify_file's expect_count / expect_head)
    "count_mismatch",  # not the expected number of records: a missing tail, or extra records
    "head_mismatch",  # the last record's hash is not the expected one
    # per file
    "bad_json",  # a line that is not a JSON text (torn last line, bad UTF-8, ...)
    "unreadable",  # the file cannot be opened or read (or is not a regular file or a pipe)
    "no_records",  # the file holds no record, so no run (an empty file)
    "incomplete",  # verify_file(require_complete=True): the run has no stop record
    "too_many_faults",  # more than max_faults: the rest of the file was not examined
    # against a checkpoint (agentloop.transcript.anchor.verify_checkpoint)
    "truncated",  # fewer records than the checkpoint holds: a missing tail, a rollback
    "anchor_mismatch",  # the first N records do not give the checkpoint's origin, root and head
    "unanchored_tail",  # records beyond the checkpoint: a fault only when exact=True
    "bad_signature",  # a key was given and the checkpoint has no valid signature by it
    "anchor_malformed",  # the checkpoint's bytes break a rule of its format
]
#: The kinds of :data:`FaultKind`, in its order.
FAULT_KINDS: Tuple[FaultKind, ...] = get_args(FaultKind)

_HEX = frozenset("0123456789abcdef")
_HEAD = b'{"hash":"'  # every canonical record line starts so
_BODY_AT = len(_HEAD) + 66  # after '{"hash":"<64 hex>",' the hashed bytes resume
_FIELD_SET = frozenset(FIELDS)
_LATER_KINDS = frozenset(("assistant", "tool", "stop"))


@dataclass(frozen=True)
class Fault:
    """One thing wrong with a transcript.

    ``index`` is the 0-based position of the record among the records read
    (``None`` for a line that is not a record, or a file-level fault); ``line``
    is the 1-based line number in a file (``None`` for :func:`verify_records`
    and for a file that could not be opened).
    """

    index: Optional[int]
    line: Optional[int]
    kind: FaultKind
    detail: str

    def where(self) -> str:
        """``record 3 (line 4)``, ``line 7`` or ``file``: the place, in words."""
        if self.index is not None and self.line is not None:
            return "record %d (line %d)" % (self.index, self.line)
        if self.index is not None:
            return "record %d" % (self.index,)
        if self.line is not None:
            return "line %d" % (self.line,)
        return "file"

    def __str__(self) -> str:
        return "%s: %s: %s" % (self.where(), self.kind, self.detail)


@dataclass(frozen=True)
class VerifyResult:
    """The verdict on one transcript file.

    ``count`` is the number of records read (lines that parse as JSON) and
    ``head`` the last record's ``hash`` member (``None`` when there is none).
    ``complete`` says whether the last record is a ``stop`` record; it is
    information, not a verdict, since a chain cannot prove its own tail
    (``verify_file(require_complete=True)`` makes it one).  When more than
    ``max_faults`` faults were found, verification stopped there (the last
    fault is ``too_many_faults``): ``unexamined_lines`` and
    ``unexamined_bytes`` say how much of the file was then not judged, and
    ``count``/``head``/``complete`` describe only the part read.
    """

    ok: bool
    count: int
    head: Optional[str]
    faults: Tuple[Fault, ...] = field(default=())
    complete: bool = False
    unexamined_lines: int = 0
    unexamined_bytes: int = 0


def is_hash(value: object) -> bool:
    """Whether ``value`` is a lowercase hex SHA-256, as ``hash`` and ``prev`` are."""
    return isinstance(value, str) and len(value) == 64 and _HEX.issuperset(value)


_is_hex_hash = is_hash


def _json_type(value: object) -> str:
    """The JSON type of a parsed value, in words (``number`` for both ints and floats)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def _short(value: object) -> str:
    """A value from a record, for a fault detail: bounded, ASCII, never raising.

    Details are printed to terminals and written into reports, and the record
    is untrusted: strings are cut and JSON-escaped (no control characters,
    no lone surrogates), other values are named by their type.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        shown = describe_integer(int(value))
        return shown if shown[:1] != "o" else "an integer " + shown
    if isinstance(value, str):
        cut = value[:12] + ("..." if len(value) > 12 else "")
        return json.dumps(cut) if not is_hash(value) and not _HEX.issuperset(value) else cut
    return _a(_json_type(value))
