"""Verify a transcript: one streaming, single-pass scan of its lines.

See :mod:`agentloop.transcript.format` for the format this checks and
``docs/format.md`` for its normative description.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import BinaryIO, Callable, Iterable, Iterator, List, Optional, Tuple

from ..canonical import FloatVetter, canonical_bytes, describe_integer, is_canonical_line, json_depth, parse_int
from ..errors import UnrecordableError

from .format import FIELDS, FORMAT, Fault, GENESIS, KINDS, MAX_LINE_BYTES, PARSE_DEPTH, PathLike, VerifyResult, _BODY_AT, _FIELD_SET, _HEAD, _HEX, _LATER_KINDS, _is_hex_hash, is_hash

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


class Chain:
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


def scan(
    path: PathLike, limit: int = MAX_LINE_BYTES, on_record: Optional[Callable[[bytes], None]] = None
) -> Iterator[Tuple[int, object, List[Fault], "Chain"]]:
    """Read a transcript once, yielding ``(line, record, faults, chain)`` per line.

    ``record`` is ``None`` for a line that is not a record (its ``bad_json``
    fault is in ``faults``).  An ``OSError`` becomes one ``unreadable`` fault,
    yielded with line ``0`` and record ``None``.  ``on_record``, if given, is
    called with each record's line bytes (without ``\\n``) before it is yielded.
    """
    chain = Chain()
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
    chain = Chain()
    faults: List[Fault] = []
    for _, _, found, chain in scan(path, max_line_bytes):
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
