"""HTTP/1.1 keep-alive connections: one per thread and origin, reused from request to request.

A :class:`ConnectionPool` hands out :class:`Exchange` objects: one request
sent and its response's status and headers read, the body left for the
caller to read (whole, or as a stream).  When the caller has read the whole
body and the server did not say it would close (RFC 9112 section 9.3,
"Persistence"), :meth:`Exchange.release` keeps the connection for the next
request of the same thread to the same origin; anything else closes it.

When is it safe to send again?  A request is a POST, which the server may
act on (and bill) once it has it whole; so a request is never sent twice by
this module except where it provably was not received (RFC 9110 section
9.2.2 lets a client repeat a non-idempotent request only when it knows the
first did not reach the server's application):

1. before a kept connection is used, it is checked without blocking
   (``select`` with a zero timeout, as urllib3 does): a server that closed
   it while it was idle has left it readable (its FIN, or a TLS alert), and
   such a connection is closed and a new one opened -- nothing was sent on
   the old one;
2. when sending the request on a *kept* connection fails (``BrokenPipe``,
   ``ConnectionReset``: the server closed it between the check and the
   send), the server never had the whole request -- an HTTP server acts on
   a request only once it has all of its ``Content-Length`` bytes, and the
   send failed before they all left -- so it is sent once more, on a new
   connection, silently;
3. once the request has been sent whole, any failure (no status line, a
   reset while reading) is the caller's: the server may have acted on the
   request, and only the caller's retry policy, which says so, may send it
   again.  A new connection that fails at any point is the caller's too.

Other rules: a proxy from the environment (``http_proxy``, ``https_proxy``,
``no_proxy``, as :func:`urllib.request.getproxies` and
:func:`urllib.request.proxy_bypass` read them) is used as urllib would --
an absolute URL to an ``http`` proxy for ``http://``, a ``CONNECT`` tunnel
for ``https://`` -- except that a loopback host is never reached through a
proxy; no redirect is followed (a 3xx is an answer like any other); TLS
uses :func:`ssl.create_default_context`; a connection inherited by a forked
child is never used by it.  ``keep_alive=False`` sends ``Connection:
close`` and opens a connection per request (the behaviour of
:mod:`urllib`, kept for comparison: ``bench/keepalive.py``).

The pool holds no secrets (headers pass through it), pickles without its
connections, and counts the connections it opened (:attr:`ConnectionPool.opened`).
"""

from __future__ import annotations

import base64
import http.client
import os
import select
import socket
import ssl
import threading
import urllib.parse
import urllib.request
import weakref
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

__all__ = ["ConnectionPool", "Exchange", "LOOPBACK"]

#: Hosts never reached through a proxy.
LOOPBACK = frozenset(("127.0.0.1", "localhost", "::1"))

#: ``(scheme, host, port, proxy host, proxy port, proxy authorization)``: where a connection goes.
Origin = Tuple[str, str, int, str, int, str]
OnSocket = Callable[[socket.socket], None]


def _dropped(conn: http.client.HTTPConnection) -> bool:
    """Whether a kept connection can no longer be used: closed, or readable while idle (the server's
    FIN, an alert, or bytes nobody asked for -- it is no longer in step either way)."""
    sock = conn.sock
    if sock is None:
        return True
    try:
        if isinstance(sock, ssl.SSLSocket) and sock.pending():
            return True
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):  # closed under us, or a descriptor select cannot take
        return True
    return bool(readable)


class Exchange:
    """One request on one connection: ``status``, ``headers`` (names lower-cased) and ``response``,
    whose body the caller reads; then :meth:`release`."""

    def __init__(
        self,
        pool: "ConnectionPool",
        origin: Origin,
        conn: http.client.HTTPConnection,
        response: http.client.HTTPResponse,
        reused: bool,
    ) -> None:
        self._pool = pool
        self._origin = origin
        self._conn: Optional[http.client.HTTPConnection] = conn
        self.response = response
        self.status = int(response.status)
        self.headers: Dict[str, str] = {k.lower(): v for k, v in response.getheaders()}
        #: Whether the request went on a connection kept from an earlier one.
        self.reused = reused

    @property
    def sock(self) -> Optional[socket.socket]:
        """The connection's socket (``None`` once released)."""
        return None if self._conn is None else self._conn.sock

    def release(self, reusable: bool = True) -> None:
        """Done with it: the connection is kept when ``reusable``, the body was read to its end and
        the server keeps it open; otherwise it is closed.  Calling it again does nothing."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        whole = self.response.isclosed()  # http.client closes its side of a response read to the end
        if reusable and whole and not self.response.will_close and self._pool.keep_alive:
            self._pool._keep(self._origin, conn)
        else:
            self.response.close()
            conn.close()


class _Kept:
    """The connections of a pool: those kept idle, per thread and origin, and all it opened (weakly).

    Held apart from the pool and closed by a :func:`weakref.finalize` of it, so that a pool let go
    of -- even in a reference cycle -- closes its connections rather than leave their sockets to the
    collector."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: Dict[Tuple[Optional[int], Origin], Tuple[threading.Thread, int, http.client.HTTPConnection]] = {}
        self.all: "weakref.WeakSet[http.client.HTTPConnection]" = weakref.WeakSet()

    def close(self) -> None:
        with self.lock:
            connections = list(self.all)  # the kept ones among them, before they are let go of
            self.idle.clear()
        for conn in connections:
            conn.close()


class ConnectionPool:
    """Keep-alive connections, per thread and origin (see the module docstring)."""

    def __init__(self, *, keep_alive: bool = True, context: Optional[ssl.SSLContext] = None) -> None:
        self.keep_alive = keep_alive
        self._context = context
        self._kept = _Kept()
        weakref.finalize(self, self._kept.close)
        #: How many connections this pool has opened (what a keep-alive test counts).
        self.opened = 0

    def __repr__(self) -> str:
        return "ConnectionPool(keep_alive=%r, opened=%d)" % (self.keep_alive, self.opened)

    def __getstate__(self) -> Dict[str, Any]:
        """Pickled without its connections and its TLS context."""
        return {"keep_alive": self.keep_alive}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__init__(keep_alive=state["keep_alive"])  # type: ignore[misc]

    def close(self) -> None:
        """Close every connection this pool holds, in every thread (one in use fails its request)."""
        self._kept.close()

    # --- where a URL goes ------------------------------------------------------------------

    @staticmethod
    def origin(url: str) -> Origin:
        """Where ``url``'s requests go: its scheme, host and port, and the proxy to reach it through."""
        parts = urllib.parse.urlsplit(url)
        scheme, host = parts.scheme, parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        proxy = "" if host in LOOPBACK else urllib.request.getproxies().get(scheme, "")
        if proxy and urllib.request.proxy_bypass(host):
            proxy = ""
        if not proxy:
            return scheme, host, port, "", 0, ""
        through = urllib.parse.urlsplit(proxy if "://" in proxy else "http://" + proxy)
        auth = ""
        if through.username is not None:
            pair = "%s:%s" % (urllib.parse.unquote(through.username), urllib.parse.unquote(through.password or ""))
            auth = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
        return scheme, host, port, through.hostname or "", through.port or 80, auth

    def _open(self, origin: Origin, timeout: float) -> http.client.HTTPConnection:
        scheme, host, port, proxy_host, proxy_port, auth = origin
        conn: http.client.HTTPConnection
        target_host, target_port = (proxy_host, proxy_port) if proxy_host else (host, port)
        if scheme == "https":
            if self._context is None:
                self._context = ssl.create_default_context()
            conn = http.client.HTTPSConnection(target_host, target_port, timeout=timeout, context=self._context)
            if proxy_host:
                conn.set_tunnel(host, port, headers={"Proxy-Authorization": auth} if auth else None)
        else:
            conn = http.client.HTTPConnection(target_host, target_port, timeout=timeout)
        with self._kept.lock:
            self.opened += 1
            self._kept.all.add(conn)
        return conn

    # --- the idle connection of each thread -------------------------------------------------

    def _keep(self, origin: Origin, conn: http.client.HTTPConnection) -> None:
        """Keep ``conn`` as this thread's connection to ``origin`` (closing the one it replaces, and
        those of threads that have ended: a connection never outlives its thread unclosed)."""
        me = threading.current_thread()
        idle = self._kept.idle
        with self._kept.lock:
            ended = [key for key, (thread, _, _) in idle.items() if not thread.is_alive()]
            dropped = [idle.pop(key)[2] for key in ended]
            previous = idle.pop((me.ident, origin), None)
            idle[(me.ident, origin)] = (me, os.getpid(), conn)
        for old in dropped + ([previous[2]] if previous is not None else []):
            old.close()

    def _take(self, origin: Origin) -> Optional[http.client.HTTPConnection]:
        """This thread's kept connection to ``origin``, if it can still be used (step 1)."""
        me = threading.current_thread()
        with self._kept.lock:
            kept = self._kept.idle.pop((me.ident, origin), None)
        if kept is None:
            return None
        thread, pid, conn = kept
        # Inherited by a fork (the parent's: closing this process's descriptor sends nothing while the
        # parent holds its own), a thread that ended had this ident, or the server closed it.
        if pid != os.getpid() or thread is not me or _dropped(conn):
            conn.close()
            return None
        return conn

    # --- one request -----------------------------------------------------------------------

    def exchange(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        timeout: float,
        on_socket: Optional[OnSocket] = None,
    ) -> Exchange:
        """Send ``method url`` with ``headers`` and ``body``; return once the status and headers
        are in.  ``timeout`` bounds each socket operation; ``on_socket`` is told the socket the
        request goes on before anything is sent (a deadline's watchdog registers it).  Raises
        ``OSError`` / ``http.client.HTTPException`` as :mod:`http.client` does (module docstring, 3)."""
        origin = self.origin(url)
        target, sent = self._request_line(origin, url, headers)
        conn = self._take(origin) if self.keep_alive else None
        reused = conn is not None
        if conn is not None:
            try:
                self._send(conn, method, target, sent, body, timeout, on_socket)
            except (OSError, http.client.HTTPException):  # step 2: the request never got there whole
                conn.close()
                conn, reused = None, False
        if conn is None:
            conn = self._open(origin, timeout)
            try:
                self._send(conn, method, target, sent, body, timeout, on_socket)
            except BaseException:
                conn.close()
                raise
        try:
            response = conn.getresponse()
        except BaseException:  # step 3: sent whole; what became of it is unknown
            conn.close()
            raise
        return Exchange(self, origin, conn, response, reused)

    def _request_line(self, origin: Origin, url: str, headers: Mapping[str, str]) -> Tuple[str, Dict[str, str]]:
        """The request target (the absolute URL through an ``http`` proxy, else the path and query) and the headers."""
        proxied = bool(origin[3]) and origin[0] == "http"
        parts = urllib.parse.urlsplit(url)
        target = url if proxied else urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
        sent = dict(headers)
        if proxied and origin[5]:
            sent["Proxy-Authorization"] = origin[5]
        if not self.keep_alive:
            sent["Connection"] = "close"
        return target, sent

    @staticmethod
    def _send(
        conn: http.client.HTTPConnection,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes,
        timeout: float,
        on_socket: Optional[OnSocket],
    ) -> None:
        if conn.sock is None:
            conn.connect()
        conn.sock.settimeout(timeout)
        if on_socket is not None:
            on_socket(conn.sock)
        conn.request(method, target, body=body, headers=dict(headers))
