"""TypedDicts with Required/NotRequired under string annotations (Python 3.11+ only; imported by test_signature)."""

from __future__ import annotations
from typing import TypedDict, NotRequired, Required


class TD(TypedDict):
    a: int
    b: NotRequired[str]


class TD2(TypedDict, total=False):
    a: Required[int]
    b: str


def f(x: TD, y: TD2) -> int:
    """F."""
    return 1
