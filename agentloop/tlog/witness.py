"""A witness that needs no log: C2SP ``tlog-witness`` ``add-checkpoint``, from the request body alone.

In C2SP's model a witness keeps, for each log it knows, only the latest
checkpoint it cosigned, and checks each new one against it with the
consistency proof the log sends (tlog-witness, "Introduction": "the witness
is only required to keep track of the latest checkpoint it observed and
verified").  :meth:`Witness.add_checkpoint` answers one request body
(:mod:`agentloop.signing.witness` parses it) with the status code and body
tlog-witness "add-checkpoint" prescribes, checked in this order:

1. the body is a well-formed request whose checkpoint is a tlog-checkpoint
   (and, for agentloop's origins, an agentloop checkpoint): else **400**;
2. the origin is one the witness knows: else **404** ("If the checkpoint
   origin is unknown, the witness MUST respond with a 404");
3. the checkpoint is signed by a trusted log key, and no trusted key's
   signature fails (signed-note rules): else **403**;
4. the old size is at most the checkpoint's size: else **400**;
5. the old size is the size of the latest checkpoint cosigned for the
   origin (0 if none): else **409**, the body that size in decimal and a
   newline, ``Content-Type: text/x.tlog.size``;
6. a checkpoint of size 0 has the empty tree's root (RFC 6962 section
   2.1): else **422**;
7. no proof when the old size is 0; otherwise the consistency proof from
   the stored root to the new one verifies (RFC 9162 section 2.1.4.2), and
   equal sizes have equal roots: else **422**;
8. cosign (tlog-cosignature ``cosignature/v1``, a timestamp that "MUST NOT
   be zero" and does not exceed 2^63-1), persist the new checkpoint
   *before* answering ("The witness MUST persist the new checkpoint before
   responding"), then **200** with the cosignature line.

Steps 5 to 8 run under one lock, so two requests cannot both pass the size
check and roll the state back (the race tlog-witness describes).  The state
is a JSON file (format ``agentloop-witness-state/2``) replaced atomically;
it also holds each log's latest cosigned checkpoint, which
:meth:`Witness.latest` serves to monitors (tlog-witness "Monitor Retrieval
Mechanism").  Several processes may share a state file (``witness serve``
and ``cosign --request`` or ``cosign --transcript``): steps 5 to 8 also
hold an advisory lock on ``<state>.lock`` (:func:`state_lock`) and read the
file again under it, so no process answers from a size another one has
moved past (which would cosign a fork).  Where the OS has no ``flock``
(Windows) one process must own the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, Optional, Set, Tuple, Union

from ..batch.ledger import MANIFEST_ORIGIN_PREFIX, parse_manifest_checkpoint
from ..errors import (
    BadSignatureError,
    MalformedCheckpointError,
    MalformedNoteError,
    ProofError,
    SigningKeyError,
    TranscriptLockedError,
    WitnessStateError,
)
from ..signing.cosignature import CosignatureSigner, CosignatureVerifier
from ..signing.note import Note, NoteSignature, Verifier, parse_note, sign_note, verify_note
from ..signing.witness import AddCheckpointRequest, format_add_checkpoint_response, parse_add_checkpoint_request
from ..transcript.checkpoint import ORIGIN_PREFIX, parse_checkpoint
from ..transcript.durable import lock_exclusive, read_small, write_atomic
from ..transcript.merkle import EMPTY_ROOT, verify_consistency
from .tree_head import MAX_TREE_SIZE, TreeHead, parse_tree_head

__all__ = [
    "STATE_FORMAT",
    "state_lock",
    "SIZE_CONTENT_TYPE",
    "WitnessPolicy",
    "WitnessAnswer",
    "Held",
    "WitnessState",
    "Witness",
    "load_state",
    "save_state",
    "state_lock",
    "is_agentloop_origin",
]

#: The state file's format name.  ``agentloop-witness-state/1`` files (``agentloop cosign --transcript``) are read too.
STATE_FORMAT = "agentloop-witness-state/2"
_OLD_STATE_FORMAT = "agentloop-witness-state/1"
#: tlog-witness: the 409 response's content type.
SIZE_CONTENT_TYPE = "text/x.tlog.size"
_TEXT = "text/plain; charset=utf-8"
_MAX_STATE_BYTES = 64 << 20
#: Seconds a process waits for another to finish with the state file.
LOCK_SECONDS = 10.0
_HEX64 = re.compile(r"\A[0-9a-f]{64}\Z")
_AGENTLOOP_RUN = re.compile(r"\A%s[0-9a-f]{64}\Z" % (re.escape(ORIGIN_PREFIX),))
_AGENTLOOP_ORIGIN = re.compile(
    r"\A(?:%s|%s)[0-9a-f]{64}\Z" % (re.escape(ORIGIN_PREFIX), re.escape(MANIFEST_ORIGIN_PREFIX))
)


@dataclass(frozen=True)
class WitnessPolicy:
    """The logs a witness knows: the log ``keys`` it trusts and, when given, the exact ``origins``.

    With no ``origins``, every agentloop run (``agentloop/1/<hash>``) and
    batch (``agentloop-manifest/1/<hash>``) is a log it knows: each run is its
    own log, signed by an operator key that outlives it.  Every key is
    trusted for every origin known.
    """

    keys: Tuple[Verifier, ...]
    origins: Tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.keys:
            raise SigningKeyError("trusted", "a witness needs the log's public key")
        for key in self.keys:
            if isinstance(key, CosignatureVerifier):
                raise SigningKeyError(
                    "trusted %s" % (key.name,), "is a witness key (cosignature/v1): a log signs with a note key"
                )

    def knows(self, origin: str) -> bool:
        """Whether ``origin`` is a log this witness cosigns."""
        if self.origins:
            return origin in self.origins
        return is_agentloop_origin(origin)


def is_agentloop_origin(origin: str) -> bool:
    """Whether ``origin`` is an agentloop run's (``agentloop/1/<hash>``) or batch's (``agentloop-manifest/1/...``)."""
    return _AGENTLOOP_ORIGIN.match(origin) is not None


@dataclass(frozen=True)
class WitnessAnswer:
    """An HTTP answer: ``status``, ``body``, ``content_type``; ``reason`` one line saying why.

    On 200, ``checkpoint`` is the cosigned checkpoint's bytes.
    """

    status: int
    body: bytes
    content_type: str
    reason: str
    checkpoint: Optional[bytes] = None


def _answer(status: int, reason: str) -> WitnessAnswer:
    return WitnessAnswer(status, (reason + "\n").encode("utf-8"), _TEXT, reason)


@dataclass(frozen=True)
class Held:
    """What a witness holds for one log: the ``size`` and ``root`` it last cosigned, and that ``checkpoint``.

    An entry moved over from an ``agentloop-witness-state/1`` file has no
    checkpoint, only the ``head`` line's hash that format kept.
    """

    size: int
    root: bytes
    checkpoint: Optional[bytes] = None
    head: Optional[str] = None

    def head_hash(self) -> Optional[str]:
        """The hex ``head`` of an agentloop run's checkpoint (its extension line), if known."""
        if self.checkpoint is None:
            return self.head
        line = self.checkpoint.split(b"\n")[3].decode("utf-8")
        return line[5:] if line.startswith("head ") else None


WitnessState = Dict[str, Held]


def _hex64(value: object) -> bool:
    return isinstance(value, str) and _HEX64.match(value) is not None


def _moved(origin: str, entry: Dict[str, object], keys: Set[str], size: int, root: str) -> Optional[Held]:
    """An entry with a ``head`` and no checkpoint (format /1, or moved from it): an agentloop run's only."""
    head = entry.get("head")
    if set(entry) != keys or not _AGENTLOOP_RUN.match(origin) or not _hex64(head) or size < 1:
        return None
    return Held(size, bytes.fromhex(root), None, str(head))


def _entry(origin: object, entry: object, old: bool) -> Optional[Held]:
    """One state entry, or ``None`` when it is malformed.

    /1: ``size, root, head``; /2: ``size, root, checkpoint`` (``null``, and a ``head``, when moved from /1).
    """
    if not isinstance(origin, str) or not isinstance(entry, dict):
        return None
    size, root, text = entry.get("size"), entry.get("root"), entry.get("checkpoint")
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_TREE_SIZE or not _hex64(root):
        return None
    if old or text is None:
        keys = {"size", "root", "head"} if old else {"size", "root", "checkpoint", "head"}
        return _moved(origin, entry, keys, size, str(root))
    if set(entry) != {"size", "root", "checkpoint"} or not isinstance(text, str):
        return None
    try:
        head = parse_tree_head(parse_note(text.encode("utf-8")))
    except MalformedNoteError:
        return None
    if (head.origin, head.size, head.root.hex()) != (origin, size, root):
        return None
    return Held(size, head.root, text.encode("utf-8"))


def load_state(path: str) -> WitnessState:
    """A state file (format /2, or /1 as ``agentloop cosign --transcript`` wrote it before); ``{}`` when there is none.

    Raises :class:`~agentloop.errors.WitnessStateError` naming the file and what is wrong.
    """
    if not os.path.lexists(path):
        return {}
    try:
        data = read_small(path, _MAX_STATE_BYTES)
    except OSError as exc:
        raise WitnessStateError(path, "cannot read the witness state: %s" % (exc.strerror or exc,)) from None
    bad = WitnessStateError(path, "is not a witness state file (%s)" % (STATE_FORMAT,))
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise bad from None
    if not isinstance(doc, dict) or set(doc) != {"format", "logs"} or not isinstance(doc["logs"], dict):
        raise bad
    if doc["format"] not in (STATE_FORMAT, _OLD_STATE_FORMAT):
        raise bad
    state: WitnessState = {}
    for origin, entry in doc["logs"].items():
        held = _entry(origin, entry, doc["format"] == _OLD_STATE_FORMAT)
        if held is None:
            raise WitnessStateError(path, "the witness state's entry for %s is malformed" % (str(origin)[:80],))
        state[origin] = held
    return state


def save_state(path: str, state: WitnessState) -> None:
    """Replace the state file atomically (format /2); ``WitnessStateError`` if it cannot be written."""
    logs: Dict[str, Dict[str, object]] = {}
    for origin, held in state.items():
        entry: Dict[str, object] = {"size": held.size, "root": held.root.hex()}
        entry["checkpoint"] = held.checkpoint.decode("utf-8") if held.checkpoint is not None else None
        if held.checkpoint is None:
            entry["head"] = held.head
        logs[origin] = entry
    text = json.dumps({"format": STATE_FORMAT, "logs": logs}, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    try:
        write_atomic(path, text.encode("utf-8"))
    except OSError as exc:
        raise WitnessStateError(path, "cannot write the witness state: %s" % (exc.strerror or exc,)) from None


@contextlib.contextmanager
def state_lock(path: str, wait: Optional[float] = None) -> Iterator[None]:
    """Hold the advisory lock of state file ``path`` (on ``<path>.lock``, created if missing) for a read-check-write.

    Waits up to ``wait`` seconds (default :data:`LOCK_SECONDS`) for another
    process to let it go; raises :class:`~agentloop.errors.WitnessStateError`
    if it cannot be had.
    """
    wait = LOCK_SECONDS if wait is None else wait
    lock = path + ".lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
    except OSError as exc:
        why = "cannot write the witness state (nor its .lock file beside it): %s" % (exc.strerror or exc,)
        raise WitnessStateError(path, why) from None
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                lock_exclusive(fd, lock)
                break
            except TranscriptLockedError:
                if time.monotonic() > deadline:
                    raise WitnessStateError(path, "is locked by another witness process for over %g s" % (wait,))
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)


def _strict(note: Note, head: TreeHead) -> None:
    """agentloop's own origins are read by their own stricter parsers (MalformedCheckpointError)."""
    if head.origin.startswith(ORIGIN_PREFIX):
        parse_checkpoint(note.to_bytes())
    elif head.origin.startswith(MANIFEST_ORIGIN_PREFIX):
        parse_manifest_checkpoint(note.to_bytes())


class Witness:
    """A C2SP witness: a ``cosignature/v1`` key, the logs it knows, and its memory.

    ``state`` is the state file's path (``None``: memory only, for tests);
    ``clock`` gives the time each cosignature states (default
    :func:`time.time`).  Thread-safe: one lock covers check, cosign and persist.
    """

    def __init__(
        self,
        signer: CosignatureSigner,
        policy: WitnessPolicy,
        state: Optional[str] = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(signer, CosignatureSigner):
            raise SigningKeyError("witness key", "must be a cosignature/v1 signer (agentloop keygen NAME --witness)")
        self.signer = signer
        self.policy = policy
        self.path = state
        self.clock = clock
        self._lock = threading.Lock()
        self._state: WitnessState = load_state(state) if state is not None else {}

    def held(self, origin: str) -> int:
        """The size of the latest checkpoint cosigned for ``origin`` (0 if none)."""
        with self._lock:
            seen = self._state.get(origin)
            return 0 if seen is None else seen.size

    def latest(self, origin_hash: str) -> Optional[bytes]:
        """The latest cosigned checkpoint of the log whose origin's SHA-256 is ``origin_hash`` (lowercase hex)."""
        with self._lock:
            for origin, seen in self._state.items():
                if seen.checkpoint is not None and hashlib.sha256(origin.encode("utf-8")).hexdigest() == origin_hash:
                    return seen.checkpoint
        return None

    def _read(self, body: bytes) -> Union[WitnessAnswer, Tuple[AddCheckpointRequest, TreeHead]]:
        """Steps 1 to 4: a refusal, or the request and its tree head."""
        # 1.
        try:
            request = parse_add_checkpoint_request(body, check=False)
            head = parse_tree_head(request.checkpoint)
        except MalformedNoteError as exc:
            return _answer(400, "malformed request: %s" % (exc,))
        # 2.
        if not self.policy.knows(head.origin):
            return _answer(404, "unknown log origin %r" % (head.origin[:200],))
        try:
            _strict(request.checkpoint, head)
        except MalformedCheckpointError as exc:
            return _answer(400, "malformed agentloop checkpoint: %s" % (exc,))
        # 3.
        try:
            verify_note(request.checkpoint, self.policy.keys)
        except BadSignatureError as exc:
            return _answer(403, "the checkpoint's signatures: %s" % (exc.reason,))
        # 4.
        if request.old_size > head.size:
            return _answer(400, "the old size %d exceeds the checkpoint's size %d" % (request.old_size, head.size))
        return request, head

    def _consistent(
        self, request: AddCheckpointRequest, head: TreeHead, seen: Optional[Held]
    ) -> Optional[WitnessAnswer]:
        """Steps 6 and 7."""
        # 6.
        if head.size == 0 and head.root != EMPTY_ROOT:
            return _answer(422, "a checkpoint of size 0 must have the empty tree's root")
        # 7.
        if request.old_size == 0:
            if request.proof:
                return _answer(422, "the consistency proof must be empty when the old size is 0")
            return None
        if seen is None:  # cannot happen: the old size matched what is held, and it is not 0
            return _answer(409, "the witness holds nothing for this log")
        try:
            verify_consistency(request.old_size, head.size, seen.root, head.root, request.proof)
        except ProofError as exc:
            return _answer(422, "not consistent with the %d entries cosigned before: %s" % (seen.size, exc.reason))
        return None

    def _stamp(self, timestamp: Optional[int]) -> int:
        stamp = int(self.clock()) if timestamp is None else timestamp
        if isinstance(stamp, bool) or not 1 <= stamp <= MAX_TREE_SIZE:
            raise SigningKeyError("witness clock", "a cosignature's timestamp is from 1 to 2**63-1, got %r" % (stamp,))
        return stamp

    def add_checkpoint(self, body: bytes, timestamp: Optional[int] = None) -> WitnessAnswer:
        """Answer one ``add-checkpoint`` request body (the steps in the module docstring).

        ``timestamp`` fixes the cosignature's time (default: the clock).
        A state file that cannot be written raises :class:`WitnessStateError`
        and nothing is cosigned.
        """
        read = self._read(body)
        if isinstance(read, WitnessAnswer):
            return read
        request, head = read
        with self._lock, self._shared():
            # 5.
            seen = self._state.get(head.origin)
            held = 0 if seen is None else seen.size
            if request.old_size != held:
                reason = "the old size is %d, the witness holds %d for this log" % (request.old_size, held)
                return WitnessAnswer(409, b"%d\n" % (held,), SIZE_CONTENT_TYPE, reason)
            refused = self._consistent(request, head, seen)
            if refused is not None:
                return refused
            # 8.
            signer = self.signer.at(self._stamp(timestamp))
            cosigned = sign_note(request.checkpoint, signer)
            mine = cosigned.signatures[-1]
            data = cosigned.to_bytes()
            new = dict(self._state)
            new[head.origin] = Held(head.size, head.root, data)
            self._persist(new)
            self._state = new
        body_out = format_add_checkpoint_response([NoteSignature(mine.name, mine.key_id, mine.signature)])
        return WitnessAnswer(200, body_out, _TEXT, "cosigned %d entries of %r" % (head.size, head.origin[:200]), data)

    @contextlib.contextmanager
    def _shared(self) -> Iterator[None]:
        """The state file's lock, and the state as it is on disk now (another process may have moved it on)."""
        if self.path is None:
            yield
            return
        with state_lock(self.path):
            self._state = load_state(self.path)
            yield

    def _persist(self, state: WitnessState) -> None:
        if self.path is not None:
            save_state(self.path, state)
