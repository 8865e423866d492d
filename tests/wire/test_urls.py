"""wire.urls: a user's http(s) URL read once for the MCP client and the OTLP exporter, refused in their own words."""

from __future__ import annotations

import unittest

from agentloop.errors import BadArgumentError, MCPConfigError
from agentloop.export.otlp_http import collector
from agentloop.mcp.http import MCPHttp
from agentloop.wire.urls import http_host, split_url

# "[::1/x" Python refuses itself; "[sk-SECRET]" and "[zz]" Python 3.8 lets through, "[v1.abc]" (RFC 3986 IPvFuture)
# every version: no IPv6 address.
UNREADABLE = ("http://[::1/x", "http://[sk-SECRET]/x", "https://[zz]:8/x", "http://[v1.abc]/x")


class TestSplitUrl(unittest.TestCase):
    def test_a_bracketed_host_must_be_an_ipv6_address(self) -> None:
        for url in UNREADABLE:
            with self.subTest(url):
                self.assertIsNone(split_url(url))
        for url in ("http://[::1]:8080/v1", "http://[fe80::1%25eth0]/v1", "https://example.com/x?q=1"):
            with self.subTest(url):
                self.assertIsNotNone(split_url(url))

    def test_only_http_and_https_with_a_host_have_one(self) -> None:
        hosts = {
            url: http_host(split_url(url)) for url in ("http://[::1]:8/x", "HTTPS://Ex.com", "ftp://h/", "http:///x")
        }
        self.assertEqual(
            hosts, {"http://[::1]:8/x": "::1", "HTTPS://Ex.com": "ex.com", "ftp://h/": None, "http:///x": None}
        )

    def test_the_mcp_client_and_the_exporter_refuse_in_their_words_without_quoting(self) -> None:
        for url in UNREADABLE:
            with self.subTest(url):
                with self.assertRaises(MCPConfigError) as mcp:
                    MCPHttp(url, name="s")
                self.assertEqual(str(mcp.exception), "url: is not a URL that can be read (a bracketed host?)")
                with self.assertRaises(BadArgumentError) as otlp:
                    collector(url)
                self.assertEqual(str(otlp.exception), "endpoint is not a URL that can be read (a bracketed host?)")
        with self.assertRaises(MCPConfigError) as mcp:
            MCPHttp("ftp://h/x", name="s")
        self.assertEqual(str(mcp.exception), "url: must be an http:// or https:// URL with a host")
        with self.assertRaises(BadArgumentError) as otlp:
            collector("http:///x")
        self.assertEqual(str(otlp.exception), "endpoint must be an http:// or https:// URL with a host")


if __name__ == "__main__":
    unittest.main()
