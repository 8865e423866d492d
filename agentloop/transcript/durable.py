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
* :func:`open_input` opens a file to read, refusing at once anything that is
  neither a regular file nor a pipe (a directory, ``/dev/zero``, a socket),
  and never blocking on a FIFO that has no writer.  Every library reader of a
  transcript opens its input through it; :func:`check_output` is its
  counterpart for a file about to be written.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO, Union

from ..errors import TranscriptLockedError

try:
    import fcntl as _fcntl

    HAVE_LOCKS = True
except ImportError:  # pragma: no cover - Windows
    HAVE_LOCKS = False

__all__ = [
    "HAVE_LOCKS",
    "write_atomic",
    "fsync_directory",
    "lock_exclusive",
    "lock_shared",
    "open_input",
    "check_output",
    "file_type",
]

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


def _write_all(fd: int, data: Union[bytes, bytearray]) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_atomic(path: PathLike, data: Union[bytes, bytearray]) -> None:
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


def file_type(mode: int) -> str:
    """``a directory``, ``a character device``, ... : what ``st_mode`` names, in words."""
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a pipe"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _refusal(mode: int, path: str, allowed: str) -> OSError:
    code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
    return OSError(code, "it is %s, not %s" % (file_type(mode), allowed), path)


def open_input(path: PathLike) -> BinaryIO:
    """Open ``path`` to read as binary, refusing at once what cannot be a transcript.

    1. open it with ``O_NONBLOCK``, so that a FIFO with no writer does not
       block the open (a read then sees end of file, not a hang);
    2. ``fstat`` the open file: a regular file or a pipe (``/dev/stdin``
       fed by ``cat``) is accepted; a directory, a character or block device
       (``/dev/zero``, ``/dev/urandom``) or a socket is refused with an
       ``OSError`` (``IsADirectoryError`` for a directory, else ``EINVAL``)
       whose ``strerror`` says what it is, without reading a byte;
    3. clear ``O_NONBLOCK`` again, so reads of a pipe with a writer wait for it.

    A socket path fails at step 1 (``ENXIO``).  Raises ``OSError``; the
    caller closes the returned file.
    """
    name = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(name, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise _refusal(mode, name, "a regular file or a pipe")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_small(path: PathLike, limit: int) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes.

    For keys, checkpoints and task lists, which are read whole: a FIFO, a
    device, a directory or a socket is refused at once (never a hang, never
    an endless read), and so is a file longer than ``limit`` (never a silent
    cut, which would make two different key files the same key).  Raises
    ``OSError`` whose ``strerror`` says which.
    """
    with open_input(path) as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise _refusal(mode, os.fspath(path), "a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, "is larger than %d bytes" % (limit,), os.fspath(path))
    return data


def check_output(fd: int, path: str) -> None:
    """Refuse to write a transcript to an open ``fd`` that is not a regular file.

    A transcript is appended to, locked, truncated and fsync-ed, which only a
    regular file supports: ``/dev/null`` would swallow the evidence, a FIFO
    or a terminal would block or garble it.  Raises ``OSError`` as
    :func:`open_input` does.
    """
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        raise _refusal(mode, path, "a regular file")
