"""Pass 1 of compiling a schema: read the document, check it, resolve its references.

:class:`Document` walks a JSON Schema (draft 2020-12) document depth first,
in the schema's own key order, and for every subschema ("place"):

1. refuses what is not a schema (Core 4.3: an object or a boolean), keys that
   are not strings, nesting deeper than :data:`~agentloop.canonical.MAX_DEPTH`,
   and every keyword outside :data:`KNOWN_KEYWORDS` and :data:`ANNOTATIONS`;
2. checks each keyword's value has the shape the specification gives it
   (Validation 6.x, 7; Core 8.x, 10.x, 11.x), compiling every ``pattern`` and
   ``patternProperties`` key (:mod:`agentloop.schema.patterns`) so a pattern that
   cannot be run is refused now, not met later;
3. records the place under its JSON Pointer, the base URI in effect
   (Core 8.2.1 ``$id``, resolved with RFC 3986) and any ``$anchor``
   (Core 8.2.2).

:meth:`Document.link` then resolves every ``$ref`` (Core 8.2.3.1) against
those records only, and refuses a cycle of references and in-place
applicators that never moves into the instance (Core 9.4.1).  A reference
that leaves the document is refused as remote, except one to a draft 2020-12
meta-schema (:mod:`.bundled`): that document is read from the package and
scanned like the user's, in a *scope* of its own (see :class:`Place`).  Every
refusal is a :class:`~agentloop.errors.SchemaError` naming the place
(``$.properties.a``).

The meta-schemas use three keywords agentloop reads nowhere else
(:data:`META_KEYWORDS`; in a user's schema they are unsupported keywords):

* Core 8.1.2 ``$vocabulary`` -- only its shape is checked (an object of
  draft 2020-12 vocabulary URIs to booleans): it says what a schema whose
  ``$schema`` names this document must understand, and the only ``$schema``
  accepted is draft 2020-12 itself;
* Core 8.2.2 ``$dynamicAnchor`` -- also a plain-name fragment, like ``$anchor``;
* Core 8.2.3.2 ``$dynamicRef`` -- resolved statically, which is exact here:
  the user's schemas cannot hold a ``$dynamicAnchor``, so the outermost
  resource of the dynamic scope that has one is the first bundled resource the
  evaluation entered, the resource the user's ``$ref`` named (the *scope*).
  Only the form the meta-schemas use is accepted: ``"#name"`` where both the
  referring resource and the scope's resource declare ``$dynamicAnchor: name``.
  Anything else is refused.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Tuple, Union

from ..canonical import MAX_DEPTH, json_path
from ..errors import SchemaError
from . import bundled
from .formats import FORMAT_CHECKS
from .values import is_integer, is_number, show, type_name
from .patterns import UnsupportedPattern, compile_pattern
from .uri import parse_pointer, resolve, split_fragment

__all__ = [
    "KNOWN_KEYWORDS",
    "ANNOTATIONS",
    "META_KEYWORDS",
    "NUMBER_KEYWORDS",
    "DEFAULT_BASE",
    "Document",
    "Place",
    "Pointer",
    "Schema",
    "ecma_regex",
]

#: Keywords agentloop enforces (or, for ``$id``/``$anchor``/``$defs``, resolves).
KNOWN_KEYWORDS: FrozenSet[str] = frozenset(
    (
        "type",
        "enum",
        "const",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minItems",
        "maxItems",
        "uniqueItems",
        "prefixItems",
        "items",
        "unevaluatedItems",
        "required",
        "dependentRequired",
        "minProperties",
        "maxProperties",
        "properties",
        "patternProperties",
        "additionalProperties",
        "propertyNames",
        "unevaluatedProperties",
        "dependentSchemas",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "$ref",
        "$defs",
        "$id",
        "$anchor",
    )
)

#: Keywords accepted and ignored, their values checked where the specification
#: gives a type (Validation 9.1-9.5, Core 8.3; ``$schema`` must name draft 2020-12).
ANNOTATIONS: FrozenSet[str] = frozenset(
    ("title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples", "$comment", "$schema")
)

#: Keywords read only inside the bundled meta-schemas (see the module docstring).
META_KEYWORDS: FrozenSet[str] = frozenset(("$vocabulary", "$dynamicAnchor", "$dynamicRef"))

_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
DEFAULT_BASE = "agentloop:/schema"  # the base URI of a schema without $id (Core 9.1.1)
_TYPE_NAMES = ("null", "boolean", "object", "array", "number", "string", "integer")
NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_COUNT_KEYWORDS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_SUBSCHEMA = (
    "additionalProperties",
    "items",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
_IN_PLACE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas")
_ANCHOR = re.compile(r"[A-Za-z_][-A-Za-z0-9._]*\Z")
_SCHEMA_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")

Pointer = Tuple[str, ...]
Schema = Union[Mapping[str, Any], bool]


def _schema_path(parent: str, key: object) -> str:
    """A place inside a schema: ``$.properties.a``, ``$.$defs.b``, ``$.anyOf[1]``."""
    if isinstance(key, str) and _SCHEMA_KEY.match(key):
        return "%s.%s" % (parent, key)
    return json_path(parent, key)


@dataclass(frozen=True)
class Place:
    """One subschema of the document."""

    schema: Schema
    where: str  # for messages: "$.properties.a"
    base: str  # the base URI in effect here (RFC 3986, no fragment)
    pointer: Pointer  # JSON Pointer tokens from the document root
    # "" in the user's schema; in a bundled meta-schema, the URI of the bundled
    # resource the user's $ref entered (its pointers start (scope, $id), which
    # no user pointer can: a user schema's keys are keywords, never URIs).
    scope: str = ""


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
            return "a %s is not a JSON value" % type_name(item)
    return None


def _kind(value: object) -> str:
    """The Python type name, or ``[]`` for an empty list (for schema errors)."""
    return "[]" if isinstance(value, list) and not value else type_name(value)


def _is_count(value: object) -> bool:
    """A non-negative integer in the JSON sense (``2.0`` counts, ``true`` does not)."""
    return is_integer(value) and value >= 0  # type: ignore[operator]


def ecma_regex(text: str) -> "re.Pattern[str]":
    """Compile an ECMA-262 pattern or raise ValueError with the reason."""
    try:
        return compile_pattern(text)
    except re.error as exc:
        raise ValueError("is not a valid regular expression: %s" % exc.msg) from None
    except UnsupportedPattern as exc:
        raise ValueError("is not supported: %s" % exc) from None
    except (RecursionError, OverflowError) as exc:
        raise ValueError("is not supported: %s" % exc) from None


class Document:
    """Pass 1 over one schema document (see the module docstring)."""

    def __init__(self, tool: Optional[str], assert_formats: bool) -> None:
        self.tool = tool
        self.assert_formats = assert_formats
        self.places: Dict[Pointer, Place] = {}
        self.resources: Dict[Tuple[str, str], Pointer] = {}  # (scope, absolute URI without fragment) -> place
        self.anchors: Dict[Tuple[str, str], Pointer] = {}  # (scope, "uri#name") -> place
        self.dynamic_anchors: Dict[Tuple[str, str], Pointer] = {}  # the same, for $dynamicAnchor
        self.refs: List[Place] = []  # places holding a $ref, in document order
        self.dynamic_refs: List[Place] = []  # places holding a $dynamicRef (bundled scopes only)
        self.targets: Dict[Pointer, Pointer] = {}  # $ref holder -> target
        self.dynamic_targets: Dict[Pointer, Pointer] = {}  # $dynamicRef holder -> target

    def fail(self, where: str, reason: str) -> SchemaError:
        return SchemaError(where, reason, self.tool)

    def scan(self, schema: object, where: str, pointer: Pointer, base: str, depth: int, scope: str = "") -> None:
        if isinstance(schema, bool):
            self.places[pointer] = Place(schema, where, base, pointer, scope)
            return
        if not isinstance(schema, dict):
            raise self.fail(where, "a schema must be an object or a boolean, got %s" % type_name(schema))
        if depth >= MAX_DEPTH:
            raise self.fail(where, "schema nested deeper than %d levels" % MAX_DEPTH)
        for key in schema:
            if not isinstance(key, str):
                raise self.fail(where, "schema keys must be strings, got %s %r" % (type_name(key), key))
        if "$id" in schema:  # Core 8.2.1: $id sets the base of everything in this object
            base = self._identify(schema["$id"], where, base, pointer, scope)
        elif depth == 0:
            self.resources[(scope, base)] = pointer
        place = Place(schema, where, base, pointer, scope)
        self.places[pointer] = place
        for key, value in schema.items():
            self._keyword(place, key, value, depth)

    def _identify(self, value: object, where: str, base: str, pointer: Pointer, scope: str) -> str:
        if not isinstance(value, str):
            raise self.fail(where, "$id must be a string, got %s" % type_name(value))
        uri, fragment = split_fragment(resolve(base, value))
        if fragment:
            raise self.fail(where, "$id %s must not have a fragment" % show(value))
        if (scope, uri) in self.resources:
            raise self.fail(where, "$id %s is used twice in this schema" % show(value))
        self.resources[(scope, uri)] = pointer
        return uri

    def _keyword(self, place: Place, key: str, value: Any, depth: int) -> None:
        """Step 2 of the module docstring for one keyword: its check (:data:`_CHECKS`), which scans its subschemas."""
        if key not in KNOWN_KEYWORDS and key not in ANNOTATIONS and not (place.scope and key in META_KEYWORDS):
            raise self.fail(place.where, "unsupported keyword %r" % key)
        check = _CHECKS.get(key)
        if check is not None:
            check(_At(self, place, key, value, depth))

    # -- pass 1b: references ------------------------------------------------

    def link(self) -> None:
        """Resolve every ``$ref`` (Core 8.2.3.1) and ``$dynamicRef`` (8.2.3.2); refuse in-place cycles (9.4.1)."""
        index = 0
        while index < len(self.refs):  # reading a bundled meta-schema appends its own $refs
            place = self.refs[index]
            index += 1
            self.targets[place.pointer] = self._resolve(place, place.schema["$ref"])  # type: ignore[index]
        for place in self.dynamic_refs:
            self.dynamic_targets[place.pointer] = self._resolve_dynamic(place)
        self._refuse_cycles()

    def _resolve(self, place: Place, ref: str) -> Pointer:
        """The place a reference from ``place`` names, reading a bundled meta-schema if need be."""
        uri, fragment = split_fragment(resolve(place.base, ref))
        root = self.resources.get((place.scope, uri))
        if root is None:
            root = self._bundled(place, ref, uri)
        scope = self.places[root].scope  # the user's, or the bundled scope just entered
        if not fragment:
            return root
        if fragment.startswith("/") or "%" in fragment:
            tokens = parse_pointer(fragment)
            target = None if tokens is None else root + tokens
            if target is None or target not in self.places or self.places[target].scope != scope:
                raise self.fail(place.where, "$ref %s does not point at a schema" % show(ref))
            return target
        named = self.anchors.get((scope, "%s#%s" % (uri, fragment)))
        if named is None:
            raise self.fail(place.where, "$ref %s names no $anchor of this schema" % show(ref))
        return named

    def _bundled(self, place: Place, ref: str, uri: str) -> Pointer:
        """Scan the bundled meta-schema ``uri`` (once per scope), or refuse ``ref`` as remote."""
        scope = place.scope or uri  # a $ref from the user's schema opens a scope of its own
        if (scope, uri) in self.resources:
            return self.resources[(scope, uri)]
        try:
            document = bundled.load(uri)
        except (OSError, ValueError) as exc:
            raise self.fail(
                place.where, "$ref %s names a bundled meta-schema that cannot be read: %s" % (show(ref), exc)
            ) from None
        if document is None:
            raise self.fail(
                place.where,
                "$ref %s is a remote reference (%s is not part of this "
                "schema); only references within the schema are supported" % (show(ref), show(uri)),
            )
        self.scan(document, uri, (scope, uri), uri, 0, scope)
        if (scope, uri) not in self.resources:
            raise self.fail(place.where, "the bundled meta-schema %s does not declare $id %s" % (show(ref), show(uri)))
        return self.resources[(scope, uri)]

    def _resolve_dynamic(self, place: Place) -> Pointer:
        """Core 8.2.3.2, statically: ``"#name"`` in a bundled resource goes to its scope's ``$dynamicAnchor``."""
        ref = place.schema["$dynamicRef"]  # type: ignore[index]
        uri, fragment = split_fragment(resolve(place.base, ref))
        initial = self.dynamic_anchors.get((place.scope, "%s#%s" % (uri, fragment)))
        outermost = self.dynamic_anchors.get((place.scope, "%s#%s" % (place.scope, fragment)))
        if not ref.startswith("#") or initial is None or outermost is None:
            raise self.fail(
                place.where,
                '$dynamicRef %s is not supported: only "#name" where this resource '
                "and %s both declare $dynamicAnchor name" % (show(ref), show(place.scope)),
            )
        return outermost

    def _in_place(self, place: Place) -> List[Pointer]:
        """The subschemas applied to the same instance location as ``place``."""
        schema = place.schema
        if isinstance(schema, bool):
            return []
        out: List[Pointer] = []
        for targets in (self.targets, self.dynamic_targets):
            if place.pointer in targets:
                out.append(targets[place.pointer])
        for key in _IN_PLACE:
            value = schema.get(key)
            if isinstance(value, list):
                out.extend(place.pointer + (key, str(i)) for i in range(len(value)))
            elif isinstance(value, dict) and key == "dependentSchemas":
                out.extend(place.pointer + (key, name) for name in value)
            elif value is not None:
                out.append(place.pointer + (key,))
        return out

    def _refuse_cycles(self) -> None:
        state: Dict[Pointer, int] = {}  # 1 on the current path, 2 done
        for start in self.places:
            if start in state:
                continue
            path: List[Pointer] = [start]
            todo: List[List[Pointer]] = [self._in_place(self.places[start])]
            state[start] = 1
            while todo:
                if not todo[-1]:
                    state[path.pop()] = 2
                    todo.pop()
                    continue
                nxt = todo[-1].pop()
                if state.get(nxt) == 1:
                    cycle = path[path.index(nxt) :] + [nxt]
                    where = self.places[path[-1]].where
                    raise self.fail(
                        where,
                        "$ref cycle that never moves into the instance: %s "
                        "(it would recurse forever, Core 9.4.1)" % " -> ".join(self.places[p].where for p in cycle),
                    )
                if nxt not in state:
                    state[nxt] = 1
                    path.append(nxt)
                    todo.append(self._in_place(self.places[nxt]))


# -- pass 1, step 2: each keyword's check ------------------------------------


@dataclass(frozen=True)
class _At:
    """One keyword of one place, as its check sees it."""

    doc: Document
    place: Place
    key: str
    value: Any
    depth: int

    def fail(self, reason: str) -> SchemaError:
        return self.doc.fail(self.place.where, reason)

    def sub(self, schema: object, *steps: Union[str, int]) -> None:
        """Scan a subschema of this keyword, at ``key/steps...``."""
        here, tokens = self.place.where, self.place.pointer
        for step in steps:
            here = _schema_path(here, step)
            tokens = tokens + (str(step),)
        self.doc.scan(schema, here, tokens, self.place.base, self.depth + 1, self.place.scope)

    def at_resource_root(self) -> bool:
        return not self.depth or "$id" in self.place.schema  # type: ignore[operator]


def _check_schema_uri(at: _At) -> None:  # Core 8.1.1 $schema
    if not at.at_resource_root():
        raise at.fail("$schema is only allowed at the root of a schema resource")
    if not isinstance(at.value, str) or at.value != _DRAFT_2020_12:
        raise at.fail("$schema must be %s, got %s" % (show(_DRAFT_2020_12), show(at.value)))


def _check_anchor(at: _At) -> None:  # Core 8.2.2 $anchor, $dynamicAnchor: both name a plain fragment
    if not isinstance(at.value, str) or not _ANCHOR.match(at.value):
        raise at.fail("%s must be a name like [A-Za-z_][-A-Za-z0-9._]*, got %s" % (at.key, show(at.value)))
    name = (at.place.scope, "%s#%s" % (at.place.base, at.value))
    if name in at.doc.anchors:
        raise at.fail("%s %s is used twice in this resource" % (at.key, show(at.value)))
    at.doc.anchors[name] = at.place.pointer
    if at.key == "$dynamicAnchor":
        at.doc.dynamic_anchors[name] = at.place.pointer


def _check_ref(at: _At) -> None:  # Core 8.2.3: resolved by Document.link
    if not isinstance(at.value, str):
        raise at.fail("%s must be a string, got %s" % (at.key, type_name(at.value)))
    (at.doc.refs if at.key == "$ref" else at.doc.dynamic_refs).append(at.place)


def _check_vocabulary(at: _At) -> None:  # Core 8.1.2
    if not at.at_resource_root():
        raise at.fail("$vocabulary is only allowed at the root of a schema resource")
    if not isinstance(at.value, dict):
        raise at.fail("$vocabulary must be an object, got %s" % type_name(at.value))
    for uri, required in at.value.items():
        if uri not in bundled.VOCABULARIES or not isinstance(required, bool):
            raise at.fail(
                "$vocabulary must map draft 2020-12 vocabularies to booleans, got %s: %s" % (show(uri), show(required))
            )


def _check_string(at: _At) -> None:  # Validation 9.1 title, description; Core 8.3 $comment
    if not isinstance(at.value, str):
        raise at.fail("%s must be a string, got %s" % (at.key, type_name(at.value)))


def _check_boolean(at: _At) -> None:  # Validation 9.3, 9.4; 6.4.3 uniqueItems
    if not isinstance(at.value, bool):
        raise at.fail("%s must be a boolean, got %s" % (at.key, type_name(at.value)))


def _check_examples(at: _At) -> None:  # Validation 9.5
    if not isinstance(at.value, list):
        raise at.fail("examples must be an array, got %s" % type_name(at.value))


def _check_type(at: _At) -> None:  # Validation 6.1.1
    names = [at.value] if isinstance(at.value, str) else at.value
    if not isinstance(names, list) or not names:
        raise at.fail("type must be a string or a non-empty array of strings, got %s" % _kind(at.value))
    for index, name in enumerate(names):
        if not isinstance(name, str):
            raise at.fail("type[%d] must be a string, got %s" % (index, type_name(name)))
        if name not in _TYPE_NAMES:
            raise at.fail("unknown type %r" % name)
        if name in names[:index]:
            raise at.fail("type lists %r twice" % name)


def _check_enum(at: _At) -> None:  # Validation 6.1.2: may be empty (then nothing is valid)
    if not isinstance(at.value, list):
        raise at.fail("enum must be an array, got %s" % _kind(at.value))
    for index, item in enumerate(at.value):
        problem = _json_value_problem(item)
        if problem is not None:
            raise at.fail("enum[%d] is not a JSON value: %s" % (index, problem))


def _check_const(at: _At) -> None:  # Validation 6.1.3
    problem = _json_value_problem(at.value)
    if problem is not None:
        raise at.fail("const is not a JSON value: %s" % problem)


def _check_multiple_of(at: _At) -> None:  # Validation 6.2.1
    if not is_number(at.value) or not math.isfinite(at.value) or at.value <= 0:
        raise at.fail("multipleOf must be a number greater than 0, got %s" % show(at.value))


def _check_number(at: _At) -> None:  # Validation 6.2.2-6.2.5
    if not is_number(at.value) or not math.isfinite(at.value):
        raise at.fail("%s must be a number, got %s" % (at.key, show(at.value)))


def _check_count(at: _At) -> None:  # Validation 6.3.1-6.3.2, 6.4.1-6.4.2, 6.5.1-6.5.2
    if not _is_count(at.value):
        raise at.fail("%s must be a non-negative integer, got %s" % (at.key, show(at.value)))


def _check_pattern(at: _At) -> None:  # Validation 6.3.3 (ECMA-262)
    if not isinstance(at.value, str):
        raise at.fail("pattern must be a string, got %s" % type_name(at.value))
    try:
        ecma_regex(at.value)
    except ValueError as exc:
        raise at.fail("pattern %s %s" % (show(at.value), exc)) from None


def _check_format(at: _At) -> None:  # Validation 7
    if not isinstance(at.value, str):
        raise at.fail("format must be a string, got %s" % type_name(at.value))
    # The meta-schemas declare the format-annotation vocabulary (Validation 7.2.1).
    if at.doc.assert_formats and not at.place.scope and at.value not in FORMAT_CHECKS:
        raise at.fail(
            "format %s cannot be asserted (assertable: %s)" % (show(at.value), ", ".join(sorted(FORMAT_CHECKS)))
        )


def _check_required(at: _At) -> None:  # Validation 6.5.3 required, 6.5.4 dependentRequired
    if at.key == "dependentRequired" and not isinstance(at.value, dict):
        raise at.fail("dependentRequired must be an object, got %s" % type_name(at.value))
    lists = {"": at.value} if at.key == "required" else at.value
    for owner, names in lists.items():
        label = at.key if not owner else "%s[%s]" % (at.key, json.dumps(owner))
        if not isinstance(names, list):
            raise at.fail("%s must be an array of strings, got %s" % (label, type_name(names)))
        for index, name in enumerate(names):
            if not isinstance(name, str):
                raise at.fail("%s[%d] must be a string, got %s" % (label, index, type_name(name)))
            if name in names[:index]:
                raise at.fail("%s lists %r twice" % (label, name))


def _check_subschema(at: _At) -> None:  # Core 10.x, 11.x: a keyword whose value is a schema
    at.sub(at.value, at.key)


def _check_subschema_list(at: _At) -> None:  # Core 10.2.1.1-10.2.1.3 allOf, anyOf, oneOf; 10.3.1.1 prefixItems
    if not isinstance(at.value, list) or not at.value:
        raise at.fail("%s must be a non-empty array of schemas, got %s" % (at.key, _kind(at.value)))
    for index, subschema in enumerate(at.value):
        at.sub(subschema, at.key, index)


def _check_subschema_map(at: _At) -> None:  # Core 10.3.2.1-10.3.2.2, 10.2.2.4, 8.2.4 $defs
    if not isinstance(at.value, dict):
        raise at.fail("%s must be an object, got %s" % (at.key, type_name(at.value)))
    for name, subschema in at.value.items():
        if not isinstance(name, str):
            raise at.fail("%s keys must be strings, got %s %r" % (at.key, type_name(name), name))
        if at.key == "patternProperties":
            try:
                ecma_regex(name)
            except ValueError as exc:
                raise at.fail("patternProperties key %s %s" % (show(name), exc)) from None
        at.sub(subschema, at.key, name)


def _checks() -> Dict[str, Callable[[_At], None]]:
    table: Dict[str, Callable[[_At], None]] = {
        "$schema": _check_schema_uri,
        "$anchor": _check_anchor,
        "$dynamicAnchor": _check_anchor,
        "$ref": _check_ref,
        "$dynamicRef": _check_ref,
        "$vocabulary": _check_vocabulary,
        "examples": _check_examples,
        "type": _check_type,
        "enum": _check_enum,
        "const": _check_const,
        "multipleOf": _check_multiple_of,
        "pattern": _check_pattern,
        "format": _check_format,
        "required": _check_required,
        "dependentRequired": _check_required,
    }
    groups = (
        (("title", "description", "$comment"), _check_string),
        (("deprecated", "readOnly", "writeOnly", "uniqueItems"), _check_boolean),
        (NUMBER_KEYWORDS, _check_number),
        (_COUNT_KEYWORDS, _check_count),
        (_SUBSCHEMA, _check_subschema),
        (_SUBSCHEMA_LISTS, _check_subschema_list),
        (_SUBSCHEMA_MAPS, _check_subschema_map),
    )
    for keys, check in groups:
        table.update(dict.fromkeys(keys, check))
    return table


#: Each keyword's check (``$id`` is read by :meth:`Document.scan`; ``default`` may be any value).
_CHECKS = _checks()
