"""The complexity ratchet: no function may grow more complex than it was.

``ruff check --select C901`` (McCabe, threshold 10) lists every function of
agentloop/ over 10; each is named ``path::Qualified.name`` (from the file's
syntax tree, so two nested helpers of the same name stay apart) and compared
with ``.ci/complexity.json``, the complexities recorded when the gate landed:

* a function over 10 that the baseline does not name fails (new code stays at
  10 or under);
* a function over its recorded figure fails (old code may only get simpler);
* a function at or over :data:`CEILING` fails, whatever the baseline says.

A function that got simpler is reported, so that the baseline can follow it
down with ``--write`` (which refuses to raise any figure or to add a function;
``--init`` records the tree as it is, for the gate's first day or after a
function moved or was renamed; neither records a function at the ceiling).

Usage: ``python3 .ci/complexity.py RUFF [--write | --init]``; exit 0 pass, 1 fail, 2
ruff could not run.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from typing import Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = os.path.join(ROOT, ".ci", "complexity.json")
THRESHOLD = 10
CEILING = 25
_MESSAGE = re.compile(r"^`(?P<name>[^`]+)` is too complex \((?P<n>\d+) > \d+\)$")


def _qualnames(path: str) -> Dict[int, str]:
    """Line of each ``def`` -> its dotted name within the module."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    names: Dict[int, str] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    names[child.lineno] = name
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return names


def measure(ruff: str) -> Dict[str, int]:
    """Every function of agentloop/ over THRESHOLD -> its McCabe complexity."""
    done = subprocess.run(
        [
            ruff,
            "check",
            "--isolated",
            "--select",
            "C901",
            "--output-format",
            "json",
            "--config",
            "lint.mccabe.max-complexity=%d" % THRESHOLD,
            "agentloop",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(done.stderr.strip() or "ruff exited %d" % done.returncode)
    found: Dict[str, int] = {}
    cache: Dict[str, Dict[int, str]] = {}
    for item in json.loads(done.stdout or "[]"):
        match = _MESSAGE.match(item["message"])
        if match is None:
            raise RuntimeError("unexpected ruff message: %r" % item["message"])
        path = os.path.relpath(item["filename"], ROOT).replace(os.sep, "/")
        names = cache.setdefault(path, _qualnames(os.path.join(ROOT, path)))
        qualname = names.get(item["location"]["row"], match.group("name"))
        found["%s::%s" % (path, qualname)] = int(match.group("n"))
    return found


def judge(now: Dict[str, int], baseline: Dict[str, int]) -> Tuple[List[str], List[str]]:
    """(failures, improvements), each a sorted list of lines."""
    failures, better = [], []
    for name, n in sorted(now.items()):
        was = baseline.get(name)
        if n >= CEILING:
            failures.append("%s: complexity %d, at or over the ceiling of %d" % (name, n, CEILING))
        elif was is None:
            failures.append(
                "%s: complexity %d, over %d (new code stays at %d or under)" % (name, n, THRESHOLD, THRESHOLD)
            )
        elif n > was:
            failures.append("%s: complexity %d, was %d (it may only get simpler)" % (name, n, was))
        elif n < was:
            better.append("%s: %d, was %d" % (name, n, was))
    for name, was in sorted(baseline.items()):
        if name not in now:
            better.append("%s: %d or under, was %d" % (name, THRESHOLD, was))
    return failures, better


def main(argv: List[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print("usage: complexity.py RUFF [--write | --init]", file=sys.stderr)
        return 2
    try:
        now = measure(argv[0])
    except (OSError, RuntimeError, ValueError) as exc:
        print("complexity: ruff could not run: %s" % exc, file=sys.stderr)
        return 2
    with open(BASELINE, encoding="utf-8") as handle:
        baseline: Dict[str, int] = json.load(handle)
    failures, better = judge(now, baseline)
    if "--write" in argv[1:] or "--init" in argv[1:]:
        raised = [
            line
            for line in failures
            if "was" in line or "ceiling" in line or ("new code" in line and "--init" not in argv[1:])
        ]
        if raised:
            print("complexity: --write refuses to raise a figure:\n  " + "\n  ".join(raised), file=sys.stderr)
            return 1
        with open(BASELINE, "w", encoding="utf-8") as handle:
            json.dump(now, handle, indent=1, sort_keys=True)
            handle.write("\n")
        print("complexity: baseline written, %d functions over %d" % (len(now), THRESHOLD))
        return 0
    for line in better:
        print("  simpler: " + line)
    for line in failures:
        print("  FAIL " + line)
    worst = max(now.values()) if now else 0
    print(
        "complexity: %d functions over %d (the most complex %d; ceiling %d): %s"
        % (len(now), THRESHOLD, worst, CEILING, "FAILED" if failures else "ok")
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
