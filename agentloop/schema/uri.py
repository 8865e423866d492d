"""URI references and JSON Pointers, as JSON Schema ``$id`` and ``$ref`` use them.

* RFC 3986 section 5.2 -- resolving a reference against a base URI
  (5.2.2 the transform, 5.2.3 merging paths, 5.2.4 removing dot segments,
  5.3 recomposition), for any scheme: ``urljoin`` leaves references against
  ``urn:`` bases unresolved, which JSON Schema's URN tests need.
* RFC 6901 -- JSON Pointer, including section 6, its URI fragment form
  (percent-decoded first, then ``~1`` -> ``/`` and ``~0`` -> ``~``).

Pure string functions, no I/O: nothing here ever fetches anything.
"""

from __future__ import annotations

import re
from typing import List, NamedTuple, Optional, Tuple
from urllib.parse import unquote

__all__ = ["resolve", "split_fragment", "parse_pointer", "pointer_text"]

# RFC 3986 Appendix B: the regular expression that splits any URI reference.
_PARTS = re.compile(r"(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?\Z", re.S)


class _Parts(NamedTuple):
    scheme: Optional[str]
    authority: Optional[str]
    path: str
    query: Optional[str]
    fragment: Optional[str]


def _split(reference: str) -> _Parts:
    match = _PARTS.match(reference)
    assert match is not None  # every string matches Appendix B's expression
    scheme, authority, path, query, fragment = match.groups()
    return _Parts(scheme, authority, path or "", query, fragment)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, step by step."""
    output: List[str] = []
    while path:
        if path.startswith("../"):  # A
            path = path[3:]
        elif path.startswith("./"):
            path = path[2:]
        elif path.startswith("/./"):  # B
            path = path[2:]
        elif path == "/.":
            path = "/"
        elif path.startswith("/../"):  # C
            path = path[3:]
            if output:
                output.pop()
        elif path == "/..":
            path = "/"
            if output:
                output.pop()
        elif path in (".", ".."):  # D
            path = ""
        else:  # E: move the first segment, with its leading "/", to the output
            cut = path.find("/", 1)
            cut = len(path) if cut < 0 else cut
            output.append(path[:cut])
            path = path[cut:]
    return "".join(output)


def _merge(base: _Parts, path: str) -> str:
    """RFC 3986 section 5.2.3."""
    if base.authority is not None and base.path == "":
        return "/" + path
    return base.path[: base.path.rfind("/") + 1] + path


def _join(parts: _Parts) -> str:
    """RFC 3986 section 5.3."""
    text = ""
    if parts.scheme is not None:
        text += parts.scheme + ":"
    if parts.authority is not None:
        text += "//" + parts.authority
    text += parts.path
    if parts.query is not None:
        text += "?" + parts.query
    if parts.fragment is not None:
        text += "#" + parts.fragment
    return text


def resolve(base: str, reference: str) -> str:
    """The target URI of ``reference`` against the absolute URI ``base`` (RFC 3986 5.2.2)."""
    r, b = _split(reference), _split(base)
    if r.scheme is not None:
        target = _Parts(r.scheme, r.authority, _remove_dot_segments(r.path), r.query, r.fragment)
    elif r.authority is not None:
        target = _Parts(b.scheme, r.authority, _remove_dot_segments(r.path), r.query, r.fragment)
    elif r.path == "":
        query = r.query if r.query is not None else b.query
        target = _Parts(b.scheme, b.authority, b.path, query, r.fragment)
    else:
        path = r.path if r.path.startswith("/") else _merge(b, r.path)
        target = _Parts(b.scheme, b.authority, _remove_dot_segments(path), r.query, r.fragment)
    return _join(target)


def split_fragment(uri: str) -> Tuple[str, Optional[str]]:
    """``("http://x/s.json", "/a")`` for ``http://x/s.json#/a``; the fragment is ``None`` if absent."""
    head, sep, fragment = uri.partition("#")
    return head, (fragment if sep else None)


def parse_pointer(fragment: str) -> Optional[Tuple[str, ...]]:
    """The reference tokens of a JSON Pointer written as a URI fragment (RFC 6901 section 6).

    ``None`` when the text is not a pointer (a non-empty pointer starts with
    ``/``; ``~`` must be followed by ``0`` or ``1``).
    """
    try:
        text = unquote(fragment, errors="strict") if "%" in fragment else fragment
    except UnicodeDecodeError:  # percent-escapes that are not UTF-8
        return None
    if text == "":
        return ()
    if not text.startswith("/"):
        return None
    tokens = []
    for token in text[1:].split("/"):
        if re.search("~(?![01])", token):
            return None
        tokens.append(token.replace("~1", "/").replace("~0", "~"))
    return tuple(tokens)


def pointer_text(tokens: Tuple[str, ...]) -> str:
    """The RFC 6901 string of ``tokens`` (``/$defs/a~1b`` for ``("$defs", "a/b")``)."""
    return "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in tokens)
