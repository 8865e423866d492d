"""run_many on a thread pool against the ideal, and ``verify --manifest --workers 2`` against 1 worker.

    python3 bench/batch.py [--runs 1000] [--steps 5] [--sleep 0.02] [--threads 32] [--repeat 3]

1. ``--runs`` runs of ``--steps`` model turns each, with a model that
   sleeps ``--sleep`` seconds a turn (I/O-bound, like an API call), through
   :func:`agentloop.batch.run_many` on a ``ThreadPoolExecutor`` of
   ``--threads``: wall time against the ideal ``runs * steps * sleep /
   threads`` (target: at most 1.25x).  The wall time includes everything
   the driver does: computing every run's expected record 0, re-verifying
   every transcript, and writing the ledger and its checkpoint.
2. The same batch's transcripts checked against its ledger
   (:func:`agentloop.batch.audit_batch`, what ``agentloop verify --manifest``
   runs) with 1 worker and with 2 worker processes, best of ``--repeat``:
   runs per second and their ratio (target: at least 1.7x on 2 cores), the
   two interleaved round by round so that others' load falls on both alike,
   and the CPU time of all processes (what the work costs, whatever the load).
3. The control for 2: what two processes gain over one on pure CPU work
   (SHA-256 chains) on this machine at that moment -- on a shared machine
   the second core may not be free, and no verifier can beat this figure.

    python3 bench/batch.py --memory [--sizes 1000,10000] [--steps 3]

4. Memory as a batch grows (issue 25): for each size, a fresh process runs
   :func:`run_many` of that many scripted runs (no sleep, a thread pool of
   ``--threads``) and another checks them with ``audit_batch(workers=2)``;
   each reports its peak RSS (``VmHWM``, and its pool's largest process)
   and the ledger's size, the one thing that must grow with the runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from typing import Any, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from agentloop import ModelReply, ToolCall, ToolRegistry, tool  # noqa: E402
from agentloop.batch import RunSpec, audit_batch, run_many  # noqa: E402
from bench.machine import control, load  # noqa: E402

SLEEP = 0.02
STEPS = 5


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


#: ``__main__:TOOLS``
TOOLS = ToolRegistry([add])


class SlowModel:
    """``STEPS - 1`` turns that call ``add``, then an answer; each turn sleeps ``SLEEP`` seconds."""

    def model_info(self) -> Dict[str, Any]:
        return {"provider": "bench", "model": "slow"}

    def __call__(self, messages: List[Any], manifest: List[Dict[str, Any]]) -> ModelReply:
        time.sleep(SLEEP)
        turns = sum(1 for m in messages if m["role"] == "assistant")
        if turns < STEPS - 1:
            return ModelReply("turn %d" % (turns,), (ToolCall("add", {"a": turns, "b": 1}, "c%d" % turns),))
        return ModelReply("done")


def slow_model() -> SlowModel:
    """``__main__:slow_model``"""
    return SlowModel()


_PEAK_KIB = (
    "def peak():\n try:\n  return [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
    " except (OSError, IndexError):\n  import resource; return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
)
_RUN_MANY = (
    _PEAK_KIB
    + """
import concurrent.futures, os, resource, sys
sys.path[:0] = [sys.argv[1], os.path.join(sys.argv[1], "bench")]
import batch
from agentloop.batch import RunSpec, run_many
batch.SLEEP, batch.STEPS = 0.0, int(sys.argv[4])
specs = [RunSpec("run-%05d" % i, "task %d" % i, batch.STEPS + 1, 10 ** 9) for i in range(int(sys.argv[3]))]
with concurrent.futures.ThreadPoolExecutor(int(sys.argv[5])) as pool:
    result = run_many(specs, model="batch:slow_model", tools="batch:TOOLS", out_dir=sys.argv[2], executor=pool)
assert result.ok, [e for e in result.entries if not e.ok][:2]
print(peak(), os.path.getsize(result.manifest))
"""
)
_AUDIT = (
    _PEAK_KIB
    + """
import glob, os, resource, sys
sys.path.insert(0, sys.argv[1])
from agentloop.batch import audit_batch
files = sorted(glob.glob(os.path.join(sys.argv[2], "*.jsonl")))
files = [f for f in files if not f.endswith("manifest.jsonl")]
audit = audit_batch(files, os.path.join(sys.argv[2], "manifest.jsonl"), workers=int(sys.argv[3]))
assert audit.ok and len(audit.verified) == len(files)
print(peak(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""
)


def _cpu_all() -> float:
    """CPU seconds of this process and of its ended children (a pool's processes, once it has shut down)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def memory(sizes: List[int], steps: int, threads: int) -> None:
    """4. Peak RSS of run_many and of audit_batch at each size, each in a fresh process."""
    import subprocess

    print(
        "python %s on %s, %d cpus (load average %s); %d steps a run, %d threads"
        % (platform.python_version(), platform.machine(), os.cpu_count() or 0, load(), steps, threads)
    )
    print(
        "%8s %12s %16s %22s %24s"
        % ("runs", "ledger KB", "run_many peak MB", "run_many s (wall)", "audit_batch(workers=2) MB")
    )
    for size in sizes:
        folder = tempfile.mkdtemp(prefix="agentloop-bench-batch-")
        try:
            runs = os.path.join(folder, "runs")
            start = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-c", _RUN_MANY, ROOT, runs, str(size), str(steps), str(threads)],
                stdout=subprocess.PIPE,
                universal_newlines=True,
                check=True,
            ).stdout.split()
            wall = time.perf_counter() - start
            audit = subprocess.run(
                [sys.executable, "-c", _AUDIT, ROOT, runs, "2"],
                stdout=subprocess.PIPE,
                universal_newlines=True,
                check=True,
            ).stdout.split()
            print(
                "%8d %12.1f %16.1f %22.1f %24s"
                % (
                    size,
                    int(out[1]) / 1e3,
                    int(out[0]) / 1024,
                    wall,
                    "%.1f (pool: %s)"
                    % (int(audit[0]) / 1024, "%.1f" % (int(audit[1]) / 1024) if int(audit[1]) else "none"),
                )
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    global SLEEP, STEPS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--sleep", type=float, default=0.02)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--memory", action="store_true", help="4.: peak memory of run_many and audit_batch at --sizes")
    parser.add_argument("--sizes", default="1000,10000")
    args = parser.parse_args()
    if args.memory:
        memory([int(n) for n in args.sizes.split(",")], args.steps, args.threads)
        return
    SLEEP, STEPS = args.sleep, args.steps
    import concurrent.futures

    folder = tempfile.mkdtemp(prefix="agentloop-bench-batch-")
    try:
        print(
            "python %s on %s, %d cpus (load average %s)"
            % (platform.python_version(), platform.machine(), os.cpu_count() or 0, load())
        )
        specs = [RunSpec("run-%04d" % i, "task %d" % i, args.steps + 1, 10**9) for i in range(args.runs)]
        ideal = args.runs * args.steps * args.sleep / args.threads
        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
            result = run_many(
                specs,
                model="__main__:slow_model",
                tools="__main__:TOOLS",
                out_dir=os.path.join(folder, "runs"),
                executor=pool,
                checkpoint=os.path.join(folder, "runs", "manifest.checkpoint"),
            )
        wall = time.perf_counter() - start
        steps = {e.steps for e in result.entries}
        print(
            "run_many: %d runs x %s steps, %.0f ms a turn, %d threads: %.2f s; "
            "ideal %.2f s; ratio %.3fx (target <= 1.25x); all ok: %s"
            % (
                args.runs,
                "/".join(map(str, sorted(s for s in steps if s is not None))),
                args.sleep * 1000,
                args.threads,
                wall,
                ideal,
                wall / ideal,
                result.ok,
            )
        )

        files = [e.path for e in result.entries]
        size = sum(os.path.getsize(p) for p in files)
        times: Dict[int, List[float]] = {1: [], 2: []}
        cpu: Dict[int, List[float]] = {1: [], 2: []}
        for _ in range(args.repeat):  # interleaved: a burst of others' load falls on both alike
            for workers in (1, 2):
                start, used = time.perf_counter(), _cpu_all()
                audit = audit_batch(files, result.manifest, workers=workers)
                times[workers].append(time.perf_counter() - start)
                cpu[workers].append(_cpu_all() - used)
                assert audit.ok and len(audit.verified) == args.runs
        best = {workers: min(times[workers]) for workers in times}
        for workers in (1, 2):
            print(
                "verify --manifest --workers %d: %d transcripts (%.1f MB) in %.3f s (best of %d): %.0f runs/s;"
                " CPU of all processes %.2f s"
                % (
                    workers,
                    len(files),
                    size / 1e6,
                    best[workers],
                    args.repeat,
                    args.runs / best[workers],
                    min(cpu[workers]),
                )
            )
        print(
            "verify --workers 2 / --workers 1 throughput: %.2fx (target >= 1.7x); each round: %s"
            % (best[1] / best[2], " ".join("%.2f" % (one / two) for one, two in zip(times[1], times[2])))
        )
        print("control: 2 processes / 1 on pure CPU work on this machine now: %s (2.0 on 2 idle cores)" % (control(),))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
