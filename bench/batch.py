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

    python3 bench/batch.py --memory [--sizes 1000,10000] [--steps 3] [--threads 4]

4. Memory as a batch grows (issue 25): for each size, fresh processes run
   :func:`run_many` of that many scripted runs (no sleep, a thread pool of
   ``--threads``), once returning every entry (the default) and once with
   ``keep_entries=False``, and another checks them with
   ``audit_batch(workers=2)`` (what ``verify --manifest --workers 2``
   runs); each reports its peak RSS (``VmHWM``, and its pool's largest
   process).  Beside them: the ledger's size, the one thing that must grow
   with the runs, and the RSS of the process once it has built the specs
   (they are the caller's: the input).  The last lines give, between the
   first and the last size, each figure's growth per run against the
   ledger's bytes per run.
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
_RSS_KIB = "def rss():\n return [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS')][0]\n"
_RUN_MANY = (
    _PEAK_KIB
    + _RSS_KIB
    + """
import concurrent.futures, os, resource, sys
sys.path[:0] = [sys.argv[1], os.path.join(sys.argv[1], "bench")]
import batch
from agentloop.batch import RunSpec, run_many
batch.SLEEP, batch.STEPS = 0.0, int(sys.argv[4])
specs = [RunSpec("run-%05d" % i, "task %d" % i, batch.STEPS + 1, 10 ** 9) for i in range(int(sys.argv[3]))]
try:
    given = rss()
except (OSError, IndexError):
    given = 0
with concurrent.futures.ThreadPoolExecutor(int(sys.argv[5])) as pool:
    result = run_many(
        specs, model="batch:slow_model", tools="batch:TOOLS", out_dir=sys.argv[2], executor=pool,
        keep_entries=sys.argv[6] == "keep",
    )
assert result.ok and result.runs == len(specs), result.failed[:2]
print(peak(), given, os.path.getsize(result.manifest))
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


def _python(script: str, *args: object) -> List[int]:
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", script, ROOT] + [str(a) for a in args],
        stdout=subprocess.PIPE,
        universal_newlines=True,
        check=True,
    ).stdout
    return [int(word) for word in out.split()]


def _one_size(size: int, steps: int, threads: int) -> Dict[str, float]:
    """4. One size: run_many twice (entries kept, then not) and audit_batch, each in a fresh process; KB."""
    folder = tempfile.mkdtemp(prefix="agentloop-bench-batch-")
    try:
        figures: Dict[str, float] = {}
        for keep in ("keep", "flat"):
            runs = os.path.join(folder, keep)
            start = time.perf_counter()
            peak, given, ledger = _python(_RUN_MANY, runs, size, steps, threads, keep)
            figures[keep] = peak
            figures[keep + " s"] = time.perf_counter() - start
            figures["specs"] = given
            figures["ledger"] = ledger / 1024
        figures["audit"], figures["pool"] = _python(_AUDIT, os.path.join(folder, "flat"), 2)
        return figures
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def memory(sizes: List[int], steps: int, threads: int) -> None:
    """4. Peak RSS of run_many (entries kept, and not) and of audit_batch at each size, each in a fresh process."""
    print(
        "python %s on %s, %d cpus (load average %s); %d steps a run, %d threads; KB = 1024 bytes, MB = 1024 KB"
        % (platform.python_version(), platform.machine(), os.cpu_count() or 0, load(), steps, threads)
    )
    columns = (
        ("ledger", "ledger KB", 1),
        ("specs", "specs built MB", 1024),
        ("keep", "run_many peak MB", 1024),
        ("flat", "keep_entries=False", 1024),
        ("audit", "verify --manifest -w2", 1024),
        ("pool", "its pool process", 1024),
    )
    print("%8s" % "runs" + "".join(" %21s" % title for _, title, _ in columns) + " %12s" % "run_many s")
    measured: Dict[int, Dict[str, float]] = {}
    for size in sizes:
        figures = measured[size] = _one_size(size, steps, threads)
        print(
            "%8d" % size
            + "".join(" %21.1f" % (figures[key] / unit) for key, _, unit in columns)
            + " %12.1f" % figures["keep s"]
        )
    if len(sizes) < 2:
        return
    low, high = measured[sizes[0]], measured[sizes[-1]]
    runs = sizes[-1] - sizes[0]
    ledger = 1024 * (high["ledger"] - low["ledger"]) / runs
    print("growth per run from %d to %d runs, in bytes (the ledger: %.0f bytes a run):" % (sizes[0], sizes[-1], ledger))
    for key, title, _ in columns[1:]:
        grown = 1024 * (high[key] - low[key]) / runs
        print("  %-22s %6.0f bytes a run, %5.2fx the ledger's" % (title, grown, grown / ledger))
    for key, title in (("keep", "run_many"), ("flat", "keep_entries=False")):
        grown = 1024 * ((high[key] - high["specs"]) - (low[key] - low["specs"])) / runs
        print("  %-22s %6.0f bytes a run beyond the specs given, %5.2fx the ledger's" % (title, grown, grown / ledger))


def main() -> None:
    global SLEEP, STEPS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--sleep", type=float, default=0.02)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--memory", action="store_true", help="4.: peak memory of run_many and audit_batch at --sizes")
    parser.add_argument("--control-seconds", type=float, default=0.5, help="each share of the control")
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
        print(
            "control: 2 processes / 1 on pure CPU work on this machine now: %s (2.0 on 2 idle cores)"
            % (control(args.control_seconds),)
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
