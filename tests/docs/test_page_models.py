"""Every example of docs/models.md runs and prints what it says (tests/support/docs.py)."""

from __future__ import annotations

import unittest

from tests.support import docs


class TestModelsPage(docs.DocPageCase):
    page = "docs/models.md"


if __name__ == "__main__":
    unittest.main()
