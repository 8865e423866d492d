"""Check agentloop's provenance artefacts with other people's code: run by .ci/interop-provenance in a throwaway venv.

Imports nothing from agentloop.  Each check uses an external package and,
where one is needed, a function written here from the specification:

* in-toto attestations: ``securesystemslib``'s DSSE ``Envelope`` verifies the
  envelope with an ``SSlibKey`` (Ed25519); ``cryptography`` verifies the
  signature over the PAE this script builds (DSSE protocol.md); the payload
  is parsed into ``in_toto_attestation``'s Statement protobuf and validated;
  every subject digest is the SHA-256 of the file given;
* SCITT statements (of a transcript's checkpoint, or of a batch ledger's,
  whose checkpoint must cover every line of the ledger) and COSE receipts:
  ``cbor2`` decodes them (and, encoding
  the decoded value again with ``canonical=True``, gives back the same
  bytes: both sides agree on RFC 8949 deterministic encoding); ``pycose``
  verifies the COSE_Sign1 signature, for a receipt over the root that this
  script computes from the inclusion proof and the ledger line (RFC 9162
  section 2.1.3.2, written here);
* after each success, changed copies (one byte each, at spread positions)
  must fail the same external check.

Usage: ``provenance_external.py --pub KEY.pub [--attestation BUNDLE FILE...]... [--statement S TRANSCRIPT|LEDGER]...
[--receipt R LEDGER NAME]...``; prints one line per check and exits 1 on the first failure.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib
import json
import sys
from typing import Any, Callable, List, Tuple

# The external packages, imported by name: the tree itself imports only the standard library (tests/test_api.py).
cbor2 = importlib.import_module("cbor2")
InvalidSignature = importlib.import_module("cryptography.exceptions").InvalidSignature
Ed25519PublicKey = importlib.import_module("cryptography.hazmat.primitives.asymmetric.ed25519").Ed25519PublicKey
json_format = importlib.import_module("google.protobuf.json_format")
statement_pb2 = importlib.import_module("in_toto_attestation.v1.statement_pb2")
Statement = importlib.import_module("in_toto_attestation.v1.statement").Statement
OKPKey = importlib.import_module("pycose.keys").OKPKey
Ed25519 = importlib.import_module("pycose.keys.curves").Ed25519
Sign1Message = importlib.import_module("pycose.messages").Sign1Message
Envelope = importlib.import_module("securesystemslib.dsse").Envelope
SSlibKey = importlib.import_module("securesystemslib.signer").SSlibKey

PREDICATES = ("https://agentloop.dev/attestation/run/v1", "https://agentloop.dev/attestation/batch/v1")


def vkey(path: str) -> Tuple[str, bytes]:
    """A Go ``note`` verifier key file, ``<name>+<hash>+<base64(0x01 || key)>``: (``name+hash``, the 32-byte key)."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read().strip()
    name, rest = text.split("+", 1)
    key_hash, key64 = rest.split("+", 1)
    raw = base64.b64decode(key64)
    assert raw[0] == 1 and len(raw) == 33, "not an Ed25519 note key"
    return "%s+%s" % (name, key_hash), raw[1:]


def pae(kind: str, body: bytes) -> bytes:
    """DSSE protocol.md: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, lengths in bytes."""
    raw = kind.encode("utf-8")
    return b"DSSEv1 " + str(len(raw)).encode() + b" " + raw + b" " + str(len(body)).encode() + b" " + body


def mth_leaf(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


def root_from_path(index: int, size: int, leaf: bytes, path: List[bytes]) -> bytes:
    """RFC 9162 section 2.1.3.2, steps 1 to 4 (the comparison is the signature check)."""
    if index >= size:
        raise ValueError("leaf index out of range")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise ValueError("proof too long")
        if fn % 2 == 1 or fn == sn:
            r = hashlib.sha256(b"\x01" + p + r).digest()
            while fn % 2 == 0 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = hashlib.sha256(b"\x01" + r + p).digest()
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ValueError("proof too short")
    return r


def mth(leaves: List[bytes]) -> bytes:
    """RFC 9162 section 2.1.1 over entries, recursively."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return mth_leaf(leaves[0])
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:])).digest()


def changed_copies(data: bytes, count: int = 24) -> List[bytes]:
    step = max(1, len(data) // count)
    return [data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :] for at in range(0, len(data), step)]


def refused_everywhere(what: str, data: bytes, check: Callable[[bytes], None]) -> None:
    copies = changed_copies(data)
    for copy in copies:
        try:
            check(copy)
        except Exception:  # noqa: BLE001 -- any refusal by the external code counts
            continue
        raise SystemExit("FAILED: %s: a copy with one changed byte was accepted" % (what,))
    print("ok: %s: %d copies with one changed byte, each refused" % (what, len(copies)))


# --- in-toto ---------------------------------------------------------------------------------


def check_envelope(line: bytes, label: str, public: bytes) -> bytes:
    """The verified payload of one bundle line (securesystemslib, then cryptography over this script's PAE)."""
    doc = json.loads(line)
    envelope = Envelope.from_dict(json.loads(line))  # it consumes the dict it is given
    key = SSlibKey(label, "ed25519", "ed25519", {"public": public.hex()})
    envelope.verify([key], 1)
    assert envelope.pae() == pae(doc["payloadType"], base64.b64decode(doc["payload"])), "securesystemslib's PAE differs"
    (signature,) = doc["signatures"]
    Ed25519PublicKey.from_public_bytes(public).verify(
        base64.b64decode(signature["sig"]), pae(doc["payloadType"], envelope.payload)
    )
    assert doc["payloadType"] == "application/vnd.in-toto+json"
    return envelope.payload


def check_statement_payload(payload: bytes, files: List[str]) -> str:
    statement = Statement.copy_from_pb(json_format.Parse(payload.decode("utf-8"), statement_pb2.Statement()))
    statement.validate()
    doc = json.loads(payload)
    assert doc["predicateType"] in PREDICATES, doc["predicateType"]
    digests = {s["digest"]["sha256"] for s in doc["subject"]}
    for path in files:
        with open(path, "rb") as handle:
            assert hashlib.sha256(handle.read()).hexdigest() in digests, "%s is no subject" % (path,)
    return str(doc["predicateType"])


def attestation(bundle: str, files: List[str], label: str, public: bytes) -> None:
    with open(bundle, "rb") as handle:
        data = handle.read()
    lines = [line for line in data.split(b"\n") if line]
    for line in lines:
        kind = check_statement_payload(check_envelope(line, label, public), files)
        print(
            "ok: %s: securesystemslib and cryptography verify the DSSE envelope; "
            "in-toto-attestation validates the Statement "
            "(%s); %d subject file(s) match" % (bundle, kind, len(files))
        )
    refused_everywhere(
        bundle, lines[0], lambda d: check_statement_payload(check_envelope(d, label, public), files) and None
    )


# --- COSE ------------------------------------------------------------------------------------


def decode_sign1(data: bytes) -> List[Any]:
    item = cbor2.loads(data)
    assert isinstance(item, cbor2.CBORTag) and item.tag == 18 and len(item.value) == 4, "not a tagged COSE_Sign1"
    assert cbor2.dumps(item, canonical=True) == data, "cbor2's canonical encoding differs"
    protected = cbor2.loads(item.value[0])
    assert cbor2.dumps(protected, canonical=True) == item.value[0], "the protected header is not canonical for cbor2"
    return [protected] + list(item.value[1:])


def pycose_verifies(data: bytes, public: bytes, detached: Any = None) -> None:
    message = Sign1Message.decode(data)
    message.key = OKPKey(crv=Ed25519, x=public)
    if not message.verify_signature(detached_payload=detached):
        raise ValueError("pycose: the signature does not verify")


def statement(path: str, transcript: str, label: str, public: bytes) -> None:
    with open(path, "rb") as handle:
        data = handle.read()

    def check(blob: bytes) -> None:
        protected, unprotected, payload, _ = decode_sign1(blob)
        assert protected[1] == -8 and protected[4] == label.encode() and unprotected == {}, "headers"
        claims = protected[15]
        lines = payload.decode("ascii").split("\n")
        assert claims[2] == lines[0], "sub is not the checkpoint's origin"
        with open(transcript, "rb") as handle:
            records = handle.read().splitlines()
        assert base64.b64decode(lines[2]) == mth(records[: int(lines[1])]), (
            "the checkpoint's root is not the transcript's"
        )
        if lines[0].startswith("agentloop-manifest/1/"):  # a batch ledger's: three text lines, every ledger line
            assert lines[3:] == ["", ""] and int(lines[1]) == len(records), "not the whole ledger's checkpoint"
        else:
            assert lines[3].startswith("head ") and lines[4:] == ["", ""], "not a transcript's checkpoint"
        pycose_verifies(blob, public)

    check(data)
    print(
        "ok: %s: cbor2 decodes it (canonical), pycose verifies the EdDSA signature; "
        "its checkpoint's root is the RFC 9162 root of %s" % (path, transcript)
    )
    refused_everywhere(path, data, check)


def receipt(path: str, ledger: str, name: str, label: str, public: bytes) -> None:
    with open(path, "rb") as handle:
        data = handle.read()
    with open(ledger, "rb") as handle:
        entries = handle.read().split(b"\n")[:-1]
    (entry,) = [e for e in entries if json.loads(e)["name"] == name]

    def check(blob: bytes) -> None:
        protected, unprotected, payload, _ = decode_sign1(blob)
        assert protected[1] == -8 and protected[395] == 1 and protected[4] == label.encode() and payload is None, (
            "headers"
        )
        assert protected[15][2] == json.loads(entry)["origin"], "sub is not the run's origin"
        (proof,) = unprotected[396][-1]
        size, index, hashes = cbor2.loads(proof)
        assert entries[index] == entry, "the proof's index is not the line's"
        root = root_from_path(index, size, mth_leaf(entry), list(hashes))
        assert size == len(entries) and root == mth(entries), "the root is not the ledger's"
        pycose_verifies(blob, public, detached=root)

    check(data)
    print(
        "ok: %s: cbor2 decodes it (canonical), the inclusion proof of line %s gives the ledger's root, "
        "pycose verifies the "
        "signature over it" % (path, json.dumps(name))
    )
    refused_everywhere(path, data, check)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pub", required=True)
    parser.add_argument("--attestation", nargs="+", action="append", default=[], metavar="BUNDLE FILE")
    parser.add_argument("--statement", nargs=2, action="append", default=[], metavar=("S", "TRANSCRIPT"))
    parser.add_argument("--receipt", nargs=3, action="append", default=[], metavar=("R", "LEDGER", "NAME"))
    args = parser.parse_args(argv)
    label, public = vkey(args.pub)
    for bundle, *files in args.attestation:
        attestation(bundle, files, label, public)
    for path, transcript in args.statement:
        statement(path, transcript, label, public)
    for path, ledger, name in args.receipt:
        receipt(path, ledger, name, label, public)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception as exc:  # noqa: BLE001 -- any refusal by the external code is this leg's failure, said in one line
        print("FAILED: %s: %s" % (type(exc).__name__, exc))
        sys.exit(1)
