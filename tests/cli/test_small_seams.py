"""Smaller seams on the command line: each exits with its documented status and says so in
its own words."""

from __future__ import annotations

import contextlib
import io
import os
from typing import Tuple

from agentloop import TranscriptWriter
from agentloop.cli.main import main

from tests.support.helpers import TempDir
from tests.support.runs import Run


class TestSmallSeams(TempDir):
    def cli(self, *argv: str) -> Tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(list(argv), out=out)
        return status, out.getvalue(), err.getvalue()

    def test_repair_on_a_file_locked_by_a_live_writer_exits_2(self) -> None:
        with TranscriptWriter(self.path()) as out:
            out.append("task", Run.task())
            status, text, err = self.cli("repair", self.path())
        self.assertEqual((status, text), (2, ""), err)
        self.assertEqual(err.count("\n"), 1)
        self.assertIn("locked by another writer", err)

    def test_keygen_refuses_a_device_as_its_output(self) -> None:
        if not os.path.exists(os.devnull) or os.name != "posix":
            self.skipTest("no /dev/null")

        def made() -> object:  # what is there beside the device: its files are not this test's to remove
            return [
                os.stat(p).st_mtime_ns if os.path.exists(p) else None
                for p in (os.devnull + ".key", os.devnull + ".pub")
            ]

        before = made()
        status, text, err = self.cli("keygen", "alice", "-o", os.devnull, "--unsafe-pure-python-signer")
        self.assertEqual((status, text), (2, ""), err)
        self.assertIn("is a character device", err)
        self.assertEqual(made(), before)

    def test_a_key_name_error_says_key_once(self) -> None:
        status, _, err = self.cli("keygen", "a b", "-o", self.path("k"), "--unsafe-pure-python-signer")
        self.assertEqual(status, 2)
        self.assertNotIn("key key", err)
        self.assertIn("'a b' is not a key name", err)

    def test_max_output_tokens_0_is_named_as_itself(self) -> None:
        status, _, err = self.cli(
            "run",
            "--model",
            "anthropic:claude-x",
            "--max-output-tokens",
            "0",
            "--task",
            "t",
            "--max-steps",
            "1",
            "--max-tokens",
            "10",
            "-o",
            self.path(),
        )
        self.assertEqual(status, 2)
        self.assertIn("--max-output-tokens: must be a positive int, got 0", err)
        self.assertNotIn("--max-tokens:", err)
        self.assertFalse(os.path.exists(self.path()))
