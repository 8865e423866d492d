"""Every example of docs/performance.md runs and prints what it says (tests/support/docs.py)."""

from __future__ import annotations

import unittest

from tests.support import docs


class TestPerformancePage(docs.DocPageCase):
    page = "docs/performance.md"


if __name__ == "__main__":
    unittest.main()
