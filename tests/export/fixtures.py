"""Runs to export, made here with the real loop: the demo's, a run with every optional member,
a demo batch, a hostile batch; and a stand-in OTLP/HTTP collector.

Every transcript is a pure function of this module (scripted models, a fixed
clock), so the expected exports in ``tests/vectors/export/`` hold on every
Python 3.8-3.13; ``tests/vectors/export/make.py`` rebuilds that folder from
these functions.
"""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import os
import shutil
import threading
from typing import Any, Dict, Iterator, List, Optional, Tuple

import demo
from agentloop import ModelReply, ScriptedModel, ToolCall, Usage, run, tool
from agentloop.batch import RunSpec, run_many
from agentloop.batch.ledger import ledger_bytes, make_checkpoint, parse_ledger

#: The demo transcripts, as demo.py writes them, and the names the vectors give them.
DEMO_NAMES = {
    "demo-answer.jsonl": "answer",
    "demo-recover.jsonl": "recover",
    "demo-budget.jsonl": "budget",
    "demo-parallel.jsonl": "parallel",
    "demo-approval.jsonl": "approval",
}
#: The HMAC key of the demo batch's checkpoint (test data, 32 bytes).
BATCH_KEY = b"agentloop export vectors: batch!"
#: The ledger line of the demo batch's run that failed in its worker (no transcript).
FAILED_LINE = {
    "error": "BrokenProcessPool",
    "name": "delta",
    "status": "worker_error",
    "origin": "agentloop/1/" + "d" * 64,
}


def demo_runs(folder: str) -> Dict[str, str]:
    """Run demo.py into ``folder``; return vector name -> transcript path."""
    with contextlib.redirect_stdout(io.StringIO()):
        status = demo.main(["--out", folder])
    if status != 0:
        raise AssertionError("demo.py failed")
    return {name: os.path.join(folder, file) for file, name in DEMO_NAMES.items()}


@tool
def add(a: int, b: int) -> dict:
    """Add two integers."""
    return {"sum": a + b}


def members_run(path: str) -> str:
    """docs/format.md's run with every optional member: usage with cache tokens, a truncated reply,
    a model that names itself and its server, a system prompt, prices and costs, a clock, final_result."""
    readings = iter([100, 100.5, 102.25])
    model = ScriptedModel(
        [
            ModelReply(
                "Adding.",
                [ToolCall("add", {"a": 40, "b": 2})],
                usage=Usage(1200, 40, cache_read_tokens=1000, cache_write_tokens=100),
                truncated=True,
            ),
            ModelReply("Done.", [ToolCall("final_result", {"result": 42})], usage=Usage(1300, 20)),
        ],
        info={"provider": "openai", "model": "m-1", "host": "127.0.0.1:8000"},
    )
    prices = {"m-1": {"input": "3", "output": "15", "cache_read": "0.3", "cache_write": "3.75"}}
    run(
        "What is 40 + 2?",
        model,
        [add],
        transcript=path,
        max_steps=4,
        max_tokens=100_000,
        system="Answer with final_result.",
        output_schema={"type": "integer"},
        max_tool_calls=5,
        max_cost="1",
        prices=prices,
        max_seconds=60,
        clock=lambda: next(readings),
        tool_timeout=30,
        overwrite=True,
    )
    return path


def model_error_run(path: str) -> str:
    """A run whose model raises in its second turn: a ``model_error`` stop."""

    def broken(messages: List[Dict[str, Any]], manifest: List[Dict[str, Any]]) -> ModelReply:
        raise ConnectionError("the model's server went away")

    model = ScriptedModel([ModelReply("Adding.", [ToolCall("add", {"a": 1, "b": 2})]), broken])
    run("What is 1 + 2?", model, [add], transcript=path, max_steps=4, max_tokens=1000, overwrite=True)
    return path


BATCH_SPECS = [
    RunSpec("alpha", "one", max_steps=4, max_tokens=1000),
    RunSpec("beta", "three", max_steps=4, max_tokens=1000),
    RunSpec("gamma", "seven", max_steps=1, max_tokens=1000),  # stops on step_budget
]


def _add_line(folder: str, line: Dict[str, Any], key: bytes) -> None:
    """Append a ledger line (as the driver writes one for a run whose worker died) and re-sign the checkpoint."""
    manifest = os.path.join(folder, "manifest.jsonl")
    with open(manifest, "rb") as handle:
        lines = parse_ledger(handle.read())
    data = ledger_bytes(lines + [line])
    with open(manifest, "wb") as handle:
        handle.write(data)
    checkpoint = os.path.join(folder, "manifest.checkpoint")
    with open(checkpoint, "rb") as handle:
        origin = handle.read().split(b"\n", 1)[0].decode("ascii")
    with open(checkpoint, "wb") as handle:
        handle.write(make_checkpoint(origin, data, key).to_bytes())


def demo_batch(folder: str, specs: Optional[List[RunSpec]] = None, failed: bool = True) -> str:
    """A batch of ``specs`` (default :data:`BATCH_SPECS`) run serially into ``folder`` with
    tests.support.batch_models, its checkpoint signed with :data:`BATCH_KEY`, plus (``failed``) one
    ``worker_error`` line; return the manifest's path."""
    run_many(
        specs or BATCH_SPECS,
        model="tests.support.batch_models:factory",
        tools="tests.support.batch_models:tools",
        out_dir=folder,
        checkpoint=os.path.join(folder, "manifest.checkpoint"),
        key=BATCH_KEY,
    )
    if failed:
        _add_line(folder, FAILED_LINE, BATCH_KEY)
    return os.path.join(folder, "manifest.jsonl")


def hostile_text(port: int) -> str:
    """Markup that would run a script or make a request if it reached a page unescaped, and
    control, bidi and zero-width characters: every request would go to 127.0.0.1:``port``."""
    url = "http://127.0.0.1:%d" % (port,)
    return (
        '<script>document.title="PWNED"</script><img src="%s/img" onerror="document.title=1">'
        '<link rel="stylesheet" href="%s/css"><iframe src="%s/frame"></iframe>'
        '<meta http-equiv="refresh" content="0;url=%s/refresh"><a href="javascript:alert(1)">x</a>'
        '<div style="background:url(%s/bg)">\x1b[31mred\x07\x00\u202eevil\u200b\u2028</div>"\'&'
        % (url, url, url, url, url)
    )


def hostile_batch(folder: str, port: int) -> str:
    """A batch whose tasks are :func:`hostile_text` and whose run names are markup and control
    characters (renamed in the ledger, as only a hand-written ledger can name them)."""
    text = hostile_text(port)
    specs = [RunSpec("h%d" % i, text + " #%d" % i, max_steps=2, max_tokens=1000) for i in range(3)]
    run_many(
        specs,
        model="tests.support.batch_models:factory",
        tools="tests.support.batch_models:tools",
        out_dir=folder,
        checkpoint=os.path.join(folder, "manifest.checkpoint"),
        key=BATCH_KEY,
    )
    # A file name holds no "/": a backslash, which a browser reads as one in an http URL, makes the request.
    names = [
        '<img src="http:\\\\127.0.0.1:%d\\name" onerror="document.title=1">' % (port,),
        "\x1b[2J\u202e<b>bold\u200b",
        '"><svg onload="document.title=2">',
    ]
    manifest = os.path.join(folder, "manifest.jsonl")
    with open(manifest, "rb") as handle:
        lines = parse_ledger(handle.read())
    for line, name in zip(lines, names):
        os.rename(os.path.join(folder, line["name"] + ".jsonl"), os.path.join(folder, name + ".jsonl"))
        line["name"] = name
    with open(manifest, "wb") as handle:
        handle.write(ledger_bytes(lines))
    os.remove(os.path.join(folder, "manifest.checkpoint"))
    return manifest


def retried_batch(source: str, target: str) -> str:
    """A copy of the batch ``source`` whose ledger first lists ``beta`` as a ``worker_error``: what a
    resumed batch writes when it runs a failed run again (its checkpoint, which no longer holds, removed)."""
    manifest = copy_batch(source, target)
    with open(manifest, "rb") as handle:
        lines = parse_ledger(handle.read())
    (beta,) = [line for line in lines if line["name"] == "beta"]
    failed = {"error": "BrokenProcessPool", "name": "beta", "origin": beta["origin"], "status": "worker_error"}
    with open(manifest, "wb") as handle:
        handle.write(ledger_bytes([failed] + lines))
    os.remove(os.path.join(target, "manifest.checkpoint"))
    return manifest


def copy_batch(source: str, target: str) -> str:
    """A copy of the batch folder ``source`` (to alter); return its manifest's path."""
    shutil.copytree(source, target)
    return os.path.join(target, "manifest.jsonl")


class Collector:
    """A stand-in OTLP/HTTP collector on 127.0.0.1: records each request, answers as told.

    ``answers`` is a list of ``(status, body)`` given in turn (the last one
    repeats); ``requests`` holds ``(path, headers, body)`` of each.
    """

    def __init__(self, answers: Optional[List[Tuple[int, bytes]]] = None) -> None:
        self.answers = list(answers or [(200, b"{}")])
        self.requests: List[Tuple[str, Dict[str, str], bytes]] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 -- http.server's name
                length = int(self.headers.get("Content-Length", "0"))
                owner.requests.append((self.path, dict(self.headers.items()), self.rfile.read(length)))
                status, body = owner.answers.pop(0) if len(owner.answers) > 1 else owner.answers[0]
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if 300 <= status < 400:
                    self.send_header("Location", "http://127.0.0.1:1/elsewhere")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        # shutdown() waits for serve_forever to look again: every 0.05 s, not the default 0.5 s
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "Collector":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d" % (self.port,)


@contextlib.contextmanager
def env(**values: str) -> Iterator[None]:
    """Environment variables set for a block."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def load(path: str) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
