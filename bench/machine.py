"""What the benchmarks say about the machine they ran on: its load, and what a second process gains there now."""

from __future__ import annotations

import hashlib
import os
import time
from typing import List, Tuple


def load() -> str:
    """The load averages over 1, 5 and 15 minutes (how busy the shared machine was)."""
    return " ".join("%.2f" % x for x in os.getloadavg())


def _burn(rounds: int) -> bytes:
    digest = b"x"
    for _ in range(rounds):
        digest = hashlib.sha256(digest).digest()
    return digest


def _rounds(seconds: float) -> int:
    """How many rounds of :func:`_burn` take about ``seconds`` here (the fastest of three tries)."""
    rounds = 1000
    while True:
        start = time.perf_counter()
        _burn(rounds)
        if time.perf_counter() - start > 0.05:
            break
        rounds *= 2
    took = min(_timed(_burn, rounds) for _ in range(3))
    return max(1, int(rounds * seconds / max(took, 1e-6)))


def _timed(fn: object, *args: object) -> float:
    start = time.perf_counter()
    fn(*args)  # type: ignore[operator]
    return time.perf_counter() - start


def machine_speedups(seconds: float = 0.5, repeat: int = 3) -> Tuple[float, List[float]]:
    """What 2 processes gain over 1 on pure CPU work on this machine now (2.0 on 2 idle cores): the control.

    Two shares of about ``seconds`` of SHA-256 chaining, run one after the other in this process, against
    the same two shares run side by side in this process and a pool process that was started and warmed
    (it has run a share) before any timing.  Each of ``repeat`` rounds times both, interleaved, so a
    burst of others' load falls on one round; returns ``(best one / best two, each round's ratio)``.
    A share of 0.15 s, once, timed a pool's start-up and the scheduler's noise as much as the machine.
    """
    import concurrent.futures

    rounds = _rounds(seconds)
    ones: List[float] = []
    twos: List[float] = []
    with concurrent.futures.ProcessPoolExecutor(1) as pool:
        pool.submit(_burn, rounds).result()  # warm: the process is up and has run the code
        for _ in range(repeat):
            ones.append(_timed(lambda: (_burn(rounds), _burn(rounds))))
            start = time.perf_counter()
            other = pool.submit(_burn, rounds)
            _burn(rounds)
            other.result()
            twos.append(time.perf_counter() - start)
    return min(ones) / min(twos), [one / two for one, two in zip(ones, twos)]


def machine_speedup(seconds: float = 0.5, repeat: int = 3) -> float:
    """The ratio of :func:`machine_speedups`: best of ``repeat`` rounds."""
    return machine_speedups(seconds, repeat)[0]


def control(seconds: float = 0.5) -> str:
    """The control as the benchmarks print it: the best ratio, and each round's (their spread is the noise).
    ``seconds`` is a share's length (``--control-seconds``: shorter only for a quick run, whose figures are noise)."""
    best, each = machine_speedups(seconds)
    return "%.2fx (best of %d rounds of 2 x %g s shares, a warm pool; rounds: %s)" % (
        best,
        len(each),
        seconds,
        " ".join("%.2f" % r for r in each),
    )
