"""``agentloop verify``, ``show`` and ``report``: read a transcript and say what it holds.

Exit codes: 0 every file verified (and matched ``--expect-count`` /
``--expect-head``); 1 a fault was found in some file (a missing or
unreadable file is a fault); 2 usage error, an input that is not a
transcript file (a directory, a device, a named FIFO: refused before a byte
is read), or (``report``) a page that cannot be written or would replace a
file ``report`` did not write (without ``--overwrite``); 70 internal error;
130 Ctrl-C; 141 standard output closed early.

Each command reads its input once: ``show`` lists, and ``report`` renders,
the very bytes the verdict judged, so ``cat t.jsonl | agentloop show
/dev/stdin`` works and a file rewritten while it is read cannot show one
thing and verify another.
``show`` colours its listing (green ok, red errors and faults, yellow stops)
only when writing to a terminal, ``NO_COLOR`` is unset or empty, and
``--no-color`` is not given.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, Dict, List, TextIO

from ..report import default_report_path, is_report_page, write_report
from ..transcript.format import Fault
from ..transcript.format import MAX_FAULTS
from ..transcript.verify import verify_file
from .anchor import add_report_options, add_verify_options, is_anchored, report_checkpoint, verify_anchored
from .output import (
    Commands,
    positive_arg,
    Refused,
    as_dict,
    check_input,
    check_output,
    count_arg,
    emit,
    fault_json,
    format_record,
    hash_arg,
    painter,
    quote,
    report_verdict,
    same_file,
    tone,
)

__all__ = ["add_commands"]


def _cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    if args.manifest is not None:  # a batch against its ledger (agentloop.cli.batch)
        from .batch import verify_manifest  # only here: verifying one transcript imports no batch code

        return verify_manifest(args, out)
    if args.trust and args.checkpoint is None and args.since is None and args.key_file is None and args.key_env is None:
        from .approval import verify_decisions  # only here: --trust alone checks the approval decisions' notes

        return verify_decisions(args, out)
    if is_anchored(args):  # --checkpoint, --since, --exact, --key-file (agentloop.cli.anchor)
        if args.workers is not None:
            raise Refused("--workers", "is for a transcript's chain or --manifest; a checkpoint is checked in one pass")
        return verify_anchored(args, out)
    results: List[Dict[str, Any]] = []
    failed = False
    for path in args.files:
        check_input(path)
    for path in args.files:
        result = verify_file(
            path,
            expect_count=args.expect_count,
            expect_head=args.expect_head,
            max_faults=args.max_faults,
            require_complete=args.complete,
            workers=args.workers or 1,
        )
        failed = failed or not result.ok
        if args.json:
            results.append(
                {
                    "file": path,
                    "ok": result.ok,
                    "count": result.count,
                    "head": result.head,
                    "complete": result.complete,
                    "faults": [fault_json(f) for f in result.faults],
                }
            )
        else:
            report_verdict(path, result, out)
    if args.json:
        emit(out, json.dumps(results, indent=2, ensure_ascii=False), lines=True)
    elif not failed and args.expect_count is None and args.expect_head is None:
        emit(
            out,
            "note: a hash chain cannot show records missing from its end; "
            "check it against a checkpoint kept elsewhere (--checkpoint) or --expect-count/--expect-head",
        )
    return 1 if failed else 0


def _cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    check_input(args.file)
    paint = painter(args, out)
    in_turn = False

    def show(line: int, record: object, faults: List[Fault]) -> None:
        nonlocal in_turn
        if line == 0:  # unreadable: the verdict says so
            return
        bad = [f for f in faults if f.kind == "bad_json"]
        text = format_record(record, args.full) if not bad else "line %d: %s: %s" % (line, bad[0].kind, bad[0].detail)
        shade = tone(record, bool(faults))
        if args.turns:
            kind = as_dict(record).get("kind")
            if kind == "assistant":
                step = as_dict(as_dict(record).get("payload")).get("step")
                number = step if isinstance(step, int) and not isinstance(step, bool) else quote(step)
                emit(out, "step %s" % (number,), "head", paint)
                text, in_turn = "  " + text, True
            elif kind in ("task", "stop"):
                in_turn = False
            elif in_turn:
                text = "    " + text
        emit(out, text, shade, paint)

    result = verify_file(
        args.file, on_line=show, max_faults=args.max_faults
    )  # one pass: the lines shown are the bytes judged
    report_verdict(args.file, result, out, paint)
    return 0 if result.ok else 1


def _is_report(path: str) -> bool:
    """Whether ``path`` is a page ``report`` wrote (which it may replace without ``--overwrite``)."""
    try:
        with open(path, "rb") as handle:
            return is_report_page(handle.read(4096))
    except OSError:
        return False


def _cmd_report(args: argparse.Namespace, out: TextIO) -> int:
    if args.manifest is not None:  # a batch's page (agentloop.cli.observe)
        from .observe import report_manifest  # only here: one run's page imports no batch code

        return report_manifest(args, out)
    if args.file is None:
        raise Refused("FILE", "give a transcript FILE, or --manifest DIR/manifest.jsonl for a batch")
    check_input(args.file)
    if args.output is None and os.path.exists(args.file) and not os.path.isfile(args.file):
        raise Refused(args.file, "is a pipe, with no name to put the page beside: give -o OUT.html")
    target = default_report_path(args.file) if args.output is None else args.output
    if same_file(args.file, target):
        raise Refused(target, "the report would replace the transcript %s" % (args.file,))
    check_output(target, args.overwrite, replaceable=_is_report)
    checkpoint = report_checkpoint(args)  # None without --checkpoint
    try:
        written, result = write_report(args.file, target, checkpoint=checkpoint)
    except OSError as exc:
        raise Refused(target, "cannot write it: %s" % (exc.strerror or exc,)) from None
    report_verdict(args.file, result, out)
    emit(out, "report: %s" % (written,))
    if checkpoint is not None:
        emit(out, "checkpoint: %s: %s" % ("ok" if checkpoint[0] else "FAILED", checkpoint[1]))
    return 0 if result.ok and (checkpoint is None or checkpoint[0]) else 1


def _max_faults_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-faults",
        type=positive_arg,
        default=MAX_FAULTS,
        metavar="N",
        help="keep the first N faults, then stop judging and count the lines left (default %d)" % (MAX_FAULTS,),
    )


def _manifest_options(verify: argparse.ArgumentParser) -> None:
    """``verify``'s batch options: ``--manifest`` and ``--workers`` (also for one transcript);
    its checkpoint takes ``--trust``/``--require``."""
    verify.add_argument(
        "--manifest", metavar="MANIFEST", help="check the FILEs against a batch ledger (agentloop batch)"
    )
    verify.add_argument(
        "--workers", type=positive_arg, metavar="N", help="read each FILE (with --manifest: the files) in N processes"
    )


def add_commands(sub: Commands) -> None:
    """Register ``verify``, ``show`` and ``report``."""
    verify = sub.add_parser("verify")
    verify.add_argument("files", nargs="+", metavar="FILE")
    verify.add_argument(
        "--expect-count", type=count_arg, metavar="N", help="the record count kept elsewhere (one FILE)"
    )
    verify.add_argument("--expect-head", type=hash_arg, metavar="HASH", help="the last hash kept elsewhere (one FILE)")
    verify.add_argument("--json", action="store_true", help="print the results as JSON")
    verify.add_argument(
        "--complete", action="store_true", help="a run without its stop record is a failure (fault incomplete)"
    )
    _max_faults_option(verify)
    add_verify_options(verify)
    _manifest_options(verify)
    verify.set_defaults(handler=_cmd_verify)

    show = sub.add_parser("show")
    show.add_argument("file", metavar="FILE")
    show.add_argument("--turns", action="store_true", help="group the records by turn")
    show.add_argument("--no-color", action="store_true", help="never colour (also: NO_COLOR=1)")
    show.add_argument(
        "--full", action="store_true", help="print texts and values whole, and each tool call's arguments"
    )
    _max_faults_option(show)
    show.set_defaults(handler=_cmd_show)

    report = sub.add_parser("report")
    report.add_argument("file", nargs="?", metavar="FILE")
    report.add_argument(
        "-o",
        "--output",
        metavar="OUT.html",
        help="where to write the page (default: FILE with .jsonl replaced by .html; --manifest: batch.html beside it)",
    )
    report.add_argument(
        "--overwrite", action="store_true", help="replace OUT.html even if it is not a page agentloop report wrote"
    )
    add_report_options(report)
    report.add_argument(
        "--manifest",
        metavar="MANIFEST",
        help="a batch's page instead of FILE's: the ledger's verdict, then one row per run "
        "(with --checkpoint: the ledger's)",
    )
    report.set_defaults(handler=_cmd_report)
