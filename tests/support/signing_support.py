"""Shared by the signing tests: vector loading and the ``cryptography`` switch.

The signing tests run without ``cryptography`` (they opt in to the
pure-Python signer explicitly).  Tests that compare against ``cryptography``
skip when it is missing, unless ``AGENTLOOP_REQUIRE_CRYPTOGRAPHY=1`` (set by
``.ci/interop-sign``), which turns the skip into a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import unittest
from typing import Any, Dict, Iterator
from unittest import mock

from agentloop.signing import backend

VECTORS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "ed25519")
REQUIRE_ENV = "AGENTLOOP_REQUIRE_CRYPTOGRAPHY"


def load_vectors(name: str, key: str = "vectors") -> Dict[str, Any]:
    """Load ``tests/vectors/ed25519/<name>``; fail when it holds no ``key`` entries."""
    with open(os.path.join(VECTORS, name), encoding="utf-8") as handle:
        data: Dict[str, Any] = json.load(handle)
    if not data.get(key):
        raise AssertionError("%s holds no %s: the vectors are missing" % (name, key))
    return data


def require_cryptography(test: unittest.TestCase) -> None:
    """Skip ``test`` without ``cryptography``, or fail if ``AGENTLOOP_REQUIRE_CRYPTOGRAPHY=1``."""
    if backend.cryptography_available():
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        test.fail("%s=1 but the 'cryptography' package cannot be imported" % (REQUIRE_ENV,))
    test.skipTest("the 'cryptography' package is not installed (pip install cryptography; .ci/interop-sign runs this)")


@contextlib.contextmanager
def without_cryptography() -> Iterator[None]:
    """Make ``cryptography``'s Ed25519 and serialization modules unimportable for a while."""
    blocked = {backend.CRYPTOGRAPHY_MODULE: None, "cryptography.hazmat.primitives.serialization": None}
    with mock.patch.dict(sys.modules, blocked):
        yield
