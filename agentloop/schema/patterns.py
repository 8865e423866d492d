"""ECMA-262 regular expressions (``pattern``, ``patternProperties``) run through Python's ``re``.

JSON Schema Core 6.4 and Validation 6.3.3 ask for the ECMA-262 dialect with
unanchored search.  :func:`compile_pattern` rewrites a pattern into a Python
``re`` pattern with the same meaning, or refuses it:

* ``$`` becomes ``\\Z`` (Python's ``$`` also matches before a final newline);
  ``.`` excludes every ECMA line terminator; ``\\s`` and ``\\S`` are ECMA's
  white-space set; ``\\d``, ``\\w`` and ``\\b`` are ASCII (``re.ASCII``).
* ECMA syntax Python spells differently is translated: named groups
  ``(?<name>...)`` and back references ``\\k<name>``, control escapes ``\\cX``,
  ``[]`` (matches nothing) and ``[^]`` (matches anything).
* Python-only syntax (``\\A``, ``\\Z``, inline flags, ``(?P...)``, possessive
  quantifiers, ``{,n}``) raises :class:`UnsupportedPattern`.
* ``\\p{...}`` / ``\\P{...}`` Unicode property escapes raise
  :class:`UnsupportedPattern` too: Python's ``re`` has no way to express
  them, so such a pattern is refused instead of being matched wrongly.

What neither dialect accepts is left for ``re`` to reject (``re.error``).
"""

from __future__ import annotations

import functools
import re
from typing import List, Tuple

_SURROGATE_PAIR = re.compile(r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})")

__all__ = ["compile_pattern", "UnsupportedPattern", "UNICODE_PROPERTY"]

#: The reason text used when a pattern needs Unicode property escapes.
UNICODE_PROPERTY = "Unicode property escapes (\\p{...}, \\P{...}) cannot be expressed in Python's re"


class UnsupportedPattern(ValueError):
    """An ECMA-262 construct that Python's ``re`` would read differently or not at all."""


# ECMA-262 WhiteSpace and LineTerminator (the meaning of \s), as re class text.
_ECMA_SPACE = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_ECMA_DOT = "[^\\n\\r\\u2028\\u2029]"
_QUANTIFIER = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
_GROUP_OPENERS = ("(?:", "(?=", "(?!", "(?<=", "(?<!")
_GROUP_NAME = re.compile(r"\(\?<([A-Za-z_$][A-Za-z0-9_$]*)>")
_BACK_REFERENCE = re.compile(r"\\k<([A-Za-z_$][A-Za-z0-9_$]*)>")


def _translate(pattern: str) -> str:
    """``pattern`` rewritten for Python's ``re``, one token at a time (the rules are in the module docstring)."""
    out: List[str] = []
    i, n = 0, len(pattern)
    in_class = after_quantifier = after_dash = False
    while i < n:
        c = pattern[i]
        quantifier = dash = False
        if c == "\\":
            text, i = _escape(pattern, i, in_class)
        elif in_class:
            text, in_class, dash = _class_member(c, after_dash)
            i += 1
        elif c == "[":
            text, i, in_class = _class_open(pattern, i)
        elif c == "(" and pattern.startswith("(?", i):
            text, i = _group(pattern, i)
        elif c in "*+?":
            if c == "+" and after_quantifier:
                raise UnsupportedPattern("possessive quantifiers are not ECMA-262")
            text, i, quantifier = c, i + 1, True
        elif c == "{":
            text, i, quantifier = _brace(pattern, i)
        else:
            text, i = {".": _ECMA_DOT, "$": "\\Z", "}": "\\}"}.get(c, c), i + 1
        out.append(text)
        after_quantifier, after_dash = quantifier, dash
    return "".join(out)


def _escape(pattern: str, i: int, in_class: bool) -> Tuple[str, int]:
    """The escape at ``pattern[i]`` (a backslash) in Python's spelling, and the index after it.

    ``\\s``/``\\S`` become ECMA's white space, a surrogate pair ``\\uD83D\\uDE00``
    one character, ``\\cX`` a control character, ``\\k<name>`` a back reference;
    ``\\p``/``\\P`` and Python-only escapes are refused.
    """
    escape = pattern[i + 1 : i + 2]
    if escape in ("p", "P"):
        raise UnsupportedPattern(UNICODE_PROPERTY)
    if escape in ("A", "Z", "z", "a", "N", "U"):
        raise UnsupportedPattern("\\%s is not an ECMA-262 escape" % escape)
    if escape == "s":
        return (_ECMA_SPACE if in_class else "[%s]" % _ECMA_SPACE), i + 2
    if escape == "S":
        if in_class:
            raise UnsupportedPattern("\\S inside a character class is not supported")
        return "[^%s]" % _ECMA_SPACE, i + 2
    pair = _SURROGATE_PAIR.match(pattern, i) if escape == "u" else None
    if pair is not None:
        # ECMA-262 reads \uD83D\uDE00 as one character; Python's re as two lone surrogates.
        high, low = int(pair.group(1), 16), int(pair.group(2), 16)
        return re.escape(chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))), pair.end()
    if escape == "c" and pattern[i + 2 : i + 3].isalpha() and pattern[i + 2].isascii():
        return "\\x%02x" % (ord(pattern[i + 2]) % 32), i + 3
    reference = _BACK_REFERENCE.match(pattern, i)
    if escape == "k" and reference is not None and not in_class:
        return "(?P=%s)" % reference.group(1), reference.end()
    return pattern[i : i + 2], i + 2


def _class_member(c: str, after_dash: bool) -> Tuple[str, bool, bool]:
    """One character inside ``[...]``: (its text, whether the class goes on, whether it is a dash).

    ``[``, ``&``, ``~``, ``|`` and a second dash in a row are literals in ECMA
    but set syntax to Python, so they are escaped.
    """
    if c == "]":
        return c, False, False
    if c in "[&~|" or (c == "-" and after_dash):
        return "\\" + c, True, False
    return c, True, c == "-"


def _class_open(pattern: str, i: int) -> Tuple[str, int, bool]:
    """The ``[`` at ``pattern[i]``: (its text, the index after it, whether a class is now open).

    ECMA's ``[]`` matches nothing and ``[^]`` any character; both are whole
    tokens, so no class stays open after them.
    """
    j = i + 2 if pattern.startswith("[^", i) else i + 1
    if pattern[j : j + 1] == "]":
        return ("(?s:.)" if j == i + 2 else "(?!)"), j + 1, False
    return pattern[i:j], j, True


def _group(pattern: str, i: int) -> Tuple[str, int]:
    """The ``(?`` group opener at ``pattern[i]`` and the index after it.

    Non-capturing groups and lookarounds stay; ``(?<name>`` becomes Python's
    ``(?P<name>``; anything else (inline flags, ``(?P...)``) is refused.
    """
    opener = next((o for o in _GROUP_OPENERS if pattern.startswith(o, i)), None)
    if opener is not None:
        return opener, i + len(opener)
    named = _GROUP_NAME.match(pattern, i)
    if named is not None:
        return "(?P<%s>" % named.group(1), named.end()
    raise UnsupportedPattern("group syntax %r is not supported" % pattern[i : i + 3])


def _brace(pattern: str, i: int) -> Tuple[str, int, bool]:
    """The ``{`` at ``pattern[i]``: (its text, the index after it, whether it was a quantifier).

    ``{n}``, ``{n,}`` and ``{n,m}`` are quantifiers; ``{,n}`` (Python only) is
    refused; any other brace is a literal, as ECMA's Annex B reads it.
    """
    match = _QUANTIFIER.match(pattern, i)
    if match is not None:
        return match.group(), match.end(), True
    if re.match(r"\{,[0-9]*\}", pattern[i : i + 32]):
        raise UnsupportedPattern("the {,n} quantifier is not ECMA-262")
    return "\\{", i + 1, False


@functools.lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> "re.Pattern[str]":
    """The Python regex with ``pattern``'s ECMA-262 meaning, for ``search``.

    Raises :class:`UnsupportedPattern` for constructs listed in the module
    docstring, ``re.error`` for text neither dialect accepts.
    """
    return re.compile(_translate(pattern), re.ASCII)
