"""agentloop: a budgeted agent tool loop with a hash-chained, verifiable transcript.

Run a model (any callable ``(messages, manifest) -> ModelReply``) against a
task with tools, under hard step and token budgets, and get an append-only
JSONL transcript (format ``agentloop/1``: RFC 8785 lines, SHA-256 chained)
that anyone can verify afterwards with :func:`verify_file` or
``python3 -m agentloop verify``.
"""

from __future__ import annotations

from . import _interrupt

_interrupt.guard()  # Ctrl-C while the command line is still importing: one line, exit 130 (agentloop._interrupt)

import importlib
from typing import TYPE_CHECKING, Any, Dict, List, Tuple

from ._version import __version__

from .errors import (
    AgentloopError,
    BadSignatureError,
    MalformedCheckpointError,
    ModelAPIError,
    ModelConfigError,
    ModelConnectionError,
    ModelResponseError,
    ProofError,
    RepairRefusedError,
    ReplayError,
    ReplayMismatchError,
    SigningKeyError,
    TranscriptLockedError,
    DuplicateToolError,
    RunConfigError,
    SchemaError,
    ScriptExhaustedError,
    ToolDefinitionError,
    TranscriptExistsError,
    UnrecordableError,
    ToolFailure,
    ValidationError,
    MalformedNoteError,
    WitnessStateError,
    MCPError,
    MCPConfigError,
    MCPNameCollisionError,
    MCPSchemaError,
    MalformedManifestError,
    MalformedCBORError,
    ProvenanceError,
    LedgerMismatchError,
    MessageError,
    WrongTypeError,
    BadArgumentError,
    UnknownChoiceError,
    NotPicklableError,
    TranscriptClosedError,
    TranscriptEmptyError,
    ExecutorClosedError,
    ExportError,
    CollectorError,
)

if TYPE_CHECKING:  # what a type checker and a reader see; at run time each name loads on first use (below)
    from .canonical import MAX_DEPTH, canonical_bytes
    from .loop import (
        ApprovalRequest,
        Approve,
        Deny,
        Modify,
        RunOptions,
        Terminate,
        estimate_tokens,
        read_pending,
        run,
        run_async,
        verify_approvals,
    )
    from .loop.resume import resume
    from .messages import STOP_REASONS, Message, Model, ModelReply, RunEnd, RunResult, StopReason, ToolCall, Usage
    from .models.scripted import ScriptedModel
    from .report import render_report, write_report
    from .schema.validator import Validator, check_schema, compile_schema, validate
    from .tools.providers import openai_strict_problems
    from .tools.context import CallContext, call_key
    from .tools.registry import Tool, ToolRegistry, tool
    from .transcript.anchor import AnchoredResult, checkpoint_of, verify_checkpoint
    from .transcript.checkpoint import Checkpoint, load_key, parse_checkpoint, read_checkpoint
    from .transcript.format import FAULT_KINDS, FORMAT, Fault, FaultKind, VerifyResult
    from .transcript.proofs import check_consistency, check_proof, parse_proof, prove_consistency, prove_inclusion
    from .transcript.repair import repair
    from .transcript.verify import verify_file, verify_records
    from .transcript.writer import TranscriptWriter

#: Where each name of the face lives (the imports above, one entry per line): a
#: name is imported the first time it is asked for (PEP 562), so ``import
#: agentloop`` -- and the command line, whose modules sit inside the package --
#: loads only the layers it uses.  ``tests/test_api.py`` keeps the two equal.
_HOMES: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    (".canonical", ("MAX_DEPTH", "canonical_bytes")),
    (
        ".loop",
        (
            "ApprovalRequest",
            "Approve",
            "Deny",
            "Modify",
            "RunOptions",
            "Terminate",
            "estimate_tokens",
            "read_pending",
            "run",
            "run_async",
            "verify_approvals",
        ),
    ),
    (".loop.resume", ("resume",)),
    (
        ".messages",
        ("STOP_REASONS", "Message", "Model", "ModelReply", "RunEnd", "RunResult", "StopReason", "ToolCall", "Usage"),
    ),
    (".models.scripted", ("ScriptedModel",)),
    (".report", ("render_report", "write_report")),
    (".schema.validator", ("Validator", "check_schema", "compile_schema", "validate")),
    (".tools.providers", ("openai_strict_problems",)),
    (".tools.context", ("CallContext", "call_key")),
    (".tools.registry", ("Tool", "ToolRegistry", "tool")),
    (".transcript.anchor", ("AnchoredResult", "checkpoint_of", "verify_checkpoint")),
    (".transcript.checkpoint", ("Checkpoint", "load_key", "parse_checkpoint", "read_checkpoint")),
    (".transcript.format", ("FAULT_KINDS", "FORMAT", "Fault", "FaultKind", "VerifyResult")),
    (".transcript.proofs", ("check_consistency", "check_proof", "parse_proof", "prove_consistency", "prove_inclusion")),
    (".transcript.repair", ("repair",)),
    (".transcript.verify", ("verify_file", "verify_records")),
    (".transcript.writer", ("TranscriptWriter",)),
)
_HOME: Dict[str, str] = {name: module for module, names in _HOMES for name in names}

if not TYPE_CHECKING:  # hidden from type checkers, which read the imports above instead

    def __getattr__(name: str) -> Any:
        """A name of the face, imported from its home on first use (PEP 562)."""
        home = _HOME.get(name)
        if home is None:
            raise AttributeError("module %r has no attribute %r" % (__name__, name))
        value = getattr(importlib.import_module(home, __name__), name)
        globals()[name] = value  # the next lookup does not come here
        return value

    def __dir__() -> List[str]:
        return sorted(set(globals()) | set(_HOME))


__all__ = [
    "__version__",
    # the loop
    "run",
    "run_async",
    "RunOptions",
    "RunResult",
    "ModelReply",
    "ToolCall",
    "Usage",
    "Model",
    "Message",
    "STOP_REASONS",
    "StopReason",
    "RunEnd",
    "estimate_tokens",
    "ScriptedModel",
    # a person in the loop
    "ApprovalRequest",
    "Approve",
    "Deny",
    "Modify",
    "Terminate",
    "resume",
    "read_pending",
    "verify_approvals",
    # tools
    "Tool",
    "ToolRegistry",
    "CallContext",
    "call_key",
    "tool",
    "validate",
    "check_schema",
    "compile_schema",
    "Validator",
    "openai_strict_problems",
    # the transcript
    "FORMAT",
    "FAULT_KINDS",
    "FaultKind",
    "Fault",
    "VerifyResult",
    "TranscriptWriter",
    "verify_file",
    "verify_records",
    "canonical_bytes",
    "MAX_DEPTH",
    # anchoring it (checkpoints, Merkle proofs, repair)
    "Checkpoint",
    "read_checkpoint",
    "parse_checkpoint",
    "load_key",
    "verify_checkpoint",
    "checkpoint_of",
    "AnchoredResult",
    "prove_inclusion",
    "prove_consistency",
    "parse_proof",
    "check_proof",
    "check_consistency",
    "repair",
    # reading it
    "render_report",
    "write_report",
    # errors
    "AgentloopError",
    "SchemaError",
    "ValidationError",
    "UnrecordableError",
    "ToolDefinitionError",
    "DuplicateToolError",
    "RunConfigError",
    "TranscriptExistsError",
    "ScriptExhaustedError",
    "TranscriptLockedError",
    "MalformedCheckpointError",
    "BadSignatureError",
    "SigningKeyError",
    "ProofError",
    "RepairRefusedError",
    "ModelConfigError",
    "ModelAPIError",
    "ModelConnectionError",
    "ModelResponseError",
    "ReplayError",
    "ReplayMismatchError",
    "ToolFailure",
    "MalformedNoteError",
    "WitnessStateError",
    "MCPError",
    "MCPConfigError",
    "MCPNameCollisionError",
    "MCPSchemaError",
    "MalformedManifestError",
    "MalformedCBORError",
    "ProvenanceError",
    "LedgerMismatchError",
    "MessageError",
    "WrongTypeError",
    "BadArgumentError",
    "UnknownChoiceError",
    "NotPicklableError",
    "TranscriptClosedError",
    "TranscriptEmptyError",
    "ExecutorClosedError",
    "ExportError",
    "CollectorError",
]
