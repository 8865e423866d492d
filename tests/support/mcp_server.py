"""A small MCP server for the tests, stdlib only: both revisions, stdio and HTTP.

Run over stdio as ``python tests/support/mcp_server.py [--era modern|legacy|dual]
[--legacy-version V] [--page-size N] [--chatty] [--silent-probe]
[--slow-start SECONDS [--slow-once MARKER]]``, or
in-process over HTTP with :func:`serve_http` (``http.server`` on
127.0.0.1, port 0; ``sse=True`` answers with SSE streams instead of JSON).

It follows the MCP specification where a client can tell the difference:
2026-07-28 requests must carry ``_meta`` (and on HTTP the matching
``MCP-Protocol-Version``/``Mcp-Method``/``Mcp-Name``/``Mcp-Param-*``
headers, else 400 with -32020); ``server/discover`` lists the versions;
legacy requests need ``initialize`` first (on HTTP a session); over stdio,
a process that has served a 2026-07-28 request refuses ``initialize`` with
-32022, as the 2.x Python SDK does.  Its tools:

* ``add`` -- structuredContent checked by an outputSchema (and a ``_meta`` to drop);
* ``bad_output`` -- structuredContent that breaks its outputSchema;
* ``fail`` -- ``isError`` with two text blocks;
* ``slow`` -- sleeps, honouring ``notifications/cancelled``;
* ``cancelled`` -- the request ids it was told to cancel;
* ``crash`` -- stdio: writes to stderr and exits 3; HTTP: drops the connection;
* ``garbage`` -- writes a line that is not JSON before its answer (stdio);
* ``ask`` -- sends the client a ``roots/list`` request and returns its answer (legacy);
* ``needs_input`` -- a 2026-07-28 ``input_required`` result;
* ``pick`` -- a draft-07 schema with ``definitions`` and a pydantic ``discriminator``;
* ``deps`` -- draft-07 ``dependencies`` (a client must refuse it);
* ``region`` -- an ``x-mcp-header`` parameter; returns the header it got;
* ``research`` -- ``execution.taskSupport`` ``"required"`` (a client must refuse it; a plain call gets -32601);
* ``maybe_task`` -- ``execution.taskSupport`` ``"optional"`` (called plainly);
* ``flaky`` -- on HTTP answering with SSE (either revision): the stream closes
  after its priming event (id ``prime-N``, ``retry: 200`` unless ``retry_ms``; ``prime`` changes the
  ``prime-``) and the answer waits for a ``GET`` with ``Last-Event-ID: prime-N``; elsewhere an ordinary tool;
* ``flaky_expire`` -- as ``flaky``, and the session ends before the ``GET``;
* ``flaky_lost`` -- as ``flaky``, but the answer is lost: the ``GET`` gets a 400;
* ``flaky_twice`` -- as ``flaky``, and the first resumed stream breaks too (mid-body, after an
  event with id ``again-N``): the answer comes on a second ``GET``;
* ``dotted.name`` and a 70-character name -- for name sanitising.

Every tool call's name is kept in ``Server.calls``; a test expires every
HTTP session with ``HttpState.sessions.clear()``.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple

MODERN = "2026-07-28"
LEGACY = ("2025-11-25", "2025-06-18", "2025-03-26")
INFO = {"name": "agentloop-test-server", "version": "1.2.3"}
LONG_NAME = "very_long_tool_name_" + "x" * 50

SUM = {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"], "additionalProperties": False}
TWO_INTS = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
NOTHING = {"type": "object", "additionalProperties": False}
PICK = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "PickArgs",
    "type": "object",
    "definitions": {
        "Cat": {
            "title": "Cat",
            "type": "object",
            "properties": {"kind": {"const": "cat", "title": "Kind"}, "meows": {"type": "integer", "readOnly": False}},
            "required": ["kind", "meows"],
        },
        "Dog": {
            "title": "Dog",
            "type": "object",
            "properties": {"kind": {"const": "dog"}, "barks": {"type": "boolean"}},
            "required": ["kind", "barks"],
        },
    },
    "properties": {
        "pet": {
            "oneOf": [{"$ref": "#/definitions/Cat"}, {"$ref": "#/definitions/Dog"}],
            "discriminator": {
                "propertyName": "kind",
                "mapping": {"cat": "#/definitions/Cat", "dog": "#/definitions/Dog"},
            },
            "x-order": 1,
        }
    },
    "required": ["pet"],
    "x-generated-by": "pydantic",
}

TOOLS: List[Dict[str, Any]] = [
    {"name": "add", "description": "Add two integers.", "inputSchema": TWO_INTS, "outputSchema": SUM},
    {"name": "bad_output", "description": "Claims a sum, sends a string.", "inputSchema": NOTHING, "outputSchema": SUM},
    {"name": "fail", "description": "Always fails.", "inputSchema": NOTHING},
    {
        "name": "slow",
        "description": "Sleeps.",
        "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]},
    },
    {"name": "cancelled", "description": "Request ids cancelled so far.", "inputSchema": NOTHING},
    {"name": "crash", "description": "Dies.", "inputSchema": NOTHING},
    {"name": "garbage", "description": "Writes junk to stdout first.", "inputSchema": NOTHING},
    {"name": "ask", "description": "Asks the client for its roots.", "inputSchema": NOTHING},
    {"name": "needs_input", "description": "Wants elicitation.", "inputSchema": NOTHING},
    {"name": "pick", "title": "Pick a pet", "inputSchema": PICK},
    {
        "name": "deps",
        "description": "draft-07 dependencies.",
        "inputSchema": {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "dependencies": {"a": ["b"]},
        },
    },
    {
        "name": "region",
        "description": "Echoes its Mcp-Param-Region header.",
        "inputSchema": {
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}},
            "required": ["query"],
        },
    },
    {
        "name": "research",
        "description": "Must be called as a task.",
        "inputSchema": NOTHING,
        "execution": {"taskSupport": "required"},
    },
    {
        "name": "maybe_task",
        "description": "May be called as a task.",
        "inputSchema": NOTHING,
        "execution": {"taskSupport": "optional"},
    },
    {
        "name": "flaky",
        "description": "HTTP SSE: the answer stream breaks after its priming event.",
        "inputSchema": NOTHING,
    },
    {"name": "flaky_expire", "description": "As flaky, and the session ends too.", "inputSchema": NOTHING},
    {"name": "flaky_lost", "description": "As flaky, and the answer is lost.", "inputSchema": NOTHING},
    {"name": "flaky_twice", "description": "As flaky, and the resumed stream breaks too.", "inputSchema": NOTHING},
    {"name": "dotted.name", "description": "A dotted name.", "inputSchema": NOTHING},
    {"name": LONG_NAME, "description": "A long name.", "inputSchema": NOTHING},
]


def _cursor(page: int) -> str:
    return base64.b64encode(("page:%d" % page).encode()).decode()


def _error(id_: Any, code: int, message: str, data: Any = None) -> Dict[str, Any]:
    error: Dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": error}


def _text(*texts: str) -> List[Dict[str, Any]]:
    return [{"type": "text", "text": t} for t in texts]


class Context:
    """What a request handler may need from its transport."""

    def __init__(
        self,
        cancel: threading.Event,
        ask: Optional[Callable[[str], Any]] = None,
        headers: Optional[Dict[str, str]] = None,
        crash: Optional[Callable[[], None]] = None,
        garbage: Optional[Callable[[], None]] = None,
        legacy: Optional[Dict[str, Any]] = None,
        drop: Optional[Callable[[str], None]] = None,
    ) -> None:
        self.drop = drop  # break the answer's SSE stream: "hold" the answer for a GET, "expire" the session, "lose" it
        self.cancel = cancel
        self.ask = ask
        self.headers = headers or {}
        self.crash = crash
        self.garbage = garbage
        self.legacy = legacy  # the stdio process's or HTTP session's legacy state, or None


class Server:
    """The protocol, independent of transport; ``handle`` returns the response or ``None``."""

    def __init__(
        self, era: str = "dual", legacy_version: Optional[str] = None, page_size: int = 3, silent_probe: bool = False
    ) -> None:
        self.era = era
        self.legacy_versions = (legacy_version,) if legacy_version else LEGACY
        self.page_size = page_size
        self.silent_probe = silent_probe
        self.cancelled: List[Any] = []
        self.methods: List[str] = []
        self.calls: List[str] = []

    def handle(self, message: Dict[str, Any], ctx: Context) -> Optional[Dict[str, Any]]:
        id_, method = message.get("id"), message.get("method")
        params = message.get("params") or {}
        self.methods.append(str(method))
        meta = params.get("_meta") if isinstance(params, dict) else None
        modern_request = isinstance(meta, dict) and "io.modelcontextprotocol/protocolVersion" in meta
        if method == "initialize":
            if self.era == "modern":
                return _error(id_, -32601, "initialize is not supported: this server speaks %s" % (MODERN,))
            if ctx.legacy is not None and ctx.legacy.get("served_modern"):  # as the 2.x Python SDK does over stdio
                return _error(
                    id_,
                    -32022,
                    "connection is serving the %s protocol; the initialize handshake is not accepted" % (MODERN,),
                    {"supported": [MODERN], "requested": params.get("protocolVersion")},
                )
            offered = params.get("protocolVersion")
            version = offered if offered in self.legacy_versions else self.legacy_versions[0]
            if ctx.legacy is not None:
                ctx.legacy["version"] = version
            return {
                "jsonrpc": "2.0",
                "id": id_,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": dict(INFO, title="Legacy side"),
                },
            }
        if modern_request and self.era != "legacy":
            assert isinstance(meta, dict)
            version = meta.get("io.modelcontextprotocol/protocolVersion")
            if "io.modelcontextprotocol/clientCapabilities" not in meta:
                return _error(id_, -32602, "missing io.modelcontextprotocol/clientCapabilities")
            if version != MODERN:
                return _error(
                    id_,
                    -32022,
                    "Unsupported protocol version",
                    {
                        "supported": [MODERN] + ([] if self.era == "modern" else list(self.legacy_versions)),
                        "requested": version,
                    },
                )
            if ctx.legacy is not None:
                ctx.legacy["served_modern"] = True
            if method == "server/discover":
                return self.result(
                    id_,
                    {
                        "supportedVersions": [MODERN],
                        "capabilities": {"tools": {}},
                        "_meta": {"io.modelcontextprotocol/serverInfo": INFO},
                    },
                    modern=True,
                )
            return self.operate(id_, method, params, ctx, modern=True)
        if self.era == "modern":
            return _error(id_, -32602, "missing _meta.io.modelcontextprotocol/protocolVersion")
        if ctx.legacy is None or "version" not in ctx.legacy:
            if self.silent_probe:
                return None
            return _error(id_, -32601, "Method not found: %s (not initialized)" % (method,))
        return self.operate(id_, method, params, ctx, modern=False)

    def result(self, id_: Any, result: Dict[str, Any], modern: bool) -> Dict[str, Any]:
        if modern:
            result = dict(result, resultType="complete")
        return {"jsonrpc": "2.0", "id": id_, "result": result}

    def operate(
        self, id_: Any, method: Any, params: Dict[str, Any], ctx: Context, modern: bool
    ) -> Optional[Dict[str, Any]]:
        if method == "ping":
            return self.result(id_, {}, modern)
        if method == "tools/list":
            page = 0
            if "cursor" in params:
                try:
                    page = int(base64.b64decode(params["cursor"]).decode().split(":")[1])
                except (ValueError, IndexError, TypeError):
                    return _error(id_, -32602, "invalid cursor")
            chunk = TOOLS[page * self.page_size : (page + 1) * self.page_size]
            result: Dict[str, Any] = {"tools": chunk}
            if (page + 1) * self.page_size < len(TOOLS):
                result["nextCursor"] = _cursor(page + 1)
            if modern:
                result.update(ttlMs=0, cacheScope="private")
            return self.result(id_, result, modern)
        if method != "tools/call":
            return _error(id_, -32601, "Method not found: %s" % (method,))
        name, args = params.get("name"), params.get("arguments") or {}
        self.calls.append(str(name))
        if name in ("flaky", "flaky_expire", "flaky_lost", "flaky_twice"):
            if ctx.drop is not None:
                ctx.drop(
                    {"flaky": "hold", "flaky_expire": "expire", "flaky_lost": "lose", "flaky_twice": "twice"}[name]
                )
            return self.result(id_, {"content": _text("answered %s" % (name,))}, modern)
        if name == "add":
            total = args["a"] + args["b"]
            return self.result(
                id_,
                {
                    "content": _text("%d" % total),
                    "structuredContent": {"sum": total},
                    "isError": False,
                    "_meta": {"trace": "abc"},
                },
                modern,
            )
        if name == "bad_output":
            return self.result(id_, {"content": _text("seven"), "structuredContent": {"sum": "seven"}}, modern)
        if name == "fail":
            return self.result(id_, {"content": _text("first line", "second line"), "isError": True}, modern)
        if name == "slow":
            if ctx.cancel.wait(float(args["seconds"])):
                return None  # cancelled: "MUST NOT send any further messages for it"
            return self.result(id_, {"content": _text("slept")}, modern)
        if name == "cancelled":
            return self.result(
                id_,
                {"content": _text(json.dumps(self.cancelled)), "structuredContent": {"ids": list(self.cancelled)}},
                modern,
            )
        if name == "crash" and ctx.crash is not None:
            ctx.crash()
            return None
        if name == "garbage" and ctx.garbage is not None:
            ctx.garbage()
            return self.result(id_, {"content": _text("after the junk")}, modern)
        if name == "ask" and ctx.ask is not None:
            answer = ctx.ask("roots/list")
            return self.result(
                id_, {"content": _text(json.dumps(answer)), "structuredContent": {"answer": answer}}, modern
            )
        if name == "needs_input" and modern:
            return {
                "jsonrpc": "2.0",
                "id": id_,
                "result": {
                    "resultType": "input_required",
                    "inputRequests": {
                        "who": {
                            "method": "elicitation/create",
                            "params": {"mode": "form", "message": "Name?", "requestedSchema": {"type": "object"}},
                        }
                    },
                },
            }
        if name == "pick":
            return self.result(id_, {"content": _text("picked %s" % (args["pet"]["kind"],))}, modern)
        if name == "region":
            return self.result(
                id_,
                {
                    "content": _text("ok"),
                    "structuredContent": {"header": ctx.headers.get("mcp-param-region"), "region": args.get("region")},
                },
                modern,
            )
        if name == "research":  # 2025-11-25 "Tasks: Tool-Level Negotiation": a plain call of a task-required tool
            return _error(id_, -32601, "Method not found: research must be called as a task")
        if name in ("dotted.name", LONG_NAME, "maybe_task"):
            return self.result(id_, {"content": _text(name)}, modern)
        return _error(id_, -32602, "Unknown tool: %s" % (name,))


# --- stdio ----------------------------------------------------------------


def serve_stdio(server: Server, chatty: bool = False) -> None:
    out = sys.stdout.buffer
    write_lock = threading.Lock()
    cancels: Dict[Any, threading.Event] = {}
    answers: Dict[Any, "Tuple[threading.Event, List[Any]]"] = {}
    legacy: Dict[str, Any] = {}
    counter = [0]

    def send(message: Dict[str, Any]) -> None:
        with write_lock:
            out.write(json.dumps(message).encode() + b"\n")
            out.flush()

    def ask(method: str) -> Any:
        counter[0] += 1
        key = "ask-%d" % counter[0]
        slot: "Tuple[threading.Event, List[Any]]" = (threading.Event(), [])
        answers[key] = slot
        send({"jsonrpc": "2.0", "id": key, "method": method})
        slot[0].wait(10)
        return slot[1][0] if slot[1] else None

    def crash() -> None:
        sys.stderr.write("fatal: the crash tool was called\n")
        sys.stderr.flush()
        os._exit(3)

    def garbage() -> None:
        with write_lock:
            out.write(b"this is not json\n")
            out.flush()

    def work(message: Dict[str, Any]) -> None:
        event = cancels.setdefault(message.get("id"), threading.Event())
        ctx = Context(event, ask=ask, crash=crash, garbage=garbage, legacy=legacy)
        response = server.handle(message, ctx)
        if response is not None:
            send(response)

    if chatty:
        sys.stderr.write("x" * 200000 + "\n")
        sys.stderr.flush()
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        message = json.loads(line)
        if chatty:
            sys.stderr.write("got %s %s\n" % (message.get("method"), "y" * 2000))
            sys.stderr.flush()
        if "method" not in message:  # a response to ask()
            slot = answers.pop(message.get("id"), None)
            if slot is not None:
                slot[1].append(message.get("error") or message.get("result"))
                slot[0].set()
            continue
        if "id" not in message:
            if message["method"] == "notifications/cancelled":
                request_id = message["params"]["requestId"]
                server.cancelled.append(request_id)
                cancels.setdefault(request_id, threading.Event()).set()
            continue
        threading.Thread(target=work, args=(message,), daemon=True).start()


# --- HTTP -----------------------------------------------------------------


class HttpState:
    def __init__(self, server: Server, sse: bool, retry_ms: int = 200, prime: str = "prime-") -> None:
        self.retry_ms = retry_ms  # the priming event's retry field
        self.prime = prime  # the priming event's id, before its number
        self.server = server
        self.sse = sse
        self.sessions: Dict[str, Dict[str, Any]] = {}
        self.requests: List[Dict[str, str]] = []  # the headers of every POST, lowercased
        self.deleted: List[str] = []
        self.answers: Dict[Any, "Tuple[threading.Event, List[Any]]"] = {}
        self.lock = threading.Lock()
        self.streams = itertools.count(1)
        self.session_ids = itertools.count(1)
        self.held: Dict[str, Tuple[str, bytes]] = {}  # priming event id -> (session, the answer event) for GET
        self.gets: List[Dict[str, str]] = []  # the headers of every GET, lowercased


def _b64(value: str) -> str:
    if value.startswith("=?base64?") and value.endswith("?="):
        return base64.b64decode(value[9:-2]).decode("utf-8")
    return value


class Handler(BaseHTTPRequestHandler):
    state: HttpState
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _reply(self, status: int, body: Optional[Dict[str, Any]], extra: Optional[Dict[str, str]] = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        """2025-11-25 "Resumability and Redelivery": a stream resumed with Last-Event-ID; no other GET stream."""
        headers = {k.lower(): v for k, v in self.headers.items()}
        if "last-event-id" in headers:  # http.server reads header bytes as Latin-1; WHATWG sends the id as UTF-8
            headers["last-event-id"] = headers["last-event-id"].encode("latin-1").decode("utf-8", "replace")
        self.state.gets.append(headers)
        cursor = headers.get("last-event-id")
        if cursor is None:
            return self._reply(405, None)
        if headers.get("mcp-session-id") not in self.state.sessions:
            return self._reply(404, _error(None, -32600, "Session not found"))
        held = self.state.held.pop(cursor, None)
        if held is None or held[0] != headers.get("mcp-session-id"):
            return self._reply(400, _error(None, -32600, "no stream to resume at %s" % (cursor,)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        if held[1]:
            self.end_headers()
            self.close_connection = True
            self.wfile.write(b": resumed\n\n" + held[1])
            self.wfile.flush()
            return
        # flaky_twice: one chunk of a chunked body, then the connection closes (the client reads a broken stream)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        chunk = ("id: again-%s\ndata: \n\n" % (cursor,)).encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.flush()

    def do_DELETE(self) -> None:
        session = self.headers.get("Mcp-Session-Id", "")
        with self.state.lock:
            self.state.sessions.pop(session, None)
            self.state.deleted.append(session)
        self._reply(200, None)

    def do_POST(self) -> None:
        state = self.state
        headers = {k.lower(): v for k, v in self.headers.items()}
        state.requests.append(headers)
        message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        accept = headers.get("accept", "")
        if "application/json" not in accept or "text/event-stream" not in accept:
            return self._reply(406, _error(None, -32600, "Accept must list application/json and text/event-stream"))
        if "method" not in message:  # the client answering ask()
            slot = state.answers.pop(message.get("id"), None)
            if slot is not None:
                slot[1].append(message.get("error") or message.get("result"))
                slot[0].set()
            return self._reply(202, None)
        if "id" not in message:
            return self._reply(202, None)
        params = message.get("params") or {}
        meta = params.get("_meta") if isinstance(params, dict) else None
        legacy: Optional[Dict[str, Any]] = None
        extra: Dict[str, str] = {}
        if (
            isinstance(meta, dict)
            and "io.modelcontextprotocol/protocolVersion" in meta
            and state.server.era != "legacy"
        ):
            # 2026-07-28 "Server Validation"
            problems = []
            if headers.get("mcp-protocol-version") != meta["io.modelcontextprotocol/protocolVersion"]:
                problems.append("MCP-Protocol-Version")
            if headers.get("mcp-method") != message["method"]:
                problems.append("Mcp-Method")
            if message["method"] == "tools/call":
                if _b64(headers.get("mcp-name", "")) != params.get("name"):
                    problems.append("Mcp-Name")
                region = (params.get("arguments") or {}).get("region")
                got = headers.get("mcp-param-region")
                if (region is None) != (got is None) or (got is not None and _b64(got) != region):
                    problems.append("Mcp-Param-Region")
            if problems:
                return self._reply(400, _error(message["id"], -32020, "Header mismatch: %s" % ", ".join(problems)))
            if message["method"] not in ("server/discover", "tools/list", "tools/call"):
                return self._reply(404, _error(message["id"], -32601, "Method not found"))
        elif message["method"] == "initialize":
            if state.server.era == "modern":
                return self._reply(400, _error(message["id"], -32601, "initialize is not supported"))
            session = "s-%d" % (next(state.session_ids),)
            legacy = {}
            state.sessions[session] = legacy
            extra["Mcp-Session-Id"] = session
        elif state.server.era == "modern":
            return self._reply(400, _error(message["id"], -32602, "missing _meta"))
        else:
            session = headers.get("mcp-session-id")
            if session is None:
                return self._reply(400, _error(message["id"], -32600, "Bad Request: no session"))
            if session not in state.sessions:
                return self._reply(404, _error(message["id"], -32600, "Session not found"))
            legacy = state.sessions[session]
            version = headers.get("mcp-protocol-version")
            if version is not None and version != legacy.get("version"):
                return self._reply(400, _error(message["id"], -32600, "bad MCP-Protocol-Version"))
        streaming = state.sse
        ask = self._ask if streaming and legacy is not None else None
        dropped: List[str] = []  # [mode] once a flaky tool asked for a broken stream
        drop = dropped.append if streaming else None
        ctx = Context(threading.Event(), ask=ask, headers=headers, crash=self._crash, legacy=legacy, drop=drop)
        prime = "%s%d" % (state.prime, next(state.streams))
        if streaming:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            for k, v in extra.items():
                self.send_header(k, v)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            # 2025-11-25 "Sending Messages" 6: a priming event, an id and empty data (as the TypeScript SDK sends it)
            self.wfile.write(("id: %s\nretry: %d\ndata: \n\n: keep-alive\r\n\r\n" % (prime, state.retry_ms)).encode())
            self.wfile.write(
                b"event: message\ndata: "
                + json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {"progressToken": 1, "progress": 0},
                    }
                ).encode()
                + b"\n\n"
            )
            self.wfile.flush()
        response = state.server.handle(message, ctx)
        if response is None:
            return
        if streaming:
            text = json.dumps(response, indent=1)  # several data lines per event
            event = "".join("data: %s\r\n" % line for line in text.split("\n")) + "\r\n"
            if dropped:  # the connection closes now; the answer waits for the GET that resumes the stream
                session = headers.get("mcp-session-id", "")
                with state.lock:
                    answer = ("id: answer-%s\n" % (prime,) + event).encode()
                    if dropped[0] == "twice":  # the first GET gets a stream that breaks after one event
                        state.held[prime] = (session, b"")
                        state.held["again-" + prime] = (session, answer)
                    elif dropped[0] != "lose":
                        state.held[prime] = (session, answer)
                    if dropped[0] == "expire":
                        state.sessions.pop(session, None)
                return
            try:
                self.wfile.write(event.encode())
                self.wfile.flush()
            except OSError:
                pass
            return
        status = 200 if "result" in response or response["error"]["code"] not in (-32022, -32020, -32602) else 400
        try:
            self._reply(status, response, extra)
        except OSError:
            pass

    def _crash(self) -> None:
        self.close_connection = True
        raise ConnectionAbortedError("the crash tool was called")

    def _ask(self, method: str) -> Any:
        state = self.state
        key = "ask-%d" % (len(state.answers) + 1000,)
        slot: "Tuple[threading.Event, List[Any]]" = (threading.Event(), [])
        state.answers[key] = slot
        self.wfile.write(b"data: " + json.dumps({"jsonrpc": "2.0", "id": key, "method": method}).encode() + b"\n\n")
        self.wfile.flush()
        slot[0].wait(10)
        return slot[1][0] if slot[1] else None


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the crash tool and abandoned slow calls end connections on purpose


def serve_http(
    era: str = "dual",
    sse: bool = False,
    legacy_version: Optional[str] = None,
    page_size: int = 3,
    retry_ms: int = 200,
    prime: str = "prime-",
) -> Tuple[ThreadingHTTPServer, HttpState, str]:
    """Start a server thread; return it, its state and its URL (``server.shutdown()`` to stop)."""
    state = HttpState(Server(era, legacy_version, page_size), sse, retry_ms, prime)
    handler = type("BoundHandler", (Handler,), {"state": state})
    httpd = _QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return httpd, state, "http://127.0.0.1:%d/mcp?token=query-secret" % (httpd.server_address[1],)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--era", default="dual", choices=("modern", "legacy", "dual"))
    parser.add_argument("--legacy-version")
    parser.add_argument("--page-size", type=int, default=3)
    parser.add_argument("--chatty", action="store_true")
    parser.add_argument("--silent-probe", action="store_true")
    parser.add_argument("--exit-at-start", type=int)
    parser.add_argument("--slow-start", type=float, help="sleep this long before reading stdin (a cold start)")
    parser.add_argument(
        "--slow-once", metavar="MARKER", help="with --slow-start: only while MARKER does not exist (creates it)"
    )
    args = parser.parse_args()
    if args.slow_start and not (args.slow_once and os.path.exists(args.slow_once)):
        if args.slow_once:
            open(args.slow_once, "w").close()
        time.sleep(args.slow_start)
    if args.exit_at_start is not None:
        sys.stderr.write("cannot open the database: secret-env-value missing\n")
        sys.exit(args.exit_at_start)
    serve_stdio(Server(args.era, args.legacy_version, args.page_size, args.silent_probe), chatty=args.chatty)


if __name__ == "__main__":
    main()
