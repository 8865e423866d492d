"""What is spoken on the wire, shared by :mod:`agentloop.models`, :mod:`agentloop.mcp` and :mod:`agentloop.export`.

A low layer: its modules import only the standard library and
:mod:`agentloop.errors`.

* :mod:`.sse` -- Server-Sent Events (``text/event-stream``), parsed
  incrementally as WHATWG HTML "Interpreting an event stream" says.
* :mod:`.connections` -- HTTP/1.1 keep-alive connections, one per thread
  and origin, reused across requests; when a request may be sent again.
* :mod:`.urls` -- reading an ``http(s)://`` URL a user gave, before any refusal is worded.
"""

from __future__ import annotations

from .connections import ConnectionPool, Exchange
from .sse import Event, EventStreamParser, iter_events

__all__ = ["Event", "EventStreamParser", "iter_events", "ConnectionPool", "Exchange"]
