"""An agent using tools from an MCP server: examples/mcp_calc_server.py over stdio.

A scripted model (no network, no API key) adds, divides by zero (the
server's ``isError`` becomes a failed tool record), then divides properly.
The transcript is verified, and the ``mcp`` description of the server the
task record will hold is printed.

    python examples/mcp_agent.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # run from a checkout without installing

from agentloop import ModelReply, ScriptedModel, ToolCall, run, verify_file  # noqa: E402
from agentloop.mcp import MCPStdio, describe  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="folder for the transcript (default: a temporary one)")
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="mcp-agent-")
    path = os.path.join(out, "mcp-agent.jsonl")
    model = ScriptedModel(
        [
            ModelReply("First the sum.", [ToolCall("calc_add", {"a": 40, "b": 2})]),
            ModelReply("Now a risky division.", [ToolCall("calc_divide", {"a": 42, "b": 0})]),
            ModelReply("Dividing by 2 instead.", [ToolCall("calc_divide", {"a": 42, "b": 2})]),
            ModelReply("42 / 2 = 21."),
        ]
    )
    server = [sys.executable, os.path.join(HERE, "mcp_calc_server.py")]
    with MCPStdio(server, name="calc", timeout=10) as calc:
        tools = calc.tools(prefix="calc_")
        result = run(
            "What is (40 + 2) / 2?", model, tools, transcript=path, max_steps=6, max_tokens=20000, overwrite=True
        )
        servers = describe(tools)
    check = verify_file(path)
    print("stop: %s; transcript %s: %s" % (result.stop_reason, path, "verified" if check.ok else "NOT VERIFIED"))
    print(json.dumps(servers, indent=2))
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
