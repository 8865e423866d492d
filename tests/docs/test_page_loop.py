"""Every example of docs/loop.md runs and prints what it says (tests/support/docs.py)."""

from __future__ import annotations

import unittest

from tests.support import docs


class TestLoopPage(docs.DocPageCase):
    page = "docs/loop.md"


if __name__ == "__main__":
    unittest.main()
