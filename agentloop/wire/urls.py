"""Reading an ``http://`` or ``https://`` URL given by a user (RFC 3986 section 3), shared by the MCP
HTTP client and the OTLP exporter, which each word their own refusals (they never quote the URL:
its query may hold a token).
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from typing import Optional

__all__ = ["split_url", "http_host"]


def split_url(url: str) -> Optional[urllib.parse.SplitResult]:
    """``url`` split into its parts, or ``None`` when it cannot be read: ``"http://[::1/x"``, or a
    bracketed host that is no IPv6 address (which Python 3.8 lets through)."""
    try:
        parts = urllib.parse.urlsplit(url)
        if "[" in parts.netloc:
            ipaddress.IPv6Address((parts.hostname or "").split("%")[0])
    except ValueError:
        return None
    return parts


def http_host(parts: urllib.parse.SplitResult) -> Optional[str]:
    """The host of an ``http://`` or ``https://`` URL, or ``None`` when ``parts`` is not one or has no host."""
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname
