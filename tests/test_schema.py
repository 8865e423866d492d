"""Tests of agentloop.schema: data-driven vectors, hostile input, the 2020-12 suite."""

from __future__ import annotations

import json
import random
import time
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional

from agentloop.errors import SchemaError, ValidationError
from agentloop.schema import ANNOTATIONS, KNOWN_KEYWORDS, _json_equal, check_schema, validate

VECTORS = Path(__file__).resolve().parent / "vectors" / "schema"
CONFORMANCE = Path(__file__).resolve().parents[1].parent / "shared" / "conformance"
SUITE = CONFORMANCE / "json-schema-test-suite" / "tests" / "draft2020-12"


def _load(name: str) -> List[Dict[str, Any]]:
    with open(str(VECTORS / name), encoding="utf-8") as handle:
        data = json.load(handle)
    assert isinstance(data, list)
    return data


def _verdict(schema: Any, instance: Any, path: str = "$") -> Optional[ValidationError]:
    try:
        validate(schema, instance, path)
    except ValidationError as exc:
        return exc
    return None


def _nested(depth: int, leaf: Any = None) -> Any:
    value: Any = [] if leaf is None else leaf
    for _ in range(depth - 1):
        value = [value]
    return value


class VectorTests(unittest.TestCase):
    def test_cases(self) -> None:
        cases = _load("cases.json")
        count = 0
        for case in cases:
            check_schema(case["schema"])
            for test in case["tests"]:
                count += 1
                with self.subTest(case=case["description"], test=test["description"]):
                    error = _verdict(case["schema"], test["data"])
                    self.assertEqual(error is None, test["valid"], str(error))
                    if "error" in test:
                        self.assertFalse(test["valid"])
                        self.assertEqual(str(error), test["error"])
                        assert error is not None
                        self.assertEqual(str(error), "%s: %s" % (error.path, error.reason))
        self.assertGreater(count, 0, "no schema cases found")
        self.assertGreater(len(cases), 0)

    def test_every_enforced_keyword_has_cases(self) -> None:
        used = set()
        for case in _load("cases.json"):
            used.update(case["schema"])
            for sub in case["schema"].get("properties", {}).values():
                used.update(sub)
        self.assertLessEqual(KNOWN_KEYWORDS | ANNOTATIONS, used)

    def test_refused(self) -> None:
        refused = _load("refused.json")
        self.assertGreater(len(refused), 0, "no refused schemas found")
        for case in refused:
            with self.subTest(case=case["description"]):
                with self.assertRaises(SchemaError) as caught:
                    check_schema(case["schema"])
                self.assertEqual(str(caught.exception), case["error"])
                self.assertIsNone(caught.exception.tool)


class SchemaErrorTests(unittest.TestCase):
    def test_fields_and_tool(self) -> None:
        with self.assertRaises(SchemaError) as caught:
            check_schema({"properties": {"a": {"format": "email"}}}, tool="add")
        error = caught.exception
        self.assertEqual(error.path, "$.properties.a")
        self.assertEqual(error.reason, "unsupported keyword 'format'")
        self.assertEqual(error.tool, "add")
        self.assertEqual(str(error), "tool 'add': schema $.properties.a: unsupported keyword 'format'")
        self.assertIsInstance(error, ValueError)

    def _reason(self, schema: object) -> str:
        with self.assertRaises(SchemaError) as caught:
            check_schema(schema)
        return str(caught.exception)

    def test_non_string_keys(self) -> None:
        self.assertEqual(self._reason({1: {}}), "schema $: schema keys must be strings, got int 1")
        self.assertEqual(self._reason({"properties": {None: {}}}),
                         "schema $: properties keys must be strings, got None None")

    def test_non_json_keyword_values(self) -> None:
        nan, inf = float("nan"), float("inf")
        self.assertEqual(self._reason({"const": nan}),
                         "schema $: const is not a JSON value: nan is not a JSON number")
        self.assertEqual(self._reason({"enum": [1, (1, 2)]}),
                         "schema $: enum[1] is not a JSON value: a tuple is not a JSON value")
        self.assertEqual(self._reason({"enum": [{1: 2}]}),
                         "schema $: enum[0] is not a JSON value: object key 1 is not a string")
        self.assertEqual(self._reason({"const": _nested(65)}),
                         "schema $: const is not a JSON value: nesting deeper than 64 levels")
        self.assertEqual(self._reason({"minimum": nan}), "schema $: minimum must be a number, got NaN")
        self.assertEqual(self._reason({"maximum": -inf}),
                         "schema $: maximum must be a number, got -Infinity")
        self.assertEqual(self._reason({"maxLength": inf}),
                         "schema $: maxLength must be a non-negative integer, got Infinity")
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

    def test_keyword_sets(self) -> None:
        self.assertEqual(KNOWN_KEYWORDS & ANNOTATIONS, frozenset())
        self.assertIn("type", KNOWN_KEYWORDS)
        self.assertIn("$schema", ANNOTATIONS)
        for keyword in ("format", "oneOf", "$ref", "not", "allOf", "multipleOf", "prefixItems"):
            self.assertNotIn(keyword, KNOWN_KEYWORDS | ANNOTATIONS)


class ValidateTests(unittest.TestCase):
    TOOL = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"], "additionalProperties": False}

    def test_path_prefix(self) -> None:
        check_schema(self.TOOL)
        self.assertIsNone(_verdict(self.TOOL, {"a": 1, "b": 2}, "$.add"))
        cases = [
            ({"a": "1", "b": 2}, "$.add.a", "expected type integer, got str"),
            ({"a": 1}, "$.add", "missing required property 'b'"),
            ({"a": 1, "b": 2, "c": 3}, "$.add", "unexpected property 'c'"),
        ]
        for instance, path, reason in cases:
            error = _verdict(self.TOOL, instance, "$.add")
            assert error is not None
            self.assertEqual((error.path, error.reason), (path, reason))
            self.assertEqual(str(error), "%s: %s" % (path, reason))

    def test_json_equal(self) -> None:
        equal = [(1, 1.0), (0, -0.0), ([1, {"a": None}], [1.0, {"a": None}]),
                 ({"a": 1, "b": 2}, {"b": 2.0, "a": 1}), ("x", "x"), (None, None), (False, False)]
        unequal = [(True, 1), (False, 0), ([True], [1]), ({"a": False}, {"a": 0}), (None, False),
                   ([1], [1, 1]), ({"a": 1}, {"b": 1}), ("1", 1), ([], {}), (1, 1.5)]
        for a, b in equal:
            self.assertTrue(_json_equal(a, b) and _json_equal(b, a), (a, b))
        for a, b in unequal:
            self.assertFalse(_json_equal(a, b) or _json_equal(b, a), (a, b))
        deep = _nested(5000, 1)
        self.assertTrue(_json_equal(deep, _nested(5000, 1)))
        self.assertFalse(_json_equal(deep, _nested(5000, 2)))

    def test_deep_instances(self) -> None:
        arrays = {"type": "array", "items": {"type": "array"}}
        check_schema(arrays)
        self.assertIsNone(_verdict(arrays, _nested(60)))
        chain: Dict[str, Any] = {"type": "array"}
        for _ in range(59):
            chain = {"type": "array", "items": chain}
        check_schema(chain)
        self.assertIsNone(_verdict(chain, _nested(60)))
        error = _verdict(chain, _nested(59, "x"))
        assert error is not None
        self.assertEqual(error.path, "$" + "[0]" * 58)
        # Deeper than the caller's limit, and equality against it: still no RecursionError.
        very_deep = _nested(20000)
        self.assertIsNone(_verdict(arrays, very_deep))
        for schema in ({"const": [[1]]}, {"enum": [[[]], 1]}, {"anyOf": [{"const": 1}]}):
            error = _verdict(schema, very_deep)
            self.assertIsInstance(error, ValidationError)

    def test_large_string(self) -> None:
        big = "x" * (10 * 1024 * 1024)
        started = time.monotonic()
        error = _verdict({"maxLength": 5}, big)
        self.assertEqual(str(error), "$: string of length 10485760 is longer than maxLength 5")
        error = _verdict({"pattern": "^y"}, big)
        self.assertEqual(str(error), '$: "%s... does not match pattern "^y"' % ("x" * 56))
        error = _verdict({"enum": ["y"]}, big)
        self.assertEqual(str(error), '$: "%s... is not one of ["y"]' % ("x" * 56))
        self.assertLess(time.monotonic() - started, 5.0)

    def test_unrecordable_values_in_messages(self) -> None:
        cases = [
            ({"const": 1}, 2**60, "$: expected const 1, got 1152921504606846976"),
            ({"const": 1}, float("nan"), "$: expected const 1, got NaN"),
            ({"maximum": 1}, float("inf"), "$: Infinity is greater than maximum 1"),
            ({"enum": ["a"]}, "\ud800", '$: "\\ud800" is not one of ["a"]'),
            ({"const": 1}, 10**5000, "$: expected const 1, got <int of 16610 bits>"),
        ]
        for schema, instance, text in cases:
            check_schema(schema)
            self.assertEqual(str(_verdict(schema, instance)), text)
        self.assertIsNone(_verdict({"minimum": 1, "type": "number"}, float("nan")))

    def test_random_instances_raise_only_validation_error(self) -> None:
        rng = random.Random(20201212)
        scalars: List[Any] = [None, True, False, 0, 1, -1, 1.0, 2.5, 2**64, float("nan"),
                              float("inf"), "", "a", "\U0001F4A9", "\ud800", "odd key", "123\n"]

        def make(depth: int) -> Any:
            roll = rng.random()
            if depth > 6 or roll < 0.5:
                return rng.choice(scalars)
            if roll < 0.75:
                return [make(depth + 1) for _ in range(rng.randrange(4))]
            return {rng.choice(["a", "b", "c", "odd key", ""]): make(depth + 1)
                    for _ in range(rng.randrange(4))}

        schemas: List[Any] = [case["schema"] for case in _load("cases.json")]
        schemas.append({"type": "object", "properties": {"a": {"anyOf": [
            {"type": "array", "items": {"enum": [1, [2], {"a": None}]}},
            {"pattern": "^\\s*[a-z]+$", "minLength": 1}]}},
            "additionalProperties": {"const": {"b": [1, 2]}}})
        count = 0
        for schema in schemas:
            check_schema(schema)
            for _ in range(60):
                instance = make(0)
                count += 1
                try:
                    validate(schema, instance)
                except ValidationError:
                    pass
        self.assertGreater(count, 0)


@unittest.skipUnless(SUITE.is_dir(), "JSON-Schema-Test-Suite not present at %s" % SUITE)
class ConformanceTests(unittest.TestCase):
    """Every draft 2020-12 suite case whose schema check_schema accepts."""

    def test_suite(self) -> None:
        files = sorted(SUITE.glob("*.json"))
        self.assertGreater(len(files), 0, "no suite files found")
        accepted = refused = run = 0
        for path in files:
            with open(str(path), encoding="utf-8") as handle:
                groups = json.load(handle)
            for group in groups:
                try:
                    check_schema(group["schema"])
                except SchemaError:
                    refused += 1
                    continue
                accepted += 1
                for test in group["tests"]:
                    run += 1
                    with self.subTest(file=path.name, case=group["description"],
                                      test=test["description"]):
                        error = _verdict(group["schema"], test["data"])
                        self.assertEqual(error is None, test["valid"], str(error))
        self.assertGreater(run, 200)
        self.assertGreater(accepted, 50)
        self.assertGreater(refused, 0)


if __name__ == "__main__":
    unittest.main()
