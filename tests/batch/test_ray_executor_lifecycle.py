"""RayExecutor without ray, with a Ray someone else started, and after shutdown.

Ray is not a dependency and is not installed for the suite: the stand-in
module below has the four functions RayExecutor calls (as in tests.batch.test_batch).
"""

from __future__ import annotations

import concurrent.futures
import sys
import types
import unittest
from typing import Any, List

from agentloop.errors import ExecutorClosedError, RunConfigError
from agentloop.batch.executors import RayExecutor


def stand_in_ray(calls: List[Any], initialized: bool) -> types.ModuleType:
    def remote(**options: Any) -> Any:
        def wrap(fn: Any) -> Any:
            def run(*args: Any) -> Any:
                future: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
                future.set_result(fn(*args))
                return types.SimpleNamespace(future=lambda: future)

            return types.SimpleNamespace(remote=run)

        return wrap

    ray = types.ModuleType("ray")
    ray.is_initialized = lambda: initialized  # type: ignore[attr-defined]
    ray.init = lambda **kw: calls.append("init")  # type: ignore[attr-defined]
    ray.shutdown = lambda: calls.append("shutdown")  # type: ignore[attr-defined]
    ray.remote = remote  # type: ignore[attr-defined]
    return ray


class TestRayExecutorLifecycle(unittest.TestCase):
    def with_ray(self, module: Any) -> None:
        saved = sys.modules.get("ray")
        sys.modules["ray"] = module
        self.addCleanup(lambda: sys.modules.pop("ray") if saved is None else sys.modules.__setitem__("ray", saved))

    def test_without_ray_the_first_submit_says_what_to_install(self) -> None:
        self.with_ray(None)  # None in sys.modules: "import ray" raises ImportError, as when it is not installed
        with self.assertRaises(RunConfigError) as caught:
            RayExecutor().submit(pow, 2, 3)
        self.assertEqual(str(caught.exception), "executor: RayExecutor needs the ray package (pip install ray)")

    def test_a_ray_started_elsewhere_is_used_and_left_running(self) -> None:
        calls: List[Any] = []
        self.with_ray(stand_in_ray(calls, initialized=True))
        executor = RayExecutor()
        self.assertEqual(executor.submit(pow, 2, 5).result(), 32)
        executor.shutdown()
        self.assertEqual(calls, [])  # neither init nor shutdown: not ours

    def test_submit_after_shutdown_raises_executor_closed(self) -> None:
        calls: List[Any] = []
        self.with_ray(stand_in_ray(calls, initialized=False))
        executor = RayExecutor()
        executor.shutdown()  # before any use: Ray was never started, so not stopped either
        with self.assertRaises(ExecutorClosedError) as caught:
            executor.submit(pow, 2, 3)
        self.assertIsInstance(caught.exception, RuntimeError)
        self.assertEqual(str(caught.exception), "RayExecutor: cannot submit after shutdown")
        self.assertEqual(calls, [])


if __name__ == "__main__":
    unittest.main()
