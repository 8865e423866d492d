"""A turn of parallel calls of an I/O-bound tool against a turn of one call, measured in one run.

    python3 bench/parallel.py [--calls 8] [--sleep 0.05] [--repeat 5]

Each run is one turn asking for the calls, then an answer.  The tool sleeps
``--sleep`` seconds (I/O-bound: the GIL is free meanwhile), as a sync
function on the run's threads or as an ``async def`` on its event loop.
Reports the best of ``--repeat`` runs of each kind, and the ratio of the
parallel turn to the one-call turn (the baseline of the same run).

Target (issue 12): 8 parallel calls of a 50 ms tool take <= 1.3x one call.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from typing import List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentloop import ModelReply, ScriptedModel, Tool, ToolCall, run  # noqa: E402


def timed(tool: Tool, calls: int, folder: str, workers: int) -> float:
    script = [ModelReply("", [ToolCall(tool.name, {"i": i}) for i in range(calls)]), ModelReply("done")]
    start = time.perf_counter()
    result = run(
        "bench",
        ScriptedModel(script),
        [tool],
        transcript=os.path.join(folder, "p.jsonl"),
        max_steps=3,
        max_tokens=10**9,
        overwrite=True,
        max_workers=workers,
    )
    elapsed = time.perf_counter() - start
    assert result.stop_reason == "no_tool_calls" and result.records == calls + 4, result
    return elapsed


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--sleep", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    def io_bound(i: int) -> int:
        time.sleep(args.sleep)
        return i

    async def io_bound_async(i: int) -> int:
        await asyncio.sleep(args.sleep)
        return i

    kinds = [
        ("sync, parallel=True", Tool("io", "", {"type": "object"}, io_bound, parallel=True)),
        ("async, parallel=True", Tool("io", "", {"type": "object"}, io_bound_async, parallel=True)),
        ("sync, serial (default)", Tool("io", "", {"type": "object"}, io_bound)),
    ]
    print(
        "python %s on %s, %d cpus; %d calls of a %g ms tool in one turn"
        % (platform.python_version(), platform.machine(), os.cpu_count() or 0, args.calls, args.sleep * 1000)
    )
    print("%-24s %12s %12s %8s" % ("tool", "1 call (ms)", "%d calls (ms)" % args.calls, "ratio"))
    with tempfile.TemporaryDirectory() as folder:
        for label, tool in kinds:
            one = min(timed(tool, 1, folder, args.calls) for _ in range(args.repeat))
            many = min(timed(tool, args.calls, folder, args.calls) for _ in range(args.repeat))
            print("%-24s %12.1f %12.1f %7.2fx" % (label, one * 1000, many * 1000, many / one))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
