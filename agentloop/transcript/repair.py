"""``repair``: remove a torn last line, the one thing a crash can leave behind.

The writer hands each record to the operating system in one ``write``, so
a process killed at any moment leaves every complete line intact and at
most one incomplete final fragment (a line with no ``\\n``).  :func:`repair`
removes that fragment and nothing else:

1. refuse anything but a regular file, then take the writer's lock (a live
   writer's file is refused);
2. find the bytes after the last ``\\n``; none means there is nothing to do;
3. refuse unless verification finds exactly one fault, the ``bad_json`` of
   that last line, and the fragment is not a JSON text (a complete record
   missing only its newline is kept: it may be a record someone saw written),
   and unless a complete record comes before it (cutting a file's only line
   would leave an empty file, which is no run at all);
4. save the fragment beside the file, as ``<file>.torn-<offset>`` (created,
   never overwritten, and made durable);
5. cut the file at the fragment's offset and ``fsync`` it;
6. verify again.

:func:`~agentloop.transcript.verify_file` never repairs: it only reports
the torn line as ``bad_json``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from .durable import check_output, fsync_directory, lock_exclusive
from ..errors import RepairRefusedError
from .format import PathLike, VerifyResult
from .scan import _parse_line
from .verify import verify_file

__all__ = ["RepairResult", "repair"]

_CHUNK = 1 << 16
#: A fragment larger than this is not parsed to see whether it is a whole JSON text.
_MAX_PARSED = 64 * 1024 * 1024


@dataclass(frozen=True)
class RepairResult:
    """What :func:`repair` did: ``removed`` bytes (0: nothing to do), saved to ``saved``."""

    path: str
    removed: int
    saved: Optional[str]
    result: VerifyResult


def _read_at(fd: int, offset: int, length: int) -> bytes:
    os.lseek(fd, offset, os.SEEK_SET)
    parts = []
    while length > 0:
        chunk = os.read(fd, min(length, _CHUNK))
        if not chunk:
            break
        parts.append(chunk)
        length -= len(chunk)
    return b"".join(parts)


def _last_newline_end(fd: int, size: int) -> int:
    """The offset just after the file's last ``\\n`` (0 when there is none)."""
    end = size
    while end > 0:
        start = max(0, end - _CHUNK)
        at = _read_at(fd, start, end - start).rfind(b"\n")
        if at >= 0:
            return start + at + 1
        end = start
    return 0


def _newlines(fd: int, end: int) -> int:
    count = at = 0
    while at < end:
        chunk = _read_at(fd, at, min(_CHUNK, end - at))
        count += chunk.count(b"\n")
        at += len(chunk)
    return count


def _is_json(fragment: bytes) -> bool:
    """Whether ``fragment`` with its newline would be a record, as the verifier parses lines (``NaN`` is not JSON)."""
    return _parse_line(1, fragment + b"\n")[1] is None


def repair(path: PathLike) -> RepairResult:
    """Remove a torn last line from a transcript, saving its bytes beside it.

    Raises :class:`~agentloop.errors.RepairRefusedError` when the file has any
    other fault or no complete record, :class:`~agentloop.errors.TranscriptLockedError` while a
    writer holds it, ``OSError`` when it cannot be read or written.
    """
    name = os.fspath(path)
    fd = os.open(
        name, os.O_RDWR | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    )
    try:
        # 1.
        check_output(fd, name)  # a directory cannot be opened so; a FIFO or a device is refused here
        lock_exclusive(fd, name)
        # 2.
        size = os.fstat(fd).st_size
        offset = _last_newline_end(fd, size)
        result = verify_file(name)
        if offset == size:
            if not result.ok:
                raise RepairRefusedError(
                    name, "its last line is complete, and it has a fault repair does not fix: %s" % (result.faults[0],)
                )
            return RepairResult(name, 0, None, result)
        # 3.
        torn_line = _newlines(fd, offset) + 1
        others = [f for f in result.faults if not (f.kind == "bad_json" and f.line == torn_line)]
        whole = size - offset <= _MAX_PARSED and _is_json(_read_at(fd, offset, size - offset))
        if whole:
            raise RepairRefusedError(
                name, "its last line is a complete JSON text missing only its newline; append the newline to keep it"
            )
        if offset == 0:
            raise RepairRefusedError(
                name,
                "it holds no complete record: its one line of %d bytes is torn, "
                "and cutting it would leave an empty file" % (size,),
            )
        if others:
            raise RepairRefusedError(name, "it has a fault besides its torn last line: %s" % (others[0],))
        # 4.
        saved = "%s.torn-%d" % (name, offset)
        _save(fd, saved, offset, size)
        # 5.
        os.ftruncate(fd, offset)
        os.fsync(fd)
    finally:
        os.close(fd)
    # 6.
    return RepairResult(name, size - offset, saved, verify_file(name))


def _save(fd: int, saved: str, offset: int, size: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        out = os.open(saved, flags, 0o644)
    except FileExistsError:
        raise RepairRefusedError(
            saved, "it is where the torn fragment is saved, and it already exists; move it away first"
        ) from None
    try:
        at = offset
        while at < size:
            view = memoryview(_read_at(fd, at, min(_CHUNK, size - at)))
            at += len(view)
            while view:
                view = view[os.write(out, view) :]
        os.fsync(out)
    finally:
        os.close(out)
    fsync_directory(os.path.dirname(os.path.abspath(saved)))
