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
from typing import List

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
    out: List[str] = []
    i, n = 0, len(pattern)
    in_class = after_quantifier = after_dash = False
    while i < n:
        c = pattern[i]
        quantifier = dash = False
        if c == "\\":
            escape = pattern[i + 1 : i + 2]
            if escape in ("p", "P"):
                raise UnsupportedPattern(UNICODE_PROPERTY)
            if escape in ("A", "Z", "z", "a", "N", "U"):
                raise UnsupportedPattern("\\%s is not an ECMA-262 escape" % escape)
            reference = _BACK_REFERENCE.match(pattern, i)
            if escape == "s":
                out.append(_ECMA_SPACE if in_class else "[%s]" % _ECMA_SPACE)
            elif escape == "S":
                if in_class:
                    raise UnsupportedPattern("\\S inside a character class is not supported")
                out.append("[^%s]" % _ECMA_SPACE)
            elif escape == "u" and _SURROGATE_PAIR.match(pattern, i):
                # ECMA-262 reads \uD83D\uDE00 as one character; Python's re as two lone surrogates.
                pair = _SURROGATE_PAIR.match(pattern, i)
                assert pair is not None
                high, low = int(pair.group(1), 16), int(pair.group(2), 16)
                out.append(re.escape(chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))))
                i = pair.end() - 2
            elif escape == "c" and pattern[i + 2 : i + 3].isalpha() and pattern[i + 2].isascii():
                out.append("\\x%02x" % (ord(pattern[i + 2]) % 32))
                i += 1
            elif escape == "k" and reference is not None and not in_class:
                out.append("(?P=%s)" % reference.group(1))
                i = reference.end() - 2
            else:
                out.append(pattern[i : i + 2])
            i += 2
        elif in_class:
            if c == "]":
                in_class = False
                out.append(c)
            elif c in "[&~|" or (c == "-" and after_dash):
                out.append("\\" + c)  # literal in ECMA; set syntax to Python
            else:
                dash = c == "-"
                out.append(c)
            i += 1
        elif c == "[":
            j = i + 2 if pattern.startswith("[^", i) else i + 1
            if pattern[j : j + 1] == "]":  # ECMA [] matches nothing, [^] anything
                out.append("(?s:.)" if j == i + 2 else "(?!)")
                i = j + 1
            else:
                out.append(pattern[i:j])
                in_class, i = True, j
        elif c == "(" and pattern.startswith("(?", i):
            opener = next((o for o in _GROUP_OPENERS if pattern.startswith(o, i)), None)
            named = _GROUP_NAME.match(pattern, i)
            if opener is not None:
                out.append(opener)
                i += len(opener)
            elif named is not None:
                out.append("(?P<%s>" % named.group(1))
                i = named.end()
            else:
                raise UnsupportedPattern("group syntax %r is not supported" % pattern[i : i + 3])
        elif c in "*+?":
            if c == "+" and after_quantifier:
                raise UnsupportedPattern("possessive quantifiers are not ECMA-262")
            quantifier = True
            out.append(c)
            i += 1
        elif c == "{":
            match = _QUANTIFIER.match(pattern, i)
            if match is not None:
                quantifier = True
                out.append(match.group())
                i = match.end()
            elif re.match(r"\{,[0-9]*\}", pattern[i : i + 32]):
                raise UnsupportedPattern("the {,n} quantifier is not ECMA-262")
            else:
                out.append("\\{")
                i += 1
        else:
            out.append({".": _ECMA_DOT, "$": "\\Z", "}": "\\}"}.get(c, c))
            i += 1
        after_quantifier, after_dash = quantifier, dash
    return "".join(out)


@functools.lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> "re.Pattern[str]":
    """The Python regex with ``pattern``'s ECMA-262 meaning, for ``search``.

    Raises :class:`UnsupportedPattern` for constructs listed in the module
    docstring, ``re.error`` for text neither dialect accepts.
    """
    return re.compile(_translate(pattern), re.ASCII)
