"""Pass 1 of compiling a schema checks every keyword it accepts (agentloop/schema/document.py)."""

from __future__ import annotations

import unittest

from agentloop.errors import SchemaError
from agentloop.schema import compile_schema
from agentloop.schema.document import _CHECKS, ANNOTATIONS, KNOWN_KEYWORDS, META_KEYWORDS

#: Accepted keywords with no check of their own: $id is read while scanning, default may be any value.
UNCHECKED = {"$id", "default"}


class TestKeywordChecks(unittest.TestCase):
    def test_every_accepted_keyword_has_its_check(self) -> None:
        accepted = set(KNOWN_KEYWORDS) | set(ANNOTATIONS) | set(META_KEYWORDS)
        self.assertEqual(set(_CHECKS) | UNCHECKED, accepted)
        self.assertEqual(set(_CHECKS) & UNCHECKED, set())

    def test_a_check_names_the_place_and_the_keyword(self) -> None:
        cases = [
            (
                {"properties": {"a": {"minLength": -1}}},
                "schema $.properties.a: minLength must be a non-negative integer, got -1",
            ),
            ({"anyOf": [{"type": ["string", "string"]}]}, "schema $.anyOf[0]: type lists 'string' twice"),
            (
                {"$defs": {"x": {"$schema": "x"}}},
                "schema $.$defs.x: $schema is only allowed at the root of a schema resource",
            ),
            ({"dependentRequired": {"a": ["b", 1]}}, 'schema $: dependentRequired["a"][1] must be a string, got int'),
            ({"readOnly": 1}, "schema $: readOnly must be a boolean, got int"),
        ]
        for schema, message in cases:
            with self.subTest(schema=schema):
                with self.assertRaises(SchemaError) as caught:
                    compile_schema(schema)
                self.assertEqual(str(caught.exception), message)
