"""Tool and ToolRegistry."""

from __future__ import annotations

import unittest
from typing import Any, Dict

from agentloop import DuplicateToolError, SchemaError, Tool, ToolDefinitionError, ToolRegistry

SCHEMA: Dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def noop(**kwargs: Any) -> None:
    return None


class TestTool(unittest.TestCase):
    def test_names_must_fit_both_provider_apis(self) -> None:
        for name in ("", "has space", "x" * 65, "dot.ted", 5):
            with self.subTest(name), self.assertRaises(ToolDefinitionError):
                Tool(name, "d", SCHEMA, noop)  # type: ignore[arg-type]
        Tool("a-b_C9", "d", SCHEMA, noop)

    def test_description_and_fn_are_checked(self) -> None:
        with self.assertRaises(ToolDefinitionError) as caught:
            Tool("t", None, SCHEMA, noop)  # type: ignore[arg-type]
        self.assertEqual(str(caught.exception), "tool 't': description must be a str, got NoneType")
        with self.assertRaises(ToolDefinitionError):
            Tool("t", "d", SCHEMA, "not callable")  # type: ignore[arg-type]
        with self.assertRaises(ToolDefinitionError):
            Tool("t", "bad \ud800", SCHEMA, noop)

    def test_an_unsupported_keyword_is_refused_naming_tool_and_place(self) -> None:
        with self.assertRaises(SchemaError) as caught:
            Tool("add", "d", {"type": "object", "properties": {"a": {"type": "string", "format": "email"}}}, noop)
        self.assertEqual(str(caught.exception), "tool 'add': schema $.properties.a: unsupported keyword 'format'")
        self.assertIsInstance(caught.exception, ValueError)

    def test_an_unrecordable_schema_is_refused(self) -> None:
        with self.assertRaises(SchemaError) as caught:
            Tool("t", "d", {"type": "object", "properties": {"a": {"enum": [float("nan")]}}}, noop)
        self.assertEqual(caught.exception.tool, "t")

    def test_the_schema_is_copied_so_later_edits_change_nothing(self) -> None:
        schema: Dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}}}
        tool = Tool("t", "d", schema, noop)
        schema["properties"]["a"]["type"] = "string"
        schema["format"] = "unchecked"
        self.assertEqual(tool.parameters, {"type": "object", "properties": {"a": {"type": "integer"}}})


class TestRegistry(unittest.TestCase):
    def test_manifest_is_sorted_by_name_and_holds_three_keys(self) -> None:
        registry = ToolRegistry([Tool("zeta", "z", SCHEMA, noop), Tool("alpha", "a", SCHEMA, noop)])
        registry.register(Tool("mid", "m", {"type": "object"}, noop))
        manifest = registry.manifest()
        self.assertEqual([t["name"] for t in manifest], ["alpha", "mid", "zeta"])
        self.assertEqual(manifest[0], {"name": "alpha", "description": "a", "parameters": SCHEMA})
        self.assertEqual((len(registry), "mid" in registry, "nope" in registry), (3, True, False))
        self.assertEqual([t.name for t in registry], ["alpha", "mid", "zeta"])

    def test_a_duplicate_name_is_refused(self) -> None:
        registry = ToolRegistry([Tool("add", "a", SCHEMA, noop)])
        with self.assertRaises(DuplicateToolError) as caught:
            registry.register(Tool("add", "b", SCHEMA, noop))
        self.assertEqual(str(caught.exception), "a tool named 'add' is already registered")
        with self.assertRaises(DuplicateToolError):
            ToolRegistry([Tool("x", "", SCHEMA, noop), Tool("x", "", SCHEMA, noop)])

    def test_the_manifest_is_a_copy(self) -> None:
        registry = ToolRegistry([Tool("add", "a", SCHEMA, noop)])
        registry.manifest()[0]["parameters"]["type"] = "string"
        self.assertEqual(registry.manifest()[0]["parameters"]["type"], "object")

    def test_only_tools_register(self) -> None:
        with self.assertRaises(TypeError):
            ToolRegistry().register({"name": "add"})  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
