"""The public surface and the stdlib-only rule."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import sysconfig
import unittest
from typing import Dict, Set

import agentloop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROJECT = {"agentloop", "demo", "tests", "check", "bench"}


def is_stdlib(name: str) -> bool:
    """A top-level module name belongs to the standard library."""
    names = getattr(sys, "stdlib_module_names", None)  # Python 3.10+
    if names is not None:
        return name in names
    if name in sys.builtin_module_names:
        return True
    spec = importlib.util.find_spec(name)  # 3.8/3.9: where does it load from?
    if spec is None:
        return False
    origin = spec.origin or ""
    if origin in ("built-in", "frozen"):
        return True
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    real = os.path.realpath(origin)
    return real.startswith(stdlib + os.sep) and "site-packages" not in real


def python_files():  # type: ignore[no-untyped-def]
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("build", "dist", "__pycache__", "venv")]
        for name in files:
            if name.endswith(".py"):
                yield os.path.join(folder, name)


class TestPublicApi(unittest.TestCase):
    def test_every_exported_name_exists(self) -> None:
        for name in agentloop.__all__:
            self.assertTrue(hasattr(agentloop, name), name)
        for name in ("Tool", "ToolRegistry", "ToolCall", "ModelReply", "run", "verify_records", "verify_file"):
            self.assertIn(name, agentloop.__all__)
        self.assertRegex(agentloop.__version__, r"^\d+\.\d+\.\d+$")

    def test_the_face_loads_each_name_on_first_use_from_the_home_its_imports_say(self) -> None:
        # What a type checker reads (the imports under TYPE_CHECKING) and what runs (_HOMES) name the same homes.
        with open(os.path.join(ROOT, "agentloop", "__init__.py"), encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        guarded = [
            node
            for node in tree.body
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        ]
        self.assertEqual(len(guarded), 1)
        imported: Dict[str, Set[str]] = {}
        for node in guarded[0].body:
            assert isinstance(node, ast.ImportFrom)
            imported.setdefault("." * node.level + (node.module or ""), set()).update(a.name for a in node.names)
        homes = {module: set(names) for module, names in agentloop._HOMES}
        self.assertEqual(imported, homes)
        lazy = set().union(*homes.values())
        self.assertEqual(lazy | set(agentloop.errors.__all__) | {"__version__"}, set(agentloop.__all__))
        for name in sorted(lazy):
            module = importlib.import_module(agentloop._HOME[name], "agentloop")
            self.assertIs(getattr(agentloop, name), getattr(module, name), name)
        self.assertIn("run", dir(agentloop))
        with self.assertRaisesRegex(AttributeError, "module 'agentloop' has no attribute 'nothing_here'"):
            agentloop.nothing_here  # type: ignore[attr-defined]  # noqa: B018

    def test_importing_the_package_imports_no_layer(self) -> None:
        code = "import sys, agentloop; print(sorted(m for m in sys.modules if m.startswith('agentloop')))"
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        self.assertEqual(out.strip(), "['agentloop', 'agentloop._interrupt', 'agentloop._version', 'agentloop.errors']")

    def test_the_changelog_says_what_this_version_added(self) -> None:
        with open(os.path.join(ROOT, "CHANGELOG.md"), encoding="utf-8") as handle:
            versions = [line.split()[1] for line in handle if line.startswith("## ")]
        self.assertEqual(versions[0], agentloop.__version__)  # the newest section is this version's
        self.assertEqual(len(versions), len(set(versions)))

    def test_py_typed_ships(self) -> None:
        self.assertTrue(os.path.exists(os.path.join(ROOT, "agentloop", "py.typed")))

    def test_no_third_party_import_anywhere(self) -> None:
        files = list(python_files())
        self.assertGreater(len(files), 10)
        for path in files:
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read(), path)
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for name in names:
                    with self.subTest(path=os.path.relpath(path, ROOT), module=name):
                        top = name.split(".")[0]
                        self.assertTrue(top in PROJECT or is_stdlib(top), "%s is not in the standard library" % top)

    def test_pyproject_declares_no_dependencies_and_the_console_script(self) -> None:
        with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as handle:
            text = handle.read()
        self.assertIn("dependencies = []", text)
        self.assertIn('agentloop = "agentloop.cli:console"', text)
