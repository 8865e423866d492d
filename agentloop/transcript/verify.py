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

from typing import BinaryIO, Callable, Iterable, Iterator, List, Optional, Tuple

from ..errors import BadArgumentError

from .chain import Chain
from .durable import open_input
from .format import MAX_FAULTS, MAX_LINE_BYTES, Fault, PathLike, VerifyResult, _a, _short
from .scan import _check_max_faults, _count_rest, _parse_line, _read_lines, scan

__all__ = ["Chain", "scan", "iter_file", "verify_file", "verify_records"]


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
            faults.append(
                Fault(
                    chain.index, None, "unserialisable_payload", "reading the records raised %s" % (type(exc).__name__,)
                )
            )
            return faults
        index = chain.index
        try:
            faults.extend(chain.check(record, None, None))
        except Exception as exc:  # hostile Python objects only; parsed JSON cannot raise here
            chain.index = index + 1
            chain.expected_prev = None
            faults.append(
                Fault(index, None, "unserialisable_payload", "inspecting the record raised %s" % (type(exc).__name__,))
            )


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
                    detail = (
                        "more than %d lines that are not records: stopped after line %d; "
                        "%d more line(s) (%d bytes) not read"
                        % (max_faults or 0, number - 1, lines + 1, size + len(raw))
                    )
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
    workers: int = 1,
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

    With ``workers`` above 1, a regular file is cut at line boundaries and
    its parts judged in a pool of that many processes, then joined in order
    in this one (:mod:`~agentloop.transcript.parallel`):
    the verdict, every fault, its index, line and detail are those of one
    pass.  A file too small to cut (under
    :data:`~agentloop.transcript.parallel.MIN_PART_BYTES` a part), a pipe,
    and a call with ``on_line`` or ``on_bytes`` (which see every line in
    order) are read in one pass.
    """
    room = _check_max_faults(max_faults)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise BadArgumentError("workers", "must be an int of at least 1, got %r" % (workers,))
    judged = None
    if workers > 1 and on_line is None and on_bytes is None:
        from .parallel import verify_parts  # here: process pools only for a file split across workers

        judged = verify_parts(path, workers, max_line_bytes, room)
    if judged is None:
        chain, faults = _one_pass(path, max_line_bytes, on_line, on_bytes, room)
    else:
        chain, faults, _ = judged
    return _verdict(chain, faults, expect_count, expect_head, require_complete)


def _one_pass(
    path: PathLike,
    limit: int,
    on_line: Optional[Callable[[int, object, List[Fault]], None]],
    on_bytes: Optional[Callable[[bytes], None]],
    max_faults: int,
) -> Tuple[Chain, List[Fault]]:
    chain = Chain()
    faults: List[Fault] = []
    for line, record, found, chain in scan(path, limit, on_bytes=on_bytes, max_faults=max_faults):
        faults.extend(found)
        if on_line is not None:
            on_line(line, record, found)
    return chain, faults


def _verdict(
    chain: Chain, faults: List[Fault], expect_count: Optional[int], expect_head: Optional[str], require_complete: bool
) -> VerifyResult:
    """The file's verdict from the state its last line left and its faults: the expectations checked."""
    head = chain.head if chain.index else None
    last = faults[-1].kind if faults else ""
    judged = last != "too_many_faults"  # else count, head and complete describe a part only
    if require_complete and judged and last not in ("unreadable", "no_records") and chain.last_kind != "stop":
        faults.append(
            Fault(None, None, "incomplete", "the run has no stop record: it was cut short, or is still running")
        )
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
