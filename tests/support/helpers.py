"""Shared fixtures: a temporary folder per test and the demo tools."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import unittest
from typing import Any, Dict, List

from agentloop import ModelReply, RunResult, ScriptedModel, ToolCall, run
from demo import demo_tools, recover_model

__all__ = [
    "TempDir",
    "demo_tools",
    "recover_model",
    "read_records",
    "read_lines",
    "replace_file",
    "ModelReply",
    "ToolCall",
]


def read_lines(path: str) -> List[bytes]:
    with open(path, "rb") as handle:
        return handle.read().splitlines(keepends=True)


def replace_file(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` as a new file, removing what is there first.

    For loops that write thousands of cases under one name: opening a file
    that holds data with ``"wb"`` truncates it, and ext4 then starts writing
    the new data out when it is closed (its ``auto_da_alloc`` safeguard for
    replaced files), 1-2 ms of waiting each time; a new file costs none.
    """
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
    with open(path, "wb") as handle:
        handle.write(data)


def read_records(path: str) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in read_lines(path)]


class TempDir(unittest.TestCase):
    """A test case with a fresh folder in ``self.dir`` and a ``path()`` helper."""

    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="agentloop-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def path(self, name: str = "t.jsonl") -> str:
        return os.path.join(self.dir, name)

    def write_bytes(self, data: bytes, name: str = "m.jsonl") -> str:
        target = self.path(name)
        with open(target, "wb") as handle:
            handle.write(data)
        return target

    def recover_run(self, name: str = "t.jsonl") -> RunResult:
        return run(
            "What is 6 * 7?", recover_model(), demo_tools(), transcript=self.path(name), max_steps=8, max_tokens=2000
        )

    def scripted_run(self, replies: List[Any], name: str = "t.jsonl", **budgets: Any) -> RunResult:
        budgets.setdefault("max_steps", 8)
        budgets.setdefault("max_tokens", 10_000)
        return run("task", ScriptedModel(replies), demo_tools(), transcript=self.path(name), **budgets)
