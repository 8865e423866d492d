"""Turns per second against a local server, with one kept-alive connection and with one per turn.

    python3 bench/keepalive.py [--turns 200] [--repeat 3]

Over HTTP, then over HTTPS (a self-signed certificate for 127.0.0.1 made with the ``openssl``
command, trusted through ``SSL_CERT_FILE``; the row is skipped, saying so, without it).

The same run twice over: an ``OpenAIChat`` adapter against the repository's stand-in server
(``tests/support/loopback.py``, HTTP/1.1 on 127.0.0.1, in a process of its own), ``--turns`` turns each
asking for one ``echo`` call and getting its result back (a fresh reply per turn, a conversation that grows), its
transcript written to disk.  Once with ``HttpTransport(keep_alive=True)`` (the default: the turns
share one connection) and once with ``keep_alive=False`` (``Connection: close``, a new TCP
connection per turn, what the urllib transport did before).  Reports the best of ``--repeat``
runs in turns per second and in the client's CPU milliseconds per turn (``time.process_time``
of the run's process: the server runs in another), the connections the server saw, and the
ratios.  On a busy machine the turns per second move with the load; the CPU time much less.

The loopback interface is the cheapest case for a new connection: a real endpoint adds a network
round trip for the TCP handshake and one or two more for TLS to every turn that opens one, so the
figures here are a lower bound of what reuse saves.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentloop import run  # noqa: E402
from agentloop.models import HttpTransport, OpenAIChat  # noqa: E402
from tests.support.helpers import demo_tools  # noqa: E402
from tests.support.loopback import LoopbackServer, openai_reply  # noqa: E402 -- the stand-in server of the tests


def script(turns: int) -> List[Any]:
    """``turns - 1`` replies that each call echo, then an answer."""
    calls = [
        openai_reply("Turn %d: echoing." % i, [("c%d" % i, "echo", '{"text": "n\\u00e4chste %d"}' % i)])
        for i in range(1, turns)
    ]
    return calls + [openai_reply("Done.")]


def certificate(folder: str) -> Optional[Tuple[str, str]]:
    """A self-signed certificate for 127.0.0.1 made with the ``openssl`` command (``None`` without it)."""
    cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    command = [
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
        "-keyout",
        key,
        "-out",
        cert,
    ]
    try:
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError):
        return None
    return cert, key


def serve(turns: int, tls: Optional[Tuple[str, str]]) -> int:
    """``--serve``: the stand-in with the script of a run, in a process of its own (so that it does not
    share the run's interpreter lock); prints its port, then the connections it saw once stdin closes."""
    with LoopbackServer(script(turns), tls=tls) as server:
        print(server.port, flush=True)
        sys.stdin.read()
        print(server.connections, flush=True)
    return 0


def one_run(
    turns: int, keep_alive: bool, folder: str, tls: Optional[Tuple[str, str]] = None
) -> Tuple[float, float, int]:
    """Seconds for the whole run, the run's CPU seconds (this process: the client), and the connections
    the server saw."""
    command = [sys.executable, os.path.abspath(__file__), "--serve", str(turns)] + (
        ["--cert", tls[0], "--key", tls[1]] if tls else []
    )
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert server.stdin is not None and server.stdout is not None
    try:
        port = int(server.stdout.readline())
        transport = HttpTransport(timeout=30, keep_alive=keep_alive)
        base_url = "%s://127.0.0.1:%d/v1" % ("https" if tls else "http", port)
        model = OpenAIChat("bench", base_url=base_url, api_key="", transport=transport)
        tools = [t for t in demo_tools() if t.name == "echo"]
        start, cpu = time.perf_counter(), time.process_time()
        result = run(
            "Echo.",
            model,
            tools,
            transcript=os.path.join(folder, "keepalive.jsonl"),
            max_steps=turns,
            max_tokens=10**9,
            overwrite=True,
        )
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        transport.close()
        server.stdin.close()
        connections = int(server.stdout.readline())
    finally:
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert result.steps == turns and result.stop_reason == "no_tool_calls", result
    return elapsed, cpu, connections


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--serve", type=int, metavar="TURNS", help=argparse.SUPPRESS)
    parser.add_argument("--cert", help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve(args.serve, (args.cert, args.key) if args.cert else None)
    print(
        "python %s on %s, %d cpus; %d turns against 127.0.0.1, best of %d"
        % (platform.python_version(), platform.machine(), os.cpu_count() or 0, args.turns, args.repeat)
    )
    print("%-36s %12s %12s %12s" % ("transport", "turns/s", "client ms CPU/turn", "connections"))
    with tempfile.TemporaryDirectory() as folder:
        tls = certificate(folder)
        compare(args.turns, args.repeat, folder, None)
        if tls is None:
            print("!! SKIPPED: HTTPS: no openssl command to make a self-signed certificate")
            return 0
        os.environ["SSL_CERT_FILE"] = tls[0]  # the client trusts the self-signed certificate
        compare(args.turns, args.repeat, folder, tls)
    return 0


def compare(turns: int, repeat: int, folder: str, tls: Optional[Tuple[str, str]]) -> None:
    """The two modes in turn, ``repeat`` times each (so that neither gets the quieter moments); the best of each."""
    scheme = "HTTPS" if tls else "HTTP"
    modes = (("%s, one connection per turn" % scheme, False), ("%s, kept alive (the default)" % scheme, True))
    runs: Dict[bool, List[Tuple[float, float, int]]] = {False: [], True: []}
    one_run(min(turns, 20), True, folder, tls)  # warm up (imports, the first server process)
    for _ in range(repeat):
        for _, keep in modes:
            runs[keep].append(one_run(turns, keep, folder, tls))
    rates, cpu = {}, {}
    for label, keep in modes:
        rates[keep] = turns / min(seconds for seconds, _, _ in runs[keep])
        cpu[keep] = min(used for _, used, _ in runs[keep]) / turns * 1000
        print("%-36s %12.1f %12.2f %12d" % (label, rates[keep], cpu[keep], runs[keep][0][2]))
    print(
        "%s: kept alive / one per turn: %.2fx the turns per second, %.2fx the client's CPU per turn"
        % (scheme, rates[True] / rates[False], cpu[True] / cpu[False])
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
