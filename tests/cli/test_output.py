"""What every command does with its output path (agentloop/cli/output.py ``check_output``): ``-`` is standard
output or refused, never a file named ``-``."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from typing import Tuple

from agentloop.cli.main import main

from tests.support.helpers import TempDir

VALID = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "transcript", "valid.jsonl"
)


class TestDashIsNeverAFile(TempDir):
    def cli(self, *argv: str) -> Tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(list(argv), out=out)
        return status, out.getvalue(), err.getvalue()

    def test_commands_that_write_a_file_refuse_dash(self) -> None:
        cwd = os.getcwd()
        os.chdir(self.dir)
        self.addCleanup(os.chdir, cwd)
        shutil.copy(VALID, "run.jsonl")
        run = [
            "run",
            "--model",
            "tests.support.approval_fixtures:make_model",
            "--task",
            "t",
            "--max-steps",
            "2",
            "--max-tokens",
            "1000",
        ]
        for argv in (
            ["export", "--otel", "run.jsonl", "-o", "-"],
            ["export", "--inspect", "run.jsonl", "-o", "-"],
            ["report", "run.jsonl", "-o", "-"],
            run + ["-o", "-"],
            ["replay", "run.jsonl", "--recorded-tools", "-o", "-"],
        ):
            with self.subTest(argv=argv):
                status, out, err = self.cli(*argv)
                self.assertEqual((status, out), (2, ""), err)
                self.assertIn("-: standard output is not an output of this command: give a file name", err)
                self.assertFalse(os.path.lexists("-"))
