"""Write ``tests/vectors/tlog/``: run by hand (``python3 -m tests.tlog.make_vectors``), never by the suite.

Every input is fixed: the keys' seeds are SHA-256 of public labels, the
transcript is a scripted run kept as a file, the witness's time is
1700000000, the ledger's lines are written out below, so a rerun changes
no byte.  The suite makes the proofs (``tests/tlog/test_proof.py``) and the
witness's answer (``tests/tlog/test_witness.py``) again from the same
inputs and checks that they are these bytes, and ``.ci/interop-tlog`` checks them with
Go's ``golang.org/x/mod/sumdb/note`` and ``sumdb/tlog``, which share no code
with agentloop.
"""

from __future__ import annotations

import hashlib
import os
import tempfile

from agentloop import ModelReply, ScriptedModel, run
from agentloop.batch.ledger import batch_origin, ledger_bytes, make_checkpoint
from agentloop.signing.cosignature import CosignatureSigner
from agentloop.signing.keys import ALG_COSIGNATURE_V1, encode_signer_key, encode_verifier_key, parse_signer_key
from agentloop.signing.note import Ed25519Signer, sign_note
from agentloop.signing.witness import build_add_checkpoint_request
from agentloop.tlog.bundle import prove_ledger_line, prove_record
from agentloop.transcript.anchor import checkpoint_of
from agentloop.transcript.checkpoint import sign_checkpoint
from agentloop.transcript.proofs import prove_consistency

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "tlog")
LOG_NAME, WITNESS_NAME = "log.example/agentloop", "witness.example/w1"
TIME = 1700000000


def seed(label: str) -> bytes:
    """The 32-byte seed of a vector key: SHA-256 of its label."""
    return hashlib.sha256(label.encode("ascii")).digest()


def keys() -> "tuple[Ed25519Signer, CosignatureSigner]":
    log = Ed25519Signer(parse_signer_key(encode_signer_key(LOG_NAME, seed("agentloop tlog vector: log key"))))
    witness_key = encode_signer_key(WITNESS_NAME, seed("agentloop tlog vector: witness key"), ALG_COSIGNATURE_V1)
    return log, CosignatureSigner(parse_signer_key(witness_key), TIME)


def write(name: str, data: bytes) -> None:
    with open(os.path.join(HERE, name), "wb") as handle:
        handle.write(data)


LEDGER_LINES = [
    {
        "name": "a",
        "origin": "agentloop/1/" + "a" * 64,
        "status": "ok",
        "records": 3,
        "head": "b" * 64,
        "root": "c" * 64,
        "stop": "no_tool_calls",
        "sha256": "d" * 64,
    },
    {"name": "b", "origin": "agentloop/1/" + "e" * 64, "status": "worker_error", "error": "RuntimeError"},
    {"name": "c", "origin": "agentloop/1/" + "f" * 64, "status": "rejected", "reason": "missing"},
]


def main() -> None:
    log, witness = keys()
    write("log.pub", (encode_verifier_key(LOG_NAME, log.key.public_key) + "\n").encode("ascii"))
    write(
        "witness.pub",
        (encode_verifier_key(WITNESS_NAME, witness.key.public_key, ALG_COSIGNATURE_V1) + "\n").encode("ascii"),
    )
    path = os.path.join(HERE, "run.jsonl")
    if not os.path.exists(path):  # the transcript is kept: it is an input, not an output
        folder = tempfile.mkdtemp()
        model = ScriptedModel([ModelReply("Nothing to do.")])
        run("Say hello.", model, [], transcript=os.path.join(folder, "run.jsonl"), max_steps=4, max_tokens=100)
        with open(os.path.join(folder, "run.jsonl"), "rb") as handle:
            write("run.jsonl", handle.read())
    with open(path, "rb") as handle:
        lines = handle.read().split(b"\n")[:-1]
    short = os.path.join(tempfile.mkdtemp(), "short.jsonl")
    with open(short, "wb") as handle:
        handle.write(b"".join(line + b"\n" for line in lines[:2]))
    old, _ = checkpoint_of(short, signer=log)
    new, _ = checkpoint_of(path, signer=log)
    assert old is not None and new is not None
    cosigned = sign_checkpoint(new, signers=[witness])
    write("run.checkpoint", cosigned.to_bytes())
    write("run-2.checkpoint", old.to_bytes())
    for index in range(new.size):
        write("record-%d.tlog-proof" % (index,), prove_record(path, cosigned, index).to_bytes())
    proof = prove_consistency(path, old.size, new.size)
    nodes = [bytes.fromhex(node) for node in proof.proof]
    write("add-checkpoint-0.txt", build_add_checkpoint_request(0, [], old.to_bytes()))
    write("add-checkpoint-2.txt", build_add_checkpoint_request(old.size, nodes, new.to_bytes()))
    # what a witness answers to add-checkpoint-0.txt at TIME: the cosignature line
    write("add-checkpoint-0.response", (sign_note(old.to_note(), witness).signatures[-1].line() + "\n").encode("utf-8"))
    ledger = ledger_bytes(LEDGER_LINES)
    write("manifest.jsonl", ledger)
    checkpoint = make_checkpoint(batch_origin(seed("agentloop tlog vector: spec list").hex()), ledger, signers=[log])
    write("manifest.checkpoint", checkpoint.to_bytes())
    for line in LEDGER_LINES:
        write(
            "ledger-%s.tlog-proof" % (line["name"],),
            prove_ledger_line(ledger, checkpoint, str(line["name"])).to_bytes(),
        )


if __name__ == "__main__":
    main()
