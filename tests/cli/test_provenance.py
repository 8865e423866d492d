"""The provenance commands end to end: attest, statement, verify --attestation/--statement/--receipt, run and batch."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from typing import Any, List, Tuple
from unittest import mock

from agentloop.cli import batch as batch_cli
from agentloop.cli import main

from tests.support.helpers import TempDir
from tests.support.signing_support import without_cryptography

VALID = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "transcript", "valid.jsonl"
)
UNSAFE = "--unsafe-pure-python-signer"


class CliCase(TempDir):
    def setUp(self) -> None:
        super().setUp()
        self.cwd = os.getcwd()
        os.chdir(self.dir)
        self.addCleanup(os.chdir, self.cwd)
        self.cli("keygen", "example.com/operator", "-o", "op", UNSAFE)
        self.cli("keygen", "witness.example", "--witness", "-o", "wit", UNSAFE)
        shutil.copy(VALID, "run.jsonl")

    def cli(self, *argv: str) -> Tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(list(argv), out=out)
        return status, out.getvalue(), err.getvalue()

    #: ``batch``'s model and tools: the scripted ones of tests/support/batch_models.py
    MODELS = ("--model", "tests.support.batch_models:factory", "--tools", "tests.support.batch_models:tools")

    def write_tasks(self, *tasks: Tuple[str, str, int]) -> None:
        """tasks.jsonl: a line ``(name, task, max_steps)`` each, with 1000 tokens."""
        with open("tasks.jsonl", "w", encoding="utf-8") as handle:
            for name, task, steps in tasks:
                handle.write(json.dumps({"name": name, "task": task, "max_steps": steps, "max_tokens": 1000}) + "\n")

    def flip(self, path: str, at: int) -> None:
        with open(path, "r+b") as handle:
            handle.seek(at)
            byte = handle.read(1)
            handle.seek(at)
            handle.write(bytes([byte[0] ^ 1]))


class TestAttest(CliCase):
    def test_attest_then_verify(self) -> None:
        status, out, err = self.cli("attest", "run.jsonl", "--key", "op.key", UNSAFE)
        self.assertEqual((status, err), (0, ""))
        self.assertEqual(
            out,
            "run.jsonl: attested: run.jsonl.intoto.jsonl (in-toto Statement v1 of the run, DSSE, signed by "
            "example.com/operator)\n",
        )
        status, out, err = self.cli(
            "verify",
            "run.jsonl",
            "--attestation",
            "run.jsonl.intoto.jsonl",
            "--trust",
            "op.pub",
            "--require",
            "example.com/operator",
        )
        self.assertEqual((status, err), (0, ""))
        self.assertEqual(
            out.splitlines(),
            [
                "run.jsonl.intoto.jsonl: ok, signed by example.com/operator: in-toto Statement v1, predicate "
                "https://agentloop.dev/attestation/run/v1",
                'run.jsonl: ok, its subject "run.jsonl": bytes, chain, Merkle root and stop as attested',
            ],
        )

    def test_failures_exit_1_naming_what_failed(self) -> None:
        self.cli("attest", "run.jsonl", "--key", "op.key", UNSAFE)
        self.flip("run.jsonl.intoto.jsonl", 300)
        status, out, _ = self.cli("verify", "run.jsonl", "--attestation", "run.jsonl.intoto.jsonl", "--trust", "op.pub")
        self.assertEqual(status, 1)
        self.assertEqual(
            out,
            "run.jsonl.intoto.jsonl: FAILED: bad_signature: attestation line 1: signatures[0] by "
            "example.com/operator does not verify\n",
        )
        self.flip("run.jsonl.intoto.jsonl", 300)
        self.flip("run.jsonl", 500)
        status, out, _ = self.cli("verify", "run.jsonl", "--attestation", "run.jsonl.intoto.jsonl", "--trust", "op.pub")
        self.assertEqual(status, 1)
        self.assertIn("run.jsonl.intoto.jsonl: FAILED: run.jsonl: does not verify (", out)
        status, out, _ = self.cli("attest", "run.jsonl", "--key", "op.key", "-o", "again.intoto.jsonl", UNSAFE)
        self.assertEqual(status, 1)
        self.assertIn("nothing is attested that was not verified", out)
        self.assertFalse(os.path.exists("again.intoto.jsonl"))
        self.flip("run.jsonl", 500)
        status, out, _ = self.cli(
            "verify", "run.jsonl", "--attestation", "run.jsonl.intoto.jsonl", "--trust", "op.pub", "--require", "x"
        )
        self.assertEqual(status, 2)  # --require names no --trust key: a usage error

    def test_usage_errors_exit_2(self) -> None:
        self.cli("attest", "run.jsonl", "--key", "op.key", UNSAFE)
        cases: List[Tuple[List[str], str]] = [
            (["attest", "run.jsonl", "--key", "op.key", UNSAFE], "run.jsonl.intoto.jsonl: already exists"),
            (["attest", "run.jsonl", "--key", "wit.key", "-o", "x", UNSAFE], "is a witness key"),
            (["attest", "run.jsonl", "--key", "op.key", "-o", "run.jsonl", UNSAFE], "would replace run.jsonl"),
            (
                ["verify", "run.jsonl", "--attestation", "run.jsonl.intoto.jsonl"],
                "--trust: a signature is checked against the keys you trust",
            ),
            (
                ["verify", "run.jsonl", "--attestation", "run.jsonl.intoto.jsonl", "--trust", "wit.pub"],
                "wit.pub: is a witness key",
            ),
            (
                ["verify", "run.jsonl", "--attestation", "a", "--receipt", "r", "--trust", "op.pub"],
                "--receipt: check one artefact at a time",
            ),
            (
                ["verify", "run.jsonl", "--attestation", "a", "--checkpoint", "c", "--trust", "op.pub"],
                "--checkpoint: is not taken with --attestation",
            ),
            (
                ["verify", "run.jsonl", "--attestation", "a", "--issuer", "i", "--trust", "op.pub"],
                "--issuer/--name: are for --statement or --receipt",
            ),
            (["verify", "run.jsonl", "--issuer", "i"], "--issuer/--name: are for --statement or --receipt"),
            (
                ["verify", "run.jsonl", "run.jsonl", "--statement", "s", "--trust", "op.pub"],
                "--statement: takes exactly one FILE",
            ),
            (
                ["verify", "run.jsonl", "--receipt", "r", "--manifest", "m", "--trust", "op.pub"],
                "--manifest: is for --attestation",
            ),
            (["statement", "run.jsonl", "--key", "op.key", "-o", "-", UNSAFE], "-o: a COSE message is binary"),
        ]
        for argv, words in cases:
            with self.subTest(argv):
                status, out, err = self.cli(*argv)
                self.assertEqual((status, out), (2, ""), err)
                self.assertIn(words, err)

    def test_no_signer_without_cryptography_unless_asked(self) -> None:
        with without_cryptography():
            status, _, err = self.cli("attest", "run.jsonl", "--key", "op.key")
            self.assertEqual(status, 2)
            self.assertIn("signing needs the 'cryptography' package", err)
            self.assertEqual(self.cli("attest", "run.jsonl", "--key", "op.key", UNSAFE)[0], 0)

    def test_to_standard_output(self) -> None:
        status, out, _ = self.cli("attest", "run.jsonl", "--key", "op.key", "-o", "-", UNSAFE)
        self.assertEqual(status, 0)
        self.assertTrue(out.startswith('{"payload":"') and out.endswith("}\n") and out.count("\n") == 1)


class TestStatement(CliCase):
    def test_statement_then_verify(self) -> None:
        status, out, err = self.cli(
            "statement", "run.jsonl", "--key", "op.key", "--issuer", "https://operator.example.com", UNSAFE
        )
        self.assertEqual((status, err), (0, ""))
        self.assertEqual(
            out,
            "run.jsonl: signed statement: run.statement.cose (COSE_Sign1, EdDSA, issuer "
            '"https://operator.example.com", signed by example.com/operator)\n',
        )
        status, out, err = self.cli(
            "verify",
            "run.jsonl",
            "--statement",
            "run.statement.cose",
            "--trust",
            "op.pub",
            "--issuer",
            "https://operator.example.com",
        )
        self.assertEqual((status, err), (0, ""))
        lines = out.splitlines()
        self.assertTrue(lines[0].startswith("run.jsonl: ok, 5 records, head "))
        self.assertRegex(
            lines[1],
            r"^run.statement.cose: ok, signed statement by example.com/operator, issuer "
            r'"https://operator.example.com", '
            r"subject agentloop/1/[0-9a-f]{64}: the first 5 records match its checkpoint \(root [0-9a-f]{64}\)$",
        )
        status, out, _ = self.cli(
            "verify", "run.jsonl", "--statement", "run.statement.cose", "--trust", "op.pub", "--issuer", "x"
        )
        self.assertEqual(
            (status, out),
            (
                1,
                "run.statement.cose: FAILED: signed statement CWT claim 1 (iss): is 'https://operator.example.com', "
                "not 'x'\n",
            ),
        )

    def test_the_issuer_defaults_to_the_key_name_and_a_shorter_file_fails(self) -> None:
        self.assertEqual(self.cli("statement", "run.jsonl", "--key", "op.key", UNSAFE)[0], 0)
        with open("run.jsonl", "rb") as handle:
            lines = handle.readlines()
        with open("short.jsonl", "wb") as handle:
            handle.writelines(lines[:4])
        status, out, _ = self.cli(
            "verify",
            "short.jsonl",
            "--statement",
            "run.statement.cose",
            "--trust",
            "op.pub",
            "--issuer",
            "example.com/operator",
        )
        self.assertEqual(status, 1)
        self.assertIn("truncated: the checkpoint covers 5 records, the file has 4", out)
        self.assertTrue(
            out.endswith("run.statement.cose: FAILED: the transcript does not give the statement's checkpoint\n")
        )


class TestRunAndBatch(CliCase):
    def test_run_attest(self) -> None:
        status, out, err = self.cli(
            "run",
            "--model",
            "tests.support.cli_run_models:adds_forever",
            "--tools",
            "tests.support.cli_run_models:tools",
            "--task",
            "t",
            "--max-steps",
            "2",
            "--max-tokens",
            "1000",
            "-o",
            "r.jsonl",
            "--attest",
            "op.key",
            UNSAFE,
        )
        self.assertEqual((status, err), (3, ""))  # a budget stop keeps its exit status
        self.assertTrue(
            out.endswith(
                "attestation: r.jsonl.intoto.jsonl (in-toto Statement v1, DSSE, signed by example.com/operator)\n"
            )
        )
        self.assertEqual(
            self.cli("verify", "r.jsonl", "--attestation", "r.jsonl.intoto.jsonl", "--trust", "op.pub")[0], 0
        )

    def test_run_attest_checks_before_the_run_and_skips_an_unfinished_run(self) -> None:
        argv = [
            "run",
            "--model",
            "tests.support.cli_run_models:exits",
            "--tools",
            "tests.support.cli_run_models:tools",
            "--task",
            "t",
            "--max-steps",
            "2",
            "--max-tokens",
            "1000",
            "-o",
            "r.jsonl",
            UNSAFE,
        ]
        status, _, err = self.cli(*argv, "--attest", "wit.key")
        self.assertEqual(status, 2)
        self.assertIn("is a witness key", err)
        self.assertFalse(os.path.exists("r.jsonl"))  # refused before the run
        status, _, err = self.cli(*argv, "--attest", "op.key")
        self.assertEqual(status, 4)
        self.assertIn("agentloop run: no attestation: the run did not finish", err)
        self.assertFalse(os.path.exists("r.jsonl.intoto.jsonl"))

    def test_batch_attest_and_receipts(self) -> None:
        self.write_tasks(("a", "one", 4), ("b", "three", 1))
        argv = [
            "batch",
            "tasks.jsonl",
            *self.MODELS,
            "--out",
            "out",
        ]
        status, out, err = self.cli(
            *argv, "--attest", "op.key", "--receipts", "op.key", "--issuer", "https://ops.example", UNSAFE
        )
        self.assertEqual((status, err), (0, ""))
        self.assertIn(
            "attestation: out/manifest.jsonl.intoto.jsonl (in-toto Statement v1 of the batch, DSSE, signed by "
            "example.com/operator)\n",
            out,
        )
        self.assertIn(
            "receipts: 2 in out (NAME.receipt.cose: COSE receipts of inclusion, RFC9162_SHA256, issuer "
            '"https://ops.example", '
            "signed by example.com/operator)\n",
            out,
        )
        status, out, err = self.cli(
            "verify",
            "out/a.jsonl",
            "out/b.jsonl",
            "--attestation",
            "out/manifest.jsonl.intoto.jsonl",
            "--trust",
            "op.pub",
            "--manifest",
            "out/manifest.jsonl",
        )
        self.assertEqual((status, err), (0, ""))
        self.assertIn(", the same bytes as out/manifest.jsonl\n", out)
        status, out, _ = self.cli(
            "verify", "out/b.jsonl", "--attestation", "out/manifest.jsonl.intoto.jsonl", "--trust", "op.pub"
        )
        self.assertEqual(status, 0)
        self.assertTrue(
            out.endswith(
                "note: the ledger file was not compared (no --manifest); its root was recomputed from the attested "
                "runs\n"
                'note: 1 attested run not checked (no file given): "a"\n'
            ),
            out,
        )
        status, out, _ = self.cli(
            "verify",
            "out/b.jsonl",
            "--receipt",
            "out/b.receipt.cose",
            "--trust",
            "op.pub",
            "--issuer",
            "https://ops.example",
        )
        self.assertEqual(status, 0)
        self.assertRegex(
            out,
            r'^out/b.receipt.cose: ok, run "b" \(ok\) is entry 1 of the ledger of 2 runs with root [0-9a-f]{64}; '
            r'signed by example.com/operator, issuer "https://ops.example"\n$',
        )
        self.assertEqual(
            self.cli(
                "verify", "out/manifest.jsonl", "--receipt", "out/a.receipt.cose", "--trust", "op.pub", "--name", "a"
            )[0],
            0,
        )
        status, _, err = self.cli(
            "verify", "out/manifest.jsonl", "--receipt", "out/a.receipt.cose", "--trust", "op.pub"
        )
        self.assertEqual(status, 2)
        self.assertIn("--name: names the run whose line of the manifest", err)
        status, out, _ = self.cli("verify", "out/a.jsonl", "--receipt", "out/b.receipt.cose", "--trust", "op.pub")
        self.assertEqual(status, 1)
        self.assertIn("receipt CWT claim 2 (sub)", out)
        # Evidence is never replaced: a resumed batch with an attestation already there is refused before it runs.
        status, _, err = self.cli(*argv, "--resume", "--attest", "op.key", UNSAFE)
        self.assertEqual(status, 2)
        self.assertIn("out/manifest.jsonl.intoto.jsonl: already exists: an attestation or receipt is evidence", err)
        status, _, err = self.cli(*argv, "--issuer", "x")
        self.assertEqual(status, 2)
        self.assertIn("--issuer: is for --receipts", err)


class TestMoreCases(CliCase):
    def test_require_a_key_that_did_not_sign_and_two_attestations_in_one_bundle(self) -> None:
        self.cli("keygen", "example.com/other", "-o", "other", UNSAFE)
        self.cli("attest", "run.jsonl", "--key", "op.key", UNSAFE)
        status, out, _ = self.cli(
            "verify",
            "run.jsonl",
            "--attestation",
            "run.jsonl.intoto.jsonl",
            "--trust",
            "op.pub",
            "--trust",
            "other.pub",
            "--require",
            "example.com/other",
        )
        self.assertEqual(
            (status, out),
            (
                1,
                "run.jsonl.intoto.jsonl: FAILED: bad_signature: run.jsonl.intoto.jsonl is not signed by "
                "example.com/other (--require)\n",
            ),
        )
        with open("run.jsonl.intoto.jsonl", "rb") as handle:
            line = handle.read()
        with open("two.intoto.jsonl", "wb") as handle:
            handle.write(line + line)
        status, out, _ = self.cli("verify", "run.jsonl", "--attestation", "two.intoto.jsonl", "--trust", "op.pub")
        self.assertEqual(
            (status, out),
            (
                1,
                "two.intoto.jsonl: FAILED: two.intoto.jsonl: holds 2 attestations of agentloop's (lines 1, 2): check "
                "a bundle of one\n",
            ),
        )

    def test_a_statement_of_a_prefix_covers_the_prefix(self) -> None:
        with open("run.jsonl", "rb") as handle:
            lines = handle.readlines()
        with open("prefix.jsonl", "wb") as handle:
            handle.writelines(lines[:3])
        self.assertEqual(self.cli("statement", "prefix.jsonl", "--key", "op.key", UNSAFE)[0], 0)
        status, out, _ = self.cli("verify", "run.jsonl", "--statement", "prefix.statement.cose", "--trust", "op.pub")
        self.assertEqual(status, 0)
        self.assertIn(": the first 3 records match its checkpoint", out)
        self.assertTrue(out.endswith("note: 2 records after the checkpoint are not covered by the statement\n"))

    def test_receipt_files_that_are_not_what_they_should_be(self) -> None:
        with open("garbage.jsonl", "wb") as handle:
            handle.write(b"\xff\xfe not json\n")
        with open("r.cose", "wb") as handle:
            handle.write(b"\xa0")
        status, out, _ = self.cli("verify", "garbage.jsonl", "--receipt", "r.cose", "--trust", "op.pub")
        self.assertEqual(status, 1)
        self.assertIn("garbage.jsonl: does not verify (", out)
        with open("m.jsonl", "wb") as handle:
            handle.write(b'{"name":"a","origin":"x","status":"ok"}\n')
        status, out, _ = self.cli("verify", "m.jsonl", "--receipt", "r.cose", "--trust", "op.pub", "--name", "a")
        self.assertEqual(status, 1)
        self.assertIn("m.jsonl: manifest line 1: a ok line holds exactly", out)
        with open("m.jsonl", "wb") as handle:
            handle.write(b'{"error":"E","name":"a","origin":"agentloop/1/%s","status":"worker_error"}\n' % (b"0" * 64,))
        status, out, _ = self.cli("verify", "m.jsonl", "--receipt", "r.cose", "--trust", "op.pub", "--name", "b")
        self.assertEqual((status, out), (1, 'r.cose: FAILED: m.jsonl: holds no run named "b"\n'))
        status, out, _ = self.cli("verify", "m.jsonl", "--receipt", "r.cose", "--trust", "op.pub", "--name", "a")
        self.assertEqual(
            (status, out), (1, "r.cose: FAILED: receipt: not a tagged COSE_Sign1 (tag 18, RFC 9052 section 4.2)\n")
        )

    def test_a_batch_whose_runs_all_fail_and_a_batch_of_one(self) -> None:
        self.write_tasks(("a", "one", 4), ("b", "two", 4))
        # Every worker names its own process in record 0, so the driver rejects every run (wrong_task_record).
        status, out, err = self.cli(
            "batch",
            "tasks.jsonl",
            "--model",
            "tests.support.batch_models:pid_factory",
            "--tools",
            "tests.support.batch_models:tools",
            "--out",
            "out",
            "--workers",
            "1",
            "--attest",
            "op.key",
            "--receipts",
            "op.key",
            UNSAFE,
        )
        self.assertEqual((status, err), (1, ""))
        self.assertIn(
            "out/manifest.jsonl: FAILED: manifest out/manifest.jsonl: no run of the batch is ok: there is no "
            "transcript to attest\n",
            out,
        )
        self.assertIn("receipts: 2 in out", out)  # a failed run's line is in the ledger too, and has its receipt
        self.assertEqual(
            self.cli(
                "verify", "out/manifest.jsonl", "--receipt", "out/b.receipt.cose", "--trust", "op.pub", "--name", "b"
            )[0],
            0,
        )
        with open("one.jsonl", "w", encoding="utf-8") as handle:
            handle.write('{"name": "a", "task": "one", "max_steps": 4, "max_tokens": 1000}\n')
        status, out, _ = self.cli(
            "batch",
            "one.jsonl",
            *self.MODELS,
            "--out",
            "solo",
            "--receipts",
            "op.key",
            UNSAFE,
        )
        self.assertEqual(status, 1)
        self.assertIn("solo/manifest.jsonl: FAILED: manifest: a ledger of one line has an empty inclusion path", out)
        self.assertFalse(os.path.exists("solo/a.receipt.cose"))


class TestReceiptOfAnotherBatch(CliCase):
    def test_a_manifest_is_checked_against_the_ledger_its_receipt_proves(self) -> None:
        """Run "b" is the same in two batches, so its line is too: each batch's receipt proves its own ledger."""
        tasks = {
            "one.jsonl": ["a", "b"],
            "two.jsonl": ["x", "b", "y"],
        }
        steps = {"a": 4, "b": 1, "x": 3, "y": 2}
        for name, runs in tasks.items():
            with open(name, "w", encoding="utf-8") as handle:
                for run in runs:
                    task = "three" if run == "b" else "one"
                    handle.write(json.dumps({"name": run, "task": task, "max_steps": steps[run], "max_tokens": 1000}))
                    handle.write("\n")
            status, _, err = self.cli(
                "batch",
                name,
                *self.MODELS,
                "--out",
                name[:-6],
                "--receipts",
                "op.key",
                UNSAFE,
            )
            self.assertEqual((status, err), (0, ""))
        with open("one/manifest.jsonl", "rb") as one, open("two/manifest.jsonl", "rb") as two:
            (line,) = [line_ for line_ in one.read().splitlines() if b'"name":"b"' in line_]
            self.assertIn(line + b"\n", two.read())  # the premise: the very same line in both ledgers
        verify = ["verify", "one/manifest.jsonl", "--trust", "op.pub", "--name", "b", "--receipt"]
        self.assertEqual(self.cli(*verify, "one/b.receipt.cose")[0], 0)
        status, out, _ = self.cli(*verify, "two/b.receipt.cose")
        self.assertEqual(status, 1)
        self.assertRegex(
            out,
            r"^two/b.receipt.cose: FAILED: receipt: proves the line in a ledger of 3 runs with root "
            r"[0-9a-f]{16}\.\.\., not in one/manifest.jsonl \(2 runs, root [0-9a-f]{16}\.\.\.\)\n$",
        )
        # Against the transcript, the receipt says which ledger it proves the line in, and that is true.
        status, out, _ = self.cli("verify", "one/b.jsonl", "--receipt", "two/b.receipt.cose", "--trust", "op.pub")
        self.assertEqual(status, 0)
        self.assertIn("is entry 1 of the ledger of 3 runs", out)


class TestIssuerRefusedBeforeAnyWork(CliCase):
    def test_an_issuer_no_statement_or_receipt_can_carry_is_a_usage_error(self) -> None:
        long = "i" * 8193
        for issuer in ("", long):
            with self.subTest(issuer=issuer[:10]):
                status, out, err = self.cli("statement", "run.jsonl", "--key", "op.key", "--issuer", issuer, UNSAFE)
                self.assertEqual((status, out), (2, ""))
                self.assertEqual(
                    err,
                    "agentloop statement: error: --issuer: must be text of 1 to 8192 characters (RFC 9943 section 6)\n",
                )
                self.assertFalse(os.path.exists("run.statement.cose"))
        self.write_tasks(("a", "one", 4), ("b", "three", 1))
        status, out, err = self.cli(
            "batch",
            "tasks.jsonl",
            *self.MODELS,
            "--out",
            "out",
            "--receipts",
            "op.key",
            "--issuer",
            "",
            UNSAFE,
        )
        self.assertEqual((status, out), (2, ""))
        self.assertIn("--issuer: must be text of 1 to 8192 characters", err)
        self.assertFalse(os.path.exists("out"))  # refused before the first run, not after the batch


class TestReceiptsSignOnlyWhatWasChecked(CliCase):
    def test_a_transcript_changed_after_the_batch_wrote_its_line_gets_no_receipt(self) -> None:
        """The ledger and the transcripts are checked before receipts are signed, as an attestation's are."""
        real = batch_cli._cmd_batch

        def batch_then_change_a(args: Any, out: Any) -> int:
            status = real(args, out)
            with open(os.path.join(args.out, "a.jsonl"), "ab") as handle:
                handle.write(b"{}\n")  # the transcript no longer verifies, and is not what its line says
            return status

        self.write_tasks(("a", "one", 4), ("b", "three", 1))
        with mock.patch.object(batch_cli, "_cmd_batch", batch_then_change_a):
            status, out, err = self.cli(
                "batch",
                "tasks.jsonl",
                *self.MODELS,
                "--out",
                "out",
                "--receipts",
                "op.key",
                UNSAFE,
            )
        self.assertEqual(status, 1, (out, err))
        self.assertIn("out/manifest.jsonl: FAILED: out/a.jsonl: does not verify", out)
        self.assertEqual(sorted(n for n in os.listdir("out") if n.endswith(".cose")), [])


class TestBatchArtefactsBesideTheRuns(CliCase):
    """The attestation ``batch --attest`` writes beside the runs is neither one of them nor in their way."""

    ARGV = [*CliCase.MODELS, "--out", "out"]

    def tasks(self, *names: str) -> None:
        self.write_tasks(*((name, "t-" + name, 4) for name in names))

    def test_a_run_whose_transcript_is_the_attestation_path_is_refused_before_anything_runs(self) -> None:
        self.tasks("manifest.jsonl.intoto", "b")
        status, out, err = self.cli("batch", "tasks.jsonl", *self.ARGV, "--attest", "op.key", UNSAFE)
        self.assertEqual((status, out), (2, ""))
        self.assertIn(
            "out/manifest.jsonl.intoto.jsonl: is where --attest writes the batch's attestation, and the transcript "
            'of run "manifest.jsonl.intoto"',
            err,
        )
        self.assertFalse(os.path.exists("out/manifest.jsonl"))
        self.assertFalse(os.path.exists("out/manifest.jsonl.intoto.jsonl"))

    def test_an_attested_batch_still_verifies_and_reports_from_its_folder(self) -> None:
        self.tasks("a", "b")
        self.assertEqual(self.cli("batch", "tasks.jsonl", *self.ARGV, "--attest", "op.key", UNSAFE)[0], 0)
        files = sorted(os.path.join("out", name) for name in os.listdir("out") if name.endswith(".jsonl"))
        self.assertIn("out/manifest.jsonl.intoto.jsonl", files)
        status, out, _ = self.cli("verify", *files, "--manifest", "out/manifest.jsonl")
        self.assertEqual(status, 0, out)
        self.assertIn('ok: "out/manifest.jsonl": 2 of 2 transcripts match the ledger (2 runs)', out)
        status, out, _ = self.cli("report", "--manifest", "out/manifest.jsonl", "-o", "batch.html")
        self.assertEqual(status, 0, out)
        status, out, _ = self.cli("export", "--inspect", "--manifest", "out/manifest.jsonl", "-o", "log.json")
        self.assertEqual(status, 0, out)

    def test_a_run_of_that_name_in_a_batch_without_attestation_is_checked_as_a_run(self) -> None:
        self.tasks("manifest.jsonl.intoto", "b")
        self.assertEqual(self.cli("batch", "tasks.jsonl", *self.ARGV)[0], 0)
        self.flip("out/manifest.jsonl.intoto.jsonl", 40)
        status, out, _ = self.cli(
            "verify", "out/b.jsonl", "out/manifest.jsonl.intoto.jsonl", "--manifest", "out/manifest.jsonl"
        )
        self.assertEqual(status, 1)
        self.assertIn('ALTERED "manifest.jsonl.intoto"', out)


class TestNothingSignedAfterARefusedResume(CliCase):
    """A ledger the batch refused (it no longer matches its signed checkpoint) gets no receipt and no attestation."""

    def test_a_rewritten_ledger_is_not_certified_by_receipts(self) -> None:
        self.write_tasks(("a", "one", 4), ("b", "three", 4))
        argv = [
            "batch",
            "tasks.jsonl",
            *self.MODELS,
            "--out",
            "out",
            "--sign",
            "op.key",
            UNSAFE,
        ]
        self.assertEqual(self.cli(*argv)[0], 0)
        with open("out/manifest.jsonl", "r+", encoding="utf-8") as handle:
            forged = handle.read().replace('"records":7', '"records":9', 1)
            handle.seek(0)
            handle.write(forged)
        status, out, _ = self.cli(*argv, "--resume", "--receipts", "op.key", "--attest", "op.key")
        self.assertEqual(status, 1)
        self.assertIn("refused: the earlier ledger does not match its checkpoint", out)
        self.assertIn("out/manifest.jsonl: FAILED: the ledger's checkpoint out/manifest.checkpoint:", out)
        self.assertNotIn("receipts:", out)
        self.assertEqual(sorted(n for n in os.listdir("out") if n.endswith(".cose") or "intoto" in n), [])


class TestLedgerStatement(CliCase):
    """``statement MANIFEST`` and ``verify MANIFEST --statement``: a SCITT signed statement of a batch ledger."""

    def setUp(self) -> None:
        super().setUp()
        self.write_tasks(("a", "one", 4), ("b", "three", 1))
        argv = list(self.MODELS)
        self.assertEqual(self.cli("batch", "tasks.jsonl", *argv, "--out", "out")[0], 0)
        with open("out/manifest.checkpoint", encoding="utf-8") as handle:
            self.origin = handle.readline().rstrip("\n")

    def verify(self, manifest: str = "out/manifest.jsonl", statement: str = "out/manifest.statement.cose") -> Any:
        return self.cli("verify", manifest, "--statement", statement, "--trust", "op.pub", "--issuer", "https://ops")

    def test_statement_then_verify(self) -> None:
        status, out, err = self.cli(
            "statement", "out/manifest.jsonl", "--key", "op.key", "--issuer", "https://ops", UNSAFE
        )
        self.assertEqual((status, err), (0, ""))
        note = (
            "note: the statement covers the ledger's lines; the runs' transcripts were not read "
            "(agentloop verify out/*.jsonl --manifest out/manifest.jsonl checks them against it)\n"
        )
        self.assertRegex(
            out,
            r"^out/manifest.jsonl: signed statement: out/manifest.statement.cose "
            r'\(COSE_Sign1, EdDSA, issuer "https://ops", signed by example.com/operator\) '
            r"of the batch ledger's checkpoint: 2 lines, root ([0-9a-f]{64})\n",
        )
        self.assertTrue(out.endswith(note))
        root = out.split("root ")[1][:64]
        status, out, err = self.verify()
        self.assertEqual((status, err), (0, ""))
        self.assertEqual(
            out,
            'out/manifest.statement.cose: ok, signed statement by example.com/operator, issuer "https://ops", '
            "subject %s: out/manifest.jsonl is the ledger of its checkpoint (2 lines, root %s)\n%s"
            % (self.origin, root, note),
        )

    def test_a_changed_byte_of_the_statement_or_the_ledger_is_refused(self) -> None:
        self.assertEqual(
            self.cli("statement", "out/manifest.jsonl", "--key", "op.key", "--issuer", "https://ops", UNSAFE)[0], 0
        )
        shutil.copy("out/manifest.statement.cose", "good.cose")
        size = os.path.getsize("good.cose")
        for at in (0, 3, 40, size // 2, size - 70, size - 1):
            shutil.copy("good.cose", "out/manifest.statement.cose")
            self.flip("out/manifest.statement.cose", at)
            status, out, _ = self.verify()
            with self.subTest(at=at):
                self.assertEqual(status, 1)
                self.assertRegex(out, r"^out/manifest.statement.cose: FAILED: \S")
        shutil.copy("good.cose", "out/manifest.statement.cose")
        self.flip("out/manifest.statement.cose", size - 1)
        self.assertEqual(
            self.verify()[1],
            "out/manifest.statement.cose: FAILED: bad_signature: signed statement: the EdDSA signature by "
            "example.com/operator does not verify\n",
        )
        shutil.copy("good.cose", "out/manifest.statement.cose")
        shutil.copy("out/manifest.jsonl", "good.jsonl")
        with open("good.jsonl", "rb") as handle:
            ledger = handle.read()
        for at in (0, ledger.index(b'"records"') + 11, ledger.index(b'"status"') + 10, len(ledger) - 5):
            shutil.copy("good.jsonl", "out/manifest.jsonl")
            self.flip("out/manifest.jsonl", at)
            status, out, _ = self.verify()
            with self.subTest(ledger_at=at):
                self.assertEqual(status, 1)
                self.assertRegex(
                    out,
                    r"^out/manifest.statement.cose: FAILED: (manifest out/manifest.jsonl: manifest line \d|"
                    r"signed statement: (out/manifest.jsonl is not the ledger of its checkpoint: "
                    r"the checkpoint's root|is of a batch ledger))",
                )

    def test_a_statement_of_the_other_kind_is_refused(self) -> None:
        self.assertEqual(
            self.cli("statement", "out/manifest.jsonl", "--key", "op.key", "--issuer", "https://ops", UNSAFE)[0], 0
        )
        self.assertEqual(
            self.cli("statement", "out/a.jsonl", "--key", "op.key", "--issuer", "https://ops", UNSAFE)[0], 0
        )
        status, out, _ = self.verify("out/a.jsonl")
        self.assertEqual(
            (status, out),
            (
                1,
                "out/manifest.statement.cose: FAILED: signed statement: is of a batch ledger (subject %s), and "
                "out/a.jsonl is not a ledger: give the batch's manifest.jsonl\n" % (self.origin,),
            ),
        )
        status, out, _ = self.verify(statement="out/a.statement.cose")
        self.assertEqual(status, 1)
        self.assertRegex(
            out,
            r"^out/a.statement.cose: FAILED: signed statement: is of a run's transcript "
            r"\(subject agentloop/1/[0-9a-f]{64}\), not of the batch ledger out/manifest.jsonl: "
            r"give the run's transcript\n$",
        )

    def test_an_unchecked_ledger_gets_no_statement(self) -> None:
        with open("out/manifest.jsonl", "r+", encoding="utf-8") as handle:
            forged = handle.read().replace('"records":7', '"records":9', 1)
            handle.seek(0)
            handle.write(forged)
        status, out, _ = self.cli("statement", "out/manifest.jsonl", "--key", "op.key", UNSAFE)
        self.assertEqual(status, 1)
        self.assertRegex(
            out,
            r"^out/manifest.jsonl: FAILED: the ledger's checkpoint out/manifest.checkpoint: the checkpoint's root ",
        )
        self.assertFalse(os.path.exists("out/manifest.statement.cose"))
        shutil.copy("out/manifest.jsonl", "elsewhere.jsonl")
        status, out, _ = self.cli("statement", "elsewhere.jsonl", "--key", "op.key", UNSAFE)
        self.assertEqual(
            (status, out),
            (
                1,
                "elsewhere.jsonl: FAILED: the ledger's checkpoint elsewhere.checkpoint: cannot be read: "
                "No such file or directory\n",
            ),
        )

    def test_the_ledgers_checkpoint_is_not_replaced_by_its_statement(self) -> None:
        with open("out/manifest.checkpoint", "rb") as handle:
            kept = handle.read()
        for target in ("out/manifest.checkpoint", "./out/manifest.checkpoint"):
            status, _, err = self.cli(
                "statement", "out/manifest.jsonl", "--key", "op.key", "-o", target, "--overwrite", UNSAFE
            )
            with self.subTest(target=target):
                self.assertEqual(
                    (status, err),
                    (
                        2,
                        "agentloop statement: error: %s: would replace out/manifest.checkpoint, the checkpoint of "
                        "the ledger out/manifest.jsonl\n" % (target,),
                    ),
                )
        with open("out/manifest.checkpoint", "rb") as handle:
            self.assertEqual(handle.read(), kept)
