"""The import policy for the JSON Schemas real MCP servers send.

MCP 2026-07-28 "Base Protocol: JSON Schema Usage" says a schema without
``$schema`` is JSON Schema 2020-12, that a schema may name another dialect,
and that a client must handle a dialect it does not support "gracefully, by
returning an appropriate error".  agentloop's validator
(:func:`agentloop.schema.compile_schema`) enforces 2020-12 and refuses any
keyword it cannot enforce.  Servers built on pydantic, zod or older SDKs send
a few things it refuses; this module rewrites exactly those whose meaning is
known, and refuses the rest *for that one tool* (:class:`Refused`, collected
by the client), never for the run.

The policy, applied at every schema position (``properties`` values, ``items``,
``allOf`` members, ...; never inside ``enum``, ``const``, ``default`` or
``examples``, which are data):

1. ``$schema`` at the root: absent or draft 2020-12 is read as 2020-12;
   draft-07 (``http://json-schema.org/draft-07/schema#``, with or without
   ``#``, http or https) is read as draft-07; anything else (draft-04,
   2019-09, a custom meta-schema) refuses the tool.  The keyword itself is
   dropped.  A nested ``$schema`` must name the root's dialect.
2. Annotations the validator does not know are dropped: Validation 9.3
   ``deprecated``, 9.4 ``readOnly``/``writeOnly``, 8.3-8.5
   ``contentEncoding``/``contentMediaType``/``contentSchema``; so is every
   ``x-*`` extension keyword, and the OpenAPI/pydantic ``discriminator``
   (an unknown keyword, which Core 6.5 makes an annotation: the ``oneOf``
   it sits beside is what validates).  ``title``, ``description``,
   ``default``, ``examples`` and ``$comment`` are kept (the validator
   ignores them; the model reads them).
3. ``definitions`` becomes ``$defs`` and every local ``$ref`` JSON Pointer
   that steps through a ``definitions`` keyword is rewritten to match (a
   pointer ``#/definitions/A`` names the same subschema as ``#/$defs/A``
   once renamed).  In 2020-12 ``definitions`` is an unknown keyword whose
   subschemas a ``$ref`` may still point into, so the rename keeps the
   meaning there too.
4. draft-07 only: a keyword that draft-07 reads differently from 2020-12
   refuses the tool -- array-form ``items``, ``additionalItems``,
   ``dependencies``, an ``$id`` that is a bare fragment, an assertion beside
   ``$ref`` (draft-07 section 8.3: "all other properties in a $ref object
   MUST be ignored"; 2020-12 applies them), and the 2020-12 keywords
   draft-07 does not have (``$defs``, ``prefixItems``,
   ``unevaluatedProperties``, ...), which draft-07 would ignore.
5. Whatever remains goes to the validator, which refuses anything it cannot
   enforce; the client records that message as the refusal reason.

``x-mcp-header`` (MCP 2026-07-28 "Tools: x-mcp-header", "Streamable HTTP:
Custom Headers from Tool Parameters") is read before it is dropped when the
caller asks (modern Streamable HTTP only): each must be a non-empty HTTP
token, case-insensitively unique, on a property reached from the root through
``properties`` alone whose ``type`` is string, integer or boolean; a tool
breaking any of these is refused, as the specification requires.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ..errors import MCPSchemaError

__all__ = ["Refused", "MCPSchemaError", "HeaderParam", "import_schema", "DRAFT_2020_12", "DRAFT_07"]

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
DRAFT_07 = "http://json-schema.org/draft-07/schema#"
_DIALECTS = {
    DRAFT_2020_12: "2020-12",
    DRAFT_2020_12 + "#": "2020-12",
    "http://json-schema.org/draft-07/schema#": "draft-07",
    "http://json-schema.org/draft-07/schema": "draft-07",
    "https://json-schema.org/draft-07/schema#": "draft-07",
    "https://json-schema.org/draft-07/schema": "draft-07",
}

_STRIPPED = frozenset(
    ("deprecated", "readOnly", "writeOnly", "contentEncoding", "contentMediaType", "contentSchema", "discriminator")
)
_KEPT_ANNOTATIONS = frozenset(("title", "description", "default", "examples", "$comment"))
_DATA = frozenset(("enum", "const", "default", "examples"))
_SUB_ONE = frozenset(
    (
        "additionalProperties",
        "items",
        "not",
        "if",
        "then",
        "else",
        "propertyNames",
        "contains",
        "unevaluatedItems",
        "unevaluatedProperties",
    )
)
_SUB_LIST = frozenset(("allOf", "anyOf", "oneOf", "prefixItems"))
_SUB_MAP = frozenset(("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"))
_ONLY_2020 = frozenset(
    (
        "$defs",
        "prefixItems",
        "unevaluatedItems",
        "unevaluatedProperties",
        "dependentRequired",
        "dependentSchemas",
        "$anchor",
        "$dynamicRef",
        "$dynamicAnchor",
        "$vocabulary",
        "minContains",
        "maxContains",
    )
)
_DRAFT_07_DIFFERENT = {
    "additionalItems": "additionalItems (2020-12 spells it items, beside prefixItems)",
    "dependencies": "dependencies (2020-12 splits it into dependentRequired and dependentSchemas)",
}
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")  # RFC 9110 section 5.6.2 tchar
_HEADER_TYPES = frozenset(("string", "integer", "boolean"))


#: The schema cannot be imported; ``reason`` says why (:class:`~agentloop.errors.MCPSchemaError`).
Refused = MCPSchemaError


@dataclass(frozen=True)
class HeaderParam:
    """An ``x-mcp-header``: mirror the argument at ``path`` into ``Mcp-Param-{header}``."""

    header: str
    path: Tuple[str, ...]


class _Import:
    def __init__(self, dialect: str, where: str, headers: bool) -> None:
        self.dialect = dialect
        self.where = where
        self.want_headers = headers
        self.headers: List[HeaderParam] = []

    def refuse(self, pointer: str, reason: str) -> Refused:
        return Refused("%s at %s: %s" % (self.where, pointer or "/", reason))

    def schema(self, node: Any, pointer: str, reach: Optional[Tuple[str, ...]]) -> Any:
        """The schema at ``pointer`` rewritten by steps 1-4 of the policy, its subschemas too.

        ``reach`` is the property path from the root while only ``properties``
        led here (where an ``x-mcp-header`` may sit), else ``None``.
        """
        if not isinstance(node, dict):
            return node  # a boolean schema, or something the validator will refuse
        if "$ref" in node and self.dialect == "draft-07":
            self.refuse_beside_ref(node, pointer)
        if "definitions" in node and "$defs" in node:
            raise self.refuse(pointer, "both definitions and $defs")
        out: Dict[str, Any] = {}
        for key, value in node.items():
            if key == "x-mcp-header":
                if self.want_headers:
                    self.header(node, value, pointer, reach)
                continue
            if key.startswith("x-") or key in _STRIPPED:
                continue
            if key == "$schema":
                self.nested_dialect(value, pointer)
                continue
            if self.dialect == "draft-07":
                self.refuse_draft_07(key, value, pointer)
            name, imported = self.keyword(key, value, _step(pointer, key), reach)
            out[name] = imported
        return out

    def refuse_beside_ref(self, node: Dict[str, Any], pointer: str) -> None:
        """Step 4: draft-07 section 8.3 ignores every assertion beside ``$ref``, 2020-12 applies them."""
        beside = [
            k
            for k in node
            if k != "$ref"
            and k not in _KEPT_ANNOTATIONS
            and k not in _STRIPPED
            and not k.startswith("x-")
            and k != "$schema"
        ]
        if beside:
            raise self.refuse(
                pointer, "draft-07 ignores %s beside $ref, 2020-12 applies it" % (", ".join(sorted(beside)),)
            )

    def nested_dialect(self, value: Any, pointer: str) -> None:
        """Step 1: a nested ``$schema`` must name the root's dialect."""
        if not isinstance(value, str) or _DIALECTS.get(value) != self.dialect:
            raise self.refuse(pointer, "a nested $schema names another dialect: %r" % (value,))

    def refuse_draft_07(self, key: str, value: Any, pointer: str) -> None:
        """Step 4: refuse a keyword that draft-07 reads differently from 2020-12 (or does not have)."""
        if key in _ONLY_2020:
            raise self.refuse(
                pointer, "%s is not a draft-07 keyword (draft-07 ignores it, 2020-12 applies it)" % (key,)
            )
        if key in _DRAFT_07_DIFFERENT:
            raise self.refuse(pointer, "draft-07 %s means something else in 2020-12" % (_DRAFT_07_DIFFERENT[key],))
        if key == "items" and isinstance(value, list):
            raise self.refuse(pointer, "draft-07 array-form items (2020-12 spells it prefixItems)")
        if key == "$id" and isinstance(value, str) and value.startswith("#"):
            raise self.refuse(
                pointer, "draft-07 $id %r is a plain-name fragment (2020-12 spells it $anchor)" % (value,)
            )

    def keyword(self, key: str, value: Any, here: str, reach: Optional[Tuple[str, ...]]) -> Tuple[str, Any]:
        """One kept keyword as written out: (its name, its value with subschemas imported).

        Data (``enum``, ``const``, ...) is copied as it is; a local ``$ref`` and
        ``definitions`` are renamed (step 3).
        """
        if key in _DATA:
            return key, value
        if key == "$ref" and isinstance(value, str):
            return key, _rewrite_ref(value)
        if key in _SUB_ONE:
            return key, self.schema(value, here, None)
        if key in _SUB_LIST and isinstance(value, list):
            return key, [self.schema(v, "%s/%d" % (here, i), None) for i, v in enumerate(value)]
        if key in _SUB_MAP and isinstance(value, dict):
            members = {}
            for k, v in value.items():
                member_reach = reach + (k,) if key == "properties" and reach is not None else None
                members[k] = self.schema(v, _step(here, k), member_reach)
            return ("$defs" if key == "definitions" else key), members
        return key, value

    def header(self, node: Dict[str, Any], value: Any, pointer: str, reach: Optional[Tuple[str, ...]]) -> None:
        # "Tools: x-mcp-header" -- the constraints a client MUST enforce by excluding the tool.
        if not isinstance(value, str) or not _TOKEN.match(value):
            raise self.refuse(pointer, "x-mcp-header must be a non-empty HTTP token, got %r" % (value,))
        if not reach:
            raise self.refuse(
                pointer, "x-mcp-header %r is not on a property reached through properties alone" % (value,)
            )
        declared = node.get("type")
        types = declared if isinstance(declared, list) else [declared]
        primitive = [t for t in types if t != "null"]
        if not primitive or any(t not in _HEADER_TYPES for t in primitive):
            raise self.refuse(
                pointer, "x-mcp-header %r is on a property whose type is not string, integer or boolean" % (value,)
            )
        if any(h.header.lower() == value.lower() for h in self.headers):
            raise self.refuse(pointer, "x-mcp-header %r is used twice" % (value,))
        self.headers.append(HeaderParam(value, reach))


def _step(pointer: str, token: str) -> str:
    """``pointer`` one step down, at ``token`` (RFC 6901 escaping, for reasons)."""
    return "%s/%s" % (pointer, token.replace("~", "~0").replace("/", "~1"))


def _rewrite_ref(ref: str) -> str:
    """``#/definitions/A/properties/b`` -> ``#/$defs/A/properties/b`` (step 3 above).

    The pointer is walked keyword by keyword so that only a ``definitions``
    in keyword position is renamed (a property called ``definitions`` is not).
    """
    if not ref.startswith("#/"):
        return ref
    tokens = ref[2:].split("/")
    state = "schema"
    for i, token in enumerate(tokens):
        if state == "schema":
            if token == "definitions":
                tokens[i] = "$defs"
                state = "member"
            elif token in _SUB_MAP:
                state = "member"
            elif token in _SUB_LIST:
                state = "index"
            elif token in _SUB_ONE:
                state = "schema"
            else:
                break  # into data or an unknown keyword: nothing further is renamed
        else:  # a member name or an index leads back to a schema
            state = "schema"
    return "#/" + "/".join(tokens)


def import_schema(schema: Any, where: str, *, headers: bool = False) -> Tuple[Any, List[HeaderParam]]:
    """``schema`` rewritten by the policy above, and its ``x-mcp-header`` parameters when ``headers``.

    ``where`` names the schema in reasons (``inputSchema``).  Raises
    :class:`Refused`; the result still has to pass the validator (step 5).
    """
    if isinstance(schema, bool):
        return schema, []
    if not isinstance(schema, dict):
        raise Refused("%s is not a JSON Schema object (got %s)" % (where, type(schema).__name__))
    declared = schema.get("$schema", DRAFT_2020_12)
    dialect = _DIALECTS.get(declared) if isinstance(declared, str) else None
    if dialect is None:
        raise Refused("%s: $schema %r is not a dialect agentloop imports (2020-12, draft-07)" % (where, declared))
    state = _Import(dialect, where, headers)
    return state.schema(schema, "", ()), state.headers
