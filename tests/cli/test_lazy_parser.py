"""The command line imports a command's module only when that command runs (agentloop/cli/main.py)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from typing import List

from agentloop import ModelReply, ScriptedModel, run

cli_main = importlib.import_module(
    "agentloop.cli.main"
)  # the module (agentloop.cli.main the attribute is the function)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: Layers neither ``agentloop --help`` nor ``agentloop verify`` may load.
HEAVY = (
    "agentloop.models",
    "agentloop.mcp",
    "agentloop.batch",
    "agentloop.loop",
    "agentloop.tools",
    "agentloop.schema",
    "agentloop.cli.models",
    "agentloop.cli.batch",
    "agentloop.cli.approval",
)


def loaded_after(argv: List[str]) -> List[str]:
    """The agentloop modules a fresh interpreter holds after ``main(argv)``."""
    code = (
        "import contextlib, io, json, sys\n"
        "from agentloop.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    try:\n"
        "        status = main(%r)\n"
        "    except SystemExit as exc:\n"
        "        status = exc.code\n"
        "print(json.dumps([status, sorted(m for m in sys.modules if m.startswith('agentloop'))]))\n" % (argv,)
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    status, modules = json.loads(done.stdout)
    return [str(status)] + modules


class TestLazyParser(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentloop-test-")
        cls.transcript = os.path.join(cls.folder, "t.jsonl")
        run("t", ScriptedModel([ModelReply("hi")]), [], transcript=cls.transcript, max_steps=1, max_tokens=10)

    @classmethod
    def tearDownClass(cls) -> None:
        import shutil

        shutil.rmtree(cls.folder, True)

    def heavy(self, modules: List[str]) -> List[str]:
        return [m for m in modules if m.startswith(HEAVY)]

    def test_help_and_verify_load_no_model_mcp_batch_or_loop_code(self) -> None:
        for argv in (["--help"], ["verify", self.transcript], ["verify", "--json", self.transcript]):
            with self.subTest(argv=argv):
                status, *modules = loaded_after(argv)
                self.assertEqual(status, "0")
                self.assertIn("agentloop.cli.main", modules)
                self.assertEqual(self.heavy(modules), [])
        # the negative control: the commands that need them load them
        status, *modules = loaded_after(["run", "--help"])
        self.assertEqual(status, "0")
        self.assertIn("agentloop.models", self.heavy(modules))
        self.assertIn("agentloop.cli.models", modules)
        status, *modules = loaded_after(
            ["verify", "--manifest", os.path.join(self.folder, "none.jsonl"), self.transcript]
        )
        self.assertIn("agentloop.batch", self.heavy(modules))

    def test_each_module_adds_exactly_its_commands_in_the_listed_order(self) -> None:
        modules = list(dict.fromkeys(module for _, module, _ in cli_main.COMMANDS))
        self.assertEqual(
            modules, ["inspect", "models", "approval", "batch", "anchor", "keys", "tlog", "provenance", "observe"]
        )
        for module in modules:
            with self.subTest(module=module):
                sub = argparse.ArgumentParser().add_subparsers()
                commands = cli_main._Commands(sub)
                importlib.import_module("agentloop.cli." + module).add_commands(commands)  # type: ignore[attr-defined]
                self.assertEqual(commands.added, [name for name, home, _ in cli_main.COMMANDS if home == module])

    def test_every_command_shows_its_own_help(self) -> None:
        for name, _, help_line in cli_main.COMMANDS:
            with self.subTest(name=name):
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    self.assertEqual(cli_main.main([name, "--help"]), 0)
                self.assertTrue(out.getvalue().startswith("usage: agentloop %s " % (name,)), out.getvalue()[:80])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(cli_main.main(["--help"]), 0)
        for name, _, help_line in cli_main.COMMANDS:
            self.assertIn(name, out.getvalue())
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(cli_main.main(["nonsense"]), 2)
        self.assertIn("invalid choice: 'nonsense'", err.getvalue())
