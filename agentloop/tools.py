"""Tools the model may call, and the registry that names them.

A :class:`Tool` is a name, a description, a JSON Schema for its arguments
object (the subset :mod:`agentloop.schema` enforces) and a Python callable
taking those arguments as keyword arguments and returning a JSON value.
Everything about a tool is checked when it is built: a schema the validator
cannot fully enforce is refused (:class:`~agentloop.errors.SchemaError`), never
half-enforced.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional

from .canonical import canonical_bytes
from .errors import DuplicateToolError, SchemaError, ToolDefinitionError, UnrecordableError
from .schema import check_schema, validate

__all__ = ["Tool", "ToolRegistry", "validate", "check_schema"]

# The intersection of what the OpenAI and Anthropic tool APIs accept as a name.
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")


@dataclass(frozen=True)
class Tool:
    """A callable the model may use.

    ``name`` matches ``[A-Za-z0-9_-]{1,64}``; ``parameters`` is a JSON Schema
    (a dict) for the arguments object, deep-copied so later edits to the
    caller's dict cannot change what is enforced; ``fn(**arguments)`` returns
    a JSON value.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    fn: Callable[..., Any] = field(compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ToolDefinitionError(self.name, "a name must match [A-Za-z0-9_-]{1,64}")
        if not isinstance(self.description, str):
            raise ToolDefinitionError(
                self.name, "description must be a str, got %s" % (type(self.description).__name__,)
            )
        if not callable(self.fn):
            raise ToolDefinitionError(self.name, "fn must be callable")
        try:
            canonical_bytes(self.description, "$.description")
        except UnrecordableError as exc:
            raise ToolDefinitionError(self.name, str(exc)) from None
        check_schema(self.parameters, tool=self.name)
        try:
            canonical_bytes(self.parameters)
        except UnrecordableError as exc:
            raise SchemaError(exc.path, exc.reason, tool=self.name) from None
        object.__setattr__(self, "parameters", copy.deepcopy(dict(self.parameters)))

    def manifest_entry(self) -> Dict[str, Any]:
        """``{"name", "description", "parameters"}``, as the model sees the tool."""
        return {"name": self.name, "description": self.description, "parameters": copy.deepcopy(self.parameters)}


class ToolRegistry:
    """The tools of one run, by name.  A name can be registered once."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: Dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> Tool:
        """Add ``tool``; raise :class:`~agentloop.errors.DuplicateToolError` if its name is taken."""
        if not isinstance(tool, Tool):
            raise TypeError("register() takes a Tool, got %s" % (type(tool).__name__,))
        if tool.name in self._tools:
            raise DuplicateToolError(tool.name)
        self._tools[tool.name] = tool
        return tool

    def get(self, name: str) -> Optional[Tool]:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)

    @property
    def names(self) -> List[str]:
        """The registered names, sorted."""
        return sorted(self._tools)

    def manifest(self) -> List[Dict[str, Any]]:
        """A list of ``{"name", "description", "parameters"}``, sorted by name."""
        return [self._tools[name].manifest_entry() for name in self.names]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter([self._tools[name] for name in self.names])
