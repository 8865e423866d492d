"""Every example of docs/cli.md runs and prints what it says (tests/support/docs.py)."""

from __future__ import annotations

import unittest

from tests.support import docs


class TestCliPage(docs.DocPageCase):
    page = "docs/cli.md"


if __name__ == "__main__":
    unittest.main()
