"""Shared fixture for the adapter tests: a loopback server per test and a transport that never waits."""

from __future__ import annotations

import contextlib
import io
from typing import Any, Dict, List, Tuple, Union

from agentloop import ToolRegistry
from agentloop.cli import main
from agentloop.models import HttpTransport, RetryPolicy

from tests.support.helpers import TempDir, demo_tools
from tests.support.loopback import Canned, LoopbackServer

#: The wall clock the tests' transports see (for HTTP-date Retry-After): 2023-11-14T22:13:20Z.
NOW = 1700000000.0


class LoopbackCase(TempDir):
    """``self.serve(script)`` starts a server on 127.0.0.1 for this test; ``self.waits`` records every backoff."""

    def setUp(self) -> None:
        super().setUp()
        self.waits: List[float] = []

    def serve(self, *script: Union[Canned, Dict[str, Any]]) -> LoopbackServer:
        server = LoopbackServer(script).start()
        self.addCleanup(server.stop)
        return server

    def transport(self, max_retries: int = 2, timeout: float = 5.0, jitter: float = 0.0) -> HttpTransport:
        """Real HTTP, fake time: sleeping appends to ``self.waits``; jitter is fixed."""
        return HttpTransport(
            timeout=timeout,
            retry=RetryPolicy(max_retries=max_retries),
            sleep=self.waits.append,
            clock=lambda: NOW,
            jitter=lambda: jitter,
        )

    def cli(self, *argv: str) -> Tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            status = main(list(argv), out=out)
        return status, out.getvalue(), err.getvalue()


def bodies(server: LoopbackServer) -> List[Any]:
    return [seen.body for seen in server.requests]


def some_tools(*names: str) -> ToolRegistry:
    """A registry of some of the demo tools (add, echo, fail, greet)."""
    return ToolRegistry([tool for tool in demo_tools() if tool.name in names])


def add_and_greet() -> ToolRegistry:
    """For ``--tools tests.support.modelcase:add_and_greet``."""
    return some_tools("add", "greet")


def add_and_fail() -> ToolRegistry:
    """For ``--tools tests.support.modelcase:add_and_fail``."""
    return some_tools("add", "fail")
