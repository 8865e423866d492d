"""Fuzz the verifier and the loop for as long as you like.

    python3 bench/fuzz.py [--seconds 60] [--seed 1]

Repeats rounds of the suite's fuzzers (tests/support/fuzzing.py) with new seeds until
the time is up: mutated transcripts (byte flips, deleted, duplicated and
swapped lines, truncation at every byte, junk, huge, invalid-UTF-8 and deep
lines, duplicate keys, lone surrogates, NaN, big integers, non-canonical
spellings) through ``verify_file``, and scripted models sending random,
malformed and oversized calls through ``run``.  Then the type confusions:
every field of every record kind (of a run holding every optional member,
and of the demo's recover run) replaced by every JSON type with the chain
recomputed, through ``verify_file``, ``render_report``, ``checkpoint_of``
and ``repair`` (crashes must be 0; a type the grammar fixes accepted must be
0).  Then checks that ``verify_file`` time grows linearly with hostile input
size.  Prints cases, crashes (must be 0), silent accepts (must be 0) and the
slowest input.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from agentloop import verify_file  # noqa: E402
from agentloop.loop import run  # noqa: E402
from tests.support.fuzzing import FuzzReport, TypeReport, fuzz_all, fuzz_types, rich_transcript  # noqa: E402


def type_confusions() -> TypeReport:
    from demo import demo_tools, recover_model

    report = TypeReport()
    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(folder, "recover.jsonl")
        run("fuzz source", recover_model(), demo_tools(), transcript=source, max_steps=8, max_tokens=2000)
        with open(source, "rb") as handle:
            recover = handle.read()
        for data in (rich_transcript(folder), recover):
            fuzz_types(data, folder, report, readers_every=1)
    return report


def scaling() -> None:
    print("verify_file time against hostile input size (linear means flat ms/MB):")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "big.jsonl")
        for label, unit in (("one long string line", b"x"), ("deep nesting line", b"[")):
            for megabytes in (1, 4, 12):
                body = unit * (megabytes * 1_000_000)
                line = (b'{"a":"' + body + b'"}\n') if unit == b"x" else body + b"\n"
                with open(path, "wb") as handle:
                    handle.write(line * 2)
                start = time.perf_counter()
                verdict = verify_file(path)
                elapsed = time.perf_counter() - start
                print(
                    "  %-22s %3d MB x2: %7.1f ms  (%5.1f ms/MB) faults=%d"
                    % (label, megabytes, elapsed * 1000, elapsed * 1000 / (2 * megabytes), len(verdict.faults))
                )


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    totals = {"transcripts": FuzzReport(), "loop": FuzzReport()}
    deadline = time.monotonic() + args.seconds
    seed = args.seed
    rounds = 0
    while time.monotonic() < deadline:
        reports = fuzz_all(seed=seed, transcript_cases=2000, loop_runs=40, every_truncation=rounds == 0)
        for name, report in reports.items():
            total = totals[name]
            total.cases += report.cases
            total.crashes += ["seed %d: %s" % (seed, c) for c in report.crashes]
            total.silent_accepts += ["seed %d: %s" % (seed, c) for c in report.silent_accepts]
            if report.slowest[0] > total.slowest[0]:
                total.slowest = (report.slowest[0], "seed %d: %s" % (seed, report.slowest[1]), report.slowest[2])
        seed += 1
        rounds += 1
    print("%d rounds, seeds %d..%d" % (rounds, args.seed, seed - 1))
    for name, total in totals.items():
        print("%-12s %s" % (name, total.summary()))
        for line in (total.crashes + total.silent_accepts)[:10]:
            print("    " + line)
    types = type_confusions()
    print("%-12s %s" % ("types", types.summary()))
    for line in (types.crashes + types.missed)[:10]:
        print("    " + line)
    scaling()
    bad = sum(len(t.crashes) + len(t.silent_accepts) for t in totals.values()) + len(types.crashes) + len(types.missed)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
