"""Verify a transcript: one streaming, single-pass scan of its lines.

See :mod:`agentloop.transcript.format` for the format this checks and
``docs/format.md`` for its normative description.  Beyond the chain, four
fault kinds say what a user of the file needs to know:

* ``bad_payload`` -- in a chain intact so far, a payload breaks the
  ``agentloop/1`` grammar (:mod:`agentloop.transcript.grammar`: a stop reason
  outside :data:`agentloop.messages.STOP_REASONS`, a tool record without
  ``ok``, steps or tokens that do not add up, a member of the wrong type);
* ``no_records`` -- the file holds no record, so no run (an empty file is
  not a valid empty transcript);
* ``incomplete`` -- asked for with ``require_complete=True``: the run has no
  ``stop`` record;
* ``too_many_faults`` -- more than ``max_faults`` (default
  :data:`~agentloop.transcript.format.MAX_FAULTS`, 100) were found: the
  rest of the file is counted (lines, bytes), not judged, so a hostile file
  costs no more time or memory than a valid one of the same size.

Every reader here opens its input with
:func:`~agentloop.transcript.durable.open_input`: a directory, a device or a
socket is ``unreadable`` at once, and a FIFO without a writer never blocks.
"""

from __future__ import annotations

import hashlib
import json
from typing import BinaryIO, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from ..canonical import canonical_bytes, is_canonical_line, json_depth, parse_int
from ..errors import BadArgumentError, UnrecordableError

from .durable import open_input
from .format import FIELDS, FORMAT, Fault, GENESIS, KINDS, MAX_FAULTS, MAX_LINE_BYTES, PARSE_DEPTH, PathLike, VerifyResult, _BODY_AT, _FIELD_SET, _HEAD, _LATER_KINDS, _a, _is_hex_hash, _json_type, _short
from .grammar import Grammar

class Chain:
    """The per-record checks, shared by :func:`verify_records` and :func:`verify_file`.

    It keeps O(1) state: the expected ``seq``, the expected ``prev``, the
    last record seen and the run's tallies for the payload grammar
    (:class:`~agentloop.transcript.grammar.Grammar`), so verification
    streams in flat memory.  Every value it tests comes from an untrusted
    file and may be of any JSON type: it is compared, never hashed (a list
    as ``kind`` once made a set lookup raise ``TypeError``).
    """

    def __init__(self) -> None:
        self.index = 0
        self.expected_seq = 0
        self.expected_prev: Optional[str] = GENESIS
        self.head: Optional[str] = None
        self.last_kind: object = None
        self.grammar = Grammar()
        # The grammar is judged while every record so far passed the chain
        # checks: in a tampered chain a payload proves nothing, and one
        # rewritten kind would otherwise echo as a fault at every later record.
        self.intact = True
        # Set by scan when it stops judging past max_faults: what it left unread.
        self.unexamined_lines = 0
        self.unexamined_bytes = 0

    def _payload(self, index: int, line: Optional[int], kind: str, payload: object) -> List[Fault]:
        """``[bad_payload]`` when the payload breaks the agentloop/1 grammar, else ``[]``."""
        if not self.intact:
            return []
        problem = self.grammar.problem(kind, payload)
        return [Fault(index, line, "bad_payload", problem)] if problem else []

    def _kind_problem(self, index: int, kind: object) -> str:
        if self.last_kind == "stop":
            return "a %s record after the stop record" % (_short(kind),)
        if kind not in KINDS:
            return "kind %s is not one of task, assistant, tool, stop" % (_short(kind),)
        if kind == "task" and index != 0:
            return "a second task record"
        return ""

    def _sound(self, record: object, text: str, raw: bytes) -> bool:
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
        elif type(kind) is not str or kind not in _LATER_KINDS or self.last_kind == "stop":  # str first: never hash a list
            return False
        if not _is_hex_hash(stored) or not is_canonical_line(record, text, raw):
            return False
        if hashlib.sha256(b"{" + raw[_BODY_AT:]).hexdigest() != stored:
            return False
        self.index += 1
        self.expected_seq = seq + 1
        self.expected_prev = self.head = stored
        self.last_kind = kind
        return True

    def check(self, record: object, line: Optional[int], raw: Optional[bytes], text: Optional[str] = None) -> List[Fault]:
        """Check one record (and, when ``raw`` is given, its line bytes).

        With ``text``, the decoded line, a sound record passes the chain
        checks by :meth:`_sound` alone.  Anything else, and every record
        from :func:`verify_records`, goes through the full checks, which
        name every fault:

        1. the record is an object with exactly the five members;
        2. record 0 is an ``agentloop/1`` task record;
        3. ``seq`` is the expected position;
        4. ``prev`` is the previous record's ``hash``;
        5. the record is encodable, and its line is its RFC 8785 form;
        6. ``hash`` is the SHA-256 of the record without ``hash``;
        7. while every record so far (this one included) passed checks
           1-6, a record's payload is of the agentloop/1 grammar
           (:mod:`~agentloop.transcript.grammar`; ``bad_payload``).
        """
        if text is not None and raw is not None and self._sound(record, text, raw):
            return self._payload(self.index - 1, line, record["kind"], record["payload"])  # type: ignore[index]
        index = self.index
        self.index += 1
        if not isinstance(record, dict):  # 1. shape
            self.intact = False
            self.expected_seq += 1
            self.expected_prev = self.head = self.last_kind = None
            return [Fault(index, line, "not_an_object", "record is %s, not an object" % (_a(_json_type(record)),))]
        found = _Found(index, line)
        whole = self._members(found, record)
        kind_known = self._kind(found, record)  # 2. format marker, 2b. kind grammar
        self._seq(found, record)  # 3.
        self._prev(found, record)  # 4.
        computed = self._encoding(found, record, raw if whole else None)  # 5. and 6.
        stored = record.get("hash")
        self.expected_prev = stored if _is_hex_hash(stored) else computed
        self.head = stored if isinstance(stored, str) else None
        self.last_kind = record.get("kind")
        # 7. payload grammar, in a chain intact so far
        self.intact = self.intact and not found.faults
        if kind_known and "payload" in record:
            found.faults.extend(self._payload(index, line, str(self.last_kind), record["payload"]))
        return found.faults

    @staticmethod
    def _members(found: "_Found", record: Dict[str, object]) -> bool:
        """1. ``missing_fields``, ``unexpected_fields``; whether the five members are exactly there."""
        missing = [name for name in FIELDS if name not in record]
        if missing:
            found.add("missing_fields", "missing %s" % (", ".join(repr(m) for m in missing),))
        extra = sorted(_short(key) for key in record if key not in FIELDS)
        if extra:
            found.add("unexpected_fields", "unexpected %s" % (", ".join(extra),))
        return not missing and not extra

    def _kind(self, found: "_Found", record: Dict[str, object]) -> bool:
        """2. ``unknown_format`` for record 0; 2b. ``unexpected_kind``; whether the kind is known."""
        if found.index == 0:
            payload = record.get("payload")
            fmt = payload.get("format") if isinstance(payload, dict) else None
            if record.get("kind") != "task" or fmt != FORMAT:
                found.add(
                    "unknown_format",
                    "record 0 must be a 'task' record with payload.format %r, got kind %s, format %s"
                    % (FORMAT, _short(record.get("kind")), _short(fmt)),
                )
        if "kind" not in record:
            return False
        problem = self._kind_problem(found.index, record["kind"])
        if problem:
            found.add("unexpected_kind", problem)
        return not problem

    def _seq(self, found: "_Found", record: Dict[str, object]) -> None:
        seq = record.get("seq")
        is_int = isinstance(seq, int) and not isinstance(seq, bool)
        if "seq" in record and (not is_int or seq != self.expected_seq):
            found.add("seq_gap", "seq is %s, expected %d" % (_short(seq), self.expected_seq))
        self.expected_seq = seq + 1 if is_int else self.expected_seq + 1  # type: ignore[operator]

    def _prev(self, found: "_Found", record: Dict[str, object]) -> None:
        prev = record.get("prev")
        if "prev" in record and self.expected_prev is not None and prev != self.expected_prev:
            found.add("prev_mismatch", "prev is %s, expected %s" % (_short(prev), _short(self.expected_prev)))

    @staticmethod
    def _encoding(found: "_Found", record: Dict[str, object], raw: Optional[bytes]) -> Optional[str]:
        """5. ``unserialisable_payload``, ``not_canonical`` (with ``raw``, for a record of
        exactly the five members); 6. ``hash_mismatch``.  The computed hash, or ``None``."""
        stored = record.get("hash")
        rest = {name: record[name] for name in FIELDS[1:] if name in record}
        try:
            body = canonical_bytes(rest)
        except UnrecordableError as exc:
            found.add("unserialisable_payload", str(exc))
            return None
        computed = hashlib.sha256(body).hexdigest()
        if raw is not None and _is_hex_hash(stored):
            expected_line = _HEAD + str(stored).encode("ascii") + b'",' + body[1:]
            if raw != expected_line:
                found.add("not_canonical", _first_difference(raw, expected_line))
        if "hash" in record and stored != computed:
            found.add("hash_mismatch", "stored %s, computed %s" % (_short(stored), _short(computed)))
        return computed


class _Found:
    """The faults of one record, as :meth:`Chain.check` finds them."""

    def __init__(self, index: int, line: Optional[int]) -> None:
        self.index = index
        self.line = line
        self.faults: List[Fault] = []

    def add(self, kind: str, detail: str) -> None:
        self.faults.append(Fault(self.index, self.line, kind, detail))


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
    chain = Chain()
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


class _Tapped:
    """A binary file whose ``readline`` also hands every byte it returns to ``tap``."""

    def __init__(self, handle: BinaryIO, tap: Callable[[bytes], None]) -> None:
        self._handle = handle
        self._tap = tap

    def readline(self, size: int = -1) -> bytes:
        data = self._handle.readline(size)
        if data:
            self._tap(data)
        return data


def _read_lines(handle: "Union[BinaryIO, _Tapped]", limit: int) -> Iterator[Tuple[bytes, bool]]:
    """Yield ``(line, whole)`` with memory bounded by ``limit``.

    A line longer than ``limit`` bytes is yielded as its first ``limit``
    bytes with ``whole=False``, once the rest of it has been read and dropped
    in ``limit``-sized pieces: at each ``yield`` the file stands at the start
    of the next line, so a caller may stop and read on by itself.
    """
    while True:
        raw = handle.readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit or raw.endswith(b"\n") and len(raw) == limit + 1:
            yield raw, True
            continue
        piece = raw
        while not piece.endswith(b"\n"):
            piece = handle.readline(limit)
            if not piece:
                break
        yield raw[:limit], False


_REST_CHUNK = 1 << 20


def _count_rest(handle: BinaryIO, on_bytes: Optional[Callable[[bytes], None]]) -> Tuple[int, int]:
    """``(lines, bytes)`` left in ``handle`` from where it stands: read in 1 MiB
    chunks and counted with ``bytes.count``, in C, never judged; a last line
    without its newline counts as a line."""
    lines = size = 0
    last = b"\n"
    while True:
        chunk = handle.read(_REST_CHUNK)
        if not chunk:
            break
        if on_bytes is not None:
            on_bytes(chunk)
        lines += chunk.count(b"\n")
        size += len(chunk)
        last = chunk[-1:]
    return lines + (last != b"\n"), size


def _check_max_faults(max_faults: object) -> int:
    if isinstance(max_faults, bool) or not isinstance(max_faults, int) or max_faults < 1:
        raise BadArgumentError("max_faults", "must be an int of at least 1, got %r" % (max_faults,))
    return max_faults


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


def scan(
    path: PathLike,
    limit: int = MAX_LINE_BYTES,
    on_record: Optional[Callable[[bytes], None]] = None,
    on_bytes: Optional[Callable[[bytes], None]] = None,
    max_faults: int = MAX_FAULTS,
) -> Iterator[Tuple[int, object, List[Fault], "Chain"]]:
    """Read a transcript once, yielding ``(line, record, faults, chain)`` per line.

    ``record`` is ``None`` for a line that is not a record (its ``bad_json``
    fault is in ``faults``).  An ``OSError`` (the file cannot be opened or
    read, or is not a regular file or a pipe:
    :func:`~agentloop.transcript.durable.open_input`) becomes one
    ``unreadable`` fault, yielded with line ``0`` and record ``None``; so
    does, at the end, a ``no_records`` fault for a file that holds no record.

    At most ``max_faults`` faults are yielded for the lines.  When a line
    brings more, its first ones up to ``max_faults`` are yielded, then one
    ``too_many_faults`` fault (line ``0``, record ``None``), and the rest of
    the file is not judged: its lines and bytes are only counted
    (``chain.unexamined_lines``/``unexamined_bytes``), so that a hostile file
    costs no more than a valid one.  ``on_record``, if given, is
    called with each record's line bytes (without ``\\n``) before it is yielded;
    ``on_bytes``, if given, with every byte read from the file, in order, as it
    is read (the bytes of a line too long to judge included), so one pass can
    also hash or show the file.
    """
    room = _check_max_faults(max_faults)
    chain = Chain()
    line = 0
    try:
        with open_input(path) as handle:
            for raw, whole in _read_lines(handle if on_bytes is None else _Tapped(handle, on_bytes), limit):
                line += 1
                record, bad, text = _parse_line(line, raw, whole)
                if bad is not None:
                    record, found = None, [bad]
                else:
                    body = raw[:-1]
                    if on_record is not None:
                        on_record(body)
                    found = chain.check(record, line, body, text)
                if len(found) <= room:
                    room -= len(found)
                    yield line, record, found, chain
                    continue
                # More than max_faults: keep the first ones, count the rest of the file.
                yield line, record, found[:room], chain
                lines, size = _count_rest(handle, on_bytes)
                chain.unexamined_lines, chain.unexamined_bytes = lines, size
                detail = "more than %d faults: stopped judging after line %d; %d more line(s) (%d bytes) not examined" % (
                    max_faults, line, lines, size)
                yield 0, None, [Fault(None, None, "too_many_faults", detail)], chain
                return
    except OSError as exc:
        reason = "%s: %s" % (type(exc).__name__, exc.strerror or exc)
        yield 0, None, [Fault(None, line or None, "unreadable", reason)], chain
        return
    if not chain.index:
        what = "the file is empty" if not line else "none of its %d line(s) is a record" % (line,)
        yield 0, None, [Fault(None, None, "no_records", "it holds no record, so no run: %s" % (what,))], chain


def iter_file(
    path: PathLike, *, max_faults: Optional[int] = None
) -> Iterator[Tuple[int, Optional[object], Optional[Fault]]]:
    """Yield ``(line_number, record, fault)`` for each line of a transcript.

    Exactly one of ``record`` and ``fault`` is set: ``fault`` is a ``bad_json``
    fault for a line that is not a complete JSON text (no terminating newline,
    invalid UTF-8, a syntax error, nesting too deep to parse, too long).  An
    ``OSError`` opening or reading the file propagates, and so does one for a
    path that is not a regular file or a pipe
    (:func:`~agentloop.transcript.durable.open_input`: refused at once).

    With ``max_faults``, after that many ``bad_json`` lines the next one ends
    the iteration as a ``too_many_faults`` fault (line number ``0``) naming
    how much of the file was left unread, counted, not parsed.
    """
    room = None if max_faults is None else _check_max_faults(max_faults)
    handle: BinaryIO
    with open_input(path) as handle:
        number = 0
        for raw, whole in _read_lines(handle, MAX_LINE_BYTES):
            number += 1
            record, fault, _ = _parse_line(number, raw, whole)
            if fault is not None and room is not None:
                if not room:
                    lines, size = _count_rest(handle, None)
                    detail = "more than %d lines that are not records: stopped after line %d; %d more line(s) (%d bytes) not read" % (
                        max_faults or 0, number - 1, lines + 1, size + len(raw))
                    yield 0, None, Fault(None, None, "too_many_faults", detail)
                    return
                room -= 1
            yield number, record, fault


def verify_file(
    path: PathLike,
    *,
    expect_count: Optional[int] = None,
    expect_head: Optional[str] = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    on_line: Optional[Callable[[int, object, List[Fault]], None]] = None,
    on_bytes: Optional[Callable[[bytes], None]] = None,
    max_faults: int = MAX_FAULTS,
    require_complete: bool = False,
) -> VerifyResult:
    """Verify a transcript file, streaming it in flat memory.

    Every line that parses as JSON is a record and goes through the same
    checks as :func:`verify_records`, plus a check that the line's bytes are
    its record's RFC 8785 form.  Lines that do not parse are ``bad_json``, and
    so are lines longer than ``max_line_bytes`` (not read into memory); a
    file that cannot be opened or read, or that is not a regular file or a
    pipe (a directory, ``/dev/zero``: refused before a byte is read), is
    ``unreadable``; a file that holds no record is ``no_records``.  Never
    raises on any file content.

    At most ``max_faults`` faults (:data:`~agentloop.transcript.format.MAX_FAULTS`,
    100, by default) are kept; past them the rest of the file is counted, not
    judged, and the last fault is ``too_many_faults`` (see :func:`scan`), so
    time and memory stay those of a valid file of the same size.  Then
    ``count``, ``head`` and ``complete`` describe the part judged, and the
    checks below are not made.

    The chain alone cannot show a missing tail.  ``expect_count`` and
    ``expect_head``, an anchor held outside the file, can: a different count
    is ``count_mismatch``, a different last hash ``head_mismatch``.  With
    ``require_complete``, a run whose last record is not a ``stop`` record
    is ``incomplete``.

    ``on_line(line, record, faults)``, if given, sees each line as it is
    judged (``record`` is ``None`` for a line that is not a record, and for an
    ``unreadable`` fault at line 0), and ``on_bytes`` every byte read (see
    :func:`scan`): a listing or a page built so shows exactly the bytes the
    verdict judged, read once (a pipe works).
    """
    chain = Chain()
    faults: List[Fault] = []
    for line, record, found, chain in scan(path, max_line_bytes, on_bytes=on_bytes, max_faults=max_faults):
        faults.extend(found)
        if on_line is not None:
            on_line(line, record, found)
    head = chain.head if chain.index else None
    last = faults[-1].kind if faults else ""
    judged = last != "too_many_faults"  # else count, head and complete describe a part only
    if require_complete and judged and last not in ("unreadable", "no_records") and chain.last_kind != "stop":
        faults.append(Fault(None, None, "incomplete", "the run has no stop record: it was cut short, or is still running"))
    if judged and expect_count is not None and chain.index != expect_count:
        faults.append(
            Fault(None, None, "count_mismatch", "expected %d records, found %d" % (expect_count, chain.index))
        )
    if judged and expect_head is not None and head != expect_head:
        faults.append(Fault(None, None, "head_mismatch", "expected head %s, found %s" % (expect_head, _short(head))))
    return VerifyResult(
        ok=not faults,
        count=chain.index,
        head=head,
        faults=tuple(faults),
        complete=chain.last_kind == "stop",
        unexamined_lines=chain.unexamined_lines,
        unexamined_bytes=chain.unexamined_bytes,
    )
