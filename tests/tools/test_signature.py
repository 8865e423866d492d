"""Schemas and converters from typed functions (agentloop.signature); the generated schemas are pinned."""

from __future__ import annotations

import enum
import inspect
import sys
import unittest
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Literal, Optional, Sequence, Set, Tuple, TypedDict, Union

from agentloop import ToolDefinitionError
from agentloop.tools.docstrings import parse_docstring
from agentloop.schema.validator import compile_schema
from agentloop.tools.typed import function_spec


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(TypedDict):
    x: int
    y: float


class Options(TypedDict, total=False):
    verbose: bool


@dataclass
class Size:
    """A size.

    Attributes:
        width: Width in pixels.
        height: Height in pixels.
    """

    width: int
    height: int = 10


@dataclass
class Window:
    title: str
    size: Size
    tags: List[str] = field(default_factory=list)


@dataclass
class Node:
    value: int
    children: List[Node] = field(default_factory=list)


class Opaque:
    pass


@dataclass
class HoldsOpaque:
    thing: Opaque


def _spec(annotation: Any, default: Any = inspect.Parameter.empty) -> Any:
    def fn(**kwargs: Any) -> Any:
        return kwargs

    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("x", inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)]
    )
    return function_spec(fn, name="t")


def _property(annotation: Any) -> Dict[str, Any]:
    schema = _spec(annotation).parameters
    prop = schema["properties"]["x"]
    assert isinstance(prop, dict)
    return prop


SIZE = {
    "type": "object",
    "properties": {
        "width": {"type": "integer", "description": "Width in pixels."},
        "height": {"type": "integer", "description": "Height in pixels.", "default": 10},
    },
    "required": ["width"],
    "additionalProperties": False,
}

#: annotation -> the schema it must produce (pinned).
PINNED: List[Tuple[str, Any, Dict[str, Any]]] = [
    ("int", int, {"type": "integer"}),
    ("float", float, {"type": "number"}),
    ("str", str, {"type": "string"}),
    ("bool", bool, {"type": "boolean"}),
    ("None", None, {"type": "null"}),
    ("Any", Any, {}),
    ("Optional[int]", Optional[int], {"type": ["integer", "null"]}),
    ("Union[int, str]", Union[int, str], {"type": ["integer", "string"]}),
    (
        "Union[int, List[str]]",
        Union[int, List[str]],
        {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "string"}}]},
    ),
    ("Optional[Color]", Optional[Color], {"anyOf": [{"type": "string", "enum": ["red", "green"]}, {"type": "null"}]}),
    ("List[int]", List[int], {"type": "array", "items": {"type": "integer"}}),
    ("List[Any]", List[Any], {"type": "array"}),
    ("list", list, {"type": "array"}),
    (
        "Tuple[int, str]",
        Tuple[int, str],
        {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False, "minItems": 2},
    ),
    ("Tuple[float, ...]", Tuple[float, ...], {"type": "array", "items": {"type": "number"}}),
    ("Tuple[()]", Tuple[()], {"type": "array", "maxItems": 0}),
    ("tuple", tuple, {"type": "array"}),
    ("Tuple", Tuple, {"type": "array"}),
    ("Dict[str, int]", Dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
    ("Dict[str, Any]", Dict[str, Any], {"type": "object"}),
    ("dict", dict, {"type": "object"}),
    ("Literal['a', 'b']", Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
    ("Literal[1, 'a', None]", Literal[1, "a", None], {"enum": [1, "a", None]}),
    ("Literal[True]", Literal[True], {"type": "boolean", "enum": [True]}),
    ("Color", Color, {"type": "string", "enum": ["red", "green"]}),
    ("Level", Level, {"type": "integer", "enum": [1, 2]}),
    (
        "Point",
        Point,
        {
            "type": "object",
            "properties": {"x": {"type": "integer"}, "y": {"type": "number"}},
            "required": ["x", "y"],
            "additionalProperties": False,
        },
    ),
    (
        "Options",
        Options,
        {"type": "object", "properties": {"verbose": {"type": "boolean"}}, "additionalProperties": False},
    ),
    ("Size", Size, SIZE),
    (
        "Window",
        Window,
        {
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "size": SIZE,
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["title", "size"],
            "additionalProperties": False,
        },
    ),
    (
        "List[Point]",
        List[Point],
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"type": "number"}},
                "required": ["x", "y"],
                "additionalProperties": False,
            },
        },
    ),
]


def weather(city: str, days: int = 3, units: Literal["metric", "imperial"] = "metric") -> Dict[str, Any]:
    """Get the weather forecast
    for a city.

    Args:
        city: The city name,
            as the user wrote it.
        days (int): How many days ahead.
        units: Unit system.

    Returns:
        The forecast.
    """
    return {"city": city, "days": days, "units": units}


def numpy_style(a: int, b: str) -> None:
    """Numpy style.

    Parameters
    ----------
    a : int
        The first.
    b : str
        The second,
        continued.
    """


def sphinx_style(a: int, b: str) -> None:
    """Sphinx style.

    :param a: The first.
    :param str b: The second,
        continued.
    :type a: int
    :returns: nothing.
    """


class PinnedSchemaTests(unittest.TestCase):
    def test_each_annotation_gives_its_pinned_schema(self) -> None:
        for label, annotation, expected in PINNED:
            with self.subTest(annotation=label):
                self.assertEqual(_property(annotation), expected)
                compile_schema(_spec(annotation).parameters)  # and the validator accepts it

    def test_a_whole_function(self) -> None:
        spec = function_spec(weather)
        self.assertEqual(spec.name, "weather")
        self.assertEqual(spec.description, "Get the weather forecast for a city.")
        self.assertEqual(
            spec.parameters,
            {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city name, as the user wrote it."},
                    "days": {"type": "integer", "description": "How many days ahead.", "default": 3},
                    "units": {
                        "type": "string",
                        "enum": ["metric", "imperial"],
                        "description": "Unit system.",
                        "default": "metric",
                    },
                },
                "required": ["city"],
                "additionalProperties": False,
            },
        )
        self.assertEqual(function_spec(weather, name="w", description="D").name, "w")
        self.assertEqual(function_spec(weather, name="w", description="D").description, "D")

    def test_docstring_styles(self) -> None:
        for fn, summary in ((numpy_style, "Numpy style."), (sphinx_style, "Sphinx style.")):
            spec = function_spec(fn)
            self.assertEqual(spec.description, summary)
            self.assertEqual(
                spec.parameters["properties"],
                {
                    "a": {"type": "integer", "description": "The first."},
                    "b": {"type": "string", "description": "The second, continued."},
                },
            )
        self.assertEqual(parse_docstring(None).params, {})
        self.assertEqual(parse_docstring("Only a line.").summary, "Only a line.")

    def test_recursive_types_go_to_defs(self) -> None:
        spec = _spec(Node)
        self.assertEqual(
            spec.parameters,
            {
                "type": "object",
                "properties": {"x": {"$ref": "#/$defs/Node"}},
                "required": ["x"],
                "additionalProperties": False,
                "$defs": {
                    "Node": {
                        "type": "object",
                        "properties": {
                            "value": {"type": "integer"},
                            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                        },
                        "required": ["value"],
                        "additionalProperties": False,
                    }
                },
            },
        )
        value = spec.convert({"x": {"value": 1.0, "children": [{"value": 2, "children": [{"value": 3.0}]}]}})["x"]
        self.assertEqual(value, Node(1, [Node(2, [Node(3)])]))
        self.assertIs(type(value.children[0].children[0].value), int)

    def test_defaults(self) -> None:
        self.assertEqual(
            _spec(Color, Color.GREEN).parameters["properties"]["x"],
            {"type": "string", "enum": ["red", "green"], "default": "green"},
        )
        self.assertEqual(_spec(Tuple[int, int], (1, 2)).parameters["properties"]["x"]["default"], [1, 2])
        self.assertEqual(_spec(Size, Size(3)).parameters["properties"]["x"]["default"], {"width": 3, "height": 10})
        self.assertEqual(
            _spec(Optional[int], None).parameters["properties"]["x"], {"type": ["integer", "null"], "default": None}
        )
        self.assertNotIn("required", _spec(int, 5).parameters)


class ConversionTests(unittest.TestCase):
    CASES: List[Tuple[str, Any, Any, Any]] = [
        ("int from an integral float", int, 2.0, 2),
        ("float from an int", float, 2, 2.0),
        ("a tuple from a list", Tuple[int, str], [1.0, "a"], (1, "a")),
        ("a variadic tuple", Tuple[float, ...], [1, 2], (1.0, 2.0)),
        ("an Enum member from its value", Color, "green", Color.GREEN),
        ("an IntEnum member", Level, 2.0, Level.HIGH),
        ("a TypedDict", Point, {"x": 1.0, "y": 2}, {"x": 1, "y": 2.0}),
        ("a dataclass", Size, {"width": 3.0}, Size(3, 10)),
        ("nested dataclasses", Window, {"title": "t", "size": {"width": 1, "height": 2.0}}, Window("t", Size(1, 2))),
        ("Optional None", Optional[Color], None, None),
        ("Optional value", Optional[Color], "red", Color.RED),
        ("a union picks the first member that fits", Union[int, Color], "red", Color.RED),
        ("a union with an int", Union[Color, int], 4.0, 4),
        ("a literal gives the literal", Literal[1, 2], 2.0, 2),
        ("lists convert item by item", List[Color], ["red", "green"], [Color.RED, Color.GREEN]),
        ("dicts convert value by value", Dict[str, Tuple[int]], {"a": [1.0]}, {"a": (1,)}),
        ("Any is left alone", Any, {"k": [1.5]}, {"k": [1.5]}),
    ]

    def test_conversions(self) -> None:
        for label, annotation, given, expected in self.CASES:
            with self.subTest(label):
                spec = _spec(annotation)
                self.assertTrue(compile_schema(spec.parameters).is_valid({"x": given}), given)
                got = spec.convert({"x": given})["x"]
                self.assertEqual(got, expected)
                self.assertIs(type(got), type(expected))

    def test_no_conversion_returns_the_same_dict(self) -> None:
        arguments = {"x": "s"}
        self.assertIs(_spec(str).convert(arguments), arguments)


class RefusalTests(unittest.TestCase):
    def _refused(self, fn: Callable[..., Any]) -> str:
        with self.assertRaises(ToolDefinitionError) as caught:
            function_spec(fn)
        return str(caught.exception)

    def test_what_cannot_be_expressed_is_refused_naming_the_parameter(self) -> None:
        def untyped(x):  # type: ignore[no-untyped-def]
            pass

        def star(*args: int) -> None:
            pass

        def stars(**kwargs: int) -> None:
            pass

        def opaque(thing: Opaque) -> None:
            pass

        def nested(w: List[HoldsOpaque]) -> None:
            pass

        def int_keys(m: Dict[int, str]) -> None:
            pass

        def a_set(s: Set[int]) -> None:
            pass

        def a_sequence(s: Sequence[int]) -> None:
            pass

        def bad_default(n: int = "x") -> None:  # type: ignore[assignment]
            pass

        def implicit_optional(n: int = None) -> None:  # type: ignore[assignment]
            pass

        def unresolvable(n: Missing) -> None:  # type: ignore[name-defined]  # noqa: F821
            pass

        supported = (
            "(supported: int, float, str, bool, None, Any, Optional, Union, List, Tuple, Dict[str, T], "
            "Literal, Enum, TypedDict, dataclasses)"
        )
        self.assertEqual(self._refused(untyped), "tool 'untyped': parameter 'x': has no annotation")
        self.assertEqual(
            self._refused(star), "tool 'star': parameter 'args': *args cannot be passed as a JSON object member"
        )
        self.assertEqual(
            self._refused(stars), "tool 'stars': parameter 'kwargs': **kwargs cannot be described by a schema"
        )
        self.assertEqual(
            self._refused(opaque),
            "tool 'opaque': parameter 'thing': class Opaque cannot be expressed as JSON Schema " + supported,
        )
        self.assertEqual(
            self._refused(nested),
            "tool 'nested': parameter 'w': field 'thing' of HoldsOpaque: "
            "class Opaque cannot be expressed as JSON Schema " + supported,
        )
        self.assertEqual(
            self._refused(int_keys),
            "tool 'int_keys': parameter 'm': Dict keys must be str (JSON object keys are strings), got int",
        )
        self.assertEqual(
            self._refused(a_set),
            "tool 'a_set': parameter 's': Set[int] is not supported "
            "(use List, Tuple, Dict, Optional, Union or Literal)",
        )
        self.assertEqual(
            self._refused(a_sequence),
            "tool 'a_sequence': parameter 's': Sequence[int] is not supported "
            "(use List, Tuple, Dict, Optional, Union or Literal)",
        )
        self.assertEqual(
            self._refused(bad_default),
            "tool 'bad_default': parameter 'n': default \"x\" does not fit "
            "the annotation: expected type integer, got str",
        )
        self.assertEqual(
            self._refused(implicit_optional),
            "tool 'implicit_optional': parameter 'n': default null "
            "does not fit the annotation: expected type integer, got None",
        )
        self.assertEqual(
            self._refused(unresolvable),
            "tool 'unresolvable': parameter 'n': cannot resolve the "
            "annotation 'Missing': NameError: name 'Missing' is not defined",
        )

    def test_positional_only_parameters_are_refused(self) -> None:
        namespace: Dict[str, Any] = {}
        exec(compile("def f(a: int, /) -> None: pass", "<test>", "exec", dont_inherit=True), namespace)
        self.assertEqual(
            self._refused(namespace["f"]),
            "tool 'f': parameter 'a': a positional-only parameter cannot be passed by name",
        )

    def test_enum_and_literal_values_must_be_json(self) -> None:
        class Shape(enum.Enum):
            BOX = (1, 2)

        with self.assertRaises(ToolDefinitionError) as caught:
            _spec(Shape)
        self.assertIn("Enum Shape member BOX has a value that is not a JSON scalar: (1, 2)", str(caught.exception))
        with self.assertRaises(ToolDefinitionError) as caught:
            _spec(Literal[b"x"])
        self.assertIn("Literal value b'x' is not a JSON scalar", str(caught.exception))


def _compile_function(source: str) -> Callable[..., Any]:
    """Build a function from source at runtime, so 3.8 never parses 3.9+/3.10+ syntax."""
    namespace: Dict[str, Any] = dict(globals())
    exec(compile(source, "<test>", "exec", dont_inherit=True), namespace)
    fn = namespace["f"]
    assert callable(fn)
    return fn  # type: ignore[no-any-return]


class ModernSyntaxTests(unittest.TestCase):
    @unittest.skipIf(sys.version_info < (3, 9), "builtin generics need Python 3.9")
    def test_builtin_generics(self) -> None:
        for header in (
            "def f(a: list[int], b: tuple[int, str], c: dict[str, float]) -> None: pass",
            "from __future__ import annotations\n"
            "def f(a: list[int], b: tuple[int, str], c: dict[str, float]) -> None: pass",
        ):
            spec = function_spec(_compile_function(header))
            self.assertEqual(
                spec.parameters["properties"],
                {
                    "a": {"type": "array", "items": {"type": "integer"}},
                    "b": {
                        "type": "array",
                        "prefixItems": [{"type": "integer"}, {"type": "string"}],
                        "items": False,
                        "minItems": 2,
                    },
                    "c": {"type": "object", "additionalProperties": {"type": "number"}},
                },
            )
            self.assertEqual(spec.convert({"b": [1.0, "x"]}), {"b": (1, "x")})

    @unittest.skipIf(sys.version_info < (3, 10), "X | Y needs Python 3.10")
    def test_union_operator(self) -> None:
        for header in (
            "def f(a: int | None, b: Color | list[int] = Color.RED) -> None: pass",
            "from __future__ import annotations\ndef f(a: int | None, b: Color | list[int] = Color.RED) -> None: pass",
        ):
            spec = function_spec(_compile_function(header))
            self.assertEqual(
                spec.parameters["properties"],
                {
                    "a": {"type": ["integer", "null"]},
                    "b": {
                        "anyOf": [
                            {"type": "string", "enum": ["red", "green"]},
                            {"type": "array", "items": {"type": "integer"}},
                        ],
                        "default": "red",
                    },
                },
            )
            self.assertEqual(spec.convert({"a": 1.0, "b": "green"}), {"a": 1, "b": Color.GREEN})


if __name__ == "__main__":
    unittest.main()


class TestRequiredMarksUnderStringAnnotations(unittest.TestCase):
    @unittest.skipIf(sys.version_info < (3, 11), "typing.Required/NotRequired are 3.11+")
    def test_required_and_not_required_are_read_from_string_annotations(self) -> None:
        from agentloop import tool

        from tests.support import typeddict_future

        parameters = tool(typeddict_future.f).parameters["properties"]
        self.assertEqual(parameters["x"]["required"], ["a"])
        self.assertEqual(parameters["y"]["required"], ["a"])
