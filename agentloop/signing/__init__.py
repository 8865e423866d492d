"""Public-key signatures for agentloop: Ed25519 signed notes, keys, cosignatures, witnesses.

Modules, each with one job, importing downhill in this order:

* :mod:`~agentloop.signing.ed25519` -- RFC 8032 verification (pure Python,
  strict) and an unsafe pure-Python signer;
* :mod:`~agentloop.signing.backend` -- who signs: ``cryptography`` when
  installed, the pure signer only with ``allow_slow_unsafe_signer=True``;
* :mod:`~agentloop.signing.keys` -- Go ``note`` key strings and key files;
* :mod:`~agentloop.signing.note` -- C2SP ``signed-note``: parse, sign, verify;
* :mod:`~agentloop.signing.hmac_sha256` -- agentloop's HMAC signatures as a note key;
* :mod:`~agentloop.signing.cosignature` -- C2SP ``tlog-cosignature`` ``cosignature/v1``;
* :mod:`~agentloop.signing.witness` -- the C2SP ``tlog-witness`` ``add-checkpoint`` body.
"""

from __future__ import annotations

from .backend import cryptography_available
from .cosignature import (
    CosignatureSigner,
    CosignatureVerifier,
    cosign,
    cosignature_timestamp,
    cosigned_message,
    signer_from_key,
    verifier_from_key,
)
from .hmac_sha256 import HmacKey
from .keys import (
    ALG_COSIGNATURE_V1,
    ALG_ED25519,
    SignerKey,
    VerifierKey,
    generate_key,
    parse_signer_key,
    parse_verifier_key,
    read_signer_key,
    read_verifier_key,
    write_signer_key,
    write_verifier_key,
)
from .note import (
    Ed25519Signer,
    Ed25519Verifier,
    Note,
    NoteSignature,
    Signer,
    VerifiedNote,
    Verifier,
    open_note,
    parse_note,
    sign_note,
    verify_note,
)
from .witness import (
    AddCheckpointRequest,
    build_add_checkpoint_request,
    format_add_checkpoint_response,
    parse_add_checkpoint_request,
    parse_add_checkpoint_response,
)

__all__ = [
    "ALG_COSIGNATURE_V1",
    "ALG_ED25519",
    "AddCheckpointRequest",
    "CosignatureSigner",
    "CosignatureVerifier",
    "Ed25519Signer",
    "Ed25519Verifier",
    "HmacKey",
    "Note",
    "NoteSignature",
    "Signer",
    "SignerKey",
    "VerifiedNote",
    "Verifier",
    "VerifierKey",
    "build_add_checkpoint_request",
    "cosign",
    "cosignature_timestamp",
    "cosigned_message",
    "cryptography_available",
    "format_add_checkpoint_response",
    "generate_key",
    "open_note",
    "parse_add_checkpoint_request",
    "parse_add_checkpoint_response",
    "parse_note",
    "parse_signer_key",
    "parse_verifier_key",
    "read_signer_key",
    "read_verifier_key",
    "sign_note",
    "signer_from_key",
    "verifier_from_key",
    "verify_note",
    "write_signer_key",
    "write_verifier_key",
]
