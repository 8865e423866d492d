"""agentloop.mcp against real servers on the official MCP Python SDK (2.x).

Skipped unless ``AGENTLOOP_MCP_SDK=1`` (``.ci/interop-mcp`` sets it inside a
throwaway venv holding ``mcp>=2,<3``).  Every server is the SDK server that
script writes into the venv (``AGENTLOOP_MCP_SDK_SERVER``; the tree imports
only the standard library) on stdio or Streamable HTTP (JSON or SSE
answers), spoken to with ``protocol="auto"`` (which picks 2026-07-28) and
with ``protocol="2025-11-25"`` (the ``initialize`` handshake).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Any, Dict, Iterator, List, Tuple

ENABLED = os.environ.get("AGENTLOOP_MCP_SDK") == "1" and bool(os.environ.get("AGENTLOOP_MCP_SDK_SERVER"))
SERVER = os.environ.get("AGENTLOOP_MCP_SDK_SERVER", "")  # written by .ci/interop-mcp into its venv
NAMES = ["add", "fail", "slow", "crash", "pick"]  # server order, over three tools/list pages


@unittest.skipUnless(ENABLED, "the MCP SDK interop leg runs from .ci/interop-mcp (AGENTLOOP_MCP_SDK=1)")
class TestSdkServers(unittest.TestCase):
    def legs(self) -> Iterator[Tuple[str, str, Any]]:
        from agentloop.mcp import MCPHttp, MCPStdio

        for protocol in ("auto", "2025-11-25"):
            yield (
                "stdio",
                protocol,
                lambda p=protocol: MCPStdio(
                    [sys.executable, SERVER, "stdio"], name="sdk", timeout=2, init_timeout=10, protocol=p
                ),
            )
            for mode in ("http-json", "http-sse"):
                yield (
                    mode,
                    protocol,
                    lambda p=protocol, m=mode: MCPHttp(self.http(m), name="sdk", timeout=2, protocol=p),
                )

    def http(self, mode: str) -> str:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        proc = subprocess.Popen(
            [sys.executable, SERVER, mode, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.addCleanup(proc.wait, 10)
        self.addCleanup(proc.kill)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                return "http://127.0.0.1:%d/mcp" % (port,)
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def test_every_transport_and_revision(self) -> None:
        from agentloop.errors import ToolFailure
        from agentloop.mcp import MCPTool

        for transport, protocol, make in self.legs():
            with self.subTest(transport=transport, protocol=protocol), make() as client:
                self.assertEqual(client.protocol, "2026-07-28" if protocol == "auto" else "2025-11-25")
                self.assertEqual(client.server_info, {"name": "agentloop-interop", "version": "0.0.1"})
                tools = client.tools()
                self.assertEqual([t.name for t in tools], NAMES)  # pagination: every page, in order
                self.assertEqual(client.describe()["refused"], [])
                by: Dict[str, MCPTool] = {t.name: t for t in tools if isinstance(t, MCPTool)}
                value = by["add"].invoke({"a": 2, "b": 3})
                self.assertEqual(value["structuredContent"], {"sum": 5})
                self.assertIs(value["isError"], False)
                self.assertNotIn("_meta", value)
                with self.assertRaises(ToolFailure) as caught:
                    by["fail"].invoke({"reason": "no"})
                self.assertEqual(caught.exception.text, "Error executing tool fail: refused: no")
                started = time.monotonic()
                with self.assertRaises(ToolFailure) as caught:
                    by["slow"].invoke({"seconds": 6})
                self.assertIn("tools/call 'slow': timed out after 2 s", caught.exception.text)
                self.assertLess(time.monotonic() - started, 4)
                self.assertEqual(by["add"].invoke({"a": 1, "b": 1})["structuredContent"], {"sum": 2})
                self.assertEqual(
                    by["pick"].invoke({"pet": {"kind": "dog", "barks": True}})["structuredContent"], {"result": "dog"}
                )
                self.assertIsNotNone(by["pick"].first_error({"pet": {"kind": "dog", "meows": 1}}))
                with self.assertRaises(ToolFailure) as caught:
                    by["crash"].invoke({})
                if transport == "stdio":
                    self.assertIn("exited with status 7; last stderr:", caught.exception.text)
                    self.assertIn("sdk server: crashing on purpose", caught.exception.text)
                with self.assertRaises(ToolFailure) as again:
                    by["add"].invoke({"a": 1, "b": 1})
                if transport == "stdio":
                    self.assertEqual(again.exception.text.replace("'add'", "'crash'"), caught.exception.text)

    def test_the_loop_records_an_sdk_run(self) -> None:
        import agentloop
        from agentloop import ModelReply, ScriptedModel, ToolCall
        from agentloop.mcp import MCPStdio, describe

        with MCPStdio(
            [sys.executable, SERVER, "stdio"], name="sdk", timeout=2
        ) as client, tempfile.TemporaryDirectory() as tmp:
            tools = client.tools(prefix="sdk_")
            model = ScriptedModel(
                [
                    ModelReply("add", [ToolCall("sdk_add", {"a": 40, "b": 2})]),
                    ModelReply("fail", [ToolCall("sdk_fail", {"reason": "x"})]),
                    ModelReply("done"),
                ]
            )
            path = os.path.join(tmp, "t.jsonl")
            agentloop.run("interop", model, tools, transcript=path, max_steps=5, max_tokens=100000)
            self.assertTrue(agentloop.verify_file(path).ok)
            with open(path, "rb") as handle:
                raw = handle.read()
            records = [json.loads(line) for line in raw.splitlines()]
            results: List[Dict[str, Any]] = [r["payload"] for r in records if r["kind"] == "tool"]
            record = describe(tools)
            self.assertEqual(records[0]["payload"]["mcp"], record)  # the task record names the SDK server
        with tempfile.TemporaryDirectory() as tmp2:  # the server has exited: replay from the records alone
            from agentloop.models import replay

            copy = os.path.join(tmp2, "t.jsonl")
            with open(copy, "wb") as handle:
                handle.write(raw)
            self.assertTrue(agentloop.verify_file(copy).ok)
            again = replay(copy, "recorded", transcript=os.path.join(tmp2, "r.jsonl"))
            self.assertTrue(again.identical, again.difference)
        self.assertEqual(results[0]["value"]["structuredContent"], {"sum": 42})
        self.assertEqual((results[1]["ok"], results[1]["error"]), (False, "Error executing tool fail: refused: x"))
        self.assertEqual(record[0]["tools"]["sdk_add"], "add")
        self.assertEqual(record[0]["protocol"], "2026-07-28")


if __name__ == "__main__":
    unittest.main()
