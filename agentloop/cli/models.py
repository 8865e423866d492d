"""The ``agentloop run`` and ``agentloop replay`` subcommands (registered by :mod:`agentloop.cli`).

``run`` runs a task against a real model and prints each record as it is
written; ``replay`` re-runs a transcript's task with its recorded replies
and compares the new transcript with the original.

Exit codes: 0 -- the run ended (on any stop reason but ``model_error``) /
the replay is byte-identical; 1 -- the run ended on ``model_error`` / the
replay differs; 2 -- usage or configuration error (nothing was run).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any, Dict, List, Optional, TextIO

from ..errors import RunConfigError
from ..messages import Message, Model, ModelReply, RunResult
from ..loop import run
from ..tools.registry import Tool, ToolRegistry
from ..transcript.checkpoint import load_key
from ..transcript.format import PathLike
from ..models.anthropic import DEFAULT_MAX_TOKENS, AnthropicMessages
from ..models.http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from ..models.openai import OpenAIChat
from ..models.replay import replay
from .output import count_arg, format_record, seconds_arg

__all__ = ["add_commands", "load_tools", "model_from_spec"]


def load_tools(spec: str) -> ToolRegistry:
    """``MODULE:NAME`` -> the tools it names: a ``ToolRegistry``, an iterable of ``Tool``, or a callable returning one.

    The current folder is importable, as with ``python -m``.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise RunConfigError("--tools", "must be MODULE:NAME (e.g. demo:demo_tools), got %s" % (json.dumps(spec),))
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise RunConfigError("--tools", "cannot import %s: %s: %s" % (module_name, type(exc).__name__, exc)) from None
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise RunConfigError("--tools", "%s has no attribute %s" % (module_name, json.dumps(attribute)))
        value = getattr(value, part)
    if callable(value) and not isinstance(value, (ToolRegistry, Tool)):
        try:
            value = value()
        except Exception as exc:
            raise RunConfigError("--tools", "%s raised %s" % (spec, type(exc).__name__)) from None
    if isinstance(value, ToolRegistry):
        return value
    if isinstance(value, Tool):
        return ToolRegistry([value])
    try:
        return ToolRegistry(list(value))
    except TypeError:
        raise RunConfigError("--tools", "%s is a %s, not a ToolRegistry or Tools" % (spec, type(value).__name__)) from None


def model_from_spec(
    spec: str,
    *,
    base_url: Optional[str] = None,
    model_name: Optional[str] = None,
    max_output_tokens: Optional[int] = None,
    system: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> Model:
    """``openai:MODEL``, ``anthropic:MODEL`` or an OpenAI-compatible base URL (with ``model_name``) -> an adapter."""
    if spec.startswith(("http://", "https://")):
        if base_url is not None:
            raise RunConfigError("--base-url", "the model is already a URL")
        if not model_name:
            raise RunConfigError("--model-name", "an OpenAI-compatible URL needs --model-name (the name the server knows)")
        # A bare URL is someone else's server: never send it $OPENAI_API_KEY
        # (use openai:NAME --base-url URL to send that key on purpose).
        return OpenAIChat(model_name, base_url=spec, api_key="", system=system, timeout=timeout, max_retries=max_retries)
    provider, sep, name = spec.partition(":")
    if not sep or not name or provider not in ("openai", "anthropic"):
        raise RunConfigError(
            "--model", "must be openai:MODEL, anthropic:MODEL or an http(s):// base URL, got %s" % (json.dumps(spec),)
        )
    if model_name is not None:
        raise RunConfigError("--model-name", "only goes with a URL --model")
    if provider == "openai":
        if max_output_tokens is not None:
            raise RunConfigError("--max-output-tokens", "only goes with anthropic: models")
        return OpenAIChat(name, base_url=base_url, system=system, timeout=timeout, max_retries=max_retries)
    return AnthropicMessages(
        name,
        base_url=base_url,
        max_tokens=DEFAULT_MAX_TOKENS if max_output_tokens is None else max_output_tokens,
        system=system,
        timeout=timeout,
        max_retries=max_retries,
    )


class _Printing:
    """Wraps a model: before each turn, prints the records written since the last one."""

    def __init__(self, model: Model, transcript: PathLike, out: TextIO) -> None:
        self.model = model
        self.transcript = transcript
        self.out = out
        self.offset = 0

    def model_info(self) -> Optional[Dict[str, Any]]:
        describe = getattr(self.model, "model_info", None)
        info: Optional[Dict[str, Any]] = describe() if callable(describe) else None
        return info

    def flush(self) -> None:
        """Print every complete record written since the last call."""

        try:
            with open(self.transcript, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            return
        complete = data[: data.rfind(b"\n") + 1]
        self.offset += len(complete)
        for line in complete.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            print(format_record(record), file=self.out, flush=True)

    def __call__(self, messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
        self.flush()
        return self.model(messages, manifest)


def _finish(result: RunResult, path: str, out: TextIO) -> None:
    print("stop: %s (steps=%d, tokens=%d): %s" % (result.stop_reason, result.steps, result.tokens, result.detail), file=out)
    print("transcript: %s (%d records, head %s)" % (path, result.records, result.head), file=out)


def _cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    tools = load_tools(args.tools)
    model = model_from_spec(
        args.model,
        base_url=args.base_url,
        model_name=args.model_name,
        max_output_tokens=args.max_output_tokens,
        system=args.system,
        timeout=args.timeout,
        max_retries=args.max_retries,
    )
    if args.checkpoint is None and (args.key_file is not None or args.key_env is not None):
        raise RunConfigError("--key-file/--key-env", "needs --checkpoint")
    key = None
    if args.key_file is not None or args.key_env is not None:


        key = load_key(args.key_file, args.key_env)
    printing = _Printing(model, args.output, out)
    result = run(
        args.task,
        printing,
        tools,
        transcript=args.output,
        max_steps=args.max_steps,
        max_tokens=args.max_tokens,
        stop_sentinel=args.stop_sentinel,
        overwrite=args.overwrite,
        checkpoint=args.checkpoint,
        key=key,
    )
    printing.flush()
    _finish(result, args.output, out)
    if args.checkpoint is not None:
        print("checkpoint: %s%s" % (args.checkpoint, " (signed)" if key is not None else ""), file=out)
    return 1 if result.stop_reason == "model_error" else 0


def _default_replay_path(path: str) -> str:
    stem = path[: -len(".jsonl")] if path.endswith(".jsonl") else path
    return stem + ".replay.jsonl"


def _cmd_replay(args: argparse.Namespace, out: TextIO) -> int:
    tools = load_tools(args.tools)
    target = _default_replay_path(args.file) if args.output is None else args.output
    if os.path.abspath(target) == os.path.abspath(args.file) or (
        os.path.exists(target) and os.path.exists(args.file) and os.path.samefile(target, args.file)
    ):
        raise RunConfigError("--output", "must not be the transcript being replayed")
    outcome = replay(args.file, tools, transcript=target, overwrite=args.overwrite)
    _finish(outcome.run, target, out)
    if outcome.difference is None:
        print("replay: identical to %s" % (args.file,), file=out)
        return 0
    print("replay: differs from %s at %s" % (args.file, outcome.difference), file=out)
    return 1




def add_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register ``run`` and ``replay`` on the command line's subparsers."""
    command = sub.add_parser(
        "run",
        help="run a task against a real model, printing each record as it is written",
        epilog="exit status: 0 the run ended, 1 it ended on model_error, 2 usage error. "
        "Keys: OPENAI_API_KEY / ANTHROPIC_API_KEY (required for the official endpoints only).",
    )
    command.add_argument("--model", required=True, metavar="SPEC", help="openai:MODEL, anthropic:MODEL, or an OpenAI-compatible base URL (up to /v1)")
    command.add_argument("--model-name", metavar="NAME", help="the model name, with a URL --model")
    command.add_argument("--base-url", metavar="URL", help="another base URL for openai: (up to /v1) or anthropic: (without /v1)")
    command.add_argument("--tools", required=True, metavar="MODULE:REGISTRY", help="the tools, e.g. demo:demo_tools")
    command.add_argument("--task", required=True, metavar="TEXT")
    command.add_argument("--max-steps", required=True, type=count_arg, metavar="N")
    command.add_argument("--max-tokens", required=True, type=count_arg, metavar="N", help="the run's token budget")
    command.add_argument("--stop-sentinel", metavar="TEXT")
    command.add_argument("--system", metavar="TEXT", help="a system prompt (recorded in the task record)")
    command.add_argument("--max-output-tokens", type=count_arg, metavar="N", help="anthropic: max_tokens per reply (default %d)" % DEFAULT_MAX_TOKENS)
    command.add_argument("--timeout", type=seconds_arg, default=DEFAULT_TIMEOUT, metavar="SECONDS", help="per request (default %g)" % DEFAULT_TIMEOUT)
    command.add_argument("--max-retries", type=count_arg, default=DEFAULT_MAX_RETRIES, metavar="N", help="default %d" % DEFAULT_MAX_RETRIES)
    command.add_argument("-o", "--output", required=True, metavar="OUT.jsonl", help="the transcript to write")
    command.add_argument("--overwrite", action="store_true", help="replace OUT.jsonl (and the checkpoint) if they exist")
    command.add_argument("--checkpoint", metavar="CKPT", help="also write the run's checkpoint there (see agentloop checkpoint)")
    keys = command.add_mutually_exclusive_group()
    keys.add_argument("--key-file", metavar="K", help="sign the checkpoint with the HMAC-SHA256 key in this file")
    keys.add_argument("--key-env", metavar="VAR", help="sign the checkpoint with the key in this environment variable")
    command.set_defaults(handler=_cmd_run)

    again = sub.add_parser(
        "replay",
        help="re-run a transcript's task with its recorded replies and compare the new transcript with it",
        epilog="exit status: 0 identical, 1 the replay differs, 2 usage error",
    )
    again.add_argument("file", metavar="FILE")
    again.add_argument("--tools", required=True, metavar="MODULE:REGISTRY", help="the tools, e.g. demo:demo_tools")
    again.add_argument("-o", "--output", metavar="OUT.jsonl", help="the new transcript (default: FILE with .jsonl replaced by .replay.jsonl)")
    again.add_argument("--overwrite", action="store_true", help="replace OUT.jsonl if it exists")
    again.set_defaults(handler=_cmd_replay)
