"""Summary line and parameter descriptions from a docstring (Google, NumPy or Sphinx style).

Conventions read, as their own guides describe them:

* Google (Google Python Style Guide, section 3.8.3): an ``Args:`` section
  (also ``Arguments:``, ``Parameters:``, ``Attributes:``, ``Keyword Args:``),
  one ``name: text`` or ``name (type): text`` per entry, continuation lines
  indented deeper.
* NumPy (numpydoc format guide, "Parameters"): a ``Parameters`` header
  underlined with dashes, ``name : type`` lines (``a, b : int`` for several),
  the text indented below each.
* Sphinx (the reStructuredText field lists of the Sphinx Python domain):
  ``:param name: text`` or ``:param type name: text`` (also ``:arg``,
  ``:argument``, ``:key``, ``:keyword``); ``:type name:`` lines are ignored.

The summary is the docstring's first paragraph, its lines joined by single
spaces (PEP 257's summary line, allowing it to wrap).  Descriptions are joined
the same way.  Anything unrecognised is ignored: a docstring never makes a
tool fail to build.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

__all__ = ["Docstring", "parse_docstring"]

_GOOGLE_HEADER = re.compile(
    r"(Args|Arguments|Parameters|Params|Attributes|Keyword Args|Keyword Arguments|Other Parameters)\s*:\s*\Z"
)
_ANY_GOOGLE_HEADER = re.compile(r"[A-Z][A-Za-z ]*:\s*\Z")
_GOOGLE_ENTRY = re.compile(r"\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(.*)\Z")
_NUMPY_HEADERS = ("Parameters", "Other Parameters", "Attributes")
_NUMPY_RULE = re.compile(r"-{3,}\s*\Z")
_NUMPY_ENTRY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*(?::.*)?\Z")
_SPHINX_FIELD = re.compile(r":(param|arg|argument|key|keyword)\s+(?:[^:]*\s)?([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*)\Z")
_SPHINX_ANY_FIELD = re.compile(r":[A-Za-z]+[^:]*:")


@dataclass(frozen=True)
class Docstring:
    """What a docstring says: ``summary`` and ``params`` (name -> description)."""

    summary: str = ""
    params: Dict[str, str] = field(default_factory=dict)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _join(lines: List[str]) -> str:
    return " ".join(part.strip() for part in lines if part.strip())


def _summary(lines: List[str]) -> str:
    taken: List[str] = []
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            if taken:
                break
            continue
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if _GOOGLE_HEADER.match(stripped) or _NUMPY_RULE.match(following) or stripped.startswith(":"):
            break
        taken.append(stripped)
    return _join(taken)


def _google(lines: List[str], params: Dict[str, str]) -> None:
    index = 0
    while index < len(lines):
        line = lines[index]
        if not _GOOGLE_HEADER.match(line.strip()):
            index += 1
            continue
        header_indent = _indent(line)
        index += 1
        current: Optional[str] = None
        entry_indent = -1
        while index < len(lines):
            line = lines[index]
            if line.strip() and _indent(line) <= header_indent:
                break  # the next section (or prose) starts
            if line.strip():
                match = _GOOGLE_ENTRY.match(line.strip())
                if match is not None and (entry_indent < 0 or _indent(line) <= entry_indent):
                    entry_indent = _indent(line)
                    current = match.group(1)
                    params[current] = match.group(2).strip()
                elif current is not None:
                    params[current] = _join([params[current], line])
            index += 1


def _numpy(lines: List[str], params: Dict[str, str]) -> None:
    index = 0
    while index + 1 < len(lines):
        if lines[index].strip() not in _NUMPY_HEADERS or not _NUMPY_RULE.match(lines[index + 1].strip()):
            index += 1
            continue
        header_indent = _indent(lines[index])
        index += 2
        current: List[str] = []
        while index < len(lines):
            line = lines[index]
            if index + 1 < len(lines) and line.strip() and _NUMPY_RULE.match(lines[index + 1].strip()):
                break  # the next section's header
            if line.strip() and _indent(line) <= header_indent:
                match = _NUMPY_ENTRY.match(line.strip())
                if match is None:
                    break
                current = [name.strip() for name in match.group(1).split(",")]
                for name in current:
                    params[name] = ""
            elif line.strip():
                for name in current:
                    params[name] = _join([params[name], line])
            index += 1


def _sphinx(lines: List[str], params: Dict[str, str]) -> None:
    current: Optional[str] = None
    for line in lines:
        stripped = line.strip()
        match = _SPHINX_FIELD.match(stripped)
        if match is not None:
            current = match.group(2)
            params[current] = match.group(3).strip()
        elif _SPHINX_ANY_FIELD.match(stripped) or not stripped:
            current = None
        elif current is not None and _indent(line) > 0:
            params[current] = _join([params[current], stripped])


def parse_docstring(doc: Optional[str]) -> Docstring:
    """Read the summary and the parameter descriptions out of ``doc`` (any of the three styles)."""
    if not doc:
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    params: Dict[str, str] = {}
    _google(lines, params)
    _numpy(lines, params)
    _sphinx(lines, params)
    return Docstring(_summary(lines), {name: text for name, text in params.items() if text})
