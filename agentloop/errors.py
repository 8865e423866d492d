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

from typing import Optional

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
    """A second tool with an already registered name was registered."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__("a tool named %r is already registered" % (name,))


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
        super().__init__(
            "transcript %s already exists (pass overwrite=True to replace it)" % (path,)
        )


class ScriptExhaustedError(AgentloopError, LookupError):
    """A :class:`agentloop.ScriptedModel` was asked for more turns than it holds."""

    def __init__(self, turn: int, available: int) -> None:
        self.turn = turn
        self.available = available
        super().__init__("the script has no reply for turn %d (it holds %d)" % (turn, available))
