"""The ``agentloop run`` and ``agentloop replay`` subcommands (registered by :mod:`agentloop.cli`).

``run`` runs a task against a real model and prints each record as it is
written; ``replay`` re-runs a transcript's task with its recorded replies
and compares the new transcript with the original.

Exit codes of ``run``: 0 -- the run ended on an answer (``no_tool_calls``,
``sentinel``, ``final_result``), printed whole after ``answer:``; 1 -- it
ended on ``model_error``; 2 -- usage or configuration error, or a file it
would write that cannot be written (a missing folder, a directory, a
device, an existing file without ``--overwrite``): every path is checked
before the first model call, and nothing is run; 3 -- it ended on a budget
(``step_budget``, ``token_budget`` or any other stop reason); 4 -- it did
not finish: a tool (or the model) raised ``SystemExit``, and the transcript
is a verifiable prefix without a stop record; 5 -- it paused for approval
(``--approve``: :mod:`.approval`); 70 -- internal error; 130 --
Ctrl-C, the transcript left a verifiable prefix.

Exit codes of ``replay``: 0 -- the replay is byte-identical; 1 -- it
differs; 2 -- usage error, a transcript that cannot be replayed, or an
output that cannot be written; 4, 70, 130 as for ``run``.

Every line printed from a model, a tool or a server (the records, the
``stop:`` detail, the answer) goes through :func:`.output.visible`.
"""

from __future__ import annotations

import argparse
import contextlib
from decimal import Decimal
from typing import Any, List, Optional, TextIO

from ..canonical import strict_loads
from ..errors import MCPConfigError, MCPNameCollisionError, RunConfigError
from ..mcp import MCPClient, combine_tools
from ..loop.engine import run
from ..transcript.checkpoint import load_key
from ..models.anthropic import DEFAULT_MAX_TOKENS
from ..models.http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, HttpTransport
from ..models.replay import replay
from ..models.spec import model_from_spec
from ..tools import Tool
from ..tools.loader import load_tools
from ..tools.registry import ToolRegistry
from .approval import add_approve_options, approver_from_args, report_pause
from .mcp_options import KEYS, ServerSpec, build_client, parse_servers
from .keys import add_sign_options, load_signers
from .outcome import exit_status, guarded, report_answer, report_stop, settled
from .modelopts import add_model_options, live_text, model_options
from .output import (
    Commands,
    Refused,
    note,
    check_input,
    check_output,
    count_arg,
    emit,
    format_record,
    quote,
    same_file,
    seconds_arg,
)

__all__ = ["add_commands", "load_tools", "model_from_spec"]


def _check_paths(transcript: str, checkpoint: Optional[str], overwrite: bool, source: Optional[str] = None) -> None:
    """Every file a run will write, checked before the first model call."""
    check_output(transcript, overwrite)
    if source is not None:
        check_input(source, pipe=False)
        if same_file(transcript, source):
            raise Refused(transcript, "is the transcript being replayed")
    if checkpoint is not None:
        if same_file(transcript, checkpoint):
            raise Refused(checkpoint, "is the transcript's own path")
        check_output(checkpoint, overwrite)


def _cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    return settled("run", args.output, lambda: _run(args, out))


def _run(args: argparse.Namespace, out: TextIO) -> int:
    _check_paths(args.output, args.checkpoint, args.overwrite)
    if args.sign and args.checkpoint is None:
        raise RunConfigError("--sign", "needs --checkpoint")
    signers = load_signers(args)  # before any server starts or model is called
    specs = parse_servers(args.mcp, args.mcp_option)  # --mcp, --mcp-option: every mistake before any server starts
    clients = [build_client(spec) for spec in specs]
    with contextlib.ExitStack() as servers:
        for client in clients:
            servers.enter_context(client)
        local = [] if args.tools is None else list(load_tools(args.tools))
        combined = _combine(local, [_server_tools(spec, client) for spec, client in zip(specs, clients)])
        for client in clients:  # a refused tool is said, and named in the task record's mcp member
            for refused in client.describe([]).get("refused", []):
                note(
                    "agentloop run: note: MCP server %s: tool %s refused: %s"
                    % (quote(client.name), quote(refused.get("name")), refused.get("reason"))
                )
        tools = ToolRegistry(combined, servers=clients)  # servers all of whose tools were refused are recorded too
        return _run_with(args, out, tools, signers)


def _server_tools(spec: ServerSpec, client: MCPClient) -> List[Tool]:
    try:
        return client.tools(prefix=spec.prefix, include=spec.include)
    except MCPConfigError as exc:  # include= names a tool the server does not have
        raise Refused("--mcp-option %s" % (quote(spec.name + "." + exc.parameter),), exc.reason) from None


def _combine(local: List[Tool], groups: List[List[Tool]]) -> List[Tool]:
    """The run's tools; a name taken twice names both sides, and how to tell them apart."""
    try:
        return combine_tools(local, *groups)
    except MCPNameCollisionError as exc:
        raise Refused("--mcp", "%s (give a server's tools a prefix: --mcp-option NAME.prefix=TEXT)" % (exc,)) from None


def _run_with(args: argparse.Namespace, out: TextIO, tools: Any, signers: List[Any]) -> int:
    live = live_text(args)  # --stream: each reply's text on stderr as it comes
    model = model_from_spec(  # the system prompt goes to run(), which records it and passes it on
        args.model,
        base_url=args.base_url,
        model_name=args.model_name,
        max_output_tokens=args.max_output_tokens,
        timeout=args.timeout,
        max_retries=args.max_retries,
        **model_options(args, live),
    )
    transport = getattr(model, "transport", None)
    if isinstance(transport, HttpTransport) and transport.on_retry is None:  # never a silent wait
        transport.on_retry = lambda text: note("agentloop run: waiting to retry: %s" % (text,))
        if live is not None:
            transport.on_retry = live.before(transport.on_retry)

    def printed(record: Any) -> None:  # each record, live, as written
        emit(out, format_record(record))

    prices = None if args.prices is None else _read_prices(args.prices)
    if args.checkpoint is None and (args.key_file is not None or args.key_env is not None):
        raise RunConfigError("--key-file/--key-env", "needs --checkpoint")
    key = None
    if args.key_file is not None or args.key_env is not None:
        key = load_key(args.key_file, args.key_env)
    approver = approver_from_args(args)  # --approve: who decides calls of tools that require approval
    result = guarded(
        "run",
        args.output,
        lambda: run(
            args.task,
            model,
            tools,
            transcript=args.output,
            max_steps=args.max_steps,
            max_tokens=args.max_tokens,
            stop_sentinel=args.stop_sentinel,
            overwrite=args.overwrite,
            checkpoint=args.checkpoint,
            key=key,
            signer=signers or None,
            system=args.system,
            on_record=printed if live is None else live.before(printed),
            max_tool_calls=args.max_tool_calls,
            max_cost=args.max_cost,
            prices=prices,
            max_seconds=args.max_seconds,
            tell_budgets=args.tell_budgets,
            tool_timeout=args.tool_timeout,
            approver=approver,
        ),
    )
    if result.pending:  # paused for approval: no stop record, exit 5 (cli/approval.py)
        return report_pause(result, args.output, out)
    report_stop(result, args.output, out)
    if args.checkpoint is not None:
        emit(out, "checkpoint: %s%s" % (args.checkpoint, " (signed)" if key is not None or signers else ""))
    report_answer(result, out)
    return exit_status(result)


def _read_prices(path: str) -> Any:
    """``--prices FILE``: a JSON price table; its numbers are read as exact decimals, never floats."""
    check_input(path, pipe=False)
    try:
        with open(path, encoding="utf-8") as handle:
            return strict_loads(handle.read(), parse_float=Decimal, parse_int=Decimal)
    except (OSError, ValueError, RecursionError) as exc:
        raise RunConfigError("--prices", "cannot read %s as JSON: %s" % (path, exc)) from None


def _budget_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a number of seconds") from None
    if not 0 <= value <= 2**53 - 1:
        raise argparse.ArgumentTypeError("must be a number of seconds >= 0")
    return value


def _default_replay_path(path: str) -> str:
    stem = path[: -len(".jsonl")] if path.endswith(".jsonl") else path
    return stem + ".replay.jsonl"


def _cmd_replay(args: argparse.Namespace, out: TextIO) -> int:
    target = _default_replay_path(args.file) if args.output is None else args.output
    return settled("replay", target, lambda: _replay(args, target, out))


def _replay(args: argparse.Namespace, target: str, out: TextIO) -> int:
    _check_paths(target, None, args.overwrite, source=args.file)
    tools = "recorded" if args.recorded_tools else load_tools(args.tools)
    if args.recorded_tools and args.approve is not None:
        raise Refused(
            "--approve", "is for --tools: --recorded-tools runs nothing and feeds back the recorded decisions"
        )
    approver = approver_from_args(args)

    def refused(request: Any) -> None:  # a recorded approval authorised the original run, not this replay
        note(
            "agentloop replay: call %s of step %d (tool %s) was approved in the original run; a recorded approval "
            "does not authorise a replay: denied (decide again with --approve ask|FILE)"
            % (quote(request.call_id, None), request.step, quote(request.tool, None))
        )

    outcome = guarded(
        "replay",
        target,
        lambda: replay(
            args.file, tools, transcript=target, overwrite=args.overwrite, approver=approver, on_refused=refused
        ),
    )
    report_stop(outcome.run, target, out)
    if outcome.difference is None:
        emit(out, "replay: identical to %s" % (args.file,))
        return 0
    emit(out, "replay: differs from %s at %s" % (args.file, outcome.difference))
    return 1


def add_commands(sub: Commands) -> None:
    """Register ``run`` and ``replay`` on the command line's subparsers."""
    command = sub.add_parser(
        "run",
        epilog="exit status: 0 an answer, 1 model_error, 2 usage error (nothing run), 3 a budget stop, "
        "4 a tool raised SystemExit or the output could not be written, "
        "130 Ctrl-C (the transcript stays a verifiable prefix). "
        "Keys: OPENAI_API_KEY / ANTHROPIC_API_KEY (required for the official endpoints only).",
    )
    command.add_argument(
        "--model",
        required=True,
        metavar="SPEC",
        help="openai:MODEL, openai-responses:MODEL, anthropic:MODEL, or an OpenAI-compatible base URL (up to /v1)",
    )
    command.add_argument("--model-name", metavar="NAME", help="the model name, with a URL --model")
    command.add_argument(
        "--base-url", metavar="URL", help="another base URL for openai: (up to /v1) or anthropic: (without /v1)"
    )
    command.add_argument("--tools", metavar="MODULE:REGISTRY", help="the local tools, e.g. demo:demo_tools")
    command.add_argument(
        "--mcp",
        action="append",
        default=[],
        metavar="NAME=SERVER",
        help="tools from an MCP server (repeatable): NAME=COMMAND (stdio) or NAME=URL (Streamable HTTP)",
    )
    command.add_argument(
        "--mcp-option",
        action="append",
        default=[],
        metavar="NAME.KEY=VALUE",
        help="an option of --mcp server NAME (repeatable); KEY: %s; e.g. web.bearer-env=WEB_TOKEN "
        "(header values come from environment variables, never the command line)" % (", ".join(KEYS),),
    )
    command.add_argument("--task", required=True, metavar="TEXT")
    command.add_argument("--max-steps", required=True, type=count_arg, metavar="N")
    command.add_argument("--max-tokens", required=True, type=count_arg, metavar="N", help="the run's token budget")
    command.add_argument("--stop-sentinel", metavar="TEXT")
    command.add_argument("--system", metavar="TEXT", help="a system prompt (recorded in the task record)")
    command.add_argument(
        "--max-tool-calls",
        type=count_arg,
        metavar="N",
        help="stop (tool_call_budget) before a turn whose calls would exceed N",
    )
    command.add_argument(
        "--max-cost",
        metavar="USD",
        help="stop (cost_budget) once the cost exceeds USD, a decimal like 0.50; needs --prices",
    )
    command.add_argument(
        "--prices",
        metavar="FILE.json",
        help='USD per million tokens by model: {"MODEL": {"input": "3.00", "output": "15.00"}}; '
        "records each turn's cost",
    )
    command.add_argument(
        "--max-seconds",
        type=_budget_seconds,
        metavar="SECONDS",
        help="stop (time_budget) before a turn once SECONDS have passed",
    )
    command.add_argument(
        "--tell-budgets", action="store_true", help="show the model what remains of each budget before each turn"
    )
    command.add_argument(
        "--tool-timeout",
        type=seconds_arg,
        metavar="SECONDS",
        help="a tool call past SECONDS fails as data (default: none)",
    )
    command.add_argument(
        "--max-output-tokens",
        type=count_arg,
        metavar="N",
        help="anthropic: max_tokens per reply (default %d); openai-responses: max_output_tokens" % DEFAULT_MAX_TOKENS,
    )
    add_model_options(command)
    command.add_argument(
        "--timeout",
        type=seconds_arg,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="per request (default %g)" % DEFAULT_TIMEOUT,
    )
    command.add_argument(
        "--max-retries",
        type=count_arg,
        default=DEFAULT_MAX_RETRIES,
        metavar="N",
        help="default %d" % DEFAULT_MAX_RETRIES,
    )
    command.add_argument("-o", "--output", required=True, metavar="OUT.jsonl", help="the transcript to write")
    command.add_argument(
        "--overwrite", action="store_true", help="replace OUT.jsonl (and the checkpoint) if they exist"
    )
    command.add_argument(
        "--checkpoint", metavar="CKPT", help="also write the run's checkpoint there (see agentloop checkpoint)"
    )
    keys = command.add_mutually_exclusive_group()
    keys.add_argument("--key-file", metavar="K", help="sign the checkpoint with the HMAC-SHA256 key in this file")
    keys.add_argument("--key-env", metavar="VAR", help="sign the checkpoint with the key in this environment variable")
    add_sign_options(command)  # --sign KEY: an Ed25519 note signature on the checkpoint too
    add_approve_options(command)
    command.set_defaults(handler=_cmd_run)

    again = sub.add_parser(
        "replay",
        epilog="exit status: 0 identical, 1 the replay differs, 2 usage error. "
        "With --tools the replay calls the user's real tools again, for real (their side effects happen again), "
        "but never a gated tool on a recorded approval (--approve decides again; without it, denied); "
        "--recorded-tools runs none and feeds back the recorded results and decisions.",
    )
    again.add_argument("file", metavar="FILE")
    source = again.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--tools", metavar="MODULE:REGISTRY", help="the tools, e.g. demo:demo_tools: they run again, for real"
    )
    source.add_argument(
        "--recorded-tools",
        action="store_true",
        help="run no tool: feed back each call's recorded result (after checking its name and arguments); "
        "no side effects",
    )
    again.add_argument(
        "-o",
        "--output",
        metavar="OUT.jsonl",
        help="the new transcript (default: FILE with .jsonl replaced by .replay.jsonl)",
    )
    again.add_argument("--overwrite", action="store_true", help="replace OUT.jsonl if it exists")
    add_approve_options(
        again,
        "with --tools, who decides again the gated calls the original run approved (a recorded "
        "approval never runs a real tool; without --approve they are denied)",
    )
    again.set_defaults(handler=_cmd_replay)
