"""Durability on disk: atomic replacement, folder fsync, one writer per file.

* :func:`write_atomic` replaces a small file so that a reader, or the disk
  after a crash, sees the old bytes or the new ones, never a mix:
  a temporary file in the same folder, written and ``fsync``-ed, then
  ``os.replace`` (atomic on POSIX and Windows), then an ``fsync`` of the
  folder so that the rename itself is durable.  Checkpoints are written so.
* :func:`lock_exclusive` / :func:`lock_shared` take an advisory
  ``fcntl.flock`` lock on an open file without waiting, and raise
  :class:`~agentloop.errors.TranscriptLockedError` when another open file
  holds a conflicting one.  The lock goes when the file is closed, or when
  its process dies.  It is advisory: it stops agentloop's own writers and
  ``repair``, not a program that ignores it.  Where ``fcntl`` is missing
  (Windows) no lock is taken and :data:`HAVE_LOCKS` is false; so is a
  folder fsync where a folder cannot be opened.
"""

from __future__ import annotations

import errno
import os
from typing import Union

from ..errors import TranscriptLockedError

try:
    import fcntl as _fcntl

    HAVE_LOCKS = True
except ImportError:  # pragma: no cover - Windows
    HAVE_LOCKS = False

__all__ = ["HAVE_LOCKS", "write_atomic", "fsync_directory", "lock_exclusive", "lock_shared"]

PathLike = Union[str, "os.PathLike[str]"]

_BUSY = frozenset((errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES))


def fsync_directory(folder: PathLike) -> None:
    """Make a folder's entries (a rename, a new file) durable.

    A no-op where a folder cannot be opened for it (Windows) or the file
    system does not support it (``EINVAL``).
    """
    try:
        fd = os.open(os.fspath(folder) or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_atomic(path: PathLike, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably.

    1. create ``.<name>.<pid>.<n>.tmp`` beside it (``O_EXCL``, mode 0644 less
       the umask), write ``data``, ``fsync``, close;
    2. ``os.replace`` it onto ``path``;
    3. ``fsync`` the folder.

    On an error before step 2 the temporary file is removed and ``path``
    is untouched; ``OSError`` propagates.
    """
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    base = os.path.basename(target)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    # 1. a fresh temporary file in the same folder (so the rename stays on one file system)
    for attempt in range(1000):
        temp = os.path.join(folder, ".%s.%d.%d.tmp" % (base, os.getpid(), attempt))
        try:
            fd = os.open(temp, flags, 0o644)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(errno.EEXIST, "no free temporary name beside %s" % (target,))
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        # 2. the atomic switch
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    # 3. the rename itself made durable
    fsync_directory(folder)


def _lock(fd: int, path: str, exclusive: bool) -> None:
    if not HAVE_LOCKS:  # pragma: no cover - Windows
        return
    try:
        _fcntl.flock(fd, (_fcntl.LOCK_EX if exclusive else _fcntl.LOCK_SH) | _fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in _BUSY:
            raise TranscriptLockedError(path) from None
        raise


def lock_exclusive(fd: int, path: str) -> None:
    """Take the writer's lock on open file ``fd``, or raise ``TranscriptLockedError``."""
    _lock(fd, path, True)


def lock_shared(fd: int, path: str) -> None:
    """Take a reader's lock (refused while a writer holds the file)."""
    _lock(fd, path, False)
