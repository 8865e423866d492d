"""Rebuild agentloop's provenance vectors in this folder, byte for byte.

    python3 tests/vectors/provenance/make.py [--out DIR]

Run from the repository's root (or with it on ``PYTHONPATH``).  Every file is
a pure function of this script and of ``tests/vectors/transcript/valid.jsonl``:
the signing key is RFC 8032 section 7.1 TEST 1's secret key under the key
name ``example.com/operator``, and Ed25519 signing is deterministic (RFC 8032
section 5.1.6), so the pure-Python signer used here and ``cryptography``
give the same bytes.  ``tests/provenance/test_vectors.py`` checks that this
script reproduces the folder and that every file verifies.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from typing import Dict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, ROOT)

from agentloop.batch.ledger import batch_origin, ledger_bytes, make_checkpoint  # noqa: E402 -- after the path is set
from agentloop.provenance.intoto import attest_run  # noqa: E402
from agentloop.provenance.receipts import issue_receipts  # noqa: E402
from agentloop.provenance.runs import checked_facts, ok_line  # noqa: E402
from agentloop.provenance.scitt import make_statement, sign_statement  # noqa: E402
from agentloop.signing import ed25519  # noqa: E402
from agentloop.signing.keys import ALG_ED25519, SignerKey  # noqa: E402
from agentloop.signing.note import Ed25519Signer  # noqa: E402

#: RFC 8032 section 7.1, TEST 1, SECRET KEY.
SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
KEY_NAME = "example.com/operator"
ISSUER = "https://operator.example.com"
TRANSCRIPT = os.path.join(ROOT, "tests", "vectors", "transcript", "valid.jsonl")


def signer() -> Ed25519Signer:
    key = SignerKey(KEY_NAME, ALG_ED25519, SEED, ed25519.unsafe_public_key(SEED))
    return Ed25519Signer(key, allow_slow_unsafe_signer=True)


def _origin(label: str) -> str:
    return "agentloop/1/" + hashlib.sha256(label.encode("ascii")).hexdigest()


def build() -> Dict[str, bytes]:
    """Every file of the folder but this script and README.md: name -> bytes."""
    key = signer()
    files: Dict[str, bytes] = {
        "operator.pub": (key.verifier().text() + "\n").encode("ascii"),
        "valid.jsonl.intoto.jsonl": attest_run(TRANSCRIPT, [key]),
        "valid.statement.cose": make_statement(TRANSCRIPT, key, ISSUER),
    }
    lines = [
        ok_line("valid", checked_facts(TRANSCRIPT)),
        {"name": "w", "origin": _origin("worker error"), "status": "worker_error", "error": "RuntimeError"},
        {"name": "r", "origin": _origin("rejected"), "status": "rejected", "reason": "does_not_verify"},
    ]
    ledger = ledger_bytes(lines)
    files["ledger.jsonl"] = ledger
    for name, receipt in issue_receipts(ledger, key, ISSUER):
        files["%s.receipt.cose" % (name,)] = receipt
    # the ledger's checkpoint beside it (unsigned; the origin names a spec list, here SHA-256 of a label),
    # and the signed statement of it: what `agentloop statement ledger.jsonl` writes
    checkpoint = make_checkpoint(batch_origin(hashlib.sha256(b"spec list").hexdigest()), ledger)
    files["ledger.checkpoint"] = checkpoint.to_bytes()
    files["ledger.statement.cose"] = sign_statement(checkpoint, key, ISSUER)
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=HERE, help="where to write (default: this folder)")
    args = parser.parse_args()
    for name, data in sorted(build().items()):
        with open(os.path.join(args.out, name), "wb") as handle:
            handle.write(data)


if __name__ == "__main__":
    main()
