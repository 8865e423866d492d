"""What is spoken on the wire, shared by :mod:`agentloop.models` and :mod:`agentloop.mcp`.

A low layer: its modules import only the standard library and
:mod:`agentloop.errors`.

* :mod:`.sse` -- Server-Sent Events (``text/event-stream``), parsed
  incrementally as WHATWG HTML "Interpreting an event stream" says.
"""

from __future__ import annotations

from .sse import Event, EventStreamParser, iter_events

__all__ = ["Event", "EventStreamParser", "iter_events"]
