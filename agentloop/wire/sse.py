"""Server-Sent Events: an incremental ``text/event-stream`` parser.

It follows WHATWG HTML section 9.2.6 "Interpreting an event stream"
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)
step by step, whatever the chunking of the bytes:

1. The stream is decoded with UTF-8 decode: one leading U+FEFF BYTE ORDER
   MARK is stripped, bytes that are not UTF-8 become U+FFFD.
2. A line ends at CRLF, LF or CR -- also when the CR and the LF arrive in
   different chunks.
3. Each line: an empty line dispatches the event (step 5); a line starting
   with ``:`` is a comment and ignored; otherwise the field name is the text
   before the first ``:`` (the whole line when there is none) and the value
   the text after it, less one leading space.
4. Fields: ``event`` sets the event type buffer; ``data`` appends the value
   and a LF to the data buffer; ``id`` sets the last event ID buffer unless
   the value contains U+0000 NULL (then the field is ignored); ``retry``
   made of ASCII digits only sets the reconnection time (milliseconds),
   anything else is ignored; every other field name is ignored.
5. Dispatch: the last event ID string becomes the last event ID buffer
   (even when no event follows); if the data buffer is empty, the data and
   type buffers are reset and nothing is dispatched; otherwise one trailing
   LF is removed and an :class:`Event` is dispatched with the type (or
   ``message`` when none was given), the data and the last event ID string;
   the data and type buffers are reset.  The last event ID buffer is *not*
   reset: an id persists until the stream sets another.
6. At the end of the stream an incomplete line and an undispatched event
   are discarded: a stream that ends without a blank line loses its last
   event.

A ``data:`` field with an empty value makes the data buffer ``"\\n"``,
which is not empty, so such an event *is* dispatched, with empty data (MCP
servers send one as a "priming" event carrying only an id): a consumer
decides what empty data means to it.

The only limit of its own: a ``retry`` value of more than 4000 digits
(after leading zeros) is ignored.  It keeps what a stream has not yet ended
(an incomplete line, an undispatched event) in memory: bound the bytes you
feed it.  One parser per stream (per HTTP response); :attr:`last_event_id`
is what a client sends as ``Last-Event-ID`` when it reconnects.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional

from ..errors import WrongTypeError

__all__ = ["Event", "EventStreamParser", "iter_events"]

_EOL = re.compile(r"\r\n?|\n")  # step 2; a CR at the end of the text is a whole line end
_DIGITS = re.compile(r"[0-9]+\Z")  # step 4, retry: ASCII digits only (str.isdigit also takes others)
_MAX_RETRY_DIGITS = 4000  # below CPython's int() limit for decimal strings (4300 digits)


@dataclass(frozen=True)
class Event:
    """One dispatched event (step 5).

    ``type`` is the ``event`` field's value, ``message`` when there was
    none; ``data`` the ``data`` values joined with LF (possibly empty);
    ``id`` the last event ID string at dispatch (an ``id`` sent with an
    earlier event persists; empty when none was ever set); ``retry`` the
    stream's reconnection time in milliseconds at dispatch (``None`` when
    the stream never set one).
    """

    type: str
    data: str
    id: str = ""
    retry: Optional[int] = None


class EventStreamParser:
    """Feed the bytes of one stream as they arrive; get every event they complete.

    >>> parser = EventStreamParser()
    >>> parser.feed(b"id: 7\\r\\ndata: a\\r")
    []
    >>> parser.feed(b"\\ndata: b\\n\\n")
    [Event(type='message', data='a\\nb', id='7', retry=None)]
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")("replace")  # step 1
        self._partial: List[str] = []  # the text of a line not yet ended
        self._after_cr = False  # the last text ended in CR: a LF starting the next is its CRLF
        self._data: List[str] = []  # the data buffer, as its values (empty list: empty buffer)
        self._type = ""
        self._id_buffer = ""
        #: The last event ID string (step 5): what to send as ``Last-Event-ID`` on reconnecting.
        self.last_event_id = ""
        #: The reconnection time the stream asked for, in milliseconds (``None``: never set).
        self.retry: Optional[int] = None

    def feed(self, chunk: bytes) -> List[Event]:
        """The events ``chunk`` completes, in order (often none)."""
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise WrongTypeError("an event stream chunk", "bytes", chunk)
        text = self._decoder.decode(bytes(chunk))
        if not text:
            return []  # a chunk inside a multi-byte character, or inside the byte order mark
        if self._after_cr and text[0] == "\n":
            text = text[1:]
        self._after_cr = text.endswith("\r")
        events: List[Event] = []
        start = 0
        for match in _EOL.finditer(text):
            piece = text[start : match.start()]
            if self._partial:
                self._partial.append(piece)
                piece = "".join(self._partial)
                self._partial = []
            self._line(piece, events)
            start = match.end()
        if start < len(text):
            self._partial.append(text[start:])
        return events

    def _line(self, line: str, events: List[Event]) -> None:
        """Step 3, then step 4 for a field."""
        if not line:
            self._dispatch(events)
            return
        if line[0] == ":":
            return  # a comment
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._type = value
        elif name == "id":
            if "\0" not in value:
                self._id_buffer = value
        elif name == "retry":
            digits = value.lstrip("0")
            if _DIGITS.match(value) and len(digits) <= _MAX_RETRY_DIGITS:
                self.retry = int(digits or "0")

    def _dispatch(self, events: List[Event]) -> None:
        """Step 5."""
        self.last_event_id = self._id_buffer
        if not self._data:
            self._type = ""
            return
        events.append(Event(self._type or "message", "\n".join(self._data), self.last_event_id, self.retry))
        self._data = []
        self._type = ""


def iter_events(chunks: Iterable[bytes]) -> Iterator[Event]:
    """Every event of a stream given as byte chunks, lazily; an unfinished last event is dropped (step 6)."""
    parser = EventStreamParser()
    for chunk in chunks:
        for event in parser.feed(chunk):
            yield event
