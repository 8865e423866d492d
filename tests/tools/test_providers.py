"""OpenAI and Anthropic tool shapes, and the OpenAI strict-mode check (agentloop.providers)."""

from __future__ import annotations

import unittest
from typing import Any, Dict, List, Literal, Optional

from agentloop import SchemaError, Tool, ToolRegistry
from agentloop.tools.providers import anthropic_tool, is_openai_strict, openai_strict_problems, openai_tool
from agentloop.tools.registry import tool

STRICT: Dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city."},
        "unit": {"type": ["string", "null"], "enum": ["c", "f", None]},
        "when": {"type": "string", "format": "date-time"},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "stops": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "shape": {"anyOf": [{"$ref": "#/$defs/circle"}, {"type": "null"}]},
    },
    "required": ["city", "unit", "when", "days", "stops", "shape"],
    "additionalProperties": False,
    "$defs": {
        "circle": {
            "type": "object",
            "properties": {"r": {"type": "number"}},
            "required": ["r"],
            "additionalProperties": False,
        }
    },
}


def noop(**kwargs: Any) -> None:
    return None


@tool
def lookup(query: str, limit: int) -> List[str]:
    """Look something up."""
    return []


@tool
def search(query: str, limit: int = 10, mode: Optional[Literal["fast", "deep"]] = None) -> List[str]:
    """Search the index."""
    return []


class ShapeTests(unittest.TestCase):
    def test_openai_chat_completions_shape(self) -> None:
        self.assertEqual(
            openai_tool(lookup.manifest_entry()),
            {
                "type": "function",
                "function": {
                    "name": "lookup",
                    "description": "Look something up.",
                    "parameters": {
                        "type": "object",
                        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                        "required": ["query", "limit"],
                        "additionalProperties": False,
                    },
                    "strict": True,
                },
            },
        )
        entry = openai_tool(search.manifest_entry())
        self.assertEqual(sorted(entry), ["function", "type"])
        self.assertEqual(sorted(entry["function"]), ["description", "name", "parameters", "strict"])
        self.assertIs(entry["function"]["strict"], False)  # defaults make fields optional

    def test_anthropic_messages_shape(self) -> None:
        self.assertEqual(
            anthropic_tool(lookup.manifest_entry()),
            {
                "name": "lookup",
                "description": "Look something up.",
                "input_schema": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["query", "limit"],
                    "additionalProperties": False,
                },
            },
        )

    def test_the_registry_styles(self) -> None:
        registry = ToolRegistry([search, lookup])
        self.assertEqual([t["function"]["name"] for t in registry.manifest("openai")], ["lookup", "search"])
        self.assertEqual([t["name"] for t in registry.manifest("anthropic")], ["lookup", "search"])
        self.assertEqual(registry.manifest("anthropic")[1]["input_schema"], search.parameters)

    def test_the_root_must_be_an_object(self) -> None:
        untyped = Tool("untyped", "d", {"properties": {"a": {}}}, noop)
        self.assertEqual(
            anthropic_tool(untyped.manifest_entry())["input_schema"], {"type": "object", "properties": {"a": {}}}
        )
        self.assertEqual(openai_tool(untyped.manifest_entry())["function"]["parameters"]["type"], "object")
        self.assertEqual(untyped.parameters, {"properties": {"a": {}}})  # the tool itself is untouched
        # A root that excludes objects is refused when the tool is built: no call could ever pass.
        with self.assertRaises(SchemaError) as caught:
            Tool("stringy", "d", {"type": "string"}, noop)
        self.assertEqual(
            str(caught.exception),
            "tool 'stringy': schema $.type: a tool's arguments are an object, but type is \"string\"",
        )


class StrictModeTests(unittest.TestCase):
    def test_a_strict_schema_has_no_problems(self) -> None:
        self.assertEqual(openai_strict_problems(STRICT), [])
        self.assertTrue(is_openai_strict(STRICT))
        self.assertTrue(openai_tool(Tool("t", "d", STRICT, noop).manifest_entry())["function"]["strict"])

    def test_each_rule_says_why(self) -> None:
        cases = [
            (
                {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
                ["$: every property must be required; not in required: 'a'"],
            ),
            ({"type": "object", "properties": {}, "required": []}, ["$: additionalProperties must be false"]),
            (
                {"anyOf": [{"type": "object"}]},
                [
                    '$: the root must have "type": "object"',
                    "$: the root must not be anyOf",
                    "$.anyOf[0]: additionalProperties must be false",
                ],
            ),
            (
                {
                    "type": "object",
                    "properties": {"a": {"type": "string", "minLength": 1, "default": "x"}},
                    "required": ["a"],
                    "additionalProperties": False,
                },
                [
                    "$.properties.a: keyword 'minLength' is not supported in strict mode",
                    "$.properties.a: keyword 'default' is not supported in strict mode",
                ],
            ),
            (
                {
                    "type": "object",
                    "properties": {"a": {"type": "string", "format": "uri"}, "b": True},
                    "required": ["a", "b"],
                    "additionalProperties": False,
                },
                [
                    "$.properties.a: format 'uri' is not supported",
                    "$.properties.b: boolean subschemas are not supported",
                ],
            ),
            (
                {
                    "type": "object",
                    "properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}}},
                    "required": ["m"],
                    "additionalProperties": False,
                },
                ["$.properties.m: additionalProperties must be false"],
            ),
            (
                {
                    "type": "object",
                    "properties": {"t": {"type": "array", "prefixItems": [{"type": "integer"}], "items": False}},
                    "required": ["t"],
                    "additionalProperties": False,
                },
                [
                    "$.properties.t: keyword 'prefixItems' is not supported in strict mode",
                    "$.items: boolean subschemas are not supported".replace("$.items", "$.properties.t.items"),
                ],
            ),
            ("not a schema", ["$: the root must be an object schema, got str"]),
        ]
        for schema, problems in cases:
            with self.subTest(schema=schema):
                self.assertEqual(openai_strict_problems(schema), problems)

    def test_size_limits(self) -> None:
        many = {
            "type": "object",
            "properties": {"p%d" % i: {"type": "integer"} for i in range(5001)},
            "required": ["p%d" % i for i in range(5001)],
            "additionalProperties": False,
        }
        self.assertEqual(openai_strict_problems(many), ["$: 5001 object properties, more than the 5000 allowed"])
        deep: Dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
        for _ in range(10):
            deep = {"type": "object", "properties": {"x": deep}, "required": ["x"], "additionalProperties": False}
        self.assertEqual(len(openai_strict_problems(deep)), 1)
        self.assertIn("objects nested 11 levels deep, more than 10", openai_strict_problems(deep)[0])
        enums = {
            "type": "object",
            "properties": {"e": {"enum": list(range(1001))}},
            "required": ["e"],
            "additionalProperties": False,
        }
        self.assertEqual(openai_strict_problems(enums), ["$: 1001 enum values, more than the 1000 allowed"])


if __name__ == "__main__":
    unittest.main()
