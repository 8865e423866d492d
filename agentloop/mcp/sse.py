"""Server-Sent Events, as far as a Streamable HTTP response stream needs them.

WHATWG HTML "9.2.6 Interpreting an event stream": lines end in CRLF, LF or
CR; a line starting with ``:`` is a comment (MCP 2026-07-28 "Streamable HTTP:
Receiving Messages" sends them as keep-alives); ``data:`` lines of one event
are joined with LF; a blank line dispatches the event.  ``id``, ``retry`` and
named events carry nothing a response stream needs (2026-07-28 removed
resumability), so only ``data`` is kept; an event without data is dropped.
"""

from __future__ import annotations

from typing import List

__all__ = ["EventStream"]


class EventStream:
    """Feed bytes as they arrive; get the data of each complete event."""

    def __init__(self) -> None:
        self._buffer = b""
        self._data: List[str] = []
        self._has_data = False
        self._after_cr = False

    def feed(self, chunk: bytes) -> List[str]:
        """The data of every event completed by ``chunk``, in order."""
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the LF of a CRLF split across two chunks
        self._after_cr = False
        self._buffer += chunk
        events: List[str] = []
        while True:
            cut = [i for i in (self._buffer.find(b"\r"), self._buffer.find(b"\n")) if i >= 0]
            if not cut:
                return events
            end = min(cut)
            line, rest = self._buffer[:end], self._buffer[end + 1:]
            if self._buffer[end:end + 1] == b"\r":
                if rest.startswith(b"\n"):
                    rest = rest[1:]
                elif not rest:
                    self._after_cr = True
            self._buffer = rest
            self._line(line.decode("utf-8", "replace"), events)

    def _line(self, line: str, events: List[str]) -> None:
        if line == "":
            if self._has_data:
                events.append("\n".join(self._data))
            self._data, self._has_data = [], False
            return
        if line.startswith(":"):
            return
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._has_data = True
