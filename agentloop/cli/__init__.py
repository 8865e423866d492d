"""The command line, ``agentloop`` (and ``python3 -m agentloop``): see :mod:`.main`."""

from __future__ import annotations

from .main import console, main

__all__ = ["main", "console"]
