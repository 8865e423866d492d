"""C2SP signed-note and Go's note package: keys, exact signatures, verification rules.

Vectors: ``tests/vectors/ed25519/`` (see PROVENANCE.md).  Every signing
test opts in to the pure-Python signer explicitly, so the suite runs
without ``cryptography``; when it is installed it signs instead, and the
bytes must be the same (RFC 8032 signing is deterministic).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import stat
import tempfile
import unittest
from typing import Any, Dict

from agentloop.errors import BadSignatureError, MalformedCheckpointError, MalformedNoteError, SigningKeyError
from agentloop.signing import keys
from agentloop.signing.hmac_sha256 import HmacKey, hmac_key_id
from agentloop.signing.note import (
    MAX_SIGNATURES,
    Ed25519Signer,
    Ed25519Verifier,
    Note,
    NoteSignature,
    open_note,
    parse_note,
    sign_note,
    verify_note,
)

from tests.support.signing_support import load_vectors, without_cryptography

UNSAFE = True  # the explicit opt-in: these tests must run without cryptography


def go_vector() -> Dict[str, Any]:
    data = load_vectors("signed-note-vectors.json")
    found = [v for v in data["vectors"] if v["name"] == "go-sumdb-note-PeterNeumann"]
    if not found:
        raise AssertionError("the Go PeterNeumann vector is missing")
    return dict(found[0])


def go_tests() -> Dict[str, Any]:
    return load_vectors("go-note-test-vectors.json", "bad_notes")


class TestKeys(unittest.TestCase):
    def test_go_key_strings_parse_and_print_back_exactly(self) -> None:
        vec = go_vector()
        skey = keys.parse_signer_key(vec["skey"], allow_slow_unsafe_signer=UNSAFE)
        vkey = keys.parse_verifier_key(vec["vkey"])
        self.assertEqual((skey.name, vkey.name), ("PeterNeumann", "PeterNeumann"))
        self.assertEqual(skey.key_id.hex(), "c74f20a3")
        self.assertEqual(vkey.key_id.hex(), "c74f20a3")
        self.assertEqual(skey.text(), vec["skey"])
        self.assertEqual(vkey.text(), vec["vkey"])
        self.assertEqual(skey.verifier_key(), vkey)
        # the key hash: SHA-256("PeterNeumann" || 0x0A || 0x01 || public key)[:4]
        recomputed = hashlib.sha256(b"PeterNeumann\n\x01" + vkey.public_key).digest()[:4]
        self.assertEqual(recomputed.hex(), "c74f20a3")
        # Go's chop: the base64 of this signer key itself holds a '+'
        self.assertIn("+", vec["skey"].split("+", 4)[4])
        self.assertNotIn(vec["skey"][-20:], repr(skey))

    def test_every_mangling_of_the_go_keys_is_refused(self) -> None:
        # note_test.go TestNewVerifier / TestNewSigner: every proper substring, every byte + 1.
        vec = go_vector()
        for text, parse in ((vec["vkey"], keys.parse_verifier_key), (vec["skey"], None)):
            manglings = {text[i:j] for i in range(len(text) + 1) for j in range(i + 1, len(text) + 1)} - {text}
            manglings |= {text[:i] + chr(ord(text[i]) + 1) + text[i + 1 :] for i in range(len(text))}
            for bad in sorted(manglings):
                with self.subTest(key=bad):
                    with self.assertRaises(SigningKeyError):
                        if parse is None:
                            keys.parse_signer_key(bad, allow_slow_unsafe_signer=UNSAFE)
                        else:
                            parse(bad)

    def test_go_extra_bad_verifier_keys(self) -> None:
        for case in go_tests()["bad_vkeys"]:
            with self.subTest(case["why"]):
                with self.assertRaises(SigningKeyError):
                    keys.parse_verifier_key(case["key"])

    def test_key_names_follow_go(self) -> None:
        for good in ("PeterNeumann", "example.com/foo", "agentloop/1/" + "ab" * 32, "\u00e9t\u00e9"):
            self.assertTrue(keys.is_valid_key_name(good), good)
        for bad in (
            "",
            "a+b",
            "a b",
            "a\tb",
            "a\u00a0b",
            "a\u2003b",
            "a\u3000b",
            "a\u2028b",
            "a\x01b",
            "a\ud800b",
            None,
            b"ab",
        ):
            self.assertFalse(keys.is_valid_key_name(bad), repr(bad))
        with self.assertRaises(SigningKeyError):
            keys.generate_key("bad name", allow_slow_unsafe_signer=UNSAFE)

    def test_generate_key_round_trip(self) -> None:
        skey, vkey = keys.generate_key("agentloop.example/test", allow_slow_unsafe_signer=UNSAFE)
        self.assertTrue(skey.startswith("PRIVATE+KEY+agentloop.example/test+"))
        signer = Ed25519Signer.from_key(skey, allow_slow_unsafe_signer=UNSAFE)
        verifier = Ed25519Verifier.from_key(vkey)
        self.assertEqual(signer.verifier(), verifier)
        self.assertEqual(signer.key_id, verifier.key_id)
        note = sign_note("hi\n", signer)
        self.assertEqual(open_note(note.to_bytes(), [verifier]).signers, ("agentloop.example/test",))

    def test_without_cryptography_keys_need_the_opt_in(self) -> None:
        vec = go_vector()
        with without_cryptography():
            with self.assertRaises(SigningKeyError):
                keys.generate_key("x")
            with self.assertRaises(SigningKeyError):
                keys.parse_signer_key(vec["skey"])
            signer = Ed25519Signer.from_key(vec["skey"], allow_slow_unsafe_signer=True)
            self.assertEqual(sign_note(vec["text"], signer).to_bytes().decode("utf-8"), vec["signed_note"])
            # the verifier key needs no signer at all
            self.assertEqual(keys.parse_verifier_key(vec["vkey"]).key_id.hex(), "c74f20a3")


class TestKeyFiles(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="agentloop-keys-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_private_key_file_is_0600_and_never_overwritten(self) -> None:
        vec = go_vector()
        path = os.path.join(self.dir, "peter.key")
        keys.write_signer_key(path, vec["skey"])
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        with open(path, encoding="utf-8") as handle:
            self.assertEqual(handle.read(), vec["skey"] + "\n")
        with self.assertRaises(SigningKeyError) as caught:
            keys.write_signer_key(path, vec["skey"])
        self.assertIn("already exists", str(caught.exception))
        self.assertEqual(keys.read_signer_key(path, allow_slow_unsafe_signer=UNSAFE).text(), vec["skey"])
        with self.assertRaises(SigningKeyError):
            keys.write_signer_key(os.path.join(self.dir, "v.key"), vec["vkey"])

    def test_public_key_file(self) -> None:
        vec = go_vector()
        path = os.path.join(self.dir, "peter.pub")
        keys.write_verifier_key(path, vec["vkey"])
        self.assertEqual(keys.read_verifier_key(path).text(), vec["vkey"])
        with self.assertRaises(SigningKeyError):
            keys.write_verifier_key(path, vec["vkey"])
        with self.assertRaises(SigningKeyError):
            keys.write_verifier_key(os.path.join(self.dir, "s.pub"), vec["skey"])

    def test_unreadable_and_bad_files(self) -> None:
        with self.assertRaises(SigningKeyError) as caught:
            keys.read_verifier_key(os.path.join(self.dir, "missing"))
        self.assertIn("cannot be read", str(caught.exception))
        path = os.path.join(self.dir, "junk")
        with open(path, "wb") as handle:
            handle.write(b"\xff\xfe")
        with self.assertRaises(SigningKeyError):
            keys.read_verifier_key(path)


class TestGoNoteVectors(unittest.TestCase):
    def setUp(self) -> None:
        self.vec = go_vector()
        self.signer = Ed25519Signer.from_key(self.vec["skey"], allow_slow_unsafe_signer=UNSAFE)
        self.peter = Ed25519Verifier.from_key(self.vec["vkey"])
        self.go = go_tests()
        self.enoch = Ed25519Verifier.from_key(self.go["enoch_vkey"])

    def test_signing_gives_the_exact_go_note_and_is_deterministic(self) -> None:
        first = sign_note(self.vec["text"], self.signer)
        second = sign_note(Note(self.vec["text"]), self.signer)
        self.assertEqual(first.to_bytes().decode("utf-8"), self.vec["signed_note"])
        self.assertEqual(first.to_bytes(), second.to_bytes())

    def test_signing_replaces_the_same_keys_old_signature(self) -> None:
        # note_test.go TestSign: an existing signature by the same name and key hash is replaced.
        stale = NoteSignature("PeterNeumann", bytes.fromhex("c74f20a3"), b"BADSIGN")
        self.assertEqual(
            sign_note(Note(self.vec["text"], (stale,)), self.signer).to_bytes().decode("utf-8"), self.vec["signed_note"]
        )

    def test_signing_refuses_text_without_final_newline(self) -> None:
        with self.assertRaises(MalformedNoteError):
            sign_note("abc", self.signer)
        with self.assertRaises(MalformedNoteError):
            sign_note("a\x01b\n", self.signer)

    def test_c2sp_example_verifies(self) -> None:
        data = load_vectors("signed-note-vectors.json")
        vec = [v for v in data["vectors"] if v["name"] == "c2sp-signed-note-example"][0]
        verified = open_note(vec["signed_note"].encode("utf-8"), [Ed25519Verifier.from_key(vec["vkey"])])
        self.assertEqual(verified.signers, ("example.com/foo",))
        self.assertEqual(verified.note.text, "This is an example message.\n")

    def test_go_open_one_verified_one_unknown(self) -> None:
        data = (self.go["text"] + "\n" + self.go["peter_sig_line"] + self.go["enoch_sig_line"]).encode("utf-8")
        verified = open_note(data, [self.peter])
        self.assertEqual(verified.signers, ("PeterNeumann",))
        self.assertEqual([s.name for s in verified.unverified], ["EnochRoot"])
        both = open_note(data, [self.peter, self.enoch])
        self.assertEqual(both.signers, ("PeterNeumann", "EnochRoot"))
        self.assertEqual(both.unverified, ())
        self.assertEqual(both.note.to_bytes(), data)

    def test_no_trusted_signature_is_a_fault(self) -> None:
        data = (self.go["text"] + "\n" + self.go["peter_sig_line"] + self.go["enoch_sig_line"]).encode("utf-8")
        with self.assertRaises(BadSignatureError) as caught:
            open_note(data, [])
        self.assertEqual(
            str(caught.exception),
            "bad signature: no signature by a trusted key (the note holds PeterNeumann+c74f20a3, EnochRoot+af0cfe78)",
        )

    def test_one_good_and_one_bad_trusted_signature_is_a_fault(self) -> None:
        line = self.go["enoch_sig_line"]
        bad_enoch = line[:60] + "ABCD" + line[64:]
        data = (self.go["text"] + "\n" + self.go["peter_sig_line"] + bad_enoch).encode("utf-8")
        self.assertEqual(open_note(data, [self.peter]).signers, ("PeterNeumann",))  # Enoch unknown: ignored
        with self.assertRaises(BadSignatureError) as caught:
            open_note(data, [self.peter, self.enoch])
        self.assertEqual(str(caught.exception), "bad signature: invalid signature for key EnochRoot+af0cfe78")

    def test_a_repeated_trusted_signature_is_verified_every_time(self) -> None:
        # signed-note: "If the key name and ID match a known key, verifiers MUST verify the signature."
        line = self.go["peter_sig_line"]
        bad_peter = line[:60] + "ABCD" + line[64:]
        good = (self.go["text"] + "\n" + line + line).encode("utf-8")
        self.assertEqual(open_note(good, [self.peter]).signers, ("PeterNeumann",))
        with self.assertRaises(BadSignatureError):
            open_note((self.go["text"] + "\n" + line + bad_peter).encode("utf-8"), [self.peter])

    def test_go_malformed_notes(self) -> None:
        for case in self.go["bad_notes"]:
            data = bytes.fromhex(case.get("note_hex_prefix", "")) + case["note"].encode("utf-8")
            with self.subTest(case["why"]):
                with self.assertRaises(MalformedNoteError):
                    open_note(data, [self.peter])

    def test_signature_count_limit(self) -> None:
        line = self.go["peter_sig_line"]
        ok = (self.go["text"] + "\n" + line * MAX_SIGNATURES).encode("utf-8")
        self.assertEqual(len(parse_note(ok).signatures), 100)
        with self.assertRaises(MalformedNoteError) as caught:
            parse_note((self.go["text"] + "\n" + line * (MAX_SIGNATURES + 1)).encode("utf-8"))
        self.assertEqual(str(caught.exception), "note line 104: more than 100 signatures")
        self.assertIsInstance(caught.exception, MalformedCheckpointError)

    def test_ambiguous_trusted_keys_are_misuse(self) -> None:
        other = Ed25519Verifier.from_key(self.go["enoch_vkey"])
        self.assertEqual(
            verify_note(sign_note(self.vec["text"], self.signer), [self.peter, self.peter, other]).signers,
            ("PeterNeumann",),
        )
        impostor = object.__new__(Ed25519Verifier)
        object.__setattr__(impostor, "name", "PeterNeumann")
        object.__setattr__(impostor, "public_key", other.public_key)
        object.__setattr__(impostor, "key_id", self.peter.key_id)
        with self.assertRaises(SigningKeyError) as caught:
            verify_note(sign_note(self.vec["text"], self.signer), [self.peter, impostor])
        self.assertIn("ambiguous key PeterNeumann+c74f20a3", str(caught.exception))

    def test_require(self) -> None:
        data = (self.go["text"] + "\n" + self.go["peter_sig_line"] + self.go["enoch_sig_line"]).encode("utf-8")
        note = parse_note(data)
        self.assertEqual(
            verify_note(note, [self.peter, self.enoch], require=["PeterNeumann", "EnochRoot"]).signers,
            ("PeterNeumann", "EnochRoot"),
        )
        only_peter = parse_note((self.go["text"] + "\n" + self.go["peter_sig_line"]).encode("utf-8"))
        with self.assertRaises(BadSignatureError) as caught:
            verify_note(only_peter, [self.peter, self.enoch], require=["EnochRoot"])
        self.assertEqual(
            str(caught.exception),
            "bad signature: required signer 'EnochRoot' did not sign (verified: PeterNeumann+c74f20a3)",
        )
        with self.assertRaises(SigningKeyError):
            verify_note(note, [self.peter], require=["Nobody"])


class TestTamper(unittest.TestCase):
    """Any one byte of text or signature changed: the note is refused (malformed or bad signature)."""

    def check_every_byte(self, data: bytes, verifiers: Any, require: Any = ()) -> int:
        self.assertTrue(open_note(data, verifiers, require).signers)
        refused = 0
        for index in range(len(data)):
            for flip in (0x01, 0x20):
                mutated = data[:index] + bytes([data[index] ^ flip]) + data[index + 1 :]
                with self.subTest(index=index, flip=flip):
                    with self.assertRaises((MalformedNoteError, BadSignatureError)):
                        open_note(mutated, verifiers, require)
                    refused += 1
        return refused

    def test_go_note(self) -> None:
        vec = go_vector()
        self.assertGreater(
            self.check_every_byte(vec["signed_note"].encode("utf-8"), [Ed25519Verifier.from_key(vec["vkey"])]), 300
        )

    def test_checkpoint_with_ed25519_and_hmac(self) -> None:
        vec = load_vectors("hmac-note-vectors.json")["vectors"][0]
        text = vec["signed_note"].split("\n\n")[0] + "\n"
        hmac_key = HmacKey(vec["key_name"], vec["key_ascii"].encode("ascii"))
        signer = Ed25519Signer.from_key(go_vector()["skey"], allow_slow_unsafe_signer=UNSAFE)
        note = sign_note(text, hmac_key, signer)
        # Two signers: a mangled line is an unknown key's, ignored, so both are required.
        self.check_every_byte(note.to_bytes(), [signer.verifier(), hmac_key], [signer.name, hmac_key.name])


class TestHmac(unittest.TestCase):
    def setUp(self) -> None:
        self.vec = load_vectors("hmac-note-vectors.json")["vectors"][0]
        self.key = HmacKey(self.vec["key_name"], self.vec["key_ascii"].encode("ascii"))

    def test_bytes_are_identical_to_the_checkpoint_module(self) -> None:
        note = parse_note(self.vec["signed_note"].encode("utf-8"))
        self.assertEqual(sign_note(note.text, self.key).to_bytes().decode("utf-8"), self.vec["signed_note"])
        self.assertEqual(verify_note(note, [self.key]).signers, (self.vec["key_name"],))
        fingerprint = __import__("hmac").new(self.key.key, b"agentloop checkpoint key id", hashlib.sha256).digest()
        expected_id = hashlib.sha256(
            self.vec["key_name"].encode() + b"\n\xffagentloop-hmac-sha256" + fingerprint
        ).digest()[:4]
        self.assertEqual(self.key.key_id, expected_id)
        self.assertEqual(hmac_key_id(self.vec["key_name"], self.key.key), expected_id)

    def test_hmac_and_ed25519_side_by_side(self) -> None:
        note = parse_note(self.vec["signed_note"].encode("utf-8"))
        signer = Ed25519Signer.from_key(go_vector()["skey"], allow_slow_unsafe_signer=UNSAFE)
        both = sign_note(note, signer)
        self.assertEqual(both.to_bytes().decode("utf-8").count("\u2014"), 2)
        self.assertEqual(verify_note(both, [signer.verifier()]).signers, ("PeterNeumann",))
        self.assertEqual(verify_note(both, [self.key]).signers, (self.vec["key_name"],))
        wrong = HmacKey(self.vec["key_name"], b"another key of sixteen+ bytes")
        with self.assertRaises(BadSignatureError):
            verify_note(both, [wrong])  # another key ID: unknown, so nothing trusted verified

    def test_short_key_is_refused(self) -> None:
        with self.assertRaises(SigningKeyError):
            HmacKey("name", b"short")
        self.assertNotIn(self.vec["key_ascii"], repr(self.key))


class TestParse(unittest.TestCase):
    def test_text_may_hold_empty_lines_and_splits_at_the_last(self) -> None:
        signer = HmacKey("k", b"0123456789abcdef")
        note = sign_note("a\n\nb\n\n", signer)
        parsed = parse_note(note.to_bytes())
        self.assertEqual(parsed.text, "a\n\nb\n\n")
        self.assertEqual(verify_note(parsed, [signer]).signers, ("k",))

    def test_rules(self) -> None:
        sig = "\u2014 k " + base64.b64encode(b"\x00" * 5).decode() + "\n"
        cases = {
            "no blank line": "a\n" + sig,
            "empty signature block": "a\n\n",
            "non-canonical base64": "a\n\n\u2014 k AAAAAAB=\n",
            "short signature": "a\n\n\u2014 k AAAAAA==\n",
            "two spaces": "a\n\n\u2014 k  AAAAAAA=\n",
            "hyphen not em dash": "a\n\n- k AAAAAAA=\n",
            "empty name": "a\n\n\u2014  AAAAAAA=\n",
            "carriage return": "a\r\n\n" + sig,
        }
        for why, text in cases.items():
            with self.subTest(why):
                with self.assertRaises(MalformedNoteError):
                    parse_note(text.encode("utf-8"))
        self.assertEqual(parse_note(("a\n\n" + sig).encode()).signatures[0].name, "k")
        with self.assertRaises(MalformedNoteError):
            parse_note(b"a\n\n" + sig.encode() * 10, max_bytes=50)
        with self.assertRaises(TypeError):
            parse_note("text")  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
