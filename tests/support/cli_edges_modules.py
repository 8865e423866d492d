"""Tools modules that misbehave as they load, for ``--tools tests.support.cli_edges_modules:NAME``
in tests/cli/test_cli_edges.py."""

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
    """``--executor tests.support.cli_edges_modules:two_threads``: a thread pool of two."""
    import concurrent.futures

    return concurrent.futures.ThreadPoolExecutor(max_workers=2)


#: ``--executor tests.support.cli_edges_modules:not_an_executor``: a list, which no batch can submit to.
not_an_executor: Any = []


class _Lazy:
    """A tools object whose attribute lookup raises (a property of the user's)."""

    @property
    def tools(self) -> Any:
        raise ValueError("lookup blew up")


lazy = _Lazy()


def _fails_inside() -> Any:
    yield from ()
    raise TypeError("inside the user's generator")


#: A generator that raises TypeError as it runs: the user's error, not "not an iterable".
typeerr = _fails_inside()

#: An iterable of things that are not tools.
ints = [1, 2]
