"""Every ``agentloop.x.y`` name that docs/, the README and the package's docstrings mention exists.

A name is resolved as Python would: the longest prefix that imports as a
module (``importlib.import_module``), then each remaining part as an
attribute (``getattr``).  A docstring's relative Sphinx reference
(``:mod:`.engine```, ``:func:`~.output.visible```) is resolved against the
package of the module it is in.  A module that moves leaves no reference
behind to its old path.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import unittest
from typing import Dict, Iterator, List, Set, Tuple

from agentloop.export.semconv import AGENTLOOP_ATTRIBUTES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: ``agentloop.a.b``, not inside a path (``agentloop/1``), a file name or a longer word.
NAME = re.compile(r"(?<![\w/.-])agentloop(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
#: ``:role:`.name``` or ``:role:`~.name```: a reference relative to the module's package.
RELATIVE = re.compile(r":(?:mod|func|class|meth|data|attr|exc):`~?(\.[A-Za-z_][A-Za-z0-9_.]*)`")


def resolves(name: str) -> bool:
    """Whether ``name`` is a module, or an attribute (of an attribute...) of one."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def _docstrings(path: str) -> Iterator[str]:
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield text


def _module_of(path: str) -> Tuple[str, bool]:
    """The dotted module name of a file of the package, and whether it is a package's ``__init__``."""
    relative = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
    if relative.endswith(".__init__"):
        return relative[: -len(".__init__")], True
    return relative, False


def mentioned() -> Dict[str, Set[str]]:
    """Each name mentioned -> where (files); relative references already made absolute."""
    found: Dict[str, Set[str]] = {}
    pages = [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", name) for name in os.listdir(os.path.join(ROOT, "docs")) if name.endswith(".md")
    )
    for page in pages:
        with open(page, encoding="utf-8") as handle:
            for match in NAME.finditer(handle.read()):
                found.setdefault(match.group(0), set()).add(os.path.relpath(page, ROOT))
    for folder, _, files in os.walk(os.path.join(ROOT, "agentloop")):
        for file in sorted(files):
            if not file.endswith(".py"):
                continue
            path = os.path.join(folder, file)
            module, is_package = _module_of(path)
            package = module if is_package else module.rsplit(".", 1)[0]
            where = os.path.relpath(path, ROOT)
            for text in _docstrings(path):
                for match in NAME.finditer(text):
                    found.setdefault(match.group(0), set()).add(where)
                for match in RELATIVE.finditer(text):
                    found.setdefault(package + match.group(1), set()).add(where)
    return found


#: A file of the checkout named by its path (``agentloop/loop/engine.py``, ``tests/tlog/test_proof.py``).
FILE = re.compile(r"(?<![\w/.-])(?:agentloop|tests|bench|examples)/[\w/.-]*\w\.py\b")


def files_mentioned() -> Dict[str, Set[str]]:
    """Each ``.py`` path the README, the changelog, docs/, the vectors' notes and the docstrings of
    agentloop/, tests/, bench/ and examples/ mention -> where."""
    texts: List[Tuple[str, str]] = []
    pages = ["README.md", "CHANGELOG.md"] + ["docs/" + n for n in sorted(os.listdir(os.path.join(ROOT, "docs")))]
    for folder, _, files in os.walk(os.path.join(ROOT, "tests", "vectors")):
        pages += [os.path.relpath(os.path.join(folder, n), ROOT) for n in sorted(files)]
    for page in (p for p in pages if p.endswith(".md")):
        with open(os.path.join(ROOT, page), encoding="utf-8") as handle:
            texts.append((page, handle.read()))
    for top in ("agentloop", "tests", "bench", "examples"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for file in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(folder, file)
                texts += [(os.path.relpath(path, ROOT), text) for text in _docstrings(path)]
    found: Dict[str, Set[str]] = {}
    for where, text in texts:
        for match in FILE.finditer(text):
            found.setdefault(match.group(0), set()).add(where)
    return found


#: An "issue N" banner: history that belongs in git, not in the package or a test module's docstring.
BANNER = re.compile(r"\bissues? #?[0-9]+", re.IGNORECASE)


def banners() -> List[str]:
    """``file:line: text`` of each banner in agentloop/ (code, comments, docstrings) and in tests' module docstrings."""
    found: List[str] = []
    for top in ("agentloop", "tests"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for file in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(folder, file)
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
                if top == "tests":
                    text = ast.get_docstring(ast.parse(text, path), clean=False) or ""
                for number, line in enumerate(text.splitlines(), 1):
                    if BANNER.search(line):
                        found.append("%s:%d: %s" % (os.path.relpath(path, ROOT), number, line.strip()))
    return found


class TestDocReferences(unittest.TestCase):
    def test_the_resolver_tells_names_that_exist_from_names_that_do_not(self) -> None:
        # the negative control: an old path, a misspelt attribute, a module that never was
        for name in (
            "agentloop.run",
            "agentloop.loop.engine",
            "agentloop.loop.options.RunOptions.from_task_record",
            "agentloop.transcript.writer.TranscriptWriter.append",
        ):
            self.assertTrue(resolves(name), name)
        for name in (
            "agentloop.approval",
            "agentloop.loop.engine.RunOptionz",
            "agentloop.nowhere.at_all",
            "agentloop.run.nothing",
        ):
            self.assertFalse(resolves(name), name)

    def test_every_name_mentioned_exists(self) -> None:
        names = mentioned()
        self.assertGreater(len(names), 100)  # the walk found the docs and the docstrings
        self.assertIn("agentloop.loop.engine", names)
        spans = set(AGENTLOOP_ATTRIBUTES)  # the exporter's span attributes share the namespace; they are data
        self.assertIn("agentloop.record.hash", names)
        missing: List[str] = [
            "%s (in %s)" % (name, ", ".join(sorted(where)))
            for name, where in sorted(names.items())
            if name not in spans and not resolves(name)
        ]
        self.assertEqual(missing, [])

    def test_every_file_mentioned_exists(self) -> None:
        names = files_mentioned()
        self.assertIn("agentloop/transcript/gates.py", names)  # the walk found the docstrings
        self.assertIn("tests/vectors/transcript/make.py", names)  # and the notes beside the vectors
        missing = [
            "%s (in %s)" % (name, ", ".join(sorted(where)))
            for name, where in sorted(names.items())
            if not os.path.isfile(os.path.join(ROOT, name))
        ]
        self.assertEqual(missing, [])

    def test_no_issue_banners(self) -> None:
        self.assertTrue(BANNER.search("(issue 19, seam 8)") and BANNER.search("issues 19 and 20"))  # the control
        self.assertEqual(banners(), [])


if __name__ == "__main__":
    unittest.main()
