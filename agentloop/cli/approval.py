"""A person in the loop on the command line: ``run --approve``, ``pending`` and ``resume``.

``--approve`` says who decides the calls of tools that require approval
(:mod:`agentloop.loop.approval`):

* ``ask`` -- each call is shown on stderr, whole and escaped (every
  character a terminal could act on as ``\\uXXXX``), with the SHA-256 of its
  arguments, and the answer is read from stdin, one line: ``a`` (approve),
  ``d REASON`` (deny), ``m JSON`` (modify: run with these arguments),
  ``t REASON`` (terminate the run), ``p`` (pause: defer).  Anything else is
  asked again, at most :data:`MAX_ASKS` times, then the call is deferred.
  End of input (EOF, a closed or empty stdin) defers: the run pauses,
  nothing of the call is done, and ``agentloop resume`` goes on later.  It
  never waits for input that cannot come.
* ``deny-all`` -- every gated call is denied (``by`` says who ran it).
* ``FILE`` -- decisions as JSON, by call id:
  ``{"CALL_ID": {"decision": "approve", "by": "alice"}, ...}``; each
  decision answers the first call with that id, once; a call without one is
  deferred.  :func:`agentloop.loop.approval.decision_from_json` is the shape.

A paused run exits 5 after listing what waits.  ``agentloop pending FILE``
lists the calls a transcript leaves waiting; ``agentloop resume FILE
--decisions D.json`` decides them and goes on, appending to FILE.

Exit codes of ``resume``: those of ``run`` (0 an answer, 1 ``model_error``,
2 usage error -- a decision refused, a file that does not verify or does
not match ``--anchor`` --, 3 another stop, 4, 70, 130), and 5: paused again.
``pending``: 0 (what waits is listed, or that nothing does), 2 a file that
does not verify or cannot be read.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from typing import Any, Callable, Dict, Optional, TextIO, Tuple

from ..loop.approval import (
    Approve,
    ApprovalRequest,
    Decision,
    Deny,
    Modify,
    Terminate,
    decision_from_json,
    verify_approvals,
)
from ..canonical import strict_loads
from ..errors import RunConfigError
from ..messages import AWAITING_APPROVAL, RunResult
from ..models.spec import model_from_spec
from ..models.anthropic import DEFAULT_MAX_TOKENS
from ..models.http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from ..loop.resume import RESUMED_CLOCK, read_pending, resume
from ..tools.loader import load_tools
from ..transcript.checkpoint import load_key
from ..transcript.verify import iter_file, verify_file
from .keys import load_trusted
from .outcome import exit_status, guarded, report_answer, report_stop, settled
from .modelopts import add_model_options, live_text, model_options
from .output import (
    Commands,
    EXIT_FAULT,
    EXIT_OK,
    Refused,
    check_input,
    check_output,
    count_arg,
    emit,
    format_record,
    quote,
    report_verdict,
    same_file,
    seconds_arg,
)

__all__ = [
    "add_commands",
    "add_approve_options",
    "approver_from_args",
    "report_pause",
    "verify_decisions",
    "EXIT_PAUSED",
    "MAX_ASKS",
]

#: The exit status of a run (or a resume) that paused for approval.
EXIT_PAUSED = 5
#: How many unreadable answers ``--approve ask`` takes for one call before it defers.
MAX_ASKS = 5
_HELP = (
    "answer: a = approve, d REASON = deny, m JSON = modify (run with these arguments), "
    "t REASON = terminate the run, p = pause (defer)"
)


def _who() -> str:
    try:
        return getpass.getuser() or "unknown"
    except Exception:  # no user name to be found (a container without $USER, no pwd entry)
        return "unknown"


class TerminalApprover:
    """``--approve ask``: show each call on ``prompt`` (escaped, whole), read one answer line from ``answers``."""

    def __init__(self, by: str, answers: TextIO, prompt: TextIO) -> None:
        self.by = by
        self.answers = answers
        self.prompt = prompt

    def __call__(self, request: ApprovalRequest) -> Optional[Decision]:
        emit(
            self.prompt,
            "approval needed: call %s of step %d, tool %s"
            % (quote(request.call_id, None), request.step, quote(request.tool, None)),
        )
        emit(self.prompt, "  arguments (SHA-256 %s): %s" % (request.arguments_sha256, quote(request.arguments, None)))
        for _ in range(MAX_ASKS):
            emit(self.prompt, _HELP)
            emit(self.prompt, "> ", end="")
            line = self.answers.readline()
            if not line:
                emit(self.prompt, "")
                emit(self.prompt, "end of input: the call is deferred (the run pauses; agentloop resume goes on)")
                return None
            understood, decision = self._read(line.strip(), request)
            if understood:
                return decision
        emit(self.prompt, "no answer understood after %d tries: the call is deferred" % (MAX_ASKS,))
        return None

    def _read(self, answer: str, request: ApprovalRequest) -> Tuple[bool, Optional[Decision]]:
        """``(True, decision or None to defer)``, or ``(False, None)`` for an answer not understood
        (said on the prompt)."""
        word, _, rest = answer.partition(" ")
        word, rest = word.lower(), rest.strip()
        bound = request.arguments_sha256  # the answer is about the call shown, and no other
        if word in ("a", "approve", "y", "yes"):
            return True, Approve(self.by, bound)
        if word in ("d", "deny", "n", "no"):
            return True, Deny(rest, self.by, bound)
        if word in ("t", "terminate"):
            return True, Terminate(rest, self.by, bound)
        if word in ("p", "pause", "defer"):
            return True, None
        if word in ("m", "modify"):
            try:
                arguments = strict_loads(rest)
            except (ValueError, RecursionError) as exc:
                emit(self.prompt, "not JSON: %s" % (exc,))
                return False, None
            if not isinstance(arguments, dict):
                emit(self.prompt, "the arguments are a JSON object")
                return False, None
            return True, Modify(arguments, self.by, bound)
        emit(self.prompt, "not understood: %s" % (quote(answer, None),))
        return False, None


def _decisions_file(path: str) -> Dict[str, Decision]:
    check_input(path, pipe=False)
    try:
        with open(path, encoding="utf-8") as handle:
            data = strict_loads(handle.read())
    except (OSError, ValueError, RecursionError) as exc:
        raise Refused(path, "cannot read it as JSON: %s" % (exc,)) from None
    if not isinstance(data, dict):
        raise Refused(path, "decisions are a JSON object {CALL_ID: DECISION}")
    decisions: Dict[str, Decision] = {}
    for call_id, value in data.items():
        where = "$[%s]" % (json.dumps(call_id),)
        value = _bound(path, where, call_id, value)
        try:
            decisions[call_id] = decision_from_json(value, where)
        except ValueError as exc:
            raise Refused(path, str(exc)) from None
    return decisions


#: The member by which a decision in a file opts out of naming the arguments it approves (docs/approvals.md warns).
ANY_ARGUMENTS = "any_arguments"


def _bound(path: str, where: str, call_id: str, value: object) -> object:
    """A decision to run a call must say which arguments it runs it with (``arguments_sha256``), or
    opt out in so many words (``"any_arguments": true``): a file written before the call was seen
    would otherwise approve whatever arguments the model sent.  Returns the decision without the opt-out."""
    if not isinstance(value, dict):
        return value
    runs = value.get("decision") in ("approve", "modify")
    if ANY_ARGUMENTS in value:
        if value[ANY_ARGUMENTS] is not True or not runs or "arguments_sha256" in value:
            raise Refused(
                path,
                "%s.%s: must be true, on an approve or modify decision without arguments_sha256"
                % (where, ANY_ARGUMENTS),
            )
        return {k: v for k, v in value.items() if k != ANY_ARGUMENTS}
    if runs and value.get("arguments_sha256") is None:  # absent or null: bound to nothing
        raise Refused(
            path,
            "%s: the %s decision for call %s names no arguments_sha256: it would run the call with "
            'whatever arguments it has (agentloop pending FILE shows each call\'s; "%s": true accepts any)'
            % (where, value["decision"], json.dumps(call_id), ANY_ARGUMENTS),
        )
    return value


def approver_from_args(args: argparse.Namespace) -> Optional[Callable[[ApprovalRequest], Any]]:
    """The approver ``--approve`` names (``None`` without the option)."""
    spec = getattr(args, "approve", None)
    if spec is None:
        return None
    by = args.by or _who()
    if spec == "ask":
        return TerminalApprover(by, sys.stdin, sys.stderr)
    if spec == "deny-all":
        return lambda request: Deny("denied by --approve deny-all", by)
    decisions = _decisions_file(spec)

    def from_file(request: ApprovalRequest) -> Optional[Decision]:
        return decisions.pop(request.call_id, None)  # each decision answers one call

    return from_file


def add_approve_options(command: argparse.ArgumentParser, what: Optional[str] = None) -> None:
    """``--approve`` and ``--by``, for ``run``, ``resume`` and ``replay``."""
    command.add_argument(
        "--approve",
        metavar="ask|deny-all|FILE",
        help=what
        or "who decides calls of tools that require approval: ask on the terminal, deny "
        "all, or decisions from a JSON file; EOF or an undecided call pauses the run (exit 5)",
    )
    command.add_argument(
        "--by", metavar="NAME", help="who decides, recorded with each decision (default: the login name)"
    )


def report_pause(result: RunResult, path: str, out: TextIO) -> int:
    """After a run that paused: what waits, and how to go on; returns :data:`EXIT_PAUSED`."""
    emit(out, "paused: %s" % (result.detail,))
    for request in result.pending:
        emit(
            out,
            "  waiting: call %s of step %d, tool %s, arguments (SHA-256 %s): %s"
            % (
                quote(request.call_id, None),
                request.step,
                quote(request.tool, None),
                request.arguments_sha256,
                quote(request.arguments, None),
            ),
        )
    emit(
        out,
        "transcript: %s (%d records, head %s); go on with: agentloop resume %s --decisions D.json ..."
        % (path, result.records, result.head, path),
    )
    return EXIT_PAUSED


def _cmd_pending(args: argparse.Namespace, out: TextIO) -> int:
    check_input(args.file, pipe=False)
    found = read_pending(args.file)
    if args.json:
        calls = [
            {
                "call_id": c.call_id,
                "tool": c.tool,
                "arguments": c.arguments,
                "arguments_sha256": c.arguments_sha256,
                "approval": c.policy,
                "position": c.position,
            }
            for c in found.calls
        ]
        emit(
            out,
            json.dumps(
                {
                    "origin": found.origin,
                    "step": found.step,
                    "assistant_hash": found.assistant_hash,
                    "stop": found.stop,
                    "calls": calls,
                },
                sort_keys=True,
            ),
        )
        return EXIT_OK
    if found.stop is not None:
        emit(out, "%s: nothing waits: the run is finished (stop: %s)" % (args.file, found.stop))
        return EXIT_OK
    if not found.calls:
        emit(
            out,
            "%s: no call waits (%d records, no stop record: the run can go on with its next turn)"
            % (args.file, found.records),
        )
        return EXIT_OK
    emit(
        out,
        "%s: %d call(s) of step %d wait (run %s, asked by record %s)"
        % (args.file, len(found.calls), found.step, found.origin, found.assistant_hash),
    )
    for call in found.calls:
        emit(
            out,
            "call %s (position %d): tool %s, approval %s"
            % (quote(call.call_id, None), call.position, quote(call.tool, None), call.policy or "not required"),
        )
        emit(out, "  arguments (SHA-256 %s): %s" % (call.arguments_sha256 or "-", quote(call.arguments, None)))
    return EXIT_OK


def _declared_signer(path: str) -> Optional[str]:
    """``name+key_id`` of the approval signer record 0 names, or ``None``."""
    try:
        for _, record, _ in iter_file(path):
            payload = record.get("payload") if isinstance(record, dict) else None
            signer = payload.get("approval_signer") if isinstance(payload, dict) else None
            return "%s+%s" % (signer.get("name"), signer.get("key_id")) if isinstance(signer, dict) else None
    except OSError:
        pass
    return None


def verify_decisions(args: argparse.Namespace, out: TextIO) -> int:
    """``verify FILE... --trust VKEY... [--require NAME]...``, no checkpoint: the chain, then each decision's note.

    Each problem :func:`~agentloop.loop.approval.verify_approvals` finds is
    printed at its record; a run that names no approval signer is said to
    have unsigned decisions.  Exit 0 when every file verifies and every
    decision holds, else 1.
    """
    if args.expect_count is not None or args.expect_head is not None or args.exact:
        raise Refused(
            "--trust",
            "without --checkpoint, checks the decisions' notes: --expect-count/--expect-head/"
            "--exact are not taken with it",
        )
    trusted = load_trusted(args)
    failed = False
    results = []
    for path in args.files:
        check_input(path, pipe=False)
    for path in args.files:
        verdict = verify_file(path, max_faults=args.max_faults, require_complete=args.complete)
        problems = verify_approvals(path, trusted, list(args.require)) if verdict.count else []
        chain_broken = any(index < 0 for index, _ in problems)
        failed = failed or not verdict.ok or bool(problems)
        signer = _declared_signer(path)
        if args.json:
            results.append(
                {
                    "file": path,
                    "ok": verdict.ok and not problems,
                    "count": verdict.count,
                    "head": verdict.head,
                    "complete": verdict.complete,
                    "approval_signer": signer,
                    "decisions": [{"index": i, "line": i + 1, "problem": p} for i, p in problems if i >= 0],
                }
            )
            continue
        report_verdict(path, verdict, out)
        for index, problem in problems:
            if index >= 0:
                emit(out, "%s: record %d (line %d): decision: %s" % (path, index, index + 1, problem))
        if verdict.count and not chain_broken and not problems:
            said = "every one signed by the approval signer %s, whose key is trusted" % (signer,)
            emit(out, "%s: decisions: %s" % (path, said if signer is not None else "every note present holds"))
        if signer is None and verdict.count and not chain_broken:
            emit(out, "note: %s names no approval signer: its decisions need not be signed" % (path,))
    if args.json:
        emit(out, json.dumps(results, indent=2, ensure_ascii=False), lines=True)
    return EXIT_FAULT if failed else EXIT_OK


def _cmd_resume(args: argparse.Namespace, out: TextIO) -> int:
    return settled("resume", args.file, lambda: _resume(args, out))


def _resume(args: argparse.Namespace, out: TextIO) -> int:
    check_input(args.file, pipe=False)
    for option in (args.anchor, args.decisions):
        if option is not None:
            check_input(option, pipe=False)
    if args.checkpoint is not None:
        if same_file(args.file, args.checkpoint):
            raise Refused(args.checkpoint, "is the transcript's own path")
        check_output(args.checkpoint, args.overwrite)
    decisions = {} if args.decisions is None else _decisions_file(args.decisions)
    tools = load_tools(args.tools)
    live = live_text(args)
    model = model_from_spec(
        args.model,
        base_url=args.base_url,
        model_name=args.model_name,
        max_output_tokens=args.max_output_tokens,
        timeout=args.timeout,
        max_retries=args.max_retries,
        **model_options(args, live),
    )
    if args.checkpoint is None and (args.key_file is not None or args.key_env is not None):
        raise RunConfigError("--key-file/--key-env", "needs --checkpoint")
    key = load_key(args.key_file, args.key_env) if args.key_file is not None or args.key_env is not None else None
    approver = approver_from_args(args)
    result = guarded(
        "resume",
        args.file,
        lambda: resume(
            args.file,
            model,
            tools,
            decisions=decisions,
            approver=approver,
            rerun_unrecorded=args.rerun_unrecorded,
            anchor=args.anchor,
            checkpoint=args.checkpoint,
            key=key,
            overwrite=args.overwrite,
            clock=RESUMED_CLOCK,
            on_record=(lambda record: emit(out, format_record(record)))
            if live is None
            else live.before(lambda record: emit(out, format_record(record))),
        ),
        "open",
    )
    if result.stop_reason == AWAITING_APPROVAL:
        return report_pause(result, args.file, out)
    report_stop(result, args.file, out)
    if args.checkpoint is not None:
        emit(out, "checkpoint: %s%s" % (args.checkpoint, " (signed)" if key is not None else ""))
    report_answer(result, out)
    return exit_status(result)


def add_commands(sub: Commands) -> None:
    """Register ``pending`` and ``resume``."""
    waiting = sub.add_parser(
        "pending", epilog="exit status: 0 listed (or nothing waits), 2 a file that cannot be read or does not verify"
    )
    waiting.add_argument("file", metavar="FILE")
    waiting.add_argument(
        "--json", action="store_true", help="one JSON object: origin, step, assistant_hash, stop, calls"
    )
    waiting.set_defaults(handler=_cmd_pending)

    again = sub.add_parser(
        "resume",
        epilog="exit status: as run (0 an answer, 1 model_error, 2 usage error or a refused decision, 3 another stop, "
        "4, 70, 130), and 5 paused again. The model and tools must be the recorded run's.",
    )
    again.add_argument("file", metavar="FILE")
    again.add_argument(
        "--decisions",
        metavar="D.json",
        help='{"CALL_ID": {"decision": "approve"|"deny"|"modify"|"terminate", "by": ..., '
        '"reason": ..., "arguments": {...}, "arguments_sha256": ...}}',
    )
    add_approve_options(again)
    again.add_argument("--model", required=True, metavar="SPEC", help="as for run")
    again.add_argument("--model-name", metavar="NAME")
    again.add_argument("--base-url", metavar="URL")
    again.add_argument("--tools", required=True, metavar="MODULE:REGISTRY")
    again.add_argument(
        "--max-output-tokens",
        type=count_arg,
        metavar="N",
        help="anthropic: max_tokens per reply (default %d)" % DEFAULT_MAX_TOKENS,
    )
    add_model_options(again)  # --thinking, --cache, --prompt-cache-key: as the run had them
    again.add_argument("--timeout", type=seconds_arg, default=DEFAULT_TIMEOUT, metavar="SECONDS")
    again.add_argument("--max-retries", type=count_arg, default=DEFAULT_MAX_RETRIES, metavar="N")
    again.add_argument(
        "--rerun-unrecorded",
        action="store_true",
        help="run again a call with no record that needs no approval (it may have run before a crash)",
    )
    again.add_argument(
        "--anchor", metavar="CKPT", help="the checkpoint written at the pause: FILE must be exactly what it covers"
    )
    again.add_argument(
        "--checkpoint", metavar="CKPT", help="write the run's checkpoint there at the next pause or the stop"
    )
    again.add_argument("--overwrite", action="store_true", help="replace --checkpoint if it exists")
    keys = again.add_mutually_exclusive_group()
    keys.add_argument("--key-file", metavar="K", help="HMAC key: check --anchor's signature and sign --checkpoint")
    keys.add_argument("--key-env", metavar="VAR", help="the same key, from this environment variable")
    again.set_defaults(handler=_cmd_resume)
