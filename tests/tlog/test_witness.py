"""The log-free witness (agentloop/tlog/witness.py): every answer tlog-witness "add-checkpoint" prescribes."""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
import threading
import time
import unittest
from typing import List, Sequence

from agentloop.errors import SigningKeyError
from agentloop.signing.note import Ed25519Verifier, Note, NoteSignature, parse_note, sign_note, verify_note
from agentloop.signing.witness import (
    build_add_checkpoint_request,
    parse_add_checkpoint_request,
    parse_add_checkpoint_response,
)
from agentloop.errors import WitnessStateError
from agentloop.tlog.witness import STATE_FORMAT, Witness, WitnessPolicy, load_state, state_lock
from agentloop.transcript.merkle import EMPTY_ROOT

from tests.tlog.support import TIME, load_json, log_signer, trusted, vector, witness_signer


def _flip(data: bytes, marker: bytes) -> bytes:
    """``data`` with one bit changed inside the first ``marker``'s line (a base64 character kept base64)."""
    at = data.index(marker) + len(marker) + 20  # past the 4-byte key ID
    changed = bytearray(data)
    changed[at] = ord("A") if changed[at] != ord("A") else ord("B")
    return bytes(changed)


class WitnessCase(unittest.TestCase):
    def setUp(self) -> None:
        self.folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.folder)
        self.state = os.path.join(self.folder, "w.state")
        self.witness = self.make()

    def make(self, origins: tuple = ()) -> Witness:  # type: ignore[type-arg]
        return Witness(witness_signer(), WitnessPolicy(tuple(trusted()[:1]), origins), self.state, clock=lambda: TIME)

    def foreign(self, origin: str, size: int, root: bytes, old: int = 0, proof: Sequence[bytes] = ()) -> bytes:
        """A request for a log of another origin, signed by the trusted log key."""
        note = sign_note("%s\n%d\n%s\n" % (origin, size, base64.b64encode(root).decode()), log_signer())
        return build_add_checkpoint_request(old, proof, note.to_bytes())


class TestAnswers(WitnessCase):
    def test_200_is_the_known_cosignature_and_is_remembered(self) -> None:
        answer = self.witness.add_checkpoint(vector("add-checkpoint-0.txt"))
        self.assertEqual((answer.status, answer.body), (200, vector("add-checkpoint-0.response")))
        self.assertEqual(answer.content_type, "text/plain; charset=utf-8")
        # the response, concatenated to the checkpoint, verifies with the witness key (as tlog-witness suggests)
        request = parse_add_checkpoint_request(vector("add-checkpoint-0.txt"))
        cosigned = Note(
            request.checkpoint.text, request.checkpoint.signatures + parse_add_checkpoint_response(answer.body)
        )
        self.assertEqual(verify_note(cosigned, trusted()).signers[-1], "witness.example/w1")
        self.assertEqual(answer.checkpoint, cosigned.to_bytes())
        self.assertEqual(self.witness.held(request.checkpoint.text.split("\n")[0]), 2)
        # then the consistency proof from 2 to 3
        self.assertEqual(self.witness.add_checkpoint(vector("add-checkpoint-2.txt")).status, 200)
        (held,) = load_state(self.state).values()
        self.assertEqual(
            (held.size, held.checkpoint is not None, held.head_hash()),
            (3, True, held.checkpoint.split(b"head ")[1][:64].decode()),
        )
        with open(self.state, encoding="utf-8") as handle:
            self.assertEqual(json.load(handle)["format"], STATE_FORMAT)

    def test_409_names_the_size_held(self) -> None:
        answer = self.witness.add_checkpoint(vector("add-checkpoint-2.txt"))
        self.assertEqual((answer.status, answer.body, answer.content_type), (409, b"0\n", "text/x.tlog.size"))
        self.witness.add_checkpoint(vector("add-checkpoint-0.txt"))
        answer = self.witness.add_checkpoint(vector("add-checkpoint-0.txt"))  # a replay, or a rollback
        self.assertEqual((answer.status, answer.body, answer.content_type), (409, b"2\n", "text/x.tlog.size"))

    def test_400_malformed(self) -> None:
        for body in (
            b"",
            b"old 01\n\n" + vector("run.checkpoint"),
            b"old 0\n",
            b"nonsense\n\nx\n\n\xe2\x80\x94 k AAAAAAA=\n",
        ):
            with self.subTest(body=body[:20]):
                answer = self.witness.add_checkpoint(body)
                self.assertEqual(answer.status, 400, answer.reason)
                self.assertTrue(answer.body.endswith(b"\n"))
        request = vector("add-checkpoint-0.txt")
        answer = self.witness.add_checkpoint(request.replace(b"old 0\n", b"old 3\n", 1))
        self.assertEqual((answer.status, answer.reason), (400, "the old size 3 exceeds the checkpoint's size 2"))
        answer = self.witness.add_checkpoint(request.replace(b"\nhead ", b"\nhead 0", 1))
        self.assertEqual(answer.status, 400)
        self.assertIn("malformed agentloop checkpoint", answer.reason)

    def test_404_unknown_origin(self) -> None:
        answer = self.witness.add_checkpoint(self.foreign("example.com/log", 0, EMPTY_ROOT))
        self.assertEqual((answer.status, answer.reason), (404, "unknown log origin 'example.com/log'"))
        pinned = self.make(("example.com/log",))
        self.assertEqual(
            pinned.add_checkpoint(vector("add-checkpoint-0.txt")).status, 404
        )  # agentloop runs no longer implied
        self.assertEqual(pinned.add_checkpoint(self.foreign("example.com/log", 0, EMPTY_ROOT)).status, 200)

    def test_403_signatures(self) -> None:
        renamed = Ed25519Verifier("other.example", log_signer().verifier().public_key)
        other = Witness(witness_signer(), WitnessPolicy((renamed,)), None)
        answer = other.add_checkpoint(
            vector("add-checkpoint-0.txt")
        )  # a key of the same bytes under another name: unknown
        self.assertEqual(answer.status, 403, answer.reason)
        bad = _flip(vector("add-checkpoint-0.txt"), "\u2014 log.example/agentloop ".encode())
        answer = self.witness.add_checkpoint(bad)
        self.assertEqual(answer.status, 403, answer.reason)
        self.assertIn("invalid signature for key log.example/agentloop", answer.reason)
        self.assertEqual(self.witness.held("anything"), 0)

    def test_422(self) -> None:
        pinned = self.make(("example.com/log",))
        answer = pinned.add_checkpoint(self.foreign("example.com/log", 0, b"\x00" * 32))
        self.assertEqual(
            (answer.status, answer.reason), (422, "a checkpoint of size 0 must have the empty tree's root")
        )
        body = self.foreign("example.com/log", 1, b"\x00" * 32).replace(
            b"old 0\n", b"old 0\n" + base64.b64encode(b"p" * 32) + b"\n", 1
        )
        answer = pinned.add_checkpoint(body)
        self.assertEqual(
            (answer.status, answer.reason), (422, "the consistency proof must be empty when the old size is 0")
        )
        # a consistency proof that does not hold
        self.assertEqual(self.witness.add_checkpoint(vector("add-checkpoint-0.txt")).status, 200)
        request = parse_add_checkpoint_request(vector("add-checkpoint-2.txt"))
        wrong = build_add_checkpoint_request(2, [b"q" * 32], request.checkpoint.to_bytes())
        answer = self.witness.add_checkpoint(wrong)
        self.assertEqual(answer.status, 422)
        self.assertIn("not consistent with the 2 entries cosigned before", answer.reason)

    def test_equal_sizes_need_equal_roots(self) -> None:
        pinned = self.make(("example.com/log",))
        self.assertEqual(pinned.add_checkpoint(self.foreign("example.com/log", 5, b"r" * 32)).status, 200)
        self.assertEqual(pinned.add_checkpoint(self.foreign("example.com/log", 5, b"r" * 32, old=5)).status, 200)
        answer = pinned.add_checkpoint(self.foreign("example.com/log", 5, b"s" * 32, old=5))
        self.assertEqual(answer.status, 422)
        answer = pinned.add_checkpoint(self.foreign("example.com/log", 5, b"r" * 32, old=5, proof=[b"r" * 32]))
        self.assertEqual(answer.status, 422)


class TestState(WitnessCase):
    def test_a_new_witness_remembers(self) -> None:
        self.witness.add_checkpoint(vector("add-checkpoint-0.txt"))
        again = self.make()
        self.assertEqual(again.add_checkpoint(vector("add-checkpoint-0.txt")).status, 409)
        self.assertEqual(again.add_checkpoint(vector("add-checkpoint-2.txt")).status, 200)

    def test_a_version_1_state_file_is_read(self) -> None:
        request = parse_add_checkpoint_request(vector("add-checkpoint-2.txt"))
        origin = request.checkpoint.text.split("\n")[0]
        old = parse_note(vector("run-2.checkpoint"))
        root = base64.b64decode(old.text.split("\n")[2]).hex()
        with open(self.state, "w", encoding="utf-8") as handle:
            json.dump(
                {"format": "agentloop-witness-state/1", "logs": {origin: {"size": 2, "root": root, "head": "a" * 64}}},
                handle,
            )
        witness = self.make()
        self.assertEqual(witness.held(origin), 2)
        self.assertEqual(witness.add_checkpoint(vector("add-checkpoint-2.txt")).status, 200)
        self.assertEqual(load_state(self.state)[origin].size, 3)

    def test_a_malformed_state_file_is_refused(self) -> None:
        for content in (
            b"[]",
            b"{",
            json.dumps(
                {"format": STATE_FORMAT, "logs": {"o": {"size": -1, "root": "0" * 64, "checkpoint": None}}}
            ).encode(),
        ):
            with open(self.state, "wb") as handle:
                handle.write(content)
            with self.subTest(content=content[:20]):
                with self.assertRaises(WitnessStateError):
                    self.make()

    def test_a_state_that_cannot_be_written_cosigns_nothing(self) -> None:
        witness = Witness(
            witness_signer(), WitnessPolicy(tuple(trusted()[:1])), os.path.join(self.folder, "missing", "w.state")
        )
        with self.assertRaisesRegex(WitnessStateError, "cannot write the witness state"):
            witness.add_checkpoint(vector("add-checkpoint-0.txt"))
        origin = parse_add_checkpoint_request(vector("add-checkpoint-0.txt")).checkpoint.text.split("\n")[0]
        self.assertEqual(witness.held(origin), 0)  # still holds 0
        os.mkdir(os.path.join(self.folder, "missing"))
        with open(os.path.join(self.folder, "missing", "w.state"), "w", encoding="utf-8") as handle:
            handle.write("{}")  # there, but no state file: nothing is cosigned from it either
        with self.assertRaisesRegex(WitnessStateError, "is not a witness state file"):
            witness.add_checkpoint(vector("add-checkpoint-0.txt"))

    def test_two_witnesses_on_one_state_file_answer_from_what_is_on_disk(self) -> None:
        """Two processes on one state file (witness serve and cosign --request): neither answers from a stale size.

        The second witness loaded the file when it held nothing; the first then cosigned size 2.  Answering
        from its memory, the second would cosign "old 0" again (and would cosign a fork of those 2 entries).
        """
        other = self.make()
        self.assertEqual(self.witness.add_checkpoint(vector("add-checkpoint-0.txt")).status, 200)
        answer = other.add_checkpoint(vector("add-checkpoint-0.txt"))
        self.assertEqual((answer.status, answer.body), (409, b"2\n"))
        self.assertEqual(other.add_checkpoint(vector("add-checkpoint-2.txt")).status, 200)
        self.assertEqual(self.witness.add_checkpoint(vector("add-checkpoint-2.txt")).status, 409)
        self.assertTrue(os.path.exists(self.state + ".lock"))

    def test_a_state_file_locked_by_another_process_is_waited_for_then_refused(self) -> None:
        with state_lock(self.state):
            started = time.monotonic()
            with self.assertRaisesRegex(WitnessStateError, "is locked by another witness process for over 0.2 s"):
                with state_lock(self.state, wait=0.2):
                    pass
            self.assertGreaterEqual(time.monotonic() - started, 0.2)

    def test_one_of_racing_requests_wins(self) -> None:
        answers: List[int] = []
        threads = [
            threading.Thread(
                target=lambda: answers.append(self.witness.add_checkpoint(vector("add-checkpoint-0.txt")).status)
            )
            for _ in range(6)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(sorted(answers), [200] + [409] * 5)

    def test_misuse(self) -> None:
        with self.assertRaisesRegex(SigningKeyError, "is a witness key"):
            WitnessPolicy(tuple(trusted()))
        with self.assertRaisesRegex(SigningKeyError, "needs the log's public key"):
            WitnessPolicy(())
        witness = Witness(witness_signer(), WitnessPolicy(tuple(trusted()[:1])), None, clock=lambda: 0)
        with self.assertRaisesRegex(SigningKeyError, "from 1 to 2\\*\\*63-1"):
            witness.add_checkpoint(vector("add-checkpoint-0.txt"))


class TestSpecExamples(unittest.TestCase):
    def test_the_request_and_response_bodies(self) -> None:
        example = load_json("c2sp-examples.json", "add_checkpoint_request")
        request = parse_add_checkpoint_request(example["body"].encode("utf-8"))
        self.assertEqual((request.old_size, len(request.proof)), (example["old_size"], example["proof_lines"]))
        lines = request.checkpoint.text.split("\n")
        self.assertEqual(lines[:3], [example["origin"], str(example["size"]), example["root_base64"]])
        self.assertEqual(len(request.checkpoint.signatures), example["signatures"])
        self.assertEqual(request.to_bytes(), example["body"].encode("utf-8"))
        response = load_json("c2sp-examples.json", "add_checkpoint_response")
        lines_ = parse_add_checkpoint_response(response["body"].encode("utf-8"))
        self.assertEqual([sig.name for sig in lines_], response["names"])
        self.assertTrue(
            all(isinstance(sig, NoteSignature) and len(sig.signature) == response["signature_bytes"] for sig in lines_)
        )


class TestOneStateFileSeveralWitnesses(WitnessCase):
    """Two witnesses on one state file (``witness serve`` and ``cosign``, say) never cosign from a stale memory."""

    def test_a_request_waits_for_the_state_lock(self) -> None:
        held = threading.Event()

        def hold() -> None:
            with state_lock(self.state):
                held.set()
                time.sleep(0.5)

        thread = threading.Thread(target=hold)
        thread.start()
        self.addCleanup(thread.join)
        held.wait(10)
        started = time.monotonic()
        self.assertEqual(self.witness.add_checkpoint(vector("add-checkpoint-0.txt")).status, 200)
        self.assertGreaterEqual(time.monotonic() - started, 0.4)


if __name__ == "__main__":
    unittest.main()
