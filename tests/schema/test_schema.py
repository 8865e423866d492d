"""Tests of agentloop.schema: data-driven vectors, error lists, hostile input."""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional, Set
from unittest import mock

from agentloop.errors import SchemaError, ValidationError
from agentloop.schema import bundled
from agentloop.schema.patterns import UnsupportedPattern, compile_pattern
from agentloop.schema.validator import (
    ANNOTATIONS,
    KNOWN_KEYWORDS,
    MAX_ERRORS,
    MAX_REF_DEPTH,
    Validator,
    _json_equal,
    check_schema,
    compile_schema,
    validate,
)

VECTORS = Path(__file__).resolve().parent.parent / "vectors" / "schema"


def _load(name: str) -> List[Dict[str, Any]]:
    with open(str(VECTORS / name), encoding="utf-8") as handle:
        data = json.load(handle)
    assert isinstance(data, list)
    return data


def _first(schema: Any, instance: Any, path: str = "$") -> Optional[ValidationError]:
    errors = validate(schema, instance, path)
    return errors[0] if errors else None


def _nested(depth: int, leaf: Any = None) -> Any:
    value: Any = [] if leaf is None else leaf
    for _ in range(depth - 1):
        value = [value]
    return value


def _keywords(schema: Any, into: Set[str]) -> None:
    """Every keyword used anywhere in ``schema`` (for the coverage test)."""
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        into.add(key)
        if key in ("properties", "patternProperties", "$defs", "dependentSchemas"):
            for sub in value.values():
                _keywords(sub, into)
        elif key in ("allOf", "anyOf", "oneOf", "prefixItems"):
            for sub in value:
                _keywords(sub, into)
        elif key not in ("enum", "const", "default", "examples", "required", "dependentRequired"):
            _keywords(value, into)


class _Str(str):
    """A str subclass: never taken as sure by a fast path."""


class _Dict(dict):  # type: ignore[type-arg]
    """A dict subclass: never taken as sure by a fast path."""


class VectorTests(unittest.TestCase):
    def test_cases(self) -> None:
        cases = _load("cases.json")
        count = 0
        for case in cases:
            validator = compile_schema(case["schema"])
            for test in case["tests"]:
                count += 1
                with self.subTest(case=case["description"], test=test["description"]):
                    errors = validator.errors(test["data"])
                    first = validator.first_error(test["data"])
                    self.assertEqual(not errors, test["valid"], [str(e) for e in errors])
                    self.assertEqual(validator.is_valid(test["data"]), test["valid"])
                    self.assertEqual(first is None, test["valid"])
                    if "error" in test:
                        self.assertFalse(test["valid"])
                        self.assertEqual(str(errors[0]), test["error"])
                        assert first is not None
                        self.assertEqual(str(first), test["error"])
                        self.assertEqual(str(first), "%s: %s" % (first.path, first.reason))
        self.assertGreater(count, 250, "schema cases missing")
        self.assertGreater(len(cases), 0)

    def test_every_keyword_has_cases(self) -> None:
        used: Set[str] = set()
        for case in _load("cases.json"):
            _keywords(case["schema"], used)
        self.assertEqual((KNOWN_KEYWORDS | ANNOTATIONS) - used, set())

    def test_patterns(self) -> None:
        cases = _load("patterns.json")
        self.assertGreater(len(cases), 20, "pattern cases missing")
        for case in cases:
            pattern = case["pattern"]
            with self.subTest(case=case["description"]):
                if "error" in case:
                    with self.assertRaises(UnsupportedPattern) as caught:
                        compile_pattern(pattern)
                    self.assertEqual(str(caught.exception), case["error"])
                    with self.assertRaises(SchemaError) as refused:
                        compile_schema({"pattern": pattern})
                    self.assertEqual(
                        str(refused.exception),
                        "schema $: pattern %s is not supported: %s" % (json.dumps(pattern), case["error"]),
                    )
                    continue
                validator = compile_schema({"type": "string", "pattern": pattern})
                by_keys = compile_schema({"patternProperties": {pattern: True}, "additionalProperties": False})
                for text in case["matches"]:
                    self.assertTrue(validator.is_valid(text), text)
                    self.assertTrue(by_keys.is_valid({text: 1}), text)
                for text in case["rejects"]:
                    self.assertFalse(validator.is_valid(text), text)
                    self.assertFalse(by_keys.is_valid({text: 1}), text)

    def test_refused(self) -> None:
        refused = _load("refused.json")
        self.assertGreater(len(refused), 50, "refused schemas missing")
        for case in refused:
            with self.subTest(case=case["description"]):
                with self.assertRaises(SchemaError) as caught:
                    compile_schema(case["schema"])
                self.assertEqual(str(caught.exception), case["error"])
                self.assertIsNone(caught.exception.tool)
                with self.assertRaises(SchemaError):
                    validate(case["schema"], None)
                with self.assertRaises(SchemaError):
                    check_schema(case["schema"])


class SchemaErrorTests(unittest.TestCase):
    def test_fields_and_tool(self) -> None:
        with self.assertRaises(SchemaError) as caught:
            check_schema({"properties": {"a": {"maxLength": "5"}}}, tool="add")
        error = caught.exception
        self.assertEqual(error.path, "$.properties.a")
        self.assertEqual(error.reason, 'maxLength must be a non-negative integer, got "5"')
        self.assertEqual(error.tool, "add")
        self.assertEqual(
            str(error), "tool 'add': schema $.properties.a: maxLength must be a non-negative integer, got \"5\""
        )
        self.assertIsInstance(error, ValueError)

    def _reason(self, schema: object, **options: Any) -> str:
        with self.assertRaises(SchemaError) as caught:
            compile_schema(schema, **options)
        return str(caught.exception)

    def test_non_string_keys(self) -> None:
        self.assertEqual(self._reason({1: {}}), "schema $: schema keys must be strings, got int 1")
        self.assertEqual(
            self._reason({"properties": {None: {}}}), "schema $: properties keys must be strings, got None None"
        )
        self.assertEqual(self._reason({"$defs": {2: {}}}), "schema $: $defs keys must be strings, got int 2")

    def test_non_json_keyword_values(self) -> None:
        nan, inf = float("nan"), float("inf")
        self.assertEqual(self._reason({"const": nan}), "schema $: const is not a JSON value: nan is not a JSON number")
        self.assertEqual(
            self._reason({"enum": [1, (1, 2)]}), "schema $: enum[1] is not a JSON value: a tuple is not a JSON value"
        )
        self.assertEqual(
            self._reason({"enum": [{1: 2}]}), "schema $: enum[0] is not a JSON value: object key 1 is not a string"
        )
        self.assertEqual(
            self._reason({"const": _nested(65)}), "schema $: const is not a JSON value: nesting deeper than 64 levels"
        )
        self.assertEqual(self._reason({"minimum": nan}), "schema $: minimum must be a number, got NaN")
        self.assertEqual(self._reason({"maximum": -inf}), "schema $: maximum must be a number, got -Infinity")
        self.assertEqual(
            self._reason({"maxLength": inf}), "schema $: maxLength must be a non-negative integer, got Infinity"
        )
        self.assertEqual(
            self._reason({"multipleOf": inf}), "schema $: multipleOf must be a number greater than 0, got Infinity"
        )
        check_schema({"const": _nested(64)})

    def test_deep_and_cyclic_schemas_are_refused(self) -> None:
        deep: Dict[str, Any] = {}
        for _ in range(200):
            deep = {"items": deep}
        self.assertTrue(self._reason(deep).endswith(": schema nested deeper than 64 levels"))
        cyclic: Dict[str, Any] = {"type": "array"}
        cyclic["items"] = cyclic
        self.assertTrue(self._reason(cyclic).endswith(": schema nested deeper than 64 levels"))
        shallow: Dict[str, Any] = {}
        for _ in range(63):
            shallow = {"items": shallow}
        check_schema(shallow)

    def test_format_assertion_is_opt_in_and_refuses_unknown_names(self) -> None:
        check_schema({"format": "hostname"})  # an annotation: any name
        self.assertEqual(
            self._reason({"properties": {"h": {"format": "hostname"}}}, assert_formats=True),
            'schema $.properties.h: format "hostname" cannot be asserted '
            "(assertable: date, date-time, email, ipv4, ipv6, time, uri, uuid)",
        )
        validator = compile_schema({"format": "email"}, assert_formats=True)
        self.assertTrue(validator.assert_formats)
        self.assertEqual([str(e) for e in validator.errors("nope")], ['$: "nope" is not a valid email'])
        self.assertEqual(validator.errors(5), [])
        self.assertEqual(validate({"format": "email"}, "nope"), [])
        self.assertEqual(len(validate({"format": "email"}, "nope", assert_formats=True)), 1)

    def test_keyword_sets(self) -> None:
        self.assertEqual(KNOWN_KEYWORDS & ANNOTATIONS, frozenset())
        for keyword in (
            "type",
            "format",
            "oneOf",
            "$ref",
            "not",
            "allOf",
            "multipleOf",
            "prefixItems",
            "uniqueItems",
            "unevaluatedProperties",
            "$defs",
            "$id",
            "$anchor",
        ):
            self.assertIn(keyword, KNOWN_KEYWORDS)
        self.assertEqual(
            ANNOTATIONS,
            frozenset(
                (
                    "$schema",
                    "title",
                    "description",
                    "default",
                    "deprecated",
                    "readOnly",
                    "writeOnly",
                    "examples",
                    "$comment",
                )
            ),
        )
        for keyword in (
            "contains",
            "minContains",
            "$dynamicRef",
            "$dynamicAnchor",
            "$vocabulary",
            "definitions",
            "contentMediaType",
        ):
            self.assertNotIn(keyword, KNOWN_KEYWORDS | ANNOTATIONS)


class ValidateTests(unittest.TestCase):
    TOOL = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }

    def test_path_prefix(self) -> None:
        validator = compile_schema(self.TOOL)
        self.assertEqual(validator.errors({"a": 1, "b": 2}, "$.add"), [])
        cases = [
            ({"a": "1", "b": 2}, "$.add.a", "expected type integer, got str"),
            ({"a": 1}, "$.add", "missing required property 'b'"),
            ({"a": 1, "b": 2, "c": 3}, "$.add", "unexpected property 'c'"),
        ]
        for instance, path, reason in cases:
            error = validator.first_error(instance, "$.add")
            assert error is not None
            self.assertEqual((error.path, error.reason), (path, reason))
            self.assertEqual(str(error), "%s: %s" % (path, reason))
            self.assertIsInstance(error, ValidationError)

    def test_errors_lists_every_problem_in_keyword_order(self) -> None:
        errors = validate(self.TOOL, {"a": "1", "c": 3, "d": None}, "$.add")
        self.assertEqual(
            [str(e) for e in errors],
            [
                "$.add: missing required property 'b'",
                "$.add.a: expected type integer, got str",
                "$.add: unexpected property 'c'",
                "$.add: unexpected property 'd'",
            ],
        )
        schema = {"type": "string", "minLength": 3, "pattern": "^a", "enum": ["abc"]}
        self.assertEqual(
            [e.reason for e in validate(schema, "b")],
            [
                '"b" is not one of ["abc"]',
                "string of length 1 is shorter than minLength 3",
                '"b" does not match pattern "^a"',
            ],
        )
        self.assertEqual(
            [e.reason for e in validate(schema, 5)], ["expected type string, got int", '5 is not one of ["abc"]']
        )

    def test_the_error_list_is_bounded(self) -> None:
        schema = {"items": {"type": "string"}}
        errors = validate(schema, list(range(10000)))
        self.assertEqual(len(errors), MAX_ERRORS)
        self.assertEqual(str(errors[-1]), "$[49]: expected type string, got int")
        self.assertEqual(len(validate(schema, list(range(10)), limit=3)), 3)
        for bad in (0, -1, True, 1.5):
            with self.assertRaises(ValueError):
                validate(schema, [], limit=bad)  # type: ignore[arg-type]

    def test_json_equal(self) -> None:
        equal = [
            (1, 1.0),
            (0, -0.0),
            ([1, {"a": None}], [1.0, {"a": None}]),
            ({"a": 1, "b": 2}, {"b": 2.0, "a": 1}),
            ("x", "x"),
            (None, None),
            (False, False),
        ]
        unequal = [
            (True, 1),
            (False, 0),
            ([True], [1]),
            ({"a": False}, {"a": 0}),
            (None, False),
            ([1], [1, 1]),
            ({"a": 1}, {"b": 1}),
            ("1", 1),
            ([], {}),
            (1, 1.5),
        ]
        for a, b in equal:
            self.assertTrue(_json_equal(a, b) and _json_equal(b, a), (a, b))
        for a, b in unequal:
            self.assertFalse(_json_equal(a, b) or _json_equal(b, a), (a, b))
        deep = _nested(5000, 1)
        self.assertTrue(_json_equal(deep, _nested(5000, 1)))
        self.assertFalse(_json_equal(deep, _nested(5000, 2)))

    def test_deep_instances(self) -> None:
        arrays = {"type": "array", "items": {"type": "array"}}
        self.assertEqual(validate(arrays, _nested(60)), [])
        chain: Dict[str, Any] = {"type": "array"}
        for _ in range(59):
            chain = {"type": "array", "items": chain}
        self.assertEqual(validate(chain, _nested(60)), [])
        error = _first(chain, _nested(59, "x"))
        assert error is not None
        self.assertEqual(error.path, "$" + "[0]" * 58)
        # Deeper than the caller's limit, and equality against it: still no RecursionError.
        very_deep = _nested(20000)
        self.assertEqual(validate(arrays, very_deep), [])
        for schema in ({"const": [[1]]}, {"enum": [[[]], 1]}, {"anyOf": [{"const": 1}]}, {"not": {"type": "array"}}):
            self.assertIsInstance(_first(schema, very_deep), ValidationError, schema)
        self.assertEqual(validate({"uniqueItems": True}, [very_deep, _nested(20000, 1)]), [])

    def test_recursive_schemas_stop_at_the_ref_depth_limit(self) -> None:
        tree = {"type": "array", "items": {"$ref": "#"}}
        self.assertEqual(validate(tree, _nested(64)), [])
        self.assertEqual(validate(tree, _nested(MAX_REF_DEPTH + 1)), [])
        errors = validate(tree, _nested(20000))
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0].reason, "more than %d nested $ref: too deep to validate" % MAX_REF_DEPTH)
        self.assertEqual(errors[0].path, "$" + "[0]" * (MAX_REF_DEPTH + 1))
        self.assertFalse(compile_schema(tree).is_valid(_nested(20000)))
        node = {"$defs": {"n": {"properties": {"next": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}
        deep: Dict[str, Any] = {}
        for _ in range(5000):
            deep = {"next": deep}
        self.assertEqual(len(validate(node, deep)), 1)

    def test_large_strings_make_small_errors(self) -> None:
        big = "x" * (10 * 1024 * 1024)
        started = time.monotonic()
        self.assertEqual(str(_first({"maxLength": 5}, big)), "$: string of length 10485760 is longer than maxLength 5")
        self.assertEqual(str(_first({"pattern": "^y"}, big)), '$: "%s... does not match pattern "^y"' % ("x" * 56))
        self.assertEqual(str(_first({"enum": ["y"]}, big)), '$: "%s... is not one of ["y"]' % ("x" * 56))
        hostile: List[Any] = [
            ({"additionalProperties": False}, {big: 1}),
            ({"propertyNames": {"maxLength": 1}}, {big: 1}),
            ({"properties": {"a": {"const": big}}}, {"a": big + "y"}),
            ({"anyOf": [{"const": big}, {"anyOf": [{"type": "string"}, {"enum": [big, [big]]}]}]}, [big, {big: big}]),
            ({"oneOf": [{"const": 1}, {"not": {}}]}, big),
            ({"uniqueItems": True}, [big, big]),
            ({"additionalProperties": {"type": "integer"}}, {big: big}),
            ({"not": {"type": "string"}}, big),
            ({"const": [big]}, [[big] * 1000]),
        ]
        for schema, instance in hostile:
            errors = validate(schema, instance)
            self.assertEqual(len(errors), 1, sorted(schema))
            self.assertLess(len(str(errors[0])), 1200, str(errors[0])[:300])
        self.assertEqual(
            str(validate({"additionalProperties": False}, {big: 1})[0]), "$: unexpected property '%s..." % ("x" * 56)
        )
        error = validate({"additionalProperties": {"type": "integer"}}, {big: 1.5})[0]
        self.assertEqual(error.path, '$["%s"...]' % ("x" * 60))
        self.assertLess(time.monotonic() - started, 10.0)

    def test_unrecordable_values_in_messages(self) -> None:
        cases = [
            ({"const": 1}, 2**60, "$: expected const 1, got 1152921504606846976"),
            ({"const": 1}, float("nan"), "$: expected const 1, got NaN"),
            ({"maximum": 1}, float("inf"), "$: Infinity is greater than maximum 1"),
            ({"enum": ["a"]}, "\ud800", '$: "\\ud800" is not one of ["a"]'),
            ({"const": 1}, 10**5000, "$: expected const 1, got <int of 16610 bits>"),
            ({"multipleOf": 2}, float("inf"), "$: Infinity is not a multiple of 2"),
            ({"const": 1}, (1, 2), "$: expected const 1, got [1,2]"),
            ({"const": 1}, {1, 2}, "$: expected const 1, got <set>"),
        ]
        for schema, instance, text in cases:
            self.assertEqual(str(_first(schema, instance)), text)
        self.assertIsNone(_first({"minimum": 1, "type": "number"}, float("nan")))

    def test_python_only_instances_never_raise(self) -> None:
        schema = {
            "patternProperties": {"^a": {}},
            "additionalProperties": False,
            "propertyNames": {"maxLength": 2},
            "unevaluatedProperties": False,
            "required": ["a"],
        }
        for instance in ({1: 2}, {(1, 2): 3}, {None: 1}, {"a": object()}, (1, 2), {1, 2}, b"x", 1j):
            errors = validate(schema, instance)
            self.assertIsInstance(errors, list)
            compile_schema({"uniqueItems": True, "enum": [1, [1]]}).errors([instance, instance])

    def test_items_and_open_additional_properties_count_as_evaluated(self) -> None:
        """Core 11.2-11.3: what ``items`` and ``additionalProperties: true`` evaluate is not unevaluated."""
        items = compile_schema({"prefixItems": [{}], "items": {"type": "integer"}, "unevaluatedItems": False})
        self.assertEqual(items.errors(["a", 1, 2]), [])
        self.assertEqual([str(e) for e in items.errors(["a", "b"])], ["$[1]: expected type integer, got str"])
        members = {"properties": {"a": {}}, "additionalProperties": True, "unevaluatedProperties": False}
        self.assertEqual(validate(members, {"a": 1, "b": 2}), [])
        self.assertEqual(validate({"properties": {"a": {}}, "unevaluatedProperties": False}, {"a": 1}), [])
        self.assertEqual(
            [str(e) for e in validate({"properties": {"a": {}}, "unevaluatedProperties": False}, {"a": 1, "b": 2})],
            ["$: unevaluated property 'b' is not allowed (unevaluatedProperties is false)"],
        )

    def test_multiple_of_is_exact(self) -> None:
        cents = compile_schema({"multipleOf": 0.01})
        for k in range(0, 100001, 7):
            value = round(k / 100, 2)  # 0.07, 19.99, ... as a JSON text would spell them
            self.assertTrue(cents.is_valid(value), value)
            self.assertFalse(cents.is_valid(value + 0.001), value)
        self.assertTrue(compile_schema({"multipleOf": 3}).is_valid(3 * 10**40))
        self.assertTrue(compile_schema({"multipleOf": 1e-08}).is_valid(12391239123))
        self.assertTrue(compile_schema({"multipleOf": 0.1}).is_valid(0.3))

    def test_ref_resolution(self) -> None:
        schema = {
            "$id": "https://example.com/root.json",
            "properties": {
                "a": {"$ref": "item.json"},
                "b": {"$ref": "https://example.com/root.json#/$defs/plain"},
                "c": {"$ref": "#/$defs/odd~1name%25"},
                "d": {"$ref": "urn:example:thing"},
            },
            "$defs": {
                "item": {"$id": "item.json", "type": "integer"},
                "plain": {"type": "string"},
                "odd/name%": {"type": "boolean"},
                "urn": {"$id": "urn:example:thing", "type": "null"},
            },
        }
        validator = compile_schema(schema)
        self.assertEqual(validator.errors({"a": 1, "b": "x", "c": True, "d": None}), [])
        self.assertEqual(
            [str(e) for e in validator.errors({"a": "1", "b": 2, "c": 0, "d": 1})],
            [
                "$.a: expected type integer, got str",
                "$.b: expected type string, got int",
                "$.c: expected type boolean, got int",
                "$.d: expected type null, got int",
            ],
        )

    def test_a_validator_is_safe_to_share_between_threads(self) -> None:
        schema = {"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}
        validator = compile_schema(schema)
        instances = [_nested(depth) for depth in range(1, 60)] + [[1], [[[1]]]]
        expected = [validator.is_valid(x) for x in instances]
        results: List[List[bool]] = []

        def work() -> None:
            for _ in range(20):
                results.append([validator.is_valid(x) for x in instances])

        threads = [threading.Thread(target=work) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(len(results), 120)
        self.assertTrue(all(result == expected for result in results))

    def test_validator_surface(self) -> None:
        schema = {"type": "integer"}
        validator = compile_schema(schema)
        self.assertIsInstance(validator, Validator)
        self.assertIs(validator.schema, schema)
        self.assertFalse(validator.assert_formats)
        self.assertTrue(compile_schema(True).is_valid(object()))
        self.assertEqual(
            str(compile_schema(False).first_error(1, "$.t")), "$.t: no value is allowed (the schema is false), got 1"
        )

    def test_the_fast_leaf_path_agrees_with_the_general_closures(self) -> None:
        # "allOf": [true] changes no verdict but turns the leaf fast path off.
        leaves: List[Dict[str, Any]] = [
            {"type": "string"},
            {"type": "string", "minLength": 2, "maxLength": 3.0},
            {"type": "string", "pattern": "^a", "enum": ["ab", 1, "b"]},
            {"type": "string", "format": "email"},
            {"type": "integer"},
            {"type": "integer", "minimum": -1, "exclusiveMaximum": 2.5},
            {"type": "number", "maximum": 1e300, "exclusiveMinimum": 0},
            {"type": "number", "minimum": 9007199254740993},
        ]
        values: List[Any] = [
            "",
            "a",
            "ab",
            "abc",
            "abcd",
            "b",
            "x@y",
            0,
            1,
            2,
            -1,
            -2,
            1.0,
            2.5,
            0.5,
            True,
            False,
            None,
            float("nan"),
            float("inf"),
            -float("inf"),
            10**400,
            9007199254740992.0,
            9007199254740993,
            [],
            {},
            "\ud800",
        ]
        for leaf in leaves:
            fast, general = compile_schema(leaf), compile_schema(dict(leaf, allOf=[True]))
            for value in values:
                with self.subTest(leaf=leaf, value=value):
                    self.assertEqual(fast.is_valid(value), general.is_valid(value))
                    self.assertEqual([str(e) for e in fast.errors(value)], [str(e) for e in general.errors(value)])

    def test_the_fast_object_path_agrees_with_the_general_closures(self) -> None:
        # "allOf": [true] changes no verdict but turns the object fast path off.
        text, count, number = {"type": "string", "description": "d"}, {"type": "integer"}, {"type": "number"}
        objects: List[Dict[str, Any]] = [
            {"type": "object", "properties": {"text": text}, "required": ["text"], "additionalProperties": False},
            {"type": "object", "properties": {"text": text, "n": count}, "required": ["n"]},
            {"type": "object", "properties": {"x": number, "b": {"type": "boolean"}, "z": {"type": "null"}}},
            {"type": "object", "properties": {}, "additionalProperties": True, "title": "t"},
            {"type": "object", "required": ["a", "b"], "additionalProperties": False},
            {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"n": count}},
        ]
        values: List[Any] = [
            {},
            {"text": "a"},
            {"text": 1},
            {"text": "a", "n": 1},
            {"text": "a", "n": True},
            {"text": "a", "n": 1.0},
            {"text": "a", "n": 1.5},
            {"n": 10**400},
            {"text": "a", "other": []},
            {"x": 1, "b": False, "z": None},
            {"x": 2.5, "b": 0, "z": None},
            {"x": float("nan"), "b": True},
            {"x": True},
            {"a": 1, "b": 2},
            {"a": 1},
            {"text": _Str("a")},
            _Dict(text="a"),
            {1: "a"},
            [],
            "text",
            None,
        ]
        for schema in objects:
            fast, general = compile_schema(schema), compile_schema(dict(schema, allOf=[True]))
            for value in values:
                with self.subTest(schema=schema, value=value):
                    self.assertEqual(fast.is_valid(value), general.is_valid(value))
                    self.assertEqual([str(e) for e in fast.errors(value)], [str(e) for e in general.errors(value)])
        nested = {"type": "object", "properties": {"inner": objects[0]}, "unevaluatedProperties": False}
        for value in ({"inner": {"text": "a"}}, {"inner": {"text": "a", "more": 1}}, {"inner": {}}, {"other": 1}):
            with self.subTest(nested=value):
                self.assertEqual(
                    compile_schema(nested).is_valid(value),
                    compile_schema(dict(nested, allOf=[True])).is_valid(value),
                )

    def test_random_instances_give_consistent_verdicts(self) -> None:
        rng = random.Random(20201212)
        scalars: List[Any] = [
            None,
            True,
            False,
            0,
            1,
            -1,
            1.0,
            2.5,
            2**64,
            float("nan"),
            float("inf"),
            "",
            "a",
            "\U0001f4a9",
            "\ud800",
            "odd key",
            "123\n",
        ]

        def make(depth: int) -> Any:
            roll = rng.random()
            if depth > 6 or roll < 0.5:
                return rng.choice(scalars)
            if roll < 0.75:
                return [make(depth + 1) for _ in range(rng.randrange(4))]
            return {rng.choice(["a", "b", "c", "odd key", ""]): make(depth + 1) for _ in range(rng.randrange(4))}

        schemas: List[Any] = [case["schema"] for case in _load("cases.json")]
        schemas.append(
            {
                "type": "object",
                "properties": {
                    "a": {
                        "anyOf": [
                            {"type": "array", "items": {"enum": [1, [2], {"a": None}]}},
                            {"pattern": "^\\s*[a-z]+$", "minLength": 1},
                        ]
                    }
                },
                "additionalProperties": {"const": {"b": [1, 2]}},
                "unevaluatedProperties": False,
            }
        )
        count = 0
        for schema in schemas:
            validator = compile_schema(schema)
            for _ in range(60):
                instance = make(0)
                count += 1
                errors = validator.errors(instance)
                self.assertEqual(validator.is_valid(instance), not errors)
                self.assertEqual(validator.first_error(instance) is None, not errors)
                if errors:
                    self.assertEqual(str(validator.first_error(instance)), str(errors[0]))
        self.assertGreater(count, 1000)


META = "https://json-schema.org/draft/2020-12/schema"
METASCHEMAS = Path(bundled.__file__).resolve().parent / "metaschemas"

#: file -> SHA-256 of the bundled copy (recompute: ``sha256sum agentloop/schema/metaschemas/*.json``;
#: the same digests are in ``metaschemas/PROVENANCE.md``).
META_DIGESTS = {
    "schema.json": "41da76f5afb7ce062d248f762463a92f7ca47e4e0f905b224ba6afeef91ded0f",
    "core.json": "c2d12a8e4dd11d336dfc83a3f663aa4c69f0b49b3beb094ffeb25b5316f4803d",
    "applicator.json": "c4a6e4147b91fef7fea6dc058cb1bf93402f7414b76578a8b16aaf1dad6aacef",
    "unevaluated.json": "2dbfbcb73994b670b0976492adee1fffb46c21682784d2f5a4ca561f9e2d0cb4",
    "validation.json": "7010a31e541f32d2be721e2de348df75c9b36876a3ed304877fc0abda1d37a58",
    "meta-data.json": "8f76d6e14f41b9b92ef933b708cdc5144c8b5268651ad11918485fb1754f1c76",
    "format-annotation.json": "abc775adfefd89d22358170d9bf93f4ebd2349563bbbedd60f02bef7c812bcc0",
    "format-assertion.json": "c52242b9a1bb786b26c3e82c7add428c31f9c96e575dce99e56ea5feaa6da20c",
    "content.json": "08343747764e4a5814262793cf4d652057a7913863c5950d43297e8e1fdac5b6",
}


class MetaSchemaTests(unittest.TestCase):
    """The bundled draft 2020-12 meta-schemas (agentloop/schema/bundled.py)."""

    def test_the_bundled_files_are_the_pinned_upstream_bytes(self) -> None:
        on_disk = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in METASCHEMAS.glob("*.json")}
        self.assertEqual(on_disk, META_DIGESTS)
        self.assertEqual(sorted(bundled.META_SCHEMAS.values()), sorted(META_DIGESTS))
        for uri, name in bundled.META_SCHEMAS.items():
            with self.subTest(uri=uri):
                document = bundled.load(uri)
                self.assertEqual(document["$id"], uri)
                self.assertEqual(document["$schema"], META)
                self.assertIs(bundled.load(uri), document)  # parsed once
        self.assertIsNone(bundled.load("https://json-schema.org/draft/2019-09/schema"))

    def test_every_schema_compile_schema_accepts_is_valid_against_the_meta_schema(self) -> None:
        # An oracle from the other side: the meta-schema is looser than agentloop
        # (it allows contains, definitions, ...), never stricter.
        meta = compile_schema({"$ref": META})
        schemas = [case["schema"] for case in _load("cases.json")]
        suite = VECTORS.parent / "json-schema-test-suite" / "tests" / "draft2020-12"
        for path in sorted(suite.glob("*.json")):
            with open(str(path), encoding="utf-8") as handle:
                schemas.extend(group["schema"] for group in json.load(handle))
        checked = 0
        for schema in schemas:
            try:
                check_schema(schema)
            except SchemaError:
                continue
            with self.subTest(schema=schema):
                self.assertEqual([str(e) for e in meta.errors(schema)], [])
                checked += 1
        self.assertGreater(checked, 250)

    def test_known_verdicts_of_the_meta_schema(self) -> None:
        meta = compile_schema({"$schema": META, "$ref": META})
        valid = [
            True,
            False,
            {},
            {"$defs": {"foo": {"type": "integer"}}},
            {"definitions": {"a": {"type": "string"}}},
            {"contains": {"minLength": 0}},
            {"deprecated": True, "readOnly": False, "examples": []},
            {"pattern": "("},  # format "regex" is an annotation in the meta-schema
            {"$vocabulary": {"https://example.com/v": True}},
        ]
        invalid = [
            (5, "$: expected type object or boolean, got int"),
            ({"minLength": -1}, "$.minLength: -1 is less than minimum 0"),
            ({"minLength": 1.5}, "$.minLength: expected type integer, got float"),
            (
                {"properties": {"a": {"items": {"minLength": -1}}}},
                "$.properties.a.items.minLength: -1 is less than minimum 0",
            ),
            ({"deprecated": 1}, "$.deprecated: expected type boolean, got int"),
            ({"$id": "a#b"}, '$["$id"]: "a#b" does not match pattern "^[^#]*#?$"'),
            ({"allOf": []}, "$.allOf: array of length 0 is shorter than minItems 1"),
            ({"required": ["a", "a"]}, "$.required: expected unique items, but [0] and [1] are equal"),
        ]
        for instance in valid:
            with self.subTest(instance=instance):
                self.assertEqual(meta.errors(instance), [])
        for instance, error in invalid:
            with self.subTest(instance=instance):
                self.assertFalse(meta.is_valid(instance))
                self.assertEqual(str(meta.first_error(instance)), error)
        # $dynamicRef "#meta" goes back to the whole meta-schema at every depth,
        # through definitions (a property of the top document) and $defs (meta/core).
        deep: Any = {"type": 7}
        for _ in range(20):
            deep = {"definitions": {"x": {"$defs": {"y": deep}}}}
        self.assertFalse(meta.is_valid(deep))
        self.assertEqual(
            str(meta.first_error({"definitions": {"x": {"$defs": {"y": {"type": 7}}}}})),
            '$.definitions.x["$defs"].y.type: does not match any schema in anyOf (0: 7 is not one of '
            '["array","boolean","integer","null","number","object","st...; 1: expected type array, got int)',
        )

    def test_nesting_past_the_ref_limit_is_an_error_not_a_crash(self) -> None:
        meta = compile_schema({"$ref": META})
        nested: Any = {}
        for _ in range(MAX_REF_DEPTH):
            nested = {"not": nested}
        self.assertFalse(meta.is_valid(nested))
        self.assertIn("nested $ref: too deep to validate", str(meta.first_error(nested)))

    def test_each_vocabulary_is_its_own_entry_point(self) -> None:
        core = compile_schema({"$ref": "https://json-schema.org/draft/2020-12/meta/core"})
        self.assertTrue(core.is_valid({"type": 5}))  # meta/core alone knows nothing of type...
        self.assertFalse(core.is_valid({"$defs": {"a": {"$id": 5}}}))  # ...and recurses into itself
        self.assertTrue(core.is_valid({"$defs": {"a": {"type": 5}}}))
        both = compile_schema({"allOf": [{"$ref": META}, {"$ref": "https://json-schema.org/draft/2020-12/meta/core"}]})
        self.assertFalse(both.is_valid({"$defs": {"a": {"type": 5}}}))  # the meta-schema's own scope
        count = compile_schema(
            {"$ref": "https://json-schema.org/draft/2020-12/meta/validation#/$defs/nonNegativeInteger"}
        )
        self.assertEqual([str(e) for e in count.errors(-1)], ["$: -1 is less than minimum 0"])
        self.assertTrue(compile_schema({"$ref": META + "#meta"}).is_valid({"type": "string"}))
        twice = compile_schema({"prefixItems": [{"$ref": META}, {"$ref": META + "#/allOf/0"}]})  # read once
        self.assertEqual(
            [str(e) for e in twice.errors([{"type": 1}, {"$id": 1}, {"type": 1}])],
            [
                '$[0].type: does not match any schema in anyOf (0: 1 is not one of ["array","boolean",'
                '"integer","null","number","object","st...; 1: expected type array, got int)',
                '$[1]["$id"]: expected type string, got int',
            ],
        )
        for uri in bundled.META_SCHEMAS:
            with self.subTest(uri=uri):
                self.assertTrue(compile_schema({"$ref": uri}).is_valid({}))
        # A schema of the user's own that takes the meta-schema's $id is the user's.
        own = compile_schema({"$id": META, "type": "integer", "properties": {"x": {"$ref": META}}})
        self.assertTrue(own.is_valid(1))
        self.assertFalse(own.is_valid({}))

    def test_format_asserts_in_the_users_schema_only(self) -> None:
        schema = {"$ref": META, "properties": {"$schema": {"format": "uri"}}}
        validator = compile_schema(schema, assert_formats=True)
        self.assertTrue(validator.is_valid({"$id": "not a uri"}))  # meta/core's format: an annotation
        self.assertEqual(
            [str(e) for e in validator.errors({"$schema": "not a uri"})],
            ['$["$schema"]: "not a uri" is not a valid uri'],
        )

    def _refusal(self, documents: Dict[str, Any], schema: Any) -> str:
        with mock.patch.object(bundled, "load", documents.get):
            with self.assertRaises(SchemaError) as caught:
                compile_schema(schema)
        return str(caught.exception)

    def test_anything_but_what_the_meta_schemas_use_is_refused(self) -> None:
        uri = "https://json-schema.org/draft/2020-12/schema"

        def doc(**extra: Any) -> Dict[str, Any]:
            return dict({"$schema": META, "$id": uri, "$dynamicAnchor": "meta"}, **extra)

        cases = [
            (
                doc(items={"$dynamicRef": "#/$defs/a"}),
                'schema %s.items: $dynamicRef "#/$defs/a" is not supported: only "#name" where this resource and '
                '"%s" both declare $dynamicAnchor name' % (uri, uri),
            ),
            (
                doc(items={"$dynamicRef": "#other"}),
                'schema %s.items: $dynamicRef "#other" is not supported: only "#name" where this resource and '
                '"%s" both declare $dynamicAnchor name' % (uri, uri),
            ),
            (
                doc(items={"$dynamicRef": "%s#meta" % uri}),
                'schema %s.items: $dynamicRef "%s#meta" is not supported: only "#name" where this resource and '
                '"%s" both declare $dynamicAnchor name' % (uri, uri, uri),
            ),
            (
                doc(**{"$vocabulary": {"https://example.com/vocab": True}}),
                "schema %s: $vocabulary must map draft 2020-12 vocabularies to booleans, got "
                '"https://example.com/vocab": true' % uri,
            ),
            (
                doc(**{"$vocabulary": {"https://json-schema.org/draft/2020-12/vocab/core": 1}}),
                "schema %s: $vocabulary must map draft 2020-12 vocabularies to booleans, got "
                '"https://json-schema.org/draft/2020-12/vocab/core": 1' % uri,
            ),
            (doc(**{"$vocabulary": []}), "schema %s: $vocabulary must be an object, got list" % uri),
            (
                doc(items={"$vocabulary": {}}),
                "schema %s.items: $vocabulary is only allowed at the root of a schema resource" % uri,
            ),
            (
                doc(items={"$dynamicAnchor": "meta"}),
                'schema %s.items: $dynamicAnchor "meta" is used twice in this resource' % uri,
            ),
            (
                doc(items={"$dynamicAnchor": "1x"}),
                'schema %s.items: $dynamicAnchor must be a name like [A-Za-z_][-A-Za-z0-9._]*, got "1x"' % uri,
            ),
            (doc(items={"$dynamicRef": 1}), "schema %s.items: $dynamicRef must be a string, got int" % uri),
            (
                dict(doc(), **{"$id": "https://example.com/x"}),
                'schema $: the bundled meta-schema "%s" does not declare $id "%s"' % (uri, uri),
            ),
        ]
        for document, error in cases:
            with self.subTest(error=error):
                self.assertEqual(self._refusal({uri: document}, {"$ref": uri}), error)
        # The entry resource must carry the $dynamicAnchor for the static resolution to be exact.
        core = "https://json-schema.org/draft/2020-12/meta/core"
        entry = {"$id": uri, "allOf": [{"$ref": "meta/core"}]}
        vocabulary = {"$id": core, "$dynamicAnchor": "meta", "items": {"$dynamicRef": "#meta"}}
        self.assertEqual(
            self._refusal({uri: entry, core: vocabulary}, {"$ref": uri}),
            'schema %s.items: $dynamicRef "#meta" is not supported: only "#name" where this resource '
            'and "%s" both declare $dynamicAnchor name' % (core, uri),
        )

    def test_a_bundled_file_that_cannot_be_read_is_a_schema_error(self) -> None:
        with mock.patch.dict(bundled._parsed, clear=True):
            for data, reason in (
                (None, "no loader can read metaschemas/schema.json"),
                (b"{", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
            ):
                with self.subTest(reason=reason), mock.patch("pkgutil.get_data", return_value=data):
                    with self.assertRaises(SchemaError) as caught:
                        compile_schema({"items": {"$ref": META}}, tool="t")
                    self.assertEqual(
                        str(caught.exception),
                        "tool 't': schema $.items: $ref \"%s\" names a bundled meta-schema that cannot "
                        "be read: %s" % (META, reason),
                    )
            with mock.patch("pkgutil.get_data", side_effect=FileNotFoundError("gone")):
                with self.assertRaises(SchemaError) as caught:
                    compile_schema({"$ref": META})
                self.assertTrue(str(caught.exception).endswith("cannot be read: gone"))
        self.assertTrue(compile_schema({"$ref": META}).is_valid({}))


if __name__ == "__main__":
    unittest.main()
