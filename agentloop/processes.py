"""Process pools that are safe to start from a process that runs threads: :func:`process_pool`.

Used by a batch's driver and audit (:mod:`agentloop.batch`) and by the
verification of one transcript across cores (:mod:`agentloop.transcript.parallel`),
so it sits below both.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import concurrent.futures

__all__ = ["process_pool"]


def process_pool(max_workers: int, fork_if_alone: bool = False) -> concurrent.futures.ProcessPoolExecutor:
    """A process pool whose workers start from a fork server (``spawn`` where there is none).

    Forking a process that runs other threads (a thread pool, an HTTP
    client, a test's server) can copy a lock one of them holds into the
    child, which then waits on it forever; a fork server forks from a
    process with one thread.  Its workers import what they run afresh, so a
    script that makes one needs the usual ``if __name__ == "__main__":``.
    ``fork_if_alone=True`` forks directly when the calling process runs no
    other thread (nothing to copy a held lock from), which saves each worker
    that fresh import for short jobs such as ``verify --manifest``.
    """
    import concurrent.futures  # here: every command-line start imports this module, few make a pool
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if fork_if_alone and "fork" in methods and threading.active_count() == 1:
        method = "fork"
    else:
        method = "forkserver" if "forkserver" in methods else "spawn"
    return concurrent.futures.ProcessPoolExecutor(
        max_workers=max_workers, mp_context=multiprocessing.get_context(method)
    )
