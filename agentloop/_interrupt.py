"""Ctrl-C while the command line is still starting: one line on stderr and exit 130, never a traceback.

``agentloop`` (the console script) and ``python3 -m agentloop`` spend their
first moments importing; a ``KeyboardInterrupt`` then would reach Python's
top level and print a traceback.  :func:`guard` (called first by
``agentloop/__init__.py``) installs a ``sys.excepthook`` for that case only
when the process is the command line (``sys.argv[0]`` is ``agentloop`` or
``-m``, as while ``python3 -m agentloop`` is being located), and
:func:`release` (called by :func:`agentloop.cli.main.main` once it runs)
puts the previous hook back.  A program that merely imports agentloop is
never touched.
"""

from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import Any, Optional, Type

__all__ = ["guard", "release", "EXIT_INTERRUPTED"]

#: 128 + SIGINT, as a shell reports it (agentloop.cli.output.EXIT_INTERRUPTED).
EXIT_INTERRUPTED = 130
_previous: Optional[Any] = None


def _is_cli() -> bool:
    name = os.path.basename(sys.argv[0]) if sys.argv and isinstance(sys.argv[0], str) else ""
    return name in ("agentloop", "agentloop.exe", "-m", "agentloop-script.py")


def _hook(kind: Type[BaseException], value: BaseException, tb: Optional[TracebackType]) -> None:
    if issubclass(kind, KeyboardInterrupt):
        try:
            sys.stderr.write("agentloop: interrupted (Ctrl-C) while starting; nothing was done\n")
            sys.stderr.flush()
        except Exception:
            pass
        os._exit(EXIT_INTERRUPTED)
    (_previous or sys.__excepthook__)(kind, value, tb)


def guard() -> None:
    """Install the hook, for the command line only, until :func:`release`."""
    global _previous
    if _previous is None and _is_cli():
        _previous = sys.excepthook
        sys.excepthook = _hook


def release() -> None:
    """Put the previous ``sys.excepthook`` back (the command line's ``main`` handles Ctrl-C from here)."""
    global _previous
    if _previous is not None and sys.excepthook is _hook:
        sys.excepthook = _previous
    _previous = None
