"""The provenance options of other commands: ``verify --attestation/--statement/--receipt``,
``run --attest`` and ``batch --attest/--receipts``.

:data:`.main.EXTENSIONS` calls :func:`extend` once the command's own module
has built its parser.  The options are added here and the handler wrapped;
:mod:`.provenance` (which needs the batch and provenance layers) is imported
only when one of these options is given, so a plain ``verify`` loads none
of it.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Callable, TextIO

from .output import Refused

__all__ = ["extend", "issuer_arg"]

Handler = Callable[[argparse.Namespace, TextIO], int]


def issuer_arg(text: str) -> str:
    """``--issuer ISS``, the CWT ``iss`` claim a signer writes: 1 to 8192 characters (RFC 9943 section 6),
    checked before anything is run or verified."""
    if not 1 <= len(text) <= 8192:
        raise argparse.ArgumentTypeError("must be 1 to 8192 characters (RFC 9943 section 6)")
    return text


def _provenance(function: str) -> Callable[[Handler, argparse.Namespace, TextIO], int]:
    """``function`` of :mod:`.provenance`, imported now."""
    module = importlib.import_module(".provenance", __package__)
    handler: Callable[[Handler, argparse.Namespace, TextIO], int] = getattr(module, function)
    return handler


def _verify(original: Handler) -> Handler:
    def handler(args: argparse.Namespace, out: TextIO) -> int:
        if args.attestation is None and args.statement is None and args.receipt is None:
            if args.issuer is not None or args.name is not None:
                raise Refused("--issuer/--name", "are for --statement or --receipt")
            return original(args, out)
        return _provenance("verify_with")(original, args, out)

    return handler


def _run(original: Handler) -> Handler:
    def handler(args: argparse.Namespace, out: TextIO) -> int:
        if args.attest is None:
            return original(args, out)
        return _provenance("run_with")(original, args, out)

    return handler


def _batch(original: Handler) -> Handler:
    def handler(args: argparse.Namespace, out: TextIO) -> int:
        if args.attest is None and args.receipts is None:
            if args.issuer is not None:
                raise Refused("--issuer", "is for --receipts")
            return original(args, out)
        return _provenance("batch_with")(original, args, out)

    return handler


def _verify_options(verify: argparse.ArgumentParser) -> None:
    verify.add_argument(
        "--attestation", metavar="A", help="check the FILEs against an in-toto attestation bundle (needs --trust)"
    )
    verify.add_argument("--statement", metavar="S", help="check FILE against a SCITT signed statement (needs --trust)")
    verify.add_argument(
        "--receipt", metavar="R", help="check that FILE's run is in a batch ledger, by its COSE receipt (needs --trust)"
    )
    verify.add_argument("--issuer", metavar="ISS", help="with --statement/--receipt: the issuer it must name")
    verify.add_argument(
        "--name", metavar="NAME", help="with --receipt: the run's name (default: FILE's name without .jsonl)"
    )


def _run_options(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--attest",
        metavar="KEY",
        help="after the run, write OUT.jsonl.intoto.jsonl: its in-toto attestation signed with KEY",
    )


def _batch_options(batch: argparse.ArgumentParser) -> None:
    batch.add_argument(
        "--attest", metavar="KEY", help="after the batch, write DIR/manifest.jsonl.intoto.jsonl signed with KEY"
    )
    batch.add_argument(
        "--receipts", metavar="KEY", help="after the batch, write DIR/NAME.receipt.cose for every run, signed with KEY"
    )
    batch.add_argument(
        "--issuer", type=issuer_arg, metavar="ISS", help="with --receipts: the CWT iss claim (default: the key's name)"
    )


_EXTENDS = {"verify": (_verify_options, _verify), "run": (_run_options, _run), "batch": (_batch_options, _batch)}


def extend(parser: argparse.ArgumentParser, name: str) -> None:
    """Add the provenance options to ``verify``, ``run`` or ``batch`` (``name``), and wrap its handler.

    The command keeps its own handler for every use without these options.
    """
    options, wrapper = _EXTENDS[name]
    options(parser)
    parser.set_defaults(handler=wrapper(parser.get_default("handler")))
