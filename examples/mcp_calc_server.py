"""A calculator MCP server over stdio, stdlib only, for examples/mcp_agent.py.

It speaks MCP 2026-07-28 (``server/discover``, ``_meta`` on every request)
and 2025-11-25 (``initialize``), one JSON-RPC message per line on stdin and
stdout; logs go to stderr.  Tools: ``add`` and ``divide`` (structured
results with an ``outputSchema``; dividing by zero is a tool error,
``isError``).  Run it by hand with ``python examples/mcp_calc_server.py``.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, Optional

MODERN = "2026-07-28"
LEGACY = ("2025-11-25", "2025-06-18", "2025-03-26")
INFO = {"name": "calc", "version": "1.0.0"}
NUMBERS = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}
RESULT = {"type": "object", "properties": {"result": {"type": "number"}}, "required": ["result"]}
TOOLS = [
    {"name": "add", "description": "Add two numbers.", "inputSchema": NUMBERS, "outputSchema": RESULT},
    {"name": "divide", "description": "Divide a by b.", "inputSchema": NUMBERS, "outputSchema": RESULT},
]


def call(name: str, args: Dict[str, Any]) -> Dict[str, Any]:
    a, b = args["a"], args["b"]
    if name == "divide" and b == 0:
        return {"content": [{"type": "text", "text": "cannot divide %s by zero" % (a,)}], "isError": True}
    value = a + b if name == "add" else a / b
    return {
        "content": [{"type": "text", "text": json.dumps({"result": value})}],
        "structuredContent": {"result": value},
    }


def handle(message: Dict[str, Any], state: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    if "id" not in message:
        return None  # notifications/initialized, notifications/cancelled
    id_, method, params = message["id"], message.get("method"), message.get("params") or {}
    meta = params.get("_meta") or {}
    modern = "io.modelcontextprotocol/protocolVersion" in meta

    def ok(result: Dict[str, Any]) -> Dict[str, Any]:
        return {"jsonrpc": "2.0", "id": id_, "result": dict(result, resultType="complete") if modern else result}

    def error(code: int, text: str, data: Any = None) -> Dict[str, Any]:
        body: Dict[str, Any] = {"code": code, "message": text}
        if data is not None:
            body["data"] = data
        return {"jsonrpc": "2.0", "id": id_, "error": body}

    if method == "initialize":
        offered = params.get("protocolVersion")
        state["legacy"] = offered if offered in LEGACY else LEGACY[0]
        return ok({"protocolVersion": state["legacy"], "capabilities": {"tools": {}}, "serverInfo": INFO})
    if modern and meta["io.modelcontextprotocol/protocolVersion"] != MODERN:
        return error(-32022, "Unsupported protocol version", {"supported": [MODERN, *LEGACY]})
    if not modern and "legacy" not in state:
        return error(-32601, "Method not found: %s" % (method,))
    if method == "server/discover":
        return ok(
            {
                "supportedVersions": [MODERN],
                "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": INFO},
            }
        )
    if method == "tools/list":
        return ok({"tools": TOOLS})
    if method == "tools/call" and params.get("name") in ("add", "divide"):
        return ok(call(params["name"], params.get("arguments") or {}))
    return error(-32601 if method != "tools/call" else -32602, "no such method or tool")


def main() -> None:
    state: Dict[str, Any] = {}
    print("calc server ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        if line.strip():
            response = handle(json.loads(line), state)
            if response is not None:
                print(json.dumps(response), flush=True)


if __name__ == "__main__":
    main()
