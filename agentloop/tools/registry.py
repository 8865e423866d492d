"""Tools the model may call, and the registry that names them.

A :class:`Tool` is a name, a description, a JSON Schema for its arguments
object and a Python callable taking those arguments as keyword arguments and
returning a JSON value.  Everything about a tool is checked when it is built:
its schema is compiled once (:func:`agentloop.schema.compile_schema`), and a
schema the validator cannot fully enforce is refused
(:class:`~agentloop.errors.SchemaError`), never half-enforced.

Two ways to build one:

* ``Tool(name, description, parameters, fn)`` -- a hand-written schema; ``fn``
  receives the validated JSON values as they are;
* ``@tool`` / ``Tool.from_function(fn)`` -- the schema comes from the
  signature and docstring (:mod:`agentloop.tools.typed`), and validated
  arguments are converted to what the annotations say before ``fn`` runs
  (``2.0`` -> ``2`` for an ``int``, a list -> a tuple, an object -> the
  dataclass, a string -> the ``Enum`` member).

The result of ``@tool`` is a :class:`Tool`, so it goes straight into a
:class:`ToolRegistry`; it stays callable, and calling it calls the function
directly, as plain Python (no validation, no conversion).

``fn`` may be an ``async def`` function (typed and validated like any other):
the loop awaits it on an event loop (:mod:`agentloop.loop.calls`).  Two options
shape how the loop runs a tool: ``parallel=True`` says calls to it may run at
the same time as other parallel-safe calls of the same turn (the default is
serial: a call that runs alone); ``timeout=SECONDS`` bounds each call (past
it, the call fails as data; see :mod:`agentloop.loop.calls` for what happens to a
sync function that cannot be stopped).  ``requires_approval=True`` (or a
predicate over the validated arguments) makes a person say yes first: the
loop asks the run's approver before each such call (:mod:`agentloop.loop.approval`).
"""

from __future__ import annotations

import abc
import copy
import inspect
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Union, overload

from ..canonical import canonical_bytes
from ..errors import (
    DuplicateToolError,
    SchemaError,
    ToolDefinitionError,
    UnknownChoiceError,
    UnrecordableError,
    ValidationError,
    WrongTypeError,
)
from ..schema.validator import Validator, check_schema, compile_schema, validate
from .context import CallContext, context_parameter
from .providers import anthropic_tool, openai_tool, responses_tool
from .typed import function_spec

#: How deep a tool's schema sits in the task record (record > payload > tools >
#: tool > parameters): the record's nesting limit applies to it from there.
SCHEMA_DEPTH = 4

__all__ = ["Tool", "ToolRegistry", "tool", "MANIFEST_STYLES", "validate", "check_schema"]

# The intersection of what the OpenAI and Anthropic tool APIs accept as a name.
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")

#: The shapes :meth:`ToolRegistry.manifest` can return.
MANIFEST_STYLES = ("agentloop", "openai", "responses", "anthropic")

Converter = Callable[[Dict[str, Any]], Dict[str, Any]]
#: ``requires_approval=``: always (``True``), never (``False``), or a predicate over the validated arguments.
ApprovalRule = Union[bool, Callable[[Dict[str, Any]], Any]]


class ToolServer(abc.ABC):
    """A server a run's tools come from (an MCP server, :class:`agentloop.mcp.MCPClient`).

    The task record describes it (:func:`tool_sources`): under the member
    :attr:`record_member` (``"mcp"``), as :meth:`describe` says.
    """

    #: The task-record member the descriptions of such servers go under.
    record_member: str = ""

    @abc.abstractmethod
    def describe(self, names: Optional[Iterable[str]] = None) -> Dict[str, Any]:
        """This server for the task record (JSON, no secrets); ``names``: those of its tools the run has."""


@dataclass(frozen=True)
class Tool:
    """A callable the model may use.

    ``name`` matches ``[A-Za-z0-9_-]{1,64}``; ``parameters`` is a JSON Schema
    object for the arguments, deep-copied so later edits to the caller's dict
    cannot change what is enforced, and compiled once into ``validator``;
    ``fn(**arguments)`` returns a JSON value.  ``convert``, when set, maps
    validated arguments to ``fn``'s keyword arguments (``from_function`` sets
    it).  ``assert_formats=True`` makes ``format`` an assertion.
    ``parallel=True`` marks the tool safe to run concurrently with other
    parallel-safe calls; ``timeout`` (seconds, ``None`` for the run's
    ``tool_timeout``) bounds each call.  ``is_async`` says whether ``fn`` is
    an ``async def`` function (or an object with an ``async def __call__``).
    ``requires_approval`` is ``False`` (the default), ``True`` (every call
    waits for the run's approver) or a predicate given a copy of the
    validated arguments (a dict of JSON values) that says whether this call
    does: :meth:`needs_approval`.  Such a tool never runs in parallel.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    fn: Callable[..., Any] = field(compare=False)
    convert: Optional[Converter] = field(default=None, compare=False, repr=False)
    assert_formats: bool = False
    parallel: bool = False
    timeout: Optional[float] = None
    requires_approval: ApprovalRule = False
    validator: Validator = field(init=False, compare=False, repr=False)
    is_async: bool = field(init=False, compare=False, repr=False)
    #: The name of ``fn``'s :class:`~agentloop.tools.context.CallContext` parameter (``None`` without one).
    context: Optional[str] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ToolDefinitionError(self.name, "a name must match [A-Za-z0-9_-]{1,64}")
        if not isinstance(self.description, str):
            raise ToolDefinitionError(
                self.name, "description must be a str, got %s" % (type(self.description).__name__,)
            )
        if not callable(self.fn):
            raise ToolDefinitionError(self.name, "fn must be callable")
        if self.convert is not None and not callable(self.convert):
            raise ToolDefinitionError(self.name, "convert must be callable or None")
        if inspect.isasyncgenfunction(self.fn) or inspect.isgeneratorfunction(self.fn):
            raise ToolDefinitionError(self.name, "fn is a generator function; a tool returns one JSON value")
        if not isinstance(self.parallel, bool):
            raise ToolDefinitionError(
                self.name, "parallel must be True or False, got %s" % (type(self.parallel).__name__,)
            )
        timeout = self.timeout
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise ToolDefinitionError(self.name, "timeout must be None or a number of seconds > 0, got %r" % (timeout,))
        if not isinstance(self.requires_approval, bool) and not callable(self.requires_approval):
            raise ToolDefinitionError(
                self.name,
                "requires_approval must be True, False or a predicate over the arguments, got %s"
                % (type(self.requires_approval).__name__,),
            )
        try:
            canonical_bytes(self.description, "$.description")
        except UnrecordableError as exc:
            raise ToolDefinitionError(self.name, str(exc)) from None
        if not isinstance(self.parameters, Mapping):
            raise SchemaError(
                "$",
                "a tool's parameters must be an object schema, got %s" % type(self.parameters).__name__,
                self.name,
            )
        declared = self.parameters.get("type", "object")
        if declared != "object":
            # Arguments are always an object, and both provider APIs want exactly
            # "object" at the root: anything else would fail later, mid-run.
            raise SchemaError(
                "$.type",
                "a tool's arguments are an object, but type is %s" % (json.dumps(declared, default=str),),
                self.name,
            )
        try:  # a recordable schema is plain JSON, so the copy below cannot fail
            canonical_bytes(self.parameters, depth=SCHEMA_DEPTH)
        except UnrecordableError as exc:
            raise SchemaError(exc.path, exc.reason, tool=self.name) from None
        parameters = copy.deepcopy(dict(self.parameters))
        validator = compile_schema(parameters, tool=self.name, assert_formats=self.assert_formats)
        object.__setattr__(self, "parameters", parameters)
        object.__setattr__(self, "validator", validator)
        is_async = inspect.iscoroutinefunction(self.fn) or inspect.iscoroutinefunction(
            getattr(self.fn, "__call__", None)
        )
        object.__setattr__(self, "is_async", is_async)
        object.__setattr__(self, "context", self._context_parameter(parameters))

    def _context_parameter(self, parameters: Mapping[str, Any]) -> Optional[str]:
        """``fn``'s :class:`~agentloop.tools.context.CallContext` parameter, which the schema may not name."""
        context = context_parameter(self.fn, self.name)
        if context is not None and context in parameters.get("properties", {}):
            raise ToolDefinitionError(
                self.name, "%r is the CallContext parameter: the schema cannot also name it" % (context,)
            )
        return context

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        name: Optional[str] = None,
        description: Optional[str] = None,
        *,
        assert_formats: bool = False,
        parallel: bool = False,
        timeout: Optional[float] = None,
        requires_approval: ApprovalRule = False,
    ) -> "Tool":
        """A tool whose schema, description and argument conversion come from ``fn`` (sync or ``async def``).

        ``name`` defaults to ``fn.__name__`` and ``description`` to the
        docstring's summary; see :mod:`agentloop.tools.typed` for the
        annotations understood.  Raises
        :class:`~agentloop.errors.ToolDefinitionError` naming the parameter
        whose annotation cannot be expressed.
        """

        spec = function_spec(fn, name=name, description=description)
        return cls(
            spec.name,
            spec.description,
            spec.parameters,
            fn,
            spec.convert,
            assert_formats,
            parallel,
            timeout,
            requires_approval,
        )

    def errors(self, arguments: object, path: str = "$") -> List[ValidationError]:
        """Every problem with ``arguments`` (at most 50), each naming its path; ``[]`` when valid."""
        return self.validator.errors(arguments, path)

    def first_error(self, arguments: object, path: str = "$") -> Optional[ValidationError]:
        """The first problem with ``arguments``, or ``None`` when they are valid."""
        return self.validator.first_error(arguments, path)

    @property
    def gated(self) -> bool:
        """Whether any call of this tool may need approval (``requires_approval`` is not ``False``)."""
        return self.requires_approval is not False

    def needs_approval(self, arguments: Mapping[str, Any]) -> bool:
        """Whether the call with these (validated) ``arguments`` waits for the approver.

        A predicate gets a deep copy; it says no only by returning ``False``:
        anything else it returns, and any ``Exception`` it raises, gates the
        call (fail closed).
        """
        rule = self.requires_approval
        if isinstance(rule, bool):
            return rule
        try:
            return rule(copy.deepcopy(dict(arguments))) is not False
        except Exception:
            return True

    def invoke(self, arguments: Mapping[str, Any], context: Optional[CallContext] = None) -> Any:
        """Call ``fn`` with validated ``arguments``, converted first when ``convert`` is set
        (for an ``async def`` tool: the coroutine to await); a ``CallContext``
        parameter of ``fn`` gets ``context`` (the loop gives every call its own).

        Does not validate: check ``first_error`` first (the loop does).
        """
        kwargs = dict(arguments)
        if self.convert is not None:
            kwargs = self.convert(kwargs)
        if self.context is not None:
            kwargs[self.context] = context
        return self.fn(**kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly, as plain Python (no validation, no conversion)."""
        return self.fn(*args, **kwargs)

    def server(self) -> Optional[ToolServer]:
        """The server this tool comes from (:class:`ToolServer`); ``None`` for a local tool."""
        return None

    def manifest_entry(self) -> Dict[str, Any]:
        """``{"name", "description", "parameters"}``, as the model sees the tool."""
        return {"name": self.name, "description": self.description, "parameters": copy.deepcopy(self.parameters)}


@overload
def tool(fn: Callable[..., Any]) -> Tool: ...


@overload
def tool(
    fn: None = None,
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    assert_formats: bool = False,
    parallel: bool = False,
    timeout: Optional[float] = None,
    requires_approval: ApprovalRule = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Optional[Callable[..., Any]] = None,
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    assert_formats: bool = False,
    parallel: bool = False,
    timeout: Optional[float] = None,
    requires_approval: ApprovalRule = False,
) -> Union[Tool, Callable[[Callable[..., Any]], Tool]]:
    """Decorator: ``@tool`` or ``@tool(name=..., parallel=True, timeout=5, requires_approval=True)`` turns a typed
    function (sync or ``async def``) into a :class:`Tool`."""

    def build(function: Callable[..., Any]) -> Tool:
        return Tool.from_function(
            function,
            name=name,
            description=description,
            assert_formats=assert_formats,
            parallel=parallel,
            timeout=timeout,
            requires_approval=requires_approval,
        )

    return build if fn is None else build(fn)


class ToolRegistry:
    """The tools of one run, by name.  A name can be registered once.

    ``servers`` are the tool servers (e.g. :class:`agentloop.mcp.MCPClient`)
    the tools were taken from: each is named in the task record
    (:func:`tool_sources`) even when none of its tools is here -- all of them
    refused, say -- so a reader of the run sees what was refused.
    """

    def __init__(self, tools: Iterable[Tool] = (), servers: Iterable[Any] = ()) -> None:
        self._tools: Dict[str, Tool] = {}
        if isinstance(tools, (str, bytes)) or not isinstance(tools, Iterable):
            raise WrongTypeError("tools", "an iterable of Tool", tools)
        for tool_ in tools:
            self.register(tool_)
        self.servers = tuple(servers)

    def register(self, tool: Tool) -> Tool:
        """Add ``tool``; raise :class:`~agentloop.errors.DuplicateToolError` if its name is taken."""
        if not isinstance(tool, Tool):
            raise WrongTypeError("the tool given to register()", "a Tool", tool)
        if tool.name in self._tools:
            first, second = _side(self._tools[tool.name]), _side(tool)
            if first is None and second is None:
                raise DuplicateToolError(tool.name)
            local = "local tool %r" % (tool.name,)
            raise DuplicateToolError(tool.name, first or local, second or local)
        self._tools[tool.name] = tool
        return tool

    def get(self, name: str) -> Optional[Tool]:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)

    @property
    def names(self) -> List[str]:
        """The registered names, sorted."""
        return sorted(self._tools)

    def manifest(self, style: str = "agentloop") -> List[Dict[str, Any]]:
        """The tools, sorted by name, in one of :data:`MANIFEST_STYLES`.

        * ``"agentloop"`` (the default, recorded in transcripts):
          ``{"name", "description", "parameters"}``;
        * ``"openai"``: Chat Completions ``tools`` entries,
          ``{"type": "function", "function": {"name", "description", "parameters", "strict"}}``;
        * ``"responses"``: OpenAI Responses API ``tools`` entries,
          ``{"type": "function", "name", "description", "parameters", "strict"}``;
        * ``"anthropic"``: Messages API ``tools`` entries, ``{"name", "description", "input_schema"}``.

        See :mod:`agentloop.tools.providers` for the documentation followed.
        """
        entries = [self._tools[name].manifest_entry() for name in self.names]
        if style == "agentloop":
            return entries
        if style == "openai":
            return [openai_tool(entry) for entry in entries]
        if style == "responses":
            return [responses_tool(entry) for entry in entries]
        if style == "anthropic":
            return [anthropic_tool(entry) for entry in entries]
        raise UnknownChoiceError("manifest style", style, MANIFEST_STYLES)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter([self._tools[name] for name in self.names])


def _side(tool: Tool) -> Optional[str]:
    """Where a tool from elsewhere comes from, for an error (``tool 'add' of MCP server 'calc'``).

    ``None`` for a local tool.
    """
    side = getattr(getattr(tool, "origin", None), "side", None)
    return side if isinstance(side, str) else None


def tool_sources(tools: Iterable[Tool], servers: Iterable[ToolServer] = ()) -> Dict[str, List[Dict[str, Any]]]:
    """The servers behind a run's tools, described for its task record: ``{member: [description, ...]}``.

    Each tool's :meth:`Tool.server` (an :class:`agentloop.mcp.MCPTool`'s
    client) describes itself with :meth:`ToolServer.describe`, given the
    names of its tools the run has, under its :attr:`~ToolServer.record_member`
    (``"mcp"``): one description per server, in the order its first tool
    comes; ``servers`` (default: ``tools.servers`` of a :class:`ToolRegistry`)
    adds servers none of whose tools are in ``tools`` (all refused, say).
    ``{}`` when every tool is local, so such runs' records are unchanged.
    """
    order: List[ToolServer] = []
    names: Dict[int, List[str]] = {}
    for each in tools:
        server = each.server()
        if server is None:
            continue
        if id(server) not in names:
            order.append(server)
            names[id(server)] = []
        names[id(server)].append(each.name)
    for server in list(servers) or list(getattr(tools, "servers", ())):
        if id(server) not in names:
            order.append(server)
            names[id(server)] = []
    members: Dict[str, List[Dict[str, Any]]] = {}
    for server in order:
        members.setdefault(server.record_member, []).append(server.describe(names[id(server)]))
    return members
