"""What the benchmarks say about the machine they ran on: its load, and what a second process gains there now."""

from __future__ import annotations

import hashlib
import os
import time


def load() -> str:
    """The load averages over 1, 5 and 15 minutes (how busy the shared machine was)."""
    return " ".join("%.2f" % x for x in os.getloadavg())


def _burn(rounds: int) -> bytes:
    digest = b"x"
    for _ in range(rounds):
        digest = hashlib.sha256(digest).digest()
    return digest


def machine_speedup(seconds: float = 0.15) -> float:
    """What 2 processes gain over 1 on pure CPU work on this machine now (2.0 on 2 idle cores): the control."""
    import concurrent.futures

    rounds = 1000
    while True:  # calibrate: one share takes about ``seconds``
        start = time.perf_counter()
        _burn(rounds)
        if time.perf_counter() - start > seconds / 4:
            break
        rounds *= 2
    rounds = int(rounds * seconds / max(time.perf_counter() - start, 1e-6))
    start = time.perf_counter()
    _burn(rounds)
    _burn(rounds)
    one = time.perf_counter() - start
    with concurrent.futures.ProcessPoolExecutor(1) as pool:
        start = time.perf_counter()
        other = pool.submit(_burn, rounds)
        _burn(rounds)
        other.result()
        two = time.perf_counter() - start
    return one / two
