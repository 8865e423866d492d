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
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .canonical import canonical_text, json_path
from .errors import RunConfigError, UnrecordableError, ValidationError
from .schema import validate
from .tools import Tool, ToolRegistry
from .transcript import FORMAT, PathLike, TranscriptWriter

__all__ = [
    "ToolCall",
    "ModelReply",
    "Model",
    "Message",
    "RunResult",
    "STOP_REASONS",
    "estimate_tokens",
    "run",
]

#: The closed set of reasons a run stops for.
STOP_REASONS = ("no_tool_calls", "sentinel", "step_budget", "token_budget", "model_error")

#: A message the model sees: a plain dict with a ``"role"`` key.  Shapes:
#:
#: * ``{"role": "user", "content": task}``
#: * ``{"role": "assistant", "content": text, "tool_calls": [{"id", "name", "arguments"}]}``
#:   (``arguments`` is ``None`` when the model sent arguments that cannot be recorded)
#: * ``{"role": "tool", "tool_call_id": id, "name": name, "ok": bool, "content": str}``
#:   (``content`` is the RFC 8785 JSON text of the value when ``ok``, else the error)
Message = Dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asks for.  An empty ``id`` is filled in by the
    loop as ``call_<step>_<position>`` (both from 1 and 0 respectively)."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError("ToolCall.name must be a str, got %s" % (type(self.name).__name__,))
        if not isinstance(self.arguments, Mapping):
            raise TypeError(
                "ToolCall.arguments must be a mapping, got %s" % (type(self.arguments).__name__,)
            )
        if not isinstance(self.id, str):
            raise TypeError("ToolCall.id must be a str, got %s" % (type(self.id).__name__,))


@dataclass(frozen=True)
class ModelReply:
    """What the model said in one turn: its text and the tools it asks for."""

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError("ModelReply.text must be a str, got %s" % (type(self.text).__name__,))
        calls = tuple(self.tool_calls)
        for call in calls:
            if not isinstance(call, ToolCall):
                raise TypeError("ModelReply.tool_calls must hold ToolCall, got %s" % (type(call).__name__,))
        object.__setattr__(self, "tool_calls", calls)


#: A model: any callable ``(messages, manifest) -> ModelReply``.
Model = Callable[[List[Message], List[Dict[str, Any]]], ModelReply]


@dataclass(frozen=True)
class RunResult:
    """How a run ended.  ``records`` is the number of records written and
    ``head`` the hash of the last one (the ``stop`` record)."""

    stop_reason: str
    steps: int
    tokens: int
    records: int
    head: str
    detail: str = ""


def estimate_tokens(emitted: str) -> int:
    """The seed's heuristic: ``max(1, len(emitted) // 4)``, in code points.

    It bounds the loop; it does not claim to be any model's tokenizer.
    """
    return max(1, len(emitted) // 4)


def _describe(exc: BaseException) -> str:
    """``RuntimeError: message``, safe to record whatever the exception holds."""
    try:
        message = str(exc)
    except Exception:  # an exception whose __str__ itself raises
        message = "<unprintable>"
    text = "%s: %s" % (type(exc).__name__, message) if message else type(exc).__name__
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _check_config(
    task: object, model: object, max_steps: object, max_tokens: object, stop_sentinel: object
) -> None:
    if not isinstance(task, str):
        raise RunConfigError("task", "must be a str, got %s" % (type(task).__name__,))
    try:
        canonical_text(task, "$.task")
    except UnrecordableError as exc:
        raise RunConfigError("task", str(exc)) from None
    if not callable(model):
        raise RunConfigError("model", "must be callable (messages, manifest) -> ModelReply")
    for name, value in (("max_steps", max_steps), ("max_tokens", max_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise RunConfigError(name, "must be a non-negative int, got %r" % (value,))
    if stop_sentinel is not None:
        if not isinstance(stop_sentinel, str) or stop_sentinel == "":
            raise RunConfigError(
                "stop_sentinel", "must be None or a non-empty str (every text contains %r)" % (stop_sentinel,)
            )
        try:
            canonical_text(stop_sentinel, "$.stop_sentinel")
        except UnrecordableError as exc:
            raise RunConfigError("stop_sentinel", str(exc)) from None


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
) -> RunResult:
    """Run ``model`` on ``task`` with ``tools`` and write the transcript.

    The transcript file must not exist unless ``overwrite=True``.  Records are
    written as they happen; ``fsync=True`` also forces each to disk.
    ``KeyboardInterrupt`` and ``SystemExit`` propagate, leaving a verifiable
    prefix; every ``Exception`` from the model or a tool becomes data.
    """
    _check_config(task, model, max_steps, max_tokens, stop_sentinel)
    registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
    manifest = registry.manifest()
    have = ", ".join(registry.names) or "none"

    with TranscriptWriter(transcript, overwrite=overwrite, fsync=fsync) as out:
        out.append(
            "task",
            {
                "format": FORMAT,
                "task": task,
                "budgets": {"max_steps": max_steps, "max_tokens": max_tokens, "stop_sentinel": stop_sentinel},
                "tools": manifest,
            },
        )
        messages: List[Message] = [{"role": "user", "content": task}]
        steps = tokens = 0

        def stop(reason: str, detail: str) -> RunResult:
            out.append("stop", {"reason": reason, "steps": steps, "tokens": tokens, "detail": detail})
            return RunResult(reason, steps, tokens, out.count, out.head, detail)

        while True:
            # 1. The step budget is checked before the turn is spent.
            if steps >= max_steps:
                return stop("step_budget", "max_steps of %d reached (steps=%d)" % (max_steps, steps))

            # 2. One model turn; an Exception or a non-ModelReply is a model_error.
            try:
                reply = model(messages, manifest)
            except Exception as exc:
                return stop("model_error", "model raised %s" % (_describe(exc),))
            if not isinstance(reply, ModelReply):
                return stop("model_error", "model returned %s, not ModelReply" % (type(reply).__name__,))
            try:
                canonical_text(reply.text, "$.text")
                for position, call in enumerate(reply.tool_calls):
                    canonical_text(call.name, "$.tool_calls[%d].name" % position)
                    canonical_text(call.id, "$.tool_calls[%d].id" % position)
            except UnrecordableError as exc:
                return stop("model_error", "model reply is not recordable: %s" % (exc,))

            # 3. Record the turn.  Arguments that cannot be recorded are kept
            #    out of the record (``arguments: null`` plus the reason).
            steps += 1
            calls: List[Tuple[str, str, Optional[Mapping[str, Any]], str]] = []
            recorded_calls: List[Dict[str, Any]] = []
            emitted = [reply.text]
            for position, call in enumerate(reply.tool_calls):
                call_id = call.id or "call_%d_%d" % (steps, position)
                try:
                    arguments_text = canonical_text(call.arguments, json_path("$", call.name))
                except UnrecordableError as exc:
                    problem = "unrecordable arguments: %s" % (exc,)
                    calls.append((call_id, call.name, None, problem))
                    recorded_calls.append(
                        {"id": call_id, "name": call.name, "arguments": None, "arguments_error": problem}
                    )
                    emitted.append(call.name)
                    continue
                calls.append((call_id, call.name, call.arguments, ""))
                recorded_calls.append({"id": call_id, "name": call.name, "arguments": call.arguments})
                emitted.append(call.name + arguments_text)
            turn_tokens = estimate_tokens("".join(emitted))
            tokens += turn_tokens
            out.append(
                "assistant",
                {
                    "step": steps,
                    "text": reply.text,
                    "tool_calls": recorded_calls,
                    "tokens": turn_tokens,
                    "total_tokens": tokens,
                },
            )
            messages.append(
                {
                    "role": "assistant",
                    "content": reply.text,
                    "tool_calls": [{"id": c[0], "name": c[1], "arguments": c[2]} for c in calls],
                }
            )

            # 4. The stops a recorded turn can trigger, in their fixed order.
            if stop_sentinel is not None and stop_sentinel in reply.text:
                return stop("sentinel", "the assistant's text contains the stop sentinel %r" % (stop_sentinel,))
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
                ok, value = _call_tool(registry, have, name, arguments, problem)
                payload: Dict[str, Any] = {"step": steps, "id": call_id, "name": name, "ok": ok}
                payload["value" if ok else "error"] = value
                out.append("tool", payload)
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call_id,
                        "name": name,
                        "ok": ok,
                        "content": canonical_text(value) if ok else value,
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
    try:
        validate(tool.parameters, arguments, json_path("$", name))
    except ValidationError as exc:
        return False, "invalid arguments: %s" % (exc,)
    try:
        value = tool.fn(**copy.deepcopy(dict(arguments)))
    except Exception as exc:
        return False, "tool %r raised %s" % (name, _describe(exc))
    try:
        canonical_text(value)
    except UnrecordableError as exc:
        return False, "tool %r returned an unrecordable result: %s" % (name, exc)
    return True, value
