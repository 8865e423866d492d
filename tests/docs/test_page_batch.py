"""Every example of docs/batch.md runs and prints what it says (tests/support/docs.py)."""

from __future__ import annotations

import unittest

from tests.support import docs


class TestBatchPage(docs.DocPageCase):
    page = "docs/batch.md"


if __name__ == "__main__":
    unittest.main()
