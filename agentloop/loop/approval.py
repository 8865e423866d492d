"""A person in the loop: approval before a gated tool call runs, recorded and bound to the call.

A tool built with ``requires_approval=True`` (or a predicate over its
validated arguments: :meth:`~agentloop.tools.registry.Tool.needs_approval`)
is *gated*.  For each gated call the loop (:mod:`agentloop.loop.engine`) does, in
this order: 1. validate the arguments; 2. ask the run's approver with an
:class:`ApprovalRequest`; 3. act on the answer:

* :class:`Approve` -- the tool runs;
* :class:`Deny` -- the call fails as data with :data:`DENIED` (who, why);
  the model sees it and the run goes on;
* :class:`Modify` -- the new arguments are validated, then the tool runs
  with them (invalid ones fail as data);
* :class:`Terminate` -- the call fails as data with :data:`TERMINATED` and
  the run stops with ``approval_terminated``;
* ``None`` -- defer: the run pauses before the call, without a stop record
  (``RunResult.stop_reason == "awaiting_approval"``); :func:`agentloop.resume`
  goes on once someone has decided.

Fail closed: an approver that raises, returns anything else, returns a
decision bound to other arguments (``arguments_sha256``) or one that cannot
be signed or recorded denies the call (``by: null`` in the record).

The call's ``tool`` record holds the decision as its ``approval`` member
(:meth:`Verdict.member`): ``decision``, ``by``, ``reason`` (deny, terminate),
``arguments`` (modify) and ``note`` -- a C2SP signed note
(:mod:`agentloop.signing.note`) over :func:`note_text`, present when the
decision carried a ``signer``.  The note binds the run (origin), the
assistant record that asked, the call, the SHA-256 of its recorded arguments
and the decision; :func:`verify_approvals` checks every note of a file.
Ed25519 signatures are deterministic, so a signed decision replays to the
same bytes.  ``docs/approvals.md`` is the guide.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union, cast

from ..canonical import canonical_bytes, snapshot
from ..errors import (
    BadSignatureError,
    MalformedNoteError,
    MessageError,
    RunConfigError,
    SigningKeyError,
    UnrecordableError,
    ValidationError,
)
from ..messages import APPROVAL_DECISIONS
from ..signing.note import Note, Verifier, parse_note, sign_note, verify_note
from ..tools.registry import ToolRegistry
from ..transcript.format import PathLike
from ..transcript.verify import iter_file, verify_file

__all__ = [
    "ApprovalRequest",
    "Approve",
    "Deny",
    "Modify",
    "Terminate",
    "Decision",
    "RecordedDecision",
    "Verdict",
    "judge",
    "closed",
    "decision_from_json",
    "arguments_sha256",
    "note_text",
    "verify_approvals",
    "approval_members",
    "seal_closed",
    "check_approval_signer",
    "approval_policy",
    "NOTE_HEADER",
    "DENIED",
    "DENIED_CLOSED",
    "TERMINATED",
]

#: The first line of a decision note: the note format and its version.
NOTE_HEADER = "agentloop-approval/1"
#: The error of a denied call: ``DENIED % (by as JSON, reason)`` (``reason`` "" reads "(no reason given)").
DENIED = "call denied by %s: %s"
#: The error of a call denied because the approver failed: ``DENIED_CLOSED % (what went wrong)``.
DENIED_CLOSED = "call denied (fail closed): %s"
#: The error of the call an approver terminated the run at: ``TERMINATED % (by as JSON, reason)``.
TERMINATED = "call refused: the run was terminated by %s: %s"
#: How deep modified arguments sit in their record (record > payload > approval > arguments).
_MODIFIED_DEPTH = 3
_NO_REASON = "(no reason given)"


def arguments_sha256(arguments: Mapping[str, Any]) -> str:
    """The hex SHA-256 of the RFC 8785 bytes of ``arguments`` (as recorded)."""
    return hashlib.sha256(canonical_bytes(arguments)).hexdigest()


@dataclass(frozen=True)
class ApprovalRequest:
    """What an approver is asked about one gated call.

    ``origin`` names the run (``agentloop/1/<hash of record 0>``, as in its
    checkpoints), ``step`` the turn (from 1), ``call_id`` and ``tool`` the
    call, ``arguments`` a private copy of its recorded (validated) arguments,
    ``arguments_sha256`` the SHA-256 of their RFC 8785 bytes and
    ``assistant_hash`` the hash of the assistant record that asked for it.
    """

    origin: str
    step: int
    call_id: str
    tool: str
    arguments: Dict[str, Any]
    arguments_sha256: str
    assistant_hash: str

    def to_json(self) -> Dict[str, Any]:
        """The request as a JSON object (``agentloop pending --json``)."""
        return {
            "origin": self.origin,
            "step": self.step,
            "call_id": self.call_id,
            "tool": self.tool,
            "arguments": self.arguments,
            "arguments_sha256": self.arguments_sha256,
            "assistant_hash": self.assistant_hash,
        }


def _check_by(kind: str, by: object) -> None:
    if not isinstance(by, str) or not by:
        raise MessageError(kind + ".by", "must be a non-empty str naming who decided, got %s" % (type(by).__name__,))


def _check_common(kind: str, by: object, sha: object, signer: object) -> None:
    _check_by(kind, by)
    if sha is not None and (not isinstance(sha, str) or len(sha) != 64 or sha.strip("0123456789abcdef")):
        raise MessageError(kind + ".arguments_sha256", "must be None or 64 lowercase hex digits")
    if signer is not None and not all(hasattr(signer, name) for name in ("name", "key_id", "sign")):
        raise MessageError(kind + ".signer", "must be None or a note signer (name, key_id, sign)")


def _check_reason(kind: str, reason: object) -> None:
    if not isinstance(reason, str):
        raise MessageError(kind + ".reason", "must be a str, got %s" % (type(reason).__name__,))


@dataclass(frozen=True)
class Approve:
    """Run the call.  ``by`` names who decided; ``arguments_sha256``, when
    given, binds the decision to exactly those arguments; ``signer`` (a note
    signer such as :class:`~agentloop.signing.Ed25519Signer`) signs it."""

    by: str
    arguments_sha256: Optional[str] = None
    signer: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _check_common("Approve", self.by, self.arguments_sha256, self.signer)


@dataclass(frozen=True)
class Deny:
    """Do not run the call: it fails as data with :data:`DENIED`, and the run goes on."""

    reason: str
    by: str
    arguments_sha256: Optional[str] = None
    signer: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _check_reason("Deny", self.reason)
        _check_common("Deny", self.by, self.arguments_sha256, self.signer)


@dataclass(frozen=True)
class Modify:
    """Run the call with these ``arguments`` instead (validated again first; recorded)."""

    arguments: Mapping[str, Any]
    by: str
    arguments_sha256: Optional[str] = None
    signer: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.arguments, Mapping):
            raise MessageError("Modify.arguments", "must be a mapping, got %s" % (type(self.arguments).__name__,))
        _check_common("Modify", self.by, self.arguments_sha256, self.signer)


@dataclass(frozen=True)
class Terminate:
    """Do not run the call (it fails as data with :data:`TERMINATED`) and stop the run (``approval_terminated``)."""

    reason: str
    by: str
    arguments_sha256: Optional[str] = None
    signer: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _check_reason("Terminate", self.reason)
        _check_common("Terminate", self.by, self.arguments_sha256, self.signer)


Decision = Union[Approve, Deny, Modify, Terminate]
_NAMES: Dict[type, str] = {Approve: "approve", Deny: "deny", Modify: "modify", Terminate: "terminate"}


@dataclass(frozen=True)
class RecordedDecision:
    """A decision read back from a transcript's ``approval`` member, taken as recorded.

    :func:`agentloop.models.replay` answers with these, so a run with
    approvals replays byte for byte with nobody present (fail-closed denials
    and signed notes included).
    """

    member: Dict[str, Any]


@dataclass(frozen=True)
class Verdict:
    """A decision as the loop acts on it and records it.

    ``by`` is ``None`` when nobody decided (the approver failed: fail
    closed); ``arguments`` and ``arguments_text`` are the new arguments of a
    modify (their snapshot and RFC 8785 text); ``note`` the signed note, or "".
    """

    decision: str
    by: Optional[str]
    reason: str = ""
    arguments: Optional[Dict[str, Any]] = None
    arguments_text: str = ""
    note: str = ""

    def member(self) -> Dict[str, Any]:
        """The tool record's ``approval`` member."""
        entry: Dict[str, Any] = {"decision": self.decision, "by": self.by}
        if self.decision in ("deny", "terminate"):
            entry["reason"] = self.reason
        if self.decision == "modify":
            entry["arguments"] = self.arguments
        if self.note:
            entry["note"] = self.note
        return entry

    def error(self) -> str:
        """The error a call not run for this decision fails with (deny, terminate)."""
        if self.by is None:
            return DENIED_CLOSED % (self.reason,)
        template = TERMINATED if self.decision == "terminate" else DENIED
        return template % (json.dumps(self.by, ensure_ascii=False), self.reason or _NO_REASON)


def closed(reason: str) -> Verdict:
    """A denial nobody decided: the approver failed (fail closed)."""
    return Verdict("deny", None, reason)


def note_text(request: ApprovalRequest, verdict: Verdict) -> str:
    """The text a decision note signs (every value ASCII; strings as JSON)::

    agentloop-approval/1
    agentloop/1/<hash of record 0>
    step <n>
    assistant <hash of the assistant record>
    call <call id as JSON>
    tool <tool name as JSON>
    arguments <SHA-256 of the recorded arguments>
    decision <approve|deny|modify|terminate>
    by <who, as JSON>
    reason <reason as JSON>            (deny and terminate only)
    modified <SHA-256 of the new arguments>   (modify only)
    """
    lines = [
        NOTE_HEADER,
        request.origin,
        "step %d" % (request.step,),
        "assistant %s" % (request.assistant_hash,),
        "call %s" % (json.dumps(request.call_id),),
        "tool %s" % (json.dumps(request.tool),),
        "arguments %s" % (request.arguments_sha256,),
        "decision %s" % (verdict.decision,),
        "by %s" % (json.dumps(verdict.by),),
    ]
    if verdict.decision in ("deny", "terminate"):
        lines.append("reason %s" % (json.dumps(verdict.reason),))
    if verdict.decision == "modify":
        lines.append("modified %s" % (hashlib.sha256(verdict.arguments_text.encode("utf-8")).hexdigest(),))
    return "\n".join(lines) + "\n"


def _key(signer: Any) -> Tuple[str, str]:
    """``(name, key ID in hex)`` of a note signer, as the task record names it."""
    return str(signer.name), bytes(signer.key_id).hex()


def check_approval_signer(signer: object) -> None:
    """``run(approval_signer=...)``: a note signer (``name``, a 4-byte ``key_id``, ``sign``), or ``RunConfigError``."""
    if signer is None:
        return
    try:
        ok = callable(getattr(signer, "sign")) and isinstance(getattr(signer, "name"), str)
        ok = ok and len(bytes(getattr(signer, "key_id"))) == 4
    except Exception:
        ok = False
    if not ok:
        raise RunConfigError(
            "approval_signer", "must be None or a note signer (name, a 4-byte key_id, sign), such as an Ed25519Signer"
        )


def approval_members(policy: Mapping[str, str], signer: Any) -> Dict[str, Any]:
    """The task record's members beside ``approval`` (``docs/format.md``, the task record):

    * ``predicate_outcomes: true`` when a tool is gated by a predicate: each call
      of it then records the predicate's outcome (``"gated": false`` on the
      ``tool`` record of a call it let through), so a verifier can tell a call
      that ran ungated from one whose decision was stripped;
    * ``approval_signer: {"name", "key_id"}`` (the key's name and 4-byte ID in
      hex, never key material) when decisions are signed: every decision a
      person made then carries a note by that key.

    ``{}`` for a run that uses neither, so its task record is unchanged.
    """
    members: Dict[str, Any] = {}
    if "predicate" in policy.values():
        members["predicate_outcomes"] = True
    if signer is not None:
        if not policy:
            raise RunConfigError("approval_signer", "is given, but no tool requires approval: there is nothing to sign")
        name, key_id = _key(signer)
        members["approval_signer"] = {"name": name, "key_id": key_id}
    return members


def judge(
    answer: object, request: ApprovalRequest, max_arguments_bytes: int, run_signer: Any = None
) -> Optional[Verdict]:
    """What the loop does with an approver's ``answer`` to ``request``: ``None`` to defer, else a :class:`Verdict`.

    1. ``None`` defers; a :class:`RecordedDecision` is taken as recorded;
    2. anything but a :class:`Decision` denies (fail closed);
    3. a decision bound to other arguments (``arguments_sha256``) denies;
    4. a modify's arguments must be recordable and fit ``max_arguments_bytes``, else it denies;
    5. a decision with a ``signer`` is signed (:func:`note_text`); a signer that fails denies.
       With the run's ``run_signer`` (``run(approval_signer=...)``) every decision is
       signed by it, and one that brings another key denies.
    """
    # 1.
    if answer is None:
        return None
    if isinstance(answer, RecordedDecision):
        member = answer.member
        recorded = member.get("arguments")
        recorded_text = canonical_bytes(recorded).decode("utf-8") if isinstance(recorded, dict) else ""
        return Verdict(
            str(member.get("decision")),
            member.get("by"),
            str(member.get("reason", "")),
            recorded if isinstance(recorded, dict) else None,
            recorded_text,
            str(member.get("note", "")),
        )
    # 2.
    kind = _NAMES.get(type(answer))
    if kind is None:
        return closed(
            "the approver returned %s, not Approve, Deny, Modify, Terminate or None" % (type(answer).__name__,)
        )
    decision: Decision = answer  # type: ignore[assignment]
    # 3.
    if decision.arguments_sha256 is not None and decision.arguments_sha256 != request.arguments_sha256:
        return closed(
            "the decision of %s is bound to arguments with SHA-256 %s, but this call's are %s"
            % (json.dumps(decision.by, ensure_ascii=False), decision.arguments_sha256, request.arguments_sha256)
        )
    # 4.
    arguments: Optional[Dict[str, Any]] = None
    text = ""
    if isinstance(decision, Modify):
        try:
            value, text = snapshot(dict(decision.arguments), "$.arguments", _MODIFIED_DEPTH)
        except UnrecordableError as exc:
            return closed(
                "the arguments modified by %s cannot be recorded: %s"
                % (json.dumps(decision.by, ensure_ascii=False), exc)
            )
        if len(text.encode("utf-8")) > max_arguments_bytes:
            return closed(
                "the arguments modified by %s are %d bytes, more than a record holds (%d)"
                % (json.dumps(decision.by, ensure_ascii=False), len(text.encode("utf-8")), max_arguments_bytes)
            )
        arguments = dict(value)
    reason = getattr(decision, "reason", "")
    try:
        canonical_bytes([decision.by, reason])
    except UnrecordableError as exc:
        return closed("the decision cannot be recorded: %s" % (exc,))
    verdict = Verdict(kind, decision.by, reason, arguments, text)
    # 5.
    return _signed(verdict, request, decision, run_signer)


def _signed(verdict: Verdict, request: ApprovalRequest, decision: Decision, run_signer: Any) -> Verdict:
    """Step 5 of :func:`judge`: the verdict signed by the decision's signer, else the run's; a failure denies."""
    signer = decision.signer if decision.signer is not None else run_signer
    who = json.dumps(decision.by, ensure_ascii=False)
    if run_signer is not None and signer is not run_signer and _safe_key(signer) != _key(run_signer):
        return closed(
            "the decision of %s is signed by key %s, not by the run's approval signer %s"
            % (who, "+".join(_safe_key(signer)), "+".join(_key(run_signer)))
        )
    if signer is None:
        return verdict
    try:
        signed = sign_note(note_text(request, verdict), signer)
    except Exception as exc:  # a signer that fails: nothing unsigned is passed off as signed
        return closed("the decision of %s could not be signed: %s: %s" % (who, type(exc).__name__, exc))
    return dataclasses.replace(verdict, note=signed.to_bytes().decode("utf-8"))


def _safe_key(signer: Any) -> Tuple[str, str]:
    try:
        return _key(signer)
    except Exception:  # a signer whose name or key_id cannot be read: no key of the run's
        return ("?", "?")


def seal_closed(verdict: Optional[Verdict], request: ApprovalRequest, run_signer: Any) -> Optional[Verdict]:
    """A fail-closed denial (``by`` null) in a run with an approval signer, signed by the run's key too, so that
    no decision of such a run is unsigned (a call that ran cannot be passed off as one denied); unsigned only
    when the signer itself fails, which :func:`verify_approvals` reports."""
    if verdict is None or verdict.by is not None or verdict.note or run_signer is None:
        return verdict
    try:
        signed = sign_note(note_text(request, verdict), run_signer)
    except Exception:  # the signer fails: the denial stands, unsigned (nothing runs)
        return verdict
    return dataclasses.replace(verdict, note=signed.to_bytes().decode("utf-8"))


def decision_from_json(value: object, where: str = "$") -> Decision:
    """A decision from its JSON form (a decisions file, ``agentloop resume --decisions``).

    ``{"decision": "approve"|"deny"|"modify"|"terminate", "by": "...",
    "reason": "..." (deny, terminate), "arguments": {...} (modify),
    "arguments_sha256": "<hex>" (optional)}``.  Raises
    :class:`~agentloop.errors.ValidationError` (a ``ValueError``) naming the place.
    """
    if not isinstance(value, dict):
        raise ValidationError(where, "a decision is an object, got %s" % (type(value).__name__,))
    allowed = {"decision", "by", "reason", "arguments", "arguments_sha256"}
    extra = sorted(set(value) - allowed)
    if extra:
        raise ValidationError(
            where, "unknown member %s (have: %s)" % (json.dumps(extra[0]), ", ".join(sorted(allowed)))
        )
    kind = value.get("decision")
    if kind not in APPROVAL_DECISIONS:
        raise ValidationError(
            where + ".decision", "%s is not one of %s" % (json.dumps(kind), ", ".join(APPROVAL_DECISIONS))
        )
    by, sha = value.get("by"), value.get("arguments_sha256")
    try:
        if kind == "approve":
            return Approve(by, sha)  # type: ignore[arg-type]
        if kind == "modify":
            if "arguments" not in value:
                raise ValueError("a modify needs 'arguments'")
            return Modify(value["arguments"], by, sha)  # type: ignore[arg-type]
        if "reason" not in value:
            raise ValueError("a %s needs 'reason'" % (kind,))
        cls = Deny if kind == "deny" else Terminate
        return cls(value["reason"], by, sha)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise ValidationError(where, str(exc)) from None


def verify_approvals(path: PathLike, trusted: Sequence[Verifier], require: Sequence[str] = ()) -> List[Tuple[int, str]]:
    """Check every decision of a transcript and its note; return ``[(record index, problem)]``, empty when all hold.

    1. The chain must be intact (a problem at index -1 otherwise); payload
       faults (``bad_payload``: a gated call that ran with no decision, a
       decision stripped of its note in a run that names a signer) are
       reported at their records.
    2. When the task record names an ``approval_signer``, every decision a
       person made (``by`` not null) must carry a note, and that key must be
       among ``trusted`` and have signed it.
    3. Each note parses (C2SP signed-note); its text is exactly
       :func:`note_text` of the run, the assistant record that asked, the
       call, its recorded arguments and the recorded decision (so a note
       moved to another call, run or decision fails); a trusted key signed
       it (:func:`~agentloop.signing.note.verify_note`, with ``require``).
    """
    verdict = verify_file(path)
    broken = [fault for fault in verdict.faults if fault.kind != "bad_payload"]
    if broken:
        return [(-1, "the transcript does not verify: %s" % (broken[0],))]
    problems: Dict[int, str] = {}
    for fault in verdict.faults:
        problems.setdefault(fault.index if fault.index is not None else -1, "bad_payload: %s" % (fault.detail,))
    reader = _NoteReader(trusted, require)
    for index, (_, entry, _) in enumerate(iter_file(path)):
        problem = reader.read(index, cast(Dict[str, Any], entry))  # the chain is intact: every record is an object
        if problem:
            problems.setdefault(index, problem)
    return sorted(problems.items())


class _NoteReader:
    """:func:`verify_approvals`, record by record: the run, the asking turn, and each decision's note."""

    def __init__(self, trusted: Sequence[Verifier], require: Sequence[str]) -> None:
        self.trusted, self.require = list(trusted), list(require)
        self.origin, self.assistant_hash, self.step = "", "", 0
        self.calls: Dict[Any, Any] = {}
        self.signer: Optional[Tuple[str, str]] = None

    def read(self, index: int, record: Dict[str, Any]) -> str:
        kind, payload, digest = record.get("kind"), record.get("payload"), record.get("hash")
        if not isinstance(payload, dict):
            return ""
        if index == 0:
            self.origin = "agentloop/1/%s" % (digest,)
            declared = payload.get("approval_signer")
            if isinstance(declared, dict):
                self.signer = (str(declared.get("name")), str(declared.get("key_id")))
        elif kind == "assistant":
            step = payload.get("step")
            self.assistant_hash, self.step = str(digest), step if isinstance(step, int) else -1
            calls = payload.get("tool_calls")
            self.calls = {c.get("id"): c for c in calls if isinstance(c, dict)} if isinstance(calls, list) else {}
        elif kind == "tool" and isinstance(payload.get("approval"), dict):
            try:
                return self._decision(payload, payload["approval"])
            except (KeyError, TypeError, ValueError) as exc:  # a payload the grammar already named (bad_payload)
                return "the decision cannot be checked: %s: %s" % (type(exc).__name__, exc)
        return ""

    def _decision(self, payload: Dict[str, Any], member: Dict[str, Any]) -> str:
        if "note" not in member:
            if self.signer is not None:  # a fail-closed denial too: the run's key signs it (seal_closed)
                return "the decision of %s has no note, but the run names %s as its approval signer" % (
                    json.dumps(member.get("by")),
                    "+".join(self.signer),
                )
            return ""
        arguments = self.calls.get(payload.get("id"), {}).get("arguments")
        if not isinstance(arguments, dict):
            return "the call has no recorded arguments, so nothing to bind the note to"
        request = ApprovalRequest(
            self.origin,
            self.step,
            payload["id"],
            payload["name"],
            arguments,
            arguments_sha256(arguments),
            self.assistant_hash,
        )
        modified = member.get("arguments")
        expected = note_text(
            request,
            Verdict(
                str(member.get("decision")),
                member.get("by"),
                str(member.get("reason", "")),
                None,
                canonical_bytes(modified).decode("utf-8") if isinstance(modified, dict) else "",
            ),
        )
        keys = self.trusted
        if self.signer is not None:
            keys = [k for k in self.trusted if _safe_key(k) == self.signer]
            if not keys:
                return "no trusted key is the run's approval signer %s" % ("+".join(self.signer),)
        try:
            note: Note = parse_note(str(member["note"]).encode("utf-8"))
            if note.text != expected:
                raise BadSignatureError("the note's text does not match this call and decision")
            verify_note(note, keys, self.require)
        except (MalformedNoteError, BadSignatureError, SigningKeyError) as exc:
            return str(exc)
        return ""


def approval_policy(registry: ToolRegistry) -> Dict[str, str]:
    """The task record's ``approval`` member: each gated tool's name -> ``"always"`` or ``"predicate"``."""
    return {t.name: "always" if t.requires_approval is True else "predicate" for t in registry if t.gated}
