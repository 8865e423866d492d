"""agentloop: a budgeted agent tool loop with a hash-chained, verifiable transcript.

Run a model (any callable ``(messages, manifest) -> ModelReply``) against a
task with tools, under hard step and token budgets, and get an append-only
JSONL transcript (format ``agentloop/1``: RFC 8785 lines, SHA-256 chained)
that anyone can verify afterwards with :func:`verify_file` or
``python3 -m agentloop verify``.
"""

from __future__ import annotations

from ._version import __version__

from .transcript.anchor import AnchoredResult, checkpoint_of, verify_checkpoint
from .canonical import MAX_DEPTH, canonical_bytes
from .transcript.checkpoint import Checkpoint, load_key, parse_checkpoint, read_checkpoint
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
    MCPError,
    MCPConfigError,
    MCPNameCollisionError,
    MCPSchemaError,
    MalformedManifestError,
    MessageError,
    WrongTypeError,
    BadArgumentError,
    UnknownChoiceError,
    NotPicklableError,
    TranscriptClosedError,
    TranscriptEmptyError,
    ExecutorClosedError,
)
from .messages import STOP_REASONS, Message, Model, ModelReply, RunResult, ToolCall, Usage
from .loop import (
    ApprovalRequest,
    Approve,
    Deny,
    Modify,
    RunOptions,
    Terminate,
    estimate_tokens,
    read_pending,
    resume,
    run,
    run_async,
    verify_approvals,
)
from .transcript.proofs import check_consistency, check_proof, parse_proof, prove_consistency, prove_inclusion
from .transcript.repair import repair
from .tools.providers import openai_strict_problems
from .schema.validator import Validator, check_schema, compile_schema, validate
from .report import render_report, write_report
from .models.scripted import ScriptedModel
from .tools.registry import Tool, ToolRegistry, tool
from .transcript.format import FAULT_KINDS, FORMAT, Fault, VerifyResult
from .transcript.writer import TranscriptWriter
from .transcript.verify import verify_file, verify_records


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
    "tool",
    "validate",
    "check_schema",
    "compile_schema",
    "Validator",
    "openai_strict_problems",
    # the transcript
    "FORMAT",
    "FAULT_KINDS",
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
    "MCPError",
    "MCPConfigError",
    "MCPNameCollisionError",
    "MCPSchemaError",
    "MalformedManifestError",
    "MessageError",
    "WrongTypeError",
    "BadArgumentError",
    "UnknownChoiceError",
    "NotPicklableError",
    "TranscriptClosedError",
    "TranscriptEmptyError",
    "ExecutorClosedError",
]
