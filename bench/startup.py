"""How long the command line takes to start, against the interpreter's own start.

    python3 bench/startup.py [--repeat N]

For ``python3 -m agentloop --help`` and ``python3 -m agentloop verify FILE``
(a small transcript it writes first), and as a baseline ``python3 -c pass``
in the same run, it prints the best and the median wall time of N runs, the
time ``-X importtime`` gives agentloop's own modules (the sum of their
"self" times) and how many of them were imported.  The command line imports
a command's module only when that command runs, so ``--help`` and
``verify`` load neither the loop nor the model, MCP or batch code.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _once(argv: List[str], env: Dict[str, str]) -> Tuple[float, float, int]:
    """Wall seconds, agentloop's import seconds and its module count, for one start."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime"] + argv, cwd=ROOT, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    own = [line.split("|") for line in done.stderr.splitlines() if line.startswith("import time:") and "|" in line]
    mine = [fields for fields in own if fields[2].strip().startswith("agentloop")]
    return wall, sum(int(fields[0].split(":")[1]) for fields in mine) / 1e6, len(mine)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    from agentloop import ModelReply, ScriptedModel, run

    with tempfile.TemporaryDirectory(prefix="agentloop-bench-") as folder:
        transcript = os.path.join(folder, "t.jsonl")
        run("t", ScriptedModel([ModelReply("hi")]), [], transcript=transcript, max_steps=1, max_tokens=10)
        # Bytecode cached, as for an installed package (PYTHONDONTWRITEBYTECODE would time the compiler).
        env = dict(os.environ, PYTHONPATH=ROOT, PYTHONPYCACHEPREFIX=os.path.join(folder, "pyc"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cases = {
            "python3 -c pass": ["-c", "pass"],
            "agentloop --help": ["-m", "agentloop", "--help"],
            "agentloop verify": ["-m", "agentloop", "verify", transcript],
        }
        results: Dict[str, List[Tuple[float, float, int]]] = {name: [] for name in cases}
        for argv in cases.values():  # a first start writes the bytecode cache
            _once(argv, env)
        for _ in range(args.repeat):  # interleaved, so a change in the machine's load falls on every case alike
            for name, argv in cases.items():
                results[name].append(_once(argv, env))
    base = min(wall for wall, _, _ in results["python3 -c pass"])
    print("%-18s %10s %10s %8s %16s %8s" % ("command", "best ms", "median ms", "x base", "agentloop imp ms", "modules"))
    for name, runs in results.items():
        walls = [wall for wall, _, _ in runs]
        imports = [imported for _, imported, _ in runs]
        print(
            "%-18s %10.1f %10.1f %8.2f %16.1f %8d"
            % (
                name,
                1000 * min(walls),
                1000 * statistics.median(walls),
                min(walls) / base,
                1000 * min(imports),
                runs[0][2],
            )
        )


if __name__ == "__main__":
    main()
