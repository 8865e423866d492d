"""Every example of docs/integrity.md runs and prints what it says (tests/support/docs.py)."""

from __future__ import annotations

import unittest

from tests.support import docs


class TestIntegrityPage(docs.DocPageCase):
    page = "docs/integrity.md"


if __name__ == "__main__":
    unittest.main()
