"""The transcript vectors in tests/vectors/transcript/ get their expected verdicts.

Each ``NAME.expect.json`` names a transcript, how to verify it and the
verdict (see that folder's README.md): ``ok``, ``records``, ``head``,
``complete``, every fault, and, for a verification stopped by
``too_many_faults``, how much of the file it left unexamined.  The loader fails when it finds no
vector, every kind in ``agentloop.FAULT_KINDS`` must have one, and
``make.py`` must rebuild the folder byte for byte.
"""

from __future__ import annotations

import filecmp
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from typing import Any, Dict, List

from agentloop import FAULT_KINDS, VerifyResult, verify_checkpoint, verify_file
from agentloop.transcript.format import MAX_FAULTS

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "transcript")


def load_vectors() -> List[Dict[str, Any]]:
    vectors = []
    for path in sorted(glob.glob(os.path.join(HERE, "*.expect.json"))):
        with open(path, encoding="utf-8") as handle:
            expect: Dict[str, Any] = json.load(handle)
        expect["name"] = os.path.basename(path)[: -len(".expect.json")]
        vectors.append(expect)
    return vectors


def verdict_of(expect: Dict[str, Any]) -> VerifyResult:
    how = expect["verify"]
    unknown = set(how) - {
        "expect_count",
        "expect_head",
        "require_complete",
        "max_faults",
        "checkpoint",
        "exact",
        "key_file",
    }
    if unknown:
        raise AssertionError("%s: unknown verify options %s" % (expect["name"], sorted(unknown)))
    path = os.path.join(HERE, expect["transcript"])
    if "checkpoint" not in how:
        return verify_file(
            path,
            expect_count=how.get("expect_count"),
            expect_head=how.get("expect_head"),
            require_complete=how.get("require_complete", False),
            max_faults=how.get("max_faults", MAX_FAULTS),
        )
    key = None
    if "key_file" in how:
        with open(os.path.join(HERE, how["key_file"]), "rb") as handle:
            key = handle.read()
    return verify_checkpoint(path, os.path.join(HERE, how["checkpoint"]), key=key, exact=how.get("exact", False))


class TestTranscriptVectors(unittest.TestCase):
    def test_the_folder_holds_vectors(self) -> None:
        self.assertGreaterEqual(len(load_vectors()), len(FAULT_KINDS) + 1, "no transcript vectors found in %s" % HERE)

    def test_each_vector_gets_its_expected_verdict(self) -> None:
        vectors = load_vectors()
        self.assertTrue(vectors)
        for expect in vectors:
            with self.subTest(vector=expect["name"]):
                result = verdict_of(expect)
                got = {
                    "ok": result.ok,
                    "records": result.count,
                    "head": result.head,
                    "complete": result.complete,
                    "faults": [{"kind": f.kind, "index": f.index, "line": f.line} for f in result.faults],
                }
                if "unexamined_lines" in expect:  # only a verification stopped by too_many_faults
                    got["unexamined_lines"] = result.unexamined_lines
                    got["unexamined_bytes"] = result.unexamined_bytes
                else:
                    self.assertEqual((result.unexamined_lines, result.unexamined_bytes), (0, 0))
                want = {name: expect[name] for name in got}
                self.assertEqual(got, want, [str(f) for f in result.faults])
                self.assertEqual(expect["ok"], not expect["faults"])

    def test_every_fault_kind_has_a_vector_named_after_it(self) -> None:
        vectors = {v["name"]: v for v in load_vectors()}
        for kind in FAULT_KINDS:
            with self.subTest(kind=kind):
                self.assertIn(kind, sorted(vectors))
                kinds = [f["kind"] for f in vectors[kind]["faults"]]
                # too_many_faults comes after the max_faults faults it stops at; every other kind comes first.
                self.assertEqual(kinds[-1] if kind == "too_many_faults" else kinds[0], kind)
        valid = [name for name in vectors if name.startswith("valid")]
        self.assertGreaterEqual(len(valid), 1)
        for name in valid:
            self.assertTrue(vectors[name]["ok"], name)

    def test_make_py_rebuilds_the_folder_byte_for_byte(self) -> None:
        out = tempfile.mkdtemp(prefix="agentloop-vectors-")
        self.addCleanup(shutil.rmtree, out, True)
        proc = subprocess.run(
            [sys.executable, os.path.join(HERE, "make.py"), "--out", out],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
        )
        self.assertEqual(proc.returncode, 0, proc.stdout)
        made = sorted(os.listdir(out))
        kept = sorted(n for n in os.listdir(HERE) if n not in ("make.py", "README.md", "__pycache__"))
        self.assertEqual(made, kept)
        _, mismatch, errors = filecmp.cmpfiles(out, HERE, made, shallow=False)
        self.assertEqual((mismatch, errors), ([], []))


if __name__ == "__main__":
    unittest.main()
