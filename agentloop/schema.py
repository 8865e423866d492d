"""A fail-closed JSON Schema validator for tool arguments (a 2020-12 subset).

The schemas are read with the semantics of JSON Schema draft 2020-12
(draft-bhutton-json-schema-01 "Core" and draft-bhutton-json-schema-validation-01
"Validation").  Only the keywords below are enforced; :func:`check_schema`
refuses every other keyword, so a schema is never silently under-enforced.

Enforced (:data:`KNOWN_KEYWORDS`):

* Validation 6.1.1 ``type``, 6.1.2 ``enum``, 6.1.3 ``const`` -- equality as in
  Core 4.2.2: numbers by mathematical value (``1 == 1.0``), ``true != 1``;
  type names as in Core 4.2.1, where ``integer`` is any number with a zero
  fractional part (so ``1.0`` is an integer) and a boolean is never a number.
* Validation 6.2.2 ``maximum``, 6.2.3 ``exclusiveMaximum``, 6.2.4 ``minimum``,
  6.2.5 ``exclusiveMinimum`` (the numeric 2020-12 forms only).
* Validation 6.3.1 ``maxLength``, 6.3.2 ``minLength`` (Unicode code points),
  6.3.3 ``pattern`` (unanchored search; Core 6.4 asks for ECMA-262 regexes, so
  the pattern is translated into an equivalent Python ``re`` pattern and
  constructs whose meaning would differ are refused).
* Validation 6.4.1 ``maxItems``, 6.4.2 ``minItems``; Core 10.3.1.2 ``items``
  (one schema for every element).
* Validation 6.5.3 ``required``; Core 10.3.2.1 ``properties``, 10.3.2.3
  ``additionalProperties`` (a boolean or a schema).
* Core 10.2.1.2 ``anyOf``.

Accepted and ignored (:data:`ANNOTATIONS`): Validation 9.1 ``title`` and
``description``, 9.2 ``default``, 9.5 ``examples``, Core 8.3 ``$comment``, and
Core 8.1.1 ``$schema``, which must name draft 2020-12 and sit at the root.

Boolean schemas (Core 4.3.2) are refused except as ``additionalProperties``.
"""

from __future__ import annotations

import functools
import json
import math
import operator
import re
from typing import Any, FrozenSet, List, Mapping, Optional, Tuple

from .canonical import MAX_DEPTH, canonical_text, json_path
from .errors import SchemaError, ValidationError

__all__ = ["check_schema", "validate", "KNOWN_KEYWORDS", "ANNOTATIONS"]

#: Keywords this module enforces.
KNOWN_KEYWORDS: FrozenSet[str] = frozenset(
    (
        "type", "enum", "const",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "minLength", "maxLength", "pattern",
        "minItems", "maxItems", "items",
        "required", "properties", "additionalProperties",
        "anyOf",
    )
)

#: Keywords accepted and ignored (``$schema`` must still name draft 2020-12).
ANNOTATIONS: FrozenSet[str] = frozenset(
    ("title", "description", "default", "examples", "$comment", "$schema")
)

_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_TYPE_NAMES = ("null", "boolean", "object", "array", "number", "string", "integer")
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_COUNT_KEYWORDS = ("minLength", "maxLength", "minItems", "maxItems")
_SHOW_LIMIT = 60

# --------------------------------------------------------------------------
# Small helpers shared by both halves.


def _type_name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def _show(value: object) -> str:
    """Canonical JSON of ``value`` for a message, cut to 60 characters."""
    if isinstance(value, str) and len(value) > _SHOW_LIMIT:
        value = value[: _SHOW_LIMIT + 1]  # the shown prefix is the same
    try:
        text = canonical_text(value)
    except (ValueError, TypeError, RecursionError):  # NaN, 2**60, lone surrogate...
        if isinstance(value, int) and value.bit_length() > 192:  # str() may refuse
            return "<int of %d bits>" % value.bit_length()
        try:
            text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), default=repr)
        except (ValueError, TypeError, RecursionError):
            text = "<%s>" % _type_name(value)
    if len(text) > _SHOW_LIMIT:
        text = text[: _SHOW_LIMIT - 3] + "..."
    return text


def _kind(value: object) -> str:
    """The Python type name, or ``[]`` for an empty list (for schema errors)."""
    return "[]" if isinstance(value, list) and not value else _type_name(value)


def _short_repr(key: object) -> str:
    text = repr(key)
    return text if len(text) <= _SHOW_LIMIT else text[: _SHOW_LIMIT - 3] + "..."


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    """A non-negative integer in the JSON sense (``2.0`` counts, ``true`` does not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not value.is_integer():
        return False
    return value >= 0


def _has_type(value: object, name: str) -> bool:
    # bool first: isinstance(True, int) holds in Python but not in JSON.
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float))
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list)
    return name == "object" and isinstance(value, dict)


def _json_equal(a: object, b: object) -> bool:
    """Core 4.2.2 equality, iterative so deep input cannot exhaust the stack."""
    stack: List[Tuple[object, object]] = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, bool) or isinstance(y, bool) or x is None or y is None:
            if not (type(x) is type(y) and x == y):
                return False
        elif _is_number(x) or _is_number(y):
            if not (_is_number(x) and _is_number(y) and x == y):
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


# --------------------------------------------------------------------------
# ECMA-262 patterns run through Python's re.

# ECMA-262 WhiteSpace and LineTerminator (the meaning of \s), as re class text.
_ECMA_SPACE = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_ECMA_DOT = "[^\\n\\r\\u2028\\u2029]"
_QUANTIFIER = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
_GROUP_OPENERS = ("(?:", "(?=", "(?!", "(?<=", "(?<!")


def _translate_pattern(pattern: str) -> str:
    """Rewrite an ECMA-262 pattern so Python ``re`` (with re.ASCII) agrees.

    ``$`` becomes ``\\Z`` (Python's ``$`` also matches before a final newline),
    ``.`` excludes every ECMA line terminator, ``\\s`` is ECMA's set; ``\\d``,
    ``\\w`` and ``\\b`` are ASCII through re.ASCII.  Python-only syntax raises
    ValueError; what neither dialect accepts is left for ``re`` to reject.
    """
    out: List[str] = []
    i, n = 0, len(pattern)
    in_class = after_quantifier = after_dash = False
    while i < n:
        c = pattern[i]
        quantifier = dash = False
        if c == "\\":
            escape = pattern[i + 1 : i + 2]
            if escape in ("A", "Z", "z", "a", "N", "U"):
                raise ValueError("\\%s is not an ECMA-262 escape" % escape)
            if escape == "s":
                out.append(_ECMA_SPACE if in_class else "[%s]" % _ECMA_SPACE)
            elif escape == "S":
                if in_class:
                    raise ValueError("\\S inside a character class is not supported")
                out.append("[^%s]" % _ECMA_SPACE)
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
            if opener is None:
                raise ValueError("group syntax %r is not supported" % pattern[i : i + 3])
            out.append(opener)
            i += len(opener)
        elif c in "*+?":
            if c == "+" and after_quantifier:
                raise ValueError("possessive quantifiers are not ECMA-262")
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
                raise ValueError("the {,n} quantifier is not ECMA-262")
            else:
                out.append("\\{")
                i += 1
        else:
            out.append({".": _ECMA_DOT, "$": "\\Z", "}": "\\}"}.get(c, c))
            i += 1
        after_quantifier, after_dash = quantifier, dash
    return "".join(out)


@functools.lru_cache(maxsize=512)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(_translate_pattern(pattern), re.ASCII)


# --------------------------------------------------------------------------
# check_schema


def check_schema(schema: object, tool: Optional[str] = None) -> None:
    """Refuse ``schema`` unless every keyword in it is enforceable here.

    Raises :class:`~agentloop.errors.SchemaError` for the first problem, in
    the schema's own key order, depth first.
    """
    _check(schema, "$", 0, tool)


def _json_value_problem(value: object) -> Optional[str]:
    """Why ``value`` is not a JSON value (None when it is one)."""
    stack: List[Tuple[object, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if item is None or isinstance(item, (bool, int, str)):
            continue
        if isinstance(item, float):
            if math.isnan(item) or math.isinf(item):
                return "%r is not a JSON number" % item
        elif isinstance(item, (list, dict)):
            if level >= MAX_DEPTH:
                return "nesting deeper than %d levels" % MAX_DEPTH
            if isinstance(item, dict):
                for key in item:
                    if not isinstance(key, str):
                        return "object key %r is not a string" % (key,)
                stack.extend((v, level + 1) for v in item.values())
            else:
                stack.extend((v, level + 1) for v in item)
        else:
            return "a %s is not a JSON value" % _type_name(item)
    return None


def _check(schema: object, path: str, depth: int, tool: Optional[str]) -> None:
    def fail(reason: str) -> SchemaError:
        return SchemaError(path, reason, tool)

    if not isinstance(schema, dict):
        raise fail("a schema must be an object, got %s" % _type_name(schema))
    if depth >= MAX_DEPTH:
        raise fail("schema nested deeper than %d levels" % MAX_DEPTH)
    for key, value in schema.items():
        if not isinstance(key, str):
            raise fail("schema keys must be strings, got %s %r" % (_type_name(key), key))
        if key not in KNOWN_KEYWORDS and key not in ANNOTATIONS:
            raise fail("unsupported keyword %r" % key)
        if key == "$schema":
            if depth:
                raise fail("$schema is only allowed at the root")
            if not isinstance(value, str) or value != _DRAFT_2020_12:
                raise fail("$schema must be %s, got %s" % (_show(_DRAFT_2020_12), _show(value)))
        elif key in ("title", "description", "$comment") and not isinstance(value, str):
            raise fail("%s must be a string, got %s" % (key, _type_name(value)))
        elif key == "examples" and not isinstance(value, list):
            raise fail("examples must be an array, got %s" % _type_name(value))
        elif key == "type":
            names = [value] if isinstance(value, str) else value
            if not isinstance(names, list) or not names:
                raise fail("type must be a string or a non-empty array of strings, got %s"
                           % _kind(value))
            for index, name in enumerate(names):
                if not isinstance(name, str):
                    raise fail("type[%d] must be a string, got %s" % (index, _type_name(name)))
                if name not in _TYPE_NAMES:
                    raise fail("unknown type %r" % name)
                if name in names[:index]:
                    raise fail("type lists %r twice" % name)
        elif key == "enum":
            if not isinstance(value, list) or not value:
                raise fail("enum must be a non-empty array, got %s" % _kind(value))
            for index, item in enumerate(value):
                problem = _json_value_problem(item)
                if problem is not None:
                    raise fail("enum[%d] is not a JSON value: %s" % (index, problem))
        elif key == "const":
            problem = _json_value_problem(value)
            if problem is not None:
                raise fail("const is not a JSON value: %s" % problem)
        elif key in _NUMBER_KEYWORDS:
            if not _is_number(value) or math.isnan(value) or math.isinf(value):
                raise fail("%s must be a number, got %s" % (key, _show(value)))
        elif key in _COUNT_KEYWORDS:
            if not _is_count(value):
                raise fail("%s must be a non-negative integer, got %s" % (key, _show(value)))
        elif key == "pattern":
            if not isinstance(value, str):
                raise fail("pattern must be a string, got %s" % _type_name(value))
            try:
                _compile(value)
            except re.error as exc:
                raise fail("pattern %s is not a valid regular expression: %s"
                           % (_show(value), exc.msg))
            except (ValueError, RecursionError, OverflowError) as exc:
                raise fail("pattern %s is not supported: %s" % (_show(value), exc))
        elif key == "required":
            if not isinstance(value, list):
                raise fail("required must be an array of strings, got %s" % _type_name(value))
            for index, name in enumerate(value):
                if not isinstance(name, str):
                    raise fail("required[%d] must be a string, got %s"
                               % (index, _type_name(name)))
                if name in value[:index]:
                    raise fail("required lists %r twice" % name)
        elif key == "properties":
            if not isinstance(value, dict):
                raise fail("properties must be an object, got %s" % _type_name(value))
            where = json_path(path, "properties")
            for name, subschema in value.items():
                if not isinstance(name, str):
                    raise fail("properties keys must be strings, got %s %r"
                               % (_type_name(name), name))
                _check(subschema, json_path(where, name), depth + 1, tool)
        elif key == "additionalProperties":
            if not isinstance(value, bool):
                _check(value, json_path(path, key), depth + 1, tool)
        elif key == "items":
            _check(value, json_path(path, key), depth + 1, tool)
        elif key == "anyOf":
            if not isinstance(value, list) or not value:
                raise fail("anyOf must be a non-empty array of schemas, got %s" % _kind(value))
            where = json_path(path, key)
            for index, subschema in enumerate(value):
                _check(subschema, json_path(where, index), depth + 1, tool)


# --------------------------------------------------------------------------
# validate


def validate(schema: Mapping[str, Any], instance: object, path: str = "$") -> None:
    """Raise :class:`~agentloop.errors.ValidationError` unless ``instance`` fits.

    ``schema`` must have passed :func:`check_schema`.  The first violation is
    reported, in a fixed keyword order: type, enum, const, numeric, string,
    array, object keywords, then anyOf.  ``path`` prefixes the instance path.
    """
    _validate(schema, instance, path)


def _validate(schema: Mapping[str, Any], instance: object, path: str) -> None:
    def fail(reason: str) -> ValidationError:
        return ValidationError(path, reason)

    if "type" in schema:
        names = schema["type"]
        names = [names] if isinstance(names, str) else names
        if not any(_has_type(instance, name) for name in names):
            raise fail("expected type %s, got %s" % (" or ".join(names), _type_name(instance)))
    if "enum" in schema and not any(_json_equal(instance, item) for item in schema["enum"]):
        raise fail("%s is not one of %s" % (_show(instance), _show(schema["enum"])))
    if "const" in schema and not _json_equal(instance, schema["const"]):
        raise fail("expected const %s, got %s" % (_show(schema["const"]), _show(instance)))

    if _is_number(instance):
        number: Any = instance
        for key, broken, words in (
            ("minimum", operator.lt, "is less than"),
            ("maximum", operator.gt, "is greater than"),
            ("exclusiveMinimum", operator.le, "is not greater than"),
            ("exclusiveMaximum", operator.ge, "is not less than"),
        ):
            if key in schema and broken(number, schema[key]):
                raise fail("%s %s %s %s" % (_show(number), words, key, _show(schema[key])))

    elif isinstance(instance, str):
        length = len(instance)  # code points
        if "minLength" in schema and length < schema["minLength"]:
            raise fail("string of length %d is shorter than minLength %s"
                       % (length, _show(schema["minLength"])))
        if "maxLength" in schema and length > schema["maxLength"]:
            raise fail("string of length %d is longer than maxLength %s"
                       % (length, _show(schema["maxLength"])))
        if "pattern" in schema and _compile(schema["pattern"]).search(instance) is None:
            raise fail("%s does not match pattern %s"
                       % (_show(instance), _show(schema["pattern"])))

    elif isinstance(instance, list):
        if "minItems" in schema and len(instance) < schema["minItems"]:
            raise fail("array of length %d is shorter than minItems %s"
                       % (len(instance), _show(schema["minItems"])))
        if "maxItems" in schema and len(instance) > schema["maxItems"]:
            raise fail("array of length %d is longer than maxItems %s"
                       % (len(instance), _show(schema["maxItems"])))
        if "items" in schema:
            for index, item in enumerate(instance):
                _validate(schema["items"], item, json_path(path, index))

    elif isinstance(instance, dict):
        for name in schema.get("required", ()):
            if name not in instance:
                raise fail("missing required property %s" % _short_repr(name))
        properties = schema.get("properties", {})
        for name, subschema in properties.items():
            if name in instance:
                _validate(subschema, instance[name], json_path(path, name))
        extra = schema.get("additionalProperties", True)
        if extra is not True:
            for name in instance:
                if name in properties:
                    continue
                if extra is False:
                    raise fail("unexpected property %s" % _short_repr(name))
                _validate(extra, instance[name], json_path(path, name))

    if "anyOf" in schema:
        problems: List[str] = []
        for index, subschema in enumerate(schema["anyOf"]):
            try:
                _validate(subschema, instance, path)
            except ValidationError as exc:
                text = exc.reason if exc.path == path else str(exc)
                problems.append("%d: %s" % (index, text))
            else:
                return None
        raise fail("does not match any schema in anyOf (%s)" % "; ".join(problems))
