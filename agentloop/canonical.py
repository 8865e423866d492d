"""RFC 8785 (JSON Canonicalization Scheme) encoding, with the I-JSON limits.

This is the one place that decides which Python values are recordable and the
exact bytes they become.  A transcript line is ``canonical_bytes(record)``.

What is implemented, by section of RFC 8785:

* 3.1 -- the input must be I-JSON (RFC 7493): no ``NaN``/infinities, strings
  must be valid Unicode (no lone surrogates), and, as RFC 7493 section 2.2
  recommends, integers stay within +/-(2**53 - 1) so every consumer reads the
  same number.  Anything else raises :class:`~agentloop.errors.UnrecordableError`
  naming where the value is.
* 3.2.1 -- no whitespace between tokens.
* 3.2.2.2 -- strings: ``"`` and ``\\`` escaped, ``\\b \\t \\n \\f \\r`` in
  their short form, other control characters as ``\\u00xx`` (lowercase hex),
  everything else as literal UTF-8.
* 3.2.2.3 -- numbers in the ECMAScript ``Number.prototype.toString`` form
  (ECMA-262, section 7.1.12.1), derived from Python's shortest round-trip
  ``repr``; ``-0`` serialises as ``0``.
* 3.2.3 -- object members sorted by their keys' UTF-16 code units.

On top of the RFC, nesting deeper than :data:`MAX_DEPTH` arrays/objects is
refused, so that a hostile value can neither exhaust the stack here nor produce
a line that a stock ``json.loads`` cannot read back.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, List

from .errors import UnrecordableError

__all__ = [
    "MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "canonical_bytes",
    "canonical_text",
    "format_number",
    "json_path",
]

#: The largest integer magnitude I-JSON guarantees to round-trip (2**53 - 1).
MAX_SAFE_INTEGER = 2**53 - 1

#: The deepest nesting of arrays and objects a recordable value may have.
#: The top-level value is depth 1, so ``[[1]]`` has depth 2.
MAX_DEPTH = 64

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_encode_string: Callable[[str], str] = json.encoder.encode_basestring


def json_path(parent: str, key: object) -> str:
    """Extend a JSONPath-like location: ``$.a``, ``$["odd key"]``, ``$[3]``."""
    if isinstance(key, int) and not isinstance(key, bool):
        return "%s[%d]" % (parent, key)
    text = str(key)
    if _IDENTIFIER.match(text):
        return "%s.%s" % (parent, text)
    return "%s[%s]" % (parent, json.dumps(text, ensure_ascii=True))


def format_number(value: float) -> str:
    """Serialise a finite float as ECMAScript ``Number::toString`` does.

    RFC 8785 section 3.2.2.3 delegates to ECMA-262 7.1.12.1: with ``s`` the
    shortest digit string that round-trips, ``k`` its length and ``n`` the
    position of the decimal point (value = 0.s * 10**n):

    1. ``k <= n <= 21``: the digits followed by ``n - k`` zeros;
    2. ``0 < n <= 21``: the digits with a point after the first ``n``;
    3. ``-6 < n <= 0``: ``0.``, ``-n`` zeros, then the digits;
    4. otherwise exponent form ``d[.ddd]e(+|-)x`` with ``x = n - 1``.

    Python's ``repr`` yields the same shortest round-trip digits (both follow
    Steele-White/Grisu-style "shortest" output), so only the layout differs.
    """
    if value != value or value in (math.inf, -math.inf):
        raise ValueError("%r is not a finite number" % (value,))
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # Position of the point relative to the first significant digit.
    point = len(whole) + (int(exponent) if exponent else 0)
    point -= len(whole + fraction) - len((whole + fraction).lstrip("0"))
    digits = digits.rstrip("0")
    k, n = len(digits), point
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        head = digits if k == 1 else digits[0] + "." + digits[1:]
        body = "%se%s%d" % (head, "+" if e >= 0 else "-", abs(e))
    return sign + body


def _sort_key(key: str) -> bytes:
    # RFC 8785 section 3.2.3: compare keys as arrays of UTF-16 code units.
    # Big-endian UTF-16 bytes compare exactly like those code units.
    return key.encode("utf-16-be", "surrogatepass")


def _check_string(text: str, path: str) -> str:
    match = _LONE_SURROGATE.search(text)
    if match is not None:
        raise UnrecordableError(
            path,
            "string has a lone surrogate U+%04X at index %d" % (ord(match.group()), match.start()),
        )
    return text


def _type_name(value: object) -> str:
    return type(value).__name__


def _encode(value: Any, path: str, depth: int, out: List[str]) -> None:
    # bool before int: isinstance(True, int) holds in Python, not in JSON.
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_encode_string(_check_string(value, path)))
    elif isinstance(value, int):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise UnrecordableError(
                path, "integer %d is outside the I-JSON range +/-(2**53-1)" % (value,)
            )
        out.append(str(int(value)))
    elif isinstance(value, float):
        if value != value or value in (math.inf, -math.inf):
            raise UnrecordableError(path, "%s is not a JSON number" % (float(value),))
        out.append(format_number(float(value)))
    elif isinstance(value, (dict, list)):
        if depth >= MAX_DEPTH:
            raise UnrecordableError(path, "nesting deeper than %d levels" % (MAX_DEPTH,))
        if isinstance(value, list):
            out.append("[")
            for index, item in enumerate(value):
                if index:
                    out.append(",")
                _encode(item, "%s[%d]" % (path, index), depth + 1, out)
            out.append("]")
            return
        for key in value:
            if not isinstance(key, str):
                raise UnrecordableError(
                    path, "object key %r is a %s, not a string" % (key, _type_name(key))
                )
            _check_string(key, json_path(path, key))
        out.append("{")
        for index, key in enumerate(sorted(value, key=_sort_key)):
            if index:
                out.append(",")
            out.append(_encode_string(key))
            out.append(":")
            _encode(value[key], json_path(path, key), depth + 1, out)
        out.append("}")
    else:
        raise UnrecordableError(path, "a %s is not a JSON value" % (_type_name(value),))


def canonical_text(value: Any, path: str = "$") -> str:
    """Return the RFC 8785 serialisation of ``value`` as a ``str``.

    Raises :class:`~agentloop.errors.UnrecordableError` when ``value`` is not
    recordable; its ``path`` is rooted at ``path``.
    """
    out: List[str] = []
    _encode(value, path, 0, out)
    return "".join(out)


def canonical_bytes(value: Any, path: str = "$") -> bytes:
    """Return the RFC 8785 serialisation of ``value`` as UTF-8 bytes."""
    return canonical_text(value, path).encode("utf-8")
