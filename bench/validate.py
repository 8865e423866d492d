"""Cost of validating a typical 5-field tool call with a compiled schema.

    python3 bench/validate.py [--iterations N]

Prints microseconds per call for the compiled validator (``is_valid``,
``first_error`` -- what the loop calls -- and ``errors``), for the whole
``compile_schema`` (paid once, when a tool is built), and for a baseline
measured in the same run: a hand-written ``if``/``isinstance`` check of the
same five fields, the least a careful tool author would write.  A script, not
a test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentloop.schema.validator import compile_schema  # noqa: E402

SCHEMA: Dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 100},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
        "hourly": {"type": "boolean"},
        "lat": {"type": "number", "minimum": -90, "maximum": 90},
    },
    "required": ["city", "days", "units", "hourly", "lat"],
    "additionalProperties": False,
}
VALID: Dict[str, Any] = {"city": "Paris", "days": 3, "units": "metric", "hourly": False, "lat": 48.85}
INVALID: Dict[str, Any] = dict(VALID, days="3")
_FIELDS = frozenset(SCHEMA["properties"])


def baseline(arguments: Any) -> Optional[str]:
    """The same rules, hand-written: the first problem, or None."""
    if not isinstance(arguments, dict):
        return "$: expected type object"
    for name in ("city", "days", "units", "hourly", "lat"):
        if name not in arguments:
            return "$: missing required property %r" % name
    city, days, units, hourly, lat = (arguments[k] for k in ("city", "days", "units", "hourly", "lat"))
    if not isinstance(city, str) or not 1 <= len(city) <= 100:
        return "$.city: bad"
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 14:
        return "$.days: bad"
    if units not in ("metric", "imperial") or not isinstance(units, str):
        return "$.units: bad"
    if not isinstance(hourly, bool):
        return "$.hourly: bad"
    if isinstance(lat, bool) or not isinstance(lat, (int, float)) or not -90 <= lat <= 90:
        return "$.lat: bad"
    for name in arguments:
        if name not in _FIELDS:
            return "$: unexpected property %r" % name
    return None


def per_call(fn: Callable[[], object], iterations: int) -> float:
    """Best of five runs, in microseconds per call."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(iterations):
            fn()
        best = min(best, time.perf_counter() - started)
    return best / iterations * 1e6


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20000)
    args = parser.parse_args(argv)
    n = args.iterations
    validator = compile_schema(SCHEMA)
    if not (validator.is_valid(VALID) and baseline(VALID) is None):
        raise SystemExit("the valid call does not validate")
    if validator.first_error(INVALID) is None or baseline(INVALID) is None:
        raise SystemExit("the invalid call validates")

    base = per_call(lambda: baseline(VALID), n)
    rows: List[Tuple[str, float]] = [
        ("baseline: hand-written isinstance checks (valid call)", base),
        ("Validator.is_valid (valid call)", per_call(lambda: validator.is_valid(VALID), n)),
        (
            "Validator.first_error (valid call; what the loop runs)",
            per_call(lambda: validator.first_error(VALID, "$.t"), n),
        ),
        ("Validator.errors (valid call)", per_call(lambda: validator.errors(VALID, "$.t"), n)),
        (
            "Validator.first_error (invalid call: days is a string)",
            per_call(lambda: validator.first_error(INVALID, "$.t"), n),
        ),
        ("baseline: hand-written check (invalid call)", per_call(lambda: baseline(INVALID), n)),
        ("compile_schema (once per tool)", per_call(lambda: compile_schema(SCHEMA), max(1, n // 20))),
    ]
    print("Python %s, %d iterations, best of 5" % (sys.version.split()[0], n))
    for label, micros in rows:
        print("  %-58s %8.2f us  %5.1fx baseline" % (label, micros, micros / base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
