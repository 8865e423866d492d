"""The batch page: a whole batch as one self-contained page, its ledger's verdict first.

The page is a pure function of the ledger and the files beside it:

1. the ledger's verdict, from :func:`agentloop.batch.audit_batch` over every
   ``*.jsonl`` file of its folder (the verdict of ``agentloop verify
   DIR/*.jsonl --manifest DIR/manifest.jsonl``): how many transcripts match,
   and each one altered, missing, extra or repeated, and the checkpoint's;
2. totals: runs, how they ended, steps, tokens and cost of the verified runs;
3. one row per run (its last ledger line) -- the runs that failed or were altered first,
   then the others in ledger order: name (a link to the run's own page),
   verdict, stop reason, steps, tokens, cost, time (by the run's clock, when
   it recorded one) and task.

Steps, tokens, cost, time and task are read only from transcripts the
verdict found intact, and only while their bytes are still the ones the
ledger names (:func:`agentloop.export.read_run`, SHA-256 compared): an
altered file shows the ledger's word, never its own.  Every string from the
ledger or a transcript is escaped as :mod:`.page` says; the only attribute
value that holds one is a link to a run's page, percent-encoded.
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .._version import __version__
from ..batch.audit import AuditResult
from ..errors import ExportError
from ..export.batch import Batch, load_batch
from ..export.run import Run, as_dict, as_int, read_run
from ..signing.note import Verifier
from .page import _CSS, _escape, _inline, _label, _page_start, _short_hash
from .run import write_report

__all__ = ["BatchReport", "render_batch_report", "write_batch_report", "run_page_names", "is_plain_name"]

#: The batch page's style: the run page's, and its table.
_BATCH_CSS = (
    _CSS
    + """\
table.runs{border-collapse:collapse;width:100%;margin:.5rem 0}
table.runs th,table.runs td{border-bottom:1px solid var(--line);padding:.25rem .5rem;text-align:left;vertical-align:top}
table.runs td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.runs tr.bad td{background:color-mix(in srgb,var(--bad) 7%,transparent)}
"""
)
#: The longest name (in UTF-8 bytes) that gets a page of its own.
_NAME_BYTES = 200
_ORDER = {"altered": 0, "changed": 1, "missing": 2, "failed": 3, "verified": 4}
_LISTED = 50  # problems listed by name in the verdict; every one has its row below


def is_plain_name(name: str) -> bool:
    """Whether a run's name can name a file beside the page (``NAME.html``): no path, no hidden file."""
    return (
        bool(name)
        and "/" not in name
        and "\\" not in name
        and "\x00" not in name
        and not name.startswith(".")
        and len(name.encode("utf-8", "surrogatepass")) <= _NAME_BYTES
    )


def run_page_names(lines: Sequence[Mapping[str, Any]], page: str) -> Dict[str, str]:
    """Run name -> its page's file name (``NAME.html``), for each ``ok`` run with a plain name,
    except one whose page would be the batch page itself (file name ``page``)."""
    return {
        line["name"]: line["name"] + ".html"
        for line in lines
        if line["status"] == "ok" and is_plain_name(line["name"]) and line["name"] + ".html" != page
    }


@dataclass
class _Row:
    """One ledger line as the table shows it."""

    number: int
    name: str
    status: str  # a key of _ORDER
    why: str = ""
    stop: Optional[str] = None
    steps: Optional[int] = None
    tokens: Optional[int] = None
    cost: Optional[str] = None
    seconds: Optional[float] = None
    task: Optional[str] = None
    page: Optional[str] = None
    retried: str = ""  # the earlier lines of the run, which a retry superseded


def _retried(earlier: Sequence[Mapping[str, Any]], name: str) -> str:
    """``after line N: status: why; ...`` for the lines of run ``name`` before its last one ("" when none)."""
    return "; ".join(
        "line %d: %s: %s" % (number, line["status"], line.get("error", line.get("reason")))
        for number, line in enumerate(earlier, 1)
        if line["name"] == name
    )


def _seconds(run: Run) -> Optional[float]:
    """Elapsed time by the run's clock: its last reading less its first (``None`` when it recorded none)."""
    readings = [as_dict(r.get("payload")).get("clock") for r in run.records]
    numbers = [v for v in readings if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return float(numbers[-1] - numbers[0]) if len(numbers) >= 2 else None


def _facts(row: _Row, run: Run) -> None:
    stop = run.stop or {}
    turns = run.assistants()
    row.stop = stop.get("reason") if isinstance(stop.get("reason"), str) else None
    row.steps = as_int(stop.get("steps"))
    row.tokens = as_int(stop.get("tokens"))
    cost = turns[-1].get("total_cost") if turns else None
    row.cost = cost if isinstance(cost, str) else None
    row.seconds = _seconds(run)
    task = run.task.get("task")
    row.task = task if isinstance(task, str) else None


def _rows(batch: Batch, pages: Mapping[str, str]) -> List[_Row]:
    audit = batch.audit
    altered = dict(audit.altered)
    missing = set(audit.missing)
    verified = set(audit.verified)
    rows = []
    last = {line["name"]: number for number, line in enumerate(batch.lines, 1)}
    for number, line in enumerate(batch.lines, 1):
        name = line["name"]
        if last[name] != number:  # a retry supersedes this line (a resumed batch): the run is its last line
            continue
        row = _Row(number, name, "verified", page=pages.get(name), retried=_retried(batch.lines[: number - 1], name))
        if line["status"] != "ok":
            row.status, row.why = "failed", "%s: %s" % (line["status"], line.get("error", line.get("reason")))
        elif name in altered:
            row.status, row.why = "altered", altered[name]
        elif name in missing or name not in verified:
            row.status, row.why, row.page = (
                "missing",
                "the ledger lists it; there is no NAME.jsonl beside the manifest",
                None,
            )
        else:
            try:
                run = read_run(batch.transcript(name), name)
                if run.sha256 != line["sha256"]:
                    raise ExportError(name, "its bytes are not the ones the ledger names")
                _facts(row, run)
            except ExportError as exc:
                row.status, row.why = "changed", "changed after the verdict was taken: %s" % (exc.reason,)
        if row.stop is None and line["status"] == "ok":
            row.stop = str(line["stop"])  # the ledger's word, for a run whose file cannot be trusted
        rows.append(row)
    rows.sort(key=lambda r: (_ORDER[r.status], r.number))
    return rows


def _state(audit: AuditResult, changed: bool) -> str:
    """The page title's word for the verdict (as :func:`_verdict` words it)."""
    if audit.ok and not changed:
        return "verified"
    return "runs failed" if _only_runs_failed(audit) and not changed else "NOT verified"


def _only_runs_failed(audit: AuditResult) -> bool:
    """Every file matches the ledger and the ledger its checkpoint; what fails is runs the batch did not complete."""
    return bool(audit.failed) and not (
        audit.missing or audit.extra or audit.repeated or audit.altered or audit.checkpoint
    )


def _verdict(batch: Batch, rows: List[_Row], checkpoint: Optional[str], signed: bool) -> str:
    audit = batch.audit
    matched = len(audit.verified)
    listed = matched + len(audit.missing) + len(audit.altered)
    changed = [r for r in rows if r.status == "changed"]
    ok = audit.ok and not changed
    parts = ['<section aria-labelledby="verdict"><h2 id="verdict">Verdict of the ledger</h2>']
    if ok:
        parts.append(
            '<p class="verdict good"><strong>✓ LEDGER VERIFIED</strong>: '
            "all %d transcripts match the ledger (%d run%s)</p>" % (matched, audit.runs, "" if audit.runs == 1 else "s")
        )
    elif _only_runs_failed(audit) and not changed:  # the evidence holds; the batch did not complete every run
        parts.append(
            '<p class="verdict bad"><strong>✗ RUNS FAILED</strong>: '
            "all %d transcripts match the ledger (%d run%s); %d run%s failed in the batch</p>"
            % (
                matched,
                audit.runs,
                "" if audit.runs == 1 else "s",
                len(audit.failed),
                "" if len(audit.failed) == 1 else "s",
            )
        )
    else:
        parts.append(
            '<p class="verdict bad"><strong>✗ NOT VERIFIED</strong>: '
            "%d of %d transcripts match the ledger (%d run%s)</p>"
            % (matched - len(changed), listed, audit.runs, "" if audit.runs == 1 else "s")
        )
    problems: List[str] = []
    problems += ["<li>✗ ALTERED %s: %s</li>" % (_label(n), _escape(w)) for n, w in audit.altered]
    problems += ["<li>✗ CHANGED %s: %s</li>" % (_label(r.name), _escape(r.why)) for r in changed]
    problems += ["<li>✗ MISSING %s: the ledger lists it, no file is there</li>" % (_label(n),) for n in audit.missing]
    problems += [
        "<li>✗ EXTRA %s: no ok run of that name in the ledger</li>" % (_label(os.path.basename(p)),)
        for p in audit.extra
    ]
    problems += ["<li>✗ REPEATED %s: names the same run as %s</li>" % (_label(p), _label(f)) for p, f in audit.repeated]
    if problems:
        more = len(problems) - _LISTED
        parts.append(
            '<ul class="faults">%s%s</ul>'
            % ("".join(problems[:_LISTED]), "<li>… and %d more</li>" % more if more > 0 else "")
        )
    parts.append(_checkpoint_line(audit, checkpoint, signed))
    failed = sum(1 for r in rows if r.status == "failed")
    if failed:
        parts.append(
            '<p class="warn">✗ %d run%s failed in the batch (no transcript): listed first below</p>'
            % (failed, "" if failed == 1 else "s")
        )
    parts.append(
        '<dl class="summary"><dt>Ledger</dt><dd>%s · %d lines · root %s · SHA-256 <code>%s</code></dd></dl>'
        % (_inline(batch.manifest), len(batch.lines), _short_hash(batch.root), batch.sha256)
    )
    parts.append(
        '<p class="mute">The ledger says which transcripts belong to the batch; whoever can write it can rewrite it: '
        "check its checkpoint, signed, against a copy kept elsewhere "
        "(<code>agentloop verify DIR/*.jsonl --manifest DIR/manifest.jsonl "
        "--checkpoint DIR/manifest.checkpoint --trust KEY</code>).</p>"
        "</section>\n"
    )
    return "".join(parts)


def _checkpoint_line(audit: AuditResult, checkpoint: Optional[str], signed: bool) -> str:
    if audit.checkpoint is None:
        return '<p class="mute">No checkpoint was checked.</p>'
    if audit.checkpoint:
        return '<p class="bad"><strong>✗ checkpoint NOT verified</strong>: %s</p>' % (_escape(audit.checkpoint),)
    return '<p class="good"><strong>✓ checkpoint verified</strong>: %s covers the ledger; %s</p>' % (
        _inline(checkpoint or ""),
        "signed by the keys given" if signed else "its signature was not checked (no key given)",
    )


def _total_cost(rows: List[_Row]) -> str:
    costs: List[Decimal] = []
    for row in rows:
        if row.cost is None:
            continue
        try:
            costs.append(Decimal(row.cost))
        except InvalidOperation:  # not the decimal string a writer records: not counted
            continue
    if not costs:
        return "not recorded"
    counted = [r for r in rows if r.status == "verified"]
    note = (
        "" if len(costs) == len(counted) else " (%d of %d verified runs recorded a cost)" % (len(costs), len(counted))
    )
    return _escape(format(sum(costs, Decimal(0)), "f") + " USD" + note)


def _totals(rows: List[_Row]) -> str:
    verified = [r for r in rows if r.status == "verified"]
    stops: Dict[str, int] = {}
    for row in rows:
        if row.stop is not None:
            stops[row.stop] = stops.get(row.stop, 0) + 1
    by_status = " · ".join(
        "%d %s" % (sum(1 for r in rows if r.status == s), s) for s in _ORDER if any(r.status == s for r in rows)
    )
    return (
        '<section aria-labelledby="totals"><h2 id="totals">Totals</h2><dl class="summary">'
        "<dt>Runs</dt><dd>%d: %s</dd>"
        % (len(rows), by_status)
        + "<dt>Stops</dt><dd>%s</dd>"
        % (" · ".join("%s %d" % (_label(k), v) for k, v in sorted(stops.items())) or "none",)
        + "<dt>Steps</dt><dd>%d (verified runs)</dd>" % (sum(r.steps or 0 for r in verified),)
        + "<dt>Tokens</dt><dd>%d (verified runs)</dd>" % (sum(r.tokens or 0 for r in verified),)
        + "<dt>Cost</dt><dd>%s</dd></dl></section>\n" % (_total_cost(verified),)
    )


_VERDICT_WORDS = {
    "verified": '<span class="good">✓ verified</span>',
    "altered": '<strong class="bad">✗ ALTERED</strong>',
    "changed": '<strong class="bad">✗ CHANGED</strong>',
    "missing": '<strong class="bad">✗ MISSING</strong>',
    "failed": '<strong class="bad">✗ FAILED</strong>',
}


def _number(value: Optional[int]) -> str:
    return "%d" % (value,) if value is not None else '<span class="mute">–</span>'


def _row_html(row: _Row) -> str:
    name = _label(row.name)
    if row.page is not None:
        name = '<a href="%s">%s</a>' % (urllib.parse.quote(row.page, safe=""), name)
    verdict = _VERDICT_WORDS[row.status] + (": " + _escape(row.why) if row.why else "")
    if row.retried:
        verdict += ' <span class="mute">(retried after %s)</span>' % (_escape(row.retried),)
    cells = [
        '<td class="n">%d</td>' % (row.number,),
        "<td>%s</td>" % (name,),
        "<td>%s</td>" % (verdict,),
        "<td>%s</td>" % (_label(row.stop) if row.stop is not None else '<span class="mute">–</span>',),
        '<td class="n">%s</td>' % (_number(row.steps),),
        '<td class="n">%s</td>' % (_number(row.tokens),),
        '<td class="n">%s</td>' % (_escape(row.cost) if row.cost is not None else '<span class="mute">–</span>',),
        '<td class="n">%s</td>'
        % ("%.2f s" % (row.seconds,) if row.seconds is not None else '<span class="mute">–</span>',),
        "<td>%s</td>" % (_label(row.task) if row.task is not None else '<span class="mute">–</span>',),
    ]
    return "<tr%s>%s</tr>\n" % (' class="bad"' if row.status != "verified" else "", "".join(cells))


def _table(rows: List[_Row]) -> str:
    head = "".join(
        "<th>%s</th>" % (h,) for h in ("#", "Run", "Verdict", "Stop", "Steps", "Tokens", "Cost (USD)", "Time", "Task")
    )
    return (
        '<section aria-labelledby="runs"><h2 id="runs">Runs</h2>'
        '<p class="mute">Runs that failed or were altered first, then the others in ledger order; '
        "# is the ledger line. "
        "Steps, tokens, cost, time and task come only from verified transcripts; time is by the run's own clock, "
        "when it recorded one.</p>"
        '<table class="runs"><thead><tr>%s</tr></thead><tbody>\n%s</tbody></table></section>\n'
        % (head, "".join(_row_html(r) for r in rows))
    )


def render_batch_report(
    batch: Batch, *, pages: Optional[Mapping[str, str]] = None, checkpoint: Optional[str] = None, signed: bool = False
) -> Tuple[str, bool]:
    """The page of ``batch`` (from :func:`agentloop.export.load_batch`), and whether its verdict holds.

    ``pages`` maps a run's name to the file name of its page (links are
    relative to the batch page); ``checkpoint`` is the path of the ledger's
    checkpoint the verdict checked, named on the page, and ``signed`` whether
    its signature was checked with keys.
    """
    rows = _rows(batch, pages or {})
    changed = any(r.status == "changed" for r in rows)
    ok = batch.audit.ok and not changed
    title = os.path.basename(os.path.dirname(os.path.abspath(batch.manifest))) or batch.manifest
    page = [
        _page_start("%s batch %s: %s" % ("✓" if ok else "✗", _state(batch.audit, changed), title), _BATCH_CSS),
        "<header><h1>Batch report: %s</h1>" % (_inline(title),),
        '<p class="meta">agentloop %s · ledger agentloop-manifest/1 · %d runs</p></header>\n<main>\n'
        % (_escape(__version__), len(batch.lines)),
        _verdict(batch, rows, checkpoint, signed),
        _totals(rows),
        _table(rows),
        "</main>\n</body>\n</html>\n",
    ]
    return "".join(page), ok


@dataclass(frozen=True)
class BatchReport:
    """What :func:`write_batch_report` wrote: the page, each run's page, and the verdict."""

    path: str
    ok: bool
    audit: AuditResult
    pages: Tuple[str, ...] = field(default=())


def write_batch_report(
    manifest: str,
    out: str,
    *,
    checkpoint: Optional[str] = None,
    key: Optional[bytes] = None,
    verifiers: Sequence[Verifier] = (),
    require: Optional[Sequence[str]] = None,
) -> BatchReport:
    """Write the page of the batch at ``manifest`` to ``out``, and each ``ok`` run's page beside it.

    1. the ledger's verdict (:func:`agentloop.export.load_batch`, with the
       ``checkpoint`` note and its keys when given);
    2. each run the ledger lists as ``ok`` whose file is there and whose
       name is a plain file name gets its page, ``NAME.html`` in ``out``'s
       folder (:func:`~.run.write_report`: an altered run's page shows its
       faults);
    3. the batch page, linking to them.

    Existing pages are replaced (derived output); ``OSError`` propagates, and
    so do the errors of :func:`~agentloop.export.load_batch`.
    """
    batch = load_batch(manifest, checkpoint=checkpoint, key=key, verifiers=verifiers, require=require)
    folder = os.path.dirname(out)
    present = set(batch.audit.verified) | {n for n, _ in batch.audit.altered}
    pages = {n: p for n, p in run_page_names(batch.lines, os.path.basename(out)).items() if n in present}
    written = []
    for name, page in pages.items():
        target, _ = write_report(batch.transcript(name), os.path.join(folder, page))
        written.append(target)
    html, ok = render_batch_report(batch, pages=pages, checkpoint=checkpoint, signed=key is not None or bool(verifiers))
    with open(out, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(html)
    return BatchReport(out, ok, batch.audit, tuple(written))
