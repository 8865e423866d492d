"""Who computes with a secret Ed25519 key: ``cryptography``, or an explicit opt-in.

Signing (and deriving a public key from a seed) touches the secret, so it
goes to the ``cryptography`` package (``pip install agentloop[sign]``),
whose Ed25519 is constant-time.  It is imported inside the functions, by
name through :func:`importlib.import_module` (:data:`CRYPTOGRAPHY_MODULE`),
so agentloop imports and verifies without it.  This is the one optional
third-party import in the package; nothing else may need it.

Without ``cryptography`` these functions raise
:class:`~agentloop.errors.SigningKeyError` unless the caller passes
``allow_slow_unsafe_signer=True``; then the pure-Python signer of
:mod:`agentloop.signing.ed25519` is used.  It is RFC 8032 exactly, so both
give the same bytes (Ed25519 signing is deterministic, section 5.1.6), but
it is **not side-channel safe**: its running time and memory accesses depend
on the secret.  Use it for tests and for keys whose timing nobody can
observe.  When ``cryptography`` is installed it is always preferred.

Keys come from :func:`os.urandom` (:func:`new_seed`).
"""

from __future__ import annotations

import importlib
import os
from typing import Any, Optional

from ..errors import SigningKeyError, WrongTypeError
from . import ed25519

__all__ = [
    "CRYPTOGRAPHY_MODULE",
    "cryptography_available",
    "new_seed",
    "public_key",
    "sign",
]

#: The module that provides the constant-time signer.
CRYPTOGRAPHY_MODULE = "cryptography.hazmat.primitives.asymmetric.ed25519"

_NO_SIGNER = (
    "signing needs the 'cryptography' package (pip install agentloop[sign]), "
    "which is constant-time; it is not installed. Pass allow_slow_unsafe_signer=True "
    "(--unsafe-pure-python-signer) to sign with the pure-Python signer, which is "
    "slow and not side-channel safe"
)


def _cryptography() -> Optional[Any]:
    """The ``cryptography`` Ed25519 module, or ``None`` when it cannot be imported."""
    try:
        return importlib.import_module(CRYPTOGRAPHY_MODULE)
    except ImportError:
        return None


def cryptography_available() -> bool:
    """True when the constant-time ``cryptography`` signer can be imported."""
    return _cryptography() is not None


def new_seed() -> bytes:
    """A fresh 32-byte Ed25519 private key (RFC 8032 section 5.1.5) from :func:`os.urandom`."""
    return os.urandom(ed25519.SEED_SIZE)


def _check_seed(seed: object) -> bytes:
    if not isinstance(seed, (bytes, bytearray)) or len(seed) != ed25519.SEED_SIZE:
        raise SigningKeyError("seed", "an Ed25519 private key is %d bytes" % (ed25519.SEED_SIZE,))
    return bytes(seed)


def public_key(seed: bytes, allow_slow_unsafe_signer: bool = False) -> bytes:
    """The 32-byte public key of ``seed``; see the module docstring for the backend."""
    seed = _check_seed(seed)
    module = _cryptography()
    if module is not None:
        key = module.Ed25519PrivateKey.from_private_bytes(seed)
        serialization = importlib.import_module("cryptography.hazmat.primitives.serialization")
        raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return bytes(raw)
    if not allow_slow_unsafe_signer:
        raise SigningKeyError("signer", _NO_SIGNER)
    return ed25519.unsafe_public_key(seed)


def sign(seed: bytes, message: bytes, allow_slow_unsafe_signer: bool = False) -> bytes:
    """The 64-byte Ed25519 signature of ``message`` by ``seed`` (RFC 8032 section 5.1.6).

    ``cryptography`` when installed; else the pure-Python signer when
    ``allow_slow_unsafe_signer`` is true; else
    :class:`~agentloop.errors.SigningKeyError`.
    """
    seed = _check_seed(seed)
    if not isinstance(message, (bytes, bytearray)):
        raise WrongTypeError("the message to sign", "bytes", message)
    module = _cryptography()
    if module is not None:
        key = module.Ed25519PrivateKey.from_private_bytes(seed)
        return bytes(key.sign(bytes(message)))
    if not allow_slow_unsafe_signer:
        raise SigningKeyError("signer", _NO_SIGNER)
    return ed25519.unsafe_sign(seed, bytes(message))
