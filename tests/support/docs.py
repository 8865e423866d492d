"""Every example in README.md and docs/*.md runs, and prints what it says.

The fenced blocks of each file run in order, in one fresh temporary working
folder per file (holding a copy of ``demo.py``), with the repository on
``PYTHONPATH`` and ``python3`` / ``agentloop`` on ``PATH`` meaning this
Python and ``python3 -m agentloop``:

* ```` ```python ```` -- executed, each in a fresh namespace;
* ```` ```sh ```` / ```` ```bash ```` -- run by ``bash`` with ``set -e``:
  every command must succeed;
* ```` ```console ```` -- ``$ `` lines are commands (a line ending in ``\\``
  continues on the next), the other lines are their output, stdout and
  stderr together, compared exactly; a command that exits non-zero is
  followed by ``[exit N]``; a line ``...`` stands for any number of lines,
  and a line ending in ``...`` for any line that starts with what precedes
  it (for values that differ between runs, such as a hash that covers a
  port number);
* other languages (``text``, ``json``) are not run.

The port ``8765`` (in ``127.0.0.1:8765`` and ``--port 8765``) of a block
that runs is replaced by a free port,
so a block may start the stand-in server ``python3 -m tests.support.loopback --port
8765 &`` without clashing with anything.

A marker is an HTML comment on the last non-blank line before a fence
(invisible when rendered); an unknown marker is an error:

* ``<!-- continue -->`` -- a python block that runs in the namespace of the
  python block before it;
* ``<!-- file: NAME -->`` -- the block is also written to ``NAME`` in the
  working folder before it runs (a python block there is then executed too);
* ``<!-- output -->`` -- a ``text`` block holding exactly what the python
  block before it prints;
* ``<!-- loopback -->`` -- the stand-in OpenAI/Anthropic server of
  ``tests/support/loopback.py`` listens on 127.0.0.1:8765 (the free port) while the
  block runs;
* ``<!-- needs: WHAT -->`` -- not run, because it needs something the suite
  cannot have (a paid account); the block's first line must be a visible
  ``# needs ...`` comment saying so;
* ``<!-- not run: REASON -->`` -- not run, for the reason given.

The suite fails when it finds no block at all, when a file has no block
that runs, and when any block fails.
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import traceback
import types
import unittest
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC_PORT = "8765"
RUN = ("python", "sh", "bash", "console")
SHELL = ("sh", "bash", "console")
_FENCE = re.compile(r"^```([A-Za-z0-9_-]*)\s*$")
_MARKER = re.compile(r"^<!--\s*(.*?)\s*-->$")
_PORT = re.compile(r"(?<=127\.0\.0\.1:)8765\b|(?<=--port )8765\b")


def doc_files() -> List[str]:
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def page_module(path: str) -> str:
    """The test module of a page: ``README.md`` -> ``test_page_readme``, ``docs/cli.md`` -> ``test_page_cli``."""
    return "test_page_" + os.path.splitext(os.path.basename(path))[0].lower().replace("-", "_")


@dataclass
class Block:
    path: str
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    marker: str = ""
    output: Optional[str] = None  # for python: what it must print

    @property
    def where(self) -> str:
        return "%s:%d" % (os.path.relpath(self.path, ROOT), self.line)

    @property
    def skipped(self) -> str:
        """Why the block is not run ("" when it is)."""
        if self.marker.startswith("needs:") or self.marker.startswith("not run:"):
            return self.marker
        return ""


def parse_blocks(path: str) -> List[Block]:
    """The fenced blocks of a Markdown file, with their markers; raises ValueError on a bad marker."""
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    blocks: List[Block] = []
    i = 0
    last_text = ""  # the last non-blank line outside a block
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            if lines[i].strip():
                last_text = lines[i].strip()
            i += 1
            continue
        start = i
        i += 1
        body: List[str] = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise ValueError("%s:%d: unclosed fence" % (path, start + 1))
        i += 1
        marked = _MARKER.match(last_text)
        block = Block(path, start + 1, fence.group(1), "\n".join(body) + "\n", marked.group(1) if marked else "")
        last_text = ""
        _check_marker(block, blocks)
        if block.marker == "output":
            python = [b for b in blocks if b.lang == "python"]
            if not python or python[-1].output is not None:
                raise ValueError("%s: an output block with no python block before it" % (block.where,))
            python[-1].output = block.text
        blocks.append(block)
    return blocks


def _check_marker(block: Block, before: List[Block]) -> None:
    marker = block.marker
    if not marker:
        return
    problem = ""
    if marker == "continue":
        if block.lang != "python" or not any(b.lang == "python" for b in before):
            problem = "continue needs a python block after another python block"
    elif marker == "output":
        if block.lang != "text":
            problem = "an output block must be a text block"
    elif marker.startswith("file:"):
        if not marker[5:].strip() or "/" in marker[5:]:
            problem = "file: needs a plain file name"
    elif marker == "loopback":
        if block.lang not in RUN:
            problem = "loopback goes with a block that runs"
    elif marker.startswith("needs:"):
        if not block.text.startswith("# needs"):
            problem = "a block marked needs: must say so on its first line (# needs ...)"
    elif marker.startswith("not run:"):
        if not marker[8:].strip():
            problem = "not run: needs a reason"
    else:
        problem = "unknown marker <!-- %s -->" % (marker,)
    if problem:
        raise ValueError("%s: %s" % (block.where, problem))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def console_script(text: str) -> Tuple[str, List[str]]:
    """A ``console`` block -> (a bash script, the expected output lines)."""
    script: List[str] = []
    expected: List[str] = []
    lines = text.rstrip("\n").split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("$ "):
            command = [lines[i][2:]]
            while command[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                command.append(lines[i])
            script.append("\n".join(command))
            script.append('__rc=$?; if [ "$__rc" -ne 0 ]; then echo "[exit $__rc]"; fi')
        else:
            expected.append(lines[i])
        i += 1
    return "\n".join(script) + "\n", expected


def matches(expected: List[str], actual: List[str]) -> bool:
    """Whether ``actual`` equals ``expected``: a line ``...`` matches any number of lines,
    a line ``PREFIX...`` any line that starts with ``PREFIX``."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[k:]) for k in range(len(actual) + 1))
    if not actual:
        return False
    want, got = expected[0], actual[0]
    same = got.startswith(want[:-3]) if want.endswith("...") else got == want
    return same and matches(expected[1:], actual[1:])


class Workspace:
    """One working folder per documentation file, and the shims its shell blocks use."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="agentloop-docs-")
        self.bin = tempfile.mkdtemp(prefix="agentloop-docs-bin-")
        shutil.copy(os.path.join(ROOT, "demo.py"), self.dir)
        shutil.copytree(os.path.join(ROOT, "bench"), os.path.join(self.dir, "bench"))
        self._shim("python3", 'exec "%s" "$@"\n' % (sys.executable,))
        self._shim("agentloop", 'exec "%s" -m agentloop "$@"\n' % (sys.executable,))
        self.port = str(free_port())
        self.namespace: Optional[Dict[str, object]] = None
        self.modules = set(sys.modules)

    def _shim(self, name: str, body: str) -> None:
        path = os.path.join(self.bin, name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("#!/bin/sh\n" + body)
        os.chmod(path, 0o755)

    def close(self) -> None:
        for name in set(sys.modules) - self.modules:  # modules the blocks imported from the folder
            module = sys.modules.get(name)
            if module is not None and str(getattr(module, "__file__", "") or "").startswith(self.dir):
                del sys.modules[name]
        shutil.rmtree(self.dir, True)
        shutil.rmtree(self.bin, True)

    def env(self) -> Dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
        }
        env["PATH"] = self.bin + os.pathsep + env.get("PATH", "")
        env["PYTHONPATH"] = ROOT + os.pathsep + self.dir
        env["PYTHONUNBUFFERED"] = "1"
        env["NO_COLOR"] = "1"
        return env

    def run(self, block: Block) -> None:
        """Run one block; raise AssertionError saying what went wrong."""
        text = _PORT.sub(self.port, block.text)
        if block.marker.startswith("file:"):
            with open(os.path.join(self.dir, block.marker[5:].strip()), "w", encoding="utf-8") as handle:
                handle.write(block.text)
        server = None
        if block.marker == "loopback":
            from tests.support.loopback import LoopbackServer

            server = LoopbackServer(port=int(self.port)).start()
        try:
            if block.lang == "python":
                self._python(block, text)
            else:
                self._shell(block, text)
        finally:
            if server is not None:
                server.stop()

    def _python(self, block: Block, text: str) -> None:
        if block.marker == "continue" and self.namespace is not None:
            namespace = self.namespace
        else:
            module = types.ModuleType("docblock_%d" % (block.line,))  # dataclasses look their module up
            namespace = module.__dict__
            sys.modules[module.__name__] = module
        self.namespace = namespace
        out = io.StringIO()
        cwd = os.getcwd()
        os.chdir(self.dir)
        sys.path[:0] = [self.dir, ROOT]
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(text, block.where, "exec"), namespace)
        except BaseException:
            raise AssertionError("%s raised:\n%s" % (block.where, traceback.format_exc(limit=-3)))
        finally:
            os.chdir(cwd)
            del sys.path[:2]
        if block.output is not None:
            want = _PORT.sub(self.port, block.output).rstrip("\n").split("\n")
            got = out.getvalue().rstrip("\n").split("\n")
            if not matches(want, [line.rstrip() for line in got]):
                raise AssertionError(
                    "%s printed:\n%s\nthe doc says:\n%s" % (block.where, "\n".join(got), "\n".join(want))
                )

    def _shell(self, block: Block, text: str) -> None:
        if block.lang == "console":
            script, expected = console_script(text)
        else:
            script, expected = "set -e\n" + text, []
        proc = subprocess.Popen(
            ["bash", "-c", script],
            cwd=self.dir,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            raw, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            raw = b""
        finally:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGTERM)  # anything the block left running in the background
            proc.wait()
        output = raw.decode("utf-8", "replace").replace("127.0.0.1:" + self.port, "127.0.0.1:" + DOC_PORT)
        if block.lang != "console":
            if proc.returncode != 0:
                raise AssertionError("%s exited %d:\n%s" % (block.where, proc.returncode, output))
            return
        got = [line.rstrip() for line in output.rstrip("\n").split("\n")] if output.strip() else []
        if not matches([line.rstrip() for line in expected], got):
            raise AssertionError(
                "%s printed:\n%s\nthe doc says:\n%s" % (block.where, "\n".join(got), "\n".join(expected))
            )


class DocPageCase(unittest.TestCase):
    """Every example of one page (``page``, relative to the repository) runs, in order, in one workspace.

    ``tests/docs/test_page_<page>.py`` holds one subclass per page, so that the
    pages run side by side in the gate's shards; ``tests/docs/test_pages.py``
    checks that every page has its module.
    """

    page = ""

    def test_every_example_runs(self) -> None:
        if not self.page:
            self.skipTest("the base class names no page")
        path = os.path.join(ROOT, self.page)
        blocks = parse_blocks(path)
        runnable = [b for b in blocks if b.lang in RUN and not b.skipped]
        self.assertTrue(runnable, "%s has no example that runs" % (path,))
        workspace = Workspace()
        try:
            for block in runnable:
                with self.subTest(block=block.where):
                    workspace.run(block)
        finally:
            workspace.close()
