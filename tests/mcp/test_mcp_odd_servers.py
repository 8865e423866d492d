"""MCP servers that answer oddly, scripted by tests/support/mcp_scripted_server.py, and settings refused up front.

What any transport shares (discovery, listing, call results) runs against
the scripted server over HTTP in this process; what only stdio has (a
signal, an error about an unreadable request, a silent initialize) starts
it as a process.

Each odd answer is either a start-up ``MCPError`` naming the server and what
it sent, a tool left out (listed in ``describe()["refused"]`` with the
reason), or a ``ToolFailure`` the model sees; agentloop never crashes on it.
"""

from __future__ import annotations

import json
import os
import sys
import time
import unittest
from typing import Any, Dict, List

from agentloop.errors import MCPConfigError, MCPError
from agentloop.mcp import MCPHttp, MCPStdio
from agentloop.mcp.client import MCPClient

from tests.support.mcp_scripted_server import serve_http
from tests.mcp.test_mcp import by_server_name, failure

SCRIPTED = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support", "mcp_scripted_server.py"
)
OBJECT = {"type": "object"}
SUM = {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}


def stdio_scripted(script: Dict[str, List[Dict[str, Any]]], protocol: str = "2025-11-25", **kwargs: Any) -> MCPStdio:
    kwargs.setdefault("timeout", 5)
    kwargs.setdefault("init_timeout", 5)
    return MCPStdio([sys.executable, SCRIPTED, json.dumps(script)], name="odd", protocol=protocol, **kwargs)


def listing(*tools: Dict[str, Any], **more: Any) -> Dict[str, List[Dict[str, Any]]]:
    return {"tools/list": [{"result": dict({"tools": list(tools)}, **more)}]}


class OddCase(unittest.TestCase):
    def scripted(self, script: Dict[str, List[Dict[str, Any]]], protocol: str = "2025-11-25") -> MCPHttp:
        """The scripted server over HTTP, in this process."""
        httpd, url = serve_http(script)
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        return MCPHttp(url, name="odd", protocol=protocol, timeout=5)

    def start_fails(self, client: MCPClient) -> str:
        with self.assertRaises(MCPError) as caught:
            with client:
                client.tools()
        self.assertTrue(client.closed)
        return str(caught.exception)


class TestDiscovery(OddCase):
    def test_a_discover_result_without_a_version_list(self) -> None:
        client = self.scripted({"server/discover": [{"result": {"supportedVersions": "2026-07-28"}}]}, protocol="auto")
        self.assertEqual(
            self.start_fails(client),
            "MCP server 'odd': server/discover result has no supportedVersions list of strings",
        )

    def test_a_server_of_versions_agentloop_does_not_speak(self) -> None:
        client = self.scripted(
            {"server/discover": [{"result": {"supportedVersions": ["2099-01-01"]}}]}, protocol="auto"
        )
        self.assertEqual(
            self.start_fails(client),
            "MCP server 'odd': it supports protocol versions 2099-01-01; agentloop speaks "
            "2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26",
        )

    def test_a_modern_error_to_discover_is_not_taken_for_a_legacy_server(self) -> None:
        client = self.scripted(
            {"server/discover": [{"error": {"code": -32021, "message": "needs sampling"}}]}, protocol="auto"
        )
        self.assertEqual(
            self.start_fails(client), "MCP server 'odd': server/discover failed: JSON-RPC error -32021: needs sampling"
        )

    def test_a_legacy_version_offered_by_a_modern_server_is_taken(self) -> None:
        with self.scripted(
            {
                "server/discover": [
                    {"error": {"code": -32022, "message": "unsupported", "data": {"supported": ["2025-06-18"]}}}
                ],
                "initialize": [{"result": {"protocolVersion": "2025-06-18", "capabilities": {}}}],
            },
            protocol="auto",
        ) as client:
            self.assertEqual(client.protocol, "2025-06-18")


class TestStartUpBudget(OddCase):
    """The probe gets init_timeout, the handshake after it (initialize and notifications/initialized) another.

    Delays are fractions of a 2-s init_timeout, with a second or more to
    spare for a busy machine.
    """

    def legacy(self, probe: float, initialize: float, initialized: float) -> str:
        """A 2025 server that takes these seconds for each step; its URL."""
        httpd, url = serve_http(
            {
                "server/discover": [{"delay": probe, "error": {"code": -32601, "message": "Method not found"}}],
                "initialize": [{"delay": initialize, "result": {"protocolVersion": "2025-11-25", "capabilities": {}}}],
                "notifications/initialized": [{"delay": initialized}],
            }
        )
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        return url

    def test_a_slow_legacy_handshake_fails_within_twice_init_timeout(self) -> None:
        # Each step 0.75 of init_timeout: every request alone was in time, and starting took 2.25 of it.
        url = self.legacy(1.5, 1.5, 1.5)
        started = time.monotonic()
        text = self.start_fails(MCPHttp(url, name="odd", timeout=5, init_timeout=2))
        self.assertEqual(text, "MCP server 'odd': notifications/initialized failed: the handshake took longer than 2 s")
        self.assertLess(time.monotonic() - started, 2 * 2 + 1)

    def test_a_handshake_in_time_after_a_slow_probe(self) -> None:
        # 1.5 s + 0.8 s: more than init_timeout in all, each part within its own.
        with MCPHttp(self.legacy(1.5, 0.4, 0.4), name="odd", timeout=5, init_timeout=2) as client:
            self.assertEqual(client.protocol, "2025-11-25")


class TestListing(OddCase):
    def test_malformed_listings_fail_the_start(self) -> None:
        for script, message in [
            (
                {"tools/list": [{"result": {"tools": {"add": OBJECT}}}]},
                "tools/list result has no tools list of objects",
            ),
            (
                {"tools/list": [{"error": {"code": -32603, "message": "db down"}}]},
                "tools/list failed: JSON-RPC error -32603: db down",
            ),
            (listing({"name": "a", "inputSchema": OBJECT}, nextCursor="same"), "tools/list nextCursor repeats 'same'"),
            (listing({"name": "a", "inputSchema": OBJECT}, nextCursor=7), "tools/list nextCursor is not a string"),
            (listing({"description": "nameless", "inputSchema": OBJECT}), "tools/list entry 0 has no name"),
        ]:
            with self.subTest(message):
                self.assertEqual(self.start_fails(self.scripted(script)), "MCP server 'odd': " + message)

    def test_tools_that_cannot_be_offered_are_left_out_with_the_reason(self) -> None:
        script = listing(
            {"name": "ok", "title": "Titled, no description", "inputSchema": OBJECT},
            {"name": "described_by_number", "description": 5, "inputSchema": OBJECT},
            {
                "name": "bad_output",
                "description": "x",
                "inputSchema": OBJECT,
                "outputSchema": {"type": "object", "minProperties": -1},
            },
            {"name": "task_only", "inputSchema": OBJECT, "execution": {"taskSupport": "required"}},
            {"name": "odd_execution", "inputSchema": OBJECT, "execution": "tasks"},
            {"name": "future_task_mode", "inputSchema": OBJECT, "execution": {"taskSupport": "eventually"}},
            {"name": "plain_call", "inputSchema": OBJECT, "execution": {"taskSupport": "forbidden"}},
        )
        with self.scripted(script) as client:
            tools = client.tools()
            self.assertEqual(
                [(t.name, t.description) for t in tools], [("ok", "Titled, no description"), ("plain_call", "")]
            )
            refused = {r["name"]: r["reason"] for r in client.describe()["refused"]}
        self.assertEqual(refused["described_by_number"], "description is not a string")
        self.assertEqual(
            refused["task_only"],
            'execution.taskSupport is "required": the tool must be called as a task, which agentloop does not do',
        )
        self.assertEqual(refused["odd_execution"], "execution is not an object")
        self.assertEqual(
            refused["future_task_mode"],
            "execution.taskSupport 'eventually' is not one of forbidden, optional, required",
        )
        self.assertTrue(refused["bad_output"].startswith("outputSchema: "), refused)


class TestCallResults(OddCase):
    def test_malformed_results_fail_as_data(self) -> None:
        script = listing(
            {"name": "plain", "inputSchema": OBJECT}, {"name": "typed", "inputSchema": OBJECT, "outputSchema": SUM}
        )
        script["tools/call"] = [
            {"result": {"resultType": "later", "content": []}},
            {"result": {"content": "text"}},
            {"result": {"content": [], "isError": "yes"}},
            {"result": {"content": [{"type": "image", "data": ""}], "isError": True}},
            {"result": {"content": []}},
        ]
        with self.scripted(script) as client:
            tool = by_server_name(client.tools())
            where = "MCP server 'odd': tool 'plain' "
            self.assertEqual(failure(tool["plain"], {}), where + "sent a result of unknown resultType 'later'")
            self.assertEqual(
                failure(tool["plain"], {}), where + "sent a malformed result: content must be a list of typed blocks"
            )
            self.assertEqual(failure(tool["plain"], {}), where + "sent a malformed result: isError must be a boolean")
            self.assertEqual(failure(tool["plain"], {}), where + "reported an error (isError) with no text")
            self.assertEqual(
                failure(tool["typed"], {}),
                "MCP server 'odd': tool 'typed' declares an outputSchema but sent no structuredContent",
            )


class TestStreams(OddCase):
    def test_bytes_that_are_not_utf_8_fail_the_call_not_recorded_as_u_fffd(self) -> None:
        # MCP messages are UTF-8 (2025-11-25 "Base Protocol"); a JSON body that is not says so, and so does a
        # stream, whose SSE decoding would otherwise turn the bytes into U+FFFD inside a recorded result.
        answer = 'data: {"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"a%sb"}]}}\n\n'
        script = listing({"name": "plain", "inputSchema": OBJECT})
        script["tools/call"] = [
            {"stream_hex": (answer % (3, "\u00e9")).encode("latin-1").hex()},  # 3: the first call
            {"stream_hex": (answer % (4, "\u00e9")).encode("utf-8").hex()},
        ]
        with self.scripted(script) as client:
            tool = by_server_name(client.tools())
            self.assertEqual(
                failure(tool["plain"], {}),
                "MCP server 'odd': tools/call 'plain': sent an SSE stream "
                "that is not UTF-8 (invalid continuation byte)",
            )
            self.assertEqual(tool["plain"].invoke({}), {"content": [{"type": "text", "text": "a\u00e9b"}]})


class TestSessions(OddCase):
    GONE = {"status": 404, "error": {"code": -32600, "message": "Session not found"}}

    def session_script(
        self, initialize: List[Dict[str, Any]], calls: List[Dict[str, Any]]
    ) -> Dict[str, List[Dict[str, Any]]]:
        script = listing({"name": "plain", "inputSchema": OBJECT})
        script["initialize"] = initialize
        script["tools/call"] = calls
        return script

    def test_a_session_is_renewed_once_per_request(self) -> None:
        init = {"result": {"protocolVersion": "2025-11-25", "capabilities": {}}}
        script = self.session_script(
            [dict(init, session="a"), dict(init, session="b"), dict(init, session="c")],
            [self.GONE, self.GONE, {"result": {"content": []}}],
        )
        with self.scripted(script) as client:
            tool = by_server_name(client.tools())
            self.assertEqual(
                failure(tool["plain"], {}),
                "MCP server 'odd': tools/call 'plain': HTTP 404: the server ended the session",
            )
            self.assertEqual(tool["plain"].invoke({}), {"content": []})  # the next call, on session b, goes through

    def test_a_renewal_that_fails_or_changes_the_revision_fails_the_call(self) -> None:
        init = {"result": {"protocolVersion": "2025-11-25", "capabilities": {}}, "session": "a"}
        for second, text in [
            (
                {"error": {"code": -32603, "message": "full"}},
                "a new one could not be started: initialize failed (for a new session after HTTP 404): "
                "JSON-RPC error -32603: full",
            ),
            (
                {"result": {"protocolVersion": "2025-06-18", "capabilities": {}}, "session": "b"},
                "the new one speaks 2025-06-18, not 2025-11-25",
            ),
        ]:
            with self.subTest(text):
                with self.scripted(self.session_script([init, second], [self.GONE])) as client:
                    tool = by_server_name(client.tools())
                    before = client.describe()
                    self.assertEqual(
                        failure(tool["plain"], {}),
                        "MCP server 'odd': tools/call 'plain': HTTP 404: the server ended the session, and " + text,
                    )
                    # describe() as first met: the revision was reset (to None on a failed initialize) or changed.
                    self.assertEqual((client.describe(), client.protocol), (before, "2025-11-25"))


class TestEchoedSecrets(OddCase):
    """A server that quotes a header value back (its error message, a tool's error text, a proxy's page).

    The value is cut out of every error text before it reaches a terminal or,
    as a call's ``error``, the transcript; the record's refusal reasons too.
    """

    TOKEN = "sekrit-token-123"
    ECHO = "the token Bearer sekrit-token-123 is not valid here"

    def client(self, script: Dict[str, List[Dict[str, Any]]], protocol: str = "2025-11-25") -> MCPHttp:
        httpd, url = serve_http(script)
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        return MCPHttp(url, name="odd", protocol=protocol, timeout=5, headers={"Authorization": "Bearer " + self.TOKEN})

    def test_in_call_failures(self) -> None:
        script = listing({"name": "plain", "inputSchema": OBJECT})
        script["tools/call"] = [
            {"error": {"code": -32000, "message": self.ECHO}},
            {"status": 401, "error": {"code": -32001, "message": self.ECHO}},
            {"result": {"content": [{"type": "text", "text": self.ECHO}], "isError": True}},
            {"raw": self.ECHO},
            {"status": 403, "raw": self.ECHO},
        ]
        with self.client(script) as client:
            tool = by_server_name(client.tools())
            texts = [failure(tool["plain"], {}) for _ in range(5)]
        where = "MCP server 'odd': tools/call 'plain': "
        self.assertEqual(
            texts[:3],
            [
                where + "JSON-RPC error -32000: the token [redacted] is not valid here",
                where + "HTTP 401: JSON-RPC error -32001: the token [redacted] is not valid here",
                "the token [redacted] is not valid here",
            ],
        )
        for text in texts:
            self.assertNotIn("sekrit", text)
            self.assertIn("[redacted]", text)

    def test_the_start_of_a_value_a_cut_left_behind(self) -> None:
        # A JSON-RPC error message is cut to 300 characters before it is shown: a token quoted across the
        # cut showed its first characters (35 of a JWT, here).
        jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
        script = listing({"name": "plain", "inputSchema": OBJECT})
        script["tools/call"] = [
            {"error": {"code": -32000, "message": "x" * 250 + " got Bearer " + jwt}},
            {"error": {"code": -32000, "message": "got " + jwt[:40] + "... (the server cut it)"}},
        ]
        httpd, url = serve_http(script)
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        client = MCPHttp(url, name="odd", timeout=5, protocol="2025-11-25", headers={"Authorization": "Bearer " + jwt})
        with client:
            tool = by_server_name(client.tools())
            texts = [failure(tool["plain"], {}), failure(tool["plain"], {})]
        self.assertTrue(texts[0].endswith("x got [redacted] [redacted]..."), texts[0])  # "Bearer", the start of the JWT
        self.assertTrue(texts[1].endswith(": got [redacted]... (the server cut it)"), texts[1])
        for text in texts:
            self.assertNotIn(jwt[:4], text)

    def test_in_start_up_errors_and_refusal_reasons(self) -> None:
        echo = {"error": {"code": -32000, "message": self.ECHO}}
        for script, protocol in [
            ({"initialize": [echo]}, "2025-11-25"),
            ({"tools/list": [echo]}, "2025-11-25"),
            (
                {
                    "server/discover": [
                        {"error": {"code": -32022, "message": "no", "data": {"supported": [self.TOKEN]}}}
                    ]
                },
                "auto",
            ),
        ]:
            with self.subTest(script=script):
                text = self.start_fails(self.client(script, protocol))
                self.assertNotIn("sekrit", text)
                self.assertIn("[redacted]", text)
        script = listing({"name": "plain", "inputSchema": OBJECT, "execution": {"taskSupport": self.TOKEN}})
        with self.client(script) as client:
            self.assertEqual(client.tools(), [])
            record = json.dumps(client.describe())
        self.assertNotIn("sekrit", record)
        self.assertIn("execution.taskSupport '[redacted]' is not one of", record)


class TestStdioServerFaults(OddCase):
    def test_an_error_about_an_unreadable_request_then_a_signal(self) -> None:
        script = listing({"name": "plain", "inputSchema": OBJECT})
        script["tools/call"] = [
            {"raw": json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})},
            {"kill": True},
        ]
        with stdio_scripted(script) as client:
            tool = by_server_name(client.tools())
            self.assertEqual(
                failure(tool["plain"], {}),
                "MCP server 'odd': tools/call 'plain': sent an error about an unreadable request: "
                "JSON-RPC error -32700: Parse error",
            )
            self.assertEqual(failure(tool["plain"], {}), "MCP server 'odd': tools/call 'plain': was killed by signal 9")
            self.assertEqual(failure(tool["plain"], {}), "MCP server 'odd': tools/call 'plain': was killed by signal 9")

    def test_an_initialize_that_never_answers_times_out(self) -> None:
        client = stdio_scripted({"initialize": [{"silent": True}]}, init_timeout=0.3)
        self.assertEqual(self.start_fails(client), "MCP server 'odd': initialize failed: timed out after 0.3 s")


class TestSettings(unittest.TestCase):
    def test_a_command_string_is_split_like_a_shell_and_bad_settings_are_refused(self) -> None:
        client = MCPStdio("server --flag 'two words'", name="s", env={"TOKEN": "secret"})
        self.assertEqual(client.command, ["server", "--flag", "two words"])
        self.assertEqual(
            repr(client), "MCPStdio(['server', '--flag', 'two words'], name='s', env=<1 names>, protocol='auto')"
        )
        for kwargs, message in [
            ({"command": "server 'unclosed"}, "command: cannot be split into words: No closing quotation"),
            ({"command": []}, "command: must be a non-empty string or list of strings"),
            ({"command": ["server", 3]}, "command: must be a non-empty string or list of strings"),
            ({"command": "server", "env": {"PORT": 8080}}, "env: must map names to string values"),
        ]:
            with self.subTest(kwargs), self.assertRaises(MCPConfigError) as caught:
                MCPStdio(name="s", **kwargs)
            self.assertEqual(str(caught.exception), message)


if __name__ == "__main__":
    unittest.main()
