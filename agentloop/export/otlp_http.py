"""Send an export to an OTLP/HTTP collector: one JSON POST to ``/v1/traces``.

opentelemetry-proto ``docs/specification.md``, "OTLP/HTTP Request": the body
is the JSON-encoded ``ExportTraceServiceRequest`` with ``Content-Type:
application/json``, POSTed to the endpoint's path followed by
``/v1/traces`` (the endpoint is a base URL, as ``OTEL_EXPORTER_OTLP_ENDPOINT``
is); "OTLP/HTTP Response": a 2xx is success, and a body whose
``partialSuccess`` names rejected spans is a partial failure; the client
limits the body to 64 MiB.

The endpoint names no credentials (``user:password@`` is refused: they go in
a header).  Header values -- the collector's token -- are sent and never
shown: errors name the collector by ``host:port`` only, never its path,
its query or a header, and what a collector echoes back of a header value
(the whole value, each word of it such as the token after ``Bearer``, the
user and password of a ``Basic`` credential; also in base64 or cut short) is
redacted by :func:`agentloop.models.http.redact` before the answer is cut
to what is shown; an answer that still holds one behind an escape is not
shown.  ``timeout`` bounds the whole exchange, not each read: a collector
that answers a byte at a time is cut off.  Plain :mod:`http.client`: no
proxy settings are read and no redirect is followed.
"""

from __future__ import annotations

import base64
import binascii
import http.client
import json
import re
import socket
import ssl
import threading
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Tuple

from ..errors import BadArgumentError, CollectorError
from ..models.http import holds_secret, redact
from ..wire.urls import http_host, split_url

__all__ = ["TRACES_PATH", "MAX_BODY", "Collector", "collector", "send_otlp", "Sent"]

#: The path appended to the endpoint's, as ``OTEL_EXPORTER_OTLP_ENDPOINT`` is used.
TRACES_PATH = "/v1/traces"
#: The largest body sent (the limit the specification recommends).
MAX_BODY = 64 * 1024 * 1024
#: The most of a collector's answer read, and shown in an error.
_ANSWER_BYTES = 64 * 1024
_SHOWN_CHARS = 200
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_RESERVED = ("content-type", "content-length", "host", "transfer-encoding", "connection")


@dataclass(frozen=True)
class Collector:
    """Where spans go: ``https``, ``hostname``, ``port``, the request ``target`` (path and query), and
    ``host`` (``host:port``), the only part of the endpoint an error or a line of output shows."""

    https: bool
    hostname: str
    port: Optional[int]
    target: str
    host: str


@dataclass(frozen=True)
class Sent:
    """A collector's answer: its HTTP ``status`` and the number of spans it took."""

    status: int
    spans: int


def collector(endpoint: str) -> Collector:
    """Check ``endpoint`` and return where its spans go; :class:`~agentloop.errors.BadArgumentError` if unfit.

    It must be an ``http://`` or ``https://`` URL with a host, no credentials,
    no ``#fragment`` and a valid port; the error never quotes it (it may hold
    a token in its query).
    """
    if not isinstance(endpoint, str):
        raise BadArgumentError("endpoint", "must be a URL string")
    parts = split_url(endpoint)
    if parts is None:
        raise BadArgumentError("endpoint", "is not a URL that can be read (a bracketed host?)")
    if "@" in parts.netloc:
        raise BadArgumentError("endpoint", "must not hold credentials (user:password@): send them in a header")
    hostname = http_host(parts)
    if hostname is None:
        raise BadArgumentError("endpoint", "must be an http:// or https:// URL with a host")
    if parts.fragment:
        raise BadArgumentError("endpoint", "must not have a #fragment")
    try:
        port = parts.port
    except ValueError:
        raise BadArgumentError("endpoint", "has a bad port") from None
    target = parts.path.rstrip("/") + TRACES_PATH + ("?" + parts.query if parts.query else "")
    shown = "[%s]" % (hostname,) if ":" in hostname else hostname
    return Collector(
        parts.scheme == "https", hostname, port, target, shown if port is None else "%s:%d" % (shown, port)
    )


def _check_headers(headers: Mapping[str, str]) -> Dict[str, str]:
    """The headers to send: names HTTP tokens not set by this client, values without control characters."""
    out: Dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not _TOKEN.match(name):
            raise BadArgumentError("headers", "a header name must be an HTTP token")
        if name.lower() in _RESERVED:
            raise BadArgumentError("headers", "%s is set by the client" % (name,))
        if (
            not isinstance(value, str)
            or not value
            or any(ord(ch) < 32 or ord(ch) == 127 or ord(ch) > 255 for ch in value)
        ):
            raise BadArgumentError(
                "headers",
                "the value of %s must be a non-empty string of visible characters (it is not shown)" % (name,),
            )
        out[name] = value
    return out


def _secrets(headers: Mapping[str, str]) -> List[str]:
    """What a collector may echo of the header values: each value, each word of it of 4 characters
    or more (the token after ``Bearer``), and the user and password a ``Basic`` credential encodes."""
    found = set()
    for value in headers.values():
        found.add(value)
        for word in value.split():
            if len(word) >= 4:
                found.add(word)
                try:
                    decoded = base64.b64decode(word, validate=True).decode("utf-8")
                except (binascii.Error, ValueError):
                    continue
                if ":" in decoded:
                    found.update(part for part in decoded.split(":", 1) if len(part) >= 4)
    return sorted(found, key=len, reverse=True)


def _shown(text: str, secrets: List[str]) -> str:
    """A collector's words as an error shows them: redacted whole, then cut to 200 characters."""
    text = redact(text, secrets)
    if holds_secret(text, secrets):
        return "(its words are not shown: they hold a header's value behind an escape)"
    return text[:_SHOWN_CHARS].strip()


def _rejected(answer: bytes) -> Optional[Tuple[int, str]]:
    """``partialSuccess`` of an ``ExportTraceServiceResponse``: spans rejected, and why; ``None`` when
    the answer is none ("OTLP/HTTP Response": a 2xx body MUST be one; an empty body is let pass)."""
    if not answer.strip():
        return 0, ""
    try:
        value = json.loads(answer.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    partial = value.get("partialSuccess")
    if not isinstance(partial, dict):
        return 0, ""
    count = partial.get("rejectedSpans", 0)
    try:
        rejected = (
            int(count) if not isinstance(count, bool) and isinstance(count, (int, str)) and len(str(count)) <= 20 else 0
        )
    except ValueError:
        rejected = 0
    message = partial.get("errorMessage")
    return rejected, message if isinstance(message, str) else ""


def _post(where: Collector, body: bytes, headers: Dict[str, str], timeout: float) -> Tuple[int, bytes]:
    """POST and read the answer within ``timeout`` seconds in all (``socket.timeout`` past it).

    ``http.client``'s timeout bounds each read only; a timer shuts the socket
    down at the deadline, so a collector dripping its answer cannot hold the
    command (the reading then fails, or returns short, and the deadline says why).
    """
    conn: http.client.HTTPConnection
    if where.https:
        conn = http.client.HTTPSConnection(
            where.hostname, where.port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(where.hostname, where.port, timeout=timeout)
    expired = threading.Event()

    def cut() -> None:
        expired.set()
        sock = conn.sock
        if sock is not None:
            try:
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(timeout, cut)
    timer.daemon = True
    timer.start()
    try:
        conn.connect()
        if expired.is_set():
            raise socket.timeout()
        conn.request("POST", where.target, body=body, headers=dict(headers, **{"Content-Type": "application/json"}))
        response = conn.getresponse()
        answer = response.read(_ANSWER_BYTES)
    except (OSError, http.client.HTTPException):
        if expired.is_set():
            raise socket.timeout() from None
        raise
    finally:
        timer.cancel()
        conn.close()
    if expired.is_set():
        raise socket.timeout()
    return response.status, answer


def send_otlp(
    body: bytes, endpoint: str, *, headers: Optional[Mapping[str, str]] = None, timeout: float = 10.0, spans: int = 0
) -> Sent:
    """POST ``body`` (an OTLP/JSON ``ExportTraceServiceRequest``) to ``endpoint`` + ``/v1/traces``.

    ``spans`` is how many spans the body holds (to count those taken).
    Raises :class:`~agentloop.errors.BadArgumentError` for an unfit endpoint
    or header, and :class:`~agentloop.errors.CollectorError` when the
    collector cannot be reached, does not answer 2xx, or rejects spans.
    """
    where = collector(endpoint)
    sent = _check_headers(headers or {})
    secrets = _secrets(sent)
    if len(body) > MAX_BODY:
        raise BadArgumentError(
            "body", "is %d bytes, more than the %d an OTLP/HTTP request may hold" % (len(body), MAX_BODY)
        )
    try:
        status, answer = _post(where, body, sent, timeout)
    except socket.timeout:
        raise CollectorError(where.host, "no answer within %g seconds" % (timeout,)) from None
    except (OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise CollectorError(where.host, "cannot send: %s" % (_shown(str(reason), secrets),)) from None
    text = _shown(answer.decode("utf-8", "replace"), secrets)
    if 300 <= status < 400:
        raise CollectorError(where.host, "HTTP %d: a redirect, which is not followed" % (status,))
    if not 200 <= status < 300:
        raise CollectorError(where.host, "HTTP %d%s" % (status, ": " + text if text else ""))
    taken = _rejected(answer)
    if taken is None:
        raise CollectorError(
            where.host,
            "HTTP %d, but the answer is no OTLP/JSON response, so the spans may not have been taken "
            "(is the URL the collector's base, without /v1/traces?)%s" % (status, ": " + text if text else ""),
        )
    rejected, why = taken
    if rejected:
        raise CollectorError(where.host, "rejected %d of %d spans: %s" % (rejected, spans, _shown(why, secrets)))
    return Sent(status, spans)
