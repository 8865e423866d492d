"""Ed25519 per signature: pure-Python verification and signing, against ``cryptography``.

    python3 bench/ed25519.py [--count 200] [--repeats 5]

Measured in the same run, best of ``--repeats`` rounds of ``--count``
operations on 64-byte messages (about a checkpoint's text):

* **verify** -- :func:`agentloop.signing.ed25519.verify`, the pure-Python
  RFC 8032 verifier every ``--trust`` check uses (its base-point table is
  built once, before timing; that one-off cost is printed too);
* **sign (pure)** -- :func:`agentloop.signing.ed25519.unsafe_sign`, the
  opt-in signer (``allow_slow_unsafe_signer=True``);
* **sign / verify (cryptography)** -- the ``cryptography`` package, when
  installed: the constant-time signer agentloop prefers, and the baseline
  the ratios are against.

A signed note's cost is one verification per trusted signature, so a
checkpoint with an operator signature and two witness cosignatures costs
about three verifications.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import sys
import time
from typing import Any, Callable, List, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentloop.signing import backend, ed25519  # noqa: E402
from agentloop.signing.ed25519 import _BASE_TABLE, _base_table  # noqa: E402


def best(func: Callable[[int], Any], count: int, repeats: int) -> float:
    """The best per-operation time in seconds over ``repeats`` rounds of ``count`` calls."""
    times: List[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(count):
            func(i)
        times.append((time.perf_counter() - start) / count)
    return min(times)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    seeds = [hashlib.sha256(b"bench seed %d" % i).digest() for i in range(16)]
    messages = [hashlib.sha512(b"message %d" % i).digest() for i in range(16)]

    start = time.perf_counter()
    _BASE_TABLE.clear()
    _base_table()
    table_ms = (time.perf_counter() - start) * 1000

    publics = [ed25519.unsafe_public_key(seed) for seed in seeds]
    signatures = [ed25519.unsafe_sign(seeds[i], messages[i]) for i in range(16)]
    for i in range(16):
        if not ed25519.verify(publics[i], messages[i], signatures[i]):
            raise SystemExit("bench: a signature did not verify")

    verify = best(
        lambda i: ed25519.verify(publics[i % 16], messages[i % 16], signatures[i % 16]), args.count, args.repeats
    )
    sign_pure = best(lambda i: ed25519.unsafe_sign(seeds[i % 16], messages[i % 16]), args.count, args.repeats)

    print(
        "python %s (%s), %d ops x %d rounds, best round"
        % (platform.python_version(), platform.machine(), args.count, args.repeats)
    )
    print("base-point table, built once per process: %8.2f ms" % (table_ms,))
    print("verify, pure Python:                      %8.3f ms/signature" % (verify * 1000,))
    print("sign, pure Python (unsafe opt-in):        %8.3f ms/signature" % (sign_pure * 1000,))

    module = backend._cryptography()
    if module is None:
        print("cryptography: not installed (pip install cryptography for the baseline)")
        return 0
    keys = [module.Ed25519PrivateKey.from_private_bytes(seed) for seed in seeds]
    pubs = [key.public_key() for key in keys]
    for i in range(16):
        if keys[i].sign(messages[i]) != signatures[i]:
            raise SystemExit("bench: cryptography and the pure signer disagree")
    sign_fast = best(lambda i: keys[i % 16].sign(messages[i % 16]), args.count * 10, args.repeats)
    verify_fast = best(
        lambda i: pubs[i % 16].verify(signatures[i % 16], messages[i % 16]), args.count * 10, args.repeats
    )
    print("sign, cryptography:                       %8.3f ms/signature" % (sign_fast * 1000,))
    print("verify, cryptography:                     %8.3f ms/signature" % (verify_fast * 1000,))
    print(
        "ratios: pure verify / cryptography verify = %.0fx; pure sign / cryptography sign = %.0fx"
        % (verify / verify_fast, sign_pure / sign_fast)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
