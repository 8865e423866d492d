"""Write a transcript: records appended as whole canonical lines, chained and Merkle-rooted."""

from __future__ import annotations

import hashlib
import os
from typing import Any, Dict, Mapping, Optional

from ..canonical import canonical_bytes
from .checkpoint import Checkpoint, check_key, sign
from .durable import lock_exclusive, write_atomic
from ..errors import TranscriptExistsError, UnrecordableError
from .merkle import CompactRange

from .format import GENESIS, MAX_RECORD_BYTES, PathLike, _HEAD
from .verify import _a

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
