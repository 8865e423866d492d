"""Tools from MCP servers (Model Context Protocol), over stdio and Streamable HTTP.

Client side only, stdlib only.  :class:`MCPStdio` starts a server as a
subprocess, :class:`MCPHttp` talks to one at a URL; both are context
managers whose ``.tools(prefix="", include=None)`` returns ordinary
:class:`~agentloop.tools.Tool` objects (:class:`MCPTool`) for a run::

    with MCPStdio([sys.executable, "calc_server.py"], name="calc") as calc:
        tools = combine_tools(local_tools, calc.tools(prefix="calc_"))
        run(task, model, tools, transcript="t.jsonl", max_steps=8, max_tokens=4000)
        record = describe(tools)  # the task record's "mcp" member

Revisions 2026-07-28 (stateless, ``server/discover``) and 2025-11-25
(``initialize``; servers answering 2025-06-18 or 2025-03-26 accepted).  Its
parts: JSON-RPC messages (``jsonrpc``), tool names
(``names``), the schema import policy (``schemas``), the protocol
(``client``) and the two transports (``stdio``, ``http``); SSE parsing is
:mod:`agentloop.wire.sse`.
"""

from __future__ import annotations

from ..errors import MCPConfigError, MCPError, MCPNameCollisionError
from .client import LEGACY, LEGACY_ACCEPTED, MODERN, PROTOCOLS, MCPClient, MCPTool, Origin, describe
from .http import MCPHttp
from .names import agentloop_name, combine_tools
from .schemas import Refused, import_schema
from .stdio import MCPStdio

__all__ = [
    "MCPStdio",
    "MCPHttp",
    "MCPClient",
    "MCPTool",
    "Origin",
    "describe",
    "combine_tools",
    "agentloop_name",
    "import_schema",
    "Refused",
    "MCPError",
    "MCPConfigError",
    "MCPNameCollisionError",
    "MODERN",
    "LEGACY",
    "LEGACY_ACCEPTED",
    "PROTOCOLS",
]
