"""Tools modules that misbehave as they load, for ``--tools tests.cli_edges_modules:NAME`` in tests/test_cli_edges.py."""

from __future__ import annotations

from typing import Any


def exits() -> Any:
    """A tools factory that calls sys.exit(5)."""
    raise SystemExit(5)


def interrupts() -> Any:
    """Ctrl-C pressed while the tools factory runs."""
    raise KeyboardInterrupt


class _Breaks:
    """A tools object whose iteration raises something no one planned for."""

    def __iter__(self) -> Any:
        raise RuntimeError("z" * 600)


#: Not callable, so it is iterated as a list of tools.
breaks = _Breaks()


def two_threads() -> Any:
    """``--executor tests.cli_edges_modules:two_threads``: a thread pool of two."""
    import concurrent.futures
    return concurrent.futures.ThreadPoolExecutor(max_workers=2)


#: ``--executor tests.cli_edges_modules:not_an_executor``: a list, which no batch can submit to.
not_an_executor: Any = []
