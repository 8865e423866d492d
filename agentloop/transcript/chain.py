"""The per-record checks of a transcript: the chain, the canonical form, the payload grammar.

:class:`Chain` judges one record at a time in O(1) state; :mod:`.scan` feeds
it a file's lines, :mod:`.verify` and :mod:`.parallel` put verdicts together.
See ``docs/format.md`` section 6 for the checks, in order.
"""

from __future__ import annotations

import hashlib
from typing import Dict, List, Optional

from ..canonical import canonical_bytes, is_canonical_line
from ..errors import UnrecordableError

from .format import (
    FIELDS,
    FORMAT,
    Fault,
    FaultKind,
    GENESIS,
    KINDS,
    _BODY_AT,
    _FIELD_SET,
    _HEAD,
    _LATER_KINDS,
    _a,
    _is_hex_hash,
    _json_type,
    _short,
)
from .grammar import Grammar

__all__ = ["Chain"]


class Chain:
    """The per-record checks, shared by :func:`verify_records` and :func:`verify_file`.

    It keeps O(1) state: the expected ``seq``, the expected ``prev``, the
    last record seen and the run's tallies for the payload grammar
    (:class:`~agentloop.transcript.grammar.Grammar`), so verification
    streams in flat memory.  Every value it tests comes from an untrusted
    file and may be of any JSON type: it is compared, never hashed (a list
    as ``kind`` once made a set lookup raise ``TypeError``).
    """

    def __init__(self) -> None:
        self.index = 0
        self.expected_seq = 0
        self.expected_prev: Optional[str] = GENESIS
        self.head: Optional[str] = None
        self.last_kind: object = None
        self.grammar = Grammar()
        # The grammar is judged while every record so far passed the chain
        # checks: in a tampered chain a payload proves nothing, and one
        # rewritten kind would otherwise echo as a fault at every later record.
        self.intact = True
        # Set by scan when it stops judging past max_faults: what it left unread.
        self.unexamined_lines = 0
        self.unexamined_bytes = 0

    def _payload(self, index: int, line: Optional[int], kind: str, payload: object) -> List[Fault]:
        """``[bad_payload]`` when the payload breaks the agentloop/1 grammar, else ``[]``."""
        if not self.intact:
            return []
        problem = self.grammar.problem(kind, payload)
        return [Fault(index, line, "bad_payload", problem)] if problem else []

    def _kind_problem(self, index: int, kind: object) -> str:
        if self.last_kind == "stop":
            return "a %s record after the stop record" % (_short(kind),)
        if kind not in KINDS:
            return "kind %s is not one of task, assistant, tool, stop" % (_short(kind),)
        if kind == "task" and index != 0:
            return "a second task record"
        return ""

    def _sound(self, record: object, text: str, raw: bytes) -> bool:
        """The common case, cheaply: a record with no fault at all.

        True only if every check of :meth:`check` would pass; then the state
        advances exactly as :meth:`check` would advance it.  The line is
        proven canonical by :func:`~agentloop.canonical.is_canonical_line`,
        so the hashed bytes are the line minus its ``"hash"`` member.
        """
        if type(record) is not dict or record.keys() != _FIELD_SET:
            return False
        seq, stored = record["seq"], record["hash"]
        if type(seq) is not int or seq != self.expected_seq or record["prev"] != self.expected_prev:
            return False
        kind = record["kind"]
        if self.index == 0:
            payload = record["payload"]
            if kind != "task" or not isinstance(payload, dict) or payload.get("format") != FORMAT:
                return False
        elif type(kind) is not str or kind not in _LATER_KINDS or self.last_kind == "stop":  # str first: no list hashed
            return False
        # A hexdigest equal to ``hash`` is 64 lowercase hex digits, so the line begins
        # '{"hash":"<64 hex>",' (its first member, in canonical order) and the hashed bytes at _BODY_AT.
        if not is_canonical_line(record, text, raw) or hashlib.sha256(b"{" + raw[_BODY_AT:]).hexdigest() != stored:
            return False
        self.index += 1
        self.expected_seq = seq + 1
        self.expected_prev = self.head = stored
        self.last_kind = kind
        return True

    def check(
        self, record: object, line: Optional[int], raw: Optional[bytes], text: Optional[str] = None
    ) -> List[Fault]:
        """Check one record (and, when ``raw`` is given, its line bytes).

        With ``text``, the decoded line, a sound record passes the chain
        checks by :meth:`_sound` alone.  Anything else, and every record
        from :func:`verify_records`, goes through the full checks, which
        name every fault:

        1. the record is an object with exactly the five members;
        2. record 0 is an ``agentloop/1`` task record;
        3. ``seq`` is the expected position;
        4. ``prev`` is the previous record's ``hash``;
        5. the record is encodable, and its line is its RFC 8785 form;
        6. ``hash`` is the SHA-256 of the record without ``hash``;
        7. while every record so far (this one included) passed checks
           1-6, a record's payload is of the agentloop/1 grammar
           (:mod:`~agentloop.transcript.grammar`; ``bad_payload``).
        """
        if text is not None and raw is not None and self._sound(record, text, raw):
            return self._payload(self.index - 1, line, record["kind"], record["payload"])  # type: ignore[index]
        index = self.index
        self.index += 1
        if not isinstance(record, dict):  # 1. shape
            self.intact = False
            self.expected_seq += 1
            self.expected_prev = self.head = self.last_kind = None
            return [Fault(index, line, "not_an_object", "record is %s, not an object" % (_a(_json_type(record)),))]
        found = _Found(index, line)
        whole = self._members(found, record)
        kind_known = self._kind(found, record)  # 2. format marker, 2b. kind grammar
        self._seq(found, record)  # 3.
        self._prev(found, record)  # 4.
        computed = self._encoding(found, record, raw if whole else None)  # 5. and 6.
        stored = record.get("hash")
        self.expected_prev = stored if _is_hex_hash(stored) else computed
        self.head = stored if isinstance(stored, str) else None
        self.last_kind = record.get("kind")
        # 7. payload grammar, in a chain intact so far
        self.intact = self.intact and not found.faults
        if kind_known and "payload" in record:
            found.faults.extend(self._payload(index, line, str(self.last_kind), record["payload"]))
        return found.faults

    @staticmethod
    def _members(found: "_Found", record: Dict[str, object]) -> bool:
        """1. ``missing_fields``, ``unexpected_fields``; whether the five members are exactly there."""
        missing = [name for name in FIELDS if name not in record]
        if missing:
            found.add("missing_fields", "missing %s" % (", ".join(repr(m) for m in missing),))
        extra = sorted(_short(key) for key in record if key not in FIELDS)
        if extra:
            found.add("unexpected_fields", "unexpected %s" % (", ".join(extra),))
        return not missing and not extra

    def _kind(self, found: "_Found", record: Dict[str, object]) -> bool:
        """2. ``unknown_format`` for record 0; 2b. ``unexpected_kind``; whether the kind is known."""
        if found.index == 0:
            payload = record.get("payload")
            fmt = payload.get("format") if isinstance(payload, dict) else None
            if record.get("kind") != "task" or fmt != FORMAT:
                found.add(
                    "unknown_format",
                    "record 0 must be a 'task' record with payload.format %r, got kind %s, format %s"
                    % (FORMAT, _short(record.get("kind")), _short(fmt)),
                )
        if "kind" not in record:
            return False
        problem = self._kind_problem(found.index, record["kind"])
        if problem:
            found.add("unexpected_kind", problem)
        return not problem

    def _seq(self, found: "_Found", record: Dict[str, object]) -> None:
        seq = record.get("seq")
        is_int = isinstance(seq, int) and not isinstance(seq, bool)
        if "seq" in record and (not is_int or seq != self.expected_seq):
            found.add("seq_gap", "seq is %s, expected %d" % (_short(seq), self.expected_seq))
        self.expected_seq = seq + 1 if is_int else self.expected_seq + 1  # type: ignore[operator]

    def _prev(self, found: "_Found", record: Dict[str, object]) -> None:
        prev = record.get("prev")
        if "prev" in record and self.expected_prev is not None and prev != self.expected_prev:
            found.add("prev_mismatch", "prev is %s, expected %s" % (_short(prev), _short(self.expected_prev)))

    @staticmethod
    def _encoding(found: "_Found", record: Dict[str, object], raw: Optional[bytes]) -> Optional[str]:
        """5. ``unserialisable_payload``, ``not_canonical`` (with ``raw``, for a record of
        exactly the five members); 6. ``hash_mismatch``.  The computed hash, or ``None``."""
        stored = record.get("hash")
        rest = {name: record[name] for name in FIELDS[1:] if name in record}
        try:
            body = canonical_bytes(rest)
        except UnrecordableError as exc:
            found.add("unserialisable_payload", str(exc))
            return None
        computed = hashlib.sha256(body).hexdigest()
        if raw is not None and _is_hex_hash(stored):
            expected_line = _HEAD + str(stored).encode("ascii") + b'",' + body[1:]
            if raw != expected_line:
                found.add("not_canonical", _first_difference(raw, expected_line))
        if "hash" in record and stored != computed:
            found.add("hash_mismatch", "stored %s, computed %s" % (_short(stored), _short(computed)))
        return computed


class _Found:
    """The faults of one record, as :meth:`Chain.check` finds them."""

    def __init__(self, index: int, line: Optional[int]) -> None:
        self.index = index
        self.line = line
        self.faults: List[Fault] = []

    def add(self, kind: FaultKind, detail: str) -> None:
        self.faults.append(Fault(self.index, self.line, kind, detail))


def _first_difference(raw: bytes, expected: bytes) -> str:
    at = next(
        (i for i, (a, b) in enumerate(zip(raw, expected)) if a != b),
        min(len(raw), len(expected)),
    )
    return "line is not the RFC 8785 form of its record: first difference at byte %d" % (at,)
