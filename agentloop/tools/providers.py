"""Tool definitions in the shapes the OpenAI and Anthropic APIs accept, and OpenAI's strict-mode check.

Shapes followed (the request bodies' ``tools`` arrays):

* OpenAI Chat Completions, ``POST /v1/chat/completions``, parameter ``tools``
  (API reference, and the "Function calling" guide,
  https://platform.openai.com/docs/guides/function-calling)::

      {"type": "function",
       "function": {"name": ..., "description": ..., "parameters": {...}, "strict": bool}}

  ``strict`` is set to ``True`` exactly when :func:`openai_strict_problems`
  finds nothing, so the manifest never asks for strict mode on a schema the
  API would reject.
* OpenAI Responses, ``POST /v1/responses``, parameter ``tools`` (API
  reference, "Create a model response", ``FunctionTool``): the same members
  without the nesting::

      {"type": "function", "name": ..., "description": ..., "parameters": {...}, "strict": bool}

* Anthropic Messages, ``POST /v1/messages``, parameter ``tools`` (API
  reference, and the "Tool use" guide,
  https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use)::

      {"name": ..., "description": ..., "input_schema": {"type": "object", ...}}

Both APIs want an object schema at the root: a schema without ``type`` gets
``"type": "object"`` (the loop only ever passes an arguments object, so this
changes nothing it accepts); one whose ``type`` is something else is refused
with :class:`~agentloop.errors.SchemaError`.

OpenAI strict mode ("Structured Outputs" guide, section "Supported schemas",
https://platform.openai.com/docs/guides/structured-outputs#supported-schemas)
-- what :func:`openai_strict_problems` checks:

1. the root is an object schema (``"type": "object"``), not ``anyOf``;
2. every object schema lists all its ``properties`` in ``required`` and has
   ``additionalProperties: false``;
3. only these keywords appear: ``type`` (``string``, ``number``, ``integer``,
   ``boolean``, ``object``, ``array``, ``null``), ``properties``,
   ``required``, ``additionalProperties``, ``items``, ``enum``, ``const``,
   ``anyOf``, ``$ref``, ``$defs``, ``title``, ``description``; for strings
   ``pattern`` and ``format`` (``date-time``, ``time``, ``date``, ``duration``,
   ``email``, ``hostname``, ``ipv4``, ``ipv6``, ``uuid``); for numbers
   ``multipleOf``, ``minimum``, ``maximum``, ``exclusiveMinimum``,
   ``exclusiveMaximum``; for arrays ``minItems``, ``maxItems``.  So
   ``default``, ``allOf``, ``oneOf``, ``not``, ``if``/``then``/``else``,
   ``prefixItems``, ``uniqueItems``, ``minLength``/``maxLength``,
   ``patternProperties``, ``propertyNames``, ``min/maxProperties``,
   ``dependent*``, ``unevaluated*`` and boolean subschemas are reported;
4. the documented size limits: at most 5000 object properties in total, 10
   levels of object nesting, 1000 ``enum`` values in total, and 120,000
   characters of property names, ``$defs`` names, ``enum`` and ``const``
   string values.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Mapping, Tuple

from ..canonical import json_path
from ..errors import SchemaError, WrongTypeError

__all__ = ["openai_tool", "responses_tool", "anthropic_tool", "openai_strict_problems", "is_openai_strict"]

_STRICT_KEYWORDS = frozenset(
    (
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "title",
        "description",
        "pattern",
        "format",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    )
)
_STRICT_TYPES = frozenset(("string", "number", "integer", "boolean", "object", "array", "null"))
_STRICT_FORMATS = frozenset(("date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"))
_MAX_PROPERTIES = 5000
_MAX_OBJECT_DEPTH = 10
_MAX_ENUM_VALUES = 1000
_MAX_STRING_CHARS = 120_000


def _fields(entry: Mapping[str, Any]) -> Tuple[str, str, Dict[str, Any]]:
    """``(name, description, parameters)`` of a manifest entry (``Tool.manifest_entry()``)."""
    if not isinstance(entry, Mapping) or not {"name", "description", "parameters"} <= set(entry):
        raise WrongTypeError("a manifest entry", "a mapping with name, description and parameters", entry)
    name, description, parameters = entry["name"], entry["description"], entry["parameters"]
    for key, value, expected in (
        ("name", name, str),
        ("description", description, str),
        ("parameters", parameters, Mapping),
    ):
        if not isinstance(value, expected):
            raise WrongTypeError(
                "a manifest entry's %s" % (key,), "an object" if expected is Mapping else "a str", value
            )
    return name, description, copy.deepcopy(dict(parameters))


def _object_root(name: str, schema: Dict[str, Any], api: str) -> Dict[str, Any]:
    if "type" not in schema:
        schema = dict({"type": "object"}, **schema)
    elif schema["type"] != "object":
        raise SchemaError(
            "$", "the %s API needs an object schema at the root, got type %s" % (api, schema["type"]), name
        )
    return schema


def openai_tool(entry: Mapping[str, Any]) -> Dict[str, Any]:
    """A manifest entry (``{"name", "description", "parameters"}``, as
    ``Tool.manifest_entry()`` gives) as an OpenAI Chat Completions ``tools``
    entry (see the module docstring).  :class:`~agentloop.errors.WrongTypeError`
    (a ``TypeError``) for an entry of another shape."""
    name, description, schema = _fields(entry)
    parameters = _object_root(name, schema, "OpenAI")
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": parameters,
            "strict": not openai_strict_problems(parameters),
        },
    }


def responses_tool(entry: Mapping[str, Any]) -> Dict[str, Any]:
    """A manifest entry as an OpenAI Responses API ``tools`` entry: the Chat
    Completions function's members one level up, ``{"type": "function", "name",
    "description", "parameters", "strict"}`` (the API reference's ``FunctionTool``)."""
    shape = openai_tool(entry)
    return dict({"type": "function"}, **shape["function"])


def anthropic_tool(entry: Mapping[str, Any]) -> Dict[str, Any]:
    """A manifest entry as an Anthropic Messages ``tools`` entry (see the module
    docstring and :func:`openai_tool`)."""
    name, description, schema = _fields(entry)
    return {"name": name, "description": description, "input_schema": _object_root(name, schema, "Anthropic")}


def is_openai_strict(schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` meets OpenAI's strict mode (no :func:`openai_strict_problems`)."""
    return not openai_strict_problems(schema)


class _Totals:
    def __init__(self) -> None:
        self.properties = 0
        self.enum_values = 0
        self.chars = 0


def openai_strict_problems(schema: object) -> List[str]:
    """Why ``schema`` does not meet OpenAI's strict mode, one line per problem (``[]`` if it does).

    Each line starts with the schema place (``$.properties.a``).  The rules
    are listed in the module docstring.
    """
    problems: List[str] = []
    if not isinstance(schema, dict):
        return ["$: the root must be an object schema, got %s" % type(schema).__name__]
    if schema.get("type") != "object":
        problems.append('$: the root must have "type": "object"')
    if "anyOf" in schema:
        problems.append("$: the root must not be anyOf")
    totals = _Totals()
    _walk(schema, "$", 0, problems, totals)
    if totals.properties > _MAX_PROPERTIES:
        problems.append("$: %d object properties, more than the %d allowed" % (totals.properties, _MAX_PROPERTIES))
    if totals.enum_values > _MAX_ENUM_VALUES:
        problems.append("$: %d enum values, more than the %d allowed" % (totals.enum_values, _MAX_ENUM_VALUES))
    if totals.chars > _MAX_STRING_CHARS:
        problems.append(
            "$: %d characters of names and enum/const strings, more than the %d allowed"
            % (totals.chars, _MAX_STRING_CHARS)
        )
    return problems


def _walk(schema: object, where: str, depth: int, problems: List[str], totals: _Totals) -> None:
    if not isinstance(schema, dict):
        problems.append(
            "%s: boolean subschemas are not supported" % where
            if isinstance(schema, bool)
            else "%s: a schema must be an object" % where
        )
        return
    for key in schema:
        if key not in _STRICT_KEYWORDS:
            problems.append("%s: keyword %r is not supported in strict mode" % (where, key))
    types = schema.get("type")
    names = [types] if isinstance(types, str) else list(types) if isinstance(types, list) else []
    for name in names:
        if name not in _STRICT_TYPES:
            problems.append("%s: type %r is not supported" % (where, name))
    fmt = schema.get("format")
    if fmt is not None and fmt not in _STRICT_FORMATS:
        problems.append("%s: format %r is not supported" % (where, fmt))
    for value in [schema.get("const")] + list(schema.get("enum", ())):
        if isinstance(value, str):
            totals.chars += len(value)
    totals.enum_values += len(schema.get("enum", ()))
    is_object = "object" in names or "properties" in schema
    if is_object:
        depth += 1
        if depth > _MAX_OBJECT_DEPTH:
            problems.append("%s: objects nested %d levels deep, more than %d" % (where, depth, _MAX_OBJECT_DEPTH))
        properties = schema.get("properties", {})
        missing = [name for name in properties if name not in schema.get("required", ())]
        if missing:
            problems.append(
                "%s: every property must be required; not in required: %s"
                % (where, ", ".join(repr(name) for name in missing))
            )
        if schema.get("additionalProperties") is not False:
            problems.append("%s: additionalProperties must be false" % where)
        totals.properties += len(properties)
        totals.chars += sum(len(name) for name in properties)
        for name, sub in properties.items():
            _walk(sub, json_path(json_path(where, "properties"), name), depth, problems, totals)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        _walk(extra, where + ".additionalProperties", depth, problems, totals)
    if "items" in schema:
        _walk(schema["items"], where + ".items", depth, problems, totals)
    for index, branch in enumerate(schema.get("anyOf", ())):
        _walk(branch, "%s.anyOf[%d]" % (where, index), depth, problems, totals)
    for name, sub in schema.get("$defs", {}).items():
        totals.chars += len(name)
        _walk(sub, json_path(where + ".$defs", name), 0, problems, totals)
