"""Executors agentloop does not ship but adapts: :class:`RayExecutor`.

:func:`agentloop.batch.run_many` takes any ``concurrent.futures.Executor``.
Ray has none, so this is a small one built on ``ObjectRef.future()``
(which returns a ``concurrent.futures.Future``).  ``ray`` is imported on
first use, never at import time; agentloop does not depend on it.
"""

from __future__ import annotations

import concurrent.futures
import importlib
import multiprocessing
import threading
from typing import Any, Callable, Dict, Optional

from ..errors import ExecutorClosedError, RunConfigError

__all__ = ["RayExecutor", "process_pool"]


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
    methods = multiprocessing.get_all_start_methods()
    if fork_if_alone and "fork" in methods and threading.active_count() == 1:
        method = "fork"
    else:
        method = "forkserver" if "forkserver" in methods else "spawn"
    return concurrent.futures.ProcessPoolExecutor(max_workers=max_workers, mp_context=multiprocessing.get_context(method))


class RayExecutor(concurrent.futures.Executor):
    """``submit(fn, *args)`` runs ``ray.remote(fn).remote(*args)`` and returns its ``.future()``.

    ``address`` is passed to ``ray.init`` (``None``: a local Ray, or the
    cluster ``RAY_ADDRESS`` names); ``init_options`` go to ``ray.init`` too
    and ``remote_options`` to ``ray.remote`` (``num_cpus=1``, ``max_retries=0``
    by default: a run that kills its worker is reported, not repeated).
    ``shutdown`` calls ``ray.shutdown()`` only if this executor started Ray.
    """

    def __init__(self, address: Optional[str] = None, *, init_options: Optional[Dict[str, Any]] = None, **remote_options: Any) -> None:
        self._address = address
        self._init_options = dict(init_options or {})
        self._remote_options: Dict[str, Any] = {"num_cpus": 1, "max_retries": 0}
        self._remote_options.update(remote_options)
        self._ray: Any = None
        self._started = False
        self._remotes: Dict[Callable[..., Any], Any] = {}
        self._closed = False

    def _module(self) -> Any:
        if self._ray is None:
            try:
                ray = importlib.import_module("ray")
            except ImportError:
                raise RunConfigError("executor", "RayExecutor needs the ray package (pip install ray)") from None
            if not ray.is_initialized():
                ray.init(address=self._address, **self._init_options)
                self._started = True
            self._ray = ray
        return self._ray

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> "concurrent.futures.Future[Any]":
        if self._closed:
            raise ExecutorClosedError("RayExecutor")
        ray = self._module()
        remote = self._remotes.get(fn)
        if remote is None:
            remote = self._remotes[fn] = ray.remote(**self._remote_options)(fn)
        future: "concurrent.futures.Future[Any]" = remote.remote(*args, **kwargs).future()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closed = True
        if self._started and self._ray is not None:
            self._ray.shutdown()
            self._started = False
