"""The per-record cost of keeping the RFC 6962 Merkle root while writing.

    python3 bench/merkle.py [--records 20000] [--repeats 7]

Writes the same realistic tool records with ``TranscriptWriter`` (default
``flush`` durability) twice per round, in the same run, alternating:

* **without the tree** -- the writer's compact range replaced by a stub, so
  no leaf hash and no node hash is computed (what the writer cost before);
* **with the tree** -- the writer as shipped: one leaf hash and, amortised,
  one node hash per record (``agentloop.merkle.CompactRange``).

It prints the best time per record of each, the difference (the tree's
cost per record) and the ratio, then two figures for context: the root
computed after every record (what a checkpoint after every record adds,
without its file writes) and the compact range alone.
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
from agentloop.transcript.merkle import CompactRange, leaf_hash  # noqa: E402


class _NoTree:
    """Stands in for the writer's CompactRange: keeps nothing."""

    def append_data(self, data: object) -> None:
        pass


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


def write(path: str, items: List[Dict[str, Any]], tree: bool, root_each: bool = False) -> float:
    start = time.perf_counter()
    with TranscriptWriter(path, overwrite=True) as out:
        if not tree:
            out._range = _NoTree()  # type: ignore[assignment]
        out.append("task", {"format": "agentloop/1"})
        for payload in items:
            out.append("tool", payload)
            if root_each:
                _ = out.root
    return time.perf_counter() - start


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    items = payloads(args.records)
    n = args.records + 1
    best = {"without": float("inf"), "with": float("inf"), "root each": float("inf")}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "m.jsonl")
        for _ in range(args.repeats):  # alternate, so drift hits both alike
            best["without"] = min(best["without"], write(path, items, tree=False))
            best["with"] = min(best["with"], write(path, items, tree=True))
            best["root each"] = min(best["root each"], write(path, items, tree=True, root_each=True))
        with open(path, "rb") as handle:
            lines = [line[:-1] for line in handle]
            size = sum(len(line) + 1 for line in lines)
    tree_alone = float("inf")
    for _ in range(args.repeats):
        start = time.perf_counter()
        tree = CompactRange()
        for line in lines:
            tree.append(leaf_hash(line))
        tree.root()
        tree_alone = min(tree_alone, time.perf_counter() - start)

    us = {name: seconds / n * 1e6 for name, seconds in best.items()}
    print(
        "python %s on %s; %d records, %.0f bytes each on average; best of %d"
        % (platform.python_version(), platform.machine(), n, size / n, args.repeats)
    )
    print("%-40s %10s %12s" % ("", "us/record", "records/s"))
    print("%-40s %10.2f %12.0f" % ("writer without the tree (stub)", us["without"], 1e6 / us["without"]))
    print("%-40s %10.2f %12.0f" % ("writer with the tree (as shipped)", us["with"], 1e6 / us["with"]))
    print("%-40s %10.2f %12.0f" % ("writer with the tree, root every record", us["root each"], 1e6 / us["root each"]))
    print("%-40s %10.2f %12.0f" % ("compact range alone (leaf + nodes)", tree_alone / n * 1e6, n / tree_alone))
    print(
        "tree cost: %+.2f us/record; ratio with/without: %.3fx"
        % (us["with"] - us["without"], us["with"] / us["without"])
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
