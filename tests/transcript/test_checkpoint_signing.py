"""Checkpoints signed with note keys: Ed25519, HMAC beside it, witnesses, the trust rules.

The keys are the published ones of ``tests/vectors/ed25519/signed-note-vectors.json``
(Go's ``note`` test key PeterNeumann; see PROVENANCE.md) and keys made
here from fixed seeds.  Everything signs with the pure-Python signer
through the explicit opt-in, so the suite runs without ``cryptography``;
``.ci/interop-sign`` repeats it with ``cryptography`` (which gives the same
bytes: Ed25519 signing is deterministic).

The independent check is RFC 8032 section 6's reference verification,
copied below from the RFC (cofactorless, as Go's): it shares no code with
:mod:`agentloop.signing.ed25519`.
"""

from __future__ import annotations

import base64
import hashlib
import os
from typing import Any, Dict, Optional, Tuple

from agentloop import TranscriptWriter
from agentloop.errors import BadSignatureError, MalformedCheckpointError, RunConfigError, SigningKeyError
from agentloop.signing import ed25519
from agentloop.signing.cosignature import CosignatureSigner, CosignatureVerifier, cosigned_message
from agentloop.signing.keys import ALG_COSIGNATURE_V1, ALG_ED25519, SignerKey, key_hash, parse_signer_key
from agentloop.signing.note import Ed25519Signer, Ed25519Verifier, parse_note, sign_note, verify_note
from agentloop.transcript.anchor import checkpoint_of, verify_checkpoint
from agentloop.transcript.checkpoint import (
    Checkpoint,
    check_run_anchor,
    parse_checkpoint,
    read_checkpoint,
    sign,
    sign_checkpoint,
    verify_signatures,
)
from agentloop.transcript.proofs import check_consistency, check_proof, prove_consistency, prove_inclusion

from tests.support.helpers import TempDir, read_lines
from tests.support.runs import Run
from tests.support.signing_support import load_vectors, require_cryptography, without_cryptography

UNSAFE = True  # the explicit opt-in: these tests must run without cryptography
HMAC_KEY = b"k" * 32


# --- RFC 8032 section 6, "Ed25519 Python Illustration" (verify only), the independent oracle ---

_p = 2**255 - 19
_q = 2**252 + 27742317777372353535851937790883648493


def _inv(x: int) -> int:
    return pow(x, _p - 2, _p)


_d = -121665 * _inv(121666) % _p
_sqrt_m1 = pow(2, (_p - 1) // 4, _p)
_Pt = Tuple[int, int, int, int]


def _point_add(P: _Pt, Q: _Pt) -> _Pt:
    A, B = (P[1] - P[0]) * (Q[1] - Q[0]) % _p, (P[1] + P[0]) * (Q[1] + Q[0]) % _p
    C, D = 2 * P[3] * Q[3] * _d % _p, 2 * P[2] * Q[2] % _p
    E, F, G, H = B - A, D - C, D + C, B + A
    return (E * F, G * H, F * G, E * H)


def _point_mul(s: int, P: _Pt) -> _Pt:
    Q: _Pt = (0, 1, 1, 0)
    while s > 0:
        if s & 1:
            Q = _point_add(Q, P)
        P = _point_add(P, P)
        s >>= 1
    return Q


def _point_equal(P: _Pt, Q: _Pt) -> bool:
    return (P[0] * Q[2] - Q[0] * P[2]) % _p == 0 and (P[1] * Q[2] - Q[1] * P[2]) % _p == 0


def _recover_x(y: int, sign: int) -> Optional[int]:
    if y >= _p:
        return None
    x2 = (y * y - 1) * _inv(_d * y * y + 1)
    if x2 == 0:
        return None if sign else 0
    x = pow(x2, (_p + 3) // 8, _p)
    if (x * x - x2) % _p != 0:
        x = x * _sqrt_m1 % _p
    if (x * x - x2) % _p != 0:
        return None
    if (x & 1) != sign:
        x = _p - x
    return x


_gy = 4 * _inv(5) % _p
_gx = _recover_x(_gy, 0)
assert _gx is not None
_G: _Pt = (_gx, _gy, 1, _gx * _gy % _p)


def _decompress(s: bytes) -> Optional[_Pt]:
    y = int.from_bytes(s, "little")
    sign = y >> 255
    y &= (1 << 255) - 1
    x = _recover_x(y, sign)
    return None if x is None else (x, y, 1, x * y % _p)


def rfc8032_verify(public: bytes, msg: bytes, signature: bytes) -> bool:
    """RFC 8032 section 6 ``verify``, as printed there."""
    if len(public) != 32 or len(signature) != 64:
        return False
    A = _decompress(public)
    R = _decompress(signature[:32])
    if A is None or R is None:
        return False
    s = int.from_bytes(signature[32:], "little")
    if s >= _q:
        return False
    h = int.from_bytes(hashlib.sha512(signature[:32] + public + msg).digest(), "little") % _q
    return _point_equal(_point_mul(s, _G), _point_add(R, _point_mul(h, A)))


# --- keys ----------------------------------------------------------------------------------------


def published() -> Dict[str, Any]:
    """The Go ``note`` test key (PeterNeumann): skey, vkey, a text and its exact signed note."""
    vector: Dict[str, Any] = next(
        v for v in load_vectors("signed-note-vectors.json")["vectors"] if v["name"] == "go-sumdb-note-PeterNeumann"
    )
    return vector


def key_from_seed(name: str, label: bytes, alg: int = ALG_ED25519) -> SignerKey:
    """A fixed key: seed = SHA-256(label), public key by the pure signer."""
    seed = hashlib.sha256(label).digest()
    return SignerKey(name, alg, seed, ed25519.unsafe_public_key(seed))


def signer(name: str, label: bytes) -> Ed25519Signer:
    return Ed25519Signer(key_from_seed(name, label), UNSAFE)


def witness(name: str, label: bytes, stamp: int) -> CosignatureSigner:
    return CosignatureSigner(key_from_seed(name, label, ALG_COSIGNATURE_V1), stamp, UNSAFE)


def flip_signature(ckpt: Checkpoint, index: int, byte: int) -> Checkpoint:
    """``ckpt`` with byte ``byte`` of signature ``index``'s signature part XORed with 0x01."""
    sigs = list(ckpt.signatures)
    raw = bytearray(sigs[index].signature)
    raw[byte] ^= 0x01
    sigs[index] = type(sigs[index])(sigs[index].name, sigs[index].key_id, bytes(raw))
    return Checkpoint(ckpt.first, ckpt.size, ckpt.root, ckpt.head, tuple(sigs))


class SignedCase(TempDir):
    def setUp(self) -> None:
        super().setUp()
        self.recover_run()
        head, result = checkpoint_of(self.path())
        assert head is not None and result.ok
        self.head = head
        self.operator = Ed25519Signer(parse_signer_key(published()["skey"], allow_slow_unsafe_signer=UNSAFE), UNSAFE)
        self.trusted = Ed25519Verifier.from_key(published()["vkey"])


class TestPublishedRules(SignedCase):
    def test_the_published_key_still_gives_the_published_signed_note(self) -> None:
        # The key is the vector's: signing the vector's text gives its note byte for byte.
        vector = published()
        self.assertEqual(sign_note(vector["text"], self.operator).to_bytes(), vector["signed_note"].encode("utf-8"))

    def test_an_agentloop_checkpoint_verifies_under_the_published_rules(self) -> None:
        data = sign_checkpoint(self.head, signers=[self.operator]).to_bytes()
        # 1. agentloop.signing's verifier, from the note's bytes
        verified = verify_note(parse_note(data), [self.trusted])
        self.assertEqual(verified.signers, ("PeterNeumann",))
        # 2. recomputed by hand: the text is everything up to the blank line, the signature line is
        #    "— <name> base64(SHA-256(name || 0x0A || 0x01 || public key)[:4] || Ed25519 signature)"
        text, _, block = data.decode("utf-8").rpartition("\n\n")
        text += "\n"
        self.assertEqual(text.encode("ascii"), self.head.text())
        dash, name, blob = block.rstrip("\n").split(" ")
        self.assertEqual((dash, name), ("\u2014", "PeterNeumann"))
        public = base64.b64decode(published()["vkey"].split("+", 2)[2])[1:]
        raw = base64.b64decode(blob)
        self.assertEqual(raw[:4], hashlib.sha256(b"PeterNeumann\n\x01" + public).digest()[:4])
        self.assertEqual(raw[:4].hex(), published()["vkey"].split("+")[1])
        self.assertTrue(rfc8032_verify(public, text.encode("ascii"), raw[4:]))
        # and the oracle refuses what it should (a negative control for the oracle itself)
        self.assertFalse(rfc8032_verify(public, text.encode("ascii") + b"x", raw[4:]))

    def test_any_one_byte_changed_in_the_text_or_the_signature_is_rejected(self) -> None:
        signed = sign_checkpoint(self.head, signers=[self.operator])
        data = signed.to_bytes()
        self.assertEqual(verify_signatures(parse_checkpoint(data), [self.trusted]), ("PeterNeumann",))
        text_end = len(signed.text())
        checked = 0
        for position in range(text_end):  # every byte of the text
            changed = bytearray(data)
            changed[position] ^= 0x01
            with self.assertRaises((MalformedCheckpointError, BadSignatureError), msg="text byte %d" % position):
                verify_signatures(parse_checkpoint(bytes(changed)), [self.trusted])
            checked += 1
        for byte in range(64):  # every byte of the signature
            with self.assertRaises(BadSignatureError, msg="signature byte %d" % byte):
                verify_signatures(flip_signature(signed, 0, byte), [self.trusted])
            checked += 1
        for byte in range(4):  # and of the key ID: another key's signature, ignored, so none is trusted
            sig = signed.signatures[0]
            kid = bytearray(sig.key_id)
            kid[byte] ^= 0x01
            other = Checkpoint(
                signed.first, signed.size, signed.root, signed.head, (type(sig)(sig.name, bytes(kid), sig.signature),)
            )
            with self.assertRaisesRegex(BadSignatureError, "no signature by a trusted key"):
                verify_signatures(other, [self.trusted])
            checked += 1
        self.assertEqual(checked, text_end + 68)

    def test_signing_the_same_checkpoint_twice_gives_identical_bytes(self) -> None:
        first = sign_checkpoint(self.head, HMAC_KEY, [self.operator, signer("approver", b"approver")]).to_bytes()
        second = sign_checkpoint(self.head, HMAC_KEY, [self.operator, signer("approver", b"approver")]).to_bytes()
        self.assertEqual(first, second)
        with TranscriptWriter(self.path("w.jsonl")) as out:
            out.append("task", Run.task())
            one = out.checkpoint(self.path("a.checkpoint"), HMAC_KEY, self.operator)
            two = out.checkpoint(self.path("b.checkpoint"), HMAC_KEY, [self.operator])
        self.assertEqual(one, two)
        with open(self.path("a.checkpoint"), "rb") as a, open(self.path("b.checkpoint"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_cryptography_and_the_pure_signer_give_the_same_checkpoint(self) -> None:
        require_cryptography(self)  # .ci/interop-sign runs this with cryptography installed
        constant_time = sign_checkpoint(self.head, HMAC_KEY, [Ed25519Signer(self.operator.key)]).to_bytes()
        with without_cryptography():
            with self.assertRaisesRegex(SigningKeyError, "signing needs the 'cryptography' package"):
                sign_checkpoint(self.head, signers=[Ed25519Signer(self.operator.key)])
            pure = sign_checkpoint(self.head, HMAC_KEY, [self.operator]).to_bytes()
        self.assertEqual(constant_time, pure)

    def test_hmac_alone_is_byte_for_byte_what_sign_makes(self) -> None:
        self.assertEqual(sign_checkpoint(self.head, HMAC_KEY).to_bytes(), sign(self.head, HMAC_KEY).to_bytes())
        self.assertEqual(sign_checkpoint(self.head).to_bytes(), self.head.to_bytes())
        # the HMAC signature comes first, the note signers after it in order
        both = sign_checkpoint(self.head, HMAC_KEY, [self.operator])
        self.assertEqual(both.signatures[0], sign(self.head, HMAC_KEY).signatures[0])
        self.assertEqual(both.signatures[1].name, "PeterNeumann")


class TestTrustRules(SignedCase):
    def test_one_good_and_one_bad_trusted_signature_is_a_fault(self) -> None:
        approver = signer("approver", b"approver")
        signed = sign_checkpoint(self.head, signers=[self.operator, approver])
        self.assertEqual(verify_signatures(signed, [self.trusted, approver.verifier()]), ("PeterNeumann", "approver"))
        broken = flip_signature(signed, 1, 10)
        with self.assertRaisesRegex(BadSignatureError, "invalid signature for key approver"):
            verify_signatures(broken, [self.trusted, approver.verifier()])
        # the broken one is not trusted here: an unknown key, ignored
        self.assertEqual(verify_signatures(broken, [self.trusted]), ("PeterNeumann",))
        # the same through a file check: a bad_signature fault
        self.write_bytes(broken.to_bytes(), "broken.checkpoint")
        result = verify_checkpoint(
            self.path(), self.path("broken.checkpoint"), trusted=[self.trusted, approver.verifier()]
        )
        self.assertFalse(result.ok)
        self.assertEqual([f.kind for f in result.faults], ["bad_signature"])
        self.assertFalse(result.signed)
        self.assertEqual(result.signers, ())

    def test_unknown_keys_are_ignored_and_no_trusted_signature_is_a_fault(self) -> None:
        signed = sign_checkpoint(self.head, signers=[signer("stranger", b"stranger")])
        with self.assertRaisesRegex(BadSignatureError, "no signature by a trusted key"):
            verify_signatures(signed, [self.trusted])
        with self.assertRaisesRegex(BadSignatureError, "no signature by a trusted key"):
            verify_signatures(self.head, [self.trusted])  # unsigned

    def test_require_demands_particular_signers(self) -> None:
        approver = signer("approver", b"approver")
        signed = sign_checkpoint(self.head, signers=[self.operator])
        trusted = [self.trusted, approver.verifier()]
        self.assertEqual(verify_signatures(signed, trusted, ["PeterNeumann"]), ("PeterNeumann",))
        with self.assertRaisesRegex(BadSignatureError, "required signer 'approver' did not sign"):
            verify_signatures(signed, trusted, ["approver"])
        with self.assertRaisesRegex(SigningKeyError, "no trusted key is named 'nobody'"):
            verify_signatures(signed, trusted, ["nobody"])
        with self.assertRaisesRegex(SigningKeyError, "no trusted key is named 'nobody'"):
            verify_checkpoint(self.path(), signed, trusted=trusted, require=["nobody"])
        with self.assertRaisesRegex(SigningKeyError, "given without trusted keys"):
            verify_checkpoint(self.path(), signed, require=["approver"])

    def test_an_hmac_key_given_must_have_signed_beside_trusted_keys(self) -> None:
        ed_only = sign_checkpoint(self.head, signers=[self.operator])
        hmac_only = sign_checkpoint(self.head, HMAC_KEY)
        both = sign_checkpoint(self.head, HMAC_KEY, [self.operator])
        self.assertEqual(verify_signatures(both, [self.trusted], key=HMAC_KEY), (both.origin, "PeterNeumann"))
        self.assertEqual(verify_signatures(hmac_only, [self.trusted], key=HMAC_KEY), (both.origin,))
        self.assertEqual(verify_signatures(hmac_only, key=HMAC_KEY), (both.origin,))
        with self.assertRaisesRegex(BadSignatureError, "no signature by this key"):
            verify_signatures(ed_only, [self.trusted], key=HMAC_KEY)
        # a bad Ed25519 signature beside a good HMAC one is still a fault
        with self.assertRaisesRegex(BadSignatureError, "invalid signature for key PeterNeumann"):
            verify_signatures(flip_signature(both, 1, 0), [self.trusted], key=HMAC_KEY)

    def test_the_verdict_of_a_file_names_the_signers(self) -> None:
        approver = signer("approver", b"approver")
        self.write_bytes(sign_checkpoint(self.head, HMAC_KEY, [self.operator, approver]).to_bytes(), "c.checkpoint")
        result = verify_checkpoint(
            self.path(),
            self.path("c.checkpoint"),
            key=HMAC_KEY,
            trusted=[self.trusted],
            require=["PeterNeumann"],
            exact=True,
        )
        self.assertTrue(result.ok, result.faults)
        self.assertTrue(result.signed)
        self.assertEqual(result.signers, (self.head.origin, "PeterNeumann"))
        unchecked = verify_checkpoint(self.path(), self.path("c.checkpoint"))
        self.assertTrue(unchecked.ok)
        self.assertFalse(unchecked.signed)

    def test_misuse_raises_before_anything_is_read(self) -> None:
        with self.assertRaisesRegex(SigningKeyError, "trusted\\[0\\]: must be a note verifier"):
            verify_checkpoint(self.path("missing.jsonl"), self.head, trusted=[b"not a key"])  # type: ignore[list-item]
        twin = Ed25519Verifier.from_key(published()["vkey"])
        self.assertEqual(
            verify_signatures(sign_checkpoint(self.head, signers=[self.operator]), [self.trusted, twin]),
            ("PeterNeumann",),
        )
        with self.assertRaisesRegex(SigningKeyError, "signer\\[0\\]: must be a note signer"):
            sign_checkpoint(self.head, signers=["PRIVATE+KEY+x"])  # type: ignore[list-item]


class TestProofsWithTrust(SignedCase):
    def test_check_proof_and_consistency_apply_the_rules(self) -> None:
        lines = read_lines(self.path())
        self.write_bytes(b"".join(lines[:5]), "prefix.jsonl")
        old, _ = checkpoint_of(self.path("prefix.jsonl"), signer=self.operator)
        new = sign_checkpoint(self.head, signers=[self.operator])
        assert old is not None
        inclusion = prove_inclusion(self.path(), 3)
        consistency = prove_consistency(self.path(), 5)
        check_proof(inclusion, new, trusted=[self.trusted], require=["PeterNeumann"])
        check_consistency(old, new, consistency, trusted=[self.trusted])
        with self.assertRaises(BadSignatureError):
            check_proof(inclusion, flip_signature(new, 0, 63), trusted=[self.trusted])
        with self.assertRaises(BadSignatureError):
            check_consistency(flip_signature(old, 0, 0), new, consistency, trusted=[self.trusted])
        with self.assertRaises(BadSignatureError):
            check_proof(inclusion, self.head, trusted=[self.trusted])  # unsigned


class TestWitness(SignedCase):
    def test_a_cosignature_round_trip(self) -> None:
        stamp = 1700000000
        log = sign_checkpoint(self.head, signers=[self.operator])
        wit = witness("witness.example", b"witness", stamp)
        cosigned = sign_checkpoint(log, signers=[wit])
        data = cosigned.to_bytes()
        back = parse_checkpoint(data)
        self.assertEqual(
            verify_signatures(back, [self.trusted, wit.verifier()], ["witness.example", "PeterNeumann"]),
            ("PeterNeumann", "witness.example"),
        )
        # the cosignature recomputed by hand: key ID of type 0x04, u64 time,
        # Ed25519 over "cosignature/v1\ntime T\n" + text
        sig = back.signatures[1]
        public = wit.key.public_key
        self.assertEqual(sig.key_id, hashlib.sha256(b"witness.example\n\x04" + public).digest()[:4])
        self.assertEqual(int.from_bytes(sig.signature[:8], "big"), stamp)
        message = b"cosignature/v1\ntime 1700000000\n" + self.head.text()
        self.assertEqual(cosigned_message(self.head.text(), stamp), message)
        self.assertTrue(rfc8032_verify(public, message, sig.signature[8:]))
        # the timestamp is what makes two cosignatures of one checkpoint differ
        later = sign_checkpoint(log, signers=[witness("witness.example", b"witness", stamp + 1)])
        self.assertNotEqual(later.signatures[1], sig)
        self.assertEqual(sign_checkpoint(log, signers=[wit]).to_bytes(), data)
        # a cosignature whose time is changed no longer verifies
        changed = bytearray(sig.signature)
        changed[7] ^= 0x01
        forged = Checkpoint(
            back.first,
            back.size,
            back.root,
            back.head,
            (back.signatures[0], type(sig)(sig.name, sig.key_id, bytes(changed))),
        )
        with self.assertRaisesRegex(BadSignatureError, "invalid signature for key witness.example"):
            verify_signatures(forged, [self.trusted, CosignatureVerifier("witness.example", public)])


class TestRunAnchor(TempDir):
    def test_run_checks_the_signer_before_it_starts(self) -> None:
        good = signer("operator", b"operator")
        check_run_anchor(self.path(), self.path("c"), None, False, good)
        check_run_anchor(self.path(), self.path("c"), None, False, [good, signer("b", b"b")])
        with self.assertRaisesRegex(RunConfigError, "^signer: given without checkpoint=: nothing would be signed$"):
            check_run_anchor(self.path(), None, None, False, good)
        with self.assertRaisesRegex(RunConfigError, "must be a note signer"):
            check_run_anchor(self.path(), self.path("c"), None, False, "PRIVATE+KEY+x")
        cautious = Ed25519Signer(good.key)  # no opt-in: needs cryptography
        with without_cryptography():
            with self.assertRaisesRegex(RunConfigError, "signing needs the 'cryptography' package"):
                check_run_anchor(self.path(), self.path("c"), None, False, cautious)
        self.assertFalse(os.path.exists(self.path("c")))

    def test_the_writer_signs_nothing_on_failure(self) -> None:
        with TranscriptWriter(self.path()) as out:
            out.append("task", Run.task())
            with self.assertRaises(SigningKeyError):
                out.checkpoint(self.path("c.checkpoint"), signer=object())  # type: ignore[arg-type]
            with without_cryptography():
                with self.assertRaisesRegex(SigningKeyError, "signing needs the 'cryptography' package"):
                    out.checkpoint(self.path("c.checkpoint"), signer=Ed25519Signer(key_from_seed("k", b"k")))
            self.assertFalse(os.path.exists(self.path("c.checkpoint")))
            ckpt = out.checkpoint(self.path("c.checkpoint"), signer=signer("k", b"k"))
        self.assertEqual(read_checkpoint(self.path("c.checkpoint")), ckpt)
        verifier = signer("k", b"k").verifier()
        self.assertEqual(key_hash("k", ALG_ED25519, verifier.public_key), ckpt.signatures[0].key_id)
        self.assertTrue(verify_checkpoint(self.path(), self.path("c.checkpoint"), trusted=[verifier], exact=True).ok)

    def test_run_signs_its_checkpoint(self) -> None:
        from agentloop import ModelReply, ScriptedModel, run
        from agentloop.errors import RunConfigError as ConfigError

        operator = signer("operator", b"operator")
        with self.assertRaisesRegex(ConfigError, "^signer: given without checkpoint=: nothing would be signed$"):
            run(
                "t",
                ScriptedModel([ModelReply("hi")]),
                [],
                transcript=self.path(),
                max_steps=2,
                max_tokens=100,
                signer=operator,
            )
        self.assertFalse(os.path.exists(self.path()))
        run(
            "t",
            ScriptedModel([ModelReply("hi")]),
            [],
            transcript=self.path(),
            max_steps=2,
            max_tokens=100,
            checkpoint=self.path("run.checkpoint"),
            key=b"k" * 32,
            signer=operator,
        )
        ckpt = read_checkpoint(self.path("run.checkpoint"))
        self.assertEqual([s.name for s in ckpt.signatures], [ckpt.origin, "operator"])  # HMAC first, then the signer
        result = verify_checkpoint(self.path(), self.path("run.checkpoint"), trusted=[operator.verifier()], exact=True)
        self.assertTrue(result.ok, result.faults)
        stranger = signer("operator", b"someone else").verifier()
        self.assertFalse(verify_checkpoint(self.path(), self.path("run.checkpoint"), trusted=[stranger]).ok)
