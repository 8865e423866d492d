"""demo.py end to end, and its transcripts pinned byte for byte."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os

import demo
from agentloop import verify_file

from tests.support.helpers import TempDir

# Known answers: the SHA-256 of each demo transcript.  They are the same on
# every Python 3.8-3.13 and every PYTHONHASHSEED, which is what this pins.
# Recompute: python3 demo.py --out DIR && sha256sum DIR/demo-*.jsonl
# (a change to the format, the demo tools or the demo scripts changes them).
PINNED = {
    "demo-answer.jsonl": (5, "1acbc9fe52df3169e14e33274d4d910e9141378ee918ab797aff379ba0a844fc"),
    "demo-recover.jsonl": (11, "4ca06439d80f009a894b230ec552d23854f995a8ddef60c9f4ff80d9413872ea"),
    "demo-budget.jsonl": (9, "e1f2c97507e87425124653a5d83f5789655b051ad26c58504b483b337269ae67"),
    # parallel sync and async tools (issue 12): the same bytes whatever order the calls finish in
    "demo-parallel.jsonl": (11, "efffb586c60af6728b907caf3342da70042bbd8afd98a1a93785adfb3da1f951"),
    # a gated call, a pause for a person, a resume with Approve (issue 13): the inline-approve bytes
    "demo-approval.jsonl": (5, "9692aed10bafdcc1d96b22fdb5d8438faf62c3d8f4e4aeddc3d00851bc54d0a0"),
}


class TestDemo(TempDir):
    def test_demo_writes_five_verified_transcripts_with_pinned_bytes(self) -> None:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = demo.main(["--out", self.dir])
        self.assertEqual(status, 0, out.getvalue())
        self.assertIn("demo: every claim held", out.getvalue())
        self.assertNotIn("[FAILED]", out.getvalue())
        for name, (count, digest) in PINNED.items():
            with self.subTest(name):
                path = os.path.join(self.dir, name)
                verdict = verify_file(path)
                self.assertEqual((verdict.ok, verdict.count, verdict.complete), (True, count, True))
                with open(path, "rb") as handle:
                    self.assertEqual(hashlib.sha256(handle.read()).hexdigest(), digest)

    def test_demo_recover_listing_shows_the_four_outcomes(self) -> None:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            demo.main(["--out", self.dir])
        listing = out.getvalue()
        for line in (
            "  seq=2 multiply ok=False error=\"no tool named 'multiply' (have: add, echo, fail, greet)\"",
            '  seq=4 add      ok=False error="invalid arguments: $.add.a: expected type integer, got str"',
            "  seq=6 fail     ok=False error=\"tool 'fail' raised RuntimeError: the tool is broken on purpose\"",
            '  seq=8 add      ok=True  value={"sum": 42}',
        ):
            self.assertIn(line + "\n", listing)
