"""The witness over HTTP: C2SP ``tlog-witness``'s ``add-checkpoint`` and the monitors' ``checkpoint``.

tlog-witness, "HTTP Interface"::

    POST <submission prefix>/add-checkpoint          -> :meth:`~.witness.Witness.add_checkpoint`
    GET  <monitoring prefix>/<origin hash>/checkpoint -> :meth:`~.witness.Witness.latest`

One prefix serves both (the spec allows it).  ``add-checkpoint`` "MUST be
an HTTP POST": any other method is 405.  The body's length must be given
(``Content-Length``; else 411) and at most :data:`MAX_BODY_BYTES` (else
413; a length that is not a decimal, 400).  The origin hash is the lowercase
hex SHA-256 of the origin; a log the witness never cosigned is 404.
Connections are HTTP/1.1 with keep-alive ("witnesses SHOULD support" it).
Slow clients cannot hold the witness: each request, from the wait for its
first line to the last byte of the answer, has :data:`TIMEOUT_SECONDS` (a
client that trickles a byte at a time is cut off then, not at each idle
gap), and at most :data:`MAX_CONNECTIONS` connections are served at once
(one more is closed at once, and logged).  Nothing is authenticated but the
checkpoint's signatures, as the spec says.  Each request is logged in one
line through the ``log`` callback, which must escape what it prints (paths
come from the network); so is a connection that fails (a client that
resets it), never with a traceback.
"""

from __future__ import annotations

import re
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional, Tuple

from ..signing.witness import MAX_PROOF_LINES
from ..signing.note import MAX_NOTE_BYTES
from ..errors import WitnessStateError
from .witness import Witness, WitnessAnswer

__all__ = ["MAX_BODY_BYTES", "TIMEOUT_SECONDS", "MAX_CONNECTIONS", "WitnessServer", "start_server"]

#: The largest request body read: a checkpoint note, 63 proof lines and the old size line.
MAX_BODY_BYTES = MAX_NOTE_BYTES + 46 * MAX_PROOF_LINES + 32
#: Seconds one request may take, from the wait for its first line to the end of the answer (idle keep-alive too).
TIMEOUT_SECONDS = 30
#: Connections served at once; one more is closed unread.
MAX_CONNECTIONS = 64
_TEXT = "text/plain; charset=utf-8"
_CHECKPOINT_PATH = re.compile(r"\A/([0-9a-f]{64})/checkpoint\Z")


class WitnessServer(ThreadingHTTPServer):
    """A :class:`~http.server.ThreadingHTTPServer` answering for one :class:`~.witness.Witness`."""

    daemon_threads = True

    def __init__(
        self,
        address: Tuple[str, int],
        witness: Witness,
        prefix: str,
        log: Callable[[str], None],
        timeout: float = TIMEOUT_SECONDS,
        connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.witness = witness
        self.prefix = prefix.rstrip("/")
        self.log = log
        self.request_seconds = timeout
        self.connections = connections
        self._slots = threading.BoundedSemaphore(connections)
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection in a thread of its own, if fewer than ``connections`` are being served."""
        if not self._slots.acquire(blocking=False):
            self.log("%s refused: %d connections are open" % (client_address[0], self.connections))
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line for a connection that failed (a client that reset it, a cut-off slow client); no traceback."""
        error = sys.exc_info()[1]
        self.log("%s connection failed: %s: %s" % (client_address[0], type(error).__name__, error))

    @property
    def url(self) -> str:
        """``http://HOST:PORT<prefix>``: where ``/add-checkpoint`` is."""
        host, port = str(self.server_address[0]), int(self.server_address[1])
        shown = "[%s]" % (host,) if ":" in host else host
        return "http://%s:%d%s" % (shown, port, self.prefix)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = TIMEOUT_SECONDS
    server: WitnessServer
    server_version = "agentloop-witness"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.request_seconds)  # no single wait outlasts a whole request

    def handle_one_request(self) -> None:
        """One request within the server's ``request_seconds``: past them, the connection is shut down."""
        timer = threading.Timer(self.server.request_seconds, self._cut_off)
        timer.daemon = True
        timer.start()
        try:
            super().handle_one_request()
        finally:
            timer.cancel()

    def _cut_off(self) -> None:
        try:
            self.connection.shutdown(socket.SHUT_RDWR)  # a blocked read returns, a blocked write fails
        except OSError:
            pass

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        """Requests are logged by :meth:`_send`; the base class's lines (errors) go to the same place."""
        self.server.log("%s %s" % (self.client_address[0], format % args))

    def _send(self, status: int, body: bytes, content_type: str, reason: str) -> None:
        self.server.log("%s %s %s %d %s" % (self.client_address[0], self.command, self.path[:200], status, reason))
        self.send_response_only(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Server", self.server_version)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _plain(self, status: int, reason: str) -> None:
        self._send(status, (reason + "\n").encode("utf-8"), _TEXT, reason)

    def _route(self) -> Optional[str]:
        """The path under the prefix, or ``None`` when it is not under it."""
        path = self.path.split("?", 1)[0]
        prefix = self.server.prefix
        if prefix and not path.startswith(prefix + "/"):
            return None
        return path[len(prefix) :]

    def _body(self) -> Optional[bytes]:
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") or length is None:
            self._plain(411, "a Content-Length is needed")
            self.close_connection = True
            return None
        if not length.isascii() or not length.isdigit():
            self._plain(400, "the Content-Length is not a decimal")
            self.close_connection = True
            return None
        if int(length) > MAX_BODY_BYTES:
            self._plain(413, "the body is longer than %d bytes" % (MAX_BODY_BYTES,))
            self.close_connection = True
            return None
        body = self.rfile.read(int(length))
        if len(body) != int(length):
            self.close_connection = True
            return None
        return body

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        """``add-checkpoint``."""
        if self._route() != "/add-checkpoint":
            self.close_connection = True  # the body is left unread
            self._plain(404, "not found")
            return
        body = self._body()
        if body is None:
            return
        try:
            answer = self.server.witness.add_checkpoint(body)
        except WitnessStateError as exc:
            answer = WitnessAnswer(500, b"the witness cannot persist its state\n", _TEXT, str(exc))
        self._send(answer.status, answer.body, answer.content_type, answer.reason)

    def do_GET(self) -> None:  # noqa: N802
        """``<origin hash>/checkpoint``; ``add-checkpoint`` is POST only."""
        route = self._route()
        if route == "/add-checkpoint":
            self._plain(405, "add-checkpoint is a POST")
            return
        found = _CHECKPOINT_PATH.match(route or "")
        latest = self.server.witness.latest(found.group(1)) if found else None
        if latest is None:
            self._plain(404, "no checkpoint cosigned for that origin hash" if found else "not found")
            return
        self._send(200, latest, _TEXT, "latest checkpoint")

    def do_HEAD(self) -> None:  # noqa: N802
        """As GET, without the body."""
        self.do_GET()

    def _not_allowed(self) -> None:
        self.close_connection = True
        self._plain(405, "method not allowed")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed


def start_server(
    witness: Witness,
    host: str = "127.0.0.1",
    port: int = 0,
    prefix: str = "",
    log: Callable[[str], None] = lambda line: None,
    timeout: float = TIMEOUT_SECONDS,
    connections: int = MAX_CONNECTIONS,
) -> Tuple[WitnessServer, threading.Thread]:
    """Listen on ``host:port`` (0: any free port) and serve in a daemon thread; ``server.shutdown()`` stops it."""
    server = WitnessServer((host, port), witness, prefix, log, timeout, connections)
    thread = threading.Thread(target=server.serve_forever, name="agentloop-witness", daemon=True)
    thread.start()
    return server, thread
