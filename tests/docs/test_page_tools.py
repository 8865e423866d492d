"""Every example of docs/tools.md runs and prints what it says (tests/support/docs.py)."""

from __future__ import annotations

import unittest

from tests.support import docs


class TestToolsPage(docs.DocPageCase):
    page = "docs/tools.md"


if __name__ == "__main__":
    unittest.main()
