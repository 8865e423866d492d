"""JSON values as JSON Schema sees them: types, equality, exact multiples, short display.

* Core 4.2.1 -- the instance data model: ``integer`` is any number with a zero
  fractional part (``1.0`` is an integer) and a boolean is never a number,
  although ``isinstance(True, int)`` holds in Python (so ``bool`` is tested
  first, everywhere).
* Core 4.2.2 -- equality: numbers by mathematical value (``1 == 1.0``),
  ``true != 1``, arrays item by item, objects key by key.  :func:`json_equal`
  and :func:`freeze` (a hashable key with the same equality, for
  ``uniqueItems``) never recurse, so a deep value cannot exhaust the stack.
* Validation 6.2.1 -- ``multipleOf`` by exact arithmetic: a float is read as
  the decimal its shortest ``repr`` spells (the number the JSON text wrote),
  so ``0.0075`` is a multiple of ``0.0001`` with no binary drift.

:func:`show` renders any value for a message in at most 60 characters, so a
10 MB argument never makes a 10 MB error.
"""

from __future__ import annotations

import heapq
import json
import math
from fractions import Fraction
from typing import Any, Iterator, List, Mapping, Sequence, Tuple, Union, cast

from ..canonical import canonical_text, format_number
from ..errors import UnrecordableError

__all__ = [
    "type_name",
    "show",
    "short_repr",
    "is_number",
    "is_integer",
    "json_equal",
    "freeze",
    "scalar_key",
    "is_multiple",
    "SHOW_LIMIT",
]

#: The longest rendering of a value inside a message.
SHOW_LIMIT = 60

Number = Union[int, float]


def type_name(value: object) -> str:
    """The Python type name, with ``None`` for ``None`` (as messages spell it)."""
    return "None" if value is None else type(value).__name__


class _Raw:
    """Literal JSON punctuation inside :func:`show`'s token stream."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


_OPEN_ARRAY, _CLOSE_ARRAY, _OPEN_OBJECT, _CLOSE_OBJECT, _COMMA = (_Raw("["), _Raw("]"), _Raw("{"), _Raw("}"), _Raw(","))


def _utf16_key(key: str) -> bytes:
    # RFC 8785 section 3.2.3: members sorted by their keys' UTF-16 code units.
    return key.encode("utf-16-be", "surrogatepass")


def _array_tokens(items: Sequence[object]) -> Iterator[object]:
    yield _OPEN_ARRAY
    for index, item in enumerate(items):
        if index:
            yield _COMMA
        yield item
    yield _CLOSE_ARRAY


def _object_tokens(members: Mapping[Any, object]) -> Iterator[object]:
    yield _OPEN_OBJECT
    keys = [key for key in members if isinstance(key, str)]
    # Only the first few members can fit in SHOW_LIMIT characters.
    for index, key in enumerate(heapq.nsmallest(SHOW_LIMIT // 4 + 1, keys, key=_utf16_key)):
        if index:
            yield _COMMA
        yield _Raw(_scalar_text(key) + ":")
        yield members[key]
    yield _CLOSE_OBJECT


def _scalar_text(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if value.bit_length() > 192:  # str() may refuse it (int_max_str_digits)
            return "<int of %d bits>" % value.bit_length()
        return str(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return format_number(value)
    if isinstance(value, str):
        text = value[: SHOW_LIMIT + 1]  # the shown prefix is the same
        try:
            return canonical_text(text)
        except UnrecordableError:  # a lone surrogate: escape it visibly
            return json.dumps(text, ensure_ascii=True)
    return "<%s>" % type_name(value)


def show(value: object) -> str:
    """``value`` as RFC 8785 JSON for a message, cut to :data:`SHOW_LIMIT` characters.

    The rendering stops as soon as the limit is passed, so its cost does not
    grow with the size of ``value``.  What JSON cannot hold is still shown:
    ``NaN``, ``Infinity``, a lone surrogate as ``\\ud800``, ``<int of N bits>``.
    """
    parts: List[str] = []
    size = 0
    stack: List[Iterator[object]] = [iter((value,))]
    while stack and size <= SHOW_LIMIT:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
            continue
        if isinstance(item, _Raw):
            text = item.text
        elif isinstance(item, (list, tuple)):
            stack.append(_array_tokens(item))
            continue
        elif isinstance(item, dict):
            stack.append(_object_tokens(item))
            continue
        else:
            text = _scalar_text(item)
        parts.append(text)
        size += len(text)
    text = "".join(parts)
    return text if len(text) <= SHOW_LIMIT else text[: SHOW_LIMIT - 3] + "..."


_END = _Raw("")


def short_repr(key: object) -> str:
    """``repr(key)`` cut to :data:`SHOW_LIMIT` characters (property names in messages)."""
    if isinstance(key, str) and len(key) > SHOW_LIMIT:
        key = key[: SHOW_LIMIT + 1]
    text = repr(key)
    return text if len(text) <= SHOW_LIMIT else text[: SHOW_LIMIT - 3] + "..."


def is_number(value: object) -> bool:
    """A JSON number: an int or float that is not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_integer(value: object) -> bool:
    """A JSON integer (Core 4.2.1): a number with a zero fractional part, so ``1.0`` is one."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def json_equal(a: object, b: object) -> bool:
    """Core 4.2.2 equality, iterative so deep input cannot exhaust the stack."""
    stack: List[Tuple[object, object]] = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, bool) or isinstance(y, bool) or x is None or y is None:
            if not (type(x) is type(y) and x == y):
                return False
        elif is_number(x) or is_number(y):
            if not (is_number(x) and is_number(y) and x == y):
                return False
        elif isinstance(x, str) or isinstance(y, str):
            if not (isinstance(x, str) and isinstance(y, str) and x == y):
                return False
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif isinstance(x, dict) and isinstance(y, dict):
            if len(x) != len(y) or any(key not in y for key in x):
                return False
            stack.extend((x[key], y[key]) for key in x)
        else:
            return False
    return True


class _Tag:
    """A marker inside frozen keys; compares by identity."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return "<%s>" % self.name


_BOOL, _ARRAY, _OBJECT, _OTHER = _Tag("bool"), _Tag("array"), _Tag("object"), _Tag("other")


def scalar_key(value: object) -> object:
    """A hashable key for a JSON scalar, equal exactly when Core 4.2.2 says so.

    Numbers stay themselves (Python already has ``1 == 1.0`` with equal
    hashes); booleans are tagged so ``true`` never meets ``1``.
    """
    if isinstance(value, bool):
        return (_BOOL, value)
    return value


def freeze(value: object) -> object:
    """A hashable key for any JSON value with Core 4.2.2 equality (iterative).

    Arrays become tagged tuples and objects tagged frozensets of
    ``(key, frozen value)``; a value that is not JSON becomes a key equal
    only to itself.
    """
    # Post-order over an explicit stack: (value, children frozen so far).
    result: List[object] = []
    stack: List[Tuple[object, bool]] = [(value, False)]
    pending: List[int] = []  # result length when a container was entered
    while stack:
        item, built = stack.pop()
        if built:
            start = pending.pop()
            parts = result[start:]
            del result[start:]
            if isinstance(item, list):
                result.append((_ARRAY, tuple(parts)))
            else:
                keys = list(cast(dict, item))  # type: ignore[type-arg]
                result.append((_OBJECT, frozenset(zip(keys, parts))))
            continue
        if isinstance(item, list) or isinstance(item, dict):
            pending.append(len(result))
            stack.append((item, True))
            children = list(item.values()) if isinstance(item, dict) else item
            stack.extend((child, False) for child in reversed(children))
        elif item is None or isinstance(item, (bool, int, float, str)):
            result.append(scalar_key(item))
        else:
            result.append((_OTHER, id(item)))
    return result[0]


def _exact(value: Number) -> Fraction:
    if isinstance(value, int):
        return Fraction(value)
    return Fraction(repr(value))  # the shortest decimal that reads back as value


def is_multiple(value: Number, divisor: Number) -> bool:
    """Validation 6.2.1: ``value / divisor`` is an integer, computed exactly.

    ``divisor`` is strictly positive (the schema check guarantees it).  A
    non-finite ``value`` (not JSON, but a caller may pass one) is no multiple.
    """
    if isinstance(value, int) and isinstance(divisor, int):
        return value % divisor == 0
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return False
    return (_exact(value) / _exact(divisor)).denominator == 1
