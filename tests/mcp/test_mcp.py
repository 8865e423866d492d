"""agentloop.mcp against tests/support/mcp_server.py, over stdio and HTTP, and in the real loop.

Every client here has a timeout of a few seconds, so a hang is a failure,
never a stuck suite.  The server speaks 2026-07-28, 2025-11-25 or both
(``--era``); see its docstring for its tools.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import tempfile
import time
import unittest
from typing import Any, Dict, List

import agentloop
from agentloop import ModelReply, ScriptedModel, ToolCall, Tool, verify_file
from agentloop.errors import (
    DuplicateToolError,
    MCPConfigError,
    MCPError,
    MCPNameCollisionError,
    NotPicklableError,
    ToolFailure,
)
from agentloop.mcp import MCPHttp, MCPStdio, MCPTool, agentloop_name, combine_tools, describe, import_schema
from agentloop.mcp.jsonrpc import Malformed, Notification, Request, Response, parse
from agentloop.mcp.schemas import HeaderParam, Refused
from agentloop.mcp.http import header_value
from tests.support import mcp_server
from tests.support.mcp_server import LONG_NAME, PICK, TOOLS, serve_http

SERVER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support", "mcp_server.py")
# The server tools in server order, minus the two every client refuses.
LISTED = [t["name"] for t in TOOLS if t["name"] not in ("deps", "research")]
DEPS_REASON = (
    "inputSchema at /: draft-07 dependencies (2020-12 splits it into dependentRequired and dependentSchemas) "
    "means something else in 2020-12"
)
TASK_REASON = 'execution.taskSupport is "required": the tool must be called as a task, which agentloop does not do'
REFUSED = [{"name": "deps", "reason": DEPS_REASON}, {"name": "research", "reason": TASK_REASON}]


def stdio(*args: str, **kwargs: Any) -> MCPStdio:
    kwargs.setdefault("timeout", 5)
    kwargs.setdefault("init_timeout", 5)
    return MCPStdio([sys.executable, SERVER] + list(args), name=kwargs.pop("name", "t"), **kwargs)


def by_server_name(tools: List[Tool]) -> Dict[str, MCPTool]:
    out = {}
    for tool in tools:
        assert isinstance(tool, MCPTool) and tool.origin is not None
        out[tool.origin.tool] = tool
    return out


def failure(tool: Tool, arguments: Dict[str, Any]) -> str:
    try:
        value = tool.invoke(arguments)
    except ToolFailure as exc:
        return exc.text
    raise AssertionError("expected a ToolFailure, got %r" % (value,))


class TestNames(unittest.TestCase):
    def test_prefix_and_sanitising(self) -> None:
        self.assertEqual(agentloop_name("calc_", "add"), "calc_add")
        self.assertEqual(agentloop_name("", "admin.tools.list"), "admin_tools_list")
        self.assertEqual(agentloop_name("", ""), "_")
        self.assertEqual(agentloop_name("", "a b/ü"), "a_b__")

    def test_long_names_are_cut_and_hashed(self) -> None:
        name = agentloop_name("t_", LONG_NAME)
        # python3 -c 'import hashlib; print(hashlib.sha256(b"t_very_long_tool_name_" + b"x"*50).hexdigest()[:8])'
        self.assertEqual(name, ("t_" + LONG_NAME)[:55] + "_33d54272")
        self.assertEqual(len(name), 64)
        self.assertNotEqual(agentloop_name("", "y" * 70), agentloop_name("", "y" * 71))

    def test_collisions_name_both_sides(self) -> None:
        local = Tool("add", "local add", {"type": "object"}, lambda: 1)
        with stdio() as server:
            remote = server.tools(include=["add"])
            with self.assertRaises(MCPNameCollisionError) as caught:
                combine_tools([local], remote)
            self.assertEqual(
                str(caught.exception),
                "tool name 'add' is taken twice: local tool 'add' and tool 'add' of MCP server 't'",
            )
            with stdio(name="u") as other:
                with self.assertRaises(MCPNameCollisionError) as caught:
                    combine_tools(remote, other.tools(include=["add"]))
                self.assertIn("tool 'add' of MCP server 't' and tool 'add' of MCP server 'u'", str(caught.exception))
                self.assertEqual(
                    [t.name for t in combine_tools([local], other.tools(prefix="u_", include=["add"]))],
                    ["add", "u_add"],
                )
                # Without combine_tools, a registry names both sides too (it used to say only
                # "a tool named 'add' is already registered").
                pairs = [
                    ([local] + remote, "local tool 'add' and tool 'add' of MCP server 't'"),
                    (
                        remote + other.tools(include=["add"]),
                        "tool 'add' of MCP server 't' and tool 'add' of MCP server 'u'",
                    ),
                ]
                for tools, text in pairs:
                    with self.assertRaises(DuplicateToolError) as caught:
                        agentloop.ToolRegistry(tools)
                    self.assertEqual(str(caught.exception), "tool name 'add' is taken twice: " + text)
                with self.assertRaises(DuplicateToolError) as caught:
                    agentloop.ToolRegistry([local, Tool("add", "another", {"type": "object"}, lambda: 2)])
                # Two local tools: as before.
                self.assertEqual(str(caught.exception), "a tool named 'add' is already registered")


class TestSchemaPolicy(unittest.TestCase):
    def test_pydantic_draft_07_is_rewritten(self) -> None:
        schema, headers = import_schema(PICK, "inputSchema")
        self.assertEqual(headers, [])
        self.assertEqual(
            schema,
            {
                "title": "PickArgs",
                "type": "object",
                "$defs": {
                    "Cat": {
                        "title": "Cat",
                        "type": "object",
                        "properties": {"kind": {"const": "cat", "title": "Kind"}, "meows": {"type": "integer"}},
                        "required": ["kind", "meows"],
                    },
                    "Dog": {
                        "title": "Dog",
                        "type": "object",
                        "properties": {"kind": {"const": "dog"}, "barks": {"type": "boolean"}},
                        "required": ["kind", "barks"],
                    },
                },
                "properties": {"pet": {"oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]}},
                "required": ["pet"],
            },
        )
        tool = Tool("pick", "", schema, lambda pet: pet)
        self.assertIsNone(tool.first_error({"pet": {"kind": "dog", "barks": True}}))
        self.assertIsNotNone(tool.first_error({"pet": {"kind": "dog", "meows": 1}}))

    def test_data_and_property_names_are_left_alone(self) -> None:
        schema = {
            "type": "object",
            "properties": {
                "definitions": {"type": "string", "default": {"x-keep": 1, "readOnly": True}},
                "x-custom": {"$ref": "#/properties/definitions"},
                "e": {"enum": [{"definitions": 1}]},
            },
            "definitions": {"A": {"type": "integer"}},
        }
        out, _ = import_schema(schema, "inputSchema")
        self.assertEqual(out["properties"]["definitions"]["default"], {"x-keep": 1, "readOnly": True})
        self.assertEqual(out["properties"]["x-custom"], {"$ref": "#/properties/definitions"})
        self.assertEqual(out["properties"]["e"], {"enum": [{"definitions": 1}]})
        self.assertEqual(out["$defs"], {"A": {"type": "integer"}})

    def test_refusals(self) -> None:
        cases = [
            (
                {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"},
                "inputSchema: $schema 'http://json-schema.org/draft-04/schema#' "
                "is not a dialect agentloop imports (2020-12, draft-07)",
            ),
            (TOOLS[[t["name"] for t in TOOLS].index("deps")]["inputSchema"], DEPS_REASON),
            (
                {"$schema": mcp_server.PICK["$schema"], "type": "object", "properties": {"a": {"items": [{}]}}},
                "inputSchema at /properties/a: draft-07 array-form items (2020-12 spells it prefixItems)",
            ),
            (
                {"$schema": mcp_server.PICK["$schema"], "type": "object", "unevaluatedProperties": False},
                "inputSchema at /: unevaluatedProperties is not a draft-07 keyword "
                "(draft-07 ignores it, 2020-12 applies it)",
            ),
            (
                {"$schema": mcp_server.PICK["$schema"], "properties": {"a": {"$ref": "#/definitions/A", "minimum": 1}}},
                "inputSchema at /properties/a: draft-07 ignores minimum beside $ref, 2020-12 applies it",
            ),
            ("nope", "inputSchema is not a JSON Schema object (got str)"),
        ]
        for schema, reason in cases:
            with self.subTest(reason):
                with self.assertRaises(Refused) as caught:
                    import_schema(schema, "inputSchema")
                self.assertEqual(caught.exception.reason, reason)

    def test_x_mcp_header(self) -> None:
        schema = {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "deep": {"type": "object", "properties": {"n": {"type": ["integer", "null"], "x-mcp-header": "N"}}},
            },
        }
        out, headers = import_schema(schema, "inputSchema", headers=True)
        self.assertEqual(headers, [HeaderParam("Region", ("region",)), HeaderParam("N", ("deep", "n"))])
        self.assertNotIn("x-mcp-header", json.dumps(out))
        self.assertEqual(import_schema(schema, "inputSchema")[1], [])  # stdio ignores them
        bad = [
            (
                {"type": "object", "properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
                "not string, integer or boolean",
            ),
            (
                {
                    "type": "object",
                    "properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}},
                },
                "not on a property reached through properties alone",
            ),
            (
                {"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A b"}}},
                "non-empty HTTP token",
            ),
            (
                {
                    "type": "object",
                    "properties": {
                        "a": {"type": "string", "x-mcp-header": "A"},
                        "b": {"type": "string", "x-mcp-header": "a"},
                    },
                },
                "used twice",
            ),
        ]
        for schema, reason in bad:
            with self.subTest(reason):
                with self.assertRaises(Refused) as caught:
                    import_schema(schema, "inputSchema", headers=True)
                self.assertIn(reason, caught.exception.reason)

    def test_header_value_encoding(self) -> None:
        # The table in 2026-07-28 "Streamable HTTP: Value Encoding".
        self.assertEqual(header_value("us-west1"), "us-west1")
        self.assertEqual(header_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=")
        self.assertEqual(header_value(" padded "), "=?base64?IHBhZGRlZCA=?=")
        self.assertEqual(header_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=")
        self.assertEqual(header_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=")
        self.assertEqual((header_value(True), header_value(-7)), ("true", "-7"))


class TestWire(unittest.TestCase):
    def test_messages(self) -> None:
        self.assertEqual(parse(b'{"jsonrpc":"2.0","id":1,"result":{}}'), Response(1, result={}))
        self.assertEqual(parse('{"jsonrpc":"2.0","id":"a","method":"ping"}'), Request("a", "ping", {}))
        self.assertEqual(parse('{"jsonrpc":"2.0","method":"n","params":{"x":1}}'), Notification("n", {"x": 1}))
        for data, reason in [
            (b"[1]", "a JSON-RPC batch, which MCP does not use"),
            (b'{"id":1,"result":{}}', '"jsonrpc" must be "2.0"'),
            (b'{"jsonrpc":"2.0","id":true,"result":{}}', "id must be a string or an integer, got true"),
            (
                b'{"jsonrpc":"2.0","id":1,"result":{},"error":{}}',
                "a response must have exactly one of result and error",
            ),
            (b'{"jsonrpc":"2.0","id":1,"result":NaN}', "not JSON: NaN is not a JSON number"),
            (b'{"jsonrpc":"2.0","id":1,"result":[]}', "result must be an object, got list"),
            (b"\xff", "not UTF-8 (invalid start byte)"),
        ]:
            with self.subTest(reason):
                with self.assertRaises(Malformed) as caught:
                    parse(data)
                self.assertEqual(str(caught.exception), reason)


class StdioCase(unittest.TestCase):
    def check_server(self, era: str, protocol: str) -> None:
        with stdio("--era", era) as server:
            self.assertEqual(server.protocol, protocol)
            tools = server.tools(prefix="t_")
            # tools/list: three per page, every page, server order; deps and research refused.
            self.assertEqual([t.origin.tool for t in tools if isinstance(t, MCPTool) and t.origin], LISTED)
            self.assertEqual(server.describe()["refused"], REFUSED)
            tool = by_server_name(tools)
            value = tool["add"].invoke({"a": 2, "b": 3})
            expected = {"content": [{"type": "text", "text": "5"}], "structuredContent": {"sum": 5}, "isError": False}
            if protocol == "2026-07-28":
                expected["resultType"] = "complete"
            self.assertEqual(value, expected)  # as received, _meta dropped
            self.assertEqual(failure(tool["fail"], {}), "first line\nsecond line")
            self.assertEqual(
                failure(tool["bad_output"], {}),
                "MCP server 't': tool 'bad_output' sent structuredContent that does not match its "
                "outputSchema: $.structuredContent.sum: expected type integer, got str",
            )
            self.assertEqual(
                tool["pick"].invoke({"pet": {"kind": "cat", "meows": 3}})["content"][0]["text"], "picked cat"
            )
            self.assertEqual(tool["dotted.name"].name, "t_dotted_name")


class TestStdio(StdioCase):
    def test_modern_dual_and_legacy_servers(self) -> None:
        for era, protocol in (("dual", "2026-07-28"), ("modern", "2026-07-28"), ("legacy", "2025-11-25")):
            with self.subTest(era):
                self.check_server(era, protocol)

    def test_legacy_versions(self) -> None:
        with stdio("--era", "legacy", "--legacy-version", "2025-06-18") as server:
            self.assertEqual(server.protocol, "2025-06-18")
        with stdio("--era", "dual", protocol="2025-03-26") as server:
            self.assertEqual(server.protocol, "2025-03-26")
        with self.assertRaises(MCPError) as caught:
            stdio("--era", "legacy", "--legacy-version", "2024-11-05").start()
        self.assertEqual(
            str(caught.exception),
            "MCP server 't': it answered initialize with protocol version "
            "'2024-11-05'; agentloop accepts 2025-11-25, 2025-06-18, 2025-03-26",
        )

    def test_forced_protocols_refuse_the_other_era(self) -> None:
        with self.assertRaises(MCPError) as caught:
            stdio("--era", "legacy", protocol="2026-07-28").start()
        self.assertIn(
            "server/discover failed (protocol 2026-07-28 was asked for): JSON-RPC error -32601", str(caught.exception)
        )
        with self.assertRaises(MCPError) as caught:
            stdio("--era", "modern", protocol="2025-11-25").start()
        self.assertIn("initialize failed: JSON-RPC error -32601", str(caught.exception))

    def test_a_silent_legacy_server_is_probed_within_bounds(self) -> None:
        started = time.monotonic()
        # No answer in init_timeout: a fresh process gets initialize (3 s each: a Python start on a busy machine).
        with stdio("--era", "legacy", "--silent-probe", init_timeout=3) as server:
            self.assertEqual(server.protocol, "2025-11-25")
            self.assertEqual(len(server.tools()), len(LISTED))
        self.assertLess(time.monotonic() - started, 3 + 3 + 2)

    def test_a_slow_start_is_waited_for_not_taken_for_a_legacy_server(self) -> None:
        # 5.5 s: longer than the 5 s the probe used to wait before falling back to initialize on the
        # same connection, which a server that has answered the probe refuses (-32022).
        started = time.monotonic()
        with stdio("--era", "dual", "--slow-start", "5.5", init_timeout=15) as server:
            self.assertEqual(server.protocol, "2026-07-28")
            added = by_server_name(server.tools())["add"].invoke({"a": 1, "b": 2})
            self.assertEqual(added["structuredContent"], {"sum": 3})
        self.assertLess(time.monotonic() - started, 15)

    def test_an_unanswered_probe_falls_back_on_a_fresh_process(self) -> None:
        # The first process sleeps through the probe's whole budget, then would answer it and refuse
        # initialize; the second starts at once (a warm start) and is never probed.
        with tempfile.TemporaryDirectory() as tmp:
            marker = os.path.join(tmp, "warm")
            with stdio("--era", "dual", "--slow-start", "5", "--slow-once", marker, init_timeout=3) as server:
                self.assertEqual(server.protocol, "2025-11-25")
                added = by_server_name(server.tools())["add"].invoke({"a": 1, "b": 2})
                self.assertEqual(added["structuredContent"], {"sum": 3})

    def test_a_server_too_slow_for_the_budget_says_what_was_tried(self) -> None:
        started = time.monotonic()
        with self.assertRaises(MCPError) as caught:
            stdio("--era", "dual", "--slow-start", "4", init_timeout=0.5).start()
        self.assertEqual(
            str(caught.exception),
            "MCP server 't': initialize failed (server/discover got no answer "
            "in 0.5 s; the server was restarted for initialize): timed out after "
            "0.5 s",
        )
        self.assertLess(time.monotonic() - started, 6)

    def test_timeout_cancels_then_the_next_call_works(self) -> None:
        with stdio(timeout=1) as server:
            tool = by_server_name(server.tools())
            started = time.monotonic()
            self.assertEqual(
                failure(tool["slow"], {"seconds": 5}),
                "MCP server 't': tools/call 'slow': timed out after 1 s (sent notifications/cancelled)",
            )
            self.assertLess(time.monotonic() - started, 2.5)
            self.assertEqual(tool["add"].invoke({"a": 1, "b": 1})["structuredContent"], {"sum": 2})
            # The server saw notifications/cancelled for the slow call's request id.
            self.assertEqual(len(tool["cancelled"].invoke({})["structuredContent"]["ids"]), 1)

    def test_a_crash_fails_this_call_and_every_later_one_the_same_way(self) -> None:
        with stdio() as server:
            tool = by_server_name(server.tools())
            text = (
                "MCP server 't': tools/call '%s': exited with status 3; last stderr: fatal: the crash tool was called"
            )
            self.assertEqual(failure(tool["crash"], {}), text % ("crash",))
            self.assertEqual(failure(tool["add"], {"a": 1, "b": 2}), text % ("add",))
        self.assertEqual(failure(tool["add"], {"a": 1, "b": 2}), "MCP server 't': the client is closed")

    def test_malformed_output_fails_as_data_and_the_server_stays_usable(self) -> None:
        with stdio() as server:
            tool = by_server_name(server.tools())
            self.assertEqual(
                failure(tool["garbage"], {}),
                "MCP server 't': tools/call 'garbage': sent a malformed message: "
                "not JSON (Expecting value: line 1 column 1 (char 0)): this is not json",
            )
            self.assertEqual(tool["add"].invoke({"a": 1, "b": 1})["structuredContent"], {"sum": 2})

    def test_server_requests_get_method_not_found(self) -> None:
        with stdio("--era", "legacy") as server:
            answer = by_server_name(server.tools())["ask"].invoke({})["structuredContent"]["answer"]
        self.assertEqual(answer, {"code": -32601, "message": "Method not found: agentloop does not serve roots/list"})

    def test_input_required_fails_as_data(self) -> None:
        with stdio("--era", "modern") as server:
            self.assertEqual(
                failure(by_server_name(server.tools())["needs_input"], {}),
                "MCP server 't': tool 'needs_input' asked for client input (resultType input_required), "
                "which agentloop does not provide",
            )

    def test_a_chatty_stderr_never_blocks_the_server(self) -> None:
        with stdio("--chatty", "--page-size", "1") as server:
            tool = by_server_name(server.tools())
            for i in range(20):
                self.assertEqual(tool["add"].invoke({"a": i, "b": 1})["structuredContent"], {"sum": i + 1})

    def test_start_failures_raise_before_the_run_without_env_values(self) -> None:
        server = stdio("--exit-at-start", "2", env={"DB_PASSWORD": "secret-env-value"})
        self.assertNotIn("secret-env-value", repr(server))
        with self.assertRaises(MCPError) as caught:
            server.start()
        self.assertIn(
            "exited with status 2; last stderr: cannot open the database: [redacted] missing", str(caught.exception)
        )
        self.assertNotIn("secret-env-value", str(caught.exception))
        with self.assertRaises(MCPError) as caught:
            MCPStdio(["/nonexistent/mcp-server"], name="gone").start()
        self.assertEqual(
            str(caught.exception), "MCP server 'gone': cannot start /nonexistent/mcp-server: No such file or directory"
        )

    def test_include_and_bad_arguments(self) -> None:
        with stdio() as server:
            self.assertEqual([t.name for t in server.tools(include=["fail", "add"])], ["add", "fail"])
            with self.assertRaises(MCPConfigError) as caught:
                server.tools(include=["add", "nope"])
            self.assertIn("MCP server 't' has no tool 'nope' (it has: add, bad_output,", str(caught.exception))
            with self.assertRaises(MCPConfigError):
                server.tools(prefix="bad prefix")
        for kwargs in ({"protocol": "2024-11-05"}, {"timeout": 0}, {"timeout": True}, {"name": ""}):
            with self.subTest(kwargs), self.assertRaises(MCPConfigError):
                MCPStdio(["x"], **dict({"name": "n"}, **kwargs))  # type: ignore[arg-type]

    def test_describe_is_recordable_and_names_the_command(self) -> None:
        with stdio("--era", "legacy") as server:
            tools = server.tools(prefix="t_", include=["add", "deps"])
            record = describe(tools + [Tool("local", "", {"type": "object"}, lambda: 1)])
        self.assertEqual(
            record,
            [
                {
                    "name": "t",
                    "transport": "stdio",
                    "command": [sys.executable, SERVER, "--era", "legacy"],
                    "protocol": "2025-11-25",
                    "server": {"name": "agentloop-test-server", "title": "Legacy side", "version": "1.2.3"},
                    "tools": {"t_add": "add"},
                    "refused": [{"name": "deps", "reason": DEPS_REASON}],
                }
            ],
        )
        agentloop.canonical_bytes(record)


class TestHttp(StdioCase):
    def serve(self, era: str = "dual", sse: bool = False, **kwargs: Any) -> Any:
        httpd, state, url = serve_http(era, sse=sse, **kwargs)
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        return state, url

    def test_json_and_sse_answers_both_eras(self) -> None:
        for era, protocol in (("dual", "2026-07-28"), ("modern", "2026-07-28"), ("legacy", "2025-11-25")):
            for sse in (False, True):
                with self.subTest(era=era, sse=sse):
                    state, url = self.serve(era, sse)
                    with MCPHttp(url, name="t", timeout=5) as server:
                        self.assertEqual(server.protocol, protocol)
                        tools = server.tools(prefix="t_")
                        self.assertEqual([t.origin.tool for t in tools if isinstance(t, MCPTool) and t.origin], LISTED)
                        tool = by_server_name(tools)
                        self.assertEqual(tool["add"].invoke({"a": 2, "b": 3})["structuredContent"], {"sum": 5})
                        self.assertEqual(failure(tool["fail"], {}), "first line\nsecond line")
                        self.assertEqual(failure(tool["crash"], {})[:40], "MCP server 't': tools/call 'crash': the ")
                        self.assertEqual(tool["add"].invoke({"a": 1, "b": 1})["structuredContent"], {"sum": 2})
                    if protocol == "2025-11-25":
                        self.assertEqual(state.deleted, ["s-1"])  # the session ended with DELETE

    def test_modern_request_headers(self) -> None:
        state, url = self.serve("modern")
        with MCPHttp(url, name="t", timeout=5) as server:
            tool = by_server_name(server.tools())
            got = tool["region"].invoke({"query": "q", "region": "eu-west ü"})["structuredContent"]
            self.assertEqual(got, {"header": "=?base64?ZXUtd2VzdCDDvA==?=", "region": "eu-west ü"})
            self.assertIsNone(tool["region"].invoke({"query": "q"})["structuredContent"]["header"])
        call = [h for h in state.requests if h.get("mcp-method") == "tools/call"][0]
        self.assertEqual((call["mcp-protocol-version"], call["mcp-name"]), ("2026-07-28", "region"))
        self.assertEqual(call["accept"], "application/json, text/event-stream")

    def test_legacy_server_requests_on_an_sse_stream_get_method_not_found(self) -> None:
        state, url = self.serve("legacy", sse=True)
        with MCPHttp(url, name="t", timeout=5) as server:
            answer = by_server_name(server.tools())["ask"].invoke({})["structuredContent"]["answer"]
        self.assertEqual(answer, {"code": -32601, "message": "Method not found: agentloop does not serve roots/list"})

    def test_an_expired_session_is_renewed_once_and_the_undelivered_call_sent_again(self) -> None:
        for sse in (False, True):
            with self.subTest(sse=sse):
                state, url = self.serve("legacy", sse=sse)
                with MCPHttp(url, name="t", timeout=5) as server:
                    tool = by_server_name(server.tools())
                    before = server.describe()
                    self.assertEqual(tool["add"].invoke({"a": 1, "b": 2})["structuredContent"], {"sum": 3})
                    state.sessions.clear()  # the server forgets the session: 404 to its id
                    self.assertEqual(tool["add"].invoke({"a": 2, "b": 2})["structuredContent"], {"sum": 4})
                    self.assertEqual(state.server.calls, ["add", "add"])  # each call processed once
                    self.assertEqual(state.server.methods.count("initialize"), 2)
                    self.assertEqual(server.describe(), before)  # the record's member is unchanged
                    self.assertEqual(server.protocol, "2025-11-25")
                # add (s-1), add (s-1: 404), initialize (no session id, no version), initialized and add (s-2).
                self.assertEqual(
                    [h.get("mcp-session-id") for h in state.requests][-5:], ["s-1", "s-1", None, "s-2", "s-2"]
                )
                self.assertNotIn("mcp-protocol-version", state.requests[-3])

    def test_a_broken_stream_is_resumed_and_a_delivered_call_is_never_sent_twice(self) -> None:
        state, url = self.serve("legacy", sse=True)
        with MCPHttp(url, name="t", timeout=5) as server:
            tool = by_server_name(server.tools())
            started = time.monotonic()
            self.assertEqual(tool["flaky"].invoke({})["content"], [{"type": "text", "text": "answered flaky"}])
            self.assertGreaterEqual(time.monotonic() - started, 0.2)  # the stream's "retry: 200" was respected
            self.assertEqual(state.server.calls, ["flaky"])
            resumed = state.gets[-1]
            self.assertEqual(
                (resumed["last-event-id"][:6], resumed["accept"], resumed["mcp-session-id"]),
                ("prime-", "text/event-stream", "s-1"),
            )
            # Delivered, then the session ended before the answer: a failure the model sees, not a second call.
            self.assertEqual(
                failure(tool["flaky_expire"], {}),
                "MCP server 't': tools/call 'flaky_expire': the server ended the session (HTTP 404) "
                "while the answer to tools/call was streaming; the request had been delivered, "
                "so it was not sent again",
            )
            self.assertEqual(state.server.calls, ["flaky", "flaky_expire"])
            # The next call meets the 404 on its POST (not delivered), renews the session and goes through.
            self.assertEqual(tool["add"].invoke({"a": 1, "b": 1})["structuredContent"], {"sum": 2})
            self.assertEqual(state.server.calls, ["flaky", "flaky_expire", "add"])
            self.assertEqual(state.server.methods.count("initialize"), 2)

    def test_an_event_id_outside_latin_1_is_sent_back_as_utf_8(self) -> None:
        # WHATWG HTML "reestablish the connection": Last-Event-ID is the last event ID string in UTF-8;
        # http.client encodes a str as Latin-1 and raised UnicodeEncodeError, out of the tool call.
        state, url = self.serve("legacy", sse=True, prime="prime-\u00e9\u20ac-")
        with MCPHttp(url, name="t", timeout=5) as server:
            tool = by_server_name(server.tools())
            self.assertEqual(tool["flaky"].invoke({})["content"], [{"type": "text", "text": "answered flaky"}])
        self.assertTrue(state.gets[-1]["last-event-id"].startswith("prime-\u00e9\u20ac-"), state.gets)

    def test_a_resumed_stream_that_breaks_is_resumed_again_from_its_own_last_id(self) -> None:
        state, url = self.serve("legacy", sse=True)
        with MCPHttp(url, name="t", timeout=5) as server:
            tool = by_server_name(server.tools())
            self.assertEqual(
                tool["flaky_twice"].invoke({})["content"], [{"type": "text", "text": "answered flaky_twice"}]
            )
        cursors = [h["last-event-id"] for h in state.gets]
        self.assertEqual(len(cursors), 2)
        self.assertEqual(cursors[1], "again-" + cursors[0])
        self.assertEqual(state.server.calls.count("flaky_twice"), 1)

    def test_a_stream_that_cannot_be_resumed_fails_the_call(self) -> None:
        state, url = self.serve("legacy", sse=True)
        with MCPHttp(url, name="t", timeout=5) as server:
            tool = by_server_name(server.tools())
            self.assertEqual(
                failure(tool["flaky_lost"], {}),
                "MCP server 't': tools/call 'flaky_lost': the SSE stream ended before the response to "
                "tools/call, and resuming it failed (GET with Last-Event-ID: HTTP 400)",
            )
            self.assertEqual(tool["add"].invoke({"a": 1, "b": 1})["structuredContent"], {"sum": 2})
        self.assertEqual(len(state.gets), 1)
        state, url = self.serve("legacy", sse=True, retry_ms=60000)
        with MCPHttp(url, name="t", timeout=2) as server:  # the stream's retry would pass the deadline
            tool = by_server_name(server.tools())
            started = time.monotonic()
            self.assertEqual(
                failure(tool["flaky"], {}),
                "MCP server 't': tools/call 'flaky': timed out after 2 s (closed the connection)",
            )
            self.assertLess(time.monotonic() - started, 10)  # said at once, not after the 60-s retry
        self.assertEqual(state.gets, [])  # no GET was sent
        state, url = self.serve("legacy", sse=True, retry_ms=10**400)
        with MCPHttp(url, name="t", timeout=2) as server:  # a retry no float can hold: still the deadline
            tool = by_server_name(server.tools())
            self.assertEqual(
                failure(tool["flaky"], {}),
                "MCP server 't': tools/call 'flaky': timed out after 2 s (closed the connection)",
            )
        self.assertEqual(state.gets, [])

    def test_one_renewal_however_many_calls_meet_the_expired_session(self) -> None:
        import threading

        state, url = self.serve("legacy")
        with MCPHttp(url, name="t", timeout=5) as server:
            tool = by_server_name(server.tools())
            state.sessions.clear()
            sums: List[Any] = []
            threads = [
                threading.Thread(target=lambda i=i: sums.append(tool["add"].invoke({"a": i, "b": 0}))) for i in range(4)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(10)
            self.assertEqual(sorted(s["structuredContent"]["sum"] for s in sums), [0, 1, 2, 3])
        self.assertEqual(state.server.methods.count("initialize"), 2)

    def test_a_modern_stream_is_never_resumed(self) -> None:
        # The stream breaks after its priming event (an id, a retry) as on a 2025 session; on 2026-07-28 a
        # closed stream is the cancellation: the call fails, and no GET is sent.
        state, url = self.serve("dual", sse=True)
        with MCPHttp(url, name="t", timeout=5) as server:
            self.assertEqual(server.protocol, "2026-07-28")
            tool = by_server_name(server.tools())
            self.assertEqual(
                failure(tool["flaky"], {}),
                "MCP server 't': tools/call 'flaky': the SSE stream ended before the response to tools/call",
            )
            self.assertEqual(tool["add"].invoke({"a": 1, "b": 1})["structuredContent"], {"sum": 2})
        self.assertEqual(state.server.calls, ["flaky", "add"])
        self.assertEqual(state.gets, [])

    def test_timeout_then_a_good_call(self) -> None:
        for sse in (False, True):
            with self.subTest(sse=sse):
                state, url = self.serve(sse=sse)
                with MCPHttp(url, name="t", timeout=1) as server:
                    tool = by_server_name(server.tools())
                    started = time.monotonic()
                    self.assertEqual(
                        failure(tool["slow"], {"seconds": 4}),
                        "MCP server 't': tools/call 'slow': timed out after 1 s (closed the connection)",
                    )
                    self.assertLess(time.monotonic() - started, 2.5)
                    self.assertEqual(tool["add"].invoke({"a": 1, "b": 1})["structuredContent"], {"sum": 2})

    def test_secrets_never_show(self) -> None:
        state, url = self.serve("legacy")
        server = MCPHttp(url, name="t", timeout=5, headers={"Authorization": "Bearer sekrit-token-123"})
        with server:
            tools = server.tools()
            record = json.dumps(describe(tools))
        self.assertEqual(state.requests[0]["authorization"], "Bearer sekrit-token-123")
        with self.assertRaises(NotPicklableError) as caught:  # a pickle would hold the token
            pickle.dumps(server)
        for text in (record, repr(server), str(caught.exception)):
            self.assertNotIn("sekrit", text)
            self.assertNotIn("query-secret", text)
            self.assertNotIn("/mcp", text)
        self.assertIn('"host": "127.0.0.1:', record)

    def test_unreachable_and_bad_urls(self) -> None:
        httpd, _, url = serve_http()
        httpd.shutdown()
        httpd.server_close()
        with self.assertRaises(MCPError) as caught:
            MCPHttp(url, name="t", timeout=2).start()
        self.assertIn("cannot connect to 127.0.0.1:", str(caught.exception))
        self.assertNotIn("query-secret", str(caught.exception))
        for bad in ("ftp://x/mcp", "http://user:pw@host/mcp", "/mcp"):
            with self.subTest(bad), self.assertRaises(MCPConfigError):
                MCPHttp(bad, name="t")
        # http.client refused a space quoting the path and query (and the token in it) in its error, and
        # raised UnicodeEncodeError for a non-ASCII path (exit 70 from the command line).
        for bad in (
            "http://127.0.0.1:9/mcp x?token=sekrit",
            "http://127.0.0.1:9/mcp?token=sek rit",
            "http://127.0.0.1:9/mcp\u00e9?token=sekrit",
            "http://127.0.0.1:9/mcp?token=sekrit\x7f",
        ):
            with self.subTest(bad):
                with self.assertRaises(MCPConfigError) as caught:
                    MCPHttp(bad, name="t")
                self.assertEqual(
                    str(caught.exception),
                    "url: must have a path and query of visible ASCII (percent-encode spaces and the rest)",
                )

    def test_header_values_the_wire_cannot_carry_are_refused_without_being_quoted(self) -> None:
        # A non-Latin-1 character made http.client raise UnicodeEncodeError on the first request (exit 70 from
        # the command line); a control character went onto the wire.
        for value in (
            "a\r\nX-Evil: sekrit",
            "sekrit-\u20ac",
            "sekrit\x00",
            "sekrit\x7f",
            "sekrit\x1b[2J",
            "sekrit-\xe9",
        ):
            with self.subTest(value=value):
                with self.assertRaises(MCPConfigError) as caught:
                    MCPHttp("http://127.0.0.1:9/mcp", name="t", headers={"X-Key": value})
                self.assertEqual(
                    str(caught.exception),
                    "headers: the value of X-Key must be a string of visible "
                    "ASCII characters, spaces and tabs (no line break, control "
                    "character or non-ASCII character)",
                )
        MCPHttp("http://127.0.0.1:9/mcp", name="t", headers={"X-Key": "a b\tc", "X-Empty": ""})


class TestLoop(unittest.TestCase):
    def test_a_run_records_what_the_server_said(self) -> None:
        with stdio(timeout=1) as server, tempfile.TemporaryDirectory() as tmp:
            tools = combine_tools(
                [Tool("note", "local", {"type": "object"}, lambda: "noted")], server.tools(prefix="calc_")
            )
            model = ScriptedModel(
                [
                    ModelReply("adding", [ToolCall("calc_add", {"a": 40, "b": 2})]),
                    ModelReply("failing", [ToolCall("calc_fail", {})]),
                    ModelReply(
                        "waiting", [ToolCall("calc_slow", {"seconds": 5}), ToolCall("calc_add", {"a": 1, "b": 1})]
                    ),
                    ModelReply("done"),
                ]
            )
            path = os.path.join(tmp, "t.jsonl")
            result = agentloop.run("add with MCP", model, tools, transcript=path, max_steps=8, max_tokens=100000)
            self.assertEqual(result.stop_reason, "no_tool_calls")
            self.assertTrue(verify_file(path).ok)
            with open(path, encoding="utf-8") as handle:
                records = [json.loads(line) for line in handle]
        results = [r["payload"] for r in records if r["kind"] == "tool"]
        self.assertEqual(
            [(r["name"], r["ok"]) for r in results],
            [("calc_add", True), ("calc_fail", False), ("calc_slow", False), ("calc_add", True)],
        )
        self.assertEqual(
            results[0]["value"],
            {
                "content": [{"type": "text", "text": "42"}],
                "structuredContent": {"sum": 42},
                "isError": False,
                "resultType": "complete",
            },
        )
        self.assertEqual(results[1]["error"], "first line\nsecond line")
        self.assertEqual(
            results[2]["error"], "MCP server 't': tools/call 'slow': timed out after 1 s (sent notifications/cancelled)"
        )
        manifest = [t["name"] for t in records[0]["payload"]["tools"]]
        self.assertIn("calc_pick", manifest)
        self.assertIn("calc_maybe_task", manifest)  # taskSupport "optional": called plainly
        self.assertNotIn("calc_deps", manifest)
        self.assertNotIn("calc_research", manifest)  # taskSupport "required": refused at import
        servers = records[0]["payload"]["mcp"]  # the task record names the server behind the MCP tools
        self.assertEqual([(s["name"], s["transport"]) for s in servers], [("t", "stdio")])
        self.assertEqual(servers[0]["refused"], REFUSED)  # with the reasons
        self.assertEqual(servers[0]["tools"]["calc_add"], "add")
        self.assertNotIn("note", servers[0]["tools"])  # a local tool is not the server's

    def test_a_run_replays_byte_for_byte_with_the_server_gone(self) -> None:
        from agentloop.models import replay

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.jsonl")
            with stdio(timeout=5) as server:
                model = ScriptedModel(
                    [ModelReply("adding", [ToolCall("calc_add", {"a": 40, "b": 2})]), ModelReply("done")]
                )
                agentloop.run(
                    "add", model, server.tools(prefix="calc_"), transcript=path, max_steps=4, max_tokens=10000
                )
            again = replay(path, "recorded", transcript=os.path.join(tmp, "r.jsonl"))  # the server has exited
            self.assertTrue(again.identical, again.difference)

    def test_local_tools_leave_the_task_record_unchanged(self) -> None:
        from agentloop.tools.registry import tool_sources

        self.assertEqual(tool_sources([Tool("note", "local", {"type": "object"}, lambda: "noted")]), {})


class TestExample(unittest.TestCase):
    def test_examples_mcp_agent_runs_and_verifies(self) -> None:
        import subprocess

        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run(
                [sys.executable, os.path.join(root, "examples", "mcp_agent.py"), "--out", tmp],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                universal_newlines=True,
                timeout=60,
            )
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("stop: no_tool_calls; transcript", proc.stdout)
            self.assertTrue(verify_file(os.path.join(tmp, "mcp-agent.jsonl")).ok)


if __name__ == "__main__":
    unittest.main()


class TestRunCommand(unittest.TestCase):
    """``agentloop run --mcp NAME=COMMAND``: the example calculator server's tools in a CLI run."""

    def cli(self, *argv: str) -> "tuple[int, str, str]":
        import contextlib
        import io

        from agentloop.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(list(argv), out=out)
        return status, out.getvalue(), err.getvalue()

    def test_run_with_an_mcp_server_records_it_and_replays_without_it(self) -> None:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        server = "calc=%s %s" % (sys.executable, os.path.join(root, "examples", "mcp_calc_server.py"))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.jsonl")
            status, out, err = self.cli(
                "run",
                "--model",
                "tests.support.batch_models:factory",
                "--mcp",
                server,
                "--task",
                "add",
                "--max-steps",
                "5",
                "--max-tokens",
                "10000",
                "-o",
                path,
            )
            self.assertEqual((status, err), (0, ""), out)
            self.assertIn("answer:\ndone: add\n", out)
            with open(path, encoding="utf-8") as handle:
                task = json.loads(handle.readline())["payload"]
            self.assertEqual(task["mcp"][0]["name"], "calc")
            self.assertEqual(task["mcp"][0]["tools"], {"add": "add", "divide": "divide"})
            self.assertNotIn(sys.executable, json.dumps(task["mcp"][0].get("env", {})))
            status, out, err = self.cli("replay", path, "--recorded-tools", "-o", os.path.join(tmp, "r.jsonl"))
            self.assertEqual(status, 0, out + err)

    def test_a_bad_mcp_option_or_a_name_taken_twice_is_one_line_and_exit_2(self) -> None:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        server = "%s %s" % (sys.executable, os.path.join(root, "examples", "mcp_calc_server.py"))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.jsonl")
            common = (
                "--model",
                "tests.support.batch_models:factory",
                "--task",
                "t",
                "--max-steps",
                "1",
                "--max-tokens",
                "9",
                "-o",
                path,
            )
            status, _, err = self.cli("run", "--mcp", "no-equals-sign", *common)
            self.assertEqual(status, 2)
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            status, _, err = self.cli(
                "run", "--tools", "tests.support.batch_models:tools", "--mcp", "calc=" + server, *common
            )
            self.assertEqual(status, 2)
            self.assertIn("'add'", err)  # the local add and the server's add collide, both named
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertFalse(os.path.exists(path))
