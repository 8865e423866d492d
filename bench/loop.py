"""Loop overhead per step, and whether it grows with the run.

    python3 bench/loop.py [--sizes 200,2000,20000] [--repeat 3]

A scripted model asks for one tool call per turn for N turns, with a fresh
``ModelReply`` each turn (as every real model gives) and realistic content:
arguments with non-ASCII text, a float and nesting; a result of five search
hits with scores like ``0.642857142857143``.  The transcript is written to a
temporary file with the default durability (each record handed to the OS,
no fsync).  Reports the best of ``--repeat`` runs in microseconds per step,
and the peak memory traced by ``tracemalloc`` in a separate run (tracing
slows Python down, so it is not timed).

Targets (issue 6): under 100 us per step, and the per-step cost at the
largest N within 1.3x of the smallest; (issue 12) at most 60 us per step at
N=200.  Each run writes a new transcript, as ``run``'s defaults ask (removed
after its timing), and no checkpoint, so the writer keeps no Merkle tree; the
same run with ``checkpoint=`` is printed beside it.  Then two baselines of the same run, interleaved with it so that the
machine's load falls on both alike: the same run with one reply object
reused for every turn (issue 25: fresh replies within 1.1x of it), and with
``canonical._fast`` switched off, so every record, argument and result goes
through the exact RFC 8785 encoder (the records the loop assembles from
their members' texts, ``agentloop.loop.records``, are encoded whole too).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
import tracemalloc
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentloop import ModelReply, Tool, ToolCall, canonical, run  # noqa: E402
from agentloop.loop import engine  # noqa: E402

HITS = [
    {
        "title": "Zürich café %d — 東京" % i,
        "score": (9 - i) / 14,
        "rank": i,
        "tags": ["naïve", "données"],
        "meta": {"lang": "de", "size": 1200 + i, "age_days": 12.5 + i / 3},
    }
    for i in range(5)
]


def search(query: str, limit: int, filters: Dict[str, Any]) -> Dict[str, Any]:
    return {"query": query, "results": [dict(hit) for hit in HITS[:limit]], "took_ms": 0.642857142857143}


TOOL = Tool(
    "search",
    "Search the index.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1},
            "filters": {"type": "object"},
        },
        "required": ["query", "limit", "filters"],
        "additionalProperties": False,
    },
    search,
)


def fresh(messages: List[Dict[str, Any]], manifest: List[Dict[str, Any]]) -> ModelReply:
    """A new reply each turn, as a model's adapter builds one from each response."""
    return ModelReply(
        "Searching for cafés near Zürich (step %d)." % len(messages),
        [
            ToolCall(
                "search",
                {"query": "café Zürich 東京", "limit": 5, "filters": {"min_score": 0.35, "langs": ["de", "ja"]}},
            )
        ],
    )


REPLY = fresh([], [])


def reused(messages: List[Dict[str, Any]], manifest: List[Dict[str, Any]]) -> ModelReply:
    """One reply object for every turn: the old benchmark's model, the baseline here."""
    return REPLY


def one_run(steps: int, folder: str, model: Any = fresh, checkpoint: bool = False) -> float:
    """One run's seconds: a new transcript (run's default), removed after the timing; with ``checkpoint``,
    its checkpoint written too (so the writer keeps the Merkle tree as it goes)."""
    path = os.path.join(folder, "loop-%d.jsonl" % steps)
    extra: Dict[str, Any] = {"checkpoint": path + ".ckpt"} if checkpoint else {}
    start = time.perf_counter()
    result = run("bench", model, [TOOL], transcript=path, max_steps=steps, max_tokens=10**12, **extra)
    elapsed = time.perf_counter() - start
    for name in [path] + list(extra.values()):
        os.unlink(name)
    assert result.steps == steps and result.stop_reason == "step_budget", result
    return elapsed


def peak_memory(steps: int, folder: str) -> int:
    tracemalloc.start()
    try:
        one_run(steps, folder)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,2000,20000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(
        "python %s on %s, %d cpus, load average %s"
        % (
            platform.python_version(),
            platform.machine(),
            os.cpu_count() or 0,
            " ".join("%.2f" % x for x in os.getloadavg()),
        )
    )
    print("%8s %12s %14s %14s" % ("N", "us/step", "vs smallest N", "peak memory"))
    with tempfile.TemporaryDirectory() as folder:
        base = None
        for n in sizes:
            per_step = min(one_run(n, folder) for _ in range(args.repeat)) / n * 1e6
            base = base or per_step
            peak = peak_memory(n, folder)
            print("%8d %12.1f %13.2fx %11.1f KiB" % (n, per_step, per_step / base, peak / 1024))
        # The baselines: runs with a reused reply and without the fast path, interleaved
        # with fresh-reply runs so that the machine's load falls on all alike; the best of each.
        n, fast, turn_text, tool_text = sizes[0], canonical._fast, engine.turn_text, engine.tool_text
        with_fast, same_reply, without, anchored = [], [], [], []
        # this process's CPU time: less moved by others' load
        cpu: Dict[str, List[float]] = {"fresh": [], "reused": [], "exact": [], "checkpoint": []}
        for _ in range(args.repeat * 3):
            for name, model, wall in (("fresh", fresh, with_fast), ("reused", reused, same_reply)):
                start = time.process_time()
                wall.append(one_run(n, folder, model))
                cpu[name].append(time.process_time() - start)
            start = time.process_time()
            anchored.append(one_run(n, folder, fresh, checkpoint=True))
            cpu["checkpoint"].append(time.process_time() - start)
        for _ in range(args.repeat):
            canonical._fast = lambda value, depth: None  # type: ignore[assignment]
            engine.turn_text = engine.tool_text = lambda *given: None  # type: ignore[assignment]
            try:
                start = time.process_time()
                without.append(one_run(n, folder))
                cpu["exact"].append(time.process_time() - start)
            finally:
                canonical._fast, engine.turn_text, engine.tool_text = fast, turn_text, tool_text
        on, again, off = min(with_fast) / n * 1e6, min(same_reply) / n * 1e6, min(without) / n * 1e6
        print(
            "at N=%d: %.1f us/step with a fresh reply a turn, %.1f with one reply reused: %.2fx (target <= 1.1x)"
            % (n, on, again, on / again)
        )
        print(
            "  the same in CPU time of this process: %.1f and %.1f us/step: %.2fx"
            % (min(cpu["fresh"]) / n * 1e6, min(cpu["reused"]) / n * 1e6, min(cpu["fresh"]) / min(cpu["reused"]))
        )
        print(
            "with checkpoint= at N=%d: %.1f us/step (the Merkle tree kept as it goes, the checkpoint written at "
            "the end): %.2fx of %.1f without" % (n, min(anchored) / n * 1e6, min(anchored) / n * 1e6 / on, on)
        )
        print(
            "fast path at N=%d: %.1f us/step with it, %.1f without (exact encoder only): %.2fx" % (n, on, off, off / on)
        )
        print(
            "  the same in CPU time of this process: %.1f and %.1f us/step: %.2fx"
            % (min(cpu["fresh"]) / n * 1e6, min(cpu["exact"]) / n * 1e6, min(cpu["exact"]) / min(cpu["fresh"]))
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
