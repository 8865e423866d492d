"""Effects that happen once: SIGKILL ``agentloop run``/``resume`` at random moments, count duplicated and lost effects.

    python3 bench/crash_effects.py [--kills 60] [--seed 19] [--steps 6] [--sleep 0.05]

Runs :func:`tests.loop.effects.campaign`: an agent run whose tool pays into a
SQLite table under its call's ``CallContext.key`` (UNIQUE) and then sleeps,
so that a kill can land between the payment and its ``tool`` record.  Each
child (``agentloop run``, then ``agentloop repair`` when a line was torn and
``agentloop resume --rerun-unrecorded``) is SIGKILLed at a random moment --
while it starts, or after a random number of the records it writes -- until
``--kills`` kills; every run goes on until it has its stop record, and is
checked.  Prints the figures; exits 1 if any effect was duplicated or lost,
any record does not match its payment, or any transcript does not verify.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.loop.effects import campaign  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=60)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--steps", type=int, default=6, help="payments per run")
    parser.add_argument("--sleep", type=float, default=0.05, help="seconds the tool sleeps after paying")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="agentloop-crash-")
    began = time.monotonic()
    try:
        figures = campaign(folder, args.kills, args.seed, args.steps, args.sleep)
    finally:
        shutil.rmtree(folder, True)
    print("crash_effects: %s (%.1f s, seed %d)" % (figures.line(), time.monotonic() - began, args.seed))
    for problem in figures.problems[:10]:
        print("  problem: %s" % (problem,))
    bad = figures.duplicated or figures.lost or figures.mismatched or figures.unverified or figures.problems
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
