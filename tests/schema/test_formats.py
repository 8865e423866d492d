"""``format`` assertions (agentloop.formats), against the suite's optional format tests."""

from __future__ import annotations

import json
import unittest
from pathlib import Path
from typing import Any, Dict, List

from agentloop.schema.formats import FORMAT_CHECKS
from agentloop.schema.validator import compile_schema, validate

VECTORS = Path(__file__).resolve().parent.parent / "vectors" / "formats" / "suite-optional.json"


def _load() -> List[Dict[str, Any]]:
    with open(str(VECTORS), encoding="utf-8") as handle:
        data = json.load(handle)
    assert isinstance(data, list)
    return data


class FormatTests(unittest.TestCase):
    def test_suite_optional_format_vectors(self) -> None:
        groups = _load()
        self.assertEqual(sorted(g["format"] for g in groups), sorted(FORMAT_CHECKS))
        count = 0
        for group in groups:
            validator = compile_schema({"format": group["format"]}, assert_formats=True)
            for test in group["tests"]:
                count += 1
                with self.subTest(format=group["format"], test=test["description"]):
                    self.assertEqual(validator.is_valid(test["data"]), test["valid"])
                    self.assertEqual(FORMAT_CHECKS[group["format"]](test["data"]), test["valid"])
        self.assertGreater(count, 300, "format vectors missing")

    def test_non_strings_are_ignored(self) -> None:
        for name in FORMAT_CHECKS:
            validator = compile_schema({"format": name}, assert_formats=True)
            instances: List[Any] = [12, 13.7, {}, [], False, None]
            for instance in instances:
                self.assertTrue(validator.is_valid(instance), (name, instance))

    def test_messages(self) -> None:
        schema = {"type": "object", "properties": {"when": {"format": "date-time"}, "id": {"format": "uuid"}}}
        errors = validate(schema, {"when": "2024-02-30T00:00:00Z", "id": "x" * 100}, "$.t", assert_formats=True)
        self.assertEqual(
            [str(e) for e in errors],
            [
                '$.t.when: "2024-02-30T00:00:00Z" is not a valid date-time',
                '$.t.id: "%s... is not a valid uuid' % ("x" * 56),
            ],
        )
        self.assertEqual(validate(schema, {"when": "yesterday"}), [])  # an annotation unless asked

    def test_hostile_strings(self) -> None:
        big = "1" * (10 * 1024 * 1024)
        for name in FORMAT_CHECKS:
            validator = compile_schema({"format": name}, assert_formats=True)
            self.assertFalse(validator.is_valid(big), name)
            self.assertFalse(validator.is_valid("\ud800"), name)
            self.assertFalse(validator.is_valid(""), name)


if __name__ == "__main__":
    unittest.main()
