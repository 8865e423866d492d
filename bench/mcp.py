"""The cost of a no-op MCP tool call through agentloop and through the official SDK's client, side by side.

    python3 -m venv /tmp/mcp-venv && /tmp/mcp-venv/bin/pip install "mcp>=2,<3"
    python3 bench/mcp.py --sdk-python /tmp/mcp-venv/bin/python [--calls 300] [--rounds 3]

One server, written on the official MCP Python SDK (``mcp`` 2.x, run by
``--sdk-python``), offers a tool ``noop`` that returns ``"ok"``.  Its
round trip is timed call by call, after ``--warmup`` calls, through:

* ``agentloop.mcp.MCPStdio`` and the SDK's ``Client(StdioServerParameters)``,
  each starting the same server script over stdio;
* ``agentloop.mcp.MCPHttp`` and the SDK's ``Client(URL)``, both against one
  Streamable HTTP server process.

agentloop's client runs in this process (``MCPTool.invoke``, what a run
calls); the SDK's in a subprocess of ``--sdk-python``.  The legs alternate
for ``--rounds`` rounds (so the machine's load falls on all alike); the
table gives p50 and p99 over every timed call of each leg and the ratio of
agentloop's figure to the SDK's (below 1: agentloop is faster).  Without
``--sdk-python`` (or with a Python that cannot import ``mcp``) the script
says it is skipped and exits 0: the SDK is not a dependency.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentloop.mcp import MODERN, MCPHttp, MCPStdio, MCPTool  # noqa: E402

SERVER = r'''
import sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-noop", version="0.0.1")


@server.tool()
def noop() -> str:
    """Do nothing."""
    return "ok"


if sys.argv[1] == "stdio":
    server.run("stdio")
else:
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]), json_response=True)
'''

SDK_CLIENT = r"""
import asyncio, json, sys, time
from mcp import Client, StdioServerParameters

async def main(target, calls, warmup):
    async with Client(target) as client:
        times = []
        for i in range(warmup + calls):
            start = time.perf_counter()
            result = await client.call_tool("noop", {})
            took = time.perf_counter() - start
            assert not result.is_error, result
            if i >= warmup:
                times.append(took)
    print(json.dumps(times))

mode, calls, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if mode == "stdio":
    target = StdioServerParameters(command=sys.argv[4], args=[sys.argv[5], "stdio"])
else:
    target = sys.argv[4]
asyncio.run(main(target, calls, warmup))
"""


def percentile(times: List[float], fraction: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def agentloop_leg(client: Any, calls: int, warmup: int) -> List[float]:
    with client:
        tool = next(t for t in client.tools() if isinstance(t, MCPTool) and t.name == "noop")
        times = []
        for i in range(warmup + calls):
            start = time.perf_counter()
            value = tool.invoke({})
            took = time.perf_counter() - start
            assert value["isError"] is False, value
            if i >= warmup:
                times.append(took)
    return times


def sdk_leg(python: str, script: str, mode: str, calls: int, warmup: int, *target: str) -> List[float]:
    done = subprocess.run(
        [python, script, mode, str(calls), str(warmup), *target],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        timeout=600,
    )
    if done.returncode:
        raise SystemExit("the SDK's client failed:\n" + done.stderr[-2000:])
    return [float(t) for t in json.loads(done.stdout.strip().splitlines()[-1])]


def http_server(python: str, server: str) -> "tuple[subprocess.Popen[bytes], str]":
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([python, server, "http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc, "http://127.0.0.1:%d/mcp" % (port,)
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise SystemExit("the SDK's HTTP server did not start")
            time.sleep(0.1)


def sdk_version(python: str) -> str:
    try:
        probe = subprocess.run(
            [python, "-c", "import importlib.metadata as m, mcp; print(m.version('mcp'))"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=60,
        )
    except OSError as exc:
        return "cannot run %s: %s" % (python, exc.strerror or exc)
    return probe.stdout.strip() if probe.returncode == 0 else ""


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdk-python", metavar="PYTHON", help="a Python with the official SDK installed (mcp>=2,<3)")
    parser.add_argument("--calls", type=int, default=300, help="timed calls per leg and round")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    version = sdk_version(args.sdk_python) if args.sdk_python else ""
    if not version or not version[:1].isdigit():
        print(
            "bench/mcp.py: skipped: %s"
            % (
                "no --sdk-python given"
                if not args.sdk_python
                else "the official MCP SDK is absent from %s (%s)" % (args.sdk_python, version or "import mcp failed")
            )
        )
        return 0
    print(
        "python %s on %s, %d cpus, load average %s; SDK: mcp %s"
        % (
            platform.python_version(),
            platform.machine(),
            os.cpu_count() or 0,
            " ".join("%.2f" % x for x in os.getloadavg()),
            version,
        )
    )
    times: Dict[str, List[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        server, client = os.path.join(folder, "noop_server.py"), os.path.join(folder, "sdk_client.py")
        for path, text in ((server, SERVER), (client, SDK_CLIENT)):
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        proc, url = http_server(args.sdk_python, server)
        try:
            for _ in range(args.rounds):
                legs = [
                    (
                        "stdio agentloop",
                        lambda: agentloop_leg(
                            MCPStdio(
                                [args.sdk_python, server, "stdio"], name="bench", protocol=MODERN, init_timeout=60
                            ),
                            args.calls,
                            args.warmup,
                        ),
                    ),
                    (
                        "stdio SDK",
                        lambda: sdk_leg(
                            args.sdk_python, client, "stdio", args.calls, args.warmup, args.sdk_python, server
                        ),
                    ),
                    (
                        "http agentloop",
                        lambda: agentloop_leg(MCPHttp(url, name="bench", protocol=MODERN), args.calls, args.warmup),
                    ),
                    ("http SDK", lambda: sdk_leg(args.sdk_python, client, "http", args.calls, args.warmup, url)),
                ]
                for name, leg in legs:
                    times.setdefault(name, []).extend(leg())
        finally:
            proc.kill()
            proc.wait(10)
    print("%-16s %8s %10s %10s" % ("no-op call", "calls", "p50 ms", "p99 ms"))
    for name, taken in times.items():
        print(
            "%-16s %8d %10.3f %10.3f" % (name, len(taken), percentile(taken, 0.5) * 1e3, percentile(taken, 0.99) * 1e3)
        )
    for transport in ("stdio", "http"):
        ours, theirs = times[transport + " agentloop"], times[transport + " SDK"]
        print(
            "%s: agentloop / SDK: p50 %.2fx, p99 %.2fx"
            % (
                transport,
                percentile(ours, 0.5) / percentile(theirs, 0.5),
                percentile(ours, 0.99) / percentile(theirs, 0.99),
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
