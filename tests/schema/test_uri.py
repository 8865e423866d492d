"""RFC 3986 reference resolution and RFC 6901 pointers (agentloop.uri), from the RFCs' tables."""

from __future__ import annotations

import json
import unittest
from pathlib import Path
from typing import Any, Dict

from agentloop.schema.uri import parse_pointer, pointer_text, resolve, split_fragment

VECTORS = Path(__file__).resolve().parent.parent / "vectors" / "uri"


def _load(name: str) -> Dict[str, Any]:
    with open(str(VECTORS / name), encoding="utf-8") as handle:
        data = json.load(handle)
    assert isinstance(data, dict)
    return data


class UriTests(unittest.TestCase):
    def test_rfc3986_examples(self) -> None:
        doc = _load("rfc3986-examples.json")
        pairs = doc["normal"] + doc["abnormal"]
        self.assertEqual(len(pairs), 42)
        for reference, target in pairs:
            with self.subTest(reference=reference):
                self.assertEqual(resolve(doc["base"], reference), target)

    def test_non_hierarchical_bases(self) -> None:
        self.assertEqual(resolve("urn:uuid:deadbeef-1234", "#/$defs/a"), "urn:uuid:deadbeef-1234#/$defs/a")
        self.assertEqual(resolve("urn:example:weather?=op=map", "#x"), "urn:example:weather?=op=map#x")
        self.assertEqual(resolve("agentloop:/schema", "other.json"), "agentloop:/other.json")
        self.assertEqual(split_fragment("http://x/s.json#/a"), ("http://x/s.json", "/a"))
        self.assertEqual(split_fragment("http://x/s.json#"), ("http://x/s.json", ""))
        self.assertEqual(split_fragment("http://x/s.json"), ("http://x/s.json", None))

    def test_dot_segments_and_empty_base_paths(self) -> None:
        # RFC 3986 5.2.2: a reference with a scheme has its own path's dot
        # segments removed (5.2.4 rules A, B, C, D, E); 5.2.3: a base with an
        # authority and an empty path merges as "/" + the reference.
        cases = [
            ("x:../a/./b", "x:a/b"),  # A ("../", then "./" via "/./"), E
            ("x:./a", "x:a"),  # A ("./")
            ("http://h/a/b/..", "http://h/a/"),  # C ("/..", at the end)
            ("http://h/a/b/.", "http://h/a/b/"),  # B ("/.", at the end)
            ("x:..", "x:"),  # D
        ]
        for reference, target in cases:
            with self.subTest(reference=reference):
                self.assertEqual(resolve("http://base/p/q", reference), target)
        self.assertEqual(resolve("http://h", "g"), "http://h/g")
        self.assertEqual(resolve("http://h?q", "g/../k"), "http://h/k")

    def test_rfc6901_fragments(self) -> None:
        doc = _load("rfc6901-fragments.json")
        self.assertEqual(len(doc["cases"]), 12)
        for fragment, tokens in doc["cases"]:
            with self.subTest(fragment=fragment):
                self.assertEqual(parse_pointer(fragment), tuple(tokens))
        self.assertEqual(pointer_text(("a/b", "m~n", "")), "/a~1b/m~0n/")

    def test_not_pointers(self) -> None:
        for fragment in ("foo", "/a~2", "/a~", "/%ff%fe"):
            self.assertIsNone(parse_pointer(fragment), fragment)


if __name__ == "__main__":
    unittest.main()
