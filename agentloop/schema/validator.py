"""A fail-closed JSON Schema (draft 2020-12) validator for tool arguments, compiled once.

The schemas are read with the semantics of JSON Schema draft 2020-12
(draft-bhutton-json-schema-01 "Core" and draft-bhutton-json-schema-validation-01
"Validation").  :func:`compile_schema` checks a schema and turns it into a
:class:`Validator`: a tree of closures, one per keyword, so validating an
instance interprets no schema.  :func:`validate` is ``compile_schema(...).errors(...)``.
Checking the document and resolving its references is pass 1,
:mod:`agentloop.schema.document`; this module is pass 2 and the public surface.
Every keyword below is enforced; any other keyword is refused
(:class:`~agentloop.errors.SchemaError`), so a schema is never half-enforced.

Enforced (:data:`KNOWN_KEYWORDS`):

* Validation 6.1.1 ``type``, 6.1.2 ``enum``, 6.1.3 ``const`` -- equality as in
  Core 4.2.2 (see :mod:`agentloop.schema.values`).
* Validation 6.2.1 ``multipleOf`` (exact: integers and the floats' decimal
  spelling, no binary drift), 6.2.2-6.2.5 ``maximum``, ``exclusiveMaximum``,
  ``minimum``, ``exclusiveMinimum``.
* Validation 6.3.1 ``maxLength``, 6.3.2 ``minLength`` (Unicode code points),
  6.3.3 ``pattern`` (ECMA-262, see :mod:`agentloop.schema.patterns`); Validation 7
  ``format``: an annotation, asserted only with ``assert_formats=True`` for
  the names in :mod:`agentloop.schema.formats` (any other name is then refused).
* Validation 6.4.1 ``maxItems``, 6.4.2 ``minItems``, 6.4.3 ``uniqueItems``;
  Core 10.3.1.1 ``prefixItems``, 10.3.1.2 ``items`` (the items after
  ``prefixItems``), 11.2 ``unevaluatedItems``.
* Validation 6.5.1 ``maxProperties``, 6.5.2 ``minProperties``, 6.5.3
  ``required``, 6.5.4 ``dependentRequired``; Core 10.3.2.1 ``properties``,
  10.3.2.2 ``patternProperties``, 10.3.2.3 ``additionalProperties``,
  10.3.2.4 ``propertyNames``, 11.3 ``unevaluatedProperties``.
* Core 10.2.1 ``allOf``, ``anyOf``, ``oneOf``, ``not``; 10.2.2 ``if``,
  ``then``, ``else``, ``dependentSchemas``.
* Core 8.2.1 ``$id``, 8.2.2 ``$anchor``, 8.2.3.1 ``$ref``, 8.2.4 ``$defs``:
  references are resolved (RFC 3986, :mod:`agentloop.schema.uri`) inside the
  schema document -- JSON Pointers, ``$anchor`` names and embedded ``$id``
  resources -- or to the draft 2020-12 meta-schemas, which ship with the
  package (:mod:`agentloop.schema.bundled`; inside them ``$dynamicRef`` and
  ``$dynamicAnchor`` are read too, see :mod:`agentloop.schema.document`).  Any
  other reference that leaves the document is refused as remote: nothing is
  ever fetched.
* Core 4.3.2 boolean schemas ``true`` and ``false``, anywhere.

Accepted and ignored (:data:`ANNOTATIONS`): Validation 9.1 ``title`` and
``description`` (strings), 9.2 ``default``, 9.3 ``deprecated``, 9.4
``readOnly`` and ``writeOnly`` (booleans), 9.5 ``examples`` (an array), Core
8.3 ``$comment`` (a string), and Core 8.1.1 ``$schema``, which must name draft
2020-12 and sit at the root of a schema resource.

Refused when compiled, besides unknown keywords and malformed values:

* a pattern Python's ``re`` cannot express (``\\p{Letter}``), see
  :mod:`agentloop.schema.patterns`;
* a remote ``$ref``;
* a ``$ref`` cycle that never consumes the instance (``{"$ref": "#"}``,
  ``allOf`` chains back to the schema itself): Core 9.4.1 says such a schema
  must not be run into an infinite loop, so it is refused up front;
* nesting deeper than :data:`~agentloop.canonical.MAX_DEPTH` levels.

Errors (:class:`~agentloop.errors.ValidationError`) name the instance path
(``$.tool.items[2].name``) and say what was expected and what came; values are
shown in at most 60 characters, ``anyOf``/``oneOf`` failures list each
branch's first error in at most 100 characters (eight branches at most), and
a call returns at most ``limit`` errors, so their size is bounded whatever the
instance.  Recursion through ``$ref`` is limited to :data:`MAX_REF_DEPTH`
nested references; deeper is an error, never a ``RecursionError``.
"""

from __future__ import annotations

import json
import math
import operator
import re
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple, Union

from ..canonical import json_path
from ..errors import BadArgumentError, ValidationError
from .formats import FORMAT_CHECKS
from .values import (
    freeze,
    is_integer,
    is_multiple,
    is_number,
    json_equal,
    scalar_key,
    short_repr,
    show,
    type_name,
)
from .document import (
    ANNOTATIONS,
    DEFAULT_BASE,
    KNOWN_KEYWORDS,
    NUMBER_KEYWORDS,
    Document,
    Place,
    Pointer,
    Schema,
    ecma_regex,
)

__all__ = [
    "check_schema",
    "compile_schema",
    "validate",
    "Validator",
    "KNOWN_KEYWORDS",
    "ANNOTATIONS",
    "MAX_ERRORS",
    "MAX_REF_DEPTH",
]

#: The most errors one call returns (the first ones, in keyword order).
MAX_ERRORS = 50

#: The deepest nesting of ``$ref`` a validation follows before it reports an error.
MAX_REF_DEPTH = 128

_KEY_LIMIT = 60  # longest instance key written into a path
_BRANCH_TEXT = 100  # longest branch error inside an anyOf/oneOf summary
_BRANCH_LIMIT = 8  # most branches listed in a summary


class _Ctx:
    """The state of one validation call: where errors go and how deep ``$ref`` is.

    ``errors is None`` is the quiet mode (only the verdict matters, so the
    first failure ends the walk); ``stop`` is true in quiet mode or once
    ``limit`` errors have been collected.
    """

    __slots__ = ("errors", "stop", "limit", "depth")

    def __init__(self, errors: Optional[List[ValidationError]], limit: int) -> None:
        self.errors = errors
        self.stop = errors is None
        self.limit = limit
        self.depth = 0

    def add(self, path: str, reason: str) -> None:
        errors = self.errors
        if errors is not None:
            errors.append(ValidationError(path, reason))
            if len(errors) >= self.limit:
                self.stop = True


#: A compiled schema: ``check(instance, path, ctx, seen) -> valid``.  ``seen``
#: collects the evaluated property names / item counts for ``unevaluated*``
#: (Core 11), or is ``None`` when nobody asks.
Check = Callable[[Any, str, _Ctx, Optional[Set[Any]]], bool]

# Shared by every quiet validation of a schema without $ref (which alone
# mutates a context): quiet mode never writes to it.
_QUIET = _Ctx(None, 1)


def _accept(instance: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
    return True


def _reject(instance: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
    if ctx.errors is not None:
        ctx.add(path, "no value is allowed (the schema is false), got %s" % show(instance))
    return False


def _quiet(check: Check, instance: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
    """Run ``check`` for its verdict only (the branches of anyOf, oneOf, not, if)."""
    errors, stop = ctx.errors, ctx.stop
    if errors is None:
        return check(instance, path, ctx, seen)
    ctx.errors, ctx.stop = None, True
    try:
        return check(instance, path, ctx, seen)
    finally:
        ctx.errors, ctx.stop = errors, stop


def _first_reason(check: Check, instance: Any, path: str, ctx: _Ctx) -> str:
    """The first error ``check`` reports, relative to ``path``, cut to 100 characters."""
    sub = _Ctx([], 1)
    sub.depth = ctx.depth
    check(instance, path, sub, None)
    if not sub.errors:
        return "is not valid"
    error = sub.errors[0]
    text = error.reason if error.path == path else str(error)
    return text if len(text) <= _BRANCH_TEXT else text[: _BRANCH_TEXT - 3] + "..."


def _summary(head: str, branches: Sequence[Check], instance: Any, path: str, ctx: _Ctx) -> str:
    parts = []
    for index, branch in enumerate(branches):
        if index == _BRANCH_LIMIT:
            parts.append("and %d more" % (len(branches) - index))
            break
        parts.append("%d: %s" % (index, _first_reason(branch, instance, path, ctx)))
    return "%s (%s)" % (head, "; ".join(parts))


def _suffix(key: object) -> str:
    """The path step for an object member (``.a``, ``["odd key"]``), long keys cut."""
    text = key if isinstance(key, str) else repr(key)
    if len(text) > _KEY_LIMIT:
        return "[%s...]" % json.dumps(text[:_KEY_LIMIT], ensure_ascii=True)
    return json_path("", text)


# --------------------------------------------------------------------------
# Type tests (Core 4.2.1; bool before int, everywhere).


def _is_null(value: object) -> bool:
    return value is None


def _is_boolean(value: object) -> bool:
    return isinstance(value, bool)


def _is_string(value: object) -> bool:
    return isinstance(value, str)


def _is_array(value: object) -> bool:
    return isinstance(value, list)


def _is_object(value: object) -> bool:
    return isinstance(value, dict)


_TYPE_TESTS: Dict[str, Callable[[object], bool]] = {
    "null": _is_null,
    "boolean": _is_boolean,
    "object": _is_object,
    "array": _is_array,
    "number": is_number,
    "string": _is_string,
    "integer": is_integer,
}


# --------------------------------------------------------------------------
# Pass 2: compile each place into a closure.


class _Compiler:
    def __init__(self, document: Document, assert_formats: bool) -> None:
        self.document = document
        self.assert_formats = assert_formats
        self.compiled: Dict[Pointer, Check] = {}
        self.cells: Dict[Pointer, List[Check]] = {}  # late-bound targets of $ref
        self.pending: List[Pointer] = []  # $ref targets still to compile (a worklist, not recursion)

    def node(self, pointer: Pointer) -> Check:
        if pointer not in self.compiled:
            self.compiled[pointer] = _reject  # placeholder; $ref goes through cells
            self.compiled[pointer] = self._build(self.document.places[pointer])
            if pointer in self.cells:
                self.cells[pointer][0] = self.compiled[pointer]
        return self.compiled[pointer]

    def _build(self, place: Place) -> Check:
        schema = place.schema
        if schema is True:
            return _accept
        if schema is False:
            return _reject
        assert isinstance(schema, dict)
        tokens = place.pointer
        checks: List[Check] = []
        for make in (
            self._type,
            self._enum,
            self._const,
            self._numbers,
            self._strings,
            self._arrays,
            self._objects,
            self._ref,
            self._all_of,
            self._any_of,
            self._one_of,
            self._not,
            self._conditional,
            self._dependent_schemas,
        ):
            check = make(schema, tokens)
            if isinstance(check, list):
                checks.extend(check)
            elif check is not None:
                checks.append(check)
        unevaluated = [
            c
            for c in (self._unevaluated_items(schema, tokens), self._unevaluated_properties(schema, tokens))
            if c is not None
        ]
        inner = _all(checks)
        if not unevaluated:
            return _fast_leaf(schema, inner, self._asserts_formats(tokens)) or _fast_object(schema, inner) or inner
        return _with_unevaluated(inner, unevaluated)

    def _asserts_formats(self, tokens: Pointer) -> bool:
        """Whether ``format`` asserts here: never in a bundled meta-schema (format-annotation, Validation 7.2.1)."""
        return self.assert_formats and not self.document.places[tokens].scope

    # -- Validation 6.1 -----------------------------------------------------

    def _type(self, schema: Mapping[str, Any], tokens: Pointer) -> Optional[Check]:
        if "type" not in schema:
            return None
        names = [schema["type"]] if isinstance(schema["type"], str) else list(schema["type"])
        expected = " or ".join(names)
        if len(names) == 1:
            return _single_type(names[0])
        tests = [_TYPE_TESTS[name] for name in names]

        def check_types(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            for test in tests:
                if test(v):
                    return True
            if ctx.errors is not None:
                ctx.add(path, "expected type %s, got %s" % (expected, type_name(v)))
            return False

        return check_types

    def _enum(self, schema: Mapping[str, Any], tokens: Pointer) -> Optional[Check]:
        if "enum" not in schema:
            return None
        values = schema["enum"]
        scalars = frozenset(scalar_key(x) for x in values if not isinstance(x, (list, dict)))
        containers = [x for x in values if isinstance(x, (list, dict))]
        shown = show(values)

        def check_enum(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if isinstance(v, (list, dict)):
                if any(json_equal(v, c) for c in containers):
                    return True
            elif (v is None or isinstance(v, (bool, int, float, str))) and scalar_key(v) in scalars:
                return True
            if ctx.errors is not None:
                ctx.add(path, "%s is not one of %s" % (show(v), shown))
            return False

        return check_enum

    def _const(self, schema: Mapping[str, Any], tokens: Pointer) -> Optional[Check]:
        if "const" not in schema:
            return None
        const = schema["const"]
        shown = show(const)

        def check_const(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if json_equal(v, const):
                return True
            if ctx.errors is not None:
                ctx.add(path, "expected const %s, got %s" % (shown, show(v)))
            return False

        return check_const

    # -- Validation 6.2 -----------------------------------------------------

    def _numbers(self, schema: Mapping[str, Any], tokens: Pointer) -> Optional[Check]:
        bounds = [
            (key, broken, words, schema[key], show(schema[key]))
            for key, broken, words in (
                ("minimum", operator.lt, "is less than"),
                ("maximum", operator.gt, "is greater than"),
                ("exclusiveMinimum", operator.le, "is not greater than"),
                ("exclusiveMaximum", operator.ge, "is not less than"),
            )
            if key in schema
        ]
        divisor = schema.get("multipleOf")
        if not bounds and divisor is None:
            return None
        shown_divisor = show(divisor)

        def check_number(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return True
            ok = True
            if divisor is not None and not is_multiple(v, divisor):
                if ctx.errors is None:
                    return False
                ctx.add(path, "%s is not a multiple of %s" % (show(v), shown_divisor))
                ok = False
            for key, broken, words, limit, shown in bounds:
                if broken(v, limit):
                    if ctx.errors is None:
                        return False
                    ctx.add(path, "%s %s %s %s" % (show(v), words, key, shown))
                    if ctx.stop:
                        return False
                    ok = False
            return ok

        return check_number

    # -- Validation 6.3 and 7 -----------------------------------------------

    def _strings(self, schema: Mapping[str, Any], tokens: Pointer) -> Optional[Check]:
        low, high = schema.get("minLength"), schema.get("maxLength")
        pattern = schema.get("pattern")
        regex = None if pattern is None else ecma_regex(pattern)
        shown_pattern = show(pattern)
        fmt = schema.get("format") if self._asserts_formats(tokens) else None
        fmt_check = None if fmt is None else FORMAT_CHECKS[fmt]
        if low is None and high is None and regex is None and fmt_check is None:
            return None

        def check_string(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if not isinstance(v, str):
                return True
            ok = True
            length = len(v)  # code points
            if low is not None and length < low:
                if ctx.errors is None:
                    return False
                ctx.add(path, "string of length %d is shorter than minLength %s" % (length, show(low)))
                ok = False
            if high is not None and length > high:
                if ctx.errors is None:
                    return False
                ctx.add(path, "string of length %d is longer than maxLength %s" % (length, show(high)))
                ok = False
            if regex is not None and regex.search(v) is None:
                if ctx.errors is None:
                    return False
                ctx.add(path, "%s does not match pattern %s" % (show(v), shown_pattern))
                ok = False
            if fmt_check is not None and not fmt_check(v):
                if ctx.errors is None:
                    return False
                ctx.add(path, "%s is not a valid %s" % (show(v), fmt))
                ok = False
            return ok

        return check_string

    # -- Validation 6.4, Core 10.3.1 ----------------------------------------

    def _arrays(self, schema: Mapping[str, Any], tokens: Pointer) -> List[Check]:
        checks: List[Check] = []
        low, high = schema.get("minItems"), schema.get("maxItems")
        unique = schema.get("uniqueItems") is True
        if low is not None or high is not None or unique:
            checks.append(_array_counts(low, high, unique))
        prefix = [self.node(tokens + ("prefixItems", str(i))) for i in range(len(schema.get("prefixItems", ())))]
        items_schema = schema.get("items")
        items = None if items_schema is None else self.node(tokens + ("items",))
        if prefix:
            checks.append(_array_prefix(prefix, annotate=items is None))
        if items is not None:
            checks.append(_array_rest(items, items_schema is False, len(prefix)))
        return checks

    # -- Validation 6.5, Core 10.3.2 ----------------------------------------

    def _objects(self, schema: Mapping[str, Any], tokens: Pointer) -> List[Check]:
        checks: List[Check] = []
        required = list(schema.get("required", ()))
        dependent = [(name, list(names)) for name, names in schema.get("dependentRequired", {}).items()]
        low, high = schema.get("minProperties"), schema.get("maxProperties")
        if required or dependent or low is not None or high is not None:
            checks.append(_object_counts(required, dependent, low, high))
        if "propertyNames" in schema:
            checks.append(_property_names(self.node(tokens + ("propertyNames",))))
        members = self._members(schema, tokens)
        if members is not None:
            checks.append(members)
        return checks

    def _members(self, schema: Mapping[str, Any], tokens: Pointer) -> Optional[Check]:
        properties = [
            (name, _suffix(name), self.node(tokens + ("properties", name))) for name in schema.get("properties", {})
        ]
        patterns = [
            (ecma_regex(text), self.node(tokens + ("patternProperties", text)))
            for text in schema.get("patternProperties", {})
        ]
        extra_schema = schema.get("additionalProperties")
        if not properties and not patterns and extra_schema is None:
            return None
        extra = None if extra_schema is None else self.node(tokens + ("additionalProperties",))
        names = frozenset(name for name, _, _ in properties)
        others: Optional[Check] = None
        if patterns or (extra is not None and extra_schema is not True):
            others = _other_members(
                names, patterns, None if extra is None else _additional(extra, extra_schema is False)
            )
        elif extra is not None:
            others = _all_evaluated  # additionalProperties: true

        def check_members(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if not isinstance(v, dict):
                return True
            ok = True
            for name, suffix, child in properties:
                if name in v:
                    if seen is not None:
                        seen.add(name)
                    if not child(v[name], path + suffix, ctx, None):
                        if ctx.stop:
                            return False
                        ok = False
            if others is not None and not others(v, path, ctx, seen):
                return False
            return ok

        return check_members

    # -- Core 8.2.3.1 $ref --------------------------------------------------

    def _ref(self, schema: Mapping[str, Any], tokens: Pointer) -> List[Check]:
        """``$ref``, then ``$dynamicRef`` (resolved in pass 1, see :mod:`.document`)."""
        targets = (self.document.targets.get(tokens), self.document.dynamic_targets.get(tokens))
        return [self._follow(target) for target in targets if target is not None]

    def _follow(self, target: Pointer) -> Check:
        cell = self.cells.setdefault(target, [_reject])
        if target in self.compiled:  # done, or in progress (node() fills the cell when done)
            cell[0] = self.compiled[target]
        else:
            self.pending.append(target)

        def check_ref(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if ctx.depth >= MAX_REF_DEPTH:
                if ctx.errors is not None:
                    ctx.add(path, "more than %d nested $ref: too deep to validate" % MAX_REF_DEPTH)
                return False
            ctx.depth += 1
            ok = cell[0](v, path, ctx, seen)
            ctx.depth -= 1
            return ok

        return check_ref

    # -- Core 10.2 ----------------------------------------------------------

    def _branches(self, schema: Mapping[str, Any], tokens: Pointer, key: str) -> List[Check]:
        return [self.node(tokens + (key, str(i))) for i in range(len(schema.get(key, ())))]

    def _all_of(self, schema: Mapping[str, Any], tokens: Pointer) -> List[Check]:
        return self._branches(schema, tokens, "allOf")

    def _any_of(self, schema: Mapping[str, Any], tokens: Pointer) -> Optional[Check]:
        branches = self._branches(schema, tokens, "anyOf")
        if not branches:
            return None

        def check_any_of(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if seen is None:
                for branch in branches:
                    if _quiet(branch, v, path, ctx, None):
                        return True
            else:  # Core 11: every passing branch's annotations count
                passed = False
                for branch in branches:
                    local: Set[Any] = set()
                    if _quiet(branch, v, path, ctx, local):
                        passed = True
                        seen.update(local)
                if passed:
                    return True
            if ctx.errors is not None:
                ctx.add(path, _summary("does not match any schema in anyOf", branches, v, path, ctx))
            return False

        return check_any_of

    def _one_of(self, schema: Mapping[str, Any], tokens: Pointer) -> Optional[Check]:
        branches = self._branches(schema, tokens, "oneOf")
        if not branches:
            return None

        def check_one_of(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            passed: List[int] = []
            kept: Set[Any] = set()
            for index, branch in enumerate(branches):
                local: Optional[Set[Any]] = None if seen is None else set()
                if _quiet(branch, v, path, ctx, local):
                    passed.append(index)
                    if local is not None:
                        kept = local
                    if len(passed) > 1 and ctx.errors is None:
                        return False
            if len(passed) == 1:
                if seen is not None:
                    seen.update(kept)
                return True
            if ctx.errors is not None:
                if passed:
                    shown = ", ".join(str(i) for i in passed[:_BRANCH_LIMIT])
                    ctx.add(path, "matches %d schemas in oneOf (%s), expected exactly one" % (len(passed), shown))
                else:
                    ctx.add(path, _summary("does not match any schema in oneOf", branches, v, path, ctx))
            return False

        return check_one_of

    def _not(self, schema: Mapping[str, Any], tokens: Pointer) -> Optional[Check]:
        if "not" not in schema:
            return None
        negated = self.node(tokens + ("not",))

        def check_not(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if not _quiet(negated, v, path, ctx, None):
                return True
            if ctx.errors is not None:
                ctx.add(path, "expected a value that does not match the schema in not, got %s" % show(v))
            return False

        return check_not

    def _conditional(self, schema: Mapping[str, Any], tokens: Pointer) -> Optional[Check]:
        if "if" not in schema:
            return None  # Core 10.2.2.2-3: then/else without if do nothing
        condition = self.node(tokens + ("if",))
        then = self.node(tokens + ("then",)) if "then" in schema else None
        otherwise = self.node(tokens + ("else",)) if "else" in schema else None

        def check_if(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            local: Optional[Set[Any]] = None if seen is None else set()
            if _quiet(condition, v, path, ctx, local):
                if seen is not None and local is not None:
                    seen.update(local)
                return then is None or then(v, path, ctx, seen)
            return otherwise is None or otherwise(v, path, ctx, seen)

        return check_if

    def _dependent_schemas(self, schema: Mapping[str, Any], tokens: Pointer) -> Optional[Check]:
        pairs = [(name, self.node(tokens + ("dependentSchemas", name))) for name in schema.get("dependentSchemas", {})]
        if not pairs:
            return None

        def check_dependent(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if not isinstance(v, dict):
                return True
            ok = True
            for name, child in pairs:
                if name in v and not child(v, path, ctx, seen):
                    if ctx.stop:
                        return False
                    ok = False
            return ok

        return check_dependent

    # -- Core 11 ------------------------------------------------------------

    def _unevaluated_items(self, schema: Mapping[str, Any], tokens: Pointer) -> Optional[Check]:
        if "unevaluatedItems" not in schema:
            return None
        rest_schema = schema["unevaluatedItems"]
        rest = self.node(tokens + ("unevaluatedItems",))

        def check_unevaluated_items(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if not isinstance(v, list) or seen is None:
                return True
            start = max((x for x in seen if isinstance(x, int)), default=0)
            seen.add(len(v))
            if start >= len(v):
                return True
            if rest_schema is False:
                if ctx.errors is not None:
                    ctx.add(path, "unevaluated item at index %d is not allowed (unevaluatedItems is false)" % start)
                return False
            ok = True
            for index in range(start, len(v)):
                if not rest(v[index], "%s[%d]" % (path, index), ctx, None):
                    if ctx.stop:
                        return False
                    ok = False
            return ok

        return check_unevaluated_items

    def _unevaluated_properties(self, schema: Mapping[str, Any], tokens: Pointer) -> Optional[Check]:
        if "unevaluatedProperties" not in schema:
            return None
        rest_schema = schema["unevaluatedProperties"]
        rest = self.node(tokens + ("unevaluatedProperties",))

        def check_unevaluated_properties(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if not isinstance(v, dict) or seen is None:
                return True
            ok = True
            for key in v:
                if key in seen:
                    continue
                seen.add(key)
                if rest_schema is False:
                    if ctx.errors is None:
                        return False
                    ctx.add(
                        path,
                        "unevaluated property %s is not allowed (unevaluatedProperties is false)" % short_repr(key),
                    )
                    ok = False
                elif not rest(v[key], path + _suffix(key), ctx, None):
                    ok = False
                if not ok and ctx.stop:
                    return False
            return ok

        return check_unevaluated_properties


_CLASSES: Dict[str, Tuple[Union[type, Tuple[type, ...]], bool]] = {
    "null": (type(None), False),
    "boolean": (bool, False),
    "object": (dict, False),
    "array": (list, False),
    "string": (str, False),
    "number": ((int, float), True),  # True: a bool is not one, although it is an int
}


def _single_type(name: str) -> Check:
    """``type`` with one name: the hot path of every tool call, so one isinstance, no call."""
    reason = "expected type %s, got %%s" % name

    if name == "integer":

        def check_integer(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if isinstance(v, int):
                if not isinstance(v, bool):
                    return True
            elif isinstance(v, float) and v.is_integer():
                return True
            if ctx.errors is not None:
                ctx.add(path, reason % type_name(v))
            return False

        return check_integer
    cls, not_bool = _CLASSES[name]
    if not_bool:

        def check_number(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if isinstance(v, cls) and not isinstance(v, bool):
                return True
            if ctx.errors is not None:
                ctx.add(path, reason % type_name(v))
            return False

        return check_number

    def check_class(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
        if isinstance(v, cls):
            return True
        if ctx.errors is not None:
            ctx.add(path, reason % type_name(v))
        return False

    return check_class


_LEAF_ANNOTATIONS = ANNOTATIONS - {"$schema"}
_STRING_LEAF = frozenset(("type", "minLength", "maxLength", "pattern", "enum", "format")) | _LEAF_ANNOTATIONS
_NUMBER_LEAF = frozenset(("type",) + NUMBER_KEYWORDS) | _LEAF_ANNOTATIONS


def _fast_leaf(schema: Mapping[str, Any], slow: Check, assert_formats: bool) -> Optional[Check]:
    """One closure for the common leaf schemas of tool arguments, or ``None``.

    A string or number schema with only bounds (and, for strings, a pattern
    or an enum) is answered by inline tests when the value is valid; anything
    else goes to ``slow``, the general closures, which decide and report.  So
    the verdicts and messages are exactly those of ``slow``.
    """
    kind = schema.get("type")
    keys = set(schema)
    if kind == "string" and keys <= _STRING_LEAF and not ("format" in schema and assert_formats):
        low = schema.get("minLength", 0)
        high = schema.get("maxLength", math.inf)
        regex = ecma_regex(schema["pattern"]) if "pattern" in schema else None
        members = frozenset(x for x in schema["enum"] if isinstance(x, str)) if "enum" in schema else None

        def check_string_leaf(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if isinstance(v, str) and low <= len(v) <= high:
                if (regex is None or regex.search(v) is not None) and (members is None or v in members):
                    return True
            return slow(v, path, ctx, seen)

        return check_string_leaf
    if kind in ("integer", "number") and keys <= _NUMBER_LEAF:
        low, high = schema.get("minimum", -math.inf), schema.get("maximum", math.inf)
        above, below = schema.get("exclusiveMinimum", -math.inf), schema.get("exclusiveMaximum", math.inf)
        integral = kind == "integer"

        def check_number_leaf(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if (isinstance(v, int) and not isinstance(v, bool)) or (
                isinstance(v, float) and (not integral or v.is_integer())
            ):
                if low <= v <= high and above < v < below:
                    return True
            return slow(v, path, ctx, seen)

        return check_number_leaf
    return None


# ("$schema" names draft 2020-12, the one dialect compile_schema takes: no verdict changes with it)
_OBJECT_KEYS = frozenset(("type", "properties", "required", "additionalProperties", "$schema")) | _LEAF_ANNOTATIONS
_BARE_KEYS = frozenset(("type",)) | _LEAF_ANNOTATIONS
#: The exact Python types a bare ``{"type": T}`` accepts for sure (a subclass, an integral float for
#: "integer": the general closures decide).
_SURE_TYPES: Dict[str, FrozenSet[type]] = {
    "string": frozenset((str,)),
    "integer": frozenset((int,)),
    "number": frozenset((int, float)),
    "boolean": frozenset((bool,)),
    "null": frozenset((type(None),)),
}


def _sure_types(properties: object) -> Optional[Dict[str, FrozenSet[type]]]:
    """Each property's :data:`_SURE_TYPES` when each is a bare ``{"type": T}`` (annotations aside), else ``None``."""
    if type(properties) is not dict:
        return None
    sure: Dict[str, FrozenSet[type]] = {}
    for name, child in properties.items():
        kind = child.get("type") if type(child) is dict and _BARE_KEYS.issuperset(child) else None
        if type(kind) is not str or kind not in _SURE_TYPES:
            return None
        sure[name] = _SURE_TYPES[kind]
    return sure


def _fast_object(schema: Mapping[str, Any], slow: Check) -> Optional[Check]:
    """One closure for the common tool-arguments schema, or ``None``: an object whose
    ``properties`` are each a bare ``{"type": T}`` (annotations aside), with ``required``
    and a boolean ``additionalProperties``.

    As :func:`_fast_leaf`: a plain ``dict`` whose members are all of a sure type is
    answered at once, valid; anything else goes to ``slow``, the general closures,
    which decide and report.  So the verdicts and messages are exactly those of ``slow``.
    """
    required, extra = schema.get("required", []), schema.get("additionalProperties", True)
    if schema.get("type") != "object" or not _OBJECT_KEYS.issuperset(schema) or type(extra) is not bool:
        return None
    sure = _sure_types(schema.get("properties", {}))
    if sure is None or type(required) is not list:
        return None
    needed = tuple(required)
    closed = extra is False

    def check_flat_object(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
        if type(v) is dict and seen is None and _surely_valid(v, sure, closed, needed):
            return True
        return slow(v, path, ctx, seen)

    return check_flat_object


def _surely_valid(v: Dict[Any, Any], sure: Dict[str, FrozenSet[type]], closed: bool, needed: Tuple[str, ...]) -> bool:
    """Whether each member of ``v`` is of a sure type for its property (or allowed, unnamed, when not
    ``closed``) and each ``needed`` one is there: :func:`_fast_object`'s test."""
    for key, item in v.items():
        kinds = sure.get(key)
        if kinds is None:
            if closed or type(key) is not str:
                return False
        elif type(item) not in kinds:
            return False
    for name in needed:
        if name not in v:
            return False
    return True


def _all(checks: Sequence[Check]) -> Check:
    """Every check must pass; in collecting mode each one still reports."""
    if not checks:
        return _accept
    if len(checks) == 1:
        return checks[0]
    frozen = tuple(checks)

    def check_all(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
        ok = True
        for check in frozen:
            if not check(v, path, ctx, seen):
                if ctx.stop:
                    return False
                ok = False
        return ok

    return check_all


def _with_unevaluated(inner: Check, unevaluated: Sequence[Check]) -> Check:
    """Core 11: run the schema's other keywords, then the ``unevaluated*`` ones on what is left."""

    def check_scope(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
        local: Set[Any] = set()
        ok = inner(v, path, ctx, local)
        if not ok and ctx.stop:
            return False
        for check in unevaluated:
            if not check(v, path, ctx, local):
                if ctx.stop:
                    return False
                ok = False
        if seen is not None:
            seen.update(local)
        return ok

    return check_scope


def _array_counts(low: Optional[int], high: Optional[int], unique: bool) -> Check:
    """Validation 6.4.1-6.4.3: ``maxItems``, ``minItems``, ``uniqueItems`` in one pass."""

    def check_counts(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
        if not isinstance(v, list):
            return True
        ok = True
        size = len(v)
        if low is not None and size < low:
            if ctx.errors is None:
                return False
            ctx.add(path, "array of length %d is shorter than minItems %s" % (size, show(low)))
            ok = False
        if high is not None and size > high:
            if ctx.errors is None:
                return False
            ctx.add(path, "array of length %d is longer than maxItems %s" % (size, show(high)))
            ok = False
        equal = _first_duplicate(v) if unique and size > 1 else None
        if equal is not None:
            if ctx.errors is None:
                return False
            ctx.add(path, "expected unique items, but [%d] and [%d] are equal" % equal)
            ok = False
        return ok

    return check_counts


def _first_duplicate(items: List[Any]) -> Optional[Tuple[int, int]]:
    """The indexes of the first item equal to an earlier one (Core 4.2.2 equality), or ``None``."""
    first: Dict[object, int] = {}
    for index, item in enumerate(items):
        key = freeze(item)
        if key in first:
            return first[key], index
        first[key] = index
    return None


def _array_prefix(prefix: List[Check], annotate: bool) -> Check:
    """Core 10.3.1.1 ``prefixItems``: the first items, each against its own schema.

    With ``annotate`` (no ``items`` follows) the number of items evaluated goes
    into ``seen`` for ``unevaluatedItems`` (Core 11.2); else ``items`` records its own.
    """
    n_prefix = len(prefix)

    def check_prefix(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
        if not isinstance(v, list):
            return True
        ok = True
        for index in range(min(n_prefix, len(v))):
            if not prefix[index](v[index], "%s[%d]" % (path, index), ctx, None):
                if ctx.stop:
                    return False
                ok = False
        if annotate and seen is not None:
            seen.add(min(n_prefix, len(v)))
        return ok

    return check_prefix


def _array_rest(items: Check, items_false: bool, start: int) -> Check:
    """Core 10.3.1.2 ``items``: every item after the first ``start`` (the ``prefixItems``).

    ``items: false`` is one error for the whole array; every item counts as
    evaluated in ``seen`` (Core 11.2).
    """

    def check_rest(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
        if not isinstance(v, list):
            return True
        ok = True
        size = len(v)
        if size > start:
            if items_false:
                if ctx.errors is None:
                    return False
                ctx.add(path, "expected at most %d items (items is false), got %d" % (start, size))
                ok = False
            elif not _each_item(items, v, start, path, ctx):
                if ctx.stop:
                    return False
                ok = False
        if seen is not None:
            seen.add(size)
        return ok

    return check_rest


def _each_item(check: Check, items: List[Any], start: int, path: str, ctx: _Ctx) -> bool:
    """``check`` on every item from ``start`` on; ``False`` at once when the context stops."""
    ok = True
    for index in range(start, len(items)):
        if not check(items[index], "%s[%d]" % (path, index), ctx, None):
            if ctx.stop:
                return False
            ok = False
    return ok


def _all_evaluated(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
    """``additionalProperties: true`` and no patterns: every member counts as evaluated (Core 11.3)."""
    if seen is not None:
        seen.update(v)
    return True


#: One member against ``additionalProperties``: ``(key, value, path, ctx, seen) -> valid``.
_Additional = Callable[[Any, Any, str, _Ctx, Optional[Set[Any]]], bool]


def _additional(extra: Check, refused: bool) -> _Additional:
    """Core 10.3.2.3 for one member: ``extra`` on its value, or a refusal when the schema is ``false``.

    Either way the member counts as evaluated in ``seen`` (Core 11.3).
    """
    if refused:

        def refuse(key: Any, value: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
            if seen is not None:
                seen.add(key)
            if ctx.errors is not None:
                ctx.add(path, "unexpected property %s" % short_repr(key))
            return False

        return refuse

    def check_additional(key: Any, value: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
        if seen is not None:
            seen.add(key)
        return extra(value, path + _suffix(key), ctx, None)

    return check_additional


def _other_members(
    names: FrozenSet[str], patterns: List[Tuple[re.Pattern[str], Check]], additional: Optional[_Additional]
) -> Check:
    """Core 10.3.2.2-3: each member, the ``patternProperties`` its key matches, else ``additionalProperties``.

    Members are visited in the instance's order, each one's errors together;
    ``names`` (the ``properties``) are left to :meth:`_Compiler._members`.
    """

    def check_others(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
        ok = True
        for key in v:
            matched = key in names
            if patterns:
                verdict = _pattern_members(patterns, key, v[key], path, ctx, seen)
                if verdict is not None:
                    matched = True
                    if not verdict:
                        if ctx.stop:
                            return False
                        ok = False
            if matched or additional is None:
                continue
            if not additional(key, v[key], path, ctx, seen):
                if ctx.stop:
                    return False
                ok = False
        return ok

    return check_others


def _pattern_members(
    patterns: List[Tuple[re.Pattern[str], Check]], key: Any, value: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]
) -> Optional[bool]:
    """Core 10.3.2.2 for one member: ``None`` when no pattern matches its key, else whether all that match passed."""
    verdict: Optional[bool] = None
    for regex, child in patterns:
        if isinstance(key, str) and regex.search(key) is not None:
            verdict = verdict is not False
            if seen is not None:
                seen.add(key)
            if not child(value, path + _suffix(key), ctx, None):
                if ctx.stop:
                    return False
                verdict = False
    return verdict


def _object_counts(
    required: List[str], dependent: List[Tuple[str, List[str]]], low: Optional[int], high: Optional[int]
) -> Check:
    """``required``, ``dependentRequired``, ``minProperties``, ``maxProperties`` in one pass."""

    def check_counts(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
        if not isinstance(v, dict):
            return True
        ok = True
        for name in required:
            if name not in v:
                if ctx.errors is None:
                    return False
                ctx.add(path, "missing required property %s" % short_repr(name))
                if ctx.stop:
                    return False
                ok = False
        for owner, names in dependent:
            if owner in v:
                for name in names:
                    if name not in v:
                        if ctx.errors is None:
                            return False
                        ctx.add(
                            path,
                            "missing property %s, required when %s is present" % (short_repr(name), short_repr(owner)),
                        )
                        if ctx.stop:
                            return False
                        ok = False
        size = len(v)
        if low is not None and size < low:
            if ctx.errors is None:
                return False
            ctx.add(path, "object with %d properties has fewer than minProperties %s" % (size, show(low)))
            ok = False
        if high is not None and size > high:
            if ctx.errors is None:
                return False
            ctx.add(path, "object with %d properties has more than maxProperties %s" % (size, show(high)))
            ok = False
        return ok

    return check_counts


def _property_names(names_check: Check) -> Check:
    """Core 10.3.2.4: every property name, as a string instance, fits the schema."""

    def check_property_names(v: Any, path: str, ctx: _Ctx, seen: Optional[Set[Any]]) -> bool:
        if not isinstance(v, dict):
            return True
        ok = True
        for key in v:
            if not _quiet(names_check, key, path, ctx, None):
                if ctx.errors is None:
                    return False
                ctx.add(
                    path,
                    "property name %s is invalid: %s" % (short_repr(key), _first_reason(names_check, key, path, ctx)),
                )
                if ctx.stop:
                    return False
                ok = False
        return ok

    return check_property_names


# --------------------------------------------------------------------------
# The public surface.


class Validator:
    """A schema compiled once by :func:`compile_schema`; validation interprets nothing.

    ``errors`` collects up to ``limit`` errors in a fixed keyword order (type,
    enum, const, number, string, array and object keywords, then ``$ref``,
    ``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``, ``dependentSchemas``,
    ``unevaluated*``); ``first_error`` is the first of them, found without
    building the others; ``is_valid`` only answers yes or no.  None of them
    raises for any instance.
    """

    __slots__ = ("_schema", "_root", "_shares_quiet", "assert_formats")

    def __init__(self, schema: Schema, root: Check, has_refs: bool, assert_formats: bool) -> None:
        self._schema = schema
        self._root = root
        self._shares_quiet = not has_refs
        self.assert_formats = assert_formats

    @property
    def schema(self) -> Schema:
        """The schema this validator was compiled from (the caller's object, not a copy)."""
        return self._schema

    def errors(self, instance: object, path: str = "$", limit: int = MAX_ERRORS) -> List[ValidationError]:
        """Every violation (at most ``limit``), each naming its path from ``path``; ``[]`` if valid."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise BadArgumentError("limit", "must be a positive int, got %r" % (limit,))
        found: List[ValidationError] = []
        ctx = _Ctx(found, limit)
        try:
            self._root(instance, path, ctx, None)
        except RecursionError:  # a schema whose non-recursive depth exceeds Python's stack
            found.append(ValidationError(path, "too deeply nested to validate"))
        return found

    def first_error(self, instance: object, path: str = "$") -> Optional[ValidationError]:
        """The first violation, or ``None`` when ``instance`` is valid."""
        if self.is_valid(instance):
            return None
        found = self.errors(instance, path, limit=1)
        return found[0] if found else ValidationError(path, "is not valid")

    def is_valid(self, instance: object) -> bool:
        """Whether ``instance`` satisfies the schema."""
        ctx = _QUIET if self._shares_quiet else _Ctx(None, 1)
        try:
            return self._root(instance, "$", ctx, None)
        except RecursionError:
            return False


def compile_schema(schema: object, tool: Optional[str] = None, *, assert_formats: bool = False) -> Validator:
    """Check ``schema`` and compile it into a :class:`Validator`.

    Raises :class:`~agentloop.errors.SchemaError` for the first problem found
    (keyword values in the schema's own key order, depth first; then
    references; then ``$ref`` cycles), naming ``tool`` when given.
    ``assert_formats=True`` makes ``format`` an assertion (Validation 7.2.2).
    """
    document = Document(tool, assert_formats)
    document.scan(schema, "$", (), DEFAULT_BASE, 0)
    document.link()
    compiler = _Compiler(document, assert_formats)
    root = compiler.node(())
    while compiler.pending:
        compiler.node(compiler.pending.pop())
    return Validator(schema, root, bool(document.refs or document.dynamic_refs), assert_formats)  # type: ignore[arg-type]


def check_schema(schema: object, tool: Optional[str] = None, *, assert_formats: bool = False) -> None:
    """Refuse ``schema`` unless every keyword in it is enforceable here (see :func:`compile_schema`)."""
    compile_schema(schema, tool, assert_formats=assert_formats)


def validate(
    schema: object, instance: object, path: str = "$", *, assert_formats: bool = False, limit: int = MAX_ERRORS
) -> List[ValidationError]:
    """The errors of ``instance`` against ``schema`` (``[]`` when valid).

    Raises :class:`~agentloop.errors.SchemaError` when the schema is refused.
    For repeated use, compile once with :func:`compile_schema`.
    """
    return compile_schema(schema, assert_formats=assert_formats).errors(instance, path, limit)


# Kept importable under its old name for callers of the 0.1 module.
_json_equal = json_equal
