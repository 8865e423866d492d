"""The exception tree of agentloop.

Every exception the library raises on purpose derives from
:class:`AgentloopError` and also from the builtin it resembles, so callers can
catch either.  Each class formats its own message from structured fields, and
those fields stay available as attributes.

These exceptions are for *developer misuse* and for values that cannot be
recorded.  Model mistakes (an unknown tool, bad arguments, a tool raising) are
never raised out of :func:`agentloop.run`: the loop turns them into transcript
records the model sees.
"""

from __future__ import annotations

import json
from typing import Optional, Sequence, Tuple

__all__ = [
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
    "MCPError",
    "MCPConfigError",
    "MCPNameCollisionError",
    "MCPSchemaError",
    "MalformedNoteError",
    "MalformedManifestError",
    "MalformedCBORError",
    "ProvenanceError",
    "WitnessStateError",
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


class AgentloopError(Exception):
    """Base class of every exception agentloop raises on purpose."""


class SchemaError(AgentloopError, ValueError):
    """A tool's parameter schema uses something the validator cannot enforce.

    ``path`` is a JSONPath-like location inside the schema (``$`` is the schema
    itself, ``$.properties.a`` the schema of property ``a``); ``tool`` names the
    tool when the schema belongs to one.
    """

    def __init__(self, path: str, reason: str, tool: Optional[str] = None) -> None:
        self.path = path
        self.reason = reason
        self.tool = tool
        where = "schema %s" % path if tool is None else "tool %r: schema %s" % (tool, path)
        super().__init__("%s: %s" % (where, reason))


class ValidationError(AgentloopError, ValueError):
    """An instance does not satisfy a schema.

    ``path`` locates the offending value (``$.add.a``, ``$.t.items[2]``) and
    ``reason`` says what is wrong with it (``expected type integer, got str``).
    Inside the loop this never escapes: it becomes a failed ``tool`` record.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__("%s: %s" % (path, reason))


class UnrecordableError(AgentloopError, ValueError):
    """A value cannot be written into a transcript.

    Raised for anything outside I-JSON (RFC 7493) as used by RFC 8785: a
    non-JSON type, a non-string key, ``NaN`` or an infinity, an integer beyond
    +/-(2**53 - 1), a string with a lone surrogate, or nesting deeper than
    :data:`agentloop.canonical.MAX_DEPTH`.  ``path`` locates the value.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__("%s: %s" % (path, reason))


class ToolDefinitionError(AgentloopError, ValueError):
    """A :class:`agentloop.Tool` was built with a bad name, description or function."""

    def __init__(self, name: object, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__("tool %r: %s" % (name, reason))


class DuplicateToolError(AgentloopError, ValueError):
    """A second tool with an already registered name was registered.

    When either tool came from elsewhere (an MCP server), ``first`` and
    ``second`` describe both sides (``local tool 'add'``, ``tool 'add' of MCP
    server 'calc'``) and the message names them; otherwise they are ``None``.
    """

    def __init__(self, name: str, first: Optional[str] = None, second: Optional[str] = None) -> None:
        self.name = name
        self.first = first
        self.second = second
        if first is None or second is None:
            super().__init__("a tool named %r is already registered" % (name,))
        else:
            super().__init__("tool name %r is taken twice: %s and %s" % (name, first, second))


class RunConfigError(AgentloopError, ValueError):
    """:func:`agentloop.run` was called with a bad budget, sentinel or model."""

    def __init__(self, parameter: str, reason: str) -> None:
        self.parameter = parameter
        self.reason = reason
        super().__init__("%s: %s" % (parameter, reason))


class TranscriptExistsError(AgentloopError, FileExistsError):
    """The transcript path already exists and ``overwrite`` was not asked for.

    A transcript is evidence; agentloop never replaces one silently.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__("transcript %s already exists (pass overwrite=True to replace it)" % (path,))


class ScriptExhaustedError(AgentloopError, LookupError):
    """A :class:`agentloop.ScriptedModel` was asked for more turns than it holds."""

    def __init__(self, turn: int, available: int) -> None:
        self.turn = turn
        self.available = available
        super().__init__("the script has no reply for turn %d (it holds %d)" % (turn, available))


# --- checkpoints, Merkle proofs, one writer (agentloop.transcript) ----------


class TranscriptLockedError(AgentloopError, BlockingIOError):
    """Another writer holds the transcript's advisory lock (``fcntl.flock``).

    One file, one writer: a second :class:`agentloop.TranscriptWriter` (or
    ``agentloop repair``) on a file that a live writer holds is refused
    before it changes a byte.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__("transcript %s is locked by another writer" % (path,))


class MalformedCheckpointError(AgentloopError, ValueError):
    """A checkpoint's bytes break a rule of its format (``anchor_malformed``).

    ``line`` is the 1-based line of the checkpoint at fault (``None`` for
    the file as a whole) and ``reason`` the rule it breaks.
    """

    def __init__(self, line: Optional[int], reason: str) -> None:
        self.line = line
        self.reason = reason
        where = "checkpoint line %d" % (line,) if line is not None else "checkpoint"
        super().__init__("%s: %s" % (where, reason))


class BadSignatureError(AgentloopError, ValueError):
    """A checkpoint has no valid signature by the key given (``bad_signature``)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__("bad signature: %s" % (reason,))


class SigningKeyError(AgentloopError, ValueError):
    """A checkpoint signing key cannot be used: unreadable, unset or too short.

    ``source`` names where it was looked for (a file, an environment variable).
    """

    def __init__(self, source: str, reason: str) -> None:
        self.source = source
        self.reason = reason
        # "key NAME: ..." unless the source names a key already ("key name", "--key-file", "verifier key")
        named = source if "key" in source.replace("-", " ").split() else "key %s" % (source,)
        super().__init__("%s: %s" % (named, reason))


class ProofError(AgentloopError, ValueError):
    """A Merkle inclusion or consistency proof is malformed or does not verify."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class RepairRefusedError(AgentloopError, ValueError):
    """``repair`` will not touch the file: it has a fault other than a torn last line.

    Repair only ever removes an incomplete final fragment; anything else is
    evidence to look at, and is left as it is.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__("not repairing %s: %s" % (path, reason))


# --- provider adapters and replay (agentloop.models) ------------------------
# Raised by a model inside the loop, these become a ``model_error`` stop whose
# detail is their message; none of them ever holds an API key.


class ModelConfigError(AgentloopError, ValueError):
    """A provider adapter was built with a bad argument (no API key, a bad base URL, ...)."""

    def __init__(self, parameter: str, reason: str) -> None:
        self.parameter = parameter
        self.reason = reason
        super().__init__("%s: %s" % (parameter, reason))


def _attempts(attempts: int) -> str:
    return "" if attempts <= 1 else " (gave up after %d attempts)" % (attempts,)


class ModelAPIError(AgentloopError, RuntimeError):
    """The provider answered with an HTTP error status, after any retries.

    ``status`` is the HTTP status and ``message`` the provider's own error
    message (with its error type when the body names one).
    """

    def __init__(self, provider: str, host: str, status: int, message: str, attempts: int = 1) -> None:
        self.provider = provider
        self.host = host
        self.status = status
        self.message = message
        self.attempts = attempts
        super().__init__("%s at %s: HTTP %d: %s%s" % (provider, host, status, message, _attempts(attempts)))


class ModelConnectionError(AgentloopError, ConnectionError):
    """The provider could not be reached or did not answer in time, after any retries."""

    def __init__(self, provider: str, host: str, reason: str, attempts: int = 1) -> None:
        self.provider = provider
        self.host = host
        self.reason = reason
        self.attempts = attempts
        super().__init__("%s at %s: %s%s" % (provider, host, reason, _attempts(attempts)))


class ModelResponseError(AgentloopError, ValueError):
    """The provider answered with a body that is not the shape its API documents.

    ``path`` locates the problem in the response body (``$.choices[0].message``).
    """

    def __init__(self, provider: str, host: str, path: str, reason: str) -> None:
        self.provider = provider
        self.host = host
        self.path = path
        self.reason = reason
        super().__init__("%s at %s: unexpected response: %s: %s" % (provider, host, path, reason))


class ReplayError(AgentloopError, ValueError):
    """A transcript cannot be replayed: it does not verify, or holds no task record."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__("cannot replay %s: %s" % (path, reason))


class ReplayMismatchError(AgentloopError, ValueError):
    """At ``step`` the conversation a replayed model is asked to continue is not the recorded one."""

    def __init__(self, step: int, reason: str) -> None:
        self.step = step
        self.reason = reason
        super().__init__("step %d: %s" % (step, reason))


class ToolFailure(AgentloopError, RuntimeError):
    """Raised by a tool to fail *as data* with exactly this text.

    The loop records ``str(exc)`` verbatim as the tool record's ``error``
    (bounded like every error text), without the ``tool 'x' raised ...``
    prefix it puts before other exceptions.  MCP tools use it for a server's
    ``isError`` result; any tool may.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(text)


# --- tools from MCP servers (agentloop.mcp) ----------------------------------
# Raised before a run starts: once it has, MCP failures are ToolFailure data.
# None of them ever holds a header value, a token or an environment value.


class MCPError(AgentloopError, RuntimeError):
    """An MCP server could not be started, reached, handshaken or listed.

    ``server`` is the name the caller gave the server and ``reason`` says
    what went wrong (for a server that exited: its status and last stderr).
    """

    def __init__(self, server: str, reason: str) -> None:
        self.server = server
        self.reason = reason
        super().__init__("MCP server %r: %s" % (server, reason))


class MCPConfigError(AgentloopError, ValueError):
    """An MCP client was built or asked for tools with a bad argument."""

    def __init__(self, parameter: str, reason: str) -> None:
        self.parameter = parameter
        self.reason = reason
        super().__init__("%s: %s" % (parameter, reason))


class MCPNameCollisionError(DuplicateToolError):
    """Two tools, from MCP servers or local, would get the same agentloop name.

    ``first`` and ``second`` describe both sides (``tool 'search' of MCP
    server 'web'``, ``local tool 'search'``).  A :class:`DuplicateToolError`.
    """

    def __init__(self, name: str, first: str, second: str) -> None:
        super().__init__(name, first, second)


class MCPSchemaError(AgentloopError, ValueError):
    """An MCP tool's declared schema cannot be imported (:func:`agentloop.mcp.import_schema`).

    ``reason`` says where and why (``inputSchema at /properties/pair: ...``).
    The client leaves that one tool out and lists it, with the reason, in
    its description; ``agentloop.mcp.Refused`` is this class.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


# --- signed notes, keys, cosignatures (agentloop.signing) -------------------


class MalformedNoteError(MalformedCheckpointError):
    """A signed note (C2SP ``signed-note``) or a witness request breaks a rule of its format.

    A checkpoint is a signed note, so this is a
    :class:`MalformedCheckpointError` (``anchor_malformed``) too.  ``what``
    names the document (``note``, ``witness request``), ``line`` is its
    1-based line at fault (``None`` for the whole) and ``reason`` the rule.
    """

    def __init__(self, line: Optional[int], reason: str, what: str = "note") -> None:
        super().__init__(line, reason)
        self.what = what
        where = "%s line %d" % (what, line) if line is not None else what
        self.args = ("%s: %s" % (where, reason),)


# --- batch ledgers (agentloop.batch) -----------------------------------------


class MalformedManifestError(AgentloopError, ValueError):
    """A batch manifest (``agentloop-manifest/1`` ledger) breaks a rule of its format.

    ``line`` is the 1-based manifest line at fault (``None`` for the whole
    file) and ``reason`` the rule it breaks.
    """

    def __init__(self, line: Optional[int], reason: str) -> None:
        self.line = line
        self.reason = reason
        where = "manifest line %d" % (line,) if line is not None else "manifest"
        super().__init__("%s: %s" % (where, reason))


# --- provenance formats: CBOR, COSE, DSSE, in-toto ---------------------------


class MalformedCBORError(AgentloopError, ValueError):
    """Bytes are not one deterministically encoded CBOR data item (RFC 8949 section 4.2.1).

    ``offset`` is the byte at fault, counted from 0, and ``reason`` the rule
    it breaks (``not the shortest form of the argument``).
    """

    def __init__(self, offset: int, reason: str) -> None:
        self.offset = offset
        self.reason = reason
        super().__init__("CBOR byte %d: %s" % (offset, reason))


class ProvenanceError(AgentloopError, ValueError):
    """An attestation, a signed statement or a receipt is malformed, or does not match what it is about.

    ``what`` names the artefact and the place in it (``attestation
    $.subject[0].digest``, ``receipt protected header 395``) and ``reason``
    what is wrong.  A signature that does not verify is a
    :class:`BadSignatureError`; a Merkle proof that does not hold, a
    :class:`ProofError`.
    """

    def __init__(self, what: str, reason: str) -> None:
        self.what = what
        self.reason = reason
        super().__init__("%s: %s" % (what, reason))


class LedgerMismatchError(AgentloopError, ValueError):
    """A resumed batch does not match its earlier ledger, so nothing is run, written or signed.

    ``altered`` holds ``(name, why)`` for each transcript the earlier ledger
    certified (an ``ok`` line) that is no longer that file; ``reason`` says
    what is wrong when the earlier ledger itself does not hold (its
    checkpoint, its signature, its spec list).
    """

    def __init__(self, reason: str, altered: Sequence[Tuple[str, str]] = ()) -> None:
        self.reason = reason
        self.altered = tuple(altered)
        names = ", ".join(json.dumps(name) for name, _ in self.altered)
        super().__init__("%s%s" % (reason, " (altered: %s)" % (names,) if names else ""))


# --- misuse of constructors and functions ------------------------------------
# Each replaces a bare builtin raised before, and still inherits it, so an
# ``except TypeError`` / ``except ValueError`` written against those keeps working.


class MessageError(AgentloopError, TypeError, ValueError):
    """A message value was built with a bad field: a :class:`agentloop.ToolCall`,
    :class:`agentloop.Usage`, :class:`agentloop.ModelReply` or an approval
    decision (:class:`agentloop.Approve`, ``Deny``, ``Modify``, ``Terminate``).

    ``field`` names it (``ToolCall.name``, ``Usage.input_tokens``) and
    ``reason`` says what is wrong (``must be a str, got int``).  A field of the
    wrong type raised ``TypeError`` and one out of range ``ValueError`` before
    this class existed; it is both, so either ``except`` still catches it.
    """

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__("%s %s" % (field, reason))


class WrongTypeError(AgentloopError, TypeError):
    """A public function or constructor was given an argument of the wrong type.

    ``what`` names the argument (``the tool given to register()``), ``expected``
    says what it must be (``a Tool``) and ``got`` is the type name received;
    the value itself is not kept (it may be large, or hold a secret).
    """

    def __init__(self, what: str, expected: str, value: object) -> None:
        self.what = what
        self.expected = expected
        self.got = type(value).__name__
        super().__init__("%s must be %s, got %s" % (what, expected, self.got))


class BadArgumentError(AgentloopError, ValueError):
    """A public function was given an argument of the right type but a bad value.

    ``parameter`` names it (``limit``, ``max_faults``) and ``reason`` says
    what it must be (``must be a positive int, got 0``).
    """

    def __init__(self, parameter: str, reason: str) -> None:
        self.parameter = parameter
        self.reason = reason
        super().__init__("%s %s" % (parameter, reason))


class UnknownChoiceError(BadArgumentError):
    """An argument names none of the choices a function knows (``manifest("gemini")``).

    ``what`` says what was asked for (``manifest style``), ``value`` is the
    name given and ``choices`` the names known, in their documented order.
    """

    def __init__(self, what: str, value: str, choices: Sequence[str]) -> None:
        self.what = what
        self.value = value
        self.choices = tuple(choices)
        super().__init__(what, "%r is not one of %s" % (value, ", ".join(self.choices)))
        self.args = ("unknown %s %r (have: %s)" % (what, value, ", ".join(self.choices)),)


class NotPicklableError(AgentloopError, TypeError):
    """``pickle`` refused an object: pickling it would write a secret into the pickle.

    ``owner`` names the object's class and ``reason`` says why and what to do
    instead.  ``TypeError`` is what ``pickle`` raises for any object it cannot pickle.
    """

    def __init__(self, owner: str, reason: str) -> None:
        self.owner = owner
        self.reason = reason
        super().__init__("%s is not pickled: %s" % (owner, reason))


class TranscriptClosedError(AgentloopError, ValueError):
    """A :class:`agentloop.TranscriptWriter` was written to after :meth:`close`
    (``ValueError``, as for a closed file)."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__("transcript %s is closed" % (path,))


class TranscriptEmptyError(AgentloopError, ValueError):
    """A :class:`agentloop.TranscriptWriter` was asked for a checkpoint before its first record.

    Record 0 names the run, so a checkpoint of no record would name nothing.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__("transcript %s has no record to checkpoint" % (path,))


class ExecutorClosedError(AgentloopError, RuntimeError):
    """Work was submitted to an executor after its ``shutdown`` (``RuntimeError``,
    as :mod:`concurrent.futures` executors raise)."""

    def __init__(self, executor: str) -> None:
        self.executor = executor
        super().__init__("%s: cannot submit after shutdown" % (executor,))


class WitnessStateError(AgentloopError, ValueError):
    """A witness's state file cannot be read, is not one, or cannot be written (a usage error: exit 2).

    ``path`` is the file, ``reason`` what is wrong with it.  Nothing is
    cosigned when it is raised (C2SP tlog-witness: the witness persists the
    checkpoint before it answers).
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__("%s: %s" % (path, reason))


# --- exports: OpenTelemetry, Inspect AI (agentloop.export) -------------------


class ExportError(AgentloopError, ValueError):
    """A transcript or a batch is not exported: it does not verify, or its ledger's verdict fails.

    ``what`` names it (a file, a manifest) and ``reason`` says why.  Nothing
    is written: an export never shows a run that could not be checked.
    """

    def __init__(self, what: str, reason: str) -> None:
        self.what = what
        self.reason = reason
        super().__init__("cannot export %s: %s" % (what, reason))


class CollectorError(AgentloopError, ConnectionError):
    """An OTLP/HTTP collector could not be reached, or did not take the spans.

    ``host`` is its ``host:port`` (never the path, the query or a header) and
    ``reason`` what happened.
    """

    def __init__(self, host: str, reason: str) -> None:
        self.host = host
        self.reason = reason
        super().__init__("collector at %s: %s" % (host, reason))
