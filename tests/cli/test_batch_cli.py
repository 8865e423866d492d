"""``agentloop batch`` and ``agentloop verify --manifest``, through ``main([...])``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import unittest
from typing import List, Tuple

from agentloop.cli import main

from tests.support.helpers import TempDir

MODEL = "tests.support.batch_models:factory"
TOOLS = "tests.support.batch_models:tools"


class TestBatchCommand(TempDir):
    def setUp(self) -> None:
        super().setUp()
        self.tasks = self.path("tasks.jsonl")
        with open(self.tasks, "w", encoding="utf-8") as handle:
            for i in range(5):
                handle.write(
                    json.dumps({"name": "t%d" % i, "task": "task %d" % i, "max_steps": 5, "max_tokens": 1000}) + "\n"
                )
        self.key = self.path("key")
        with open(self.key, "wb") as handle:
            handle.write(b"0123456789abcdef0123456789abcdef\n")
        self.out = self.path("runs")

    def cli(self, *argv: str) -> Tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(list(argv), out)
        return status, out.getvalue(), err.getvalue()

    def files(self) -> List[str]:
        return sorted(os.path.join(self.out, n) for n in os.listdir(self.out) if n.endswith(".jsonl"))

    def verify(self, *extra: str) -> Tuple[int, str, str]:
        manifest = os.path.join(self.out, "manifest.jsonl")
        return self.cli("verify", *self.files(), "--manifest", manifest, *extra)

    def test_batch_then_verify_names_an_altered_missing_and_extra_run(self) -> None:
        status, out, err = self.cli(
            "batch",
            self.tasks,
            "--model",
            MODEL,
            "--tools",
            TOOLS,
            "--out",
            self.out,
            "--workers",
            "2",
            "--sign",
            self.key,
        )
        self.assertEqual((status, err), (0, ""))
        self.assertIn("runs: 5, ok 5, failed 0", out)
        self.assertIn("checkpoint: %s (signed)" % os.path.join(self.out, "manifest.checkpoint"), out)
        self.assertNotIn("\r", out)  # no live line off a terminal
        checkpoint = os.path.join(self.out, "manifest.checkpoint")
        # negative control first: the untouched batch verifies, in 2 processes, signature and all
        status, out, err = self.verify("--checkpoint", checkpoint, "--key-file", self.key, "--workers", "2")
        self.assertEqual((status, err), (0, ""), out)
        self.assertIn("ok: ", out)
        self.assertIn("5 of 5 transcripts match the ledger (5 runs)", out)

        with open(os.path.join(self.out, "t2.jsonl"), "r+b") as handle:  # one byte of a tool result
            data = handle.read()
            at = data.index(b'"value":') + len(b'"value":')
            handle.seek(at)
            handle.write(b"9" if data[at : at + 1] != b"9" else b"8")
        os.unlink(os.path.join(self.out, "t4.jsonl"))
        with open(os.path.join(self.out, "zz\x1b[31m.jsonl"), "wb") as handle:
            handle.write(b"{}\n")
        status, out, err = self.verify("--workers", "2")
        self.assertEqual(status, 1)
        self.assertIn('ALTERED "t2": does not verify: ', out)
        self.assertIn('MISSING "t4"', out)
        self.assertIn("EXTRA ", out)
        self.assertNotIn("\x1b", out)  # a file name cannot drive the terminal
        self.assertIn("FAILED: ", out)
        status, out, _ = self.cli(
            "verify",
            os.path.join(self.out, "t2.jsonl"),
            "--manifest",
            os.path.join(self.out, "manifest.jsonl"),
            "--json",
        )
        verdict = json.loads(out)
        self.assertEqual([a["name"] for a in verdict["altered"]], ["t2"])
        t0 = os.path.join(self.out, "t0.jsonl")
        status, out, _ = self.cli("verify", t0, t0, "--manifest", os.path.join(self.out, "manifest.jsonl"))
        self.assertEqual(status, 1)
        self.assertIn(
            "REPEATED %s: names the same run as %s, given before it\n" % (json.dumps(t0), json.dumps(t0)), out
        )
        self.assertNotIn("EXTRA", out)

    def test_a_checkpoint_under_another_key_fails_and_resume_reruns_nothing_that_is_there(self) -> None:
        self.assertEqual(
            self.cli("batch", self.tasks, "--model", MODEL, "--tools", TOOLS, "--out", self.out, "--sign", self.key)[0],
            0,
        )
        other = self.path("other")
        with open(other, "wb") as handle:
            handle.write(b"another key that is long enough!")
        status, out, _ = self.verify("--checkpoint", os.path.join(self.out, "manifest.checkpoint"), "--key-file", other)
        self.assertEqual(status, 1)
        self.assertIn("FAILED: bad signature", out)
        status, out, err = self.cli(
            "batch", self.tasks, "--model", MODEL, "--tools", TOOLS, "--out", self.out, "--resume", "--threads", "2"
        )
        self.assertEqual(status, 2, out)  # the earlier checkpoint is signed: a resume checks it with the same key
        self.assertIn("resume with the same key", err)
        status, out, err = self.cli(
            "batch",
            self.tasks,
            "--model",
            MODEL,
            "--tools",
            TOOLS,
            "--out",
            self.out,
            "--resume",
            "--threads",
            "2",
            "--sign",
            self.key,
        )
        self.assertEqual(status, 0, err)
        self.assertEqual(out.count("ok (resumed)"), 5)
        self.assertIn("ledger: extends the earlier manifest", out)

    def test_a_terminal_gets_a_live_progress_line(self) -> None:
        class Tty(io.StringIO):
            def isatty(self) -> bool:
                return True

        out = Tty()
        self.assertEqual(main(["batch", self.tasks, "--model", MODEL, "--tools", TOOLS, "--out", self.out], out), 0)
        text = out.getvalue()
        self.assertIn("1/5 done | 0 failed | 19 tokens | ", text)
        self.assertIn("5/5 done | 0 failed | 95 tokens | ", text)
        self.assertEqual(text.count("\r"), 5)  # one per run, each written over the last

    def test_usage_errors_are_one_line_and_exit_2(self) -> None:
        with open(self.path("bad.jsonl"), "w", encoding="utf-8") as handle:
            handle.write('{"name": "a", "task": "t", "max_steps": 1}\n')
        cases = [
            (
                ["batch", self.path("bad.jsonl"), "--model", MODEL, "--tools", TOOLS, "--out", self.out],
                "bad.jsonl:1: missing max_tokens",
            ),
            (
                ["batch", self.tasks, "--model", "nowhere:f", "--tools", TOOLS, "--out", self.out],
                "cannot import nowhere",
            ),
            (
                [
                    "batch",
                    self.tasks,
                    "--model",
                    MODEL,
                    "--tools",
                    TOOLS,
                    "--out",
                    self.out,
                    "--executor",
                    "dask://127.0.0.1:1",
                ],
                "",
            ),
            (["verify", self.tasks, "--manifest", self.path("none.jsonl")], "none.jsonl: cannot be read"),
            (["verify", self.tasks, "--manifest", self.tasks], "manifest line 1: "),
        ]
        for argv, message in cases:
            with self.subTest(argv[:3]):
                status, out, err = self.cli(*argv)
                if argv[-1].startswith("dask://") and status == 2 and "distributed" in err:
                    continue  # dask is not installed here: the message says so
                if argv[-1].startswith("dask://"):
                    self.assertNotEqual(status, 0)
                    continue
                self.assertEqual(status, 2, out + err)
                self.assertIn(message, err)
                self.assertEqual(err.count("\n"), 1, err)
                self.assertNotIn("Traceback", err)


class TestManifestTrust(unittest.TestCase):
    """``verify --manifest --checkpoint`` honours --trust and --require like a transcript's checkpoint does."""

    def test_an_unsigned_or_hmac_only_ledger_checkpoint_fails_a_required_public_key(self) -> None:
        import contextlib
        import io
        import tempfile

        from agentloop.batch import RunSpec, run_many
        from agentloop.cli import main
        from agentloop.signing import generate_key

        def cli(*argv: str) -> "tuple[int, str]":
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stderr(err):
                status = main(list(argv), out=out)
            return status, out.getvalue() + err.getvalue()

        with tempfile.TemporaryDirectory() as tmp:
            skey, vkey = generate_key("alice", allow_slow_unsafe_signer=True)
            with open(os.path.join(tmp, "alice.pub"), "w") as handle:
                handle.write(vkey + "\n")
            out = os.path.join(tmp, "out")
            result = run_many(
                [RunSpec("a", "t", 5, 10000)],
                model="tests.support.batch_models:factory",
                tools="tests.support.batch_models:tools",
                out_dir=out,
                key=b"k" * 32,
                checkpoint=os.path.join(out, "manifest.checkpoint"),
            )
            ckpt = os.path.join(out, "manifest.checkpoint")
            with open(ckpt, "rb") as handle:
                unsigned = b"".join(handle.readlines()[:4])  # the text and the blank line: no signature
            bare = os.path.join(tmp, "bare.checkpoint")
            with open(bare, "wb") as handle:
                handle.write(unsigned)
            files = [os.path.join(out, "a.jsonl"), "--manifest", result.manifest]
            for checkpoint in (ckpt, bare):  # HMAC-only, and no signature at all: alice never signed
                status, text = cli(
                    "verify",
                    *files,
                    "--checkpoint",
                    checkpoint,
                    "--trust",
                    os.path.join(tmp, "alice.pub"),
                    "--require",
                    "alice",
                )
                self.assertEqual(status, 1, text)
                self.assertIn("FAILED", text)
            status, text = cli("verify", *files, "--checkpoint", bare)
            self.assertEqual(status, 0, text)
            self.assertIn("signature was not checked", text)
