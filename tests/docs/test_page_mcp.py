"""Every example of docs/mcp.md runs and prints what it says (tests/support/docs.py)."""

from __future__ import annotations

import unittest

from tests.support import docs


class TestMcpPage(docs.DocPageCase):
    page = "docs/mcp.md"


if __name__ == "__main__":
    unittest.main()
