"""The HTML report: a transcript as one self-contained page a person can read.

The page is a pure function of the file's bytes (no clock, no random source):

1. the verdict of :func:`~agentloop.transcript.verify_file`, with the first
   fault linked to its record, then the stop reason, the budgets used (as
   ``<meter>`` bars), the model and the task;
2. the run as a timeline, one folded ``<details>`` per turn: each record with
   its ``seq``, a short hash, its faults, the chain link from the record
   before it (intact or broken) and the full record one click away.

A transcript is untrusted input: every string from the file is escaped as
:mod:`.page` says, attribute values are only constants and integers, and the
only links are ``#line-N`` anchors.  The page runs no script and makes no
request; it works opened from disk, offline, and reads in order without CSS
(every colour has a ✓/✗ and a word beside it).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .._version import __version__
from ..transcript.format import FORMAT, Fault, PathLike, VerifyResult
from ..transcript.verify import verify_file
from .page import (
    _as_text,
    _block,
    _dict,
    _escape,
    _fields,
    _inline,
    _int,
    _label,
    _list,
    _page_start,
    _pretty,
    _short_hash,
    _value,
)

__all__ = ["CheckpointStatus", "render_report", "write_report", "default_report_path"]

#: ``(ok, detail)`` from a checkpoint check; the checkpoint issue plugs in here.
CheckpointStatus = Tuple[bool, str]

_OPEN_TURNS = 10  # the first turns are open; later ones fold unless faulty or last
_LISTED_FAULTS = 50  # faults listed in the verdict; every fault is marked at its record
_RAW_SHOWN = 1 << 20  # bytes of a faulty line's raw bytes shown; the rest is counted, hashed, skipped
_LINK_BREAKERS = ("prev_mismatch", "seq_gap")  # a fault of the record the link points from
_UNTRUSTED_HASH = ("hash_mismatch", "unserialisable_payload", "not_an_object", "missing_fields")


def _fault_items(faults: List[Fault]) -> str:
    return '<ul class="faults">%s</ul>' % "".join(
        "<li><strong>✗ FAULT %s</strong>: %s</li>" % (_escape(f.kind), _escape(f.detail)) for f in faults
    )


def _meter(label: str, used: Optional[int], limit: Optional[int], note: str = "") -> str:
    if used is None:
        return "<dt>%s</dt><dd>not recorded</dd>" % (label,)
    if limit is None:
        return "<dt>%s</dt><dd>%d (no budget recorded)</dd>" % (label, used)
    bar = ""
    if limit > 0:
        bar = '<meter min="0" max="%d" value="%d" high="%d" optimum="0"></meter> ' % (
            limit,
            min(used, limit),
            max(1, limit * 9 // 10),
        )
    share = " (%d%%)" % (used * 100 // limit,) if limit > 0 else ""
    over = ' <strong class="bad">✗ over budget</strong>' if used > limit else ""
    return "<dt>%s</dt><dd>%s%d of %d%s%s%s</dd>" % (label, bar, used, limit, share, over, note)


# --- the timeline --------------------------------------------------------------


@dataclass
class _Group:
    """A turn (an assistant record and its tool records), the task, the stop, or loose lines."""

    kind: str  # "task", "turn", "stop", "loose"
    title: str  # HTML, bold in the turn's heading
    items: List[str] = field(default_factory=list)
    first_seq: Optional[int] = None
    last_seq: Optional[int] = None
    calls: int = 0
    results: int = 0
    errors: int = 0
    faults: int = 0


@dataclass
class _Summary:
    """What the verdict section needs, gathered while the timeline renders."""

    lines: int = 0
    records: int = 0
    assistants: int = 0
    last_total_tokens: Optional[int] = None
    task: Optional[Dict[str, Any]] = None
    stop: Optional[Dict[str, Any]] = None
    digest: Any = field(default_factory=hashlib.sha256)
    size: int = 0


def _render_task(p: Dict[str, Any]) -> str:
    budgets = _dict(p.get("budgets"))
    names = ", ".join(_label(_dict(t).get("name")) for t in _list(p.get("tools")))
    rows = [
        ("Task", _block(_as_text(p.get("task")))),
        (
            "Budgets",
            "max_steps %s · max_tokens %s" % (_label(budgets.get("max_steps")), _label(budgets.get("max_tokens"))),
        ),
        ("Stop sentinel", _value(budgets.get("stop_sentinel"))),
    ]
    if "model" in p:
        rows.append(("Model", _value(p.get("model"))))
    rows.append(("Tools", names or "none"))
    return _fields(rows)


def _render_assistant(p: Dict[str, Any]) -> str:
    parts = [
        '<p class="meta">step %s · %s tokens this turn · %s in total</p>'
        % (_label(p.get("step")), _label(p.get("tokens")), _label(p.get("total_tokens"))),
        _block(_as_text(p.get("text"))),
    ]
    calls = _list(p.get("tool_calls"))
    if calls:
        parts.append("<p>%d tool call%s:</p><ol>" % (len(calls), "" if len(calls) == 1 else "s"))
        for call in calls:
            c = _dict(call)
            parts.append(
                '<li><strong>%s</strong> <span class="mute">id %s</span>' % (_label(c.get("name")), _label(c.get("id")))
            )
            if "arguments_error" in c:
                parts.append(
                    '<p class="bad">✗ arguments not recorded:</p>' + _block(_as_text(c.get("arguments_error")), "err")
                )
            parts.append(_block(_pretty(c.get("arguments"))) + "</li>")
        parts.append("</ol>")
    return "".join(parts)


def _render_tool(p: Dict[str, Any]) -> str:
    head = '<p class="meta">call id %s · step %s</p>' % (_label(p.get("id")), _label(p.get("step")))
    if p.get("ok") is True:
        return head + '<p class="good">✓ ok, value:</p>' + _block(_pretty(p.get("value")))
    return head + '<p class="bad">✗ error:</p>' + _block(_as_text(p.get("error")), "err")


def _render_stop(p: Dict[str, Any]) -> str:
    return _fields(
        [
            ("Reason", _value(p.get("reason"))),
            ("Used", "%s steps · %s tokens" % (_label(p.get("steps")), _label(p.get("tokens")))),
            ("Detail", _block(_as_text(p.get("detail")))),
        ]
    )


_RENDERERS = {"task": _render_task, "assistant": _render_assistant, "tool": _render_tool, "stop": _render_stop}


def _raw_block(raw: bytes, skipped: int, cls: str = "") -> str:
    """A line's bytes as text (invalid UTF-8 as ``\\xNN``); a very long line's tail is counted."""
    text = (raw[:-1] if raw.endswith(b"\n") else raw).decode("utf-8", "backslashreplace")
    note = '<p class="meta">… and %d more bytes of this line, not shown</p>' % (skipped,) if skipped else ""
    return _block(text, cls, fold=False) + note


def _render_record(line: int, record: object, raw: str, faults: List[Fault], link: str) -> Tuple[str, str, bool]:
    """The ``<article>`` of one record, its kind, and whether it is a tool error.

    ``raw`` is the HTML of the line's bytes, shown for a faulty record.
    """
    rec = _dict(record)
    kind = rec.get("kind") if isinstance(record, dict) else None
    payload = _dict(rec.get("payload"))
    error = kind == "tool" and payload.get("ok") is not True
    classes = ["rec"]
    if faults:
        classes.append("fault")
    if error:
        classes.append("error")
    if kind == "stop":
        classes.append("stop")
    mark = "✗ FAULT · " if faults else ""
    if isinstance(record, dict):
        title = "seq %s · %s" % (_label(rec.get("seq", "?")), _label(kind))
        if kind == "tool":
            title += " %s · %s" % (
                _label(payload.get("name")),
                '<span class="bad">✗ error</span>' if error else '<span class="good">✓ ok</span>',
            )
        meta = "line %d · hash %s · prev %s" % (line, _short_hash(rec.get("hash")), _short_hash(rec.get("prev")))
        renderer = _RENDERERS.get(kind) if isinstance(kind, str) else None
        body = renderer(payload) if renderer is not None and isinstance(rec.get("payload"), dict) else ""
    else:
        title = "not a record object"
        meta = "line %d" % (line,)
        body = ""
    parts = [
        link,
        '<article id="line-%d" class="%s"><h4>%s%s</h4><p class="meta">%s</p>'
        % (line, " ".join(classes), mark, title, meta),
    ]
    if faults:
        parts.append(_fault_items(faults))
    parts.append(body)
    parts.append(
        '<details class="raw"><summary>Full record (line %d)</summary>%s</details>'
        % (line, _block(_pretty(record), fold=False))
    )
    if faults:
        parts.append('<details class="raw"><summary>Raw bytes of line %d</summary>%s</details>' % (line, raw))
    parts.append("</article>")
    return "".join(parts), kind if isinstance(kind, str) else "", error


def _render_bad_line(line: int, raw: str, faults: List[Fault]) -> str:
    """The ``<article>`` of a line that is not a record; ``raw`` is the HTML of its bytes."""
    return (
        '<article id="line-%d" class="rec fault"><h4>✗ FAULT · line %d is not a record</h4>%s'
        "<p>Its bytes, as read:</p>%s</article>" % (line, line, _fault_items(faults), raw)
    )


def _link(prev_seq: object, faults: List[Fault], prev_faults: List[str]) -> str:
    """The chain link from the previous record into this one, drawn intact or broken.

    It is broken when this record's ``prev`` or ``seq`` is wrong, or when the
    record it points at cannot be trusted to be what its hash says.
    """
    broken = [f.kind for f in faults if f.kind in _LINK_BREAKERS]
    if broken:
        return '<p class="link broken">✗ chain broken here: %s</p>' % (_escape(", ".join(broken)),)
    if prev_faults:
        return '<p class="link broken">✗ chain broken here: the record above is not what its hash says (%s)</p>' % (
            _escape(", ".join(prev_faults)),
        )
    return '<p class="link">✓ chain link intact: prev is the hash of seq %s</p>' % (_label(prev_seq),)


@dataclass
class _Raw:
    """One line's first :data:`_RAW_SHOWN` bytes and how many more it has."""

    shown: bytes = b""
    skipped: int = 0


class _Bytes:
    """Every byte the verifier reads, counted and hashed, split into lines as it splits them.

    Fed by ``verify_file(on_bytes=)``: each piece is one ``readline`` result,
    so a ``\\n`` can only end it.  :attr:`last` is the line being read, the one
    the verifier is judging when it calls ``on_line``.
    """

    def __init__(self, summary: _Summary) -> None:
        self.summary = summary
        self.last = _Raw()
        self._open = False

    def feed(self, data: bytes) -> None:
        self.summary.digest.update(data)
        self.summary.size += len(data)
        if not self._open:
            self.last, self._open = _Raw(), True
        room = _RAW_SHOWN - len(self.last.shown)
        if room > 0:
            self.last.shown += data[:room]
        self.last.skipped += max(0, len(data) - max(room, 0))
        if data.endswith(b"\n"):
            self._open = False


@dataclass
class _Line:
    """A line as the verifier judged it; ``raw`` only for a line with a fault."""

    line: int
    record: object
    faults: List[Fault]
    raw: Optional[_Raw]


def _read(path: PathLike, summary: _Summary) -> Tuple[VerifyResult, List[_Line]]:
    """Verify ``path`` and keep its lines, in one read of the file (a pipe works)."""
    seen = _Bytes(summary)
    lines: List[_Line] = []

    def on_line(line: int, record: object, faults: List[Fault]) -> None:
        if line > 0:
            lines.append(_Line(line, record, list(faults), seen.last if faults else None))

    return verify_file(path, on_line=on_line, on_bytes=seen.feed), lines


def _timeline(lines: List[_Line], by_line: Dict[int, List[Fault]], summary: _Summary) -> List[_Group]:
    groups: List[_Group] = []
    current: Optional[_Group] = None
    prev_seq: object = None
    prev_faults: List[str] = []
    seen_record = False
    for entry in lines:
        line, record = entry.line, entry.record
        bad = next((f for f in entry.faults if f.kind == "bad_json"), None)
        raw, skipped = (entry.raw.shown, entry.raw.skipped) if entry.raw is not None else (b"", 0)
        summary.lines = line
        faults = by_line.get(line, [])
        if bad is not None:
            item, kind, error = _render_bad_line(line, _raw_block(raw, skipped, "err"), faults), "", False
        else:
            link = _link(prev_seq, faults, prev_faults) if seen_record else ""
            item, kind, error = _render_record(line, record, _raw_block(raw, skipped) if faults else "", faults, link)
            summary.records += 1
            seen_record = True
            rec = _dict(record)
            prev_seq = rec.get("seq", "?")
            prev_faults = [f.kind for f in faults if f.kind in _UNTRUSTED_HASH]
            payload = _dict(rec.get("payload"))
            if kind == "task" and summary.task is None:
                summary.task = payload
            elif kind == "assistant":
                summary.assistants += 1
                summary.last_total_tokens = _int(payload.get("total_tokens"))
            elif kind == "stop":
                summary.stop = payload
        if kind == "assistant":
            step = _int(_dict(_dict(record).get("payload")).get("step"))
            title = "Step %d" % step if step is not None else "Turn %d" % (summary.assistants,)
            current = _Group("turn", title)
            groups.append(current)
        elif kind == "stop" or (kind == "task" and current is None):
            current = _Group(kind, "Stop" if kind == "stop" else "Task")
            groups.append(current)
        elif current is None or current.kind == "stop":
            title = "Before the first turn" if current is None else "After the stop record"
            current = _Group("loose", title)
            groups.append(current)
        current.items.append(item)
        seq = _int(_dict(record).get("seq")) if bad is None else None
        if seq is not None:
            current.first_seq = seq if current.first_seq is None else current.first_seq
            current.last_seq = seq
        if kind == "assistant":
            current.calls = len(_list(_dict(_dict(record).get("payload")).get("tool_calls")))
        current.results += kind == "tool"
        current.errors += error
        current.faults += bool(faults)
    return groups


def _group_html(group: _Group, number: int, last_turn: int) -> str:
    status: List[str] = []
    if group.faults:
        status.append('<span class="bad">✗ %d faulty line%s</span>' % (group.faults, "" if group.faults == 1 else "s"))
    if group.errors:
        status.append('<span class="warn">✗ %d tool error%s</span>' % (group.errors, "" if group.errors == 1 else "s"))
    if group.kind == "turn" and group.results < group.calls:
        missing = group.calls - group.results
        status.append('<span class="warn">%d call%s not run</span>' % (missing, "" if missing == 1 else "s"))
    if not status:
        status.append('<span class="good">✓ ok</span>')
    facts = []
    if group.first_seq is not None:
        span = (
            group.first_seq if group.first_seq == group.last_seq else "%d–%d" % (group.first_seq, group.last_seq or 0)
        )
        facts.append("seq %s" % (span,))
    if group.kind == "turn":
        facts.append("%d tool call%s" % (group.calls, "" if group.calls == 1 else "s"))
    is_open = group.kind != "turn" or group.faults > 0 or number <= _OPEN_TURNS or number == last_turn
    return '<details class="turn%s"%s><summary><h3>%s · %s · %s</h3></summary>%s</details>\n' % (
        " fault" if group.faults else "",
        " open" if is_open else "",
        "<strong>%s</strong>" % (group.title,),
        " · ".join(facts) or "no records",
        " ".join(status),
        "".join(group.items),
    )


# --- the verdict ---------------------------------------------------------------


def _fault_link(fault: Fault, rendered_lines: int) -> str:
    where = _escape(fault.where())
    if fault.line is not None and fault.line <= rendered_lines and fault.kind != "unreadable":
        return '<a href="#line-%d">%s</a>' % (fault.line, where)
    return where


def _verdict(path: str, result: VerifyResult, summary: _Summary, checkpoint: Optional[CheckpointStatus]) -> str:
    parts = ['<section aria-labelledby="verdict"><h2 id="verdict">Verdict</h2>']
    if result.ok:
        parts.append(
            '<p class="verdict good"><strong>✓ VERIFIED</strong>: %d records, every hash and chain link intact; '
            "head %s</p>" % (result.count, _short_hash(result.head))
        )
    else:
        first = result.faults[0]
        parts.append(
            '<p class="verdict bad"><strong>✗ NOT VERIFIED</strong>: %d fault%s; '
            "the first at %s: <strong>%s</strong>: %s</p>"
            % (
                len(result.faults),
                "" if len(result.faults) == 1 else "s",
                _fault_link(first, summary.lines),
                _escape(first.kind),
                _escape(first.detail),
            )
        )
        parts.append('<ul class="faults">')
        for fault in result.faults[:_LISTED_FAULTS]:
            parts.append(
                "<li>✗ %s: %s: %s</li>"
                % (_fault_link(fault, summary.lines), _escape(fault.kind), _escape(fault.detail))
            )
        if len(result.faults) > _LISTED_FAULTS:
            parts.append(
                "<li>… and %d more, each marked at its line below</li>" % (len(result.faults) - _LISTED_FAULTS,)
            )
        parts.append("</ul>")
    if checkpoint is not None:
        ok, detail = checkpoint
        parts.append(
            '<p class="%s"><strong>%s checkpoint %s</strong>: %s</p>'
            % ("good" if ok else "bad", "✓" if ok else "✗", "verified" if ok else "NOT verified", _escape(detail))
        )

    task = summary.task or {}
    budgets = _dict(task.get("budgets"))
    stop = summary.stop
    parts.append('<dl class="summary">')
    if stop is not None:
        parts.append("<dt>Stop reason</dt><dd>%s</dd>" % (_value(stop.get("reason")),))
        parts.append("<dt>Stop detail</dt><dd>%s</dd>" % (_value(stop.get("detail")),))
        steps, tokens, note = _int(stop.get("steps")), _int(stop.get("tokens")), ""
    else:
        parts.append(
            '<dt>Stop reason</dt><dd class="warn">✗ no stop record: the run did not finish, or its tail is missing</dd>'
        )
        steps, tokens = summary.assistants, summary.last_total_tokens
        note = ' <span class="mute">(counted from the records)</span>'
    parts.append(_meter("Steps", steps, _int(budgets.get("max_steps")), note))
    parts.append(_meter("Tokens", tokens, _int(budgets.get("max_tokens")), note))
    model = _value(task.get("model")) if "model" in task else '<span class="mute">not recorded</span>'
    parts.append("<dt>Model</dt><dd>%s</dd>" % (model,))
    parts.append(
        "<dt>Task</dt><dd>%s</dd>"
        % (_block(_as_text(task.get("task"))) if summary.task is not None else "not recorded",)
    )
    parts.append(
        "<dt>File</dt><dd>%s · %d bytes · %d lines · SHA-256 <code>%s</code></dd>"
        % (_inline(path), summary.size, summary.lines, summary.digest.hexdigest())
    )
    parts.append("</dl>")
    parts.append(
        '<p class="mute">A hash chain cannot show records missing from its end, and whoever can write the file can '
        "recompute every hash: compare the count and head with a copy kept elsewhere "
        "(<code>agentloop verify FILE --expect-count N --expect-head HASH</code>).</p></section>"
    )
    return "".join(parts)


def render_report(path: PathLike, *, checkpoint: Optional[CheckpointStatus] = None) -> Tuple[str, VerifyResult]:
    """Render the transcript at ``path`` as one HTML page; return it and the verdict.

    Any file renders, valid or not: lines that are not records and records
    with faults are shown where they are, marked.  ``checkpoint`` is an
    ``(ok, detail)`` pair from a checkpoint check, shown beside the verdict.
    Never raises on any file content; a file that cannot be read renders as
    its ``unreadable`` verdict.
    """
    name = os.fspath(path)
    summary = _Summary()
    result, lines = _read(path, summary)  # one pass: the page shows the bytes the verdict judged
    by_line: Dict[int, List[Fault]] = {}
    for fault in result.faults:
        if fault.line is not None and fault.kind != "unreadable":
            by_line.setdefault(fault.line, []).append(fault)
    groups = _timeline(lines, by_line, summary)
    turns = sum(1 for g in groups if g.kind == "turn")
    word = "verified" if result.ok else "NOT verified"
    page = [
        _page_start("%s %s: %s" % ("✓" if result.ok else "✗", word, os.path.basename(name))),
        "<header><h1>Transcript report: %s</h1>" % (_inline(os.path.basename(name)),),
        '<p class="meta">agentloop %s · format %s · %d records · %d turns</p></header>\n<main>\n'
        % (_escape(__version__), FORMAT, summary.records, turns),
        _verdict(name, result, summary, checkpoint),
        '\n<section aria-labelledby="timeline"><h2 id="timeline">Timeline</h2>\n',
    ]
    if not groups:
        page.append("<p>No lines to show.</p>")
    number = 0
    for group in groups:
        number += group.kind == "turn"
        page.append(_group_html(group, number, turns))
    page.append("</section>\n</main>\n</body>\n</html>\n")
    return "".join(page), result


def default_report_path(path: PathLike) -> str:
    """``run.jsonl`` -> ``run.html``; any other name gets ``.html`` appended."""
    name = os.fspath(path)
    return name[: -len(".jsonl")] + ".html" if name.endswith(".jsonl") else name + ".html"


def write_report(
    path: PathLike, out: Optional[PathLike] = None, *, checkpoint: Optional[CheckpointStatus] = None
) -> Tuple[str, VerifyResult]:
    """Render ``path`` and write the page to ``out`` (default :func:`default_report_path`).

    Returns the path written and the verdict.  An existing report is
    replaced: it is derived output.  ``OSError`` writing it propagates.
    """
    target = default_report_path(path) if out is None else os.fspath(out)
    page, result = render_report(path, checkpoint=checkpoint)
    with open(target, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(page)
    return target, result
