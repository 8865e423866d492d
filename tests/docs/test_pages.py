"""The examples of README.md and docs/*.md: the rules of the runner (tests/support/docs.py), and that
every page has a module of its own here (tests/docs/test_page_<page>.py) whose examples run."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest

from tests.support.docs import ROOT, RUN, SHELL, Workspace, doc_files, page_module, parse_blocks


class TestDocs(unittest.TestCase):
    def test_every_page_has_its_module(self) -> None:
        for path in doc_files():
            name = page_module(path)
            with self.subTest(page=os.path.relpath(path, ROOT)):
                self.assertTrue(os.path.exists(os.path.join(ROOT, "tests", "docs", name + ".py")), name)

    def test_the_docs_exist_and_hold_examples(self) -> None:
        files = doc_files()
        self.assertTrue(os.path.exists(files[0]))
        self.assertGreaterEqual(len(files), 2, "no docs/*.md found")
        blocks = [b for path in files for b in parse_blocks(path)]
        self.assertTrue(any(b.lang == "python" and not b.skipped for b in blocks), "no python block found")
        self.assertTrue(any(b.lang in SHELL and not b.skipped for b in blocks), "no shell block found")

    def test_the_marker_rules_are_enforced(self) -> None:
        folder = tempfile.mkdtemp(prefix="agentloop-docs-")
        self.addCleanup(shutil.rmtree, folder, True)
        path = os.path.join(folder, "x.md")
        cases = [
            ("<!-- contine -->\n```python\npass\n```\n", "unknown marker"),
            ("<!-- needs: real account -->\n```sh\nagentloop run\n```\n", "# needs"),
            ("<!-- output -->\n```text\n1\n```\n", "no python block"),
            ("<!-- not run: -->\n```sh\nx\n```\n", "reason"),
            ("```python\npass\n", "unclosed"),
        ]
        for text, reason in cases:
            with self.subTest(reason=reason):
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(text)
                with self.assertRaises(ValueError) as caught:
                    parse_blocks(path)
                self.assertIn(reason, str(caught.exception))

    def test_a_broken_example_fails(self) -> None:
        """The negative control: a block that raises, and one whose output differs, are failures."""
        folder = tempfile.mkdtemp(prefix="agentloop-docs-")
        self.addCleanup(shutil.rmtree, folder, True)
        path = os.path.join(folder, "x.md")
        broken = [
            "```python\nfrom agentloop import verify_file\nassert verify_file('missing.jsonl').ok\n```\n",
            "```python\nprint(6 * 7)\n```\n<!-- output -->\n```text\n41\n```\n",
            "```console\n$ agentloop verify missing.jsonl\nmissing.jsonl: ok\n```\n",
            "```sh\nagentloop verify missing.jsonl\n```\n",
        ]
        for text in broken:
            with self.subTest(text=text):
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(text)
                workspace = Workspace()
                try:
                    blocks = [b for b in parse_blocks(path) if b.lang in RUN]
                    self.assertEqual(len(blocks), 1)
                    with self.assertRaises(AssertionError):
                        workspace.run(blocks[0])
                finally:
                    workspace.close()


if __name__ == "__main__":
    unittest.main()
