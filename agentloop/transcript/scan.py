"""Reading a transcript's lines in bounded memory, and judging them in order with a :class:`~.chain.Chain`.

Every reader here opens its input with
:func:`~agentloop.transcript.durable.open_input`: a directory, a device or a
socket is ``unreadable`` at once, and a FIFO without a writer never blocks.
"""

from __future__ import annotations

import json
from typing import BinaryIO, Callable, Iterator, List, Optional, Tuple, Union

from ..canonical import json_depth, parse_int
from ..errors import BadArgumentError

from .chain import Chain
from .durable import open_input
from .format import MAX_FAULTS, MAX_LINE_BYTES, PARSE_DEPTH, Fault, PathLike

__all__ = ["scan"]


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


class _NotJson(ValueError):
    """A token Python's parser takes and JSON has not: ``NaN``, ``Infinity``, ``-Infinity``."""


def _no_constant(token: str) -> object:
    raise _NotJson("%s is not a JSON number (RFC 8259 section 6)" % (token,))


# The C scanner, with NaN and the infinities refused (the hook runs only on those tokens).
_SCAN_ONCE: Callable[[str, int], Tuple[object, int]] = getattr(
    json.JSONDecoder(parse_constant=_no_constant), "scan_once"
)


def _loads(text: str) -> object:
    """``json.loads(text)`` (``NaN``/``Infinity`` refused), without its wrapper for the common case of a
    line that is one JSON text."""
    try:
        value, end = _SCAN_ONCE(text, 0)
    except StopIteration:  # no value at 0 (whitespace first, or none): json.loads says which
        return json.loads(text, parse_constant=_no_constant)
    return value if end == len(text) else json.loads(text, parse_constant=_no_constant)


def _parse_line(
    number: int, raw: bytes, whole: bool = True, loads: Callable[[str], object] = _loads
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
    try:  # NaN, Infinity, -Infinity are not JSON (RFC 8259 section 6): _NotJson, so bad_json, not a record
        try:
            return loads(text), None, text
        except _NotJson:
            raise
        except ValueError:
            return json.loads(text, parse_int=parse_int, parse_constant=_no_constant), None, text
    except RecursionError:
        return None, Fault(None, number, "bad_json", "nesting too deep to parse"), ""
    except ValueError as exc:
        return None, Fault(None, number, "bad_json", "not JSON: %s" % (exc,)), ""


def judge_lines(
    handle: BinaryIO,
    chain: Chain,
    limit: int,
    max_faults: int,
    room: int,
    line: int = 0,
    on_record: Optional[Callable[[bytes], None]] = None,
    on_bytes: Optional[Callable[[bytes], None]] = None,
    beyond: Tuple[int, int] = (0, 0),
) -> Iterator[Tuple[int, object, List[Fault], Chain]]:
    """Judge the lines of ``handle`` from where it stands with ``chain``, as :func:`scan` does.

    Lines are numbered after ``line``; at most ``room`` faults are yielded
    before ``too_many_faults`` (whose detail names ``max_faults``), and
    ``beyond`` (lines, bytes) is what lies after ``handle``'s end in the file,
    added to the count of what was left unexamined.
    """
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
        lines, size = lines + beyond[0], size + beyond[1]
        chain.unexamined_lines, chain.unexamined_bytes = lines, size
        detail = "more than %d faults: stopped judging after line %d; %d more line(s) (%d bytes) not examined" % (
            max_faults,
            line,
            lines,
            size,
        )
        yield 0, None, [Fault(None, None, "too_many_faults", detail)], chain
        return


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
            for judged in judge_lines(handle, chain, limit, max_faults, room, 0, on_record, on_bytes):
                yield judged
                if not judged[0]:
                    return  # too_many_faults: the rest was counted, not judged
                line = judged[0]
    except OSError as exc:
        yield 0, None, [unreadable(exc, line)], chain
        return
    if not chain.index:
        yield 0, None, [no_records(line)], chain


def unreadable(exc: OSError, line: int) -> Fault:
    """The ``unreadable`` fault of an ``OSError`` met after ``line`` lines."""
    return Fault(None, line or None, "unreadable", "%s: %s" % (type(exc).__name__, exc.strerror or exc))


def no_records(lines: int) -> Fault:
    """The ``no_records`` fault of a file of ``lines`` lines, none of them a record."""
    what = "the file is empty" if not lines else "none of its %d line(s) is a record" % (lines,)
    return Fault(None, None, "no_records", "it holds no record, so no run: %s" % (what,))
