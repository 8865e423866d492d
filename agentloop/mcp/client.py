"""What every MCP client does, whatever carries the bytes: choose a protocol
revision, list the tools, call them, describe the server for the record.

Revisions spoken (MCP "Versioning"):

* **2026-07-28** (modern, stateless): no handshake; every request carries
  ``_meta`` with ``io.modelcontextprotocol/protocolVersion``,
  ``.../clientCapabilities`` (``{}``: agentloop offers none) and
  ``.../clientInfo`` (2026-07-28 "Base Protocol: _meta", "Per-request
  protocol fields"); ``server/discover`` (2026-07-28 "Server: Discovery")
  gives the supported versions and the server's identity.
* **2025-11-25** (legacy): the ``initialize`` request, then the
  ``notifications/initialized`` notification (2025-11-25 "Lifecycle:
  Initialization"); a server answering 2025-06-18 or 2025-03-26 is accepted
  (the same tool messages), any other answer refuses the server
  ("Version Negotiation": the client "SHOULD disconnect").

``protocol="auto"`` follows 2026-07-28 "Versioning: Backward Compatibility
with Initialization-Based Versions": probe with ``server/discover``; a
``DiscoverResult`` or a recognised modern error
(``UnsupportedProtocolVersionError`` with its ``supported`` list) means a
modern server, anything else -- another JSON-RPC error, on HTTP a 4xx
without a modern error body, no answer at all -- means a legacy one, and the
client falls back to ``initialize``.  The choice is made once per client.

The start-up budget: the probe waits for its answer as long as
``init_timeout`` allows, however slowly the server starts, because a
connection that has answered the probe may refuse ``initialize`` (a server
on the 2.x Python SDK says -32022 "connection is serving the 2026-07-28
protocol").  When the probe gets no answer at all in that time, the fallback
gets a connection that has seen nothing (:meth:`MCPClient._fresh`: over
stdio a new server process; over HTTP every POST is its own request) and
``initialize`` waits up to ``init_timeout`` again.  Starting therefore takes
at most twice ``init_timeout``: the probe gets ``init_timeout``, and the
handshake after a legacy answer or none (``initialize`` and
``notifications/initialized`` together) another; a server that answers the
probe as a 2026-07-28 one has started then.  Without an answer, stopping
the old process comes on top.

Tools: ``tools/list`` is followed through every ``nextCursor`` (2025-11-25
"Pagination"), server order kept; ``tools/call`` results are recorded as
received (``_meta`` dropped, nothing unwrapped); ``isError`` fails as data
with the text blocks joined; ``structuredContent`` is validated against
``outputSchema`` ("Tools: Output Schema": clients SHOULD validate).  Results
with ``resultType`` ``input_required`` (2026-07-28 multi round-trip
requests) ask for sampling, elicitation or roots, which agentloop does not
provide: they fail as data.  Out of scope, never requested: resources,
prompts, sampling, elicitation, roots, subscriptions, logging.

Failure channels: before a run (starting, handshaking, listing) an
:class:`~agentloop.errors.MCPError` is raised; once a tool is called every
failure is :class:`~agentloop.errors.ToolFailure` text, which the loop records
as ``ok: false``.
"""

from __future__ import annotations

import abc
import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from .._version import __version__
from ..errors import AgentloopError, MCPConfigError, MCPError, MCPNameCollisionError, NotPicklableError, ToolFailure
from ..schema import Validator, compile_schema
from ..tools import Tool
from ..tools.registry import ToolServer, tool_sources
from .jsonrpc import MODERN_ERROR_CODES, UNSUPPORTED_PROTOCOL_VERSION, RpcError, short, supported_versions
from .names import PREFIX, agentloop_name
from .schemas import HeaderParam, Refused, import_schema

__all__ = [
    "MCPClient",
    "MCPTool",
    "Origin",
    "describe",
    "MODERN",
    "LEGACY",
    "LEGACY_ACCEPTED",
    "PROTOCOLS",
    "CLIENT_INFO",
]

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
#: What a legacy server may answer ``initialize`` with.
LEGACY_ACCEPTED = ("2025-11-25", "2025-06-18", "2025-03-26")
#: The values of the ``protocol`` argument.
PROTOCOLS = ("auto", MODERN) + LEGACY_ACCEPTED
#: MCP "Implementation": who the client is (2026-07-28 ``clientInfo``).
CLIENT_INFO = {"name": "agentloop", "version": __version__}
#: The most ``tools/list`` pages followed before the server is refused.
MAX_PAGES = 1000
_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
_META_CLIENT = "io.modelcontextprotocol/clientInfo"
_META_SERVER = "io.modelcontextprotocol/serverInfo"


class Failed(Exception):
    """A request did not get a result; ``text`` says why (no server name), ``kind`` sorts it.

    Kinds: ``timeout``, ``dead`` (the server exited or cannot be reached any
    more), ``malformed``, ``http`` (an HTTP status without a JSON-RPC error),
    ``connect`` (never reached the server), ``rpc`` (:class:`RpcFailed`).
    """

    def __init__(self, text: str, kind: str) -> None:
        self.text = text
        self.kind = kind
        super().__init__(text)


class RpcFailed(Failed):
    """The server answered with a JSON-RPC error."""

    def __init__(self, error: RpcError, status: Optional[int] = None) -> None:
        self.error = error
        self.status = status
        where = "" if status is None else "HTTP %d: " % (status,)
        super().__init__(where + error.describe(), "rpc")


@dataclass(frozen=True)
class Origin:
    """Where an :class:`MCPTool` comes from: its client, the server's name for it, and what checks its results."""

    server: "MCPClient"
    tool: str
    output: Optional[Validator] = None
    headers: Tuple[HeaderParam, ...] = ()

    @property
    def side(self) -> str:
        """The tool for an error about its name: ``tool 'add' of MCP server 'calc'``."""
        return "tool %r of MCP server %r" % (self.tool, self.server.name)


@dataclass(frozen=True)
class MCPTool(Tool):
    """A :class:`~agentloop.tools.Tool` whose calls go to an MCP server; ``origin`` says which."""

    origin: Optional[Origin] = field(default=None, compare=False, repr=False)

    def server(self) -> Optional["MCPClient"]:
        """The client of the server this tool comes from."""
        return None if self.origin is None else self.origin.server


#: 2025-11-25 "Tools: Tool" ``execution.taskSupport``: how a tool may be called as a task ("Tasks").
_TASK_SUPPORT = ("forbidden", "optional", "required")


def _callable(execution: Any) -> None:
    """Refuse a tool agentloop cannot call as it asks: ``execution.taskSupport`` ``"required"`` (or unknown).

    2025-11-25 "Tasks: Tool-Level Negotiation": ``required`` means clients
    MUST invoke the tool as a task, and the server returns -32601 to a plain
    ``tools/call``; agentloop never creates tasks, so such a tool would fail
    every call.  Absent means ``forbidden``; ``optional`` is called plainly.
    """
    if execution is None:
        return
    if not isinstance(execution, dict):
        raise Refused("execution is not an object")
    support = execution.get("taskSupport", "forbidden")
    if support == "required":
        raise Refused(
            'execution.taskSupport is "required": the tool must be called as a task, which agentloop does not do'
        )
    if support not in _TASK_SUPPORT:
        raise Refused(
            "execution.taskSupport %s is not one of %s" % (short(repr(support), 60), ", ".join(_TASK_SUPPORT))
        )


def _server_info(value: Any) -> Dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {k: value[k] for k in ("name", "title", "version") if isinstance(value.get(k), str)}


class MCPClient(ToolServer):
    """The protocol half of :class:`~agentloop.mcp.MCPStdio` and :class:`~agentloop.mcp.MCPHttp`.

    A transport subclass provides ``_open``, ``_exchange``, ``_notify`` and
    ``_shutdown``, and reads :attr:`modern` and :attr:`protocol` to frame
    its requests.
    """

    transport = "?"
    #: The task-record member its tools are described under (:func:`agentloop.tools.registry.tool_sources`).
    record_member = "mcp"

    def __init__(self, name: str, protocol: str, timeout: float, init_timeout: float) -> None:
        if not isinstance(name, str) or not name:
            raise MCPConfigError("name", "a server needs a non-empty name, got %r" % (name,))
        if protocol not in PROTOCOLS:
            raise MCPConfigError("protocol", "must be one of %s, got %r" % (", ".join(PROTOCOLS), protocol))
        for label, value in (("timeout", timeout), ("init_timeout", init_timeout)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 86400:
                raise MCPConfigError(label, "must be a number of seconds in (0, 86400], got %r" % (value,))
        self.name = name
        self.requested_protocol = protocol
        self.timeout = float(timeout)
        self.init_timeout = float(init_timeout)
        #: The revision in use once started (``None`` before).
        self.protocol: Optional[str] = None
        #: True while requests are framed for 2026-07-28 (also during the probe).
        self.modern = False
        self.server_info: Dict[str, str] = {}
        self._started = False
        self._closed = False
        self._start_lock = threading.Lock()
        self._exposed: Dict[str, str] = {}
        self._refused: Dict[str, str] = {}

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise NotPicklableError(
            type(self).__name__,
            "it is a connection to a running server (and MCPHttp's "
            "headers may hold a token); start the client in the process that uses it",
        )

    # --- the transport's half --------------------------------------------

    @abc.abstractmethod
    def _open(self) -> None:
        """Start the server (stdio) or check the URL (HTTP); raise ``Failed`` or an ``AgentloopError``."""

    @abc.abstractmethod
    def _exchange(
        self, method: str, params: Dict[str, Any], timeout: float, origin: Optional[Origin] = None
    ) -> Dict[str, Any]:
        """One request and its result; raise ``Failed`` (``RpcFailed`` for a JSON-RPC error)."""

    @abc.abstractmethod
    def _notify(self, method: str, params: Optional[Dict[str, Any]], timeout: float) -> None:
        """One notification, sent within ``timeout`` seconds; raise ``Failed``."""

    @abc.abstractmethod
    def _shutdown(self) -> None:
        """Stop the server (stdio) or end the session (legacy HTTP); never raise."""

    def _fresh(self) -> str:
        """Make the next request go over a connection that has seen nothing; say what was done ("" for nothing).

        Called when the ``server/discover`` probe got no answer: the old
        connection may still answer it, and a server that has answered it
        may refuse ``initialize`` there.  Over HTTP every POST is its own
        request, so nothing is needed.
        """
        return ""

    @abc.abstractmethod
    def _where(self) -> Dict[str, Any]:
        """Where the server is, for the record: ``{"command": [...]}`` or ``{"host": ...}`` (no secrets)."""

    def _redact(self, text: str) -> str:
        """``text`` with the secrets the transport holds cut out (MCPHttp: its header values); here none."""
        return text

    @contextlib.contextmanager
    def _no_secrets(self) -> Iterator[None]:
        """Every error leaving the client through :meth:`_redact`: a server may echo a secret in what it sends.

        A bearer token quoted back in a JSON-RPC error message, a tool's
        error text or a proxy's error page would otherwise reach a terminal
        or, as a call's ``error``, the transcript.
        """
        try:
            yield
        except ToolFailure as exc:
            text = self._redact(exc.text)
            if text == exc.text:
                raise
            raise ToolFailure(text) from None
        except MCPError as exc:
            reason = self._redact(exc.reason)
            if reason == exc.reason:
                raise
            raise MCPError(exc.server, reason) from None
        except MCPConfigError as exc:
            reason = self._redact(exc.reason)
            if reason == exc.reason:
                raise
            raise MCPConfigError(exc.parameter, reason) from None

    # --- life cycle ------------------------------------------------------

    def __enter__(self) -> "MCPClient":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start or reach the server and choose the protocol; raise :class:`~agentloop.errors.MCPError`.

        Idempotent; :meth:`tools` calls it.  On failure the client is closed.
        """
        with self._no_secrets():
            self._start()

    def _start(self) -> None:
        with self._start_lock:
            if self._closed:
                raise MCPError(self.name, "the client is closed")
            if self._started:
                return
            try:
                self._open()
                self._handshake()
            except Failed as exc:
                self.close()
                raise MCPError(self.name, exc.text) from None
            except AgentloopError:
                self.close()
                raise
            self._started = True

    def close(self) -> None:
        """Stop the server (stdio) or end the session (legacy HTTP); later calls fail as data."""
        if self._closed:
            return
        self._closed = True
        self._shutdown()

    @property
    def closed(self) -> bool:
        return self._closed

    def _request(
        self, method: str, params: Dict[str, Any], timeout: float, origin: Optional[Origin] = None
    ) -> Dict[str, Any]:
        params = dict(params)
        if self.modern:
            params["_meta"] = {
                _META_VERSION: self.protocol or MODERN,
                _META_CAPABILITIES: {},
                _META_CLIENT: dict(CLIENT_INFO),
            }
        return self._exchange(method, params, timeout, origin)

    # --- choosing the revision ------------------------------------------

    def _handshake(self) -> None:
        wanted = self.requested_protocol
        if wanted in LEGACY_ACCEPTED:
            self._initialize(wanted)
            return
        answered, versions = self._discover(strict=wanted == MODERN)
        if not answered:  # no answer in init_timeout: the fallback gets a fresh connection
            done = self._fresh()
            self._initialize(LEGACY, "server/discover got no answer in %g s%s" % (self.init_timeout, done))
        elif versions is None:  # a legacy server
            self._initialize(LEGACY)
        elif MODERN in versions:
            self.protocol = MODERN
        elif wanted == "auto" and any(v in LEGACY_ACCEPTED for v in versions):
            self._initialize(next(v for v in LEGACY_ACCEPTED if v in versions))
        else:
            raise MCPError(
                self.name,
                "it supports protocol versions %s; agentloop speaks %s"
                % (", ".join(versions) or "(none listed)", ", ".join(PROTOCOLS[1:])),
            )

    def _discover(self, strict: bool) -> Tuple[bool, Optional[List[str]]]:
        """2026-07-28 ``server/discover``: (answered, the server's versions or ``None`` for a legacy server).

        Step by step ("stdio: Backward Compatibility", "Streamable HTTP:
        Backward Compatibility"), waiting up to ``init_timeout``: 1. a
        result: modern, take ``supportedVersions``; 2.
        ``UnsupportedProtocolVersionError``: modern, take ``data.supported``;
        3. another modern error: a modern server that refused the request,
        raise; 4. anything else: legacy (with ``strict``, raise instead);
        ``answered`` is false when nothing came back in time.
        """
        self.modern = True
        try:
            result = self._request("server/discover", {}, self.init_timeout)
        except RpcFailed as exc:
            if exc.error.code == UNSUPPORTED_PROTOCOL_VERSION:  # 2.
                return True, supported_versions(exc.error)
            if exc.error.code in MODERN_ERROR_CODES:  # 3.
                raise MCPError(self.name, "server/discover failed: %s" % (exc.text,)) from None
            self._legacy(strict, exc.text)  # 4.
            return True, None
        except Failed as exc:
            if exc.kind in ("dead", "connect"):
                raise MCPError(self.name, exc.text) from None
            self._legacy(strict, exc.text)  # 4.
            return exc.kind != "timeout", None
        versions = result.get("supportedVersions")  # 1.
        if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
            raise MCPError(self.name, "server/discover result has no supportedVersions list of strings")
        meta = result.get("_meta")
        self.server_info = _server_info(meta.get(_META_SERVER) if isinstance(meta, dict) else None)
        return True, list(versions)

    def _legacy(self, strict: bool, why: str) -> None:
        if strict:
            raise MCPError(self.name, "server/discover failed (protocol %s was asked for): %s" % (MODERN, why))
        self.modern = False

    def _initialize(self, offer: str, after: str = "") -> None:
        """2025-11-25 "Lifecycle: Initialization": ``initialize``, check the version, ``notifications/initialized``.

        ``after`` says what came before, for the error (the probe's silence).
        Both messages together take at most ``init_timeout``.
        """
        self.modern = False
        self.protocol = None
        params = {"protocolVersion": offer, "capabilities": {}, "clientInfo": dict(CLIENT_INFO)}
        deadline = time.monotonic() + self.init_timeout
        try:
            result = self._request("initialize", params, self.init_timeout)
        except Failed as exc:
            before = " (%s)" % (after,) if after else ""
            raise MCPError(self.name, "initialize failed%s: %s" % (before, exc.text)) from None
        version = result.get("protocolVersion")
        if version not in LEGACY_ACCEPTED:
            raise MCPError(
                self.name,
                "it answered initialize with protocol version %r; agentloop accepts %s"
                % (version, ", ".join(LEGACY_ACCEPTED)),
            )
        self.protocol = str(version)
        self.server_info = _server_info(result.get("serverInfo"))
        try:
            self._notify("notifications/initialized", None, max(deadline - time.monotonic(), 0.001))
        except Failed as exc:
            why = "the handshake took longer than %g s" % (self.init_timeout,) if exc.kind == "timeout" else exc.text
            raise MCPError(self.name, "notifications/initialized failed: %s" % (why,)) from None

    # --- tools -----------------------------------------------------------

    def list_tools(self) -> List[Dict[str, Any]]:
        """Every tool definition of every ``tools/list`` page, in server order (2025-11-25 "Pagination")."""
        with self._no_secrets():
            return self._list_tools()

    def _list_tools(self) -> List[Dict[str, Any]]:
        self.start()
        tools: List[Dict[str, Any]] = []
        cursor: Optional[str] = None
        seen = set()
        for _ in range(MAX_PAGES):
            params: Dict[str, Any] = {} if cursor is None else {"cursor": cursor}
            try:
                result = self._request("tools/list", params, self.timeout)
            except Failed as exc:
                raise MCPError(self.name, "tools/list failed: %s" % (exc.text,)) from None
            page = result.get("tools")
            if not isinstance(page, list) or not all(isinstance(t, dict) for t in page):
                raise MCPError(self.name, "tools/list result has no tools list of objects")
            tools.extend(page)
            cursor = result.get("nextCursor")
            if cursor is None:  # "Treat a missing nextCursor as the end of results"
                return tools
            if not isinstance(cursor, str) or cursor in seen:
                raise MCPError(
                    self.name,
                    "tools/list nextCursor %s"
                    % ("repeats %r" % (cursor,) if isinstance(cursor, str) else "is not a string"),
                )
            seen.add(cursor)
        raise MCPError(self.name, "tools/list has more than %d pages" % (MAX_PAGES,))

    def tools(self, prefix: str = "", include: Optional[Iterable[str]] = None) -> List[Tool]:
        """The server's tools as :class:`MCPTool` s named ``prefix + name`` (see :mod:`agentloop.mcp.names`).

        ``include`` keeps only the server tools of those names (an unknown
        name raises :class:`~agentloop.errors.MCPConfigError`).  A tool whose
        schema cannot be imported (:mod:`agentloop.mcp.schemas`) is left out
        and listed in :meth:`describe`'s ``refused``; two tools that would
        share a name raise :class:`~agentloop.errors.MCPNameCollisionError`.
        """
        with self._no_secrets():
            return self._tools(prefix, include)

    def _tools(self, prefix: str, include: Optional[Iterable[str]]) -> List[Tool]:
        if not isinstance(prefix, str) or not PREFIX.match(prefix):
            raise MCPConfigError("prefix", "must match [A-Za-z0-9_-]{0,40}, got %r" % (prefix,))
        wanted = None if include is None else list(include)
        if wanted is not None and not all(isinstance(w, str) for w in wanted):
            raise MCPConfigError("include", "must be server tool names (strings)")
        listed = self.list_tools()
        names = [t.get("name") for t in listed]
        for index, name in enumerate(names):
            if not isinstance(name, str) or not name:
                raise MCPError(self.name, "tools/list entry %d has no name" % (index,))
        if wanted is not None:
            missing = [w for w in wanted if w not in names]
            if missing:
                raise MCPConfigError(
                    "include",
                    "MCP server %r has no tool %s (it has: %s)"
                    % (self.name, ", ".join(repr(m) for m in missing), short(", ".join(str(n) for n in names), 300)),
                )
        out: List[Tool] = []
        taken: Dict[str, str] = {}
        for definition in listed:
            server_name = str(definition["name"])
            if wanted is not None and server_name not in wanted:
                continue
            name = agentloop_name(prefix, server_name)
            if name in taken:
                raise MCPNameCollisionError(
                    name,
                    "tool %r of MCP server %r" % (taken[name], self.name),
                    "tool %r of MCP server %r" % (server_name, self.name),
                )
            taken[name] = server_name
            try:
                tool = self._tool(name, server_name, definition)
            except Refused as exc:
                self._refused[server_name] = self._redact(exc.reason)  # the record's: no echoed secret
                continue
            self._refused.pop(server_name, None)
            self._exposed[name] = server_name
            out.append(tool)
        return out

    def _tool(self, name: str, server_name: str, definition: Mapping[str, Any]) -> MCPTool:
        _callable(definition.get("execution"))
        description = definition.get("description")
        if description is None:
            description = definition.get("title", "")
        if not isinstance(description, str):
            raise Refused("description is not a string")
        headers_wanted = self.transport == "http" and self.modern
        parameters, headers = import_schema(definition.get("inputSchema"), "inputSchema", headers=headers_wanted)
        output: Optional[Validator] = None
        if definition.get("outputSchema") is not None:
            output_schema, _ = import_schema(definition["outputSchema"], "outputSchema")
            try:
                output = compile_schema(output_schema, tool=name)
            except AgentloopError as exc:
                raise Refused("outputSchema: %s" % (exc,)) from None
        origin = Origin(self, server_name, output, tuple(headers))

        def call(**arguments: Any) -> Any:
            return self.call(origin, arguments)

        try:
            return MCPTool(name, description, parameters, call, origin=origin)
        except AgentloopError as exc:
            raise Refused("inputSchema: %s" % (exc,)) from None

    def call(self, origin: Origin, arguments: Dict[str, Any]) -> Any:
        """One ``tools/call``: the result as received (``_meta`` dropped), or :class:`~agentloop.errors.ToolFailure`.

        The result is recorded as the server sent it; an error text has the
        transport's secrets cut out (:meth:`_no_secrets`).
        """
        with self._no_secrets():
            return self._call(origin, arguments)

    def _call(self, origin: Origin, arguments: Dict[str, Any]) -> Any:
        prefix = "MCP server %r: " % (self.name,)
        if self._closed:
            raise ToolFailure(prefix + "the client is closed")
        try:
            self.start()
        except MCPError as exc:
            raise ToolFailure(str(exc)) from None
        try:
            result = self._request("tools/call", {"name": origin.tool, "arguments": arguments}, self.timeout, origin)
        except Failed as exc:
            raise ToolFailure(prefix + "tools/call %r: %s" % (origin.tool, exc.text)) from None
        return self._result(origin, result, prefix)

    def _result(self, origin: Origin, result: Dict[str, Any], prefix: str) -> Any:
        """Check a ``CallToolResult`` (2026-07-28 "Tools: Tool Result", "Error Handling") and return it."""
        where = prefix + "tool %r " % (origin.tool,)
        kind = result.get("resultType", "complete")  # 2026-07-28 "ResultType": absent means complete
        if kind == "input_required":
            raise ToolFailure(
                where + "asked for client input (resultType input_required), which agentloop does not provide"
            )
        if kind != "complete":
            raise ToolFailure(where + "sent a result of unknown resultType %s" % (short(repr(kind), 60),))
        content = result.get("content")
        if not isinstance(content, list) or not all(
            isinstance(b, dict) and isinstance(b.get("type"), str) for b in content
        ):
            raise ToolFailure(where + "sent a malformed result: content must be a list of typed blocks")
        is_error = result.get("isError", False)
        if not isinstance(is_error, bool):
            raise ToolFailure(where + "sent a malformed result: isError must be a boolean")
        if is_error:
            texts = [b["text"] for b in content if b.get("type") == "text" and isinstance(b.get("text"), str)]
            raise ToolFailure("\n".join(texts) if texts else where + "reported an error (isError) with no text")
        if origin.output is not None:
            if "structuredContent" not in result:
                raise ToolFailure(where + "declares an outputSchema but sent no structuredContent")
            errors = origin.output.errors(result["structuredContent"], "$.structuredContent", limit=3)
            if errors:
                raise ToolFailure(
                    where
                    + "sent structuredContent that does not match its outputSchema: %s"
                    % ("; ".join(str(e) for e in errors),)
                )
        return {k: v for k, v in result.items() if k != "_meta"}

    # --- the record ------------------------------------------------------

    def describe(self, names: Optional[Iterable[str]] = None) -> Dict[str, Any]:
        """This server for the task record's ``mcp`` member (JSON, no secrets).

        ``{"name", "transport", "command"`` (stdio) or ``"host"`` (HTTP),
        ``"protocol", "server", "tools", "refused"}``: ``tools`` maps the
        agentloop names handed out (only ``names`` when given) to the
        server's names; ``refused`` lists the tools left out, with reasons.
        """
        keep = None if names is None else set(names)
        record: Dict[str, Any] = {"name": self.name, "transport": self.transport}
        record.update(self._where())
        record["protocol"] = self.protocol
        record["server"] = dict(self.server_info)
        record["tools"] = {k: v for k, v in self._exposed.items() if keep is None or k in keep}
        record["refused"] = [{"name": k, "reason": v} for k, v in self._refused.items()]
        return record


def describe(tools: Iterable[Tool], clients: Sequence[MCPClient] = ()) -> List[Dict[str, Any]]:
    """The task record's ``mcp`` member: one :meth:`MCPClient.describe` per server behind ``tools``
    (:func:`agentloop.tools.registry.tool_sources`, which the loop records).

    Servers appear in the order their first tool does; ``clients`` adds
    servers none of whose tools are in ``tools`` (all refused, say).  Local
    tools are skipped; an empty list means no MCP tools were used.
    """
    return tool_sources(tools, clients).get(MCPClient.record_member, [])
