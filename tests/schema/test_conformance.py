"""The JSON-Schema-Test-Suite (draft 2020-12): every verdict right, or a documented refusal.

The suite is kept byte for byte in ``tests/vectors/json-schema-test-suite``
(MIT, commit 44401e0c046704b476ec9d2e2fccdaee618f259d, see its README), so
this runs everywhere; ``check.py``'s ``conformance`` leg runs the copy in
``../shared/conformance`` independently.
"""

from __future__ import annotations

import hashlib
import json
import unittest
from pathlib import Path
from typing import Any, Dict, List, Tuple

from agentloop.errors import SchemaError
from agentloop.schema.validator import compile_schema

HERE = Path(__file__).resolve().parent.parent
SUITE = HERE / "vectors" / "json-schema-test-suite" / "tests" / "draft2020-12"
SHARED = HERE.parents[1] / "shared" / "conformance" / "json-schema-test-suite" / "tests" / "draft2020-12"

UNICODE_PROPERTY = "Unicode property escapes (\\p{...}, \\P{...}) cannot be expressed in Python's re"

#: (file, group description) -> the text its SchemaError must contain.  No other group may be refused.
#: (The two groups that $ref the meta-schema pass since it is bundled: agentloop/schema/bundled.py.)
REFUSED: Dict[Tuple[str, str], str] = {
    ("pattern.json", "pattern with Unicode property escape requires unicode mode"): UNICODE_PROPERTY,
    ("patternProperties.json", "patternProperties with Unicode property escape"): UNICODE_PROPERTY,
}


def _groups() -> List[Tuple[str, Dict[str, Any]]]:
    out: List[Tuple[str, Dict[str, Any]]] = []
    for path in sorted(SUITE.glob("*.json")):
        with open(str(path), encoding="utf-8") as handle:
            out.extend((path.name, group) for group in json.load(handle))
    return out


class ConformanceTests(unittest.TestCase):
    def test_every_verdict_is_right_or_the_schema_is_refused_for_a_documented_reason(self) -> None:
        groups = _groups()
        self.assertEqual(len({name for name, _ in groups}), 31, "suite files missing")
        right = refused = 0
        for name, group in groups:
            reason = REFUSED.get((name, group["description"]))
            with self.subTest(file=name, group=group["description"]):
                try:
                    validator = compile_schema(group["schema"])
                except SchemaError as exc:
                    self.assertIsNotNone(reason, "refused without a documented reason: %s" % exc)
                    self.assertIn(str(reason), str(exc))
                    refused += len(group["tests"])
                    continue
                self.assertIsNone(reason, "expected a refusal")
                for test in group["tests"]:
                    with self.subTest(test=test["description"]):
                        errors = validator.errors(test["data"])
                        self.assertEqual(not errors, test["valid"], [str(e) for e in errors[:3]])
                        self.assertEqual(validator.is_valid(test["data"]), test["valid"])
                        self.assertEqual(validator.first_error(test["data"]) is None, test["valid"])
                        right += 1
        self.assertEqual((right, refused), (720, 5))

    @unittest.skipUnless(SHARED.is_dir(), "../shared/conformance is not present")
    def test_the_copy_is_identical_to_shared_conformance(self) -> None:
        ours = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in SUITE.glob("*.json")}
        theirs = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in SHARED.glob("*.json")}
        self.assertEqual(ours, theirs)


if __name__ == "__main__":
    unittest.main()
