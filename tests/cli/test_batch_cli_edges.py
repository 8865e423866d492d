"""``agentloop batch`` and ``verify --manifest`` options beyond the main path, in-process: executors named by
reference, ``--sign`` key files, options that do not go with a manifest, and the ``--json`` audit."""

from __future__ import annotations

import io
import json
import os
import sys
import unittest
from unittest import mock

from agentloop.cli import main
from agentloop.signing.backend import CRYPTOGRAPHY_MODULE

from tests.cli import test_batch_cli as base  # not the class: unittest would run its tests here again
from tests.cli.test_batch_cli import MODEL, TOOLS

E = "tests.support.cli_edges_modules:"


class BatchEdges(base.TestBatchCommand):
    """The fixture of tests/cli/test_batch_cli.py (five tasks, an HMAC key, ``self.out``); its tests are not rerun."""

    def batch(self, *extra: str):  # type: ignore[no-untyped-def]
        return self.cli("batch", self.tasks, "--model", MODEL, "--tools", TOOLS, "--out", self.out, *extra)


for _name in [n for n in vars(base.TestBatchCommand) if n.startswith("test_")]:
    setattr(BatchEdges, _name, None)  # inherit the fixture, not the tests


class TestExecutors(BatchEdges):
    def test_an_executor_named_by_reference_runs_the_batch(self) -> None:
        status, out, err = self.batch("--executor", E + "two_threads")
        self.assertEqual((status, err), (0, ""), out)
        self.assertIn("runs: 5, ok 5, failed 0", out.splitlines())
        self.assertEqual(self.verify()[0], 0)

    def test_threads_run_the_batch(self) -> None:
        status, out, _ = self.batch("--threads", "2")
        self.assertEqual(status, 0)
        self.assertIn("stops: no_tool_calls 5", out.splitlines())

    def test_a_reference_that_is_not_an_executor_is_refused_before_any_run(self) -> None:
        status, out, err = self.batch("--executor", E + "not_an_executor")
        self.assertEqual((status, out), (2, ""))
        self.assertEqual(
            err,
            "agentloop batch: error: --executor: %snot_an_executor did not give a concurrent.futures.Executor\n" % (E,),
        )
        self.assertFalse(os.path.exists(os.path.join(self.out, "manifest.jsonl")))


class TestSignOption(BatchEdges):
    def test_an_unreadable_key_file_is_refused(self) -> None:
        status, out, err = self.batch("--sign", self.path("absent.key"))
        self.assertEqual((status, out), (2, ""))
        self.assertEqual(
            err,
            "agentloop batch: error: --sign: cannot read %s: No such file or directory\n" % (self.path("absent.key"),),
        )

    def test_an_ed25519_key_signs_the_ledger_checkpoint(self) -> None:
        here = os.getcwd()
        os.chdir(self.dir)
        try:
            self.assertEqual(main(["keygen", "ledger", "--unsafe-pure-python-signer"], io.StringIO()), 0)
        finally:
            os.chdir(here)
        with mock.patch.dict(sys.modules, {CRYPTOGRAPHY_MODULE: None}):
            status, out, err = self.batch("--sign", self.path("ledger.key"))
        self.assertEqual((status, out), (2, ""))
        self.assertEqual(
            err,
            "agentloop batch: error: --sign: signing with an Ed25519 key needs the 'cryptography' package "
            "(pip install agentloop[sign]); "
            "--unsafe-pure-python-signer signs with the slow pure-Python signer instead\n",
        )
        status, out, err = self.batch("--sign", self.path("ledger.key"), "--unsafe-pure-python-signer")
        self.assertEqual((status, err), (0, ""), out)
        self.assertIn("checkpoint: %s (signed)" % (os.path.join(self.out, "manifest.checkpoint"),), out.splitlines())
        status, out, _ = self.verify(
            "--checkpoint",
            os.path.join(self.out, "manifest.checkpoint"),
            "--trust",
            self.path("ledger.pub"),
            "--require",
            "ledger",
        )
        self.assertEqual(status, 0, out)


class TestVerifyManifestOptions(BatchEdges):
    def setUp(self) -> None:
        super().setUp()
        self.assertEqual(self.batch("--sign", self.key)[0], 0)

    def test_options_for_one_transcript_are_refused(self) -> None:
        head = "0" * 64
        for extra, message in [
            (
                ("--exact", "--checkpoint", self.key),
                "--manifest: --since and --exact are for one transcript's checkpoint",
            ),
            (("--expect-head", head), "--manifest: --expect-count/--expect-head are for one transcript"),
            (("--key-file", self.key), "--key-file/--key-env/--trust: need --checkpoint (the manifest's checkpoint)"),
        ]:
            with self.subTest(extra):
                status, out, err = self.cli(
                    "verify", self.files()[0], "--manifest", os.path.join(self.out, "manifest.jsonl"), *extra
                )
                self.assertEqual((status, out), (2, ""))
                self.assertEqual(err, "agentloop verify: error: %s\n" % (message,))

    def test_json_names_every_run_and_the_checkpoint_verdict(self) -> None:
        manifest = os.path.join(self.out, "manifest.jsonl")
        files = [f for f in self.files() if os.path.basename(f) != "t0.jsonl"]
        status, out, _ = self.cli(
            "verify",
            *files,
            "--manifest",
            manifest,
            "--json",
            "--checkpoint",
            os.path.join(self.out, "manifest.checkpoint"),
            "--key-file",
            self.key,
        )
        self.assertEqual(status, 1)
        report = json.loads(out)
        self.assertEqual(
            (report["ok"], report["runs"], report["verified"], report["missing"], report["checkpoint"]),
            (False, 5, 4, ["t0"], ""),
        )
        status, out, _ = self.verify("--checkpoint", os.path.join(self.out, "manifest.checkpoint"))
        self.assertEqual(status, 0)
        self.assertIn(
            "note: the checkpoint's signature was not checked (no --trust or --key-file/--key-env)", out.splitlines()
        )


if __name__ == "__main__":
    unittest.main()
