"""Shared by the tlog tests: the vector files and their keys."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List

from agentloop.signing.cosignature import CosignatureSigner, verifier_from_key
from agentloop.signing.keys import ALG_COSIGNATURE_V1, encode_signer_key, parse_signer_key
from agentloop.signing.note import Ed25519Signer, Verifier

from tests.tlog.make_vectors import LOG_NAME, TIME, WITNESS_NAME, seed

VECTORS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "tlog")

__all__ = [
    "VECTORS",
    "LOG_NAME",
    "WITNESS_NAME",
    "TIME",
    "vector",
    "vector_path",
    "load_json",
    "trusted",
    "log_signer",
    "witness_signer",
]


def vector_path(name: str) -> str:
    return os.path.join(VECTORS, name)


def vector(name: str) -> bytes:
    """A vector file's bytes; an empty or missing file fails (the vectors must be there)."""
    with open(vector_path(name), "rb") as handle:
        data = handle.read()
    if not data:
        raise AssertionError("tests/vectors/tlog/%s is empty" % (name,))
    return data


def load_json(name: str, key: str) -> Any:
    """``tests/vectors/tlog/<name>``'s ``key``; fail when it holds nothing."""
    doc: Dict[str, Any] = json.loads(vector(name).decode("utf-8"))
    if not doc.get(key):
        raise AssertionError("%s holds no %s: the vectors are missing" % (name, key))
    return doc[key]


def trusted() -> List[Verifier]:
    """The vectors' log key and witness key, as verifiers read from the .pub files."""
    return [verifier_from_key(vector(name).decode("ascii").strip()) for name in ("log.pub", "witness.pub")]


def log_signer() -> Ed25519Signer:
    """The vectors' log key (its seed is public: SHA-256 of a label); the pure signer is allowed."""
    text = encode_signer_key(LOG_NAME, seed("agentloop tlog vector: log key"), allow_slow_unsafe_signer=True)
    return Ed25519Signer(parse_signer_key(text, allow_slow_unsafe_signer=True), True)


def witness_signer(timestamp: int = TIME) -> CosignatureSigner:
    """The vectors' witness key, signing at ``timestamp``."""
    text = encode_signer_key(
        WITNESS_NAME, seed("agentloop tlog vector: witness key"), ALG_COSIGNATURE_V1, allow_slow_unsafe_signer=True
    )
    return CosignatureSigner(parse_signer_key(text, allow_slow_unsafe_signer=True), timestamp, True)
