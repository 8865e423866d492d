"""``agentloop run --mcp NAME=SERVER --mcp-option NAME.KEY=VALUE``.

Every option reaches the client; every mistake is one line.

The servers are tests/support/mcp_server.py (stdio, and in-process Streamable
HTTP); the model is tests/support/mcp_cli_model.py, whose task is its script.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest
from typing import Any, Dict, List, Tuple
from unittest import mock

from agentloop import verify_file
from agentloop.cli import main
from agentloop.cli.mcp_options import build_client, parse_servers
from tests.support.mcp_server import serve_http

SERVER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support", "mcp_server.py")
STDIO = "%s %s" % (sys.executable, SERVER)
MODEL = "tests.support.mcp_cli_model:from_task"


def cli(*argv: str) -> Tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(list(argv), out=out)
    return status, out.getvalue(), err.getvalue()


def records(path: str) -> List[Dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


class CliCase(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.path = os.path.join(self.tmp, "t.jsonl")

    def run_cli(self, script: List[List[List[Any]]], *options: str) -> Tuple[int, str, str]:
        return cli(
            "run",
            "--model",
            MODEL,
            "--task",
            json.dumps(script),
            "--max-steps",
            "8",
            "--max-tokens",
            "100000",
            "-o",
            self.path,
            *options,
        )


class TestMistakes(CliCase):
    """Each mistake: exit 2, one line naming the option, nothing run, no server started."""

    def test_each_mistake_is_one_line_naming_the_option(self) -> None:
        http = "web=http://127.0.0.1:9/mcp"
        cases = [
            (
                ["--mcp", "calc=" + STDIO, "--mcp", "calc=" + STDIO],
                '--mcp "calc": names two servers; give each its own NAME',
            ),
            (["--mcp", "calc=" + STDIO, "--mcp-option", "calc"], '--mcp-option: takes NAME.KEY=VALUE, got "calc"'),
            (
                ["--mcp", "calc=" + STDIO, "--mcp-option", "web.timeout=3"],
                '--mcp-option "web.timeout": no --mcp server is named "web" (given: "calc")',
            ),
            (
                ["--mcp", "calc=" + STDIO, "--mcp-option", "calc.retries=3"],
                '--mcp-option "calc.retries": unknown key "retries" (known: protocol, timeout, init-timeout, prefix, '
                "include, header-env, bearer-env)",
            ),
            (
                ["--mcp", "calc=" + STDIO, "--mcp-option", "calc.timeout=3", "--mcp-option", "calc.timeout=4"],
                '--mcp-option "calc.timeout": is given twice',
            ),
            (
                ["--mcp", "calc=" + STDIO, "--mcp-option", "calc.timeout=0"],
                '--mcp-option "calc.timeout": must be a number of seconds above 0 and at most 86400, got "0"',
            ),
            (
                ["--mcp", "calc=" + STDIO, "--mcp-option", "calc.init-timeout=nan"],
                '--mcp-option "calc.init-timeout": must be a number of seconds above 0 and at most 86400, got "nan"',
            ),
            (
                ["--mcp", "calc=" + STDIO, "--mcp-option", "calc.protocol=2024-11-05"],
                '--mcp-option "calc.protocol": must be one of auto, 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, '
                'got "2024-11-05"',
            ),
            (
                ["--mcp", "calc=" + STDIO, "--mcp-option", "calc.prefix=calc."],
                '--mcp-option "calc.prefix": must match [A-Za-z0-9_-]{0,40}, got "calc."',
            ),
            (
                ["--mcp", "calc=" + STDIO, "--mcp-option", "calc.include=add,,fail"],
                '--mcp-option "calc.include": takes the server\'s tool names separated by commas, got "add,,fail"',
            ),
            (
                ["--mcp", "calc=" + STDIO, "--mcp-option", "calc.bearer-env=TOKEN"],
                '--mcp-option "calc.bearer-env": is for an http:// or https:// server; "calc" is started as a command',
            ),
            (
                ["--mcp", http, "--mcp-option", "web.bearer-env=sk-live-0123456789"],  # the token, not its variable
                '--mcp-option "web.bearer-env": takes the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), '
                "not a value; what was given is not shown",
            ),
            (
                ["--mcp", http, "--mcp-option", "web.header-env=X-Tenant:tenant-secret-42"],
                '--mcp-option "web.header-env": takes the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), '
                "not a value; what was given is not shown",
            ),
            (
                ["--mcp", http, "--mcp-option", "web.header-env=X-Tenant"],
                '--mcp-option "web.header-env": takes HEADER:VARIABLE, the name of an environment variable after the '
                "colon",
            ),
            (
                ["--mcp", http, "--mcp-option", "web.bearer-env=A", "--mcp-option", "web.header-env=authorization:B"],
                '--mcp-option "web.header-env": sets header "authorization" a second time',
            ),
            (
                ["--mcp", http, "--mcp-option", "web.bearer-env=AGENTLOOP_TEST_UNSET_TOKEN"],
                '--mcp-option "web.bearer-env": the environment variable AGENTLOOP_TEST_UNSET_TOKEN is not set',
            ),
            (
                ["--mcp", http, "--mcp-option", "web.header-env=Bad Header:HOME"],
                '--mcp-option "web.header-env": a header name must be an HTTP token',
            ),
            (
                ["--mcp", http, "--mcp-option", "web.header-env=Mcp-Session-Id:HOME"],
                '--mcp-option "web.header-env": Mcp-Session-Id is set by the client',
            ),
            (
                ["--mcp", "web=http://user:pw@127.0.0.1:9/mcp"],
                '--mcp "web": its URL must not hold credentials '
                "(pass a token with --mcp-option NAME.bearer-env=VARIABLE)",
            ),
        ]
        os.environ.pop("AGENTLOOP_TEST_UNSET_TOKEN", None)
        for options, message in cases:
            with self.subTest(message):
                status, out, err = self.run_cli([], *options)
                self.assertEqual((status, out), (2, ""))
                self.assertEqual(err, "agentloop run: error: %s\n" % (message,))
                self.assertFalse(os.path.exists(self.path))

    def test_a_url_in_capitals_or_after_a_space_is_a_url_not_a_command(self) -> None:
        # It was started as a command: "cannot start HTTPS://127.0.0.1:9/mcp?key=sekrit: No such file or directory".
        for where in ("HTTPS://127.0.0.1:9/mcp?key=sekrit", " http://127.0.0.1:9/mcp?key=sekrit"):
            with self.subTest(where=where):
                status, out, err = self.run_cli([], "--mcp", "web=" + where)
                self.assertEqual((status, out), (2, ""))
                self.assertTrue(
                    err.startswith("agentloop run: error: MCP server 'web': cannot connect to 127.0.0.1:9: "), err
                )
                self.assertNotIn("sekrit", err)
                self.assertEqual(
                    parse_servers(["web=" + where], ["web.bearer-env=T"])[0].headers,
                    [("bearer-env", "Authorization", "T")],
                )

    def test_an_empty_variable_is_refused_by_name(self) -> None:
        servers = parse_servers(["web=http://127.0.0.1:9/mcp"], ["web.header-env=X-Key:THE_KEY"])
        with self.assertRaises(Exception) as caught:
            build_client(servers[0], {"THE_KEY": ""})
        self.assertEqual(
            str(caught.exception), '--mcp-option "web.header-env": the environment variable THE_KEY is empty'
        )

    def test_a_value_no_header_can_carry_is_refused_by_its_variable_never_shown(self) -> None:
        # A non-Latin-1 character was an internal error (exit 70, UnicodeEncodeError) at the first request.
        for value in ("tok-\u20ac-secret", "tok\nX-Evil: secret", "tok\x01secret"):
            for key in ("bearer-env=THE_KEY", "header-env=X-Key:THE_KEY"):
                with self.subTest(value=value, key=key):
                    with mock.patch.dict(os.environ, {"THE_KEY": value}):
                        status, out, err = self.run_cli(
                            [], "--mcp", "web=http://127.0.0.1:9/mcp", "--mcp-option", "web." + key
                        )
                    self.assertEqual((status, out), (2, ""))
                    self.assertEqual(
                        err,
                        'agentloop run: error: --mcp-option "web.%s": the environment variable '
                        "THE_KEY holds a line break, a control character or a non-ASCII character, "
                        "which a header cannot carry\n" % (key.split("=")[0],),
                    )

    def test_include_naming_a_missing_tool(self) -> None:
        status, _, err = self.run_cli([], "--mcp", "calc=" + STDIO, "--mcp-option", "calc.include=add,sqrt")
        self.assertEqual(status, 2)
        self.assertTrue(
            err.startswith(
                'agentloop run: error: --mcp-option "calc.include": '
                "MCP server 'calc' has no tool 'sqrt' (it has: add, bad_output, "
            ),
            err,
        )

    def test_a_collision_names_both_sides_and_the_way_out(self) -> None:
        status, _, err = self.run_cli(
            [],
            "--mcp",
            "a=" + STDIO,
            "--mcp",
            "b=" + STDIO,
            "--mcp-option",
            "a.include=add",
            "--mcp-option",
            "b.include=add",
        )
        self.assertEqual(status, 2)
        self.assertEqual(
            err,
            "agentloop run: error: --mcp: tool name 'add' is taken twice: tool 'add' of MCP server "
            "'a' and tool 'add' of MCP server 'b' (give a server's tools a prefix: "
            "--mcp-option NAME.prefix=TEXT)\n",
        )

    def test_init_timeout_reaches_the_client(self) -> None:
        status, _, err = self.run_cli(
            [], "--mcp", "slow=%s --slow-start 4" % (STDIO,), "--mcp-option", "slow.init-timeout=0.5"
        )
        self.assertEqual(status, 2)
        self.assertEqual(
            err,
            "agentloop run: error: MCP server 'slow': initialize failed (server/discover got no "
            "answer in 0.5 s; the server was restarted for initialize): timed out after 0.5 s\n",
        )


class TestRuns(CliCase):
    def test_one_server_twice_with_prefixes_a_revision_and_a_subset(self) -> None:
        script = [[["one_add", {"a": 40, "b": 2}], ["two_add", {"a": 1, "b": 1}]], [["two_fail", {}]]]
        status, out, err = self.run_cli(
            script,
            "--mcp",
            "one=" + STDIO,
            "--mcp",
            "two=" + STDIO,
            "--mcp-option",
            "one.prefix=one_",
            "--mcp-option",
            "one.include=add",
            "--mcp-option",
            "one.protocol=2025-11-25",
            "--mcp-option",
            "two.prefix=two_",
            "--mcp-option",
            "two.include=add,fail",
            "--mcp-option",
            "two.timeout=5",
        )
        self.assertEqual((status, err), (0, ""), out)
        self.assertTrue(verify_file(self.path).ok)
        task = records(self.path)[0]["payload"]
        self.assertEqual(
            [(s["name"], s["protocol"], s["tools"]) for s in task["mcp"]],
            [("one", "2025-11-25", {"one_add": "add"}), ("two", "2026-07-28", {"two_add": "add", "two_fail": "fail"})],
        )
        results = [r["payload"] for r in records(self.path) if r["kind"] == "tool"]
        self.assertEqual(
            [(r["name"], r["ok"]) for r in results], [("one_add", True), ("two_add", True), ("two_fail", False)]
        )
        status, out, err = cli("replay", self.path, "--recorded-tools", "-o", os.path.join(self.tmp, "r.jsonl"))
        self.assertEqual((status, err), (0, ""), out)

    def test_headers_from_the_environment_reach_the_server_and_nothing_else(self) -> None:
        httpd, state, url = serve_http("legacy")
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        secret, tenant = "tok-0123456789-secret", "tenant-secret-42"
        with mock.patch.dict(os.environ, {"AGENTLOOP_TEST_TOKEN": secret, "AGENTLOOP_TEST_TENANT": tenant}):
            status, out, err = self.run_cli(
                [[["web_add", {"a": 1, "b": 2}]]],
                "--mcp",
                "web=" + url,
                "--mcp-option",
                "web.bearer-env=AGENTLOOP_TEST_TOKEN",
                "--mcp-option",
                "web.header-env=X-Tenant:AGENTLOOP_TEST_TENANT",
                "--mcp-option",
                "web.prefix=web_",
            )
        self.assertEqual(status, 0, out + err)
        notes = err.splitlines()  # the stand-in's tools agentloop cannot call are refused, one note each
        self.assertTrue(
            notes
            and all(n.startswith('agentloop run: note: MCP server "web": tool ') and " refused: " in n for n in notes),
            err,
        )
        self.assertTrue(
            all(h["authorization"] == "Bearer " + secret and h["x-tenant"] == tenant for h in state.requests)
        )
        with open(self.path, "rb") as handle:
            data = handle.read()
        for text in (secret, tenant, "AGENTLOOP_TEST_TOKEN"):
            self.assertNotIn(text, out)
            self.assertNotIn(text, err)
            self.assertNotIn(text.encode(), data)
        self.assertEqual(records(self.path)[0]["payload"]["mcp"][0]["host"], url.split("/")[2])


if __name__ == "__main__":
    unittest.main()
