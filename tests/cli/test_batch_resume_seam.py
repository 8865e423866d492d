"""``batch --resume`` never launders an edited transcript, through ``main([...])``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from typing import List, Tuple

from agentloop.cli import main

from tests.support.helpers import TempDir, read_lines
from tests.transcript.test_anchor import forge

MODEL = "tests.support.batch_models:factory"
TOOLS = "tests.support.batch_models:tools"


class BatchSeamCase(TempDir):
    def setUp(self) -> None:
        super().setUp()
        self.tasks = self.path("tasks.jsonl")
        with open(self.tasks, "w", encoding="utf-8") as handle:
            for name in ("a", "b", "c"):
                handle.write(
                    json.dumps({"name": name, "task": "task " + name, "max_steps": 5, "max_tokens": 1000}) + "\n"
                )
        self.key = self.write_bytes(b"0123456789abcdef0123456789abcdef\n", "key")
        self.out = self.path("runs")
        status, out, err = self.cli(
            "batch", self.tasks, "--model", MODEL, "--tools", TOOLS, "--out", self.out, "--sign", self.key
        )
        self.assertEqual(status, 0, out + err)
        self.ledger = self.bytes("manifest.jsonl")
        self.note = self.bytes("manifest.checkpoint")

    def cli(self, *argv: str) -> Tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(list(argv), out)
        return status, out.getvalue(), err.getvalue()

    def bytes(self, name: str) -> bytes:
        with open(os.path.join(self.out, name), "rb") as handle:
            return handle.read()

    def resume(self) -> Tuple[int, str, str]:
        return self.cli(
            "batch", self.tasks, "--model", MODEL, "--tools", TOOLS, "--out", self.out, "--resume", "--sign", self.key
        )

    def check(self) -> Tuple[int, str, str]:
        files: List[str] = [os.path.join(self.out, n + ".jsonl") for n in ("a", "b", "c")]
        return self.cli(
            "verify",
            *files,
            "--manifest",
            os.path.join(self.out, "manifest.jsonl"),
            "--checkpoint",
            os.path.join(self.out, "manifest.checkpoint"),
            "--key-file",
            self.key,
        )

    def assert_refused(self, edited: bytes) -> None:
        status, out, err = self.resume()
        self.assertEqual(status, 1, out + err)
        self.assertIn('ALTERED "b": ', out)
        self.assertNotIn("ok (resumed)", out)
        self.assertEqual((self.bytes("manifest.jsonl"), self.bytes("manifest.checkpoint")), (self.ledger, self.note))
        self.assertEqual(self.bytes("b.jsonl"), edited)  # never overwritten
        status, out, _ = self.check()
        self.assertEqual(status, 1, out)
        self.assertIn('ALTERED "b"', out)
        self.assertIn("2 of 3 transcripts match", out)


class TestBatchResumeSeam(BatchSeamCase):
    def test_an_edited_transcript_that_verifies_is_altered_and_nothing_is_certified(self) -> None:
        path = os.path.join(self.out, "b.jsonl")
        lines = read_lines(path)
        forged = b"".join(forge(lines, 2, lambda r: r["payload"].update(value={"forged": True})))
        with open(path, "wb") as handle:
            handle.write(forged)
        self.assert_refused(forged)

    def test_another_run_copied_over_it_is_altered_not_run_again(self) -> None:
        shutil.copyfile(os.path.join(self.out, "a.jsonl"), os.path.join(self.out, "b.jsonl"))
        self.assert_refused(self.bytes("a.jsonl"))
        self.assertFalse([n for n in os.listdir(self.out) if n.endswith(".tmp")])  # not run again

    def test_a_ledger_edited_to_match_the_edited_file_fails_its_checkpoint(self) -> None:
        path = os.path.join(self.out, "b.jsonl")
        forged = b"".join(forge(read_lines(path), 2, lambda r: r["payload"].update(value={"forged": True})))
        with open(path, "wb") as handle:
            handle.write(forged)
        import hashlib

        lines = [json.loads(x) for x in self.ledger.splitlines()]
        lines[1]["sha256"] = hashlib.sha256(forged).hexdigest()
        with open(os.path.join(self.out, "manifest.jsonl"), "wb") as handle:
            handle.write(b"".join(json.dumps(x, sort_keys=True, separators=(",", ":")).encode() + b"\n" for x in lines))
        status, out, err = self.resume()
        self.assertEqual(status, 1, out + err)
        self.assertIn("refused: ", out)
        self.assertEqual(self.bytes("manifest.checkpoint"), self.note)

    def test_a_ledger_removed_beside_its_checkpoint_is_refused_and_the_checkpoint_kept(self) -> None:
        path = os.path.join(self.out, "b.jsonl")
        forged = b"".join(forge(read_lines(path), 2, lambda r: r["payload"].update(value={"forged": True})))
        with open(path, "wb") as handle:
            handle.write(forged)
        os.unlink(os.path.join(self.out, "manifest.jsonl"))
        for resume in (True, False):
            argv = ["batch", self.tasks, "--model", MODEL, "--tools", TOOLS, "--out", self.out, "--sign", self.key]
            status, out, err = self.cli(*argv + (["--resume"] if resume else []))
            self.assertEqual(status, 1, out + err)
            self.assertIn("not the ledger it certified", out)
            self.assertEqual(self.bytes("manifest.checkpoint"), self.note)  # never overwritten
            self.assertFalse(os.path.exists(os.path.join(self.out, "manifest.jsonl")))
            self.assertEqual(self.bytes("b.jsonl"), forged)

    def test_an_untouched_batch_resumes_and_its_ledger_extends_the_earlier_one(self) -> None:
        status, out, err = self.resume()
        self.assertEqual(status, 0, out + err)
        self.assertEqual(out.count("ok (resumed)"), 3)
        self.assertIn("ledger: extends the earlier manifest", out)
        self.assertEqual(self.bytes("manifest.jsonl"), self.ledger)


class TestVerifyManifestSeam(BatchSeamCase):
    """``verify --manifest`` (issue 19, seam 7): the ledger on trust is said; a failed run fails as in ``batch``."""

    def manifest(self) -> str:
        return os.path.join(self.out, "manifest.jsonl")

    def test_without_a_checkpoint_it_says_the_ledger_was_taken_on_trust(self) -> None:
        files = [os.path.join(self.out, n + ".jsonl") for n in ("a", "b", "c")]
        status, out, _ = self.cli("verify", *files, "--manifest", self.manifest())
        self.assertEqual(status, 0, out)
        self.assertIn("note: the ledger itself was taken on trust", out)
        status, out, _ = self.check()
        self.assertNotIn("taken on trust", out)

    def test_a_worker_error_line_exits_1_as_batch_does_and_json_names_every_member(self) -> None:
        from agentloop.canonical import canonical_bytes

        lines = [json.loads(x) for x in self.ledger.splitlines()]
        lines[2] = {"error": "BrokenProcessPool", "name": "c", "origin": lines[2]["origin"], "status": "worker_error"}
        with open(self.manifest(), "wb") as handle:
            handle.write(b"".join(canonical_bytes(x) + b"\n" for x in lines))
        files = [os.path.join(self.out, n + ".jsonl") for n in ("a", "b")]
        status, out, _ = self.cli("verify", *files, "--manifest", self.manifest())
        self.assertEqual(status, 1, out)
        self.assertIn('FAILED "c": the run failed in the batch (worker_error: BrokenProcessPool)', out)
        status, out, _ = self.cli("verify", *files, "--manifest", self.manifest(), "--json")
        self.assertEqual(status, 1, out)
        verdict = json.loads(out)
        self.assertEqual(
            sorted(verdict),
            sorted(
                [
                    "manifest",
                    "ok",
                    "runs",
                    "verified",
                    "missing",
                    "extra",
                    "repeated",
                    "altered",
                    "failed",
                    "checkpoint",
                    "ledger_trusted",
                    "signature_checked",
                ]
            ),
        )
        self.assertEqual((verdict["ok"], verdict["ledger_trusted"], verdict["failed"][0]["name"]), (False, True, "c"))
        with open(
            os.path.join(
                os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "batch.md"
            ),
            encoding="utf-8",
        ) as handle:
            doc = handle.read()
        for member in verdict:
            self.assertIn("`%s`" % (member,), doc.split("verify --manifest --json")[1][:4000], member)
