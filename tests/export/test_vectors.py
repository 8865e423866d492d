"""The exporters against the hand-checked vectors of tests/vectors/export/ (README.md there).

Each expected file must be written again byte for byte from its transcript;
the transcripts must be the ones demo.py and the fixtures write; make.py
must rebuild the folder.
"""

from __future__ import annotations

import filecmp
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from agentloop.export import inspect_json, otel_json, read_batch, read_run
from tests.export import fixtures

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "export")
ROOT = os.path.dirname(os.path.dirname(HERE))
_spec = importlib.util.spec_from_file_location("export_vectors_make", os.path.join(HERE, "make.py"))
assert _spec is not None and _spec.loader is not None
make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make)  # the vectors' own maker: which files, which options


def _bytes(name: str) -> bytes:
    with open(os.path.join(HERE, name), "rb") as handle:
        return handle.read()


class TestVectors(unittest.TestCase):
    def test_the_folder_holds_every_vector(self) -> None:
        names = set(os.listdir(HERE))
        for name in make.SINGLES:
            for suffix in (".jsonl", ".otlp.json", ".inspect.json"):
                self.assertIn(name + suffix, names)
        self.assertEqual(sum(1 for n in names if n.endswith(".content.otlp.json")), len(make.WITH_CONTENT))
        self.assertGreaterEqual(len(make.SINGLES), 7)

    def test_each_transcript_exports_to_its_expected_bytes(self) -> None:
        for name in make.SINGLES:
            with self.subTest(name):
                run = read_run(os.path.join(HERE, name + ".jsonl"))
                self.assertEqual(otel_json([run]), _bytes(name + ".otlp.json"))
                self.assertEqual(inspect_json([run], dataset=name), _bytes(name + ".inspect.json"))
                if name in make.WITH_CONTENT:
                    self.assertEqual(otel_json([run], include_content=True), _bytes(name + ".content.otlp.json"))

    def test_the_batch_exports_to_its_expected_bytes(self) -> None:
        batch = os.path.join(HERE, "batch")
        runs = read_batch(
            os.path.join(batch, "manifest.jsonl"),
            checkpoint=os.path.join(batch, "manifest.checkpoint"),
            key=_bytes("batch.key"),
        )
        self.assertEqual([r.name for r in runs], ["alpha", "beta", "gamma", "delta"])
        self.assertEqual(otel_json(runs, start_ns=make.BATCH_START * 10**9), _bytes("batch.otlp.json"))
        self.assertEqual(inspect_json(runs, dataset="batch", start=make.BATCH_START), _bytes("batch.inspect.json"))

    def test_the_demo_transcripts_are_the_vectors_inputs(self) -> None:
        folder = tempfile.mkdtemp(prefix="agentloop-test-")
        self.addCleanup(shutil.rmtree, folder, True)
        for name, path in fixtures.demo_runs(folder).items():
            with self.subTest(name), open(path, "rb") as handle:
                self.assertEqual(handle.read(), _bytes(name + ".jsonl"))

    def test_make_py_rebuilds_the_folder_byte_for_byte(self) -> None:
        out = tempfile.mkdtemp(prefix="agentloop-test-")
        self.addCleanup(shutil.rmtree, out, True)
        subprocess.run(
            [sys.executable, os.path.join(HERE, "make.py"), "--out", out],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        kept = sorted(n for n in os.listdir(HERE) if n not in ("make.py", "README.md", "__pycache__"))
        self.assertEqual(sorted(os.listdir(out)), kept)
        self.assertEqual(
            sorted(os.listdir(os.path.join(out, "batch"))), sorted(os.listdir(os.path.join(HERE, "batch")))
        )
        for name in kept + ["batch/" + n for n in os.listdir(os.path.join(HERE, "batch"))]:
            if name != "batch":
                self.assertTrue(filecmp.cmp(os.path.join(out, name), os.path.join(HERE, name), shallow=False), name)


if __name__ == "__main__":
    unittest.main()
