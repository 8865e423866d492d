"""The budgeted tool loop: model turn -> tool calls -> tool results -> repeat.

The whole loop is :func:`run`, readable top to bottom.  It touches no clock
and no random source, so its transcript is a pure function of
``(task, model, tools, budgets)``.

Three failure channels, never mixed:

* developer misuse raises at once, before the transcript is created
  (:class:`~agentloop.errors.RunConfigError`, ``SchemaError``, ...);
* model mistakes become ``tool`` records with ``ok: false`` that the model
  sees (unknown tool, unrecordable or invalid arguments, a tool raising, a
  result that cannot be recorded);
* run stops are one of :data:`STOP_REASONS`, written as the last record.

Stop precedence (pinned): ``step_budget`` is checked before each turn.  After
a turn is recorded: ``sentinel``, then ``no_tool_calls``, then
``token_budget`` (running total > ``max_tokens``: the turn's tools are not
run).  ``model_error`` ends a turn that could not be recorded at all.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from .canonical import MAX_SAFE_INTEGER, canonical_bytes, canonical_text, json_path, snapshot
from .transcript.checkpoint import check_run_anchor
from .errors import RunConfigError, ToolFailure, UnrecordableError
from .messages import Message, Model, ModelReply, RunResult, ToolCall, Usage, shown
from .tools.registry import Tool, ToolRegistry
from .transcript.format import FORMAT, MAX_RECORD_BYTES, MIN_RECORD_BYTES, PathLike
from .transcript.writer import TranscriptWriter

__all__ = ["run", "estimate_tokens", "MAX_ERROR_CHARS"]

def estimate_tokens(emitted: str) -> int:
    """The seed's heuristic: ``max(1, len(emitted) // 4)``, in code points.

    It bounds the loop; it does not claim to be any model's tokenizer.
    """
    return max(1, len(emitted) // 4)


#: Exception messages and other error texts are cut to this many characters.
MAX_ERROR_CHARS = 2000
#: How deep a tool's arguments and its result sit inside their records
#: (record > payload > tool_calls > call > arguments; record > payload > value):
#: :data:`~agentloop.canonical.MAX_DEPTH` bounds the whole record.
ARGUMENTS_DEPTH = 4
RESULT_DEPTH = 2
# Room kept in a record for everything but the text and arguments.
_RECORD_OVERHEAD = 4096


def _bounded(text: str) -> str:
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return "%s... (%d characters cut)" % (text[:MAX_ERROR_CHARS], len(text) - MAX_ERROR_CHARS)


def _describe(exc: BaseException) -> str:
    """``RuntimeError: message``, safe to record whatever the exception holds."""
    try:
        message = str(exc)
    except Exception:  # an exception whose __str__ itself raises
        message = "<unprintable>"
    text = "%s: %s" % (type(exc).__name__, message) if message else type(exc).__name__
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _check_config(
    task: object,
    model: object,
    max_steps: object,
    max_tokens: object,
    stop_sentinel: object,
    flags: Mapping[str, object],
    max_record_bytes: object,
) -> None:
    if not isinstance(task, str):
        raise RunConfigError("task", "must be a str, got %s" % (type(task).__name__,))
    if not callable(model):
        raise RunConfigError("model", "must be callable (messages, manifest) -> ModelReply")
    for name, value in (("max_steps", max_steps), ("max_tokens", max_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SAFE_INTEGER:
            raise RunConfigError(name, "must be an int from 0 to 2**53-1, got %s" % (shown(value),))
    if stop_sentinel is not None and (not isinstance(stop_sentinel, str) or stop_sentinel == ""):
        raise RunConfigError(
            "stop_sentinel", "must be None or a non-empty str (every text contains %s)" % (shown(stop_sentinel),)
        )
    for name, flag in flags.items():
        if not isinstance(flag, bool):
            raise RunConfigError(name, "must be True or False, got %s" % (shown(flag),))
    if isinstance(max_record_bytes, bool) or not isinstance(max_record_bytes, int) or max_record_bytes < MIN_RECORD_BYTES:
        raise RunConfigError("max_record_bytes", "must be an int of at least %d, got %s" % (MIN_RECORD_BYTES, shown(max_record_bytes)))



def _budgets(max_steps: int, max_tokens: int, stop_sentinel: Optional[str], max_record_bytes: int) -> Dict[str, Any]:
    """The task record's budgets; ``max_record_bytes`` only when not the default,
    so a replay can reproduce the run and default transcripts keep their bytes."""
    budgets: Dict[str, Any] = {"max_steps": max_steps, "max_tokens": max_tokens, "stop_sentinel": stop_sentinel}
    if max_record_bytes != MAX_RECORD_BYTES:
        budgets["max_record_bytes"] = max_record_bytes
    return budgets


def _reply_problem(reply: object) -> str:
    """Why ``reply`` cannot be taken as a turn ("" when it can).

    ``ModelReply`` checks itself when built, but a subclass or
    ``object.__setattr__`` can bypass that, so the loop checks again.
    """
    if not isinstance(reply, ModelReply):
        return "model returned %s, not ModelReply" % (type(reply).__name__,)
    if not isinstance(reply.text, str):
        return "model reply text is %s, not a str" % (type(reply.text).__name__,)
    if not isinstance(reply.tool_calls, tuple):
        return "model reply tool_calls is %s, not a tuple" % (type(reply.tool_calls).__name__,)
    for position, call in enumerate(reply.tool_calls):
        if not isinstance(call, ToolCall):
            return "model reply tool_calls[%d] is %s, not a ToolCall" % (position, type(call).__name__)
        if not isinstance(call.name, str) or not isinstance(call.id, str) or not isinstance(call.arguments, dict):
            return "model reply tool_calls[%d] has a name, id or arguments of the wrong type" % (position,)
        if not isinstance(call.arguments_error, str):
            return "model reply tool_calls[%d] has an arguments_error that is not a str" % (position,)
    usage = reply.usage
    if usage is not None and not (
        isinstance(usage, Usage)
        and all(
            type(n) is int and 0 <= n <= MAX_SAFE_INTEGER for n in (usage.input_tokens, usage.output_tokens)
        )
    ):
        return "model reply usage is %s, not a Usage of two ints from 0 to 2**53-1" % (type(usage).__name__,)
    try:
        canonical_text(reply.text, "$.text")
        for position, call in enumerate(reply.tool_calls):
            canonical_text(call.name, "$.tool_calls[%d].name" % position)
            canonical_text(call.id, "$.tool_calls[%d].id" % position)
            canonical_text(call.arguments_error, "$.tool_calls[%d].arguments_error" % position)
    except UnrecordableError as exc:
        return "model reply is not recordable: %s" % (exc,)
    return ""


def _model_info(model: object) -> Optional[Dict[str, Any]]:
    """What ``model.model_info()`` says about the model, read once; ``None`` without one.

    A provider adapter names itself this way (provider, model name, host); the
    loop records the object as the task record's ``model`` member.  A plain
    callable has no ``model_info`` and its task record has no ``model`` key.
    """
    describe = getattr(model, "model_info", None)
    if describe is None:
        return None
    if not callable(describe):
        raise RunConfigError("model", "model_info must be a method returning a dict or None")
    try:
        info = describe()
    except Exception as exc:
        raise RunConfigError("model", "model_info() raised %s" % (_describe(exc),)) from None
    if info is None:
        return None
    if not isinstance(info, dict):
        raise RunConfigError("model", "model_info() must return a dict or None, got %s" % (type(info).__name__,))
    try:
        recorded, _ = snapshot(info, "$.model", 2)
    except UnrecordableError as exc:
        raise RunConfigError("model", "model_info() is not recordable: %s" % (exc,)) from None
    return dict(recorded)


def run(
    task: str,
    model: Model,
    tools: Union[ToolRegistry, Iterable[Tool]],
    *,
    transcript: PathLike,
    max_steps: int,
    max_tokens: int,
    stop_sentinel: Optional[str] = None,
    overwrite: bool = False,
    fsync: bool = False,
    max_record_bytes: int = MAX_RECORD_BYTES,
    checkpoint: Optional[PathLike] = None,
    key: Optional[bytes] = None,
) -> RunResult:
    """Run ``model`` on ``task`` with ``tools`` and write the transcript.

    The transcript file must not exist unless ``overwrite=True``.  Records are
    written as they happen; ``fsync=True`` also forces each to disk.  No
    record may exceed ``max_record_bytes``: a tool result that would is
    refused as data, a model reply that would is a ``model_error``.
    ``KeyboardInterrupt`` and ``SystemExit`` propagate, leaving a verifiable
    prefix; every ``Exception`` from the model or a tool becomes data.
    Developer mistakes raise before the transcript file is touched.
    ``checkpoint=PATH`` writes the run's checkpoint there after the stop
    record (the records made durable first, then the checkpoint replaced
    atomically), HMAC-signed when ``key`` (bytes) is given; an existing
    checkpoint file is refused unless ``overwrite=True``.
    """
    _check_config(
        task, model, max_steps, max_tokens, stop_sentinel, {"overwrite": overwrite, "fsync": fsync}, max_record_bytes
    )
    check_run_anchor(transcript, checkpoint, key, overwrite)
    # The tools of this run are fixed here: registering more during the run
    # changes nothing, so the recorded manifest stays the whole truth.
    registry = ToolRegistry(list(tools))
    manifest = registry.manifest()
    have = ", ".join(registry.names) or "none"
    task_payload = {
        "format": FORMAT,
        "task": task,
        "budgets": _budgets(max_steps, max_tokens, stop_sentinel, max_record_bytes),
        "tools": manifest,
    }
    model_info = _model_info(model)
    if model_info is not None:  # only an adapter adds the key: plain callables' records are unchanged
        task_payload["model"] = model_info
    try:  # everything the task record holds, checked before the file is opened
        size = len(canonical_bytes(task_payload, "$.payload", depth=1))
    except UnrecordableError as exc:
        raise RunConfigError("task", str(exc)) from None
    if size > max_record_bytes - 256:
        raise RunConfigError("task", "the task record (%d bytes) exceeds max_record_bytes %d" % (size, max_record_bytes))

    with TranscriptWriter(transcript, overwrite=overwrite, fsync=fsync, max_record_bytes=max_record_bytes) as out:
        out.append("task", task_payload)
        messages: List[Message] = [{"role": "user", "content": task}]
        steps = tokens = 0

        def stop(reason: str, detail: str) -> RunResult:
            out.append("stop", {"reason": reason, "steps": steps, "tokens": tokens, "detail": _bounded(detail)})
            if checkpoint is not None:
                out.checkpoint(checkpoint, key)
            answer = messages[-1]["content"] if reason in ("no_tool_calls", "sentinel") else None
            return RunResult(reason, steps, tokens, out.count, out.head, _bounded(detail), answer)

        while True:
            # 1. The step budget is checked before the turn is spent.
            if steps >= max_steps:
                return stop("step_budget", "max_steps of %d reached (steps=%d)" % (max_steps, steps))

            # 2. One model turn; an Exception, a non-ModelReply or a reply that
            #    cannot be recorded is a model_error.
            try:
                reply = model(messages, manifest)
            except Exception as exc:
                return stop("model_error", "model raised %s" % (_describe(exc),))
            problem = _reply_problem(reply)
            if problem:
                return stop("model_error", problem)

            # 3. Record the turn.  Each argument object is read once into a
            #    plain-JSON snapshot that the record, the model and the tool
            #    all share; arguments that cannot be recorded are kept out of
            #    the record (``arguments: null`` plus the reason).
            calls: List[Tuple[str, str, Optional[Dict[str, Any]], str]] = []
            recorded_calls: List[Dict[str, Any]] = []
            emitted = [reply.text]
            seen_ids = set()
            # Arguments are kept in the record while they fit in it, in order.
            room = max_record_bytes - len(reply.text.encode("utf-8")) - _RECORD_OVERHEAD
            for position, call in enumerate(reply.tool_calls):
                call_id = call.id or "call_%d_%d" % (steps + 1, position)
                problem = "call id %s is used twice in this turn" % (json.dumps(call_id),) if call_id in seen_ids else ""
                seen_ids.add(call_id)
                arguments: Optional[Dict[str, Any]] = None
                try:
                    if call.arguments_error:  # unreadable arguments take the unrecordable path below,
                        problem = problem or call.arguments_error  # with this text as the error
                        raise UnrecordableError(json_path("$", call.name), call.arguments_error)
                    arguments, arguments_text = snapshot(call.arguments, json_path("$", call.name), ARGUMENTS_DEPTH)
                    size = len(arguments_text.encode("utf-8")) + len(call.name) + len(call_id)
                    if size > room:
                        arguments = None
                        raise UnrecordableError(
                            json_path("$", call.name),
                            "arguments of %d bytes do not fit max_record_bytes %d" % (size, max_record_bytes),
                        )
                    room -= size
                    emitted.append(call.name + arguments_text)
                except UnrecordableError as exc:
                    problem = problem or "unrecordable arguments: %s" % (exc,)
                    emitted.append(call.name)
                entry: Dict[str, Any] = {"id": call_id, "name": call.name, "arguments": arguments}
                if arguments is None:
                    entry["arguments_error"] = problem
                calls.append((call_id, call.name, arguments, problem))
                recorded_calls.append(entry)
            # Reported usage, when the model gives it, replaces the heuristic for this turn.
            usage = reply.usage
            turn_tokens = estimate_tokens("".join(emitted)) if usage is None else usage.input_tokens + usage.output_tokens
            payload: Dict[str, Any] = {
                "step": steps + 1,
                "text": reply.text,
                "tool_calls": recorded_calls,
                "tokens": turn_tokens,
                "total_tokens": tokens + turn_tokens,
            }
            if usage is not None:
                payload["usage"] = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
            if reply.truncated:
                payload["truncated"] = True
            try:
                out.append("assistant", payload)
            except UnrecordableError as exc:  # only a reply over max_record_bytes
                return stop("model_error", "model reply is not recordable: %s" % (exc,))
            steps += 1
            tokens += turn_tokens
            messages.append(
                {
                    "role": "assistant",
                    "content": reply.text,
                    "tool_calls": [{"id": c[0], "name": c[1], "arguments": c[2]} for c in calls],
                }
            )

            # 4. The stops a recorded turn can trigger, in their fixed order.
            if stop_sentinel is not None and stop_sentinel in reply.text:
                return stop("sentinel", "the assistant's text contains the stop sentinel %s" % (shown(stop_sentinel),))
            if not calls:
                return stop("no_tool_calls", "the assistant asked for no tools")
            if tokens > max_tokens:
                return stop(
                    "token_budget",
                    "max_tokens of %d exceeded (tokens=%d); %d tool call(s) not run"
                    % (max_tokens, tokens, len(calls)),
                )

            # 5. Run the calls in order; every failure is a result the model sees.
            for call_id, name, arguments, problem in calls:
                if problem:
                    ok, value = False, problem
                else:
                    ok, value = _call_tool(registry, have, name, arguments, problem)
                result: Dict[str, Any] = {"step": steps, "id": call_id, "name": name, "ok": ok}
                result["value" if ok else "error"] = value if ok else _bounded(value)
                try:
                    out.append("tool", result)
                except UnrecordableError as exc:  # a result over max_record_bytes
                    ok, value = False, "tool %r returned an unrecordable result: %s" % (name, exc)
                    result = {"step": steps, "id": call_id, "name": name, "ok": ok, "error": value}
                    out.append("tool", result)
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call_id,
                        "name": name,
                        "ok": ok,
                        "content": canonical_text(value) if ok else result["error"],
                    }
                )


def _call_tool(
    registry: ToolRegistry, have: str, name: str, arguments: Optional[Mapping[str, Any]], problem: str
) -> Tuple[bool, Any]:
    """Run one call; return ``(True, value)`` or ``(False, error text)``."""
    tool = registry.get(name)
    if tool is None:
        return False, "no tool named %r (have: %s)" % (name, have)
    if arguments is None:
        return False, problem
    # The tool's schema was compiled when it was built; report the first error.
    error = tool.first_error(arguments, json_path("$", name))
    if error is not None:
        return False, "invalid arguments: %s" % (error,)
    try:  # invoke converts validated arguments to fn's annotations when the tool knows them
        value = tool.invoke(copy.deepcopy(dict(arguments)))
    except ToolFailure as exc:  # the tool chose its own error text
        return False, exc.text
    except Exception as exc:
        return False, "tool %r raised %s" % (name, _describe(exc))
    try:
        recorded, _ = snapshot(value, "$", RESULT_DEPTH)
    except UnrecordableError as exc:
        return False, "tool %r returned an unrecordable result: %s" % (name, exc)
    return True, recorded
