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
checkpoint: :mod:`agentloop.anchor`).  The writer keeps the RFC 6962 Merkle
root of the records as it goes (:mod:`agentloop.merkle`), so it can write a
checkpoint at any point (:meth:`TranscriptWriter.checkpoint`).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

from .canonical import FloatVetter, canonical_bytes, describe_integer, is_canonical_line, json_depth, parse_int
from .checkpoint import Checkpoint, check_key, sign
from .durable import lock_exclusive, write_atomic
from .errors import TranscriptExistsError, UnrecordableError
from .merkle import CompactRange

__all__ = [
    "FORMAT",
    "GENESIS",
    "FIELDS",
    "KINDS",
    "MAX_LINE_BYTES",
    "MAX_RECORD_BYTES",
    "is_hash",
    "FAULT_KINDS",
    "Fault",
    "VerifyResult",
    "TranscriptWriter",
    "verify_records",
    "verify_file",
    "iter_file",
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

#: Every fault kind verification can report.
FAULT_KINDS = (
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
    # against an outside expectation (verify_file's expect_count / expect_head)
    "count_mismatch",  # not the expected number of records: a missing tail, or extra records
    "head_mismatch",  # the last record's hash is not the expected one
    # per file
    "bad_json",  # a line that is not a JSON text (torn last line, bad UTF-8, ...)
    "unreadable",  # the file cannot be opened or read
    # against a checkpoint (agentloop.anchor.verify_checkpoint)
    "truncated",  # fewer records than the checkpoint holds: a missing tail, a rollback
    "anchor_mismatch",  # the first N records do not give the checkpoint's origin, root and head
    "unanchored_tail",  # records beyond the checkpoint: a fault only when exact=True
    "bad_signature",  # a key was given and the checkpoint has no valid signature by it
    "anchor_malformed",  # the checkpoint's bytes break a rule of its format
)

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
    kind: str
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
    information, not a verdict, since a chain cannot prove its own tail.
    """

    ok: bool
    count: int
    head: Optional[str]
    faults: Tuple[Fault, ...] = field(default=())
    complete: bool = False


def is_hash(value: object) -> bool:
    """Whether ``value`` is a lowercase hex SHA-256, as ``hash`` and ``prev`` are."""
    return isinstance(value, str) and len(value) == 64 and _HEX.issuperset(value)


_is_hex_hash = is_hash


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
    return "a %s" % (_json_type(value),)


class _Chain:
    """The per-record checks, shared by :func:`verify_records` and :func:`verify_file`.

    It keeps O(1) state: the expected ``seq``, the expected ``prev`` and the
    last record seen, so verification streams in flat memory.
    """

    def __init__(self) -> None:
        self.index = 0
        self.expected_seq = 0
        self.expected_prev: Optional[str] = GENESIS
        self.head: Optional[str] = None
        self.last_kind: object = None

    def _kind_problem(self, index: int, kind: object) -> str:
        if self.last_kind == "stop":
            return "a %s record after the stop record" % (_short(kind),)
        if kind not in KINDS:
            return "kind %s is not one of task, assistant, tool, stop" % (_short(kind),)
        if kind == "task" and index != 0:
            return "a second task record"
        return ""

    def _sound(self, record: object, text: str, raw: bytes, floats: List[Tuple[str, str]]) -> bool:
        """The common case, cheaply: a record with no fault at all.

        True only if every check of :meth:`check` would pass; then the state
        advances exactly as :meth:`check` would advance it.  The line is
        proven canonical by :func:`~agentloop.canonical.is_canonical_line`,
        so the hashed bytes are the line minus its ``"hash"`` member.
        """
        if type(record) is not dict or record.keys() != _FIELD_SET:
            return False
        seq, stored = record["seq"], record["hash"]
        if type(seq) is not int or seq != self.expected_seq or record["prev"] != self.expected_prev:
            return False
        kind = record["kind"]
        if self.index == 0:
            payload = record["payload"]
            if kind != "task" or not isinstance(payload, dict) or payload.get("format") != FORMAT:
                return False
        elif kind not in _LATER_KINDS or self.last_kind == "stop":
            return False
        if not _is_hex_hash(stored) or not is_canonical_line(record, text, raw, floats):
            return False
        if hashlib.sha256(b"{" + raw[_BODY_AT:]).hexdigest() != stored:
            return False
        self.index += 1
        self.expected_seq = seq + 1
        self.expected_prev = self.head = stored
        self.last_kind = kind
        return True

    def check(
        self,
        record: object,
        line: Optional[int],
        raw: Optional[bytes],
        text: Optional[str] = None,
        floats: Optional[List[Tuple[str, str]]] = None,
    ) -> List[Fault]:
        """Check one record (and, when ``raw`` is given, its line bytes).

        With ``text``, the decoded line, and ``floats``, its vetted float
        tokens (:class:`~agentloop.canonical.FloatVetter`), a sound record is
        accepted by :meth:`_sound` alone.
        Anything else, and every record from :func:`verify_records`, goes
        through the full checks, which name every fault:

        1. the record is an object with exactly the five members;
        2. record 0 is an ``agentloop/1`` task record;
        3. ``seq`` is the expected position;
        4. ``prev`` is the previous record's ``hash``;
        5. the record is encodable, and its line is its RFC 8785 form;
        6. ``hash`` is the SHA-256 of the record without ``hash``.
        """
        if text is not None and raw is not None and floats is not None and self._sound(record, text, raw, floats):
            return []
        index = self.index
        self.index += 1
        faults: List[Fault] = []

        def fault(kind: str, detail: str) -> None:
            faults.append(Fault(index, line, kind, detail))

        # 1. shape
        if not isinstance(record, dict):
            fault("not_an_object", "record is %s, not an object" % (_a(_json_type(record)),))
            self.expected_seq += 1
            self.expected_prev = None
            self.head = None
            self.last_kind = None
            return faults
        missing = [name for name in FIELDS if name not in record]
        if missing:
            fault("missing_fields", "missing %s" % (", ".join(repr(m) for m in missing),))
        extra = sorted(_short(key) for key in record if key not in FIELDS)
        if extra:
            fault("unexpected_fields", "unexpected %s" % (", ".join(extra),))

        # 2. format marker
        if index == 0:
            payload = record.get("payload")
            fmt = payload.get("format") if isinstance(payload, dict) else None
            if record.get("kind") != "task" or fmt != FORMAT:
                fault(
                    "unknown_format",
                    "record 0 must be a 'task' record with payload.format %r, got kind %s, format %s"
                    % (FORMAT, _short(record.get("kind")), _short(fmt)),
                )

        # 2b. kind grammar: task only first, nothing after a stop
        kind = record.get("kind")
        if "kind" in record:
            problem = self._kind_problem(index, kind)
            if problem:
                fault("unexpected_kind", problem)

        # 3. seq
        seq = record.get("seq")
        if "seq" in record:
            if isinstance(seq, bool) or not isinstance(seq, int) or seq != self.expected_seq:
                fault("seq_gap", "seq is %s, expected %d" % (_short(seq), self.expected_seq))
        self.expected_seq = seq + 1 if isinstance(seq, int) and not isinstance(seq, bool) else self.expected_seq + 1

        # 4. prev
        prev = record.get("prev")
        if "prev" in record and self.expected_prev is not None and prev != self.expected_prev:
            fault("prev_mismatch", "prev is %s, expected %s" % (_short(prev), _short(self.expected_prev)))

        # 5. encodable, canonical
        stored = record.get("hash")
        computed: Optional[str] = None
        rest = {name: record[name] for name in FIELDS[1:] if name in record}
        try:
            body = canonical_bytes(rest)
        except UnrecordableError as exc:
            fault("unserialisable_payload", str(exc))
        else:
            computed = hashlib.sha256(body).hexdigest()
            if raw is not None and not missing and not extra and _is_hex_hash(stored):
                expected_line = _HEAD + str(stored).encode("ascii") + b'",' + body[1:]
                if raw != expected_line:
                    fault("not_canonical", _first_difference(raw, expected_line))

        # 6. hash
        if "hash" in record and computed is not None and stored != computed:
            fault("hash_mismatch", "stored %s, computed %s" % (_short(stored), _short(computed)))

        self.expected_prev = stored if _is_hex_hash(stored) else computed
        self.head = stored if isinstance(stored, str) else None
        self.last_kind = kind
        return faults


def _json_type(value: object) -> str:
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


def _first_difference(raw: bytes, expected: bytes) -> str:
    at = next(
        (i for i, (a, b) in enumerate(zip(raw, expected)) if a != b),
        min(len(raw), len(expected)),
    )
    return "line is not the RFC 8785 form of its record: first difference at byte %d" % (at,)


def verify_records(records: Iterable[object]) -> List[Fault]:
    """Return every fault of a sequence of already-parsed records.

    The records are JSON values as :func:`json.loads` returns them.  Faults
    carry ``index`` (the position) and ``line=None``.  Never raises: a value
    that cannot even be inspected (an object whose methods raise) is an
    ``unserialisable_payload`` at its index.
    """
    chain = _Chain()
    faults: List[Fault] = []
    try:
        iterator = iter(records)
    except TypeError:
        return [Fault(None, None, "not_an_object", "records is %s, not a sequence" % (_a(type(records).__name__),))]
    while True:
        try:
            record = next(iterator)
        except StopIteration:
            return faults
        except Exception as exc:
            faults.append(Fault(chain.index, None, "unserialisable_payload", "reading the records raised %s" % (type(exc).__name__,)))
            return faults
        index = chain.index
        try:
            faults.extend(chain.check(record, None, None))
        except Exception as exc:  # hostile Python objects only; parsed JSON cannot raise here
            chain.index = index + 1
            chain.expected_prev = None
            faults.append(Fault(index, None, "unserialisable_payload", "inspecting the record raised %s" % (type(exc).__name__,)))


def _read_lines(handle: BinaryIO, limit: int) -> Iterator[Tuple[bytes, bool]]:
    """Yield ``(line, whole)`` with memory bounded by ``limit``.

    A line longer than ``limit`` bytes is yielded as its first ``limit``
    bytes with ``whole=False``; the rest of it is read and dropped in
    ``limit``-sized pieces.
    """
    while True:
        raw = handle.readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit or raw.endswith(b"\n") and len(raw) == limit + 1:
            yield raw, True
            continue
        yield raw[:limit], False
        while not raw.endswith(b"\n"):
            raw = handle.readline(limit)
            if not raw:
                return


def _parse_line(
    number: int, raw: bytes, whole: bool = True, loads: Callable[[str], object] = json.loads
) -> Tuple[object, Optional[Fault], str]:
    """``(record, None, text)`` for a complete JSON line, else ``(None, bad_json fault, "")``.

    The same on every Python 3.8-3.13: integers too long for ``int()`` parse
    (as :class:`~agentloop.canonical.UnparsedInteger`), and nesting beyond
    :data:`PARSE_DEPTH` is refused before the parser's own limit is met.
    """
    if not whole:
        return None, Fault(None, number, "bad_json", "line longer than %d bytes, not read" % (len(raw),)), ""
    if not raw.endswith(b"\n"):
        return None, Fault(None, number, "bad_json", "torn line: no terminating newline"), ""
    try:
        text = raw[:-1].decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, Fault(None, number, "bad_json", "invalid UTF-8 at byte %d" % (exc.start,)), ""
    if raw.count(b"[") + raw.count(b"{") > PARSE_DEPTH and json_depth(text) > PARSE_DEPTH:
        return None, Fault(None, number, "bad_json", "nesting deeper than %d levels" % (PARSE_DEPTH,)), ""
    try:
        try:
            return loads(text), None, text
        except ValueError:
            return json.loads(text, parse_int=parse_int), None, text
    except RecursionError:
        return None, Fault(None, number, "bad_json", "nesting too deep to parse"), ""
    except ValueError as exc:
        return None, Fault(None, number, "bad_json", "not JSON: %s" % (exc,)), ""


def _scan(
    path: PathLike, limit: int = MAX_LINE_BYTES, on_record: Optional[Callable[[bytes], None]] = None
) -> Iterator[Tuple[int, object, List[Fault], "_Chain"]]:
    """Read a transcript once, yielding ``(line, record, faults, chain)`` per line.

    ``record`` is ``None`` for a line that is not a record (its ``bad_json``
    fault is in ``faults``).  An ``OSError`` becomes one ``unreadable`` fault,
    yielded with line ``0`` and record ``None``.  ``on_record``, if given, is
    called with each record's line bytes (without ``\\n``) before it is yielded.
    """
    chain = _Chain()
    vetter = FloatVetter()
    loads = json.JSONDecoder(parse_float=vetter.on_float, parse_constant=vetter.on_constant).decode
    line = 0
    try:
        with open(os.fspath(path), "rb") as handle:
            for raw, whole in _read_lines(handle, limit):
                line += 1
                vetter.reset()
                record, bad, text = _parse_line(line, raw, whole, loads)
                if bad is not None:
                    yield line, None, [bad], chain
                else:
                    body = raw[:-1]
                    if on_record is not None:
                        on_record(body)
                    yield line, record, chain.check(record, line, body, text, vetter.pairs), chain
    except OSError as exc:
        reason = "%s: %s" % (type(exc).__name__, exc.strerror or exc)
        yield 0, None, [Fault(None, line or None, "unreadable", reason)], chain


def iter_file(path: PathLike) -> Iterator[Tuple[int, Optional[object], Optional[Fault]]]:
    """Yield ``(line_number, record, fault)`` for each line of a transcript.

    Exactly one of ``record`` and ``fault`` is set: ``fault`` is a ``bad_json``
    fault for a line that is not a complete JSON text (no terminating newline,
    invalid UTF-8, a syntax error, nesting too deep to parse, too long).  An
    ``OSError`` opening or reading the file propagates.
    """
    handle: BinaryIO
    with open(os.fspath(path), "rb") as handle:
        number = 0
        for raw, whole in _read_lines(handle, MAX_LINE_BYTES):
            number += 1
            record, fault, _ = _parse_line(number, raw, whole)
            yield number, record, fault


def verify_file(
    path: PathLike,
    *,
    expect_count: Optional[int] = None,
    expect_head: Optional[str] = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> VerifyResult:
    """Verify a transcript file, streaming it in flat memory.

    Every line that parses as JSON is a record and goes through the same
    checks as :func:`verify_records`, plus a check that the line's bytes are
    its record's RFC 8785 form.  Lines that do not parse are ``bad_json``, and
    so are lines longer than ``max_line_bytes`` (not read into memory); a
    file that cannot be opened or read is ``unreadable``.  Never raises on
    any file content.

    The chain alone cannot show a missing tail.  ``expect_count`` and
    ``expect_head``, an anchor held outside the file, can: a different count
    is ``count_mismatch``, a different last hash ``head_mismatch``.
    """
    chain = _Chain()
    faults: List[Fault] = []
    for _, _, found, chain in _scan(path, max_line_bytes):
        faults.extend(found)
    head = chain.head if chain.index else None
    if expect_count is not None and chain.index != expect_count:
        faults.append(
            Fault(None, None, "count_mismatch", "expected %d records, found %d" % (expect_count, chain.index))
        )
    if expect_head is not None and head != expect_head:
        faults.append(Fault(None, None, "head_mismatch", "expected head %s, found %s" % (expect_head, _short(head))))
    return VerifyResult(
        ok=not faults,
        count=chain.index,
        head=head,
        faults=tuple(faults),
        complete=chain.last_kind == "stop",
    )


class TranscriptWriter:
    """Append records to a new transcript file, one whole line per ``write``.

    Each record is encoded completely before anything is written, so a value
    that cannot be recorded raises :class:`~agentloop.errors.UnrecordableError`
    and leaves the file as it was.  Each line goes to the operating system in
    one ``write`` as soon as it is appended (``fsync=True`` also forces it to
    the disk), so a process that dies leaves every earlier record complete.

    The file must not exist unless ``overwrite=True``: a transcript is
    evidence and is never replaced by accident.  The writer holds an
    advisory lock on it (:mod:`agentloop.durable`) until :meth:`close`: a
    second writer is refused with
    :class:`~agentloop.errors.TranscriptLockedError` before it truncates
    anything.  It keeps the RFC 6962 root of the records written
    (:attr:`root`) and writes a checkpoint whenever asked (:meth:`checkpoint`).
    """

    def __init__(
        self,
        path: PathLike,
        *,
        overwrite: bool = False,
        fsync: bool = False,
        max_record_bytes: Optional[int] = MAX_RECORD_BYTES,
    ) -> None:
        self.path = os.fspath(path)
        self._fsync = fsync
        self._limit = max_record_bytes
        # Truncated only once the lock is held, so a refused second writer changes nothing.
        flags = os.O_WRONLY | os.O_CREAT | (0 if overwrite else os.O_EXCL)
        flags |= getattr(os, "O_BINARY", 0)
        try:
            fd = os.open(self.path, flags, 0o644)
        except FileExistsError:
            raise TranscriptExistsError(self.path) from None
        try:
            lock_exclusive(fd, self.path)
            if overwrite:
                os.ftruncate(fd, 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd: Optional[int] = fd
        self._seq = 0
        self._head = GENESIS
        self._first = GENESIS
        self._range = CompactRange()

    @property
    def count(self) -> int:
        """How many records have been written."""
        return self._seq

    @property
    def head(self) -> str:
        """The hash of the last record written (64 zeros before the first)."""
        return self._head

    def append(self, kind: str, payload: Mapping[str, Any]) -> str:
        """Encode and write one record; return its hash."""
        if self._fd is None:
            raise ValueError("transcript %s is closed" % (self.path,))
        record: Dict[str, Any] = {"kind": kind, "payload": payload, "prev": self._head, "seq": self._seq}
        body = canonical_bytes(record)
        digest = hashlib.sha256(body).hexdigest()
        line = memoryview(_HEAD + digest.encode("ascii") + b'",' + body[1:] + b"\n")
        if self._limit is not None and len(line) > self._limit:
            raise UnrecordableError(
                "$", "%s record of %d bytes exceeds max_record_bytes %d" % (_a(kind), len(line), self._limit)
            )
        data = line
        while data:
            written = os.write(self._fd, data)
            data = data[written:]
        if self._fsync:
            os.fsync(self._fd)
        self._range.append_data(line[:-1])  # RFC 6962 leaf: the line without its newline
        if not self._seq:
            self._first = digest
        self._seq += 1
        self._head = digest
        return digest

    @property
    def root(self) -> str:
        """The hex RFC 6962 Merkle root over the record lines written so far."""
        return self._range.root().hex()

    def tree_head(self, key: Optional[bytes] = None) -> Checkpoint:
        """The checkpoint of the records written so far, signed by ``key`` if given.

        Raises ``ValueError`` before the first record (record 0 names the run).
        """
        if not self._seq:
            raise ValueError("transcript %s has no record to checkpoint" % (self.path,))
        head = Checkpoint(self._first, self._seq, self.root, self._head)
        return head if key is None else sign(head, key)

    def checkpoint(self, path: PathLike, key: Optional[bytes] = None) -> Checkpoint:
        """Write the checkpoint of the records so far to ``path``; return it.

        Write order: 1. the records are made durable (``fsync``), whatever
        the writer's durability; 2. the checkpoint replaces ``path``
        atomically (:func:`~agentloop.durable.write_atomic`).  So a crash
        leaves a checkpoint that the transcript on disk still extends.
        """
        if self._fd is None:
            raise ValueError("transcript %s is closed" % (self.path,))
        if key is not None:
            key = check_key(key)
        head = self.tree_head(key)
        os.fsync(self._fd)
        write_atomic(path, head.to_bytes())
        return head

    def close(self) -> None:
        """Close the file; further appends raise ``ValueError``."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self) -> "TranscriptWriter":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
