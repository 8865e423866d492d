"""A stand-in OTLP/HTTP collector for the docs: ``python3 -m tests.export.collector --port 8765``.

It answers every POST with 200 and ``{}`` and prints one line per request,
``POST PATH N bytes, Authorization: yes|no`` (never a header's value), until
it is stopped.
"""

from __future__ import annotations

import argparse
import http.server
import sys
from typing import Any, Optional, Sequence


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 -- http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        print(
            "POST %s %d bytes, Authorization: %s"
            % (self.path, len(body), "yes" if self.headers.get("Authorization") else "no"),
            flush=True,
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    with http.server.HTTPServer(("127.0.0.1", args.port), _Handler) as server:
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
