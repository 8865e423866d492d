"""agentloop.mcp against the reference MCP servers people start with, installed from npm and PyPI.

Skipped unless ``AGENTLOOP_MCP_SERVERS`` names the legs to run
(``.ci/interop-mcp-servers`` sets it after installing the servers into a
throwaway folder; the tree imports only the standard library).  The
script exports where they are:

* ``AGENTLOOP_MCP_NPM`` -- the npm prefix (``node_modules/.bin/mcp-server-*``,
  what ``npx -y @modelcontextprotocol/server-*`` runs);
* ``AGENTLOOP_MCP_VENV`` -- the venv holding ``mcp-server-time`` and ``mcp-server-git``;
* ``AGENTLOOP_MCP_WORK`` -- a scratch folder (the filesystem server's root,
  the memory server's file, a throwaway git repository);
* ``AGENTLOOP_MCP_LOOPBACK`` -- a Node preload that binds a port-only
  ``listen()`` to 127.0.0.1 (server-everything listens on every interface).

Each leg, one server on one transport: every tool it lists is imported or
refused with a reason (the refusals expected are named); a scripted run
calling several of its tools through :func:`agentloop.run` verifies and
replays byte for byte with ``recorded`` tools after the server is gone; and
the same through ``agentloop run --mcp``, ``agentloop verify`` and
``agentloop replay --recorded-tools``.  What each leg found is printed as a
table row for docs/mcp.md.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

LEGS = [leg for leg in os.environ.get("AGENTLOOP_MCP_SERVERS", "").split(",") if leg]
NPM = os.environ.get("AGENTLOOP_MCP_NPM", "")
VENV = os.environ.get("AGENTLOOP_MCP_VENV", "")
WORK = os.environ.get("AGENTLOOP_MCP_WORK", "")
LOOPBACK = os.environ.get("AGENTLOOP_MCP_LOOPBACK", "")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
Call = Tuple[str, Dict[str, Any], bool]  # server tool name, arguments, whether it should succeed


@dataclass
class Leg:
    """One server on one transport, and the calls its scripted run makes (one per turn)."""

    key: str
    package: str
    transport: str
    calls: List[Call]
    refused: List[str] = field(default_factory=list)  # the tools expected to be refused
    env: Dict[str, str] = field(default_factory=dict)

    def command(self) -> List[str]:
        bin_npm = os.path.join(NPM, "node_modules", ".bin")
        bin_venv = os.path.join(VENV, "bin")
        return {
            "everything": [os.path.join(bin_npm, "mcp-server-everything"), "stdio"],
            "everything-http": [os.path.join(bin_npm, "mcp-server-everything"), "streamableHttp"],
            "filesystem": [os.path.join(bin_npm, "mcp-server-filesystem"), os.path.join(WORK, "files")],
            "memory": [os.path.join(bin_npm, "mcp-server-memory")],
            "time": [os.path.join(bin_venv, "mcp-server-time"), "--local-timezone", "UTC"],
            "git": [os.path.join(bin_venv, "mcp-server-git"), "--repository", os.path.join(WORK, "repo")],
        }[self.key]

    def version(self) -> str:
        if self.package.startswith("@"):
            with open(os.path.join(NPM, "node_modules", self.package, "package.json"), encoding="utf-8") as handle:
                return str(json.load(handle)["version"])
        out = subprocess.run(
            [
                os.path.join(VENV, "bin", "python"),
                "-c",
                "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))",
                self.package,
            ],
            stdout=subprocess.PIPE,
            universal_newlines=True,
            check=True,
        )
        return out.stdout.strip()


def _legs() -> Dict[str, Leg]:
    files = os.path.join(WORK, "files")
    repo = os.path.join(WORK, "repo")
    return {
        leg.key: leg
        for leg in [
            Leg(
                "everything",
                "@modelcontextprotocol/server-everything",
                "stdio",
                EVERYTHING,
                ["simulate-research-query"],
            ),
            Leg(
                "everything-http",
                "@modelcontextprotocol/server-everything",
                "http",
                EVERYTHING,
                ["simulate-research-query"],
            ),
            Leg(
                "filesystem",
                "@modelcontextprotocol/server-filesystem",
                "stdio",
                [
                    (
                        "write_file",
                        {"path": os.path.join(files, "note.txt"), "content": "first line\nsecond line\n"},
                        True,
                    ),
                    ("read_text_file", {"path": os.path.join(files, "note.txt"), "head": 1}, True),
                    ("list_directory", {"path": files}, True),
                    ("search_files", {"path": files, "pattern": "*.txt"}, True),
                    ("read_text_file", {"path": "/etc/hostname"}, False),  # outside the allowed folder
                ],
            ),
            Leg(
                "memory",
                "@modelcontextprotocol/server-memory",
                "stdio",
                [
                    (
                        "create_entities",
                        {
                            "entities": [
                                {
                                    "name": "agentloop",
                                    "entityType": "library",
                                    "observations": ["writes hash-chained transcripts"],
                                }
                            ]
                        },
                        True,
                    ),
                    (
                        "add_observations",
                        {"observations": [{"entityName": "agentloop", "contents": ["stdlib only"]}]},
                        True,
                    ),
                    ("search_nodes", {"query": "stdlib"}, True),
                    ("read_graph", {}, True),
                    ("add_observations", {"observations": [{"entityName": "nobody", "contents": ["x"]}]}, False),
                ],
                env={"MEMORY_FILE_PATH": os.path.join(WORK, "memory.jsonl")},
            ),
            Leg(
                "time",
                "mcp-server-time",
                "stdio",
                [
                    ("get_current_time", {"timezone": "UTC"}, True),
                    (
                        "convert_time",
                        {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                        True,
                    ),
                    ("get_current_time", {"timezone": "Mars/Olympus_Mons"}, False),
                ],
            ),
            Leg(
                "git",
                "mcp-server-git",
                "stdio",
                [
                    ("git_status", {"repo_path": repo}, True),
                    ("git_log", {"repo_path": repo, "max_count": 5}, True),
                    ("git_show", {"repo_path": repo, "revision": "HEAD"}, True),
                    ("git_branch", {"repo_path": repo, "branch_type": "local"}, True),
                    ("git_show", {"repo_path": repo, "revision": "no-such-revision"}, False),
                ],
            ),
        ]
    }


EVERYTHING: List[Call] = [
    ("echo", {"message": "hello from agentloop"}, True),
    ("get-sum", {"a": 40, "b": 2}, True),
    ("get-structured-content", {"location": "Chicago"}, True),  # an outputSchema, checked
    ("get-annotated-message", {"messageType": "success", "includeImage": True}, True),
    ("get-tiny-image", {}, True),  # image content
    ("get-resource-links", {"count": 2}, True),  # resource_link content
    ("trigger-long-running-operation", {"duration": 1, "steps": 2}, True),
    ("get-sum", {"a": "forty", "b": 2}, False),  # refused by the imported schema, never sent
]
PREFIX = "s_"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _HttpServer:
    """server-everything's Streamable HTTP mode on a free loopback port (PORT=; it serves /mcp)."""

    def __init__(self, leg: Leg) -> None:
        self.port = _free_port()
        env = dict(os.environ, PORT=str(self.port), NODE_OPTIONS="--require " + LOOPBACK)
        self.proc = subprocess.Popen(leg.command(), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = "http://127.0.0.1:%d/mcp" % (self.port,)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("server-everything streamableHttp did not listen on port %d" % (self.port,))
                time.sleep(0.1)

    def stop(self) -> None:
        """Stop it, and check that nothing answers on its port any more."""
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        try:
            socket.create_connection(("127.0.0.1", self.port), 0.5).close()
        except OSError:
            return
        raise AssertionError("the HTTP server still answers on port %d" % (self.port,))


def _script(leg: Leg) -> str:
    """The task of tests/support/mcp_cli_model.py: one call per turn."""
    return json.dumps([[[PREFIX + name, arguments]] for name, arguments, _ in leg.calls])


def _cli(*argv: str, env: Optional[Dict[str, str]] = None) -> "subprocess.CompletedProcess[str]":
    environ = dict(os.environ, PYTHONPATH=ROOT, **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "agentloop"] + list(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        env=environ,
        timeout=600,
        cwd=ROOT,
    )


@unittest.skipUnless(
    LEGS, "the reference-server MCP interop leg runs from .ci/interop-mcp-servers (AGENTLOOP_MCP_SERVERS)"
)
class TestReferenceServers(unittest.TestCase):
    rows: List[str] = []

    @classmethod
    def tearDownClass(cls) -> None:
        if not cls.rows:
            return
        sys.stderr.write(
            "\n| server | version | transport | protocol | tools | refused | calls |\n"
            "| --- | --- | --- | --- | --- | --- | --- |\n"
        )
        for row in cls.rows:
            sys.stderr.write(row + "\n")

    def leg(self, key: str) -> None:
        if key not in LEGS:
            self.skipTest("%s was not installed (.ci/interop-mcp-servers said why)" % (key,))
        leg = _legs()[key]
        old = {k: os.environ.get(k) for k in leg.env}
        os.environ.update(leg.env)  # a stdio server inherits the environment
        try:
            with tempfile.TemporaryDirectory() as tmp:
                found = self.through_the_api(leg, tmp)
                self.through_the_command_line(leg, tmp)
        finally:
            for k, v in old.items():
                if v is None:
                    del os.environ[k]
                else:
                    os.environ[k] = v
        self.rows.append(found)

    def client(self, leg: Leg, server: Optional[_HttpServer]) -> Any:
        from agentloop.mcp import MCPHttp, MCPStdio

        if server is not None:
            return MCPHttp(server.url, name=leg.key, timeout=60)
        return MCPStdio(leg.command(), name=leg.key, timeout=60, init_timeout=60)

    def through_the_api(self, leg: Leg, tmp: str) -> str:
        import agentloop
        from agentloop import ModelReply, ScriptedModel, ToolCall
        from agentloop.models import replay

        server = _HttpServer(leg) if leg.transport == "http" else None
        path = os.path.join(tmp, "api.jsonl")
        try:
            with self.client(leg, server) as client:
                listed = [t["name"] for t in client.list_tools()]
                tools = client.tools(prefix=PREFIX)
                refused = client.describe()["refused"]
                imported = [t.origin.tool for t in tools]  # type: ignore[attr-defined]
                # Every tool listed is imported or refused with a reason; the refusals are the ones expected.
                self.assertEqual(sorted(imported + [r["name"] for r in refused]), sorted(listed))
                self.assertEqual([r["name"] for r in refused], leg.refused, refused)
                self.assertTrue(all(r["reason"] for r in refused))
                model = ScriptedModel(
                    [
                        ModelReply("call %s" % (name,), [ToolCall(PREFIX + name, arguments)])
                        for name, arguments, _ in leg.calls
                    ]
                    + [ModelReply("done")]
                )
                result = agentloop.run(
                    "interop: %s" % (leg.key,),
                    model,
                    tools,
                    transcript=path,
                    max_steps=len(leg.calls) + 2,
                    max_tokens=10**7,
                )
                protocol, info = client.protocol, client.server_info
        finally:
            if server is not None:
                server.stop()  # the server is gone before the replay
        self.assertEqual(result.stop_reason, "no_tool_calls")
        self.assertTrue(agentloop.verify_file(path).ok)
        results = self.results(path)
        self.assertEqual([r["ok"] for r in results], [ok for _, _, ok in leg.calls], json.dumps(results)[:2000])
        again = replay(path, "recorded", transcript=os.path.join(tmp, "api.replay.jsonl"))
        self.assertTrue(again.identical, again.difference)
        with open(path, "rb") as a, open(os.path.join(tmp, "api.replay.jsonl"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        shown = "; ".join("`%s`: %s" % (r["name"], r["reason"].split(":")[0]) for r in refused) or "none"
        ok = sum(1 for r in results if r["ok"])
        return "| %s | %s | %s | %s | %d of %d imported | %s | %d ok, %d failed as data |" % (
            leg.package,
            leg.version(),
            "stdio" if server is None else "Streamable HTTP (SSE)",
            protocol,
            len(imported),
            len(listed),
            shown,
            ok,
            len(results) - ok,
        ) + (" <!-- %s -->" % (info,))

    def through_the_command_line(self, leg: Leg, tmp: str) -> None:
        server = _HttpServer(leg) if leg.transport == "http" else None
        path = os.path.join(tmp, "cli.jsonl")
        try:
            where = server.url if server is not None else " ".join(shlex.quote(a) for a in leg.command())
            run = _cli(
                "run",
                "--model",
                "tests.support.mcp_cli_model:from_task",
                "--task",
                _script(leg),
                "--mcp",
                "%s=%s" % (leg.key, where),
                "--mcp-option",
                "%s.prefix=%s" % (leg.key, PREFIX),
                "--mcp-option",
                "%s.init-timeout=60" % (leg.key,),
                "--mcp-option",
                "%s.timeout=60" % (leg.key,),
                "--max-steps",
                str(len(leg.calls) + 2),
                "--max-tokens",
                "10000000",
                "-o",
                path,
            )
        finally:
            if server is not None:
                server.stop()
        self.assertEqual(run.returncode, 0, run.stdout[-3000:] + run.stderr[-3000:])
        self.assertEqual([r["ok"] for r in self.results(path)], [ok for _, _, ok in leg.calls])
        with open(path, encoding="utf-8") as handle:
            task = json.loads(handle.readline())["payload"]
        self.assertEqual(task["mcp"][0]["name"], leg.key)
        self.assertEqual([r["name"] for r in task["mcp"][0]["refused"]], leg.refused)
        verify = _cli("verify", path)
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        again = _cli("replay", path, "--recorded-tools", "-o", os.path.join(tmp, "cli.replay.jsonl"))
        self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
        self.assertIn("replay: identical to", again.stdout)

    @staticmethod
    def results(path: str) -> List[Dict[str, Any]]:
        with open(path, encoding="utf-8") as handle:
            return [r["payload"] for r in map(json.loads, handle) if r["kind"] == "tool"]

    def test_everything_stdio(self) -> None:
        self.leg("everything")

    def test_everything_streamable_http(self) -> None:
        self.leg("everything-http")

    def test_everything_streamable_http_resumes_a_cut_stream(self) -> None:
        """A stream cut after its priming event is resumed with GET and Last-Event-ID against the real server.

        server-everything keeps every event in its InMemoryEventStore, and
        the TypeScript SDK replays those after the Last-Event-ID.  When the
        answer exists by the time the GET arrives (held 1 s here), the
        replay carries it.  When it does not, it never comes: the example
        store's ``replayEventsAfter`` returns an event id where the SDK
        expects the stream id, so the SDK re-registers the resumed stream
        under the wrong key and the later answer goes nowhere; the request
        times out (docs/mcp.md's table says so; if this part starts to fail,
        the server was fixed: update the table).
        """
        from agentloop.errors import ToolFailure
        from agentloop.mcp import MCPHttp

        if "everything-http" not in LEGS:
            self.skipTest("everything-http was not installed (.ci/interop-mcp-servers said why)")
        from tests.interop.relay import CuttingRelay

        server = _HttpServer(_legs()["everything-http"])
        try:
            relay = CuttingRelay(server.port, "echo", get_delay=1.0)
            with MCPHttp("http://127.0.0.1:%d/mcp" % (relay.port,), name="ev", timeout=20) as client:
                tool = {t.name: t for t in client.tools()}["echo"]
                self.assertEqual(
                    tool.invoke({"message": "cut me"}), {"content": [{"type": "text", "text": "Echo: cut me"}]}
                )
            relay.close()
            self.assertEqual((relay.cuts, len(relay.resumes)), (1, 1))
            head = relay.resumes[0].decode("latin-1").lower()
            self.assertIn("\r\naccept: text/event-stream\r\n", head)
            self.assertIn("\r\nmcp-session-id: ", head)
            relay = CuttingRelay(server.port, "trigger-long-running-operation")
            with MCPHttp("http://127.0.0.1:%d/mcp" % (relay.port,), name="ev", timeout=4) as client:
                tool = {t.name: t for t in client.tools()}["trigger-long-running-operation"]
                with self.assertRaises(ToolFailure) as caught:
                    tool.invoke({"duration": 1, "steps": 1})
            relay.close()
            self.assertEqual((relay.cuts, len(relay.resumes)), (1, 1))
            self.assertIn("timed out after 4 s", caught.exception.text)
        finally:
            server.stop()

    def test_filesystem(self) -> None:
        self.leg("filesystem")

    def test_memory(self) -> None:
        self.leg("memory")

    def test_time(self) -> None:
        self.leg("time")

    def test_git(self) -> None:
        self.leg("git")


if __name__ == "__main__":
    unittest.main()
