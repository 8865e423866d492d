"""The exception tree is API: one base, specific subclasses, builtin parents."""

from __future__ import annotations

import unittest

import agentloop
import agentloop.mcp
import agentloop.models
from agentloop import errors

# The provider adapters' and replay's errors, exported from agentloop.models.
MODEL_ERRORS = {
    "ModelConfigError": ValueError,
    "ModelAPIError": RuntimeError,
    "ModelConnectionError": ConnectionError,
    "ModelResponseError": ValueError,
    "ReplayError": ValueError,
    "ReplayMismatchError": ValueError,
}

# Checkpoints, Merkle proofs, locking and repair (agentloop.transcript).
INTEGRITY_ERRORS = {
    "TranscriptLockedError": BlockingIOError,
    "MalformedCheckpointError": ValueError,
    "BadSignatureError": ValueError,
    "SigningKeyError": ValueError,
    "ProofError": ValueError,
    "RepairRefusedError": ValueError,
}


# Signed notes (agentloop.signing), MCP servers (agentloop.mcp) and batch ledgers (agentloop.batch).
LATER_ERRORS = {
    "MalformedNoteError": ValueError,
    "MCPError": RuntimeError,
    "MCPConfigError": ValueError,
    "MCPNameCollisionError": ValueError,
    "MCPSchemaError": ValueError,
    "MalformedManifestError": ValueError,
    "MalformedCBORError": ValueError,
    "ProvenanceError": ValueError,
    "WitnessStateError": ValueError,  # issue 23
    "LedgerMismatchError": ValueError,  # a resumed batch against its earlier ledger (issue 19)
    # exports (issue 24)
    "ExportError": ValueError,
    "CollectorError": ConnectionError,
}

# Misuse of constructors and functions: each replaces a bare
# builtin raised before and still inherits it (MessageError both that were).
MISUSE_ERRORS = {
    "MessageError": (TypeError, ValueError),
    "WrongTypeError": (TypeError,),
    "BadArgumentError": (ValueError,),
    "UnknownChoiceError": (ValueError,),
    "NotPicklableError": (TypeError,),
    "TranscriptClosedError": (ValueError,),
    "TranscriptEmptyError": (ValueError,),
    "ExecutorClosedError": (RuntimeError,),
}


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
            "ToolFailure": RuntimeError,
        }
        self.assertEqual(
            set(errors.__all__),
            set(expected)
            | set(MODEL_ERRORS)
            | set(INTEGRITY_ERRORS)
            | set(LATER_ERRORS)
            | set(MISUSE_ERRORS)
            | {"AgentloopError"},
        )
        for name, builtin in expected.items():
            with self.subTest(name):
                cls = getattr(errors, name)
                self.assertTrue(issubclass(cls, errors.AgentloopError))
                self.assertTrue(issubclass(cls, builtin))
                self.assertIs(getattr(agentloop, name), cls)
        self.assertTrue(issubclass(errors.AgentloopError, Exception))
        for name, builtin in MODEL_ERRORS.items():
            with self.subTest(name):
                cls = getattr(errors, name)
                self.assertTrue(issubclass(cls, errors.AgentloopError))
                self.assertTrue(issubclass(cls, builtin))
                self.assertIs(getattr(agentloop.models, name), cls)
                self.assertIs(getattr(agentloop, name), cls)
        for name, builtin in dict(INTEGRITY_ERRORS, **LATER_ERRORS).items():
            with self.subTest(name):
                cls = getattr(errors, name)
                self.assertTrue(issubclass(cls, errors.AgentloopError))
                self.assertTrue(issubclass(cls, builtin))
                self.assertIs(getattr(agentloop, name), cls)
        for name, builtins in MISUSE_ERRORS.items():
            with self.subTest(name):
                cls = getattr(errors, name)
                self.assertTrue(issubclass(cls, errors.AgentloopError))
                for builtin in builtins:
                    self.assertTrue(issubclass(cls, builtin), builtin)
                self.assertIs(getattr(agentloop, name), cls)
                self.assertIn(name, agentloop.__all__)
        self.assertTrue(issubclass(errors.UnknownChoiceError, errors.BadArgumentError))
        self.assertIs(agentloop.mcp.Refused, errors.MCPSchemaError)  # the old name of a schema refused for one MCP tool
        self.assertIs(agentloop.mcp.MCPSchemaError, errors.MCPSchemaError)
        refused = errors.MCPSchemaError("x at /: y")
        self.assertEqual((refused.reason, str(refused)), ("x at /: y", "x at /: y"))

    def test_misuse_error_messages_are_formatted_from_fields(self) -> None:
        e = errors.MessageError("ToolCall.name", "must be a str, got int")
        self.assertEqual(
            (e.field, e.reason, str(e)),
            ("ToolCall.name", "must be a str, got int", "ToolCall.name must be a str, got int"),
        )
        e = errors.WrongTypeError("a note", "bytes", "text")
        self.assertEqual(
            (e.what, e.expected, e.got, str(e)), ("a note", "bytes", "str", "a note must be bytes, got str")
        )
        e = errors.BadArgumentError("limit", "must be a positive int, got 0")
        self.assertEqual(
            (e.parameter, e.reason, str(e)),
            ("limit", "must be a positive int, got 0", "limit must be a positive int, got 0"),
        )
        e = errors.UnknownChoiceError("manifest style", "gemini", ["agentloop", "openai"])
        self.assertEqual(
            (e.what, e.value, e.choices, e.parameter),
            ("manifest style", "gemini", ("agentloop", "openai"), "manifest style"),
        )
        self.assertEqual(str(e), "unknown manifest style 'gemini' (have: agentloop, openai)")
        e = errors.NotPicklableError("OpenAIChat", "its key would be written")
        self.assertEqual((e.owner, str(e)), ("OpenAIChat", "OpenAIChat is not pickled: its key would be written"))
        self.assertEqual(str(errors.TranscriptClosedError("t.jsonl")), "transcript t.jsonl is closed")
        self.assertEqual(str(errors.TranscriptEmptyError("t.jsonl")), "transcript t.jsonl has no record to checkpoint")
        self.assertEqual(errors.TranscriptEmptyError("t.jsonl").path, "t.jsonl")
        e = errors.ExecutorClosedError("RayExecutor")
        self.assertEqual((e.executor, str(e)), ("RayExecutor", "RayExecutor: cannot submit after shutdown"))

    def test_export_error_messages_are_formatted_from_fields(self) -> None:
        e = errors.ExportError("t.jsonl", "it does not verify")
        self.assertEqual(
            (e.what, e.reason, str(e)), ("t.jsonl", "it does not verify", "cannot export t.jsonl: it does not verify")
        )
        e = errors.CollectorError("127.0.0.1:4318", "HTTP 503")
        self.assertEqual(
            (e.host, e.reason, str(e)), ("127.0.0.1:4318", "HTTP 503", "collector at 127.0.0.1:4318: HTTP 503")
        )

    def test_integrity_error_messages_are_formatted_from_fields(self) -> None:
        self.assertEqual(str(errors.TranscriptLockedError("t.jsonl")), "transcript t.jsonl is locked by another writer")
        e = errors.MalformedCheckpointError(2, "size must be a decimal number")
        self.assertEqual(
            (e.line, e.reason, str(e)),
            (2, "size must be a decimal number", "checkpoint line 2: size must be a decimal number"),
        )
        self.assertEqual(str(errors.MalformedCheckpointError(None, "empty")), "checkpoint: empty")
        self.assertEqual(
            str(errors.BadSignatureError("the checkpoint is not signed")), "bad signature: the checkpoint is not signed"
        )
        self.assertEqual(str(errors.SigningKeyError("file k", "is 5 bytes")), "key file k: is 5 bytes")
        self.assertEqual(str(errors.ProofError("too few")), "too few")
        self.assertEqual(str(errors.RepairRefusedError("t.jsonl", "x")), "not repairing t.jsonl: x")

    def test_model_error_messages_are_formatted_from_fields(self) -> None:
        e = errors.ModelAPIError("openai", "api.openai.com", 429, "requests/rate_limit_exceeded: slow down", 3)
        self.assertEqual((e.provider, e.host, e.status, e.attempts), ("openai", "api.openai.com", 429, 3))
        self.assertEqual(
            str(e),
            "openai at api.openai.com: HTTP 429: requests/rate_limit_exceeded: slow down (gave up after 3 attempts)",
        )
        self.assertEqual(
            str(errors.ModelConnectionError("anthropic", "h:1", "connection failed: x")),
            "anthropic at h:1: connection failed: x",
        )
        self.assertEqual(
            str(errors.ModelResponseError("openai", "h", "$.choices", "expected list, got nothing")),
            "openai at h: unexpected response: $.choices: expected list, got nothing",
        )
        self.assertEqual(str(errors.ReplayMismatchError(2, "the tools differ")), "step 2: the tools differ")
        self.assertEqual(
            str(errors.ReplayError("t.jsonl", "it holds no records")), "cannot replay t.jsonl: it holds no records"
        )

    def test_messages_are_formatted_from_fields(self) -> None:
        self.assertEqual(
            str(errors.ValidationError("$.add.a", "expected type integer, got str")),
            "$.add.a: expected type integer, got str",
        )
        e = errors.SchemaError("$.properties.a", "unsupported keyword 'format'", tool="add")
        self.assertEqual((e.path, e.reason, e.tool), ("$.properties.a", "unsupported keyword 'format'", "add"))
        self.assertEqual(str(errors.SchemaError("$", "x")), "schema $: x")
        self.assertEqual(
            str(errors.RunConfigError("max_steps", "must be a non-negative int, got -1")),
            "max_steps: must be a non-negative int, got -1",
        )
        self.assertEqual(errors.TranscriptExistsError("t.jsonl").path, "t.jsonl")
