"""Every example of README.md runs and prints what it says (tests/support/docs.py)."""

from __future__ import annotations

import unittest

from tests.support import docs


class TestReadmePage(docs.DocPageCase):
    page = "README.md"


if __name__ == "__main__":
    unittest.main()
