"""What every agentloop page shares: the escaping, the style, the Content-Security-Policy.

A page is untrusted input made visible.  Every string that came from a file
goes through :func:`_escape` (``html.escape`` plus a visible ``\\uXXXX`` for
every control, format, bidi-override and surrogate character); attribute
values are only constants, integers and (:mod:`.batch`) percent-encoded file
names.  A page runs no script: a Content-Security-Policy ``<meta>`` forbids
scripts, images, fonts, frames and requests, and allows its one ``<style>``
element by its SHA-256 (:func:`_csp`).  The generator ``<meta>`` of
:data:`_PAGE_HEAD` marks a page agentloop wrote (:func:`is_report_page`).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import unicodedata
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["is_report_page"]

_FOLD_CHARS = 800  # a value longer than this, or with more lines, folds behind a preview
_FOLD_LINES = 16
_PREVIEW_CHARS = 120
_HASH_CHARS = 12
_LABEL_CHARS = 60  # a name or id in a heading or a line of text
_HIDDEN = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))  # the categories cli._quote escapes too
_KEPT = frozenset("\n\t")
#: How every page begins; the generator ``<meta>`` marks a page agentloop wrote.
_PAGE_HEAD = (
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<meta name="generator" content="agentloop">\n'
)

_CSS = """\
:root{color-scheme:light dark;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--mute:#59636e;--bg2:#f6f8fa;--line:#d0d7de}
@media (prefers-color-scheme:dark){
:root{--ok:#3fb950;--bad:#ff7b72;--warn:#d29922;--mute:#9198a1;--bg2:#161b22;--line:#3d444d}
}
body{font:15px/1.45 system-ui,sans-serif;max-width:74rem;margin:0 auto;padding:1rem 1.5rem}
h1{font-size:1.4rem;margin:.2rem 0}h2{font-size:1.2rem;margin:1.4rem 0 .5rem;border-bottom:1px solid var(--line)}
h3{font-size:1rem;font-weight:400;display:inline;margin:0}h4{font-size:.95rem;margin:0 0 .3rem}
pre,code{font:13px/1.4 ui-monospace,monospace}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--bg2);
padding:.4rem .6rem;margin:.3rem 0;border-radius:4px}
.verdict{font-size:1.15rem;padding:.5rem .8rem;border-left:6px solid;border-radius:4px}
.good{color:var(--ok)}.bad{color:var(--bad)}.warn{color:var(--warn)}.mute{color:var(--mute)}
.verdict.good{border-color:var(--ok)}.verdict.bad{border-color:var(--bad)}
dl.summary,dl.kv{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.25rem 1rem;margin:.3rem 0}
dt{font-weight:600}dd{margin:0}
meter{width:14rem;height:1.1rem;vertical-align:middle}
details.turn{border:1px solid var(--line);border-radius:6px;margin:.5rem 0;padding:.3rem .7rem}
details.turn.fault{border:2px solid var(--bad)}
details.turn>summary{cursor:pointer;padding:.2rem 0}
article.rec{border-left:3px solid var(--line);padding:.2rem .7rem;margin:.5rem 0}
article.rec.fault{border-left:6px solid var(--bad);background:color-mix(in srgb,var(--bad) 6%,transparent)}
article.rec.error{border-left-color:var(--warn)}article.rec.stop{border-left-color:var(--warn)}
.meta{color:var(--mute);font-size:.85rem;margin:0}
p.link{margin:.1rem 0 .1rem .4rem;font-size:.85rem;color:var(--mute)}p.link.broken{color:var(--bad);font-weight:600}
.err{color:var(--bad);border-left:3px solid var(--bad)}
.ctl{color:var(--bad);background:var(--bg2);border:1px dotted var(--bad)}
ul.faults{margin:.3rem 0;padding-left:1.2rem}ul.faults li{color:var(--bad)}
details.raw>summary,details.fold>summary{cursor:pointer;color:var(--mute);font-size:.85rem}
"""


def _csp(css: str = _CSS) -> str:
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; style-src 'sha256-%s'; img-src 'none'; font-src 'none'; "
        "base-uri 'none'; form-action 'none'" % (digest,)
    )


def _page_start(title: str, css: str = _CSS) -> str:
    """Everything before ``<header>``: the head, its CSP (allowing ``css`` by hash), ``title`` escaped."""
    return "".join(
        (
            _PAGE_HEAD,
            '<meta http-equiv="Content-Security-Policy" content="%s">\n' % (_csp(css),),
            '<meta name="referrer" content="no-referrer">\n',
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
            "<title>%s</title>\n" % (_escape(title, markup=False),),
            "<style>%s</style>\n</head>\n<body>\n" % (css,),
        )
    )


def _marker(ch: str, markup: bool) -> str:
    code = ord(ch)
    text = "\\u%04x" % code if code <= 0xFFFF else "\\U%08x" % code
    return '<span class="ctl">%s</span>' % (text,) if markup else text


def _escape(text: str, markup: bool = True) -> str:
    """HTML for untrusted ``text``: markup escaped, hidden characters made visible.

    Control, format (bidi overrides and isolates, zero-width characters),
    line/paragraph-separator and surrogate characters become a visible
    ``\\uXXXX``, so nothing in a value can hide, reorder or break the page.
    Newlines and tabs are kept.  ``markup=False`` leaves out the highlighting
    ``<span>``, for text that cannot hold elements (the ``<title>``).
    """
    out = html.escape(text, quote=True)
    hidden = {
        ord(ch): _marker(ch, markup)
        for ch in set(out)
        if ch not in _KEPT and not ch.isprintable() and unicodedata.category(ch) in _HIDDEN
    }
    return out.translate(hidden) if hidden else out


def _inline(text: str) -> str:
    """An untrusted value inside a line of text, isolated from its neighbours' direction."""
    return "<bdi>%s</bdi>" % (_escape(text),)


def _as_text(value: object) -> str:
    """A string as itself, anything else as its JSON text."""
    return value if isinstance(value, str) else _pretty(value, indent=None)


def _not_json(value: object) -> str:
    """What a parsed line may hold that ``json.dumps`` cannot write (an unread long integer)."""
    digits = getattr(value, "digits", None)
    if isinstance(digits, int) and not isinstance(digits, bool):
        return "(an integer of %d digits, too long to read)" % (digits,)
    return "(a Python %s, not a JSON value)" % (type(value).__name__,)


def _pretty(value: object, indent: Optional[int] = 2) -> str:
    try:
        return json.dumps(value, indent=indent, ensure_ascii=False, default=_not_json)
    except (RecursionError, ValueError, TypeError):  # too deep, or an integer too long to print
        if indent is not None:
            return _pretty(value, None)
        return "(a value this page cannot display; see the line's raw bytes)"


def _int(value: object) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dict(value: object) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> List[Any]:
    return value if isinstance(value, list) else []


def _block(text: str, cls: str = "", fold: bool = True) -> str:
    """A ``<pre>`` of untrusted text, folded behind a preview when long (never cut)."""
    body = "<pre%s>%s</pre>" % (' class="%s"' % cls if cls else "", _escape(text))
    lines = text.count("\n") + 1
    if not fold or (len(text) <= _FOLD_CHARS and lines <= _FOLD_LINES):
        return body
    preview = text.split("\n", 1)[0][:_PREVIEW_CHARS]
    return (
        '<details class="fold"><summary><code>%s</code>… <span class="mute">(%d characters, %d lines: show all)</span>'
        "</summary>%s</details>" % (_escape(preview), len(text), lines, body)
    )


def _value(value: object) -> str:
    """A value beside a label: inline when short and on one line, else a (folded) block."""
    text = _as_text(value)
    if len(text) <= _PREVIEW_CHARS and "\n" not in text:
        return _inline(text)
    return _block(text)


def _short_hash(value: object) -> str:
    text = _as_text(value)
    return "<code>%s</code>" % (_escape(text[:_HASH_CHARS] + ("…" if len(text) > _HASH_CHARS else "")),)


def _label(value: object) -> str:
    """A name, id or number inside a line of text.  A long or multi-line one is
    cut here, marked with an ellipsis; the record's full view holds it whole."""
    text = _as_text(value)
    if len(text) > _LABEL_CHARS or "\n" in text:
        text = text.split("\n", 1)[0][:_LABEL_CHARS] + "…"
    return _inline(text)


def _fields(rows: List[Tuple[str, str]]) -> str:
    return '<dl class="kv">%s</dl>' % "".join("<dt>%s</dt><dd>%s</dd>" % row for row in rows)


def is_report_page(head: bytes) -> bool:
    """Whether ``head``, the first bytes of a file, begin a page agentloop wrote (a run's or a batch's).

    ``agentloop report`` replaces such a page without ``--overwrite`` (it is
    derived output) and refuses any other file.
    """
    return head.startswith(_PAGE_HEAD.encode("utf-8"))
