"""A loopback TCP relay that cuts one SSE answer right after its priming event, for the resumption interop test.

Put in front of a Streamable HTTP server: every connection is relayed as
is, except the first ``tools/call`` of ``tool``, whose answer is cut (both
sockets closed) right after the event that ends in ``data: \\n\\n`` -- the
priming event of the TypeScript SDK (``id: ...`` and an empty ``data``).
A ``GET`` carrying ``Last-Event-ID`` (the client resuming) is counted in
``resumes`` and held ``get_delay`` seconds before it is passed on.  The
client sees a stream that broke mid-answer, as on a flaky network.  One
request per connection, as agentloop's HTTP client sends them.  Stdlib only.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import List

PRIMED = b"data: \n\n"


class CuttingRelay:
    """``127.0.0.1:port`` relaying to ``127.0.0.1:upstream``; ``close()`` stops accepting."""

    def __init__(self, upstream: int, tool: str, get_delay: float = 0.0) -> None:
        self.upstream = upstream
        self.tool = b'"' + tool.encode() + b'"'
        self.get_delay = get_delay
        self.cuts = 0
        self.resumes: List[bytes] = []  # the request heads of the resuming GETs
        self._armed = True
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = int(self._listener.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.upstream))
        try:
            head = self._head(client)
            cut = self._inspect(head)
            upstream.sendall(head)
            threading.Thread(target=_pump, args=(client, upstream), daemon=True).start()
            self._answer(upstream, client, cut)
        finally:
            for side in (client, upstream):
                try:
                    side.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                side.close()

    @staticmethod
    def _head(client: socket.socket) -> bytes:
        """The request's first bytes: its head and, as sent with it, its body."""
        data = client.recv(65536)
        while b"\r\n\r\n" not in data:
            more = client.recv(65536)
            if not more:
                break
            data += more
        if b"content-length:" in data.lower() and data.endswith(b"\r\n\r\n"):
            data += client.recv(65536)  # the body, when it came in a packet of its own
        return data

    def _inspect(self, head: bytes) -> bool:
        """Count a resume (and hold it); say whether this request's answer is the one to cut."""
        if head.startswith(b"GET") and b"last-event-id:" in head.lower():
            self.resumes.append(head)
            time.sleep(self.get_delay)
            return False
        if self._armed and b'"tools/call"' in head and self.tool in head:
            self._armed = False
            return True
        return False

    def _answer(self, upstream: socket.socket, client: socket.socket, cut: bool) -> None:
        seen = b""
        while True:
            try:
                data = upstream.recv(65536)
            except OSError:
                return
            if not data:
                return
            if cut:
                seen += data
                end = seen.find(PRIMED)
                if end >= 0:
                    client.sendall(data[: len(data) - (len(seen) - end - len(PRIMED))])
                    self.cuts += 1
                    return
            client.sendall(data)


def _pump(source: socket.socket, target: socket.socket) -> None:
    while True:
        try:
            data = source.recv(65536)
            if not data:
                return
            target.sendall(data)
        except OSError:
            return
