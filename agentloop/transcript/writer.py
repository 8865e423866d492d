"""Write a transcript: records appended as whole canonical lines, chained and Merkle-rooted."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from ..canonical import canonical_bytes, canonical_text
from .checkpoint import Checkpoint, SignerArg, check_key, check_signers, sign_checkpoint
from .durable import check_output, fsync_directory, lock_exclusive, write_atomic
from ..errors import RunConfigError, TranscriptClosedError, TranscriptEmptyError, TranscriptExistsError, UnrecordableError, WrongTypeError
from .merkle import CompactRange

from .format import GENESIS, MAX_RECORD_BYTES, MAX_RECORD_BYTES_LIMIT, PathLike, _HEAD, _a

def _beside(path: str) -> str:
    """Create an empty file beside ``path`` (``.<name>.<pid>.<n>.new``, ``O_EXCL``); return its name."""
    folder, base = os.path.split(os.path.abspath(path))
    for attempt in range(1000):
        name = os.path.join(folder, ".%s.%d.%d.new" % (base, os.getpid(), attempt))
        try:
            os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644))
            return name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name beside %s" % (path,))


class TranscriptWriter:
    """Append records to a new transcript file, one whole line per ``write``.

    Each record is encoded completely before anything is written, so a value
    that cannot be recorded raises :class:`~agentloop.errors.UnrecordableError`
    and leaves the file as it was.  Each line goes to the operating system in
    one ``write`` as soon as it is appended (``fsync=True`` also forces it to
    the disk), so a process that dies leaves every earlier record complete.

    The file must not exist unless ``overwrite=True``: a transcript is
    evidence and is never replaced by accident.  With ``overwrite=True`` an
    old transcript stays whole until the new one has its first record: the
    new file is written beside it (``.<name>.<pid>.<n>.new``) and renamed
    onto it then, so a run refused or killed before that leaves it as it was.  The writer holds an
    advisory lock on it (:mod:`agentloop.durable`) until :meth:`close`: a
    second writer is refused with
    :class:`~agentloop.errors.TranscriptLockedError` before it truncates
    anything.  It keeps the RFC 6962 root of the records written
    (:attr:`root`) and writes a checkpoint whenever asked (:meth:`checkpoint`).

    No line may be longer than ``max_record_bytes`` (its newline included;
    a longer record raises ``UnrecordableError``).  The limit can never
    exceed :data:`~agentloop.transcript.format.MAX_RECORD_BYTES_LIMIT`, the
    verifier's line limit (16 MiB): a larger value raises
    :class:`~agentloop.errors.RunConfigError` before the file is touched, and
    ``None`` means that limit.  The path must be (or become) a regular file:
    a directory, a device such as ``/dev/null`` or a FIFO raises ``OSError``
    before anything is truncated, and opening never blocks.
    """

    def __init__(
        self,
        path: PathLike,
        *,
        overwrite: bool = False,
        fsync: bool = False,
        max_record_bytes: Optional[int] = MAX_RECORD_BYTES,  # None: MAX_RECORD_BYTES_LIMIT
    ) -> None:
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise WrongTypeError("a transcript path", "a str or an os.PathLike", path)
        self.path = os.fspath(path)
        self._fsync = fsync
        self._limit = _record_limit(max_record_bytes)
        # Truncated only once the lock is held, so a refused second writer changes nothing.
        # O_NONBLOCK: a FIFO with no reader fails at once (ENXIO) instead of blocking the open.
        flags = os.O_WRONLY | os.O_CREAT | (0 if overwrite else os.O_EXCL)
        flags |= getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
        try:
            fd = os.open(self.path, flags, 0o644)
        except FileExistsError:
            raise TranscriptExistsError(self.path) from None
        try:
            check_output(fd, self.path)  # before the lock and the truncation: /dev/null, a FIFO
            if hasattr(os, "set_blocking"):
                os.set_blocking(fd, True)
            lock_exclusive(fd, self.path)
            # The old transcript stays until this one has its first record:
            # written beside it, renamed onto it then; its lock is held till then.
            self._old: Optional[Tuple[int, str]] = None
            if overwrite and os.fstat(fd).st_size:
                self._old, fd = (fd, _beside(self.path)), -1
                fd = os.open(self._old[1], os.O_WRONLY | getattr(os, "O_BINARY", 0))
                lock_exclusive(fd, self.path)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            if getattr(self, "_old", None) is not None:
                self._forget_old()
            raise
        self._fd: Optional[int] = fd
        self._seq = 0
        self._head = GENESIS
        self._first = GENESIS
        self._range = CompactRange()

    @classmethod
    def continuing(
        cls,
        path: PathLike,
        fd: int,
        lines: Sequence[bytes],
        *,
        fsync: bool = False,
        max_record_bytes: Optional[int] = MAX_RECORD_BYTES,
    ) -> "TranscriptWriter":
        """A writer that appends to the transcript open on ``fd``, whose lines are ``lines``.

        For :func:`agentloop.resume`: the caller has verified ``lines`` (each
        with its newline), holds :func:`~.durable.lock_exclusive` on ``fd``
        and has positioned it at the end; the writer owns ``fd`` from here.
        Its chain and RFC 6962 tree are those ``__init__`` would have
        reached after writing these very lines.
        """
        if not lines:
            raise RunConfigError("lines", "a transcript to continue has at least one record")
        writer = cls.__new__(cls)
        writer.path = os.fspath(path)
        writer._fsync = fsync
        writer._limit = _record_limit(max_record_bytes)
        writer._old = None
        writer._fd = fd
        writer._seq = len(lines)
        writer._first = json.loads(lines[0])["hash"]
        writer._head = json.loads(lines[-1])["hash"]
        writer._range = CompactRange()
        for line in lines:
            writer._range.append_data(line[:-1])  # RFC 6962 leaf: the line without its newline
        return writer

    @property
    def count(self) -> int:
        """How many records have been written."""
        return self._seq

    @property
    def head(self) -> str:
        """The hash of the last record written (64 zeros before the first)."""
        return self._head

    def append(self, kind: str, payload: Mapping[str, Any], payload_text: Optional[str] = None) -> str:
        """Encode and write one record; return its hash.

        ``payload_text``, when given, is the payload's RFC 8785 text already
        made (``canonical_text(payload, "$.payload", 1)``, e.g. by
        :func:`~agentloop.canonical.canonical_text_with` around values encoded
        once): the record is built around it, its other members encoded here.
        """
        if self._fd is None:
            raise TranscriptClosedError(self.path)
        if payload_text is not None:  # RFC 8785 section 3.2.3: kind < payload < prev < seq
            body = ("{\"kind\":%s,\"payload\":%s,\"prev\":\"%s\",\"seq\":%d}" % (
                canonical_text(kind, "$.kind"), payload_text, self._head, self._seq)).encode("utf-8")
        else:
            record: Dict[str, Any] = {"kind": kind, "payload": payload, "prev": self._head, "seq": self._seq}
            body = canonical_bytes(record)
        digest = hashlib.sha256(body).hexdigest()
        line = memoryview(_HEAD + digest.encode("ascii") + b'",' + body[1:] + b"\n")
        if len(line) > self._limit:
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
        if self._old is not None:  # the first record is written: it replaces the old transcript now
            os.replace(self._old[1], self.path)
            fsync_directory(os.path.dirname(os.path.abspath(self.path)))
            os.close(self._old[0])
            self._old = None
        if not self._seq:
            self._first = digest
        self._seq += 1
        self._head = digest
        return digest

    @property
    def root(self) -> str:
        """The hex RFC 6962 Merkle root over the record lines written so far."""
        return self._range.root().hex()

    def tree_head(self, key: Optional[bytes] = None, signer: SignerArg = None) -> Checkpoint:
        """The checkpoint of the records written so far, signed by ``key`` and ``signer`` if given.

        ``key`` is an HMAC key (bytes); ``signer`` one note signer
        (:class:`~agentloop.signing.Ed25519Signer`, ...) or a list of them:
        :func:`~agentloop.transcript.checkpoint.sign_checkpoint`.  Raises
        :class:`~agentloop.errors.TranscriptEmptyError` (a ``ValueError``) before the first record (record 0 names the run).
        """
        if not self._seq:
            raise TranscriptEmptyError(self.path)
        head = Checkpoint(self._first, self._seq, self.root, self._head)
        return sign_checkpoint(head, key, signer)

    def checkpoint(self, path: PathLike, key: Optional[bytes] = None, signer: SignerArg = None) -> Checkpoint:
        """Write the checkpoint of the records so far to ``path``, signed as :meth:`tree_head`; return it.

        Write order: 0. it is signed (a signer that fails raises before
        anything is written); 1. the records are made durable (``fsync``),
        whatever the writer's durability; 2. the checkpoint replaces ``path``
        atomically (:func:`~agentloop.durable.write_atomic`).  So a crash
        leaves a checkpoint that the transcript on disk still extends.
        """
        if self._fd is None:
            raise TranscriptClosedError(self.path)
        if key is not None:
            key = check_key(key)
        check_signers(signer)
        head = self.tree_head(key, signer)
        os.fsync(self._fd)
        write_atomic(path, head.to_bytes())
        return head

    def close(self) -> None:
        """Close the file; further appends raise ``ValueError``.

        A writer that replaced an old transcript but wrote no record leaves
        the old one as it was.
        """
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
        if self._old is not None:
            self._forget_old()

    def _forget_old(self) -> None:
        """Keep the old transcript: remove the new file beside it and let go of its lock."""
        assert self._old is not None
        old_fd, beside = self._old
        self._old = None
        try:
            os.unlink(beside)
        except OSError:
            pass
        os.close(old_fd)

    def __enter__(self) -> "TranscriptWriter":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _record_limit(max_record_bytes: Optional[int]) -> int:
    """``max_record_bytes`` checked: a line longer than the verifier reads would be a bad_json of our own making."""
    if max_record_bytes is None:
        return MAX_RECORD_BYTES_LIMIT
    if isinstance(max_record_bytes, bool) or not isinstance(max_record_bytes, int) or max_record_bytes < 1:
        raise RunConfigError("max_record_bytes", "must be a positive int, got %s" % (type(max_record_bytes).__name__,))
    if max_record_bytes > MAX_RECORD_BYTES_LIMIT:
        raise RunConfigError(
            "max_record_bytes",
            "%d is more than %d, the longest line a verifier reads (MAX_LINE_BYTES)" % (max_record_bytes, MAX_RECORD_BYTES_LIMIT),
        )
    return max_record_bytes
