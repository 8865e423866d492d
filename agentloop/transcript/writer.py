"""Write a transcript: records appended as whole canonical lines, chained and Merkle-rooted."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from typing import Any, Mapping, Optional, Sequence, Tuple

from ..canonical import canonical_bytes, canonical_text
from .checkpoint import Checkpoint, SignerArg, check_key, check_signers, sign_checkpoint
from .durable import check_output, fsync_directory, lock_exclusive, write_atomic
from ..errors import (
    RunConfigError,
    TranscriptClosedError,
    TranscriptEmptyError,
    TranscriptExistsError,
    UnrecordableError,
    WrongTypeError,
)
from .merkle import CompactRange

from .format import GENESIS, MAX_RECORD_BYTES, MAX_RECORD_BYTES_LIMIT, PathLike, _HEAD, _a


def record_line(
    kind: str, payload: Mapping[str, Any], prev: str, seq: int, payload_text: Optional[str] = None
) -> Tuple[str, bytes]:
    """A record's hash and its line, newline included (``docs/format.md`` sections 2 and 4): the
    RFC 8785 bytes of ``{kind, payload, prev, seq}`` with ``"hash"`` put first.  ``payload_text``,
    when the caller has it, is the payload's RFC 8785 text, spliced in rather than encoded again.
    Raises :class:`~agentloop.errors.UnrecordableError` for a payload that cannot be recorded."""
    if payload_text is not None:  # RFC 8785 section 3.2.3: kind < payload < prev < seq
        kind_text = _KIND_TEXTS.get(kind) if type(kind) is str else None
        body = (
            '{"kind":%s,"payload":%s,"prev":"%s","seq":%d}'
            % (kind_text or canonical_text(kind, "$.kind"), payload_text, prev, seq)
        ).encode("utf-8")
    else:
        body = canonical_bytes({"kind": kind, "payload": payload, "prev": prev, "seq": seq})
    digest = hashlib.sha256(body).hexdigest()
    return digest, _HEAD + digest.encode("ascii") + b'",' + body[1:] + b"\n"


# The RFC 8785 text of each record kind the loop writes (docs/format.md section 3), made once.
_KIND_TEXTS = {kind: canonical_text(kind) for kind in ("task", "assistant", "tool", "stop")}


def _beside(path: str) -> str:
    """Create an empty file beside ``path`` (``.<name>.<pid>.<n>.new``, ``O_EXCL``); return its name.

    An ``OSError`` (a missing folder, no permission) names ``path``, not the hidden name.
    """
    folder, base = os.path.split(os.path.abspath(path))
    for attempt in range(1000):
        name = os.path.join(folder, ".%s.%d.%d.new" % (base, os.getpid(), attempt))
        try:
            os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644))
            return name
        except FileExistsError:
            continue
        except OSError as exc:
            raise type(exc)(exc.errno, exc.strerror, path) from None
    raise FileExistsError(errno.EEXIST, "no free name beside %s" % (path,))


def _link_new(beside: str, path: str) -> None:
    """Put ``beside`` in place at ``path``, which must not exist (``FileExistsError`` if it does)."""
    try:
        os.link(beside, path)  # fails if path exists: no other file is ever replaced
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links: claim the name, then move the file onto it
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644))
        os.replace(beside, path)
        return
    os.unlink(beside)


class TranscriptWriter:
    """Append records to a new transcript file, one whole line per ``write``.

    Each record is encoded completely before anything is written, so a value
    that cannot be recorded raises :class:`~agentloop.errors.UnrecordableError`
    and leaves the file as it was.  Each line goes to the operating system in
    one ``write`` as soon as it is appended (``fsync=True`` also forces it,
    and once the file's name, to the disk), so a process that dies leaves
    every earlier record complete.  :meth:`sync` and :meth:`checkpoint` force
    the records and the name to the disk whatever the durability.

    The file must not exist unless ``overwrite=True``: a transcript is
    evidence and is never replaced by accident.  The new file is written
    beside the path (``.<name>.<pid>.<n>.new``) and put in place once it
    holds a record, so a process killed before its first record is on disk
    leaves no file at the path (never an empty one, which would hold no run).
    With ``overwrite=True`` an old transcript stays whole until the new one
    holds its first turn (its second record: a run's task record, then its
    first assistant or stop record): renamed onto it then, so a run refused,
    interrupted or killed before that -- during its first model call, say --
    leaves the old one as it was.  The writer holds an
    advisory lock on it (:mod:`agentloop.transcript.durable`) until :meth:`close`: a
    second writer is refused with
    :class:`~agentloop.errors.TranscriptLockedError` before it truncates
    anything.  It keeps the RFC 6962 root of the records written
    (:attr:`root`) and writes a checkpoint whenever asked (:meth:`checkpoint`);
    with ``tree=False`` it keeps no tree (a run without a checkpoint: nothing
    asks for its root) and has neither.

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
        tree: bool = True,
    ) -> None:
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise WrongTypeError("a transcript path", "a str or an os.PathLike", path)
        if not isinstance(tree, bool):
            raise RunConfigError("tree", "must be True or False, got %s" % (type(tree).__name__,))
        self.path = os.fspath(path)
        self._fsync = fsync
        self._limit = _record_limit(max_record_bytes)
        # (old file's descriptor or -1, the new file beside it, the record count that puts it in place, exclusive)
        self._pending: Optional[Tuple[int, str, int, bool]] = None
        old, fd = self._open_old(overwrite), -1
        try:
            beside = _beside(self.path)
            self._pending = (old, beside, 2 if old >= 0 and os.fstat(old).st_size else 1, not overwrite)
        except BaseException:
            if old >= 0:
                os.close(old)
            raise
        try:
            fd = os.open(beside, os.O_WRONLY | getattr(os, "O_BINARY", 0))
            lock_exclusive(fd, self.path)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            self._forget_new()
            raise
        self._fd: Optional[int] = fd
        self._named = False  # whether the folder was fsynced since the file took its name
        self._seq = 0
        self._head = GENESIS
        self._first = GENESIS
        self._range: Optional[CompactRange] = CompactRange() if tree else None

    def _open_old(self, overwrite: bool) -> int:
        """The file already at the path, opened and locked (it stays until the new one replaces it); -1 for none.

        Refused at once: an existing file without ``overwrite`` (``TranscriptExistsError``),
        and a path that is not a regular file (``/dev/null``, a FIFO) or is held by a live writer.
        """
        if not os.path.lexists(self.path):
            return -1
        if not overwrite:
            raise TranscriptExistsError(self.path)
        # O_NONBLOCK: a FIFO with no reader fails at once (ENXIO) instead of blocking the open.
        flags = os.O_WRONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
        fd = os.open(self.path, flags)
        try:
            check_output(fd, self.path)  # before the lock: /dev/null, a FIFO
            if hasattr(os, "set_blocking"):
                os.set_blocking(fd, True)
            lock_exclusive(fd, self.path)  # a second writer is refused before anything is written
        except BaseException:
            os.close(fd)
            raise
        return fd

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
        writer._pending = None
        writer._fd = fd
        writer._named = False
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
        :func:`~agentloop.canonical.canonical_text_spliced` around values encoded
        once): the record is built around it, its other members encoded here.
        """
        if self._fd is None:
            raise TranscriptClosedError(self.path)
        digest, line = record_line(kind, payload, self._head, self._seq, payload_text)
        if len(line) > self._limit:
            raise UnrecordableError(
                "$", "%s record of %d bytes exceeds max_record_bytes %d" % (_a(kind), len(line), self._limit)
            )
        written = os.write(self._fd, line)
        while written < len(line):  # a short write (a signal, a full pipe): the rest, until all of it is written
            written += os.write(self._fd, memoryview(line)[written:])
        if self._fsync:
            os.fsync(self._fd)
            if not self._named and self._pending is None:  # a continuing writer's file: its name too, once
                self._sync_name()
        if self._range is not None:
            self._range.append_data(memoryview(line)[:-1])  # RFC 6962 leaf: the line without its newline
        if self._pending is not None and self._seq + 1 >= self._pending[2]:
            self._publish()
        if not self._seq:
            self._first = digest
        self._seq += 1
        self._head = digest
        return digest

    @property
    def root(self) -> str:
        """The hex RFC 6962 Merkle root over the record lines written so far.

        Raises :class:`~agentloop.errors.RunConfigError` for a writer made with ``tree=False``.
        """
        return self._tree().root().hex()

    def _tree(self) -> CompactRange:
        """The Merkle tree kept; a writer made with ``tree=False`` raises ``RunConfigError``."""
        if self._range is None:
            raise RunConfigError("tree", "this writer keeps no Merkle tree (tree=False): it has no root or checkpoint")
        return self._range

    def tree_head(self, key: Optional[bytes] = None, signer: SignerArg = None) -> Checkpoint:
        """The checkpoint of the records written so far, signed by ``key`` and ``signer`` if given.

        ``key`` is an HMAC key (bytes); ``signer`` one note signer
        (:class:`~agentloop.signing.Ed25519Signer`, ...) or a list of them:
        :func:`~agentloop.transcript.checkpoint.sign_checkpoint`.  Raises
        :class:`~agentloop.errors.TranscriptEmptyError` (a ``ValueError``) before the first record
        (record 0 names the run).
        """
        self._tree()  # no tree, no checkpoint: refused first, as for an empty writer
        if not self._seq:
            raise TranscriptEmptyError(self.path)
        head = Checkpoint(self._first, self._seq, self.root, self._head)
        return sign_checkpoint(head, key, signer)

    def checkpoint(self, path: PathLike, key: Optional[bytes] = None, signer: SignerArg = None) -> Checkpoint:
        """Write the checkpoint of the records so far to ``path``, signed as :meth:`tree_head`; return it.

        Write order: 0. it is signed (a signer that fails raises before
        anything is written); 1. the records are made durable (``fsync``),
        whatever the writer's durability; 2. the checkpoint replaces ``path``
        atomically (:func:`~agentloop.transcript.durable.write_atomic`).  So a crash
        leaves a checkpoint that the transcript on disk still extends.
        """
        if self._fd is None:
            raise TranscriptClosedError(self.path)
        if key is not None:
            key = check_key(key)
        check_signers(signer)
        head = self.tree_head(key, signer)
        if self._pending is not None:  # a checkpoint describes the file at the path
            self._publish()
        self.sync()
        write_atomic(path, head.to_bytes())
        return head

    def sync(self) -> None:
        """Force the records written so far to the disk (``fsync``), whatever the writer's durability,
        and the file's name once it is in place (its folder's ``fsync``, once)."""
        if self._fd is None:
            raise TranscriptClosedError(self.path)
        os.fsync(self._fd)
        if self._pending is None and not self._named:
            self._sync_name()

    def _sync_name(self) -> None:
        """Make the file's name durable: its folder's ``fsync``."""
        fsync_directory(os.path.dirname(os.path.abspath(self.path)))
        self._named = True

    def close(self) -> None:
        """Close the file; further appends raise ``ValueError``.

        A writer whose file was not yet put in place (no record; with
        ``overwrite``, no first turn) removes it: there is no file at the path,
        or the old transcript stays as it was.
        """
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
        self._forget_new()

    def _publish(self) -> None:
        """Put the new file in place: beside the path until now; the old one, if any, is replaced and let go."""
        assert self._pending is not None
        old, beside, _, exclusive = self._pending
        try:
            if exclusive:
                _link_new(beside, self.path)
            else:
                os.replace(beside, self.path)
        except FileExistsError:  # someone made the path meanwhile: never replaced
            self._forget_new()
            raise TranscriptExistsError(self.path) from None
        self._pending = None
        if self._fsync:  # the name as durable as the records (flush: a process that dies keeps it)
            self._sync_name()
        if old >= 0:
            os.close(old)

    def _forget_new(self) -> None:
        """Keep what is at the path: remove the new file beside it and let go of the old one's lock."""
        if self._pending is None:
            return
        old, beside, _, _ = self._pending
        self._pending = None
        try:
            os.unlink(beside)
        except OSError:
            pass
        if old >= 0:
            os.close(old)

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
            "%d is more than %d, the longest line a verifier reads (MAX_LINE_BYTES)"
            % (max_record_bytes, MAX_RECORD_BYTES_LIMIT),
        )
    return max_record_bytes
