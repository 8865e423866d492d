"""MCP refusals leave a trace: a server all of whose tools are refused is still named in the
task record's ``mcp`` member, with its refused tools, and ``agentloop run`` prints one note per refused tool."""

from __future__ import annotations

import json
import os
import sys

from agentloop import verify_file
from agentloop.models import replay

from tests.support.helpers import read_records
from tests.cli.test_cli_run import M, RunCase

SCRIPTED = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support", "mcp_scripted_server.py"
)
OBJECT = {"type": "object"}


def server(*tools: object) -> str:
    script = {
        "tools/list": [{"result": {"tools": list(tools)}}],  # a legacy server: says so to the probe at once
        "server/discover": [{"error": {"code": -32601, "message": "Method not found"}}],
    }
    return "odd=%s %s '%s'" % (sys.executable, SCRIPTED, json.dumps(script))


class TestRefusedTrace(RunCase):
    def test_a_server_whose_every_tool_is_refused_is_recorded_and_each_refusal_noted(self) -> None:
        spec = server(
            {"name": "numbered", "description": 5, "inputSchema": OBJECT},
            {
                "name": "bad\u001b[31m",
                "description": "x",
                "inputSchema": OBJECT,
                "outputSchema": {"type": "object", "minProperties": -1},
            },
        )
        status, out, err = self.run_cli(M + "adds_forever", "--mcp", spec, steps="1")
        self.assertEqual(status, 3, out + err)
        notes = [line for line in err.splitlines() if line.startswith('agentloop run: note: MCP server "odd": tool ')]
        self.assertEqual(len(notes), 2, err)
        self.assertIn('tool "numbered" refused: description is not a string', notes[0])
        self.assertNotIn("\x1b", err)
        task = read_records(self.path())[0]["payload"]
        self.assertEqual(len(task["mcp"]), 1)
        entry = task["mcp"][0]
        self.assertEqual((entry["name"], entry["tools"]), ("odd", {}))
        self.assertEqual([r["name"] for r in entry["refused"]], ["numbered", "bad\u001b[31m"])
        self.assertTrue(verify_file(self.path()).ok)
        again = replay(self.path(), "recorded", transcript=self.path("r.jsonl"))  # the same task record, with no server
        self.assertTrue(again.identical, again.difference)

    def test_a_server_with_a_tool_left_and_one_refused_is_recorded_as_before(self) -> None:
        spec = server(
            {"name": "ok", "description": "fine", "inputSchema": OBJECT},
            {"name": "numbered", "description": 5, "inputSchema": OBJECT},
        )
        status, out, err = self.run_cli(M + "adds_forever", "--mcp", spec, steps="1")
        self.assertEqual(status, 3, out + err)
        entry = read_records(self.path())[0]["payload"]["mcp"][0]
        self.assertEqual((entry["tools"], [r["name"] for r in entry["refused"]]), ({"ok": "ok"}, ["numbered"]))
        self.assertEqual(err.count("refused:"), 1, err)
