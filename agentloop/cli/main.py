"""The command line: one parser, one ``except AgentloopError``, ``main(argv) -> int``.

The subcommands live by family (:data:`COMMANDS`): ``verify``, ``show`` and
``report`` in :mod:`.inspect`; ``run`` and ``replay`` in :mod:`.models`;
``pending`` and ``resume`` (and ``run --approve``) in :mod:`.approval`;
``batch`` (and ``verify --manifest``) in :mod:`.batch`; ``checkpoint``,
``prove``, ``check-proof``, ``consistency``, ``repair`` and ``verify
--checkpoint`` in :mod:`.anchor`; ``keygen``, ``cosign`` and
``witness-request`` in :mod:`.keys`.  A family's module is imported only
when one of its commands runs.  What they print goes through
:mod:`.output`, which escapes every byte from outside.

No failure prints a traceback.  Every failure is one line on stderr,
``agentloop COMMAND: error: WHAT: WHY``, and an exit code:

* 0 done; 1 a fault, a failed proof, a differing replay, a ``model_error``;
  2 usage error or a file that cannot be read or written; 3 and 4 ``run``
  only (a budget stop; a run that did not finish) -- see each module;
* 70 internal error: an exception agentloop did not expect (a bug), shown
  as one escaped line;
* 130 interrupted by Ctrl-C (a transcript being written stays a verifiable
  prefix); 141 standard output closed early (``agentloop show t | head``),
  quietly, as other Unix tools do.

``docs/cli.md`` lists every command's codes.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import IO, Any, Dict, List, NoReturn, Optional, Sequence, TextIO, Tuple

from .. import _interrupt
from .._version import __version__
from ..errors import AgentloopError
from .output import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_PIPE,
    EXIT_UNFINISHED,
    EXIT_USAGE,
    Refused,
    cli_message,
    complain,
    note,
    visible,
)

__all__ = ["main", "console", "COMMANDS"]

#: The longest exception text an internal-error line shows.
_INTERNAL_CHARS = 500

#: Every command, in the order ``--help`` lists them: its name, the module of
#: :mod:`agentloop.cli` that adds its options and runs it, and its help line.
#: A command's module is imported only when that command runs (or shows its
#: own ``--help``): ``agentloop --help`` and ``agentloop verify`` load no
#: model, MCP or batch code.
COMMANDS: Tuple[Tuple[str, str, str], ...] = (
    ("verify", "inspect", "check the hash chain of one or more transcripts"),
    ("show", "inspect", "list a transcript one line per record, then verify it"),
    ("report", "inspect", "write a self-contained HTML page of a transcript, then verify it"),
    ("run", "models", "run a task against a real model, printing each record as it is written"),
    ("replay", "models", "re-run a transcript's task with its recorded replies and compare the new transcript with it"),
    ("pending", "approval", "list the calls a transcript leaves waiting (a run paused for approval, or cut short)"),
    ("resume", "approval", "decide the calls a paused run waits for and go on, appending to FILE"),
    ("batch", "batch", "run one task per line of TASKS.jsonl and write a signed ledger of the transcripts"),
    ("checkpoint", "anchor", "verify a transcript, then write its checkpoint (its anchor)"),
    ("prove", "anchor", "print a Merkle inclusion or consistency proof from a transcript"),
    ("check-proof", "anchor", "check a proof against a checkpoint, without the transcript"),
    ("consistency", "anchor", "check that one checkpoint extends another, without the transcript"),
    ("repair", "anchor", "remove a torn last line (only), saving it beside the file"),
    ("keygen", "keys", "make an Ed25519 key pair: NAME.key (private, 0600) and NAME.pub"),
    ("cosign", "keys", "act as a witness: check a checkpoint and its consistency, then cosign it"),
    ("witness-request", "keys", "print the body of a C2SP tlog-witness add-checkpoint request"),
    ("witness", "tlog", "a C2SP tlog-witness over HTTP: serve one, or submit a checkpoint to one"),
    ("attest", "provenance", "verify a transcript (or a batch), then write its in-toto attestation: FILE.intoto.jsonl"),
    (
        "statement",
        "provenance",
        "verify a transcript, then write a SCITT signed statement (COSE_Sign1) of its checkpoint",
    ),
    ("export", "observe", "write a verified run (or batch) as OpenTelemetry GenAI spans or an Inspect AI eval log"),
)
_HELP = {name: help for name, _, help in COMMANDS}

#: Commands another module extends with options of its own (``extend(parser, name)``), after the
#: command's own module built it: the provenance formats' ``verify --attestation``, ``run --attest``,
#: ``batch --receipts``; the C2SP forms of ``prove --bundle``, ``check-proof`` and ``cosign --request``.
EXTENSIONS: Dict[str, Tuple[str, ...]] = {
    "verify": ("provenance_options",),
    "run": ("provenance_options",),
    "batch": ("provenance_options",),
    "prove": ("tlog",),
    "check-proof": ("tlog",),
    "cosign": ("tlog",),
}


class _Parser(argparse.ArgumentParser):
    """``argparse`` with its usage-error line made :func:`~.output.visible` (a file name may hold anything)."""

    def error(self, message: str) -> NoReturn:
        try:
            if sys.stderr is not None:  # None: closed (argparse would print to stdout instead)
                self.print_usage(sys.stderr)
        except (OSError, ValueError, AttributeError):  # stderr full: the status says it
            pass
        note("%s: error: %s" % (self.prog, visible(message)))
        raise SystemExit(EXIT_USAGE)


class _Commands:
    """What a command module adds its commands to (:class:`~.output.Commands`):
    each gets its help line from :data:`COMMANDS`."""

    def __init__(self, sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
        self.sub = sub
        self.added: List[str] = []

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        self.added.append(name)
        return self.sub.add_parser(name, help=_HELP[name], **kwargs)


def _command_of(argv: Sequence[str]) -> Optional[str]:
    """The command ``argv`` names (its first word that is not an option), or ``None``."""
    word = next((arg for arg in argv if not arg.startswith("-")), None)
    return word if word in _HELP else None


def _parser(argv: Sequence[str]) -> Tuple[argparse.ArgumentParser, Dict[str, argparse.ArgumentParser]]:
    """The parser, and each subcommand's own (which reports that command's usage errors).

    Only the module of the command ``argv`` names is imported and adds its
    options; every other command is a bare entry with its help line, enough
    for ``--help`` and for argparse's "invalid choice".
    """
    parser: argparse.ArgumentParser = _Parser(
        prog="agentloop",
        description="Verify and inspect agentloop transcripts (format agentloop/1).",
        epilog="exit status: 0 done, 1 a fault was found, 2 usage error; "
        "run: 3 budget stop, 4 did not finish, 5 paused for approval; 70 internal error, 130 Ctrl-C",
    )
    parser.add_argument("--version", action="version", version="agentloop " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    command = _command_of(argv)
    chosen = next((module for name, module, _ in COMMANDS if name == command), None)
    for module in dict.fromkeys(module for _, module, _ in COMMANDS):  # each module once, in order
        if module == chosen:
            importlib.import_module("." + module, __package__).add_commands(_Commands(sub))
        else:
            for name in (name for name, home, _ in COMMANDS if home == module):
                sub.add_parser(name, help=_HELP[name])
    for module in EXTENSIONS.get(command or "", ()):
        importlib.import_module("." + module, __package__).extend(sub.choices[command or ""], command or "")
    return parser, sub.choices


def _tolerant(stream: IO[str]) -> None:
    """Let a stream that cannot encode a character write an escape instead of raising."""
    reconfigure = getattr(stream, "reconfigure", None)
    if callable(reconfigure):
        try:
            reconfigure(errors="backslashreplace")
        except (ValueError, OSError):
            pass


def _silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the exit flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _dispatch(args: argparse.Namespace, stream: TextIO) -> int:
    if (
        args.command == "verify"
        and len(args.files) > 1
        and (args.expect_count is not None or args.expect_head is not None)
    ):
        complain("verify", "--expect-count/--expect-head take exactly one FILE")
        return EXIT_USAGE
    try:
        return int(args.handler(args, stream))
    except Refused as exc:
        complain(args.command, str(exc))
        return exc.status
    except AgentloopError as exc:
        complain(args.command, cli_message(exc, args.command))
        return EXIT_USAGE


def main(argv: Optional[Sequence[str]] = None, out: Optional[TextIO] = None) -> int:
    """Run the command line; return the exit status instead of exiting."""
    if out is None and sys.stdout is None:  # started with standard output closed (``>&-``)
        complain(None, "standard output is closed")
        return EXIT_USAGE
    stream = sys.stdout if out is None else out
    for tty in (sys.stdout, sys.stderr):
        _tolerant(tty)
    given = list(sys.argv[1:] if argv is None else argv)
    parser, commands = _parser(given)  # imports the command's module: still under _interrupt's guard
    _interrupt.release()  # from here Ctrl-C is this function's to handle
    try:
        args, unknown = parser.parse_known_args(given)
        if unknown:  # said by the subcommand they follow, with its usage (argparse would print the top level's)
            before = given[: given.index(args.command)] if args.command in given else given
            (parser if unknown[0] in before else commands[args.command]).error(
                "unrecognized arguments: %s" % " ".join(unknown)
            )
    except SystemExit as exc:  # argparse exits on --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return _dispatch(args, stream)
    except BrokenPipeError:
        if out is None:
            _silence_stdout()
        return EXIT_PIPE
    except KeyboardInterrupt:
        complain(args.command, "interrupted (Ctrl-C)")
        return EXIT_INTERRUPTED
    except SystemExit as exc:  # raised by code agentloop ran (a tools module): said, not obeyed silently
        complain(
            args.command, "stopped: SystemExit(%s) was raised by code agentloop ran (a tools module?)" % (exc.code,)
        )
        return EXIT_UNFINISHED
    except Exception as exc:  # a bug: still one line, never a traceback
        text = str(exc)
        if len(text) > _INTERNAL_CHARS:
            text = text[:_INTERNAL_CHARS] + "..."
        complain(
            args.command,
            "internal error: %s: %s (a bug in agentloop %s; please report it)"
            % (type(exc).__name__, text, __version__),
        )
        return EXIT_INTERNAL


def console() -> None:
    """The ``agentloop`` console script."""
    sys.exit(main())
