"""The command line of public keys, as real processes: keygen, checkpoint --sign, --trust/--require, cosign,
witness-request.

Every command under test runs in a subprocess (``python -m agentloop``)
and must never print a traceback.  What a scenario starts from (its keys,
and the checkpoints and proofs of commands that other tests run as
processes) is made in this process, by ``main(argv)``: a process each costs
a Python start.  Signing goes through ``--unsafe-pure-python-signer``
so the tests run without ``cryptography``; one test blocks ``cryptography``
to see the one-line refusal without the opt-in.
"""

from __future__ import annotations

import base64
import contextlib
import io
import os
import stat
import subprocess
import sys
from typing import Tuple

from agentloop.cli import main
from agentloop.signing.keys import read_verifier_key
from agentloop.signing.witness import parse_add_checkpoint_request
from agentloop.transcript.checkpoint import parse_checkpoint, read_checkpoint
from agentloop.transcript.merkle import verify_consistency

from tests.support.helpers import TempDir, read_lines
from tests.transcript.test_anchor import forge

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNSAFE = "--unsafe-pure-python-signer"
T0 = 1700000000
# Runs the command line with 'cryptography' unimportable.
_BLOCKED = (
    "import sys; sys.modules['cryptography'] = None; from agentloop.cli.main import main; sys.exit(main(sys.argv[1:]))"
)


class KeysCase(TempDir):
    def cli(self, *argv: str, blocked: bool = False) -> Tuple[int, str, str]:
        head = [sys.executable, "-c", _BLOCKED] if blocked else [sys.executable, "-m", "agentloop"]
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.run(
            head + list(argv),
            cwd=self.dir,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            universal_newlines=True,
            timeout=120,
        )
        self.assertNotIn("Traceback", proc.stderr)
        self.assertNotIn("Traceback", proc.stdout)
        return proc.returncode, proc.stdout, proc.stderr

    def ok(self, *argv: str) -> str:
        status, out, err = self.cli(*argv)
        self.assertEqual(status, 0, (argv, out, err))
        self.assertEqual(err, "")
        return out

    def here(self, *argv: str) -> Tuple[int, str, str]:
        """``main(argv)`` in this process, with the test's folder as the working directory."""
        out, err = io.StringIO(), io.StringIO()
        cwd = os.getcwd()
        os.chdir(self.dir)
        try:
            with contextlib.redirect_stderr(err):
                status = main(list(argv), out=out)
        finally:
            os.chdir(cwd)
        return status, out.getvalue(), err.getvalue()

    def made(self, *argv: str) -> None:
        """A fixture made in this process (:meth:`here`): exit 0, nothing on stderr."""
        status, out, err = self.here(*argv)
        self.assertEqual((status, err), (0, ""), (argv, out))

    def read(self, name: str) -> bytes:
        with open(self.path(name), "rb") as handle:
            return handle.read()


class TestKeygen(KeysCase):
    def test_keygen_writes_a_private_and_a_public_key_and_never_overwrites(self) -> None:
        out = self.ok("keygen", "example.com/operator", UNSAFE)
        self.assertEqual(sorted(os.listdir(self.dir)), ["example.com_operator.key", "example.com_operator.pub"])
        self.assertEqual(stat.S_IMODE(os.stat(self.path("example.com_operator.key")).st_mode), 0o600)
        private = self.read("example.com_operator.key").decode()
        self.assertTrue(private.startswith("PRIVATE+KEY+example.com/operator+"))
        vkey = read_verifier_key(self.path("example.com_operator.pub"))
        self.assertEqual((vkey.name, vkey.alg), ("example.com/operator", 1))
        self.assertIn("example.com_operator.pub: public key: %s" % (vkey.text(),), out)
        status, out, err = self.cli("keygen", "example.com/operator", UNSAFE)
        self.assertEqual((status, out), (2, ""))
        self.assertEqual(
            err, "agentloop keygen: error: example.com_operator.key: already exists; keygen never overwrites a key\n"
        )
        self.assertEqual(self.read("example.com_operator.key").decode(), private)
        # a .pub alone in the way refuses too, before the .key is made
        with open(self.path("w.pub"), "w") as handle:
            handle.write("x\n")
        status, _, err = self.cli("keygen", "w", "-o", "w", "--witness", UNSAFE)
        self.assertEqual(status, 2)
        self.assertIn("w.pub: already exists", err)
        self.assertFalse(os.path.exists(self.path("w.key")))
        self.ok("keygen", "w", "-o", "wit", "--witness", UNSAFE)
        self.assertEqual(read_verifier_key(self.path("wit.pub")).alg, 4)

    def test_bad_names_and_no_signer_are_one_line_usage_errors(self) -> None:
        for name in ("a+b", "a b", ""):
            status, _, err = self.cli("keygen", name, UNSAFE)
            self.assertEqual(status, 2, name)
            self.assertEqual(len(err.splitlines()), 1, err)
            self.assertIn("is not a key name", err)
        status, out, err = self.cli("keygen", "k", blocked=True)
        self.assertEqual((status, out), (2, ""))
        self.assertEqual(
            err,
            "agentloop keygen: error: no signer: signing needs the 'cryptography' package "
            "(pip install agentloop[sign]), which is constant-time, and it is not installed; "
            "--unsafe-pure-python-signer signs with the slow pure-Python signer, which is not side-channel safe\n",
        )
        self.assertEqual(os.listdir(self.dir), [])
        self.ok("keygen", "k", UNSAFE)
        self.recover_run()
        status, _, err = self.cli("checkpoint", self.path(), "--sign", "k.key", blocked=True)
        self.assertEqual(status, 2)
        self.assertTrue(
            err.startswith("agentloop checkpoint: error: --sign: signing needs the 'cryptography' package"), err
        )
        self.assertFalse(os.path.exists(self.path("t.checkpoint")))


class SignedRun(KeysCase):
    def setUp(self) -> None:
        super().setUp()
        self.recover_run()
        # The keys are the fixture, made in this process (TestKeygen runs keygen as a real process).
        for argv in (["operator"], ["approver"], ["witness", "--witness"]):
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(main(["keygen"] + argv + ["-o", self.path(argv[0]), UNSAFE]), 0)
        with open(self.path("hmac.key"), "w") as handle:
            handle.write("0123456789abcdef0123456789abcdef\n")


class TestSignAndTrust(SignedRun):
    def test_checkpoint_sign_then_verify_trust_and_require(self) -> None:
        out = self.ok(
            "checkpoint",
            "t.jsonl",
            "--sign",
            "operator.key",
            "--sign",
            "approver.key",
            "--key-file",
            "hmac.key",
            UNSAFE,
        )
        self.assertIn("signed by the HMAC key, operator, approver)", out)
        ckpt = read_checkpoint(self.path("t.checkpoint"))
        self.assertEqual([s.name for s in ckpt.signatures], [ckpt.origin, "operator", "approver"])
        # signing again gives the same bytes
        first = self.read("t.checkpoint")
        self.ok(
            "checkpoint",
            "t.jsonl",
            "--sign",
            "operator.key",
            "--sign",
            "approver.key",
            "--key-file",
            "hmac.key",
            UNSAFE,
            "--force",
        )
        self.assertEqual(self.read("t.checkpoint"), first)
        out = self.ok(
            "verify", "t.jsonl", "--checkpoint", "t.checkpoint", "--trust", "operator.pub", "--require", "operator"
        )
        self.assertEqual(
            out.splitlines()[1],
            "t.jsonl: checkpoint t.checkpoint: the first 11 records match its root and head, signed by operator",
        )
        out = self.ok(
            "verify",
            "t.jsonl",
            "--checkpoint",
            "t.checkpoint",
            "--trust",
            "operator.pub",
            "--trust",
            "approver.pub",
            "--key-file",
            "hmac.key",
        )
        self.assertIn("signed by the HMAC key, operator, approver", out)
        # unknown keys are ignored; a trusted key that did not sign, required, fails
        status, out, _ = self.cli("verify", "t.jsonl", "--checkpoint", "t.checkpoint", "--trust", "witness.pub")
        self.assertEqual(status, 1)
        self.assertIn("FAILED at file: bad_signature: checkpoint: no signature by a trusted key", out)
        self.ok("keygen", "stranger", UNSAFE)
        status, out, _ = self.cli(
            "verify",
            "t.jsonl",
            "--checkpoint",
            "t.checkpoint",
            "--trust",
            "stranger.pub",
            "--trust",
            "operator.pub",
            "--require",
            "stranger",
        )
        self.assertEqual(status, 1)
        self.assertIn("bad_signature: checkpoint: required signer 'stranger' did not sign", out)
        # usage errors: exit 2, one line
        for argv, message in [
            (["--require", "operator"], "--require: names a --trust key, and none is given"),
            (["--trust", "operator.pub", "--require", "nobody"], "--require: no --trust key is named 'nobody'"),
            (["--trust", "operator.key"], "malformed verifier key"),
            (["--trust", "missing.pub"], "missing.pub"),
        ]:
            status, out, err = self.cli("verify", "t.jsonl", "--checkpoint", "t.checkpoint", *argv)
            self.assertEqual((status, out), (2, ""), argv)
            self.assertEqual(len(err.splitlines()), 1, err)
            self.assertIn(message, err)
        # --trust without a checkpoint checks the approval decisions' notes (issue 19): this run has none
        status, out, err = self.cli("verify", "t.jsonl", "--trust", "operator.pub")
        self.assertEqual(status, 0, err)
        self.assertIn("names no approval signer", out)
        status, _, err = self.cli("verify", "t.jsonl", "--require", "operator")
        self.assertEqual(status, 2)
        self.assertIn("need --checkpoint or --since", err)
        status, _, err = self.cli("checkpoint", "t.jsonl", "-o", "w.checkpoint", "--sign", "witness.key", UNSAFE)
        self.assertEqual(status, 2)
        self.assertIn("is a witness key (cosignature/v1)", err)

    def test_one_byte_changed_in_a_signature_fails_verify_check_proof_and_consistency(self) -> None:
        self.write_bytes(b"".join(read_lines(self.path())[:6]), "old.jsonl")
        self.made("checkpoint", "old.jsonl", "--sign", "operator.key", UNSAFE)
        self.made("checkpoint", "t.jsonl", "--sign", "operator.key", UNSAFE)
        self.made("prove", "t.jsonl", "--index", "3", "-o", "i.json")
        self.made("prove", "t.jsonl", "--from", "6", "-o", "c.json")
        trust = ("--trust", "operator.pub")
        out = self.ok("check-proof", "i.json", "--checkpoint", "t.checkpoint", *trust, "--require", "operator")
        self.assertTrue(out.endswith("of the 11 of checkpoint t.checkpoint; signed by operator\n"), out)
        out = self.ok("consistency", "old.checkpoint", "t.checkpoint", "--proof", "c.json", *trust)
        self.assertEqual(out, "t.checkpoint: ok, extends old.checkpoint (6 records -> 11); both signed by operator\n")
        ckpt = read_checkpoint(self.path("t.checkpoint"))
        sig = ckpt.signatures[0]
        raw = bytearray(sig.signature)
        raw[20] ^= 0x80
        broken = ckpt.to_bytes().replace(
            base64.b64encode(sig.key_id + sig.signature), base64.b64encode(sig.key_id + bytes(raw))
        )
        self.write_bytes(broken, "broken.checkpoint")
        parse_checkpoint(broken)
        for argv in (
            ["verify", "t.jsonl", "--checkpoint", "broken.checkpoint"],
            ["check-proof", "i.json", "--checkpoint", "broken.checkpoint"],
            ["consistency", "old.checkpoint", "broken.checkpoint", "--proof", "c.json"],
        ):
            status, out, err = self.cli(*argv, *trust)
            self.assertEqual((status, err), (1, ""), argv)
            self.assertIn("bad_signature: ", out)
            self.assertIn("invalid signature for key operator+", out)

    def test_report_shows_the_trusted_verdict(self) -> None:
        self.made("checkpoint", "t.jsonl", "--sign", "operator.key", UNSAFE)
        out = self.ok(
            "report", "t.jsonl", "--checkpoint", "t.checkpoint", "--trust", "operator.pub", "--require", "operator"
        )
        self.assertIn("checkpoint: ok: the first 11 records match t.checkpoint", out)
        self.assertIn("; signed by operator", out)
        status, out, _ = self.cli(
            "report", "t.jsonl", "--checkpoint", "t.checkpoint", "--trust", "approver.pub", "--overwrite"
        )
        self.assertEqual(status, 1)
        self.assertIn("checkpoint: FAILED: bad_signature: checkpoint: no signature by a trusted key", out)
        with open(self.path("t.html"), encoding="utf-8") as handle:
            self.assertIn("checkpoint NOT verified", handle.read())


class TestWitness(SignedRun):
    def test_keygen_witness_cosign_and_verify_with_both_keys(self) -> None:
        lines = read_lines(self.path())
        self.write_bytes(b"".join(lines[:6]), "old.jsonl")
        self.made("checkpoint", "old.jsonl", "--sign", "operator.key", UNSAFE)
        self.made("checkpoint", "t.jsonl", "--sign", "operator.key", UNSAFE)
        before = self.read("t.checkpoint")
        witness = ("--key", "witness.key", "--trust", "operator.pub", "--state", "w.state", UNSAFE)
        # first sight of the log: the transcript must give the checkpoint
        out = self.ok("cosign", "old.checkpoint", "--transcript", "old.jsonl", "--time", str(T0), *witness)
        self.assertEqual(
            out,
            "old.checkpoint: cosigned by witness at time %d: 6 records, signed by operator, "
            "the first checkpoint of this log the witness sees\n" % (T0,),
        )
        self.ok(
            "verify",
            "old.jsonl",
            "--checkpoint",
            "old.checkpoint",
            "--trust",
            "operator.pub",
            "--trust",
            "witness.pub",
            "--require",
            "witness",
            "--require",
            "operator",
            "--exact",
        )
        # a rollback is refused, and nothing is written
        state = self.read("w.state")
        self.ok("cosign", "t.checkpoint", "--transcript", "t.jsonl", "--time", str(T0 + 1), "-o", "-", *witness)
        self.assertNotEqual(self.read("w.state"), state)
        status, out, _ = self.cli(
            "cosign", "old.checkpoint", "--transcript", "t.jsonl", "--time", str(T0 + 2), "-o", "x.checkpoint", *witness
        )
        self.assertEqual(status, 1)
        self.assertIn("covers 6 records, fewer than the 11 this witness cosigned before: a rollback", out)
        self.assertFalse(os.path.exists(self.path("x.checkpoint")))
        # the cosignature is over the log's checkpoint, appended to it in place
        out = self.ok("cosign", "t.checkpoint", "--transcript", "t.jsonl", "--time", str(T0 + 3), *witness)
        self.assertIn("consistent with the 11 records cosigned before", out)
        after = self.read("t.checkpoint")
        self.assertTrue(after.startswith(before))
        self.assertTrue(after[len(before) :].startswith("\u2014 witness ".encode("utf-8")))
        self.ok(
            "verify",
            "t.jsonl",
            "--checkpoint",
            "t.checkpoint",
            "--trust",
            "operator.pub",
            "--trust",
            "witness.pub",
            "--require",
            "witness",
        )
        # same inputs, same time: the same bytes; another time: another cosignature
        self.ok("cosign", "t.checkpoint", "--transcript", "t.jsonl", "--time", str(T0 + 3), *witness)
        self.assertEqual(self.read("t.checkpoint"), after)

    def test_the_witness_checks_the_log_signature_and_consistency(self) -> None:
        lines = read_lines(self.path())
        self.write_bytes(b"".join(lines[:6]), "old.jsonl")
        self.made("checkpoint", "old.jsonl", "--sign", "operator.key", UNSAFE)
        self.made("checkpoint", "t.jsonl", "--sign", "approver.key", UNSAFE)
        witness = ("--key", "witness.key", "--trust", "operator.pub", "--state", "w.state", "--time", str(T0), UNSAFE)
        status, out, _ = self.cli("cosign", "t.checkpoint", "--transcript", "t.jsonl", *witness)
        self.assertEqual(status, 1)
        self.assertIn("t.checkpoint: FAILED: bad_signature: no signature by a trusted key", out)
        self.assertFalse(os.path.exists(self.path("w.state")))
        self.ok("cosign", "old.checkpoint", "--transcript", "old.jsonl", *witness)
        # a fork: record 3 rewritten and every later hash recomputed, signed by the log's own key.
        # Its proof is computed from its own transcript, and does not start at the root the witness saw.
        self.write_bytes(
            b"".join(forge(lines, 3, lambda record: record["payload"].update(text="forked"))), "fork.jsonl"
        )
        self.made("verify", "fork.jsonl")
        self.made("checkpoint", "fork.jsonl", "--sign", "operator.key", UNSAFE)
        state = self.read("w.state")
        status, out, _ = self.cli("cosign", "fork.checkpoint", "--transcript", "fork.jsonl", *witness)
        self.assertEqual(status, 1)
        self.assertIn(
            "fork.checkpoint: FAILED: not consistent with the 6 records this witness cosigned before: "
            "the proof starts from",
            out,
        )
        self.assertEqual(self.read("w.state"), state)
        self.assertEqual(len(read_checkpoint(self.path("fork.checkpoint")).signatures), 1)
        # the honest transcript is
        self.ok(
            "cosign",
            "t.checkpoint",
            "--transcript",
            "t.jsonl",
            "--key",
            "witness.key",
            "--trust",
            "approver.pub",
            "--state",
            "w.state",
            "--time",
            str(T0),
            UNSAFE,
        )
        # a transcript that does not give the checkpoint on first sight is refused
        status, out, _ = self.cli(
            "cosign",
            "fork.checkpoint",
            "--transcript",
            "old.jsonl",
            "--key",
            "witness.key",
            "--trust",
            "operator.pub",
            "--state",
            "w2.state",
            UNSAFE,
        )
        self.assertEqual(status, 1)
        self.assertIn("does not give it: truncated", out)
        # a wrong key type and a missing --trust are usage errors
        status, _, err = self.cli(
            "cosign",
            "old.checkpoint",
            "--transcript",
            "old.jsonl",
            "--key",
            "operator.key",
            "--trust",
            "operator.pub",
            UNSAFE,
        )
        self.assertEqual(status, 2)
        self.assertIn("is not a witness key", err)
        status, _, err = self.cli(
            "cosign", "old.checkpoint", "--transcript", "old.jsonl", "--key", "witness.key", UNSAFE
        )
        self.assertEqual(status, 2)
        self.assertIn("--trust: a witness needs the log's public key", err)
        self.write_bytes(b"{}", "bad.state")
        status, _, err = self.cli(
            "cosign",
            "old.checkpoint",
            "--transcript",
            "old.jsonl",
            "--key",
            "witness.key",
            "--trust",
            "operator.pub",
            "--state",
            "bad.state",
            UNSAFE,
        )
        self.assertEqual(status, 2)
        self.assertIn("bad.state: is not a witness state file", err)

    def test_witness_request_prints_an_add_checkpoint_body(self) -> None:
        lines = read_lines(self.path())
        self.write_bytes(b"".join(lines[:6]), "old.jsonl")
        self.made("checkpoint", "old.jsonl", "--sign", "operator.key", UNSAFE)
        self.made("checkpoint", "t.jsonl", "--sign", "operator.key", UNSAFE)
        body = self.ok("witness-request", "old.checkpoint", "t.checkpoint", "--transcript", "t.jsonl").encode("utf-8")
        request = parse_add_checkpoint_request(body)
        old, new = read_checkpoint(self.path("old.checkpoint")), read_checkpoint(self.path("t.checkpoint"))
        self.assertEqual(request.old_size, 6)
        self.assertEqual(request.checkpoint.to_bytes(), self.read("t.checkpoint"))
        self.assertTrue(body.startswith(b"old 6\n"))
        verify_consistency(6, 11, bytes.fromhex(old.root), bytes.fromhex(new.root), list(request.proof))
        first = self.ok("witness-request", "0", "t.checkpoint").encode("utf-8")
        self.assertEqual(first, b"old 0\n\n" + self.read("t.checkpoint"))
        # refusals: no transcript (2), an unsigned checkpoint (2), a transcript that does not give NEW (1)
        status, _, err = self.cli("witness-request", "old.checkpoint", "t.checkpoint")
        self.assertEqual(status, 2)
        self.assertIn("--transcript: is needed", err)
        self.made("checkpoint", "t.jsonl", "-o", "unsigned.checkpoint")
        status, _, err = self.cli("witness-request", "0", "unsigned.checkpoint")
        self.assertEqual(status, 2)
        self.assertIn("is not signed", err)
        status, out, _ = self.cli("witness-request", "old.checkpoint", "t.checkpoint", "--transcript", "old.jsonl")
        self.assertEqual(status, 1)
        self.assertIn("t.checkpoint: FAILED:", out)
        # a transcript of the same run with a record rewritten gives a proof that does not hold
        self.write_bytes(
            b"".join(forge(lines, 3, lambda record: record["payload"].update(text="forked"))), "fork.jsonl"
        )
        status, out, _ = self.cli("witness-request", "old.checkpoint", "t.checkpoint", "--transcript", "fork.jsonl")
        self.assertEqual(status, 1)
        self.assertIn("t.checkpoint: FAILED: the proof starts from 6 records with root", out)
        status, out, _ = self.cli("witness-request", "t.checkpoint", "old.checkpoint", "--transcript", "t.jsonl")
        self.assertEqual(status, 1)
        self.assertIn("a rollback", out)
