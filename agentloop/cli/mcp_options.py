"""``--mcp`` and ``--mcp-option`` of ``agentloop run``: MCP servers, and what the API can set for each.

``--mcp NAME=COMMAND`` starts a stdio server (COMMAND split as a POSIX
shell would, no shell runs); ``--mcp NAME=URL`` reaches a Streamable HTTP
server.  ``--mcp-option NAME.KEY=VALUE`` (repeatable) sets one option of
server NAME -- the spelling of ``git -c section.key=value``, split at the
first ``=`` and the last ``.`` before it:

================== ===========================================================
``protocol=REV``   ``auto`` (the default), ``2026-07-28``, ``2025-11-25``,
                   ``2025-06-18`` or ``2025-03-26``
``timeout=S``      each request, in seconds (default 30)
``init-timeout=S`` starting: the process, the probe, the handshake (default
                   30 for stdio, ``timeout`` for HTTP)
``prefix=TEXT``    put before each of its tool names (``[A-Za-z0-9_-]{0,40}``),
                   so that one server can be added twice, or two servers'
                   tools of one name told apart
``include=A,B``    only these tools of the server (its own names)
``header-env=H:V`` HTTP only, repeatable: send header H with the value of the
                   environment variable V
``bearer-env=V``   HTTP only: ``Authorization: Bearer`` and the value of V
================== ===========================================================

Header values are read from the environment when the client is built and
never appear on the command line, in a message, in the transcript (the
task record names an HTTP server by its host only) or in a pickle (an MCP
client refuses to be pickled).  Every mistake is a usage error (exit 2)
naming the option: an unknown server or key, a key given twice, a value
out of range, an HTTP key on a stdio server, an environment variable that
is not set or holds what a header cannot carry (by its name, never its
value), and a value where a variable's name belongs (not quoted: it may be
the token itself).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import MCPConfigError
from ..mcp import PROTOCOLS, MCPClient, MCPHttp, MCPStdio
from ..mcp.http import header_problem
from ..mcp.names import PREFIX
from .output import Refused, quote

__all__ = ["ServerSpec", "parse_servers", "build_client", "KEYS"]

#: The keys ``--mcp-option`` knows, in their documented order.
KEYS = ("protocol", "timeout", "init-timeout", "prefix", "include", "header-env", "bearer-env")
_HTTP_ONLY = ("header-env", "bearer-env")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MAX_SECONDS = 86400


class _Bad(Exception):
    """A value ``--mcp-option`` refuses; the text is the reason (:func:`_apply` names the option)."""


@dataclass
class ServerSpec:
    """One ``--mcp`` server and its ``--mcp-option`` values (environment variable names, never their values)."""

    name: str
    where: str
    protocol: str = "auto"
    timeout: Optional[float] = None
    init_timeout: Optional[float] = None
    prefix: str = ""
    include: Optional[List[str]] = None
    headers: List[Tuple[str, str, str]] = field(default_factory=list)  # (key, header name, environment variable)
    given: List[str] = field(default_factory=list)

    @property
    def http(self) -> bool:
        """A URL (its scheme in any case, as URLs have it); else a command, which may show up in errors."""
        return self.where.lower().startswith(("http://", "https://"))


def parse_servers(specs: Sequence[str], options: Sequence[str]) -> List[ServerSpec]:
    """The ``--mcp`` servers in order, each with its ``--mcp-option`` values; raise :class:`.output.Refused`."""
    servers: Dict[str, ServerSpec] = {}
    for spec in specs:
        name, sep, where = spec.partition("=")
        where = where.strip()  # " https://..." is a URL too, not a command named after it
        if not sep or not name or not where:
            raise Refused("--mcp", "takes NAME=COMMAND or NAME=URL, got %s" % (quote(spec),))
        if name in servers:
            raise Refused("--mcp %s" % (quote(name),), "names two servers; give each its own NAME")
        servers[name] = ServerSpec(name, where)
    for option in options:
        _apply(servers, option)
    return list(servers.values())


def _apply(servers: Mapping[str, ServerSpec], option: str) -> None:
    """One ``--mcp-option NAME.KEY=VALUE``."""
    target, sep, value = option.partition("=")
    name, dot, key = target.rpartition(".")
    if not sep or not dot or not name or not key:
        raise Refused("--mcp-option", "takes NAME.KEY=VALUE, got %s" % (quote(option),))
    where = "--mcp-option %s" % (quote(target),)
    server = servers.get(name)
    if server is None:
        raise Refused(
            where,
            "no --mcp server is named %s (given: %s)" % (quote(name), ", ".join(quote(n) for n in servers) or "none"),
        )
    if key not in KEYS:
        raise Refused(where, "unknown key %s (known: %s)" % (quote(key), ", ".join(KEYS)))
    if key in _HTTP_ONLY and not server.http:
        raise Refused(where, "is for an http:// or https:// server; %s is started as a command" % (quote(name),))
    if key != "header-env" and key in server.given:
        raise Refused(where, "is given twice")
    server.given.append(key)
    try:
        _set(server, key, value)
    except _Bad as exc:
        raise Refused(where, str(exc)) from None


def _set(server: ServerSpec, key: str, value: str) -> None:
    """Check and keep one value; raise :class:`_Bad` with the reason."""
    if key == "protocol":
        if value not in PROTOCOLS:
            raise _Bad("must be one of %s, got %s" % (", ".join(PROTOCOLS), quote(value)))
        server.protocol = value
    elif key == "timeout":
        server.timeout = _seconds(value)
    elif key == "init-timeout":
        server.init_timeout = _seconds(value)
    elif key == "prefix":
        if not PREFIX.match(value):
            raise _Bad("must match [A-Za-z0-9_-]{0,40}, got %s" % (quote(value),))
        server.prefix = value
    elif key == "include":
        server.include = _names(value)
    elif key == "bearer-env":
        _add_header(server, key, "Authorization", _env_name(value))
    else:  # header-env
        header, colon, variable = value.partition(":")
        if not colon or not header:  # the value is not quoted: it may be the secret itself, pasted by mistake
            raise _Bad("takes HEADER:VARIABLE, the name of an environment variable after the colon")
        _add_header(server, key, header, _env_name(variable))


def _names(value: str) -> List[str]:
    names = value.split(",")
    if not all(names):
        raise _Bad("takes the server's tool names separated by commas, got %s" % (quote(value),))
    return names


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= _MAX_SECONDS:  # also false for NaN
        raise _Bad("must be a number of seconds above 0 and at most %d, got %s" % (_MAX_SECONDS, quote(value)))
    return seconds


def _env_name(value: str) -> str:
    if not _ENV_NAME.match(value):  # not quoted: a token pasted in place of its variable's name would be shown
        raise _Bad(
            "takes the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), not a value; "
            "what was given is not shown"
        )
    return value


def _add_header(server: ServerSpec, key: str, header: str, variable: str) -> None:
    problem = header_problem(header, "")
    if problem is not None:
        raise _Bad(problem)
    if any(h.lower() == header.lower() for _, h, _ in server.headers):
        raise _Bad("sets header %s a second time" % (quote(header),))
    server.headers.append((key, header, variable))


def build_client(server: ServerSpec, environ: Optional[Mapping[str, str]] = None) -> MCPClient:
    """The client of ``server``, its header values read from ``environ`` (``os.environ``).

    Raises :class:`.output.Refused`.
    """
    environ = os.environ if environ is None else environ
    headers: Dict[str, str] = {}
    for key, header, variable in server.headers:
        value = environ.get(variable)
        where = "--mcp-option %s" % (quote(server.name + "." + key),)
        if not value:
            raise Refused(
                where, "the environment variable %s is %s" % (variable, "empty" if value == "" else "not set")
            )
        headers[header] = "Bearer " + value if key == "bearer-env" else value
        if header_problem(header, headers[header]) is not None:
            raise Refused(
                where,
                "the environment variable %s holds a line break, a control character or a "
                "non-ASCII character, which a header cannot carry" % (variable,),
            )
    try:
        return _client(server, headers)
    except MCPConfigError as exc:
        raise Refused("--mcp %s" % (quote(server.name),), _reason(exc)) from None


def _client(server: ServerSpec, headers: Dict[str, str]) -> MCPClient:
    timeout = 30.0 if server.timeout is None else server.timeout
    if server.http:
        return MCPHttp(
            server.where,
            name=server.name,
            headers=headers,
            protocol=server.protocol,
            timeout=timeout,
            init_timeout=server.init_timeout,
        )
    return MCPStdio(
        server.where,
        name=server.name,
        protocol=server.protocol,
        timeout=timeout,
        init_timeout=30.0 if server.init_timeout is None else server.init_timeout,
    )


def _reason(exc: MCPConfigError) -> str:
    """An MCPConfigError of a client in the command line's words (a URL's words may hold a token: not quoted)."""
    if exc.parameter == "url" and "credentials" in exc.reason:
        return "its URL must not hold credentials (pass a token with --mcp-option NAME.bearer-env=VARIABLE)"
    return "its %s %s" % ({"url": "URL"}.get(exc.parameter, exc.parameter), exc.reason)
