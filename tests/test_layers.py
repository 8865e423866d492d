"""The package's import graph: no cycle between modules or between folders,
and no ``_private`` name imported from outside its own folder.

Every ``import`` counts, including those inside functions (a cycle hidden in
a function is still a cycle).  A folder is a subpackage (``agentloop.tools``);
a module directly in ``agentloop/`` is its own node in the folder graph.
"""

from __future__ import annotations

import ast
import os
import unittest
from typing import Dict, Iterator, List, Set, Tuple

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agentloop")
Edge = Tuple[str, str, int, List[str]]  # importer, imported module, line, names


def _modules() -> Dict[str, str]:
    found: Dict[str, str] = {}
    for folder, _, files in os.walk(ROOT):
        for name in files:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, name), os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                found[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(folder, name)
    return found


def _edges(modules: Dict[str, str]) -> Iterator[Edge]:
    for module, path in modules.items():
        is_package = path.endswith("__init__.py")
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "agentloop":
                        yield module, alias.name, node.lineno, []
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.split(".") if is_package else module.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != "agentloop":
                    continue
                names = [alias.name for alias in node.names]
                submodules = [target + "." + n for n in names if target + "." + n in modules]
                for sub in submodules:
                    yield module, sub, node.lineno, []
                rest = [n for n in names if target + "." + n not in modules]
                if rest:
                    yield module, target, node.lineno, rest


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Tarjan's strongly connected components of size > 1 (or a self-loop)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _folder(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])  # agentloop.tools.registry -> agentloop.tools; agentloop.loop -> itself


class TestLayers(unittest.TestCase):
    modules: Dict[str, str]
    edges: List[Edge]

    @classmethod
    def setUpClass(cls) -> None:  # parsed once: every test only reads the graph
        cls.modules = _modules()
        cls.edges = list(_edges(cls.modules))

    def test_the_walk_finds_the_package(self) -> None:
        self.assertGreater(len(self.modules), 20)
        self.assertGreater(len(self.edges), 50)
        self.assertIn(("agentloop.loop.engine", "agentloop.transcript.writer"), {(a, b) for a, b, _, _ in self.edges})

    def test_no_cycle_between_modules(self) -> None:
        graph: Dict[str, Set[str]] = {}
        for a, b, _, _ in self.edges:
            graph.setdefault(a, set()).add(b)
        self.assertEqual(_cycles(graph), [])

    def test_no_cycle_between_folders(self) -> None:
        graph: Dict[str, Set[str]] = {}
        for a, b, _, _ in self.edges:
            if a != "agentloop" and _folder(a) != _folder(b):  # the package's face re-exports everything
                graph.setdefault(_folder(a), set()).add(_folder(b))
        self.assertEqual(_cycles(graph), [])

    def _home(self, module: str) -> str:
        """Where a module's ``_private`` names may be used: its folder, or itself for a module loose in the root."""
        if module in self.modules and self.modules[module].endswith("__init__.py"):
            return module
        folder = module.rsplit(".", 1)[0]
        return module if folder == "agentloop" else folder

    def test_no_private_name_from_another_folder(self) -> None:
        bad = []
        for a, b, line, names in self.edges:
            for name in names:
                if name.startswith("_") and not name.startswith("__") and self._home(a) != self._home(b):
                    bad.append("%s:%d imports %s from %s" % (a, line, name, b))
        self.assertEqual(bad, [])

    def test_a_private_name_is_private_to_its_folder(self) -> None:  # the rule's negative controls
        self.assertEqual(self._home("agentloop.loop.resume"), self._home("agentloop.loop.engine"))
        self.assertNotEqual(self._home("agentloop.messages"), self._home("agentloop.canonical"))
        self.assertNotEqual(self._home("agentloop.loop.engine"), self._home("agentloop.models.replay"))

    def test_the_cycle_finder_finds_a_cycle(self) -> None:  # the negative control, kept
        self.assertEqual(_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}), [["a", "b", "c"]])


if __name__ == "__main__":
    unittest.main()
