"""JSON-RPC 2.0 messages as MCP uses them: encoding, parsing, checking.

MCP 2026-07-28 "Base Protocol: Messages" (and 2025-11-25 the same): every
message is a JSON-RPC 2.0 request, notification or response; a request's
``id`` is a string or an integer and never ``null``; a response carries the
request's ``id`` and exactly one of ``result`` (an object) and ``error``
(``code`` an integer, ``message`` a string, ``data`` anything).  This module
turns bytes into one of three typed messages, or refuses them with a reason
(:class:`Malformed`), and never raises anything else for server input.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Union

__all__ = [
    "Malformed",
    "Request",
    "Notification",
    "Response",
    "Message",
    "RpcError",
    "encode",
    "request",
    "notification",
    "error_response",
    "parse",
    "parse_value",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "HEADER_MISMATCH",
    "MISSING_CLIENT_CAPABILITY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "MODERN_ERROR_CODES",
    "short",
    "supported_versions",
]

#: JSON-RPC 2.0 section 5.1 codes MCP uses.
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

#: MCP 2026-07-28 "Base Protocol: Error Codes": the codes the specification
#: reserves (-32020..-32099) and defines.
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
MODERN_ERROR_CODES = frozenset((HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION))

RequestId = Union[int, str]


class Malformed(ValueError):
    """Server bytes that are not a JSON-RPC 2.0 message; ``str()`` is the reason."""


@dataclass(frozen=True)
class RpcError:
    """A JSON-RPC ``error`` member: ``code``, ``message`` and optional ``data``."""

    code: int
    message: str
    data: Any = None

    def describe(self, limit: int = 300) -> str:
        """``JSON-RPC error -32602: Unknown tool: x``, bounded to about ``limit`` characters."""
        return "JSON-RPC error %d: %s" % (self.code, short(self.message, limit))


@dataclass(frozen=True)
class Request:
    """A request from the peer (``id`` and ``method``)."""

    id: RequestId
    method: str
    params: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Notification:
    """A notification from the peer (``method``, no ``id``)."""

    method: str
    params: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Response:
    """A response: ``result`` (an object) or ``error``; ``id`` is ``None`` only for an error about an
    unreadable request."""

    id: Optional[RequestId]
    result: Optional[Dict[str, Any]] = None
    error: Optional[RpcError] = None


Message = Union[Request, Notification, Response]


def short(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def encode(message: Mapping[str, Any]) -> bytes:
    """One message as compact UTF-8 JSON with no newline inside (stdio framing needs that)."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def request(id_: RequestId, method: str, params: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """A request object; ``params`` is left out when ``None``."""
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = dict(params)
    return message


def notification(method: str, params: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """A notification object (no ``id``)."""
    message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = dict(params)
    return message


def error_response(id_: RequestId, code: int, message: str) -> Dict[str, Any]:
    """An error response to the peer's request ``id_``."""
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def _no_constants(name: str) -> Any:
    raise Malformed("not JSON: %s is not a JSON number" % (name,))


def parse(data: Union[bytes, str]) -> Message:
    """Parse one message; raise :class:`Malformed` naming what is wrong."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Malformed("not UTF-8 (%s)" % (exc.reason,)) from None
    else:
        text = data
    try:
        value = json.loads(text, parse_constant=_no_constants)
    except Malformed:
        raise
    except (ValueError, RecursionError) as exc:
        raise Malformed("not JSON (%s): %s" % (short(str(exc), 80), short(text, 80))) from None
    return parse_value(value)


def _request_id(value: Any) -> RequestId:
    # Base Protocol: Requests -- a string or an integer, never null (bool is not an integer).
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise Malformed("id must be a string or an integer, got %s" % (short(json.dumps(value), 40),))
    return value


def parse_value(value: Any) -> Message:
    """Check one decoded JSON value as a message; raise :class:`Malformed`."""
    if isinstance(value, list):
        raise Malformed("a JSON-RPC batch, which MCP does not use")
    if not isinstance(value, dict):
        raise Malformed("a message must be a JSON object, got %s" % (type(value).__name__,))
    if value.get("jsonrpc") != "2.0":
        raise Malformed('"jsonrpc" must be "2.0"')
    params = value.get("params", {})
    if "method" in value:
        method = value["method"]
        if not isinstance(method, str):
            raise Malformed("method must be a string")
        if not isinstance(params, dict):
            raise Malformed("params of %s must be an object" % (short(method, 60),))
        if "id" in value:
            return Request(_request_id(value["id"]), method, params)
        return Notification(method, params)
    has_result, has_error = "result" in value, "error" in value
    if has_result == has_error:
        raise Malformed("a response must have exactly one of result and error")
    if has_error:
        error = value["error"]
        if not isinstance(error, dict):
            raise Malformed("error must be an object")
        code, message = error.get("code"), error.get("message")
        if isinstance(code, bool) or not isinstance(code, int):
            raise Malformed("error.code must be an integer")
        if not isinstance(message, str):
            raise Malformed("error.message must be a string")
        id_ = None if value.get("id") is None else _request_id(value.get("id"))
        return Response(id_, error=RpcError(code, message, error.get("data")))
    result = value["result"]
    if not isinstance(result, dict):
        raise Malformed("result must be an object, got %s" % (type(result).__name__,))
    return Response(_request_id(value.get("id")), result=result)


def supported_versions(error: RpcError) -> List[str]:
    """The ``data.supported`` list of an UnsupportedProtocolVersionError, strings only."""
    data = error.data
    if not isinstance(data, dict) or not isinstance(data.get("supported"), list):
        return []
    return [v for v in data["supported"] if isinstance(v, str)]
