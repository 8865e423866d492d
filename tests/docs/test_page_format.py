"""Every example of docs/format.md runs and prints what it says (tests/support/docs.py)."""

from __future__ import annotations

import unittest

from tests.support import docs


class TestFormatPage(docs.DocPageCase):
    page = "docs/format.md"


if __name__ == "__main__":
    unittest.main()
