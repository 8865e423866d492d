"""The validator against a naive reference checker, on random schemas and instances.

The reference below is written for obviousness, not speed: one recursive
function reading JSON Schema 2020-12 (Validation 6.x, Core 10.x) keyword by
keyword.  The properties: ``validate`` never raises on a schema that
``check_schema`` accepts, and it finds an error exactly when the reference
does.  Deterministic seeds; ``python3 -m tests.schema.test_validator_fuzz N`` runs N
cases from the command line.
"""

from __future__ import annotations

import random
import re
import sys
import unittest
from fractions import Fraction
from typing import Any, Dict, List

from agentloop.schema.validator import check_schema, validate

PATTERNS = ["^a", "a+", "[0-9]", "^[a-c]*$", "x|y", "^$", "b{2}"]
KEYS = ["a", "b", "c", "ab", "x1"]
WORDS = ["", "a", "b", "ab", "abc", "x", "y", "bb", "a1", "9", "xyz", "aab"]


# --- the reference ------------------------------------------------------------


def json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def has_type(value: Any, name: str) -> bool:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return {
        "null": value is None,
        "boolean": isinstance(value, bool),
        "number": number,
        "integer": number and float(value).is_integer(),
        "string": isinstance(value, str),
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
    }[name]


def reference(schema: Any, value: Any) -> bool:
    """Whether ``value`` is valid against ``schema`` (2020-12, the keywords generated here)."""
    if schema is True:
        return True
    if schema is False:
        return False
    s: Dict[str, Any] = schema
    if "type" in s:
        names = [s["type"]] if isinstance(s["type"], str) else s["type"]
        if not any(has_type(value, n) for n in names):
            return False
    if "enum" in s and not any(json_equal(value, e) for e in s["enum"]):
        return False
    if "const" in s and not json_equal(value, s["const"]):
        return False
    if "not" in s and reference(s["not"], value):
        return False
    if "allOf" in s and not all(reference(sub, value) for sub in s["allOf"]):
        return False
    if "anyOf" in s and not any(reference(sub, value) for sub in s["anyOf"]):
        return False
    if "oneOf" in s and sum(reference(sub, value) for sub in s["oneOf"]) != 1:
        return False
    if has_type(value, "number"):
        if "minimum" in s and value < s["minimum"]:
            return False
        if "maximum" in s and value > s["maximum"]:
            return False
        if "exclusiveMinimum" in s and value <= s["exclusiveMinimum"]:
            return False
        if "exclusiveMaximum" in s and value >= s["exclusiveMaximum"]:
            return False
        if "multipleOf" in s and (Fraction(repr(value)) / Fraction(repr(s["multipleOf"]))).denominator != 1:
            return False
    if isinstance(value, str):
        if "minLength" in s and len(value) < s["minLength"]:
            return False
        if "maxLength" in s and len(value) > s["maxLength"]:
            return False
        if "pattern" in s and re.search(s["pattern"], value) is None:
            return False
    if isinstance(value, list):
        if "minItems" in s and len(value) < s["minItems"]:
            return False
        if "maxItems" in s and len(value) > s["maxItems"]:
            return False
        if s.get("uniqueItems") is True:
            for i in range(len(value)):
                for j in range(i):
                    if json_equal(value[i], value[j]):
                        return False
        prefix = s.get("prefixItems", [])
        for item, sub in zip(value, prefix):
            if not reference(sub, item):
                return False
        if "items" in s and not all(reference(s["items"], item) for item in value[len(prefix) :]):
            return False
    if isinstance(value, dict):
        if "minProperties" in s and len(value) < s["minProperties"]:
            return False
        if "maxProperties" in s and len(value) > s["maxProperties"]:
            return False
        if any(name not in value for name in s.get("required", [])):
            return False
        for name, needed in s.get("dependentRequired", {}).items():
            if name in value and any(other not in value for other in needed):
                return False
        if "propertyNames" in s and not all(reference(s["propertyNames"], key) for key in value):
            return False
        properties = s.get("properties", {})
        patterns = s.get("patternProperties", {})
        for key, item in value.items():
            matched = False
            if key in properties:
                matched = True
                if not reference(properties[key], item):
                    return False
            for pattern, sub in patterns.items():
                if re.search(pattern, key):
                    matched = True
                    if not reference(sub, item):
                        return False
            if not matched and "additionalProperties" in s and not reference(s["additionalProperties"], item):
                return False
    return True


# --- generators -------------------------------------------------------------------


def random_instance(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth >= 3 or roll < 0.5:
        return rng.choice(
            [None, True, False, 0, 1, -1, 2, 3, 1.0, 2.5, -0.5, 0.0075, 10, 0.3, rng.choice(WORDS), rng.choice(WORDS)]
        )
    if roll < 0.75:
        return [random_instance(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(KEYS): random_instance(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def random_schema(rng: random.Random, depth: int = 0) -> Any:
    if rng.random() < 0.08:
        return rng.choice([True, False])
    schema: Dict[str, Any] = {}
    budget = rng.randint(1, 3)
    for _ in range(budget):
        keyword = rng.choice(
            [
                "type",
                "enum",
                "const",
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
                "multipleOf",
                "minLength",
                "maxLength",
                "pattern",
                "minItems",
                "maxItems",
                "uniqueItems",
                "items",
                "prefixItems",
                "properties",
                "required",
                "additionalProperties",
                "patternProperties",
                "minProperties",
                "maxProperties",
                "propertyNames",
                "dependentRequired",
                "anyOf",
                "allOf",
                "oneOf",
                "not",
            ]
        )
        deeper = depth < 2
        if keyword == "type":
            names = rng.sample(["null", "boolean", "object", "array", "number", "string", "integer"], rng.randint(1, 2))
            schema["type"] = names[0] if len(names) == 1 else names
        elif keyword == "enum":
            schema["enum"] = [random_instance(rng, 2) for _ in range(rng.randint(1, 3))]
        elif keyword == "const":
            schema["const"] = random_instance(rng, 2)
        elif keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            schema[keyword] = rng.choice([0, 1, 2, -1, 2.5, 0.5])
        elif keyword == "multipleOf":
            schema[keyword] = rng.choice([1, 2, 0.5, 0.0001, 0.25, 3])
        elif keyword in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
            schema[keyword] = rng.randint(0, 3)
        elif keyword == "pattern":
            schema[keyword] = rng.choice(PATTERNS)
        elif keyword == "uniqueItems":
            schema[keyword] = rng.choice([True, False])
        elif keyword == "required":
            schema[keyword] = rng.sample(KEYS, rng.randint(0, 2))
        elif keyword == "dependentRequired":
            schema[keyword] = {rng.choice(KEYS): rng.sample(KEYS, rng.randint(0, 2))}
        elif not deeper:
            continue
        elif keyword in ("items", "additionalProperties", "propertyNames", "not"):
            schema[keyword] = (
                random_schema(rng, depth + 1) if keyword != "propertyNames" else {"pattern": rng.choice(PATTERNS)}
            )
        elif keyword == "prefixItems":
            schema[keyword] = [random_schema(rng, depth + 1) for _ in range(rng.randint(1, 2))]
        elif keyword == "properties":
            schema[keyword] = {rng.choice(KEYS): random_schema(rng, depth + 1) for _ in range(rng.randint(1, 2))}
        elif keyword == "patternProperties":
            schema[keyword] = {rng.choice(["^a", "b", "[0-9]"]): random_schema(rng, depth + 1)}
        else:  # anyOf, allOf, oneOf
            schema[keyword] = [random_schema(rng, depth + 1) for _ in range(rng.randint(1, 3))]
    return schema


def run_cases(seed: int, count: int) -> List[str]:
    """Disagreements (and crashes) between ``validate`` and the reference."""
    rng = random.Random(seed)
    problems: List[str] = []
    for case in range(count):
        schema = random_schema(rng)
        check_schema(schema)  # every generated schema is enforceable
        for _ in range(5):
            instance = random_instance(rng)
            try:
                errors = validate(schema, instance)
            except Exception as exc:  # the property: validate never raises on an accepted schema
                problems.append(
                    "case %d: validate raised %s: %s; schema=%r instance=%r"
                    % (case, type(exc).__name__, exc, schema, instance)
                )
                continue
            if (not errors) != reference(schema, instance):
                problems.append(
                    "case %d: validate says %s, reference %s; schema=%r instance=%r"
                    % (case, errors or "valid", reference(schema, instance), schema, instance)
                )
    return problems


class TestValidatorFuzz(unittest.TestCase):
    def test_agrees_with_the_naive_reference(self) -> None:
        problems = run_cases(seed=2020_12, count=2000)
        self.assertEqual(problems[:5], [])


if __name__ == "__main__":
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    found = run_cases(seed=int(sys.argv[2]) if len(sys.argv) > 2 else 1, count=cases)
    print("%d schemas x 5 instances, %d disagreements" % (cases, len(found)))
    for line in found[:10]:
        print(line)
    sys.exit(1 if found else 0)
