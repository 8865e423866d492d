"""An MCP server whose every answer is scripted, for the odd servers of tests/mcp/test_mcp_odd_servers.py.

    python tests/support/mcp_scripted_server.py SCRIPT_JSON      (stdio)
    serve_http(script) -> (server, url)                  (in-process Streamable HTTP, JSON answers)

``SCRIPT_JSON`` maps a method to the list of what to do on each request
of it, in order (the last entry repeats).  An entry is
``{"result": {...}}`` or ``{"error": {...}}`` (sent with the request's
id), ``{"raw": "text"}`` (the line written as is), ``{"silent": true}``
(no answer), ``{"kill": true}`` (the process sends itself SIGKILL) or
``{"close": true}`` (stdout closed, the process stays until stdin ends).
``initialize`` answers protocol 2025-11-25 unless scripted; notifications
are read and ignored (HTTP: 202).  Over HTTP only ``result``, ``error`` and
``raw`` apply, with ``"status": N`` (the HTTP status, 200 when absent) and
``"session": "ID"`` (an ``Mcp-Session-Id`` response header) beside them, and
``{"stream_hex": "..."}``: those bytes as a ``text/event-stream`` answer.
Any entry may hold ``"delay": S``: wait S seconds first; over HTTP a
notification may be scripted with a delay alone (its 202 then waits).
Stdlib only.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

Script = Dict[str, List[Dict[str, Any]]]
_INITIALIZE = [
    {
        "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "serverInfo": {"name": "scripted", "version": "1"},
        }
    }
]


class Steps:
    """The next scripted step for each request (``None``: a notification, or a method not scripted)."""

    def __init__(self, script: Script) -> None:
        self.script = dict(script)
        self.script.setdefault("initialize", _INITIALIZE)
        self.seen: Dict[str, int] = {}
        self.lock = threading.Lock()

    def next(self, message: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """The step for a request, after its ``delay``; for a notification only the delay (``None``)."""
        method = message.get("method")
        if method not in self.script:
            return None
        with self.lock:
            steps = self.script[method]
            step = steps[min(self.seen.get(method, 0), len(steps) - 1)]
            self.seen[method] = self.seen.get(method, 0) + 1
        time.sleep(step.get("delay", 0))
        return step if "id" in message else None


def _answer(message: Dict[str, Any], step: Dict[str, Any]) -> bytes:
    if "raw" in step:
        return str(step["raw"]).encode("utf-8")
    answer = {"jsonrpc": "2.0", "id": message["id"]}
    answer.update({k: v for k, v in step.items() if k in ("result", "error")})
    return json.dumps(answer).encode("utf-8")


def serve_http(script: Script) -> Tuple[ThreadingHTTPServer, str]:
    """Serve ``script`` over HTTP on 127.0.0.1 in a thread; ``server.shutdown()`` and ``server_close()`` to stop."""
    steps = Steps(script)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            step = steps.next(message)
            stream = step is not None and "stream_hex" in step
            body = b"" if step is None else bytes.fromhex(step["stream_hex"]) if stream else _answer(message, step)
            self.send_response(202 if step is None else step.get("status", 200))
            if step is not None and "session" in step:
                self.send_header("Mcp-Session-Id", step["session"])
            self.send_header("Content-Type", "text/event-stream" if stream else "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_DELETE(self) -> None:
            self.send_response(204)
            self.end_headers()

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return httpd, "http://127.0.0.1:%d/mcp" % (httpd.server_address[1],)


def main() -> None:
    steps = Steps(json.loads(sys.argv[1]))
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        step = steps.next(message)
        if step is None:
            continue
        if step.get("kill"):
            os.kill(os.getpid(), signal.SIGKILL)
        if step.get("close"):
            out.close()
            os.close(1)
            continue
        if step.get("silent"):
            continue
        out.write(_answer(message, step) + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
