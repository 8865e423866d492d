"""errors.py's promise, kept: what agentloop raises on purpose is an AgentloopError.

Each public constructor and function is driven with bad input, and the
exception must be the specific agentloop class *and* the builtin that path
raised before the class existed (so ``except TypeError`` callers keep
working).  A scan of the source then fails on any new bare ``raise
TypeError(...)`` (or ValueError, KeyError, RuntimeError, LookupError) outside
the few private helpers whose exception is always caught inside the library.
"""

from __future__ import annotations

import ast
import asyncio
import os
import pickle
import unittest
from typing import Any, Callable, List, Tuple, Type

import agentloop
from agentloop import (
    AgentloopError,
    Approve,
    BadArgumentError,
    Deny,
    ExecutorClosedError,
    MCPConfigError,
    MessageError,
    ModelConfigError,
    ModelReply,
    Modify,
    NotPicklableError,
    ReplayError,
    RunConfigError,
    SchemaError,
    ScriptedModel,
    SigningKeyError,
    Terminate,
    Tool,
    ToolCall,
    ToolDefinitionError,
    ToolRegistry,
    TranscriptClosedError,
    TranscriptEmptyError,
    TranscriptWriter,
    UnknownChoiceError,
    UnrecordableError,
    Usage,
    ValidationError,
    WrongTypeError,
    canonical_bytes,
    compile_schema,
    run,
    run_async,
    verify_file,
)
from agentloop.loop.approval import decision_from_json
from agentloop.batch import RunSpec
from agentloop.canonical import format_number
from agentloop.batch.executors import RayExecutor
from agentloop.mcp import MCPHttp, MCPStdio, combine_tools
from agentloop.models import OpenAIChat, replay
from agentloop.signing import (
    cosignature_timestamp,
    cosigned_message,
    format_add_checkpoint_response,
    generate_key,
    parse_add_checkpoint_request,
    parse_note,
    parse_signer_key,
    parse_verifier_key,
    signer_from_key,
)
from agentloop.signing import ed25519
from agentloop.tools import anthropic_tool, openai_tool
from tests.support.helpers import TempDir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = {"type": "object", "properties": {}}
REPLACED = ("TypeError", "ValueError", "KeyError", "RuntimeError", "LookupError")

# Private helpers that raise a bare builtin on purpose, each always caught
# inside the library (the reason says where), never seen by a caller.
INTERNAL = {
    ("schema/document.py", "ecma_regex"): "Document and the validator turn it into a SchemaError",
    ("signing/witness.py", "_decimal"): "its two callers turn it into a MalformedNoteError",
    ("signing/note.py", "strict_b64decode"): "its callers turn it into MalformedNoteError/MalformedCheckpointError",
    ("models/base.py", "_scrub"): "scrub_reply turns it into a ModelResponseError",
    (
        "canonical.py",
        "_no_repeats",
    ): "a json.loads hook: strict_loads raises ValueError as json.loads does; its callers catch it",
    (
        "canonical.py",
        "_no_constant",
    ): "a json.loads hook: strict_loads raises ValueError as json.loads does; its callers catch it",
    ("canonical.py", "_not_json"): "json's default hook; _fast catches it and the exact encoder decides",
    ("loop/approval.py", "decision_from_json"): "raised inside its own try and re-raised as a ValidationError",
    ("loop/engine.py", "_drive"): "an invariant: the loop never suspends under the sync runner",
}


def _quiet(_: List[Any], __: List[Any]) -> ModelReply:
    return ModelReply("done")


class TestPublicPathsRaiseAgentloopErrors(TempDir):
    def check(self, cases: List[Tuple[str, Callable[[], Any], Type[AgentloopError], Tuple[type, ...]]]) -> None:
        for label, call, cls, builtins in cases:
            with self.subTest(label):
                with self.assertRaises(AgentloopError) as caught:
                    call()
                exc = caught.exception
                self.assertIsInstance(exc, cls)
                for builtin in builtins:
                    self.assertIsInstance(exc, builtin)
                self.assertTrue(str(exc))

    def test_messages(self) -> None:
        self.check(
            [
                ("ToolCall name", lambda: ToolCall(1), MessageError, (TypeError,)),  # type: ignore[arg-type]
                ("ToolCall arguments", lambda: ToolCall("x", [1]), MessageError, (TypeError,)),  # type: ignore[arg-type]
                ("ToolCall id", lambda: ToolCall("x", {}, 3), MessageError, (TypeError,)),  # type: ignore[arg-type]
                ("ToolCall arguments_error", lambda: ToolCall("x", {}, "", 3), MessageError, (TypeError,)),  # type: ignore[arg-type]
                ("Usage negative", lambda: Usage(-1, 0), MessageError, (TypeError,)),
                ("Usage bool", lambda: Usage(True, 0), MessageError, (TypeError,)),
                ("Usage cache sum", lambda: Usage(1, 0, 1, 1), MessageError, (ValueError,)),
                ("ModelReply text", lambda: ModelReply(3), MessageError, (TypeError,)),  # type: ignore[arg-type]
                ("ModelReply tool_calls str", lambda: ModelReply("", "ab"), MessageError, (TypeError,)),  # type: ignore[arg-type]
                ("ModelReply tool_calls entry", lambda: ModelReply("", [1]), MessageError, (TypeError,)),  # type: ignore[list-item]
                ("ModelReply usage", lambda: ModelReply("", (), 3), MessageError, (TypeError,)),  # type: ignore[arg-type]
                ("ModelReply truncated", lambda: ModelReply("", (), None, 1), MessageError, (TypeError,)),  # type: ignore[arg-type]
                ("Approve by", lambda: Approve(by=""), MessageError, (TypeError,)),
                ("Approve sha", lambda: Approve(by="a", arguments_sha256="XYZ"), MessageError, (ValueError,)),
                ("Approve signer", lambda: Approve(by="a", signer=object()), MessageError, (TypeError,)),
                ("Deny reason", lambda: Deny(3, by="a"), MessageError, (TypeError,)),  # type: ignore[arg-type]
                ("Modify arguments", lambda: Modify([1], by="a"), MessageError, (TypeError,)),  # type: ignore[arg-type]
                ("Terminate reason", lambda: Terminate(3, by="a"), MessageError, (TypeError,)),  # type: ignore[arg-type]
                ("decision_from_json shape", lambda: decision_from_json([]), ValidationError, (ValueError,)),
                (
                    "decision_from_json member",
                    lambda: decision_from_json({"decision": "approve", "by": "a", "x": 1}),
                    ValidationError,
                    (ValueError,),
                ),
                (
                    "decision_from_json kind",
                    lambda: decision_from_json({"decision": "maybe"}),
                    ValidationError,
                    (ValueError,),
                ),
                (
                    "decision_from_json by",
                    lambda: decision_from_json({"decision": "approve", "by": ""}),
                    ValidationError,
                    (ValueError,),
                ),
                (
                    "decision_from_json modify",
                    lambda: decision_from_json({"decision": "modify", "by": "a"}),
                    ValidationError,
                    (ValueError,),
                ),
            ]
        )
        with self.assertRaises(MessageError) as caught:
            ToolCall(1)  # type: ignore[arg-type]
        self.assertEqual(
            (caught.exception.field, str(caught.exception)), ("ToolCall.name", "ToolCall.name must be a str, got int")
        )
        with self.assertRaises(ValidationError) as caught_v:
            decision_from_json({"decision": "deny", "by": "a"}, '$["c"]')
        self.assertEqual(str(caught_v.exception), "$[\"c\"]: a deny needs 'reason'")

    def test_scripted_model_and_tools(self) -> None:
        tool = Tool("t", "d", SCHEMA, lambda: 1)
        self.check(
            [
                ("ScriptedModel entry", lambda: ScriptedModel([1]), WrongTypeError, (TypeError,)),  # type: ignore[list-item]
                ("ScriptedModel not iterable", lambda: ScriptedModel(3), WrongTypeError, (TypeError,)),  # type: ignore[arg-type]
                ("ScriptedModel info", lambda: ScriptedModel([], info=3), RunConfigError, (ValueError,)),  # type: ignore[arg-type]
                ("Tool name", lambda: Tool(3, "d", SCHEMA, lambda: 1), ToolDefinitionError, (ValueError,)),  # type: ignore[arg-type]
                ("Tool fn", lambda: Tool("t", "d", SCHEMA, 3), ToolDefinitionError, (ValueError,)),  # type: ignore[arg-type]
                ("Tool schema", lambda: Tool("t", "d", {"type": "bogus"}, lambda: 1), SchemaError, (ValueError,)),
                ("@tool on a non-function", lambda: agentloop.tool(3), ToolDefinitionError, (ValueError,)),  # type: ignore[call-overload]
                ("ToolRegistry not iterable", lambda: ToolRegistry(3), WrongTypeError, (TypeError,)),  # type: ignore[arg-type]
                ("ToolRegistry entry", lambda: ToolRegistry([3]), WrongTypeError, (TypeError,)),  # type: ignore[list-item]
                ("register", lambda: ToolRegistry().register(3), WrongTypeError, (TypeError,)),  # type: ignore[arg-type]
                ("register twice", lambda: ToolRegistry([tool, tool]), agentloop.DuplicateToolError, (ValueError,)),
                (
                    "manifest style",
                    lambda: ToolRegistry().manifest("gemini"),
                    UnknownChoiceError,
                    (ValueError, BadArgumentError),
                ),
                (
                    "openai_tool field",
                    lambda: openai_tool({"name": 1, "description": "", "parameters": {}}),
                    WrongTypeError,
                    (TypeError,),
                ),
                ("openai_tool missing", lambda: openai_tool({"name": "x"}), WrongTypeError, (TypeError,)),
                ("openai_tool not a mapping", lambda: openai_tool([]), WrongTypeError, (TypeError,)),  # type: ignore[arg-type]
                (
                    "anthropic_tool field",
                    lambda: anthropic_tool({"name": "x", "description": 2, "parameters": {}}),
                    WrongTypeError,
                    (TypeError,),
                ),
                (
                    "anthropic_tool parameters",
                    lambda: anthropic_tool({"name": "x", "description": "", "parameters": 3}),
                    WrongTypeError,
                    (TypeError,),
                ),
                ("combine_tools", lambda: combine_tools([3]), WrongTypeError, (TypeError,)),  # type: ignore[list-item]
            ]
        )
        with self.assertRaises(WrongTypeError) as caught:
            openai_tool({"name": "x", "description": 2, "parameters": {}})
        self.assertEqual(str(caught.exception), "a manifest entry's description must be a str, got int")

    def test_schemas_and_canonical_form(self) -> None:
        validator = compile_schema({"type": "integer"})
        self.check(
            [
                ("compile_schema", lambda: compile_schema(3), SchemaError, (ValueError,)),
                ("check_schema", lambda: agentloop.check_schema({"pattern": "("}), SchemaError, (ValueError,)),
                ("validate schema", lambda: agentloop.validate({"type": 3}, 1), SchemaError, (ValueError,)),
                (
                    "validate limit",
                    lambda: agentloop.validate({"type": "integer"}, "x", limit=0),
                    BadArgumentError,
                    (ValueError,),
                ),
                ("Validator.errors limit 0", lambda: validator.errors(1, limit=0), BadArgumentError, (ValueError,)),
                (
                    "Validator.errors limit bool",
                    lambda: validator.errors(1, limit=True),
                    BadArgumentError,
                    (ValueError,),
                ),
                ("canonical_bytes NaN", lambda: canonical_bytes(float("nan")), UnrecordableError, (ValueError,)),
                ("canonical_bytes set", lambda: canonical_bytes({1}), UnrecordableError, (ValueError,)),
                ("format_number inf", lambda: format_number(float("inf")), UnrecordableError, (ValueError,)),
            ]
        )
        with self.assertRaises(BadArgumentError) as caught:
            validator.errors(1, limit=0)
        self.assertEqual(str(caught.exception), "limit must be a positive int, got 0")

    def test_transcripts(self) -> None:
        writer = TranscriptWriter(self.path("w.jsonl"))
        self.check(
            [
                ("checkpoint without records", lambda: writer.tree_head(), TranscriptEmptyError, (ValueError,)),
                (
                    "checkpoint file without records",
                    lambda: writer.checkpoint(self.path("c")),
                    TranscriptEmptyError,
                    (ValueError,),
                ),
                ("writer path type", lambda: TranscriptWriter(3), WrongTypeError, (TypeError,)),  # type: ignore[arg-type]
                (
                    "verify_file max_faults",
                    lambda: verify_file(self.path("w.jsonl"), max_faults=0),
                    BadArgumentError,
                    (ValueError,),
                ),
            ]
        )
        writer.append("task", {"task": "x"})
        writer.close()
        self.check(
            [
                ("append after close", lambda: writer.append("task", {}), TranscriptClosedError, (ValueError,)),
                (
                    "checkpoint after close",
                    lambda: writer.checkpoint(self.path("c")),
                    TranscriptClosedError,
                    (ValueError,),
                ),
            ]
        )
        with self.assertRaises(TranscriptClosedError) as caught:
            writer.append("task", {})
        self.assertEqual(caught.exception.path, self.path("w.jsonl"))

    def test_run_and_run_async(self) -> None:
        def go(**changes: Any) -> Any:
            arguments: dict = dict(transcript=self.path(), max_steps=1, max_tokens=100)  # type: ignore[type-arg]
            arguments.update(changes)
            model = arguments.pop("model", ScriptedModel([]))
            tools = arguments.pop("tools", [])
            return lambda: run(arguments.pop("task", "t"), model, tools, **arguments)

        self.check(
            [
                ("max_steps", go(max_steps=-1), RunConfigError, (ValueError,)),
                ("model", go(model=3), RunConfigError, (ValueError,)),
                ("task", go(task=3), RunConfigError, (ValueError,)),
                ("key without checkpoint", go(key=b"k" * 32), RunConfigError, (ValueError,)),
                ("tools not iterable", go(tools=3), WrongTypeError, (TypeError,)),
                ("tools entry", go(tools=[3]), WrongTypeError, (TypeError,)),
                ("transcript type", go(transcript=3), WrongTypeError, (TypeError,)),
                (
                    "run_async max_steps",
                    lambda: asyncio.run(
                        run_async("t", ScriptedModel([]), [], transcript=self.path(), max_steps=-1, max_tokens=1)
                    ),
                    RunConfigError,
                    (ValueError,),
                ),
                ("RunSpec name", lambda: RunSpec(3, "t", 1, 1), RunConfigError, (ValueError,)),  # type: ignore[arg-type]
                ("RunSpec option", lambda: RunSpec("n", "t", 1, 1, {"bogus": 1}), RunConfigError, (ValueError,)),
                ("RayExecutor after shutdown", self.closed_executor, ExecutorClosedError, (RuntimeError,)),
            ]
        )
        self.assertFalse(os.path.exists(self.path()))

    def closed_executor(self) -> Any:
        executor = RayExecutor()
        executor.shutdown()
        return executor.submit(print)

    def test_models_and_mcp(self) -> None:
        adapter = OpenAIChat(model="m", api_key="sk-" + "x" * 20, base_url="http://127.0.0.1:9/v1")
        run(
            "t", ScriptedModel([ModelReply("done")]), [], transcript=self.path("src.jsonl"), max_steps=1, max_tokens=100
        )
        self.check(
            [
                ("OpenAIChat model", lambda: OpenAIChat(model=3), ModelConfigError, (ValueError,)),  # type: ignore[arg-type]
                ("pickle an adapter holding its key", lambda: pickle.dumps(adapter), NotPicklableError, (TypeError,)),
                (
                    "replay bad tools",
                    lambda: replay(self.path("src.jsonl"), 3, transcript=self.path("r.jsonl")),  # type: ignore[arg-type]
                    WrongTypeError,
                    (TypeError,),
                ),
                (
                    "replay missing",
                    lambda: replay(self.path("none.jsonl"), [], transcript=self.path("r.jsonl")),
                    ReplayError,
                    (ValueError,),
                ),
                ("MCPStdio command", lambda: MCPStdio([], name="x"), MCPConfigError, (ValueError,)),
                ("MCPStdio timeout", lambda: MCPStdio(["x"], name="x", timeout=-1), MCPConfigError, (ValueError,)),
                ("MCPHttp url", lambda: MCPHttp("ftp://x", name="x"), MCPConfigError, (ValueError,)),
                (
                    "MCPHttp protocol",
                    lambda: MCPHttp("http://x", name="x", protocol="bogus"),
                    MCPConfigError,
                    (ValueError,),
                ),
            ]
        )

    def test_signing(self) -> None:
        skey, _ = generate_key("log.example", allow_slow_unsafe_signer=True)
        signer = signer_from_key(skey, allow_slow_unsafe_signer=True)
        self.check(
            [
                ("parse_signer_key", lambda: parse_signer_key("garbage"), SigningKeyError, (ValueError,)),
                ("parse_verifier_key", lambda: parse_verifier_key("garbage"), SigningKeyError, (ValueError,)),
                ("load_key", lambda: agentloop.load_key(self.path("no-key")), SigningKeyError, (ValueError,)),
                ("sign a str", lambda: signer.sign("text"), WrongTypeError, (TypeError,)),  # type: ignore[arg-type]
                ("ed25519 seed", lambda: ed25519.unsafe_public_key(b"short"), SigningKeyError, (ValueError,)),
                ("parse_note str", lambda: parse_note("text"), WrongTypeError, (TypeError,)),  # type: ignore[arg-type]
                ("parse_note", lambda: parse_note(b"x"), agentloop.MalformedNoteError, (ValueError,)),
                ("cosigned_message", lambda: cosigned_message(b"x", -1), BadArgumentError, (ValueError,)),
                ("cosigned_message bool", lambda: cosigned_message(b"x", True), BadArgumentError, (ValueError,)),
                ("cosignature_timestamp", lambda: cosignature_timestamp(b"abc"), BadArgumentError, (ValueError,)),
                (
                    "format_add_checkpoint_response",
                    lambda: format_add_checkpoint_response([]),
                    BadArgumentError,
                    (ValueError,),
                ),
                (
                    "parse_add_checkpoint_request str",
                    lambda: parse_add_checkpoint_request("x"),
                    WrongTypeError,
                    (TypeError,),
                ),  # type: ignore[arg-type]
                (
                    "parse_checkpoint",
                    lambda: agentloop.parse_checkpoint(b"x"),
                    agentloop.MalformedCheckpointError,
                    (ValueError,),
                ),
                ("parse_proof", lambda: agentloop.parse_proof("x"), agentloop.ProofError, (ValueError,)),
            ]
        )


class TestNoBareBuiltinRaise(unittest.TestCase):
    """A bare ``raise TypeError(...)`` in a public path breaks the promise: the scan finds it."""

    def test_only_internal_helpers_raise_bare_builtins(self) -> None:
        package = os.path.join(ROOT, "agentloop")
        found = set()
        scanned = 0
        for folder, _, names in os.walk(package):
            for name in sorted(names):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                scanned += 1
                with open(path, encoding="utf-8") as handle:
                    tree = ast.parse(handle.read(), path)
                where = os.path.relpath(path, package).replace(os.sep, "/")
                for function in ast.walk(tree):
                    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        continue
                    for node in ast.walk(function):
                        if isinstance(node, ast.Raise) and node.exc is not None:
                            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                            if isinstance(target, ast.Name) and target.id in REPLACED:
                                found.add((where, function.name))
        self.assertGreater(scanned, 50)
        unexpected = sorted(found - set(INTERNAL))
        self.assertEqual(unexpected, [], "raise an AgentloopError subclass that also inherits the builtin")
        self.assertEqual(sorted(set(INTERNAL) - found), [], "a helper listed as INTERNAL no longer raises: drop it")


if __name__ == "__main__":
    unittest.main()
