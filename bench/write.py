"""Append throughput of TranscriptWriter, against a bare os.write of the same bytes.

    python3 bench/write.py [--records 20000]

Writes ``--records`` realistic tool records with each durability
(``flush``: each line handed to the OS in one write, the default;
``fsync``: each line also forced to disk), then writes the very same
bytes, line by line, with bare ``os.write`` (and ``os.fsync``), and prints
records per second and the ratio.  The gap is the cost of encoding (RFC
8785) and hashing, which the bare write does not do.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentloop import TranscriptWriter  # noqa: E402


def payloads(count: int) -> List[Dict[str, Any]]:
    return [
        {
            "step": i,
            "id": "call_%d_0" % i,
            "name": "search",
            "ok": True,
            "value": {"results": [{"title": "result %d" % j, "score": 0.5 + j / 100, "lang": "en"} for j in range(3)]},
        }
        for i in range(count)
    ]


def write_transcript(path: str, items: List[Dict[str, Any]], fsync: bool) -> float:
    start = time.perf_counter()
    with TranscriptWriter(path, overwrite=True, fsync=fsync) as out:
        out.append("task", {"format": "agentloop/1"})
        for payload in items:
            out.append("tool", payload)
    return time.perf_counter() - start


def bare_write(path: str, lines: List[bytes], fsync: bool) -> float:
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for line in lines:
            os.write(fd, line)
            if fsync:
                os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - start


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--fsync-records", type=int, default=2000, help="fewer records for fsync, which is slow")
    args = parser.parse_args(argv)
    print("python %s on %s, %d cpus" % (platform.python_version(), platform.machine(), os.cpu_count() or 0))
    print("%-8s %9s %16s %16s %8s" % ("mode", "records", "writer rec/s", "os.write rec/s", "ratio"))
    with tempfile.TemporaryDirectory() as folder:
        for mode, count in (("flush", args.records), ("fsync", args.fsync_records)):
            items = payloads(count)
            path = os.path.join(folder, "w.jsonl")
            writer = min(write_transcript(path, items, mode == "fsync") for _ in range(2))
            with open(path, "rb") as handle:
                lines = handle.readlines()
            bare = min(bare_write(os.path.join(folder, "b.jsonl"), lines, mode == "fsync") for _ in range(2))
            n = len(lines)
            print("%-8s %9d %16.0f %16.0f %7.2fx" % (mode, n, n / writer, n / bare, (n / writer) / (n / bare)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
