"""Every example of docs/approvals.md runs and prints what it says (tests/support/docs.py)."""

from __future__ import annotations

import unittest

from tests.support import docs


class TestApprovalsPage(docs.DocPageCase):
    page = "docs/approvals.md"


if __name__ == "__main__":
    unittest.main()
