"""One transcript verified across processes: cut at line boundaries, parts judged apart, joined in order.

:func:`verify_parts` gives exactly the verdict of a one-pass
:func:`~agentloop.transcript.verify.verify_file` -- the same faults, in the
same order, with the same indexes, lines and details -- in a pool of
``workers`` processes, while this one waits and joins their verdicts:

1. The file is cut into about ``workers * PARTS_PER_WORKER`` parts of equal
   size (none under :data:`MIN_PART_BYTES`), handed to the pool in order:
   each process takes the next part as it ends one, so a process that
   others' work on the machine slows takes fewer.  Each cut is
   moved forward to the start of a line that looks like an ``assistant``
   record (``{"hash":"<64>","kind":"assistant","payload":{``), found within
   :data:`SEARCH_BYTES`; without one the part joins its neighbour.  Where a
   cut falls changes only how much work step 4 redoes, never the verdict.
2. Part 0 is judged from the start of the file, as one pass would.  Every
   other part is judged from a state read off its first record, the
   *guess*, when that record is an ``assistant`` record (which opens a turn,
   so no call of an earlier turn is in the state it is judged in; a part
   that starts otherwise, wherever its cut fell, is judged again in step 4):
   that record's ``seq`` and ``prev`` are expected, at least one
   record came before, the record before was not a ``stop`` record, the
   payload grammar (:class:`~agentloop.transcript.grammar.Grammar`) stands
   at ``step - 1`` assistant records, ``total_tokens - tokens`` tokens and no
   call awaiting its result, and the rules record 0 sets for ``tool``
   records (:class:`~agentloop.transcript.gates.Gates`) are those of the
   file's first line, judged as one pass judges it.  A part reports its faults (indexes counted
   from its first record, lines from its first line), its line and record
   counts and the state it ends in.
3. The parts are joined in order.  A part's guess is compared with the
   state the parts before it end in; where they agree, the part's checks
   saw exactly the state a single pass would have seen, so its faults are
   that pass's, moved by the records and lines before it -- except that in
   a chain broken before the part (``intact`` false), its ``bad_payload``
   faults are dropped, as one pass judges no payload after a chain fault.
4. A part whose guess disagrees (or could not be read), and a part past
   which the faults would exceed ``max_faults``, is judged again here, from
   the true state: the one-pass code itself, on that part's bytes (it also
   counts what is left unexamined after ``too_many_faults``).  An ``OSError`` in any part, or a file that
   is not a regular file, is verified in one pass.

Memory per process stays that of one pass: each reads its part line by
line, and returns at most ``max_faults`` faults and a few counters.
"""

from __future__ import annotations

import copy
import io
import os
import stat
from dataclasses import dataclass, field
from typing import BinaryIO, List, Optional, Tuple

from ..processes import process_pool

from .chain import Chain
from .durable import open_input
from .format import Fault, PathLike
from .gates import Gates
from .scan import _count_rest, _parse_line, judge_lines, no_records

__all__ = ["verify_parts", "SEARCH_BYTES", "MIN_PART_BYTES", "PARTS_PER_WORKER"]

#: How far past an even cut to look for a line that starts an ``assistant`` record.
SEARCH_BYTES = 1 << 20
#: A file is cut into parts of at least this many bytes (smaller: fewer parts).
MIN_PART_BYTES = 4 << 20
#: Parts a file is cut into per worker, at most: a process slowed by others' work on the machine takes fewer.
PARTS_PER_WORKER = 4
_ASSISTANT_AT = len(b'{"hash":"') + 64
_ASSISTANT = b'","kind":"assistant","payload":{'
_LINE_START = b'\n{"hash":"'


@dataclass(frozen=True)
class _Guess:
    """The state a part is judged from: read off its first record."""

    seq: int
    prev: str
    steps: int
    tokens: int
    gates: Gates


@dataclass
class _Part:
    """What judging one part found: its faults and the state it ends in."""

    lines: int = 0
    records: int = 0
    faults: List[Fault] = field(default_factory=list)
    guess: Optional[_Guess] = None
    end: Optional[Chain] = None
    overflowed: bool = False
    failed: bool = False  # an OSError: the whole file is verified in one pass


class _Window:
    """A binary file read from where it stands up to ``size`` bytes further (``None``: to its end)."""

    def __init__(self, handle: BinaryIO, size: Optional[int]) -> None:
        self._handle = handle
        self._left = size

    def _room(self, size: int) -> int:
        if self._left is None:
            return size
        return self._left if size < 0 else min(size, self._left)

    def readline(self, size: int = -1) -> bytes:
        data = self._handle.readline(self._room(size))
        if self._left is not None:
            self._left -= len(data)
        return data

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(self._room(size))
        if self._left is not None:
            self._left -= len(data)
        return data


def _cuts(path: PathLike, size: int, parts: int) -> List[int]:
    """The byte offsets where at most ``parts`` parts start: 0, then one per further part (strictly increasing)."""
    parts = max(1, min(parts, size // max(MIN_PART_BYTES, 1)))
    starts = [0]
    with open_input(path) as handle:
        for k in range(1, parts):
            nominal = max(size * k // parts, starts[-1] + 1)
            handle.seek(nominal - 1)
            block = handle.read(SEARCH_BYTES)
            at = block.find(_LINE_START)
            while at >= 0 and block[at + 1 + _ASSISTANT_AT : at + 1 + _ASSISTANT_AT + len(_ASSISTANT)] != _ASSISTANT:
                at = block.find(_LINE_START, at + 1)
            if at >= 0 and nominal + at < size:
                starts.append(nominal + at)
    return starts


def _gates(first: bytes, limit: int, max_faults: int) -> Gates:
    """The gates the file's first line sets, judged by the one-pass code (unknown unless it is a sound task record)."""
    chain = Chain()
    for _ in judge_lines(io.BytesIO(first), chain, limit, max_faults, max_faults):
        pass
    return chain.grammar.gates


def _guess(raw: bytes, gates: Gates) -> Optional[_Guess]:
    """The state to judge a part from, read off its first line; ``None`` when it cannot be read."""
    record, bad, _ = _parse_line(1, raw)
    if bad is not None or not isinstance(record, dict):
        return None
    seq, prev, payload = record.get("seq"), record.get("prev"), record.get("payload")
    if record.get("kind") != "assistant":  # the guess holds no call of a turn: an assistant record starts one
        return None
    if type(seq) is not int or not isinstance(prev, str) or not isinstance(payload, dict):
        return None
    step, tokens, total = payload.get("step"), payload.get("tokens"), payload.get("total_tokens")
    if type(step) is not int or type(tokens) is not int or type(total) is not int or step < 1:
        return None
    return _Guess(seq, prev, step - 1, total - tokens, gates)


def _guessed_chain(guess: _Guess) -> Chain:
    chain = Chain()
    chain.index = 1  # a record came before (indexes are moved back at the join)
    chain.expected_seq, chain.expected_prev, chain.head = guess.seq, guess.prev, guess.prev
    chain.last_kind = "assistant"  # anything but "stop"
    chain.grammar.steps, chain.grammar.tokens = guess.steps, guess.tokens
    chain.grammar.gates = guess.gates
    return chain


def judge_part(path: PathLike, start: int, end: Optional[int], limit: int, max_faults: int) -> _Part:
    """Judge the lines from ``start`` to ``end`` (``None``: the end of the file); a task of the pool."""
    part = _Part()
    try:
        with open_input(path) as handle:
            window = _Window(handle, None if end is None else end - start)
            if start:
                gates = _gates(handle.readline(limit + 1), limit, max_faults)  # the file's first line
                handle.seek(start)
                part.guess = _guess(handle.readline(limit + 1), gates)
                handle.seek(start)
                if part.guess is None:
                    part.lines = _count_rest(window, None)[0]  # type: ignore[arg-type]
                    return part
            chain = _guessed_chain(part.guess) if part.guess is not None else Chain()
            judged = judge_lines(window, chain, limit, max_faults, max_faults)  # type: ignore[arg-type]
            for line, _, found, _ in judged:
                part.lines = line or part.lines
                part.faults.extend(found)
                if not line and found:  # too_many_faults: the part is judged again at the join
                    part.overflowed = True
                    part.lines += chain.unexamined_lines
            part.records = chain.index - (1 if start else 0)
            part.end = chain
    except OSError:
        part.failed = True
    return part


def _agrees(state: Chain, guess: Optional[_Guess]) -> bool:
    """Whether a part judged from ``guess`` saw what one pass, in ``state``, would have seen."""
    if guess is None or state.index < 1 or state.last_kind == "stop":
        return False
    if state.expected_seq != guess.seq or state.expected_prev != guess.prev:
        return False
    grammar = state.grammar
    waiting = len(grammar.step_calls) - grammar.answered
    same = grammar.steps == guess.steps and grammar.tokens == guess.tokens and grammar.gates.key() == guess.gates.key()
    return not state.intact or (same and waiting == 0)


class _Join:
    """The parts' verdicts put together in order (step 3), and a part judged again (step 4)."""

    def __init__(self, path: PathLike, starts: List[int], size: int, limit: int, max_faults: int) -> None:
        self.path, self.starts, self.size, self.limit, self.max_faults = path, starts, size, limit, max_faults
        self.state = Chain()
        self.lines = 0
        self.faults: List[Fault] = []
        self.stopped = False  # too_many_faults: the rest is counted, not judged

    def take(self, k: int, part: _Part, later_lines: int) -> None:
        """Join part ``k``: its own verdict where its guess agrees, else one judged again here."""
        if part.overflowed or part.end is None or (k and not _agrees(self.state, part.guess)):
            self.again(k, later_lines)
            return
        base = self.state.index - (1 if k else 0)
        kept = [f for f in part.faults if self.state.intact or f.kind != "bad_payload"]
        if len(self.faults) + len(kept) > self.max_faults:
            self.again(k, later_lines)
            return
        for fault in kept:
            index = None if fault.index is None else fault.index + base
            line = None if fault.line is None else fault.line + self.lines
            self.faults.append(Fault(index, line, fault.kind, fault.detail))
        end, intact = part.end, self.state.intact and part.end.intact
        end.index = self.state.index + part.records
        end.intact = intact
        self.state = end
        self.lines += part.lines

    def again(self, k: int, later_lines: int) -> None:
        """Judge part ``k`` here, from the true state: the one-pass code on its bytes."""
        start = self.starts[k]
        end = self.starts[k + 1] if k + 1 < len(self.starts) else None
        chain = copy.deepcopy(self.state)
        room = self.max_faults - len(self.faults)
        beyond = (later_lines, self.size - end if end is not None else 0)
        with open_input(self.path) as handle:
            handle.seek(start)
            window = _Window(handle, None if end is None else end - start)
            judged = judge_lines(
                window,  # type: ignore[arg-type]
                chain,
                self.limit,
                self.max_faults,
                room,
                self.lines,
                beyond=beyond,
            )
            for line, _, found, _ in judged:
                self.faults.extend(found)
                if not line and found:
                    self.stopped = True
                else:
                    self.lines = line
        self.state = chain


def _judged(path: PathLike, starts: List[int], workers: int, limit: int, max_faults: int) -> List[_Part]:
    """Each part judged in a pool of ``workers`` processes, each taking the next part as it ends one."""
    ends: List[Optional[int]] = [*starts[1:], None]
    with process_pool(min(workers, len(starts)), fork_if_alone=True) as pool:
        futures = [pool.submit(judge_part, path, s, e, limit, max_faults) for s, e in zip(starts, ends)]
        return [f.result() for f in futures]


def _size(path: PathLike) -> Optional[int]:
    """The size of a regular file, else ``None`` (a pipe, a device, an error: read in one pass)."""
    try:
        with open_input(path) as handle:
            info = os.fstat(handle.fileno())
    except OSError:
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def verify_parts(path: PathLike, workers: int, limit: int, max_faults: int) -> Optional[Tuple[Chain, List[Fault], int]]:
    """``(chain at the end, faults, lines)`` of the file judged in ``workers`` processes, as one
    pass gives them; ``None`` when it must be verified in one pass (not a regular file, an
    ``OSError`` in a part, a file too small to cut)."""
    size = _size(path)
    try:
        starts = _cuts(path, size, workers * PARTS_PER_WORKER) if size is not None else []
    except OSError:
        return None
    if len(starts) < 2:
        return None
    parts = _judged(path, starts, workers, limit, max_faults)
    if any(part.failed for part in parts):
        return None
    join = _Join(path, starts, size or 0, limit, max_faults)
    try:
        for k, part in enumerate(parts):
            join.take(k, part, sum(p.lines for p in parts[k + 1 :]))
            if join.stopped:
                break
    except OSError:
        return None
    if not join.stopped and not join.state.index:
        join.faults.append(no_records(join.lines))
    return join.state, join.faults, join.lines
