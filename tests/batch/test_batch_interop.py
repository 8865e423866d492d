"""The ledger-identity test again on Dask and Ray, when they are installed.

The suite runs stdlib-only, so without ``distributed`` or ``ray`` these
tests skip; ``.ci/interop-batch`` installs both in a throwaway venv and sets
``AGENTLOOP_REQUIRE_INTEROP=1``, which turns every skip into a failure.
"""

from __future__ import annotations

import importlib
import os
import unittest
from typing import Any

from agentloop.batch import run_many
from agentloop.batch.executors import RayExecutor

from tests.support.helpers import TempDir
from tests.batch.test_batch import MODEL, TOOLS, specs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REQUIRED = os.environ.get("AGENTLOOP_REQUIRE_INTEROP") == "1"


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        if REQUIRED:
            raise
        raise unittest.SkipTest("%s is not installed (see .ci/interop-batch)" % (name,)) from None


class InteropCase(TempDir):
    def setUp(self) -> None:
        super().setUp()
        # Workers are other processes: they import tests.support.batch_models from here.
        path = os.environ.get("PYTHONPATH", "")
        if ROOT not in path.split(os.pathsep):
            os.environ["PYTHONPATH"] = ROOT + (os.pathsep + path if path else "")

    def serial(self) -> bytes:
        """The serial batch's ledger (run once per test)."""
        if not hasattr(self, "_serial"):
            result = run_many(specs(), model=MODEL, tools=TOOLS, out_dir=self.path("serial"))
            self.assertTrue(result.ok)
            with open(result.manifest, "rb") as handle:
                self._serial = handle.read()
        return self._serial

    def check(self, executor: Any, folder: str) -> None:
        result = run_many(specs(), model=MODEL, tools=TOOLS, out_dir=self.path(folder), executor=executor)
        self.assertTrue(result.ok, result.failed)
        with open(result.manifest, "rb") as handle:
            self.assertEqual(handle.read(), self.serial())


class TestDask(InteropCase):
    def test_dask_local_cluster_of_processes_gives_the_serial_ledger(self) -> None:
        distributed = _module("distributed")
        with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster, distributed.Client(cluster) as client:
            self.check(client.get_executor(pure=False), "dask")
            moved = run_many(
                specs(),
                model=MODEL,
                tools=TOOLS,
                out_dir=self.path("dask-bytes"),
                executor=client.get_executor(pure=False),
                transfer="bytes",
            )
            with open(moved.manifest, "rb") as handle:
                self.assertEqual(handle.read(), self.serial())


class TestRay(InteropCase):
    def test_ray_executor_gives_the_serial_ledger(self) -> None:
        _module("ray")
        executor = RayExecutor(
            init_options={"num_cpus": 2, "include_dashboard": False, "_node_ip_address": "127.0.0.1"}
        )
        try:
            self.check(executor, "ray")
        finally:
            executor.shutdown()


if __name__ == "__main__":
    unittest.main()
