"""The README's example runs as written and prints what it says."""

from __future__ import annotations

import contextlib
import io
import os
import re

from .helpers import TempDir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TestReadme(TempDir):
    def test_the_usage_example_runs_and_its_output_comment_is_true(self) -> None:
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
            text = handle.read()
        blocks = re.findall(r"```python\n(.*?)```", text, re.S)
        self.assertGreaterEqual(len(blocks), 1)
        source = blocks[0]
        promised = re.search(r"^# (no_tool_calls .*)$", source, re.M)
        self.assertIsNotNone(promised)
        out = io.StringIO()
        cwd = os.getcwd()
        os.chdir(self.dir)
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(source, "README.md", "exec"), {"__name__": "readme"})
        finally:
            os.chdir(cwd)
        assert promised is not None
        self.assertEqual(out.getvalue().strip(), promised.group(1))

    def test_the_typed_function_example_builds_a_tool(self) -> None:
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
            blocks = re.findall(r"```python\n(.*?)```", handle.read(), re.S)
        source = next(block for block in blocks if "@tool" in block)
        import sys
        import types

        module = types.ModuleType("readme_tool")  # dataclasses look their module up
        sys.modules["readme_tool"] = module
        self.addCleanup(sys.modules.pop, "readme_tool", None)
        exec(compile(source, "README.md", "exec"), module.__dict__)
        tools = module.__dict__["tools"]
        self.assertEqual(tools.names, ["forecast"])
        parameters = tools.manifest()[0]["parameters"]
        self.assertEqual(parameters["required"], ["place", "days"])
