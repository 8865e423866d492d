"""SIGTERM and SIGHUP during ``run`` and ``resume``: said like Ctrl-C, with what the transcript holds.

Python's default for both signals ends the process at once, without a word.
:func:`on_termination` turns them, for the length of a run, into
:class:`Terminated` (a ``BaseException``, like ``KeyboardInterrupt``) raised
in the main thread: the loop lets it through as it lets Ctrl-C through, so
every record written stays a verifiable prefix, and the command says what
the transcript holds and exits 128 + the signal number (143 for SIGTERM,
129 for SIGHUP), as a shell reports a process the signal ended.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Dict, Iterator

__all__ = ["Terminated", "on_termination"]


class Terminated(BaseException):
    """The process was asked to end (SIGTERM, SIGHUP) during a run."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        try:
            self.name = signal.Signals(signum).name
        except ValueError:
            self.name = "signal %d" % (signum,)

    @property
    def status(self) -> int:
        return 128 + self.signum


def _raise(signum: int, frame: Any) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def on_termination() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` (main thread only; elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: Dict[int, Any] = {}
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None:
            previous[number] = signal.signal(number, _raise)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
