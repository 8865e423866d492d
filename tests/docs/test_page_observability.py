"""Every example of docs/observability.md runs and prints what it says (tests/support/docs.py)."""

from __future__ import annotations

import unittest

from tests.support import docs


class TestObservabilityPage(docs.DocPageCase):
    page = "docs/observability.md"


if __name__ == "__main__":
    unittest.main()
