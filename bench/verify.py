"""verify_file throughput against a same-run baseline, and its peak memory.

    python3 bench/verify.py [--mb 100] [--keep PATH]

Generates a transcript of about ``--mb`` megabytes with realistic payloads
(nested objects, lists of records, unicode text, integers and floats), then
times, over the same file:

* baseline -- read each line, ``json.loads`` it, ``hashlib.sha256`` it;
* ``verify_file`` -- the full verification.

and reports MB/s for both and their ratio (target: verify >= 0.5x the
baseline), plus the peak memory of ``verify_file`` measured with
``ru_maxrss`` of a fresh child process (target: under 64 MB whatever the
file size).
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

WORDS = ["alpha", "beta", "gamma", "delta", "naïve", "café", "Zürich", "東京", "данные", "😀", "ok", "error"]


def payload(rng: random.Random, step: int) -> Dict[str, Any]:
    kind = step % 4
    if kind == 0:
        return {"step": step, "text": " ".join(rng.choice(WORDS) for _ in range(40)), "tool_calls": [
            {"id": "call_%d_0" % step, "name": "search", "arguments": {"query": rng.choice(WORDS), "limit": 10}}],
            "tokens": rng.randint(10, 500), "total_tokens": step * 100}
    if kind == 1:
        return {"step": step, "id": "call_%d_0" % step, "name": "search", "ok": True, "value": {"results": [
            {"title": " ".join(rng.choice(WORDS) for _ in range(6)), "score": round(rng.random(), 4),
             "rank": i, "tags": [rng.choice(WORDS) for _ in range(3)], "meta": {"lang": "en", "size": rng.randint(0, 10**6)}}
            for i in range(8)]}}
    if kind == 2:
        return {"step": step, "id": "call_%d_1" % step, "name": "calc", "ok": True,
                "value": {"sum": rng.randint(-10**9, 10**9), "mean": rng.uniform(-1e6, 1e6), "ratio": rng.random() / 1e7}}
    return {"step": step, "id": "call_%d_2" % step, "name": "fetch", "ok": False,
            "error": "tool 'fetch' raised TimeoutError: " + "".join(rng.choice(WORDS) for _ in range(20))}


def generate(path: str, megabytes: float) -> int:
    rng = random.Random(6)
    target = megabytes * 1e6
    with TranscriptWriter(path, overwrite=True) as out:
        out.append("task", {"format": "agentloop/1", "task": "bench", "budgets": {}, "tools": []})
        step = 0
        while os.path.getsize(path) < target if step % 1000 == 0 else True:
            step += 1
            out.append("assistant" if step % 4 == 0 else "tool", payload(rng, step))
        out.append("stop", {"reason": "step_budget", "steps": step, "tokens": 0, "detail": ""})
        return out.count


def baseline(path: str) -> int:
    count = 0
    with open(path, "rb") as handle:
        for line in handle:
            json.loads(line)
            hashlib.sha256(line).digest()
            count += 1
    return count


def best_of(repeat: int, fn: Any, *args: Any) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


CHILD = "import sys,resource; sys.path.insert(0, sys.argv[1]); from agentloop import verify_file; r = verify_file(sys.argv[2]); print(r.ok, r.count, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--keep", help="write the transcript here and keep it")
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp()
    path = args.keep or os.path.join(folder, "verify-bench.jsonl")
    try:
        records = generate(path, args.mb)
        size = os.path.getsize(path) / 1e6
        print("python %s on %s, %d cpus; %s: %.1f MB, %d records" % (
            platform.python_version(), platform.machine(), os.cpu_count() or 0, os.path.basename(path), size, records))
        verdict = verify_file(path)
        assert verdict.ok and verdict.count == records, verdict.faults[:3]
        base = best_of(args.repeat, baseline, path)
        full = best_of(args.repeat, verify_file, path)
        print("%-34s %10s %10s" % ("", "seconds", "MB/s"))
        print("%-34s %10.2f %10.1f" % ("baseline (loads + sha256 per line)", base, size / base))
        print("%-34s %10.2f %10.1f" % ("verify_file", full, size / full))
        print("ratio verify/baseline throughput: %.2f (target >= 0.5)" % (base / full))
        child = subprocess.run([sys.executable, "-c", CHILD, ROOT, path], stdout=subprocess.PIPE, universal_newlines=True, check=True)
        ok, count, rss_kib = child.stdout.split()
        print("peak RSS of a process running verify_file: %.1f MB (target < 64 MB); ok=%s count=%s" % (int(rss_kib) / 1024, ok, count))
    finally:
        if not args.keep and os.path.exists(path):
            os.remove(path)
        os.rmdir(folder) if not os.listdir(folder) else None
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
