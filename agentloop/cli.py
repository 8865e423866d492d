"""The command line: ``agentloop verify``, ``show`` and ``report`` here; ``run`` and
``replay`` from :mod:`agentloop.models.commands`; ``checkpoint``, ``prove``,
``check-proof``, ``consistency``, ``repair`` and ``verify --checkpoint`` from
:mod:`agentloop.anchor_cli`.  Each module documents its own exit codes.

Exit codes (every subcommand):

* 0 -- every file verified (and matched ``--expect-count``/``--expect-head``);
* 1 -- a fault was found in some file (an unreadable file is a fault);
* 2 -- usage error: bad arguments, nothing was verified (for ``report``: or
  the page could not be written).

``show`` colours its listing (green ok, red errors and faults, yellow stops)
only when writing to a terminal, ``NO_COLOR`` is unset or empty, and
``--no-color`` is not given.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import unicodedata
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO

from . import __version__
from .anchor_cli import add_commands as _add_anchor_commands
from .anchor_cli import add_report_options, add_verify_options, is_anchored, report_checkpoint, verify_anchored
from .errors import AgentloopError
from .models.commands import add_commands as _add_model_commands
from .report import default_report_path, write_report
from .transcript import Fault, VerifyResult, is_hash, iter_file, verify_file

__all__ = ["main", "format_record"]

_LISTED_FAULTS = 10
_SHOWN_CHARS = 160
_COLORS = {"ok": "\x1b[32m", "bad": "\x1b[31m", "stop": "\x1b[1;33m", "head": "\x1b[1m"}
_RESET = "\x1b[0m"

Paint = Callable[[str, Optional[str]], str]


def _quote(value: object) -> str:
    """JSON text of ``value`` with every control/format character escaped.

    Model and tool output is untrusted: ``json.dumps`` escapes C0 controls;
    C1 controls, bidi overrides and other format characters are escaped here
    so that a transcript cannot drive the terminal.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, default=lambda v: "<%s>" % (type(v).__name__,))
    except (TypeError, ValueError, RecursionError):
        text = "<%s that cannot be shown>" % (type(value).__name__,)
    if len(text) > _SHOWN_CHARS:
        text = text[: _SHOWN_CHARS - 3] + "..."
    return "".join(
        "\\u%04x" % ord(ch) if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") else ch
        for ch in text
    )


def _field(value: object) -> str:
    """A scalar field as ``show`` prints it: numbers and booleans bare, anything else quoted."""
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return _quote(value) if not -(10**20) < value < 10**20 else str(value)
    return _quote(value)


def _dict(value: object) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> List[Any]:
    return value if isinstance(value, list) else []


def format_record(record: object) -> str:
    """One line summarising a record, as ``agentloop show`` prints it."""
    if not isinstance(record, dict):
        return "seq=? (not an object: %s)" % (_quote(record),)
    seq = _field(record.get("seq", "?"))
    kind = record.get("kind")
    payload = record.get("payload")
    p = _dict(payload)
    if kind == "tool":
        name = p.get("name")
        name_text = name if isinstance(name, str) else _quote(name)
        ok = p.get("ok")
        outcome = "value=%s" % _quote(p.get("value")) if ok is True else "error=%s" % _quote(p.get("error"))
        return "seq=%s %-8s ok=%-5s %s" % (seq, _quote(name_text)[1:-1], _field(ok), outcome)
    if kind == "task":
        budgets = _dict(p.get("budgets"))
        tools = _list(p.get("tools"))
        names = ",".join(str(t.get("name")) for t in tools if isinstance(t, dict))
        return "seq=%s task     max_steps=%s max_tokens=%s tools=%s task=%s" % (
            seq,
            _field(budgets.get("max_steps")),
            _field(budgets.get("max_tokens")),
            _quote(names or "-")[1:-1],
            _quote(p.get("task")),
        )
    if kind == "assistant":
        calls = _list(p.get("tool_calls"))
        names = ",".join(str(c.get("name")) for c in calls if isinstance(c, dict))
        return "seq=%s assistant step=%s tokens=%s total=%s calls=%s text=%s" % (
            seq,
            _field(p.get("step")),
            _field(p.get("tokens")),
            _field(p.get("total_tokens")),
            _quote(names or "-")[1:-1],
            _quote(p.get("text")),
        )
    if kind == "stop":
        return "seq=%s stop     reason=%s steps=%s tokens=%s detail=%s" % (
            seq,
            _quote(p.get("reason"))[1:-1],
            _field(p.get("steps")),
            _field(p.get("tokens")),
            _quote(p.get("detail")),
        )
    return "seq=%s %s payload=%s" % (seq, _quote(kind), _quote(payload))


def _fault_json(fault: Fault) -> Dict[str, Any]:
    return {"index": fault.index, "line": fault.line, "kind": fault.kind, "detail": fault.detail}


def _plain(text: str, tone: Optional[str]) -> str:
    return text


def _ansi(text: str, tone: Optional[str]) -> str:
    return text if tone is None else _COLORS[tone] + text + _RESET


def _painter(args: argparse.Namespace, out: TextIO) -> Paint:
    """ANSI colour only for a terminal, without ``NO_COLOR`` and ``--no-color``."""
    if getattr(args, "no_color", False) or os.environ.get("NO_COLOR"):
        return _plain
    isatty = getattr(out, "isatty", None)
    return _ansi if callable(isatty) and isatty() else _plain


def _report(path: str, result: VerifyResult, out: TextIO, paint: Paint = _plain) -> None:
    if result.ok:
        tail = "" if result.complete else " (no stop record: the run did not finish, or its tail is missing)"
        print(paint("%s: ok, %d records, head %s%s" % (path, result.count, result.head, tail), "ok"), file=out)
        return
    first = result.faults[0]
    print(paint("%s: FAILED at %s: %s: %s" % (path, first.where(), first.kind, first.detail), "bad"), file=out)
    for fault in result.faults[1:_LISTED_FAULTS]:
        print(paint("  also %s" % (fault,), "bad"), file=out)
    if len(result.faults) > _LISTED_FAULTS:
        print(paint("  (+%d more faults)" % (len(result.faults) - _LISTED_FAULTS,), "bad"), file=out)


def _cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    if is_anchored(args):  # --checkpoint, --since, --exact, --key-file (agentloop.anchor_cli)
        return verify_anchored(args, out, _report, _fault_json)
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
                    "faults": [_fault_json(f) for f in result.faults],
                }
            )
        else:
            _report(path, result, out)
    if args.json:
        print(json.dumps(results, indent=2, ensure_ascii=False), file=out)
    elif not failed and args.expect_count is None and args.expect_head is None:
        print(
            "note: a hash chain cannot show records missing from its end; "
            "check it against a checkpoint kept elsewhere (--checkpoint) or --expect-count/--expect-head",
            file=out,
        )
    return 1 if failed else 0


def _tone(record: object, faulty: bool) -> Optional[str]:
    if faulty:
        return "bad"
    p = _dict(record)
    if p.get("kind") == "stop":
        return "stop"
    if p.get("kind") == "tool":
        return "ok" if _dict(p.get("payload")).get("ok") is True else "bad"
    return None


def _cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    result = verify_file(args.file)
    faulty = {f.line for f in result.faults if f.line is not None}
    paint = _painter(args, out)
    in_turn = False
    try:
        for line, record, fault in iter_file(args.file):
            text = format_record(record) if fault is None else "line %d: %s: %s" % (line, fault.kind, fault.detail)
            tone = _tone(record, line in faulty)
            if args.turns:
                kind = _dict(record).get("kind")
                if kind == "assistant":
                    step = _dict(_dict(record).get("payload")).get("step")
                    number = step if isinstance(step, int) and not isinstance(step, bool) else _quote(step)
                    print(paint("step %s" % (number,), "head"), file=out)
                    text, in_turn = "  " + text, True
                elif kind in ("task", "stop"):
                    in_turn = False
                elif in_turn:
                    text = "    " + text
            print(paint(text, tone), file=out)
    except OSError:
        pass  # verify_file above reports it as ``unreadable``
    _report(args.file, result, out, paint)
    return 0 if result.ok else 1


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _cmd_report(args: argparse.Namespace, out: TextIO) -> int:
    target = default_report_path(args.file) if args.output is None else args.output
    if _same_file(args.file, target):
        print("agentloop report: error: the report would replace the transcript %s" % (args.file,), file=sys.stderr)
        return 2
    checkpoint = report_checkpoint(args)  # None without --checkpoint
    try:
        written, result = write_report(args.file, target, checkpoint=checkpoint)
    except OSError as exc:
        print("agentloop report: error: cannot write %s: %s" % (target, exc.strerror or exc), file=sys.stderr)
        return 2
    _report(args.file, result, out)
    print("report: %s" % (written,), file=out)
    if checkpoint is not None:
        print("checkpoint: %s: %s" % ("ok" if checkpoint[0] else "FAILED", checkpoint[1]), file=out)
    return 0 if result.ok and (checkpoint is None or checkpoint[0]) else 1


def _hash(text: str) -> str:
    if not is_hash(text):
        raise argparse.ArgumentTypeError("must be 64 lowercase hex digits")
    return text


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError("must be a non-negative integer")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentloop",
        description="Verify and inspect agentloop transcripts (format agentloop/1).",
        epilog="exit status: 0 verified, 1 a fault was found, 2 usage error",
    )
    parser.add_argument("--version", action="version", version="agentloop " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    verify = sub.add_parser("verify", help="check the hash chain of one or more transcripts")
    verify.add_argument("files", nargs="+", metavar="FILE")
    verify.add_argument("--expect-count", type=_count, metavar="N", help="the record count kept elsewhere (one FILE)")
    verify.add_argument("--expect-head", type=_hash, metavar="HASH", help="the last hash kept elsewhere (one FILE)")
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

    _add_model_commands(sub)  # run, replay (agentloop.models.commands)
    _add_anchor_commands(sub, _report)  # checkpoint, prove, check-proof, consistency, repair (agentloop.anchor_cli)
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
