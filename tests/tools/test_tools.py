"""Tool, @tool and ToolRegistry."""

from __future__ import annotations

import enum
import json
import os
import shutil
import tempfile
import unittest
from dataclasses import InitVar, dataclass
from typing import Any, Dict, List, Optional, Tuple

from agentloop import (
    DuplicateToolError,
    ModelReply,
    SchemaError,
    ScriptedModel,
    Tool,
    ToolCall,
    ToolDefinitionError,
    ToolRegistry,
    run,
)
from agentloop.tools.registry import tool

SCHEMA: Dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def noop(**kwargs: Any) -> None:
    return None


class Unit(enum.Enum):
    METRIC = "metric"
    IMPERIAL = "imperial"


@dataclass
class Place:
    city: str
    country: str = "FR"


@tool
def forecast(
    place: Place, days: int, unit: Unit = Unit.METRIC, window: Optional[Tuple[int, int]] = None
) -> Dict[str, Any]:
    """Forecast the weather.

    Args:
        place: Where.
        days: How many days.
    """
    # The types the annotations promise, not the JSON that came in.
    assert isinstance(place, Place) and type(days) is int and isinstance(unit, Unit)
    assert window is None or type(window) is tuple
    return {
        "city": place.city,
        "country": place.country,
        "days": days,
        "unit": unit.value,
        "window": list(window) if window else None,
    }


@tool(name="add_numbers", description="Add a list of numbers.")
def add_numbers(values: List[float]) -> float:
    return sum(values)


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
        with self.assertRaises(ToolDefinitionError):
            Tool("t", "d", SCHEMA, noop, convert=5)  # type: ignore[arg-type]

    def test_an_unsupported_keyword_is_refused_naming_tool_and_place(self) -> None:
        with self.assertRaises(SchemaError) as caught:
            Tool("add", "d", {"type": "object", "properties": {"a": {"type": "string", "contains": {}}}}, noop)
        self.assertEqual(str(caught.exception), "tool 'add': schema $.properties.a: unsupported keyword 'contains'")
        self.assertIsInstance(caught.exception, ValueError)
        with self.assertRaises(SchemaError) as caught:
            Tool("add", "d", {"properties": {"a": {"format": "hostname"}}}, noop, assert_formats=True)
        self.assertEqual(caught.exception.tool, "add")

    def test_parameters_must_be_an_object_schema(self) -> None:
        cases: List[Any] = [True, [], None]
        for parameters in cases:
            with self.subTest(parameters), self.assertRaises(SchemaError) as caught:
                Tool("t", "d", parameters, noop)
            self.assertIn("a tool's parameters must be an object schema", str(caught.exception))

    def test_an_unrecordable_schema_is_refused(self) -> None:
        with self.assertRaises(SchemaError) as caught:
            Tool("t", "d", {"type": "object", "properties": {"a": {"enum": [float("nan")]}}}, noop)
        self.assertEqual(caught.exception.tool, "t")

    def test_the_schema_is_copied_and_compiled_so_later_edits_change_nothing(self) -> None:
        schema: Dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2]}}}
        t = Tool("t", "d", schema, noop)
        schema["properties"]["a"]["type"] = "string"
        schema["properties"]["a"]["enum"].append(3)
        schema["format"] = "unchecked"
        self.assertEqual(t.parameters, {"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2]}}})
        self.assertEqual(str(t.first_error({"a": 3}, "$.t")), "$.t.a: 3 is not one of [1,2]")
        self.assertEqual(
            [str(e) for e in t.errors({"a": "x"})],
            ["$.a: expected type integer, got str", '$.a: "x" is not one of [1,2]'],
        )
        self.assertIs(t.validator.schema, t.parameters)

    def test_a_hand_written_tool_gets_json_values(self) -> None:
        seen: List[Any] = []
        t = Tool("t", "d", {"type": "object"}, lambda **kw: seen.append(kw))
        t.invoke({"a": 2.0, "b": [1]})
        self.assertEqual(seen, [{"a": 2.0, "b": [1]}])


class TestFromFunction(unittest.TestCase):
    def test_the_decorator_makes_a_tool_with_the_generated_schema(self) -> None:
        self.assertIsInstance(forecast, Tool)
        self.assertEqual(forecast.name, "forecast")
        self.assertEqual(forecast.description, "Forecast the weather.")
        self.assertEqual(
            forecast.parameters,
            {
                "type": "object",
                "properties": {
                    "place": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}, "country": {"type": "string", "default": "FR"}},
                        "required": ["city"],
                        "additionalProperties": False,
                        "description": "Where.",
                    },
                    "days": {"type": "integer", "description": "How many days."},
                    "unit": {"type": "string", "enum": ["metric", "imperial"], "default": "metric"},
                    "window": {
                        "anyOf": [
                            {
                                "type": "array",
                                "prefixItems": [{"type": "integer"}, {"type": "integer"}],
                                "items": False,
                                "minItems": 2,
                            },
                            {"type": "null"},
                        ],
                        "default": None,
                    },
                },
                "required": ["place", "days"],
                "additionalProperties": False,
            },
        )
        self.assertEqual((add_numbers.name, add_numbers.description), ("add_numbers", "Add a list of numbers."))

    def test_invoke_converts_validated_arguments(self) -> None:
        arguments = {"place": {"city": "Lyon"}, "days": 3.0, "unit": "imperial", "window": [9.0, 17]}
        self.assertIsNone(forecast.first_error(arguments))
        self.assertEqual(
            forecast.invoke(arguments),
            {"city": "Lyon", "country": "FR", "days": 3, "unit": "imperial", "window": [9, 17]},
        )
        self.assertEqual(add_numbers.invoke({"values": [1, 2.5]}), 3.5)

    def test_hostile_arguments_make_bounded_errors(self) -> None:
        nested: Any = 1
        for _ in range(63):
            nested = [nested]
        big = "x" * (10 * 1024 * 1024)
        for arguments in (
            {"place": {"city": big, big: 1}, "days": nested},
            {"place": nested, "days": big, "unit": big, "window": [big, nested]},
            {big: big},
        ):
            errors = forecast.errors(arguments, "$.forecast")
            self.assertTrue(errors)
            self.assertLess(sum(len(str(e)) for e in errors), 2000)
            self.assertEqual(str(forecast.first_error(arguments, "$.forecast")), str(errors[0]))

    def test_the_tool_stays_callable_as_plain_python(self) -> None:
        self.assertEqual(forecast(Place("Nice"), 1)["city"], "Nice")
        self.assertEqual(add_numbers([1.0, 2.0]), 3.0)

    def test_from_function_and_tool_agree(self) -> None:
        def double(n: int) -> int:
            """Double n."""
            return 2 * n

        made = Tool.from_function(double)
        self.assertEqual(made, tool(double))
        self.assertEqual(
            made.manifest_entry(),
            {
                "name": "double",
                "description": "Double n.",
                "parameters": {
                    "type": "object",
                    "properties": {"n": {"type": "integer"}},
                    "required": ["n"],
                    "additionalProperties": False,
                },
            },
        )
        self.assertEqual(Tool.from_function(double, name="twice", description="x").name, "twice")
        with self.assertRaises(ToolDefinitionError):
            Tool.from_function(lambda n: n)  # no name that fits, no annotation

    def test_the_loop_validates_then_converts(self) -> None:
        folder = tempfile.mkdtemp(prefix="agentloop-test-")
        self.addCleanup(shutil.rmtree, folder, True)
        model = ScriptedModel(
            [
                ModelReply("", [ToolCall("forecast", {"place": {"city": "Lyon"}, "days": "3"})]),
                ModelReply("", [ToolCall("forecast", {"place": {"city": "Lyon", "zip": 1}, "days": 3})]),
                ModelReply("", [ToolCall("forecast", {"place": {"city": "Lyon"}, "days": 3.0, "unit": "imperial"})]),
                ModelReply("done"),
            ]
        )
        path = os.path.join(folder, "t.jsonl")
        run("weather", model, [forecast], transcript=path, max_steps=8, max_tokens=10_000)
        with open(path, encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle]
        results = [
            (r["payload"]["ok"], r["payload"].get("error", r["payload"].get("value")))
            for r in records
            if r["kind"] == "tool"
        ]
        self.assertEqual(
            results,
            [
                (False, "invalid arguments: $.forecast.days: expected type integer, got str"),
                (False, "invalid arguments: $.forecast.place: unexpected property 'zip'"),
                (True, {"city": "Lyon", "country": "FR", "days": 3, "unit": "imperial", "window": None}),
            ],
        )


class TestRegistry(unittest.TestCase):
    def test_manifest_is_sorted_by_name_and_holds_three_keys(self) -> None:
        registry = ToolRegistry([Tool("zeta", "z", SCHEMA, noop), Tool("alpha", "a", SCHEMA, noop)])
        registry.register(Tool("mid", "m", {"type": "object"}, noop))
        manifest = registry.manifest()
        self.assertEqual([t["name"] for t in manifest], ["alpha", "mid", "zeta"])
        self.assertEqual(manifest[0], {"name": "alpha", "description": "a", "parameters": SCHEMA})
        self.assertEqual(registry.manifest("agentloop"), manifest)
        self.assertEqual((len(registry), "mid" in registry, "nope" in registry), (3, True, False))
        self.assertEqual([t.name for t in registry], ["alpha", "mid", "zeta"])

    def test_an_unknown_style_is_refused(self) -> None:
        with self.assertRaises(ValueError) as caught:
            ToolRegistry().manifest("gemini")
        self.assertEqual(
            str(caught.exception), "unknown manifest style 'gemini' (have: agentloop, openai, responses, anthropic)"
        )

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
        registry.manifest("openai")[0]["function"]["parameters"]["type"] = "string"
        self.assertEqual(registry.manifest("anthropic")[0]["input_schema"]["type"], "object")

    def test_only_tools_register(self) -> None:
        with self.assertRaises(TypeError):
            ToolRegistry().register({"name": "add"})  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()


class TestReviewFindings(unittest.TestCase):
    def test_the_root_type_must_be_exactly_object(self) -> None:
        for declared in ("string", ["object", "null"], ["object"]):
            with self.subTest(declared), self.assertRaises(SchemaError):
                Tool("t", "d", {"type": declared}, noop)

    def test_a_dataclass_with_an_initvar_without_default_is_refused(self) -> None:
        from agentloop import tool

        with self.assertRaises(ToolDefinitionError) as caught:
            tool(_use_scaled)
        self.assertIn("InitVar scale without a default", str(caught.exception))

    def test_a_surrogate_pair_escape_in_a_pattern_is_one_character(self) -> None:
        from agentloop import validate

        schema = {"pattern": "^\\uD83D\\uDE00$"}
        self.assertEqual(validate(schema, "\U0001f600"), [])
        self.assertEqual(len(validate(schema, "x")), 1)


@dataclass
class Scaled:
    a: int
    scale: InitVar[int]

    def __post_init__(self, scale: int) -> None:
        self.a *= scale


def _use_scaled(p: Scaled) -> int:
    """Use a scaled value."""
    return p.a
