"""``agentloop verify``, ``show`` and ``report``: read a transcript and say what it holds.

Exit codes: 0 every file verified (and matched ``--expect-count`` /
``--expect-head``); 1 a fault was found in some file (an unreadable file is
a fault); 2 usage error (for ``report``: or the page could not be written).
``show`` colours its listing (green ok, red errors and faults, yellow stops)
only when writing to a terminal, ``NO_COLOR`` is unset or empty, and
``--no-color`` is not given.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, TextIO

from ..report import default_report_path, write_report
from ..transcript.verify import iter_file, verify_file
from .anchor import add_report_options, add_verify_options, is_anchored, report_checkpoint, verify_anchored
from .output import as_dict, count_arg, fault_json, format_record, hash_arg, painter, quote, report_verdict, same_file, tone

__all__ = ["add_commands"]


def _cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    if is_anchored(args):  # --checkpoint, --since, --exact, --key-file (agentloop.anchor_cli)
        return verify_anchored(args, out, report_verdict, fault_json)
    results: List[Dict[str, Any]] = []
    failed = False
    for path in args.files:
        result = verify_file(path, expect_count=args.expect_count, expect_head=args.expect_head)
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
        print(json.dumps(results, indent=2, ensure_ascii=False), file=out)
    elif not failed and args.expect_count is None and args.expect_head is None:
        print(
            "note: a hash chain cannot show records missing from its end; "
            "check it against a checkpoint kept elsewhere (--checkpoint) or --expect-count/--expect-head",
            file=out,
        )
    return 1 if failed else 0


def _cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    result = verify_file(args.file)
    faulty = {f.line for f in result.faults if f.line is not None}
    paint = painter(args, out)
    in_turn = False
    try:
        for line, record, fault in iter_file(args.file):
            text = format_record(record) if fault is None else "line %d: %s: %s" % (line, fault.kind, fault.detail)
            shade = tone(record, line in faulty)
            if args.turns:
                kind = as_dict(record).get("kind")
                if kind == "assistant":
                    step = as_dict(as_dict(record).get("payload")).get("step")
                    number = step if isinstance(step, int) and not isinstance(step, bool) else quote(step)
                    print(paint("step %s" % (number,), "head"), file=out)
                    text, in_turn = "  " + text, True
                elif kind in ("task", "stop"):
                    in_turn = False
                elif in_turn:
                    text = "    " + text
            print(paint(text, shade), file=out)
    except OSError:
        pass  # verify_file above reports it as ``unreadable``
    report_verdict(args.file, result, out, paint)
    return 0 if result.ok else 1


def _cmd_report(args: argparse.Namespace, out: TextIO) -> int:
    target = default_report_path(args.file) if args.output is None else args.output
    if same_file(args.file, target):
        print("agentloop report: error: the report would replace the transcript %s" % (args.file,), file=sys.stderr)
        return 2
    checkpoint = report_checkpoint(args)  # None without --checkpoint
    try:
        written, result = write_report(args.file, target, checkpoint=checkpoint)
    except OSError as exc:
        print("agentloop report: error: cannot write %s: %s" % (target, exc.strerror or exc), file=sys.stderr)
        return 2
    report_verdict(args.file, result, out)
    print("report: %s" % (written,), file=out)
    if checkpoint is not None:
        print("checkpoint: %s: %s" % ("ok" if checkpoint[0] else "FAILED", checkpoint[1]), file=out)
    return 0 if result.ok and (checkpoint is None or checkpoint[0]) else 1


def add_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register ``verify``, ``show`` and ``report``."""
    verify = sub.add_parser("verify", help="check the hash chain of one or more transcripts")
    verify.add_argument("files", nargs="+", metavar="FILE")
    verify.add_argument("--expect-count", type=count_arg, metavar="N", help="the record count kept elsewhere (one FILE)")
    verify.add_argument("--expect-head", type=hash_arg, metavar="HASH", help="the last hash kept elsewhere (one FILE)")
    verify.add_argument("--json", action="store_true", help="print the results as JSON")
    add_verify_options(verify)
    verify.set_defaults(handler=_cmd_verify)

    show = sub.add_parser("show", help="list a transcript one line per record, then verify it")
    show.add_argument("file", metavar="FILE")
    show.add_argument("--turns", action="store_true", help="group the records by turn")
    show.add_argument("--no-color", action="store_true", help="never colour (also: NO_COLOR=1)")
    show.set_defaults(handler=_cmd_show)

    report = sub.add_parser("report", help="write a self-contained HTML page of a transcript, then verify it")
    report.add_argument("file", metavar="FILE")
    report.add_argument(
        "-o", "--output", metavar="OUT.html", help="where to write the page (default: FILE with .jsonl replaced by .html)"
    )
    add_report_options(report)
    report.set_defaults(handler=_cmd_report)
