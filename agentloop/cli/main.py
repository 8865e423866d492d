"""The command line: one parser, one ``except AgentloopError``, ``main(argv) -> int``.

The subcommands live by family: ``verify``, ``show`` and ``report`` in
:mod:`.inspect`; ``run`` and ``replay`` in :mod:`.models`; ``checkpoint``,
``prove``, ``check-proof``, ``consistency``, ``repair`` and ``verify
--checkpoint`` in :mod:`.anchor`.  What they print goes through
:mod:`.output`.  Each module documents its own exit codes; ``docs/cli.md``
lists them all.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence, TextIO

from .._version import __version__
from ..errors import AgentloopError
from . import anchor, inspect, models
from .output import report_verdict

__all__ = ["main", "console"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentloop",
        description="Verify and inspect agentloop transcripts (format agentloop/1).",
        epilog="exit status: 0 verified, 1 a fault was found, 2 usage error",
    )
    parser.add_argument("--version", action="version", version="agentloop " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    inspect.add_commands(sub)  # verify, show, report

    models.add_commands(sub)  # run, replay
    anchor.add_commands(sub, report_verdict)  # checkpoint, prove, check-proof, consistency, repair
    return parser


def main(argv: Optional[Sequence[str]] = None, out: Optional[TextIO] = None) -> int:
    """Run the command line; return the exit status instead of exiting."""
    stream = sys.stdout if out is None else out
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else 2
    if args.command == "verify" and len(args.files) > 1 and (
        args.expect_count is not None or args.expect_head is not None
    ):
        print("agentloop verify: error: --expect-count/--expect-head take exactly one FILE", file=sys.stderr)
        return 2
    try:
        return int(args.handler(args, stream))
    except AgentloopError as exc:
        print("agentloop: error: %s" % (exc,), file=sys.stderr)
        return 2


def console() -> None:
    """The ``agentloop`` console script."""
    sys.exit(main())

