"""The public-key commands' refusals that no scenario of ``tests/cli/test_keys_cli.py`` reaches, in-process.

``tests/cli/test_keys_cli.py`` runs every scenario as a real process (no
traceback may ever reach the terminal); coverage follows those processes
(pyproject.toml: ``patch = ["subprocess"]``), so the scenarios are not run
a second time here (that added no line and no branch).  What follows calls
``main(argv)`` in the test's folder: witness state files, unwritable
outputs, unreadable checkpoints.  "Without cryptography" is made real by
making its Ed25519 module unimportable for the duration of one call, as the
subprocess tests do.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import unittest
from typing import Tuple
from unittest import mock

from agentloop.signing.backend import CRYPTOGRAPHY_MODULE
from agentloop.tlog.witness import state_lock
from agentloop.transcript.checkpoint import read_checkpoint

from tests.cli import test_keys_cli as base
from tests.support.helpers import read_lines

UNSAFE = base.UNSAFE
T0 = base.T0


class InProcess(base.KeysCase):
    """``cli`` calls ``main(argv)`` with the test's folder as the working directory."""

    def cli(self, *argv: str, blocked: bool = False) -> Tuple[int, str, str]:
        blocking = mock.patch.dict(sys.modules, {CRYPTOGRAPHY_MODULE: None}) if blocked else contextlib.nullcontext()
        with blocking:
            status, out, err = self.here(*argv)
        self.assertNotIn("internal error", err)
        return status, out, err


class TestKeygenInProcess(InProcess):
    def test_keygen_into_a_missing_folder_is_refused_and_writes_nothing(self) -> None:
        status, out, err = self.cli("keygen", "k", "-o", os.path.join("no", "k"), UNSAFE)
        self.assertEqual((status, out), (2, ""))
        self.assertEqual(
            err, "agentloop keygen: error: %s: its folder does not exist\n" % (os.path.join("no", "k.key"),)
        )
        self.assertEqual(os.listdir(self.dir), [])

    def test_a_name_that_is_only_dots_and_slashes_gets_a_file_name(self) -> None:
        out = self.ok("keygen", ".hidden", UNSAFE)
        self.assertEqual(sorted(os.listdir(self.dir)), ["hidden.key", "hidden.pub"])
        self.assertTrue(
            out.startswith("hidden.key: private note signing key (Ed25519), mode 0600: keep it secret\n"), out
        )


class TestSignAndTrustInProcess(InProcess, base.SignedRun):
    def test_the_same_key_given_twice_to_sign_is_refused(self) -> None:
        status, out, err = self.cli("checkpoint", "t.jsonl", "--sign", "operator.key", "--sign", "operator.key", UNSAFE)
        self.assertEqual((status, out), (2, ""))
        self.assertEqual(err, "agentloop checkpoint: error: --sign: the same key is given twice\n")
        self.assertFalse(os.path.exists(self.path("t.checkpoint")))


class TestWitnessRefusals(InProcess, base.SignedRun):
    def setUp(self) -> None:
        super().setUp()
        self.ok("checkpoint", "t.jsonl", "--sign", "operator.key", UNSAFE)
        self.witness = (
            "--key",
            "witness.key",
            "--trust",
            "operator.pub",
            "--transcript",
            "t.jsonl",
            "--time",
            str(T0),
            UNSAFE,
        )

    def cosign_with_state(self, state: bytes) -> Tuple[int, str, str]:
        self.write_bytes(state, "w.state")
        return self.cli("cosign", "t.checkpoint", "--state", "w.state", *self.witness)

    def test_a_malformed_witness_state_is_refused_and_nothing_is_cosigned(self) -> None:
        ckpt = read_checkpoint(self.path("t.checkpoint"))
        good = {"size": 11, "root": ckpt.root, "head": ckpt.head}
        before = self.read("t.checkpoint")
        for state, reason in [
            (b"\xff", "is not a witness state file (agentloop-witness-state/2)"),
            (b"[]", "is not a witness state file (agentloop-witness-state/2)"),
            (b" " * ((1 << 20) + 1), "is not a witness state file (agentloop-witness-state/2)"),
            (
                json.dumps({"format": "other/1", "logs": {}}).encode(),
                "is not a witness state file (agentloop-witness-state/2)",
            ),
            (
                json.dumps({"format": "agentloop-witness-state/1", "logs": {"not an origin": good}}).encode(),
                "the witness state's entry for not an origin is malformed",
            ),
            (
                json.dumps(
                    {"format": "agentloop-witness-state/1", "logs": {ckpt.origin: dict(good, size=True)}}
                ).encode(),
                "the witness state's entry for %s is malformed" % (ckpt.origin,),
            ),
            (
                json.dumps(
                    {"format": "agentloop-witness-state/1", "logs": {ckpt.origin: dict(good, root="AB")}}
                ).encode(),
                "the witness state's entry for %s is malformed" % (ckpt.origin,),
            ),
        ]:
            with self.subTest(reason=reason, state=state[:40]):
                status, out, err = self.cosign_with_state(state)
                self.assertEqual((status, out), (2, ""))
                self.assertEqual(err, "agentloop cosign: error: w.state: %s\n" % (reason,))
                self.assertEqual(self.read("t.checkpoint"), before)

    def test_a_state_file_another_witness_is_using_is_waited_for(self) -> None:
        """witness serve holds the state file's lock while it checks and cosigns: cosign waits, then gives up."""
        before = self.read("t.checkpoint")
        with mock.patch("agentloop.tlog.witness.LOCK_SECONDS", 0.2), state_lock(self.path("w.state")):
            status, out, err = self.cli("cosign", "t.checkpoint", "--state", "w.state", *self.witness)
        self.assertEqual((status, out), (2, ""))
        self.assertEqual(err, "agentloop cosign: error: w.state: is locked by another witness process for over 0.2 s\n")
        self.assertEqual(self.read("t.checkpoint"), before)
        self.assertFalse(os.path.exists(self.path("w.state")))
        status, _, _ = self.cli("cosign", "t.checkpoint", "--state", "w.state", *self.witness)
        self.assertEqual(status, 0)

    def test_a_state_file_that_is_a_folder_or_in_a_missing_folder_is_refused(self) -> None:
        os.mkdir(self.path("dir.state"))
        status, _, err = self.cli("cosign", "t.checkpoint", "--state", "dir.state", *self.witness)
        self.assertEqual(status, 2)
        self.assertEqual(err, "agentloop cosign: error: dir.state: is a directory, not a transcript file\n")
        missing = os.path.join("absent", "w.state")
        status, _, err = self.cli("cosign", "t.checkpoint", "--state", missing, *self.witness)
        self.assertEqual(status, 2)
        self.assertEqual(err, "agentloop cosign: error: %s: its folder does not exist\n" % (missing,))

    def test_an_unreadable_state_or_an_unwritable_state_or_output_is_refused(self) -> None:
        os.symlink("nowhere", self.path("dangling.state"))
        status, _, err = self.cli("cosign", "t.checkpoint", "--state", "dangling.state", *self.witness)
        self.assertEqual(status, 2)
        self.assertEqual(
            err, "agentloop cosign: error: dangling.state: cannot read the witness state: No such file or directory\n"
        )
        long = "s" * 255  # a name the file system takes, and no room beside it for the temporary file
        before = self.read("t.checkpoint")
        status, out, err = self.cli("cosign", "t.checkpoint", "--state", long, "-o", "-", *self.witness)
        self.assertEqual(status, 2)
        self.assertEqual(out, "")  # nothing is given out before the state is written (C2SP tlog-witness)
        self.assertEqual(
            err,
            "agentloop cosign: error: %s: cannot write the witness state (nor its .lock file beside it): "
            "File name too long\n" % (long,),
        )
        status, out, err = self.cli("cosign", "t.checkpoint", "-o", long, *self.witness)
        self.assertEqual((status, out), (2, ""))
        self.assertEqual(err, "agentloop cosign: error: %s: cannot write it: File name too long\n" % (long,))
        self.assertEqual(self.read("t.checkpoint"), before)

    def test_cosign_to_another_file_keeps_the_original_and_refuses_to_overwrite(self) -> None:
        before = self.read("t.checkpoint")
        out = self.ok("cosign", "t.checkpoint", "-o", "c.checkpoint", *self.witness)
        self.assertEqual(
            out,
            "c.checkpoint: cosigned by witness at time %d: 11 records, signed by operator, "
            "the first checkpoint of this log the witness sees\n" % (T0,),
        )
        self.assertEqual(self.read("t.checkpoint"), before)
        self.assertTrue(self.read("c.checkpoint").startswith(before))
        status, _, err = self.cli("cosign", "t.checkpoint", "-o", "c.checkpoint", *self.witness)
        self.assertEqual(status, 2)
        self.assertEqual(
            err, "agentloop cosign: error: c.checkpoint: already exists (pass --overwrite to replace it)\n"
        )
        self.ok("cosign", "t.checkpoint", "-o", "c.checkpoint", "--overwrite", *self.witness)

    def test_a_malformed_or_unsigned_checkpoint(self) -> None:
        self.write_bytes(b"not a checkpoint\n", "bad.checkpoint")
        status, out, _ = self.cli("cosign", "bad.checkpoint", *self.witness)
        self.assertEqual(status, 1)
        self.assertTrue(out.startswith("bad.checkpoint: FAILED: anchor_malformed: "), out)
        for argv in (["bad.checkpoint", "t.checkpoint", "--transcript", "t.jsonl"], ["0", "bad.checkpoint"]):
            status, out, _ = self.cli("witness-request", *argv)
            self.assertEqual(status, 1, argv)
            self.assertTrue(out.startswith("bad.checkpoint: FAILED: anchor_malformed: "), out)

    def test_a_missing_checkpoint_is_a_usage_error(self) -> None:
        status, out, err = self.cli("cosign", "gone.checkpoint", *self.witness)
        self.assertEqual((status, out), (2, ""))
        self.assertEqual(err, "agentloop cosign: error: gone.checkpoint: cannot read it: No such file or directory\n")
        for argv, gone in (
            (["0", "gone.checkpoint"], "gone.checkpoint"),
            (["gone.checkpoint", "t.checkpoint", "--transcript", "t.jsonl"], "gone.checkpoint"),
        ):
            status, out, err = self.cli("witness-request", *argv)
            self.assertEqual((status, out), (2, ""), argv)
            self.assertEqual(
                err, "agentloop witness-request: error: %s: cannot read it: No such file or directory\n" % (gone,)
            )

    def test_a_time_that_is_not_epoch_seconds_is_a_usage_error(self) -> None:
        for stamp in (
            "-1",
            "1.5",
            "18446744073709551616",
            "\u0661",
            "0",
            "9223372036854775808",
            "18446744073709551615",
        ):
            with self.subTest(stamp):
                status, _, err = self.cli(
                    "cosign",
                    "t.checkpoint",
                    "--key",
                    "witness.key",
                    "--trust",
                    "operator.pub",
                    "--transcript",
                    "t.jsonl",
                    "--time",
                    stamp,
                    UNSAFE,
                )
                self.assertEqual(status, 2)
                self.assertIn(
                    "--time: must be seconds since the UNIX epoch (a non-negative integer), from 1 to 2**63-1", err
                )

    def test_the_prefix_of_a_transcript_is_not_a_fault_for_witness_request_from_zero(self) -> None:
        lines = read_lines(self.path())
        self.write_bytes(b"".join(lines[:6]), "old.jsonl")
        self.ok("checkpoint", "old.jsonl", "--sign", "operator.key", UNSAFE)
        body = self.ok("witness-request", "old.checkpoint", "t.checkpoint", "--transcript", "t.jsonl")
        self.assertTrue(body.startswith("old 6\n"), body)


if __name__ == "__main__":
    unittest.main()
