"""The Streamable HTTP transport: an MCP server at a URL.

MCP 2026-07-28 "Streamable HTTP" (and 2025-11-25 "Transports: Streamable
HTTP"): every JSON-RPC message is its own HTTP POST to the one MCP endpoint,
with ``Accept: application/json, text/event-stream``; the server answers a
request with one JSON object or with an SSE stream (:mod:`agentloop.wire.sse`)
carrying notifications and then the response -- the client supports both
("Sending Messages" 6).  On a stream, events whose data is empty or white
space carry no message and are skipped: 2025-11-25 "Sending Messages" 6 has
the server open the stream with such a "priming" event (an id and an empty
``data``), which the SSE parser dispatches with empty data; an event of a
type other than ``message`` is skipped too.  A notification gets ``202 Accepted``.

Per revision:

* 2026-07-28: every POST carries ``MCP-Protocol-Version`` (matching the
  body's ``_meta``), ``Mcp-Method``, and for ``tools/call`` ``Mcp-Name``
  ("Request Metadata: Standard Request Headers"), plus one
  ``Mcp-Param-{Name}`` per ``x-mcp-header`` argument ("Custom Headers from
  Tool Parameters"), values that are not plain visible ASCII sent as
  ``=?base64?...?=`` ("Value Encoding").  Closing the response stream is the
  cancellation ("Cancellation"): a timed-out request is just dropped.
* 2025-11-25 and earlier: ``Mcp-Session-Id`` from the ``initialize``
  response is sent on every later request, ``MCP-Protocol-Version`` after
  the handshake ("Session Management", "Protocol Version Header"); a timed
  out request is cancelled with a ``notifications/cancelled`` POST; a
  request the server sends on an SSE stream is answered, in its own POST,
  with method-not-found; closing the client ends the session with DELETE.
  A stream that breaks before its response, after the server gave its
  events ids, is resumed with ``GET`` and ``Last-Event-ID`` after the
  stream's ``retry`` ("Resumability and Redelivery"; :meth:`MCPHttp._resume`).
  A 404 to a request carrying the session id means the session expired
  and the request was not processed ("Session Management" 3-4): the client
  starts a new session with a new ``initialize`` (once per request) and
  sends the request again; a 404 to the resuming ``GET`` comes after the
  request was delivered, so that request fails and is never sent twice.

Each request has one deadline (``timeout``) for connecting, sending,
waiting and reading the whole answer, however the server trickles it; the
socket's timeout is reset to what is left before every read.  Plain
:mod:`http.client` (what :mod:`urllib` uses underneath), so no proxy
settings and no redirects are followed.  Header values (bearer tokens), the
URL's path and query never appear in errors, ``repr`` or the record: the
server is named by its host.
"""

from __future__ import annotations

import base64
import codecs
import http.client
import itertools
import re
import socket
import ssl
import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Union

from ..errors import MCPConfigError, MCPError
from ..wire.sse import Event, EventStreamParser
from ..wire.urls import http_host, split_url
from .client import LEGACY, MODERN, MCPClient, Origin, Failed, RpcFailed
from .jsonrpc import (
    METHOD_NOT_FOUND,
    Malformed,
    Request,
    Response,
    encode,
    error_response,
    notification,
    parse,
    request,
    short,
)

__all__ = ["MCPHttp", "header_value", "header_problem", "MAX_BODY", "MAX_RESUMES"]

#: The largest answer read (a JSON body or a whole SSE stream).
MAX_BODY = 64 * 1024 * 1024
#: The most times one answer's SSE stream is resumed (``GET`` with ``Last-Event-ID``).
MAX_RESUMES = 100
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_PLAIN = re.compile(r"[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?\Z")
_FIELD_VALUE = re.compile(r"[\x20-\x7e\t]*\Z")
_TARGET = re.compile(r"[\x21-\x7e]+\Z")
_SAFE_INTEGER = 2**53 - 1
_MAX_WAIT_MS = 2 * 86400 * 1000  # longer than the longest timeout (86400 s)
_PROTOCOL_HEADERS = ("content-type", "accept", "mcp-protocol-version", "mcp-method", "mcp-name", "mcp-session-id")


def header_value(value: Union[str, int, bool]) -> str:
    """2026-07-28 "Streamable HTTP: Value Encoding": a string, integer or boolean as a header value.

    Booleans are ``true``/``false``, integers decimal; a value that is not
    visible ASCII with inner spaces and tabs (non-ASCII, control
    characters, leading or trailing white space, empty), or that looks like
    the sentinel itself, becomes ``=?base64?{UTF-8 in Base64}?=``.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if _PLAIN.match(text) and not (text.startswith("=?base64?") and text.endswith("?=")):
        return text
    return "=?base64?%s?=" % (base64.b64encode(text.encode("utf-8")).decode("ascii"),)


def header_problem(name: Any, value: Any) -> Optional[str]:
    """Why ``name: value`` cannot be one of :class:`MCPHttp`'s ``headers``, or ``None``; the value is never quoted.

    The name must be an HTTP token (RFC 9110 5.1) and not one of the
    protocol's headers, which the client sets; the value a string of
    visible ASCII, spaces and tabs (RFC 9110 5.5 without ``obs-text``): a
    line break would split the request, and :mod:`http.client` cannot send
    a character outside Latin-1.
    """
    if not isinstance(name, str) or not _TOKEN.match(name):
        return "a header name must be an HTTP token"
    if name.lower() in _PROTOCOL_HEADERS:
        return "%s is set by the client" % (name,)
    if not isinstance(value, str) or not _FIELD_VALUE.match(value):
        return (
            "the value of %s must be a string of visible ASCII characters, spaces and tabs "
            "(no line break, control character or non-ASCII character)" % (name,)
        )
    return None


class MCPHttp(MCPClient):
    """Tools from an MCP server over Streamable HTTP.

    ``headers`` (an ``Authorization: Bearer ...``, say) go on every request
    and are never shown; ``timeout`` bounds each request, ``init_timeout``
    (``timeout`` when not given) the probe and the handshake.  Use as a
    context manager::

        with MCPHttp("http://127.0.0.1:8000/mcp", name="web") as web:
            run(task, model, web.tools(prefix="web_"), ...)
    """

    transport = "http"

    def __init__(
        self,
        url: str,
        *,
        name: str,
        headers: Optional[Mapping[str, str]] = None,
        protocol: str = "auto",
        timeout: float = 30,
        init_timeout: Optional[float] = None,
    ) -> None:
        super().__init__(name, protocol, timeout, timeout if init_timeout is None else init_timeout)
        if not isinstance(url, str):
            raise MCPConfigError("url", "must be a string")
        parts = split_url(url)
        if parts is None:  # never in Python's words: they may quote the URL, which may hold a token
            raise MCPConfigError("url", "is not a URL that can be read (a bracketed host?)")
        if parts.username is not None or parts.password is not None or "@" in parts.netloc:
            raise MCPConfigError("url", "must not hold credentials; pass them in headers=")
        hostname = http_host(parts)
        if hostname is None:
            raise MCPConfigError("url", "must be an http:// or https:// URL with a host")
        try:
            self._port = parts.port
        except ValueError:
            raise MCPConfigError("url", "has a bad port") from None
        self._https = parts.scheme == "https"
        self._hostname = hostname
        #: The server's host (and port), which is all errors and the record show.
        self.host = parts.netloc
        self._target = (parts.path or "/") + ("?" + parts.query if parts.query else "")
        if not _TARGET.match(self._target):  # http.client would say so quoting it (a query may hold a token), or crash
            raise MCPConfigError(
                "url", "must have a path and query of visible ASCII (percent-encode spaces and the rest)"
            )
        self._headers: Dict[str, str] = {}
        for key, value in (headers or {}).items():
            problem = header_problem(key, value)
            if problem is not None:
                raise MCPConfigError("headers", problem)
            self._headers[key] = value
        self._secrets = sorted(
            {v for v in self._headers.values() if len(v) >= 3}
            | {part for v in self._headers.values() for part in v.split() if len(part) >= 4},
            key=len,
            reverse=True,
        )
        self._session: Optional[str] = None
        self._session_lock = threading.RLock()
        self._ids = itertools.count(1)

    def __repr__(self) -> str:
        headers = "" if not self._headers else ", headers=<%d>" % (len(self._headers),)
        return "MCPHttp(host=%r, name=%r%s, protocol=%r)" % (
            self.host,
            self.name,
            headers,
            self.protocol or self.requested_protocol,
        )

    def _where(self) -> Dict[str, Any]:
        return {"host": self.host}

    def _redact(self, text: str) -> str:
        """``text`` without the header values, also the start of one that a cut (``...``) left behind.

        A server's text is cut to a few hundred characters (``short``)
        before it gets here, so a value quoted near the cut shows only its
        start: any 4 or more characters that start a value and end just
        before ``...`` go too.
        """
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        if "..." not in text:
            return text
        pieces = text.split("...")
        for index, piece in enumerate(pieces[:-1]):
            starts = [k for secret in self._secrets for k in range(4, len(secret)) if piece.endswith(secret[:k])]
            if starts:
                pieces[index] = piece[: -max(starts)] + "[redacted]"
        return "...".join(pieces)

    # --- one POST ------------------------------------------------------

    def _open(self) -> None:
        pass  # the first request (the probe or initialize) is the first contact

    def _connection(self, deadline: float) -> http.client.HTTPConnection:
        left = max(deadline - time.monotonic(), 0.001)
        if self._https:
            return http.client.HTTPSConnection(
                self._hostname, self._port, timeout=left, context=ssl.create_default_context()
            )
        return http.client.HTTPConnection(self._hostname, self._port, timeout=left)

    @staticmethod
    def _left(conn: http.client.HTTPConnection, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("deadline")
        if conn.sock is not None:
            conn.sock.settimeout(left)

    def _protocol_headers(self, method: str, params: Mapping[str, Any], origin: Optional[Origin]) -> Dict[str, str]:
        headers = dict(self._headers)
        headers["Content-Type"] = "application/json"
        headers["Accept"] = "application/json, text/event-stream"
        if self.modern:
            headers["MCP-Protocol-Version"] = self.protocol or MODERN
            headers["Mcp-Method"] = method
            if method == "tools/call":
                headers["Mcp-Name"] = header_value(str(params.get("name")))
                arguments = params.get("arguments")
                for param in origin.headers if origin is not None else ():
                    value: Any = arguments
                    for key in param.path:
                        value = value.get(key) if isinstance(value, dict) else None
                    if value is None:
                        continue  # "Parameter value is null / not in arguments: omit the header"
                    if isinstance(value, float) and value.is_integer():
                        value = int(value)
                    if not isinstance(value, (str, int)) or (
                        not isinstance(value, bool) and isinstance(value, int) and abs(value) > _SAFE_INTEGER
                    ):
                        raise Failed(
                            "argument %s cannot go into header Mcp-Param-%s" % (".".join(param.path), param.header),
                            "malformed",
                        )
                    headers["Mcp-Param-" + param.header] = header_value(value)
        else:
            with self._session_lock:  # a session being renewed (_renew) is waited for
                if self.protocol is not None and method != "initialize":
                    headers["MCP-Protocol-Version"] = self.protocol
                if self._session is not None and method != "initialize":
                    headers["Mcp-Session-Id"] = self._session
        return headers

    def _post(
        self,
        body: bytes,
        headers: Dict[str, str],
        deadline: float,
        want: Optional[Union[int, str]],
        method: str,
        timeout: float,
    ) -> Dict[str, Any]:
        conn = self._connection(deadline)
        sent = False
        response: Optional[http.client.HTTPResponse] = None
        try:
            conn.request("POST", self._target, body=body, headers=headers)
            sent = True
            self._left(conn, deadline)
            response = conn.getresponse()
            if method == "initialize":
                session = response.getheader("Mcp-Session-Id")
                if session is not None and re.match(r"[\x21-\x7e]+\Z", session):
                    self._session = session
            status = response.status
            kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
            if want is None:
                self._read(conn, response, deadline)
                if status in (200, 202, 204):
                    return {}
                raise Failed("HTTP %d for %s" % (status, method), "http")
            if status == 200 and kind == "text/event-stream":
                return self._stream(conn, response, deadline, want, method, headers.get("Mcp-Session-Id"))
            data = self._read(conn, response, deadline)
            if status == 200 and kind == "application/json":
                return self._answer(data, want, status)
            raise self._refusal(status, data, "Mcp-Session-Id" in headers)
        except socket.timeout:
            raise Failed("timed out after %g s (closed the connection)" % (timeout,), "timeout") from None
        except (OSError, http.client.HTTPException) as exc:
            reason = short(self._redact(str(exc) or exc.__class__.__name__), 200)
            if not sent:
                raise Failed("cannot connect to %s: %s" % (self.host, reason), "connect") from None
            raise Failed("the connection to %s failed: %s" % (self.host, reason), "http") from None
        finally:
            if response is not None:  # a response of a closing connection holds the socket open on its own
                response.close()
            conn.close()  # on a timeout this closes the stream: the 2026-07-28 cancellation

    def _refusal(self, status: int, data: bytes, in_session: bool) -> Failed:
        """What an answer other than 200 JSON or SSE means: an expired session, a JSON-RPC error, or an HTTP error."""
        if status == 404 and in_session:  # 2025-11-25 "Session Management" 3: the request was not processed
            return Failed("HTTP 404: the server ended the session", "expired")
        try:
            message = parse(data)
        except Malformed:
            message = None
        if isinstance(message, Response) and message.error is not None:
            return RpcFailed(message.error, status)
        shown = short(self._redact(data.decode("utf-8", "replace")), 200)
        return Failed("HTTP %d%s" % (status, ": " + shown if shown else ""), "http")

    def _read(self, conn: http.client.HTTPConnection, response: http.client.HTTPResponse, deadline: float) -> bytes:
        chunks: List[bytes] = []
        total = 0
        while True:
            self._left(conn, deadline)
            chunk = response.read1(65536)
            if not chunk:
                return b"".join(chunks)
            total += len(chunk)
            if total > MAX_BODY:
                raise Failed("the answer is larger than %d bytes" % (MAX_BODY,), "malformed")
            chunks.append(chunk)

    def _answer(self, data: bytes, want: Union[int, str], status: int) -> Dict[str, Any]:
        try:
            message = parse(data)
        except Malformed as exc:
            raise Failed("sent a malformed message: %s" % (exc,), "malformed") from None
        if not isinstance(message, Response) or message.id != want:
            raise Failed("answered with something other than the response to request %r" % (want,), "malformed")
        if message.error is not None:
            raise RpcFailed(message.error)
        assert message.result is not None
        return message.result

    def _stream(
        self,
        conn: http.client.HTTPConnection,
        response: http.client.HTTPResponse,
        deadline: float,
        want: Union[int, str],
        method: str,
        session: Optional[str],
    ) -> Dict[str, Any]:
        """The response to request ``want`` from an SSE stream, resuming the stream when it breaks (:meth:`_resume`)."""
        parser = EventStreamParser()
        ended = self._follow(conn, response, parser, deadline, want)
        if isinstance(ended, dict):
            return ended
        return self._resume(ended, parser.last_event_id, parser.retry, deadline, want, method, session)

    def _follow(
        self,
        conn: http.client.HTTPConnection,
        response: http.client.HTTPResponse,
        parser: EventStreamParser,
        deadline: float,
        want: Union[int, str],
    ) -> Union[Dict[str, Any], str]:
        """Read one stream: the response's result, or why the stream ended without it.

        MCP messages are UTF-8 (2025-11-25 "Base Protocol"), as a JSON body
        must be (:func:`.jsonrpc.parse`); the SSE parser would decode bytes
        that are not into U+FFFD (WHATWG HTML 9.2.6), which would then be
        recorded as what the server sent, so the stream is checked too.
        """
        total = 0
        utf8 = codecs.getincrementaldecoder("utf-8")()
        while True:
            self._left(conn, deadline)
            try:
                chunk = response.read1(65536)
            except socket.timeout:
                raise
            except (OSError, http.client.HTTPException) as exc:
                return "the SSE stream broke (%s)" % (short(self._redact(str(exc) or exc.__class__.__name__), 200),)
            if not chunk:
                return "the SSE stream ended"
            total += len(chunk)
            if total > MAX_BODY:
                raise Failed("the SSE stream is longer than %d bytes" % (MAX_BODY,), "malformed")
            try:
                utf8.decode(chunk)
            except UnicodeDecodeError as exc:
                raise Failed("sent an SSE stream that is not UTF-8 (%s)" % (exc.reason,), "malformed") from None
            for event in parser.feed(chunk):
                result = self._event(event, want, deadline)
                if result is not None:
                    return result

    def _event(self, event: Event, want: Union[int, str], deadline: float) -> Optional[Dict[str, Any]]:
        """One SSE event: the result when it is the response to ``want``, else ``None``."""
        if event.type != "message" or not event.data.strip():
            return None  # the priming event (an id, empty data), or an event type MCP does not send
        try:
            message = parse(event.data)
        except Malformed as exc:
            raise Failed("sent a malformed message: %s" % (exc,), "malformed") from None
        if isinstance(message, Response):
            if message.id == want:
                if message.error is not None:
                    raise RpcFailed(message.error)
                assert message.result is not None
                return message.result
        elif isinstance(message, Request) and not self.modern:
            self._refuse(message, deadline)
        return None  # notifications (progress, logging) carry nothing to record

    def _resume(
        self,
        ended: str,
        cursor: str,
        retry: Optional[int],
        deadline: float,
        want: Union[int, str],
        method: str,
        session: Optional[str],
    ) -> Dict[str, Any]:
        """2025-11-25 "Resumability and Redelivery": resume a broken stream with ``GET`` and ``Last-Event-ID``.

        1. Only a 2025 session resumes (2026-07-28 removed resumability:
           there a closed stream is the cancellation), and only a stream whose
           events carried an id (the priming event's, at least).
        2. Wait the stream's ``retry`` milliseconds ("Sending Messages" 6:
           the client MUST respect it), then ``GET`` the endpoint with
           ``Last-Event-ID``; a ``200 text/event-stream`` answer is read like
           the first stream (ids it sends move the cursor), again and again
           while the deadline and :data:`MAX_RESUMES` allow.
        3. A 404 for the session: it expired after the request was
           delivered, so the request is not sent again (the next request
           gets a 404 of its own and starts a new session); any other
           answer ends the attempt.
        """
        for _ in range(MAX_RESUMES):
            if self.modern or not cursor:  # 1.
                raise Failed("%s before the response to %s" % (ended, method), "http")
            # 2. (a retry longer than any timeout is past the deadline anyway: no float of a 4000-digit integer)
            wait = min(retry or 0, _MAX_WAIT_MS) / 1000.0
            if time.monotonic() + wait >= deadline:
                raise socket.timeout("deadline")
            time.sleep(wait)
            conn = self._connection(deadline)
            response: Optional[http.client.HTTPResponse] = None
            try:
                headers: Dict[str, Union[str, bytes]] = dict(self._protocol_headers("", {}, None))
                headers.pop("Content-Type")
                headers["Accept"] = "text/event-stream"
                # In UTF-8 (WHATWG HTML "reestablish the connection"); as a str, http.client would try Latin-1.
                headers["Last-Event-ID"] = cursor.encode("utf-8")
                conn.request("GET", self._target, headers=headers)
                self._left(conn, deadline)
                response = conn.getresponse()
                kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
                if response.status == 404 and session is not None:  # 3. (the next POST gets a 404 and renews)
                    raise Failed(
                        "the server ended the session (HTTP 404) while the answer to %s was streaming; "
                        "the request had been delivered, so it was not sent again" % (method,),
                        "http",
                    )
                if response.status != 200 or kind != "text/event-stream":
                    raise Failed(
                        "%s before the response to %s, and resuming it failed (GET with Last-Event-ID: "
                        "HTTP %d)" % (ended, method, response.status),
                        "http",
                    )
                parser = EventStreamParser()
                result = self._follow(conn, response, parser, deadline, want)
                if isinstance(result, dict):
                    return result
                ended, cursor = result, parser.last_event_id or cursor
                retry = parser.retry if parser.retry is not None else retry
            finally:
                if response is not None:
                    response.close()
                conn.close()
        raise Failed("%s before the response to %s, %d times" % (ended, method, MAX_RESUMES), "http")

    def _refuse(self, message: Request, deadline: float) -> None:
        """Answer a server request made on a legacy SSE stream: ``ping`` with ``{}``, anything else method-not-found."""
        if message.method == "ping":
            reply: Dict[str, Any] = {"jsonrpc": "2.0", "id": message.id, "result": {}}
        else:
            reply = error_response(
                message.id,
                METHOD_NOT_FOUND,
                "Method not found: agentloop does not serve %s" % (short(message.method, 80),),
            )
        try:
            self._post(
                encode(reply),
                self._protocol_headers("", {}, None),
                min(deadline, time.monotonic() + 5.0),
                None,
                "a response",
                5.0,
            )
        except Failed:
            pass

    # --- the client's half ----------------------------------------------

    def _exchange(
        self, method: str, params: Dict[str, Any], timeout: float, origin: Optional[Origin] = None
    ) -> Dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._session_lock:
            session = self._session
        try:
            return self._send(method, params, deadline, timeout, origin)
        except Failed as exc:
            if exc.kind != "expired" or method == "initialize":
                raise
        # 2025-11-25 "Session Management" 4: a 404 for the session: the request was not
        # processed; a new session (once), then the same request again.
        self._renew(session)
        return self._send(method, params, deadline, timeout, origin)

    def _send(
        self, method: str, params: Dict[str, Any], deadline: float, timeout: float, origin: Optional[Origin]
    ) -> Dict[str, Any]:
        id_ = next(self._ids)
        headers = self._protocol_headers(method, params, origin)
        try:
            return self._post(encode(request(id_, method, params)), headers, deadline, id_, method, timeout)
        except Failed as exc:
            if exc.kind == "timeout" and not self.modern and self.protocol is not None:
                # 2025-11-25: a disconnect is not a cancellation; say it.
                self._best_effort(
                    notification(
                        "notifications/cancelled", {"requestId": id_, "reason": "timed out after %g s" % (timeout,)}
                    )
                )
            raise

    def _renew(self, expired: Optional[str]) -> None:
        """2025-11-25 "Session Management" 4: a new ``initialize`` without a session id, the same revision.

        Requests wait for it (:meth:`_protocol_headers`); when another
        request has already renewed ``expired``, nothing is done.  The
        revision and the server's description (``describe()``) stay as
        first met, also when the renewal fails or the new session speaks
        another revision (then later requests, framed for the first one,
        fail as the server says).
        """
        with self._session_lock:
            if self._session != expired:
                return
            protocol, info = self.protocol or LEGACY, dict(self.server_info)
            self._session = None
            try:
                self._initialize(protocol, "for a new session after HTTP 404")
                spoken = self.protocol
            except MCPError as exc:
                raise Failed(
                    "HTTP 404: the server ended the session, and a new one could not be started: %s" % (exc.reason,),
                    "dead",
                ) from None
            finally:  # _initialize reset them
                self.protocol, self.server_info = protocol, info
            if spoken != protocol:
                raise Failed(
                    "HTTP 404: the server ended the session, and the new one speaks %s, not %s" % (spoken, protocol),
                    "dead",
                )

    def _best_effort(self, message: Dict[str, Any]) -> None:
        try:
            self._post(
                encode(message),
                self._protocol_headers(str(message.get("method")), {}, None),
                time.monotonic() + 2.0,
                None,
                str(message.get("method")),
                2.0,
            )
        except Failed:
            pass

    def _notify(self, method: str, params: Optional[Dict[str, Any]], timeout: float) -> None:
        self._post(
            encode(notification(method, params)),
            self._protocol_headers(method, {}, None),
            time.monotonic() + timeout,
            None,
            method,
            timeout,
        )

    def _shutdown(self) -> None:
        """2025-11-25 "Session Management" 5: a client that no longer needs the session SHOULD DELETE it."""
        if self._session is None:
            return
        headers = self._protocol_headers("", {}, None)
        conn = self._connection(time.monotonic() + 2.0)
        try:
            conn.request("DELETE", self._target, headers=headers)
            with conn.getresponse() as response:
                response.read(65536)
        except (OSError, http.client.HTTPException):
            pass
        finally:
            conn.close()
            self._session = None
