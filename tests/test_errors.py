"""The exception tree is API: one base, specific subclasses, builtin parents."""

from __future__ import annotations

import unittest

import agentloop
from agentloop import errors


class TestHierarchy(unittest.TestCase):
    def test_every_exception_derives_from_the_base_and_its_builtin(self) -> None:
        expected = {
            "SchemaError": ValueError,
            "ValidationError": ValueError,
            "UnrecordableError": ValueError,
            "ToolDefinitionError": ValueError,
            "DuplicateToolError": ValueError,
            "RunConfigError": ValueError,
            "TranscriptExistsError": FileExistsError,
            "ScriptExhaustedError": LookupError,
        }
        self.assertEqual(set(errors.__all__), set(expected) | {"AgentloopError"})
        for name, builtin in expected.items():
            with self.subTest(name):
                cls = getattr(errors, name)
                self.assertTrue(issubclass(cls, errors.AgentloopError))
                self.assertTrue(issubclass(cls, builtin))
                self.assertIs(getattr(agentloop, name), cls)
        self.assertTrue(issubclass(errors.AgentloopError, Exception))

    def test_messages_are_formatted_from_fields(self) -> None:
        self.assertEqual(str(errors.ValidationError("$.add.a", "expected type integer, got str")),
                         "$.add.a: expected type integer, got str")
        e = errors.SchemaError("$.properties.a", "unsupported keyword 'format'", tool="add")
        self.assertEqual((e.path, e.reason, e.tool), ("$.properties.a", "unsupported keyword 'format'", "add"))
        self.assertEqual(str(errors.SchemaError("$", "x")), "schema $: x")
        self.assertEqual(str(errors.RunConfigError("max_steps", "must be a non-negative int, got -1")),
                         "max_steps: must be a non-negative int, got -1")
        self.assertEqual(errors.TranscriptExistsError("t.jsonl").path, "t.jsonl")
