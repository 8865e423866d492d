"""verify_file throughput against a same-run baseline, on 1, 2 and all cores, and its peak memory.

    python3 bench/verify.py [--mb 200] [--workers 1,2] [--repeat 2] [--keep PATH] [--timeline]
    python3 bench/verify.py --hostile

With ``--hostile``: the time (best of ``--repeat``) and the peak RSS (of a
fresh child process) of ``verify_file`` on 1 MB of ``x\n`` lines and on 6 MB
of ``{}\n`` lines, each against a valid transcript of the same size,
generated and measured in the same run, and their ratios (target: <= 3x the
valid file's time; memory flat).

Generates a transcript of about ``--mb`` megabytes with realistic payloads
(nested objects, lists of search hits, non-ASCII text, integers, and
floats as tools return them: scores like ``0.6428571428571429`` and
``0.642857142857143``, means, tiny ratios), then times, over the same file
and interleaved so that the machine's load falls on all alike:

* baseline -- read each line, ``json.loads`` it, ``hashlib.sha256`` it;
* ``verify_file(path, workers=N)`` for each N of ``--workers`` (default: 1,
  2 and this machine's cores) -- the full verification, in N processes.

and reports MB/s and the ratio to the baseline (targets, issue 25: >= 0.3x
with one worker, >= 0.5x with 2 workers on 2 cores), the one-worker ratio
again in this process's CPU time (which others' load moves less than wall
time) and the CPU time of all processes per worker count, plus the peak RSS of
each process (``VmHWM`` of a fresh child process running ``verify_file``,
and ``ru_maxrss`` of the largest of its pool's processes), which stays flat
in the file's size (target: under 64 MB).  With ``--timeline``, one more
``verify_file`` per worker count above 1 shows where its time went: each
part's process, start, end, CPU seconds and lines, and any part judged again
at the join.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from agentloop import TranscriptWriter, verify_file  # noqa: E402
from bench.machine import control  # noqa: E402

WORDS = ["alpha", "beta", "gamma", "delta", "naïve", "café", "Zürich", "東京", "данные", "😀", "ok", "error"]


CALLS = ("search", "calc", "fetch")


def assistant(rng: random.Random, step: int, total: int) -> Dict[str, Any]:
    tokens = rng.randint(10, 500)
    return {
        "step": step,
        "text": " ".join(rng.choice(WORDS) for _ in range(40)),
        "tool_calls": [
            {"id": "call_%d_%d" % (step, i), "name": name, "arguments": {"query": rng.choice(WORDS), "limit": 10}}
            for i, name in enumerate(CALLS)
        ],
        "tokens": tokens,
        "total_tokens": total + tokens,
    }


def result(rng: random.Random, step: int, position: int) -> Dict[str, Any]:
    head = {"step": step, "id": "call_%d_%d" % (step, position), "name": CALLS[position]}
    if position == 0:
        return dict(
            head,
            ok=True,
            value={
                "results": [
                    {
                        "title": " ".join(rng.choice(WORDS) for _ in range(6)),
                        "score": rng.randrange(1, 14) / 14,
                        "similarity": round(rng.random(), 15),
                        "rank": i,
                        "tags": [rng.choice(WORDS) for _ in range(3)],
                        "meta": {
                            "lang": rng.choice(("en", "de", "ja")),
                            "size": rng.randint(0, 10**6),
                            "age_days": rng.random() * 400,
                        },
                    }
                    for i in range(8)
                ]
            },
        )
    if position == 1:
        return dict(
            head,
            ok=True,
            value={
                "sum": rng.randint(-(10**9), 10**9),
                "mean": rng.uniform(-1e6, 1e6),
                "ratio": rng.random() / 1e7,
                "series": [rng.gauss(0, 1) for _ in range(6)],
            },
        )
    return dict(
        head, ok=False, error="tool 'fetch' raised TimeoutError: " + "".join(rng.choice(WORDS) for _ in range(20))
    )


def generate(path: str, megabytes: float) -> int:
    """A transcript of the agentloop/1 grammar of about ``megabytes``: turns of three calls each."""
    rng = random.Random(6)
    target = megabytes * 1e6
    with TranscriptWriter(path, overwrite=True) as out:
        out.append(
            "task",
            {
                "format": "agentloop/1",
                "task": "bench",
                "budgets": {"max_steps": 10**9, "max_tokens": 10**15, "stop_sentinel": None},
                "tools": [],
            },
        )
        step = total = 0
        while os.path.getsize(path) < target if step % 100 == 0 else True:
            step += 1
            turn = assistant(rng, step, total)
            total = turn["total_tokens"]
            out.append("assistant", turn)
            for position in range(len(CALLS)):
                out.append("tool", result(rng, step, position))
        out.append("stop", {"reason": "step_budget", "steps": step, "tokens": total, "detail": ""})
        return out.count


def baseline(path: str) -> int:
    count = 0
    with open(path, "rb") as handle:
        for line in handle:
            json.loads(line)
            hashlib.sha256(line).digest()
            count += 1
    return count


def _cpu_all() -> float:
    """CPU seconds of this process and of its ended children (a pool's processes, once it has shut down)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def best_of(repeat: int, fn: Any, *args: Any) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


# Peak RSS in KiB: VmHWM of this process image where Linux gives it (ru_maxrss
# can carry the parent's peak across fork and exec), else ru_maxrss.
_PEAK = (
    "def peak():\n try:\n  return [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
    " except (OSError, IndexError):\n  import resource; return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
)
CHILD = _PEAK + (
    "import sys; sys.path.insert(0, sys.argv[1]); from agentloop import verify_file; "
    "r = verify_file(sys.argv[2]); print(r.ok, r.count, peak())"
)
#: The same child, without the verify_file call: what the interpreter and agentloop's import hold.
IDLE = _PEAK + "import sys; sys.path.insert(0, sys.argv[1]); from agentloop import verify_file; print(True, 0, peak())"


def peak_rss(path: str, program: str = CHILD) -> float:
    """MB of peak RSS of a fresh process running ``program`` on ``path``."""
    child = subprocess.run(
        [sys.executable, "-c", program, ROOT, path], stdout=subprocess.PIPE, universal_newlines=True, check=True
    )
    return int(child.stdout.split()[2]) / 1024


def hostile(repeat: int) -> None:
    """verify_file on the issue's two hostile files against valid files of the same sizes."""
    folder = tempfile.mkdtemp()
    try:
        print(
            "python %s on %s, %d cpus; verify_file, best of %d"
            % (platform.python_version(), platform.machine(), os.cpu_count() or 0, repeat)
        )
        print("peak RSS of a process that only imports agentloop: %.1f MB" % (peak_rss(os.devnull, IDLE),))
        print("%-30s %9s %9s %8s %12s %8s" % ("file", "MB", "seconds", "faults", "peak RSS MB", "x valid"))
        for label, unit, megabytes in (("x\\n lines", b"x\n", 1.0), ("{}\\n lines", b"{}\n", 6.0)):
            bad = os.path.join(folder, "hostile.jsonl")
            with open(bad, "wb") as handle:
                handle.write(unit * int(megabytes * 1e6 / len(unit)))
            good = os.path.join(folder, "valid.jsonl")
            generate(good, megabytes)
            # the valid file cut to the hostile one's size, at a line boundary
            with open(good, "rb") as handle:
                data = handle.read(os.path.getsize(bad))
            with open(good, "wb") as handle:
                handle.write(data[: data.rfind(b"\n") + 1])
            del data
            rows = []
            for name, path in (("valid, same size", good), (label, bad)):
                verdict = verify_file(path)
                seconds = best_of(repeat, verify_file, path)
                rows.append((name, os.path.getsize(path) / 1e6, seconds, len(verdict.faults), peak_rss(path)))
            base = rows[0][2]
            for name, size, seconds, faults, rss in rows:
                print("%-30s %9.2f %9.3f %8d %12.1f %8.2f" % (name, size, seconds, faults, rss, seconds / base))
    finally:
        for name in os.listdir(folder):
            os.remove(os.path.join(folder, name))
        os.rmdir(folder)


def _peaks(path: str, workers: int) -> str:
    """Peak RSS, in MB, of a fresh process verifying ``path`` with ``workers`` (and of its largest pool process)."""
    program = _PEAK + (
        "import resource, sys; sys.path.insert(0, sys.argv[1]); from agentloop import verify_file; "
        "r = verify_file(sys.argv[2], workers=int(sys.argv[3])); "
        "print(r.ok, r.count, peak(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    child = subprocess.run(
        [sys.executable, "-c", program, ROOT, path, str(workers)],
        stdout=subprocess.PIPE,
        universal_newlines=True,
        check=True,
    )
    ok, count, own, pool = child.stdout.split()
    return "%.1f MB (pool processes: %s)" % (int(own) / 1024, "%.1f MB" % (int(pool) / 1024) if int(pool) else "none")


_JUDGE_PART: Any = None  # the real agentloop.transcript.parallel.judge_part while --timeline runs


def _timed_part(*args: Any) -> Any:
    """``judge_part`` (a pool's task), its part stamped with ``(pid, start, end, CPU seconds)``."""
    start, cpu = time.perf_counter(), time.process_time()
    part = _JUDGE_PART(*args)
    part.span = (os.getpid(), start, time.perf_counter(), time.process_time() - cpu)
    return part


def timeline(path: str, workers: int) -> None:
    """Where the time of one ``verify_file(path, workers=workers)`` goes: each part's process, start and end
    (seconds from the call), CPU seconds and lines, and the parts judged again at the join (a pool that
    forks: the stamped task is this module's)."""
    global _JUDGE_PART
    from agentloop.transcript import parallel

    judged, again = parallel._judged, parallel._Join.again
    parts: List[Any] = []
    redone: List[int] = []
    _JUDGE_PART = parallel.judge_part
    parallel.judge_part = _timed_part  # type: ignore[assignment]
    parallel._judged = lambda *a: parts.extend(judged(*a)) or parts  # type: ignore[assignment]
    parallel._Join.again = lambda self, k, later: redone.append(k) or again(self, k, later)  # type: ignore[method-assign]
    try:
        start = time.perf_counter()
        verify_file(path, workers=workers)
        took = time.perf_counter() - start
    finally:
        parallel.judge_part, parallel._judged, parallel._Join.again = _JUDGE_PART, judged, again  # type: ignore[method-assign]
    print(
        "timeline of verify_file(workers=%d): %.2f s, %d parts, judged again: %s"
        % (workers, took, len(parts), redone or "none")
    )
    for k, part in enumerate(parts):
        pid, begun, ended, cpu = part.span
        print(
            "  part %d: process %d, %.2f-%.2f s, CPU %.2f s, %d lines"
            % (k, pid, begun - start, ended - start, cpu, part.lines)
        )


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--workers", default="1,2,%d" % (os.cpu_count() or 1), help="worker counts, comma-separated")
    parser.add_argument("--keep", help="write the transcript here and keep it")
    parser.add_argument(
        "--hostile", action="store_true", help="the two hostile files against valid ones of the same size"
    )
    parser.add_argument("--control-seconds", type=float, default=0.5, help="each share of the control")
    parser.add_argument("--timeline", action="store_true", help="then each part's process, times and CPU")
    args = parser.parse_args(argv)
    if args.hostile:
        hostile(max(args.repeat, 3))
        return 0
    counts = sorted({int(n) for n in args.workers.split(",")})
    folder = tempfile.mkdtemp()
    path = args.keep or os.path.join(folder, "verify-bench.jsonl")
    try:
        records = generate(path, args.mb) if not (args.keep and os.path.exists(path)) else 0
        size = os.path.getsize(path) / 1e6
        print(
            "python %s on %s, %d cpus, load average %s; %s: %.1f MB, %d records"
            % (
                platform.python_version(),
                platform.machine(),
                os.cpu_count() or 0,
                " ".join("%.2f" % x for x in os.getloadavg()),
                os.path.basename(path),
                size,
                records,
            )
        )
        times: Dict[str, List[float]] = {}
        cpu: Dict[str, List[float]] = {}  # CPU time (pool processes included): less moved by others' load

        def checked(workers: int) -> None:
            verdict = verify_file(path, workers=workers)
            assert verdict.ok and (not records or verdict.count == records), verdict.faults[:3]

        runs = [("baseline", lambda: baseline(path))] + [("workers=%d" % n, lambda n=n: checked(n)) for n in counts]  # type: ignore[misc]
        for _ in range(args.repeat):  # interleaved: the load falls on each alike
            for name, fn in runs:
                start = _cpu_all()
                times.setdefault(name, []).append(best_of(1, fn))
                cpu.setdefault(name, []).append(_cpu_all() - start)
        base = min(times["baseline"])
        print("%-38s %10s %10s %10s" % ("", "seconds", "MB/s", "x baseline"))
        print("%-38s %10.2f %10.1f %10s" % ("baseline (loads + sha256 per line)", base, size / base, "1.00"))
        for n in counts:
            took = min(times["workers=%d" % n])
            print(
                "%-38s %10.2f %10.1f %10.2f"
                % ("verify_file, %d worker%s" % (n, "s" * (n > 1)), took, size / took, base / took)
            )
        if "workers=1" in cpu:
            print(
                "the same in CPU time: baseline %.2f s, 1 worker %.2f s: %.2fx"
                % (min(cpu["baseline"]), min(cpu["workers=1"]), min(cpu["baseline"]) / min(cpu["workers=1"]))
            )
            print(
                "CPU time of all processes (the work, whatever the load): %s"
                % ", ".join("%d worker%s %.2f s" % (n, "s" * (n > 1), min(cpu["workers=%d" % n])) for n in counts)
            )
        print(
            "(targets: >= 0.3x with 1 worker, >= 0.5x with 2 workers on 2 cores; load average now %s)"
            % (" ".join("%.2f" % x for x in os.getloadavg()),)
        )
        print(
            "control: 2 processes / 1 on pure CPU work on this machine now: %s (2.0 on 2 idle cores)"
            % (control(args.control_seconds),)
        )
        for n in counts:
            print("peak RSS verifying with %d worker%s: %s (target < 64 MB each)" % (n, "s" * (n > 1), _peaks(path, n)))
        for n in counts if args.timeline else ():
            if n > 1:
                timeline(path, n)
    finally:
        if not args.keep and os.path.exists(path):
            os.remove(path)
        os.rmdir(folder) if not os.listdir(folder) else None
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
