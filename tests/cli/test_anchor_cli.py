"""The command line of checkpoints, proofs and repair, through main(argv)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from agentloop.transcript.checkpoint import read_checkpoint

from tests.support.helpers import read_lines
from tests.cli.test_cli import ROOT, CliCase

KEY = b"0123456789abcdef0123456789abcdef"


class AnchorCliCase(CliCase):
    def setUp(self) -> None:
        super().setUp()
        self.result = self.recover_run()
        self.key = self.write_bytes(KEY + b"\n", "key")
        status, out, err = self.cli("checkpoint", self.path(), "--key-file", self.key)
        self.assertEqual((status, err), (0, ""), out)
        self.ckpt = self.path("t.checkpoint")


class TestCheckpointCommand(AnchorCliCase):
    def test_it_writes_beside_the_transcript_and_names_what_it_wrote(self) -> None:
        ckpt = read_checkpoint(self.ckpt)
        self.assertEqual((ckpt.size, ckpt.head), (11, self.result.head))
        status, out, _ = self.cli("checkpoint", self.path(), "-o", self.path("u.checkpoint"))
        self.assertEqual(status, 0)
        self.assertEqual(
            out,
            "%s: ok, 11 records, head %s\ncheckpoint: %s (root %s, unsigned)\n"
            % (self.path(), self.result.head, self.path("u.checkpoint"), ckpt.root),
        )

    def test_to_stdout(self) -> None:
        status, out, _ = self.cli("checkpoint", self.path(), "-o", "-", "--key-file", self.key)
        self.assertEqual(status, 0)
        with open(self.ckpt, encoding="utf-8") as handle:
            self.assertEqual(out, handle.read())

    def test_an_existing_checkpoint_needs_force(self) -> None:
        status, _, err = self.cli("checkpoint", self.path())
        self.assertEqual(status, 2)
        self.assertIn("already exists (pass --force to replace it)", err)
        self.assertEqual(self.cli("checkpoint", self.path(), "--force")[0], 0)
        self.assertEqual(read_checkpoint(self.ckpt).signatures, ())
        status, _, err = self.cli("checkpoint", self.path(), "-o", self.path())
        self.assertEqual(status, 2)
        self.assertIn("would replace the transcript", err)

    def test_a_faulty_transcript_gets_no_checkpoint(self) -> None:
        status, out, _ = self.cli("checkpoint", self.tampered())
        self.assertEqual(status, 1)
        self.assertIn("FAILED at record 4 (line 5): hash_mismatch", out)
        self.assertIn("no checkpoint written: the transcript does not verify", out)
        self.assertFalse(os.path.exists(self.path("tampered.checkpoint")))

    def test_a_bad_key_is_a_usage_error(self) -> None:
        status, _, err = self.cli("checkpoint", self.path(), "-o", "-", "--key-file", self.write_bytes(b"short", "k2"))
        self.assertEqual(status, 2)
        self.assertIn("agentloop checkpoint: error: key file %s: is 5 bytes" % (self.path("k2"),), err)
        status, _, err = self.cli("checkpoint", self.path(), "-o", "-", "--key-env", "AGENTLOOP_NO_SUCH_VARIABLE")
        self.assertEqual(status, 2)
        self.assertIn("is not set", err)


class TestVerifyCheckpoint(AnchorCliCase):
    def test_a_matching_signed_checkpoint(self) -> None:
        status, out, _ = self.cli("verify", self.path(), "--checkpoint", self.ckpt, "--key-file", self.key)
        self.assertEqual(status, 0)
        self.assertEqual(
            out.splitlines()[1],
            "%s: checkpoint %s: the first 11 records match its root and head, signed by the key"
            % (self.path(), self.ckpt),
        )
        status, out, _ = self.cli("verify", self.path(), "--checkpoint", self.ckpt)
        self.assertEqual(status, 0)
        self.assertIn("note: the checkpoint's signature was not checked", out)

    def test_the_missing_tail_is_now_a_command(self) -> None:
        short = self.write_bytes(b"".join(read_lines(self.path())[:-2]), "short.jsonl")
        status, out, _ = self.cli("verify", short, "--checkpoint", self.ckpt)
        self.assertEqual(status, 1)
        self.assertEqual(
            out,
            "%s: FAILED at file: truncated: the checkpoint covers 11 records, the file has 9: 2 missing from the end\n"
            % (short,),
        )

    def test_an_unanchored_tail_is_a_note_unless_exact(self) -> None:
        older = self.path("older.checkpoint")
        prefix = self.write_bytes(b"".join(read_lines(self.path())[:7]), "prefix.jsonl")
        self.assertEqual(self.cli("checkpoint", prefix, "-o", older)[0], 0)
        status, out, _ = self.cli("verify", self.path(), "--checkpoint", older)
        self.assertEqual(status, 0)
        self.assertIn(
            "note: 4 records after the checkpoint are not anchored by it "
            "(unanchored_tail; --exact makes this a failure)",
            out,
        )
        status, out, _ = self.cli("verify", self.path(), "--checkpoint", older, "--exact")
        self.assertEqual(status, 1)
        self.assertIn("FAILED at record 7: unanchored_tail: 4 records after the 7 the checkpoint covers", out)
        status, out, _ = self.cli("verify", self.path(), "--since", older)
        self.assertEqual(status, 0)
        self.assertIn("extends the older checkpoint %s" % (older,), out)
        status, out, _ = self.cli("verify", prefix[: -len("prefix.jsonl")] + "prefix.jsonl", "--since", self.ckpt)
        self.assertEqual(status, 1)
        self.assertIn("truncated: the older checkpoint covers 11 records, the file has 7", out)

    def test_a_wrong_key_and_json_output(self) -> None:
        wrong = self.write_bytes(b"w" * 32, "wrong")
        status, out, _ = self.cli("verify", self.path(), "--checkpoint", self.ckpt, "--key-file", wrong, "--json")
        self.assertEqual(status, 1)
        (entry,) = json.loads(out)
        self.assertEqual([f["kind"] for f in entry["faults"]], ["bad_signature"])
        self.assertEqual(
            entry["checkpoint"],
            {"anchored": 11, "unanchored": 0, "root": read_checkpoint(self.ckpt).root, "signed": False, "signers": []},
        )

    def test_usage_errors(self) -> None:
        for argv, message in [
            (["verify", self.path(), self.path(), "--checkpoint", self.ckpt], "take exactly one FILE"),
            (["verify", self.path(), "--exact"], "need --checkpoint or --since"),
            (["verify", self.path(), "--key-file", self.key], "need --checkpoint or --since"),
            (["verify", self.path(), "--since", self.ckpt, "--exact"], "--exact needs --checkpoint"),
            (
                ["verify", self.path(), "--checkpoint", self.ckpt, "--expect-count", "11"],
                "are not taken with --checkpoint",
            ),
            (
                ["verify", self.path(), "--checkpoint", self.ckpt, "--key-file", self.key, "--key-env", "X"],
                "not allowed with",
            ),
        ]:
            with self.subTest(argv=argv):
                status, _, err = self.cli(*argv)
                self.assertEqual(status, 2)
                self.assertIn(message, err)


class TestProofCommands(AnchorCliCase):
    def test_prove_then_check_inclusion_without_the_transcript(self) -> None:
        status, out, _ = self.cli("prove", self.path(), "--index", "4")
        self.assertEqual(status, 0)
        doc = json.loads(out)
        self.assertEqual(sorted(doc), ["index", "kind", "leaf_hash", "origin", "proof", "root", "size"])
        proof = self.write_bytes(out.encode(), "p.json")
        os.rename(self.path(), self.path("elsewhere.jsonl"))  # the check needs no transcript
        status, out, _ = self.cli("check-proof", proof, "--checkpoint", self.ckpt, "--key-file", self.key)
        self.assertEqual(status, 0)
        self.assertEqual(
            out,
            "%s: ok, leaf hash %s is record 4 of the 11 of checkpoint %s; signed by the key\n"
            % (proof, doc["leaf_hash"], self.ckpt),
        )

    def test_prove_from_and_consistency_between_two_checkpoints(self) -> None:
        prefix = self.write_bytes(b"".join(read_lines(self.path())[:6]), "prefix.jsonl")
        old = self.path("old.checkpoint")
        self.assertEqual(self.cli("checkpoint", prefix, "-o", old, "--key-file", self.key)[0], 0)
        status, out, _ = self.cli("prove", self.path(), "--from", "6", "-o", self.path("c.json"))
        self.assertEqual((status, out), (0, "proof: %s\n" % (self.path("c.json"),)))
        status, out, _ = self.cli("consistency", old, self.ckpt, "--proof", self.path("c.json"), "--key-file", self.key)
        self.assertEqual(status, 0)
        self.assertEqual(out, "%s: ok, extends %s (6 records -> 11); both signed by the key\n" % (self.ckpt, old))
        status, out, _ = self.cli("consistency", self.ckpt, old, "--proof", self.path("c.json"))
        self.assertEqual(status, 1)
        self.assertIn("fewer than the old one's 11: a rollback", out)
        status, out, _ = self.cli("check-proof", self.path("c.json"), "--checkpoint", self.ckpt)
        self.assertEqual(status, 0)
        self.assertIn("the first 6 records (root ", out)

    def test_failures_exit_1_and_say_why(self) -> None:
        self.assertEqual(self.cli("prove", self.path(), "--index", "2", "-o", self.path("i.json"))[0], 0)
        with open(self.path("i.json"), encoding="utf-8") as handle:
            doc = json.loads(handle.read())
        doc["index"] = 3
        bad = self.write_bytes(json.dumps(doc).encode(), "bad.json")
        with open(self.ckpt, "rb") as handle:
            malformed = self.write_bytes(handle.read().replace(b"agentloop/1/", b"agentloop/2/", 1), "bad.checkpoint")
        wrong = self.write_bytes(b"w" * 32, "wrong")
        for argv, message in [
            (["check-proof", bad, "--checkpoint", self.ckpt], "FAILED: the proof leads to root"),
            (
                ["check-proof", self.path("i.json"), "--checkpoint", malformed],
                "FAILED: anchor_malformed: checkpoint line 1: origin must be",
            ),
            (
                ["check-proof", self.path("i.json"), "--checkpoint", self.ckpt, "--key-file", wrong],
                "FAILED: bad_signature: no signature by this key",
            ),
            (["check-proof", self.path("missing.json"), "--checkpoint", self.ckpt], "FAILED: cannot read"),
            (["check-proof", self.path("i.json"), "--checkpoint", self.path("none")], "FAILED: unreadable: checkpoint"),
            (["consistency", self.ckpt, self.ckpt, "--proof", self.path("i.json")], "is an inclusion proof"),
            (
                ["prove", self.tampered(), "--index", "0"],
                "no proof: %s does not verify" % (self.path("tampered.jsonl"),),
            ),
            (["prove", self.path(), "--index", "11"], "index 11 is not a record of a tree of size 11"),
        ]:
            with self.subTest(argv=argv):
                status, out, _ = self.cli(*argv)
                self.assertEqual(status, 1, out)
                self.assertIn(message, out)

    def test_prove_usage_errors(self) -> None:
        for argv in (
            ["prove", self.path()],
            ["prove", self.path(), "--index", "1", "--from", "2"],
            ["prove", self.path(), "--from", "0"],
            ["prove", self.path(), "--index", "-1"],
        ):
            with self.subTest(argv=argv):
                self.assertEqual(self.cli(*argv)[0], 2)


class TestRepairAndReport(AnchorCliCase):
    def test_repair_a_torn_line_then_refuse_a_tampered_file(self) -> None:
        lines = read_lines(self.path())
        torn = self.write_bytes(b"".join(lines[:-1]) + lines[-1][:30], "torn.jsonl")
        self.assertEqual(self.cli("verify", torn)[0], 1)
        status, out, _ = self.cli("repair", torn)
        self.assertEqual(status, 0)
        offset = len(b"".join(lines[:-1]))
        self.assertEqual(
            out.splitlines()[0], "%s: removed a torn last line of 30 bytes, saved to %s.torn-%d" % (torn, torn, offset)
        )
        self.assertIn("ok, 10 records", out)
        status, out, _ = self.cli("repair", self.path())
        self.assertEqual(status, 0)
        self.assertIn("nothing to repair", out)
        status, out, _ = self.cli("repair", self.tampered())
        self.assertEqual(status, 1)
        self.assertIn("not repaired: its last line is complete, and it has a fault repair does not fix", out)
        status, out, _ = self.cli("repair", self.path("missing.jsonl"))
        self.assertEqual(status, 1)
        self.assertIn("not repaired: unreadable", out)

    def test_verify_never_repairs(self) -> None:
        lines = read_lines(self.path())
        data = b"".join(lines[:-1]) + lines[-1][:30]
        torn = self.write_bytes(data, "torn.jsonl")
        self.cli("verify", torn, "--checkpoint", self.ckpt)
        with open(torn, "rb") as handle:
            self.assertEqual(handle.read(), data)

    def test_report_shows_the_checkpoint_verdict(self) -> None:
        status, out, _ = self.cli("report", self.path(), "--checkpoint", self.ckpt, "--key-file", self.key)
        self.assertEqual(status, 0)
        self.assertIn("checkpoint: ok: the first 11 records match %s" % (self.ckpt,), out)
        with open(self.path("t.html"), encoding="utf-8") as handle:
            page = handle.read()
        self.assertIn("checkpoint verified", page)
        short = self.write_bytes(b"".join(read_lines(self.path())[:-1]), "short.jsonl")
        status, out, _ = self.cli("report", short, "--checkpoint", self.ckpt)
        self.assertEqual(status, 1)
        self.assertIn("checkpoint: FAILED: truncated:", out)
        with open(self.path("short.html"), encoding="utf-8") as handle:
            self.assertIn("checkpoint NOT verified", handle.read())
        status, _, err = self.cli("report", self.path(), "--key-file", self.key)
        self.assertEqual(status, 2)
        self.assertIn("needs --checkpoint", err)

    def test_the_commands_work_as_a_real_process(self) -> None:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "agentloop",
                "verify",
                self.path(),
                "--checkpoint",
                self.ckpt,
                "--key-env",
                "AGENTLOOP_TEST_KEY",
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ, AGENTLOOP_TEST_KEY=KEY.decode()),
            universal_newlines=True,
        )
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("signed by the key", proc.stdout)
