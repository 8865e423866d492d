"""What every command prints: one-line records, verdict lines, colour, and shared argument types.

Everything printed from a transcript, a model, a tool, a server or a file
passes through :func:`quote` (or the record formatter built on it), so no
byte from outside can drive the terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import unicodedata
from typing import Any, Callable, Dict, List, Optional, TextIO

from ..transcript.format import Fault, VerifyResult, is_hash

__all__ = [
    "Paint", "quote", "field", "as_dict", "as_list", "format_record", "fault_json", "plain", "ansi", "painter",
    "report_verdict", "tone", "same_file", "hash_arg", "count_arg", "positive_arg", "seconds_arg",
]

_LISTED_FAULTS = 10
_SHOWN_CHARS = 160
_COLORS = {"ok": "\x1b[32m", "bad": "\x1b[31m", "stop": "\x1b[1;33m", "head": "\x1b[1m"}
_RESET = "\x1b[0m"

Paint = Callable[[str, Optional[str]], str]


def quote(value: object) -> str:
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


def field(value: object) -> str:
    """A scalar field as ``show`` prints it: numbers and booleans bare, anything else quoted."""
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return quote(value) if not -(10**20) < value < 10**20 else str(value)
    return quote(value)


def as_dict(value: object) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> List[Any]:
    return value if isinstance(value, list) else []


def format_record(record: object) -> str:
    """One line summarising a record, as ``agentloop show`` prints it."""
    if not isinstance(record, dict):
        return "seq=? (not an object: %s)" % (quote(record),)
    seq = field(record.get("seq", "?"))
    kind = record.get("kind")
    payload = record.get("payload")
    p = as_dict(payload)
    if kind == "tool":
        name = p.get("name")
        name_text = name if isinstance(name, str) else quote(name)
        ok = p.get("ok")
        outcome = "value=%s" % quote(p.get("value")) if ok is True else "error=%s" % quote(p.get("error"))
        return "seq=%s %-8s ok=%-5s %s" % (seq, quote(name_text)[1:-1], field(ok), outcome)
    if kind == "task":
        budgets = as_dict(p.get("budgets"))
        tools = as_list(p.get("tools"))
        names = ",".join(str(t.get("name")) for t in tools if isinstance(t, dict))
        return "seq=%s task     max_steps=%s max_tokens=%s tools=%s task=%s" % (
            seq,
            field(budgets.get("max_steps")),
            field(budgets.get("max_tokens")),
            quote(names or "-")[1:-1],
            quote(p.get("task")),
        )
    if kind == "assistant":
        calls = as_list(p.get("tool_calls"))
        names = ",".join(str(c.get("name")) for c in calls if isinstance(c, dict))
        return "seq=%s assistant step=%s tokens=%s total=%s calls=%s text=%s" % (
            seq,
            field(p.get("step")),
            field(p.get("tokens")),
            field(p.get("total_tokens")),
            quote(names or "-")[1:-1],
            quote(p.get("text")),
        )
    if kind == "stop":
        return "seq=%s stop     reason=%s steps=%s tokens=%s detail=%s" % (
            seq,
            quote(p.get("reason"))[1:-1],
            field(p.get("steps")),
            field(p.get("tokens")),
            quote(p.get("detail")),
        )
    return "seq=%s %s payload=%s" % (seq, quote(kind), quote(payload))


def fault_json(fault: Fault) -> Dict[str, Any]:
    return {"index": fault.index, "line": fault.line, "kind": fault.kind, "detail": fault.detail}


def plain(text: str, tone: Optional[str]) -> str:
    return text


def ansi(text: str, tone: Optional[str]) -> str:
    return text if tone is None else _COLORS[tone] + text + _RESET


def painter(args: argparse.Namespace, out: TextIO) -> Paint:
    """ANSI colour only for a terminal, without ``NO_COLOR`` and ``--no-color``."""
    if getattr(args, "no_color", False) or os.environ.get("NO_COLOR"):
        return plain
    isatty = getattr(out, "isatty", None)
    return ansi if callable(isatty) and isatty() else plain


def report_verdict(path: str, result: VerifyResult, out: TextIO, paint: Paint = plain) -> None:
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


def tone(record: object, faulty: bool) -> Optional[str]:
    if faulty:
        return "bad"
    p = as_dict(record)
    if p.get("kind") == "stop":
        return "stop"
    if p.get("kind") == "tool":
        return "ok" if as_dict(p.get("payload")).get("ok") is True else "bad"
    return None


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def hash_arg(text: str) -> str:
    if not is_hash(text):
        raise argparse.ArgumentTypeError("must be 64 lowercase hex digits")
    return text


def count_arg(text: str) -> int:
    if not text.isdigit() or not text.isascii():
        raise argparse.ArgumentTypeError("must be a non-negative integer")
    return int(text)


def positive_arg(text: str) -> int:
    value = count_arg(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def seconds_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a number of seconds") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError("must be above 0 and at most 3600")
    return value
