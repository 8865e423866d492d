"""How long ``agentloop report`` takes on a 10,000-record transcript, and how big the page is.

    python3 bench/report.py [--records N] [--keep DIR]

writes a transcript of N records (default 10,000: a task, (N-2)/2 turns of one
assistant record and one tool record each, and a stop) with the real loop and
the demo tools, then times :func:`agentloop.report.render_report` on it
against :func:`agentloop.verify_file` on the same file (the baseline, measured
in the same run: rendering verifies too, then renders).  ``--keep DIR`` leaves
the transcript and the page in DIR, e.g. to open the page in a browser.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentloop import ModelReply, ToolCall, run, verify_file  # noqa: E402
from agentloop.report import render_report  # noqa: E402
from demo import demo_tools  # noqa: E402


def _model(messages: List[Dict[str, Any]], manifest: List[Dict[str, Any]]) -> ModelReply:
    turn = sum(1 for m in messages if m["role"] == "assistant") + 1
    text = "Turn %d: I still need one more number, so I will add the next pair and then look at the sum." % turn
    return ModelReply(text, [ToolCall("add", {"a": turn, "b": turn * 7})])


def _best(runs: int, fn: Any) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000, help="an even number >= 2 (default 10000)")
    parser.add_argument("--keep", metavar="DIR", help="write the transcript and the page into DIR and keep them")
    args = parser.parse_args(argv)
    if args.records < 2 or args.records % 2:
        parser.error("--records must be an even number >= 2")
    folder = args.keep or tempfile.mkdtemp(prefix="agentloop-bench-")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "bench-%d.jsonl" % args.records)
    result = run(
        "Add numbers forever.",
        _model,
        demo_tools(),
        transcript=path,
        overwrite=True,
        max_steps=(args.records - 2) // 2,
        max_tokens=10**9,
    )
    assert result.records == args.records, result

    verify_s = _best(3, lambda: verify_file(path))
    pages: List[str] = []
    render_s = _best(3, lambda: pages.append(render_report(path)[0]))
    page = pages[-1].encode("utf-8")
    with open(os.path.join(folder, "bench-%d.html" % args.records), "wb") as handle:
        handle.write(page)

    print("transcript: %d records, %d bytes" % (result.records, os.path.getsize(path)))
    print("verify_file (baseline): %.3f s" % (verify_s,))
    print("render_report:          %.3f s (%.1fx verify_file)" % (render_s, render_s / verify_s))
    print(
        "page: %d bytes (%.1f MB, %.1fx the transcript), %d <details>, %d open"
        % (
            len(page),
            len(page) / 1e6,
            len(page) / os.path.getsize(path),
            pages[-1].count("<details"),
            pages[-1].count('<details class="turn" open') + pages[-1].count('<details class="turn fault" open'),
        )
    )
    if args.keep:
        print("kept in %s" % (folder,))
    else:
        for name in os.listdir(folder):
            os.remove(os.path.join(folder, name))
        os.rmdir(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
