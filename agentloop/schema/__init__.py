"""JSON Schema draft 2020-12, compiled once and validated fail-closed.

A standalone layer: it imports only :mod:`agentloop.canonical` and
:mod:`agentloop.errors`.  Its parts: the document pass that checks a schema
and resolves its references (``document``), the validator (``validator``),
``format`` assertions (``formats``), ECMA-262 patterns (``patterns``), URI and
JSON Pointer handling (``uri``), the JSON data model (``values``) and the
draft 2020-12 meta-schemas, shipped as package data so a ``$ref`` to them
resolves without a fetch (``bundled``).
"""

from __future__ import annotations

from .validator import (
    ANNOTATIONS,
    KNOWN_KEYWORDS,
    MAX_ERRORS,
    MAX_REF_DEPTH,
    Validator,
    check_schema,
    compile_schema,
    validate,
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
