"""Agentloop names for MCP tools: ``prefix + name``, made safe and unique.

MCP 2026-07-28 "Tools: Tool Names" only *recommends* 1-128 characters from
``[A-Za-z0-9_.-]`` and scopes uniqueness to one server, and advises clients
that aggregate servers to disambiguate with a prefix.  The model providers
accept ``[A-Za-z0-9_-]{1,64}`` (:class:`agentloop.tools.Tool`), so:

1. the name is ``prefix + server name``;
2. every character outside ``[A-Za-z0-9_-]`` becomes ``_`` (an empty name is ``_``);
3. a name longer than 64 characters is cut to 55 and suffixed with ``_`` and
   the first 8 hex digits of the SHA-256 of the UTF-8 of step 1's name, so two
   long names that share their first 55 characters still differ.

Two tools that end up with one name are an error naming both sides
(:class:`~agentloop.errors.MCPNameCollisionError`): within a server, across
servers, or against local tools (:func:`combine_tools`).
"""

from __future__ import annotations

import hashlib
import re
from typing import Dict, Iterable, List

from ..errors import MCPNameCollisionError, WrongTypeError
from ..tools import Tool

__all__ = ["agentloop_name", "combine_tools", "MAX_NAME", "PREFIX"]

MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
#: What a prefix may hold (it is part of the final name, so it is not rewritten).
PREFIX = re.compile(r"[A-Za-z0-9_-]{0,40}\Z")


def agentloop_name(prefix: str, name: str) -> str:
    """The agentloop name of server tool ``name`` under ``prefix`` (steps 1-3 above)."""
    joined = prefix + name
    safe = _UNSAFE.sub("_", joined) or "_"
    if len(safe) <= MAX_NAME:
        return safe
    digest = hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return safe[: MAX_NAME - 9] + "_" + digest


def _side(tool: Tool) -> str:
    side = getattr(getattr(tool, "origin", None), "side", None)
    return side if isinstance(side, str) else "local tool %r" % (tool.name,)


def combine_tools(*groups: Iterable[Tool]) -> List[Tool]:
    """All tools of ``groups`` in order; raise when two share a name, naming both sides.

    Pass local tools and each server's ``.tools()``:
    ``combine_tools(local, calc.tools(), web.tools(prefix="web_"))``.
    """
    seen: Dict[str, Tool] = {}
    out: List[Tool] = []
    for group in groups:
        for tool in group:
            if not isinstance(tool, Tool):
                raise WrongTypeError("each tool given to combine_tools()", "a Tool", tool)
            if tool.name in seen:
                raise MCPNameCollisionError(tool.name, _side(seen[tool.name]), _side(tool))
            seen[tool.name] = tool
            out.append(tool)
    return out
