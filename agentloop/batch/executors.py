"""Executors agentloop does not ship but adapts: :class:`RayExecutor`.

:func:`agentloop.batch.run_many` takes any ``concurrent.futures.Executor``.
Ray has none, so this is a small one built on ``ObjectRef.future()``
(which returns a ``concurrent.futures.Future``).  ``ray`` is imported on
first use, never at import time; agentloop does not depend on it.
:func:`process_pool` (:mod:`agentloop.processes`) is re-exported here.
"""

from __future__ import annotations

import concurrent.futures
import importlib
from typing import Any, Callable, Dict, Optional

from ..errors import ExecutorClosedError, RunConfigError
from ..processes import process_pool

__all__ = ["RayExecutor", "process_pool"]


class RayExecutor(concurrent.futures.Executor):
    """``submit(fn, *args)`` runs ``ray.remote(fn).remote(*args)`` and returns its ``.future()``.

    ``address`` is passed to ``ray.init`` (``None``: a local Ray, or the
    cluster ``RAY_ADDRESS`` names); ``init_options`` go to ``ray.init`` too
    and ``remote_options`` to ``ray.remote`` (``num_cpus=1``, ``max_retries=0``
    by default: a run that kills its worker is reported, not repeated).
    ``shutdown`` calls ``ray.shutdown()`` only if this executor started Ray.
    """

    def __init__(
        self, address: Optional[str] = None, *, init_options: Optional[Dict[str, Any]] = None, **remote_options: Any
    ) -> None:
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
