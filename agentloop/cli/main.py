"""The command line: one parser, one ``except AgentloopError``, ``main(argv) -> int``.

The subcommands live by family: ``verify``, ``show`` and ``report`` in
:mod:`.inspect`; ``run`` and ``replay`` in :mod:`.models`; ``pending`` and
``resume`` (and ``run --approve``) in :mod:`.approval`; ``checkpoint``,
``prove``, ``check-proof``, ``consistency``, ``repair`` and ``verify
--checkpoint`` in :mod:`.anchor`; ``attest``, ``statement``, ``verify
--attestation/--statement/--receipt`` and ``run``/``batch --attest`` in
:mod:`.provenance`; ``witness`` and the C2SP forms of ``prove --bundle``,
``check-proof`` and ``cosign --request`` in :mod:`.tlog`; ``export`` and
``report --manifest`` in :mod:`.observe`.  What they print goes through
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
import os
import sys
from typing import IO, Dict, NoReturn, Optional, Sequence, TextIO, Tuple

from .. import _interrupt
from .._version import __version__
from ..errors import AgentloopError
from . import anchor, approval, batch, inspect, keys, models, observe, provenance, tlog
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
    report_verdict,
    visible,
)

__all__ = ["main", "console"]

#: The longest exception text an internal-error line shows.
_INTERNAL_CHARS = 500


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


def _parser() -> Tuple[argparse.ArgumentParser, Dict[str, argparse.ArgumentParser]]:
    """The parser, and each subcommand's own (which reports that command's usage errors)."""
    parser: argparse.ArgumentParser = _Parser(
        prog="agentloop",
        description="Verify and inspect agentloop transcripts (format agentloop/1).",
        epilog="exit status: 0 done, 1 a fault was found, 2 usage error; "
        "run: 3 budget stop, 4 did not finish, 5 paused for approval; 70 internal error, 130 Ctrl-C",
    )
    parser.add_argument("--version", action="version", version="agentloop " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    inspect.add_commands(sub)  # verify, show, report

    models.add_commands(sub)  # run, replay
    approval.add_commands(sub)  # pending, resume (run --approve is in models)
    batch.add_commands(sub)  # batch (verify --manifest is in inspect)
    anchor.add_commands(sub, report_verdict)  # checkpoint, prove, check-proof, consistency, repair
    keys.add_commands(sub)  # keygen, cosign, witness-request
    provenance.add_commands(sub)  # attest, statement; verify/run/batch options (after those)
    tlog.add_commands(sub)  # witness; prove --bundle, check-proof of a tlog-proof, cosign --request
    observe.add_commands(sub)  # export (report --manifest is in inspect)
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
    if args.command == "verify" and len(args.files) > 1 and (
        args.expect_count is not None or args.expect_head is not None
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
    _interrupt.release()  # from here Ctrl-C is this function's to handle
    if out is None and sys.stdout is None:  # started with standard output closed (``>&-``)
        complain(None, "standard output is closed")
        return EXIT_USAGE
    stream = sys.stdout if out is None else out
    for tty in (sys.stdout, sys.stderr):
        _tolerant(tty)
    parser, commands = _parser()
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # said by the subcommand they follow, with its usage (argparse would print the top level's)
            given = list(sys.argv[1:] if argv is None else argv)
            before = given[:given.index(args.command)] if args.command in given else given
            (parser if unknown[0] in before else commands[args.command]).error("unrecognized arguments: %s" % " ".join(unknown))
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
        complain(args.command, "stopped: SystemExit(%s) was raised by code agentloop ran (a tools module?)" % (exc.code,))
        return EXIT_UNFINISHED
    except Exception as exc:  # a bug: still one line, never a traceback
        text = str(exc)
        if len(text) > _INTERNAL_CHARS:
            text = text[:_INTERNAL_CHARS] + "..."
        complain(args.command, "internal error: %s: %s (a bug in agentloop %s; please report it)" % (type(exc).__name__, text, __version__))
        return EXIT_INTERNAL


def console() -> None:
    """The ``agentloop`` console script."""
    sys.exit(main())
