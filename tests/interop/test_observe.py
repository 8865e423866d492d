"""Exports and batch pages against the real components, run by ``.ci/interop-observe``.

Skipped unless ``AGENTLOOP_OBSERVE=1``; each part runs where its component
is installed, and with ``AGENTLOOP_REQUIRE_INTEROP=1`` a missing one fails
instead of skipping:

* opentelemetry-proto: every OTLP/JSON export parses into an
  ``ExportTraceServiceRequest`` (``google.protobuf.json_format.Parse``,
  unknown fields refused), and again with its hex ids as the standard
  protobuf JSON mapping writes bytes, giving 16- and 8-byte ids;
* opentelemetry-semantic-conventions 0.64b0 (generated from semantic
  conventions 1.41.1): every ``gen_ai.*`` name agentloop uses is one its
  registry defines and does not deprecate, and the general ones are stable;
* a local OTLP/HTTP receiver that parses what it gets with
  opentelemetry-proto receives the same spans through ``--endpoint``;
* inspect-ai: ``read_eval_log`` reads every Inspect export, with the sample
  count, messages and tool calls of the transcripts; ``inspect view``
  serves them;
* Chromium (``AGENTLOOP_CHROMIUM``, Debian's ``chromium``), headless: the
  batch page and a hostile batch's page load with no script run, no request
  made and the verdict in the first screen (screenshots go to
  ``AGENTLOOP_SCREENSHOTS`` when set).
"""

from __future__ import annotations

import ast
import base64
import glob
import html.parser
import http.server
import importlib
import importlib.util
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
import zlib
from typing import Any, Dict, List, Optional, Tuple

ENABLED = os.environ.get("AGENTLOOP_OBSERVE") == "1"
# The components are imported by name (importlib): the tree itself imports only the standard library.
_TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.trace_service_pb2"
REQUIRE = os.environ.get("AGENTLOOP_REQUIRE_INTEROP") == "1"
CHROMIUM = os.environ.get("AGENTLOOP_CHROMIUM", "")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VECTORS = os.path.join(ROOT, "tests", "vectors", "export")


def have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def need(module: str) -> None:
    if not have(module):
        if REQUIRE:
            raise AssertionError("%s is not installed, and AGENTLOOP_REQUIRE_INTEROP=1" % (module,))
        raise unittest.SkipTest("%s is not installed" % (module,))


def agentloop(*argv: str, env: Optional[Dict[str, str]] = None) -> Tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "agentloop"] + list(argv),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, **(env or {})),
        timeout=120,
    )
    return proc.returncode, proc.stdout, proc.stderr


class Work:
    """The demo transcripts, the demo batch, and every export of them, made once in a temporary folder."""

    folder = ""
    singles: Dict[str, str] = {}

    @classmethod
    def make(cls) -> None:
        if cls.folder:
            return
        sys.path.insert(0, ROOT)
        from tests.export import fixtures

        cls.folder = tempfile.mkdtemp(prefix="agentloop-observe-")
        cls.singles = fixtures.demo_runs(cls.folder)
        cls.singles["members"] = fixtures.members_run(os.path.join(cls.folder, "members.jsonl"))
        cls.singles["model_error"] = fixtures.model_error_run(os.path.join(cls.folder, "model_error.jsonl"))
        os.mkdir(os.path.join(cls.folder, "batch"))
        cls.manifest = fixtures.demo_batch(os.path.join(cls.folder, "batch"))
        os.mkdir(os.path.join(cls.folder, "logs"))
        for name, path in cls.singles.items():
            for options, out in (
                (["--otel"], name + ".otlp.json"),
                (["--otel", "--include-content"], name + ".content.otlp.json"),
                (["--inspect"], os.path.join("logs", "1970-01-01T00-00-00_%s.json" % (name,))),
            ):
                status, text, err = agentloop("export", *options, path, "-o", os.path.join(cls.folder, out))
                assert status == 0, (options, text, err)
        for kind, out in (
            ("--otel", "batch.otlp.json"),
            ("--inspect", os.path.join("logs", "1970-01-01T00-00-00_batch.json")),
        ):
            status, text, err = agentloop(
                "export", kind, "--manifest", cls.manifest, "-o", os.path.join(cls.folder, out)
            )
            assert status == 0, (text, err)

    @classmethod
    def otlp_files(cls) -> List[str]:
        cls.make()
        return sorted(
            glob.glob(os.path.join(cls.folder, "*.otlp.json")) + glob.glob(os.path.join(VECTORS, "*.otlp.json"))
        )

    @classmethod
    def inspect_files(cls) -> List[str]:
        cls.make()
        return sorted(
            glob.glob(os.path.join(cls.folder, "logs", "*.json")) + glob.glob(os.path.join(VECTORS, "*.inspect.json"))
        )


def with_byte_ids(raw: str) -> str:
    """The export with its hex ids written as the standard protobuf JSON mapping writes bytes (base64)."""
    body = json.loads(raw)
    for resource in body["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode("ascii")
    return json.dumps(body)


def parse_otlp(raw: str) -> Any:
    json_format = importlib.import_module("google.protobuf.json_format")
    ExportTraceServiceRequest = importlib.import_module(_TRACE_SERVICE).ExportTraceServiceRequest

    json_format.Parse(raw, ExportTraceServiceRequest())  # as written: field names, types, enums
    return json_format.Parse(with_byte_ids(raw), ExportTraceServiceRequest())


@unittest.skipUnless(ENABLED, "the observability interop leg runs from .ci/interop-observe (AGENTLOOP_OBSERVE=1)")
class TestOpentelemetryProto(unittest.TestCase):
    def test_every_export_is_an_export_trace_service_request(self) -> None:
        need("opentelemetry.proto")
        files = Work.otlp_files()
        self.assertGreaterEqual(len(files), 25)  # 12 vectors, and 15 exports made here
        for path in files:
            with self.subTest(os.path.basename(path)), open(path, encoding="utf-8") as handle:
                raw = handle.read()
                request = parse_otlp(raw)
                written = json.loads(raw)["resourceSpans"][0]["scopeSpans"][0]["spans"]
                spans = request.resource_spans[0].scope_spans[0].spans
                self.assertEqual(len(spans), len(written))
                for span, original in zip(spans, written):
                    self.assertEqual((len(span.trace_id), len(span.span_id)), (16, 8))
                    self.assertEqual(
                        (span.trace_id.hex(), span.span_id.hex()), (original["traceId"], original["spanId"])
                    )
                    self.assertEqual(
                        (span.kind, span.status.code), (original["kind"], original.get("status", {}).get("code", 0))
                    )
                    self.assertLessEqual(span.start_time_unix_nano, span.end_time_unix_nano)
                self.assertEqual(
                    request.resource_spans[0].scope_spans[0].schema_url, "https://opentelemetry.io/schemas/1.41.1"
                )
        print("opentelemetry-proto parsed %d exports" % (len(files),))


@unittest.skipUnless(ENABLED, "the observability interop leg runs from .ci/interop-observe (AGENTLOOP_OBSERVE=1)")
class TestConventions(unittest.TestCase):
    """Every attribute name used, against the registry of the pinned release, as the semconv package generates it."""

    def defined(self, module: str) -> Tuple[Dict[str, bool], str]:
        """``{name: deprecated}`` of a semconv attributes module's constants, read from its source."""
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None
        with open(spec.origin, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        found: Dict[str, bool] = {}
        body = tree.body
        for i, node in enumerate(body):
            value = getattr(node, "value", None)
            if isinstance(node, ast.AnnAssign) and isinstance(value, ast.Constant) and isinstance(value.value, str):
                doc = body[i + 1] if i + 1 < len(body) else None
                text = doc.value.value if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) else ""
                found[value.value] = str(text).strip().startswith("Deprecated")
        return found, spec.origin

    def test_every_gen_ai_name_is_defined_and_current_in_1_41_1(self) -> None:
        need("opentelemetry.semconv")
        Schemas = importlib.import_module("opentelemetry.semconv.schemas").Schemas

        from agentloop.export import semconv

        newest = max(
            (s.value for s in Schemas), key=lambda url: tuple(int(p) for p in url.rsplit("/", 1)[1].split("."))
        )
        self.assertEqual(
            newest, semconv.SCHEMA_URL, "the semconv package is not the one generated from the pinned release"
        )
        gen_ai, origin = self.defined("opentelemetry.semconv._incubating.attributes.gen_ai_attributes")
        self.assertGreater(len(gen_ai), 40)
        for name in semconv.GEN_AI_ATTRIBUTES:
            with self.subTest(name):
                self.assertIn(name, gen_ai)
                self.assertFalse(gen_ai[name], "%s is deprecated in %s" % (name, semconv.SEMCONV_VERSION))
        stable: Dict[str, bool] = {}
        for module in ("server_attributes", "error_attributes", "service_attributes"):
            stable.update(self.defined("opentelemetry.semconv.attributes." + module)[0])
        for name in semconv.GENERAL_ATTRIBUTES:
            self.assertIn(name, stable)
        print(
            "conventions %s: %d gen_ai names used, all defined in %s"
            % (semconv.SEMCONV_VERSION, len(semconv.GEN_AI_ATTRIBUTES), origin)
        )

    def test_every_name_in_every_export_is_in_the_one_list(self) -> None:
        from agentloop.export import semconv

        seen = set()
        for path in Work.otlp_files():
            with open(path, encoding="utf-8") as handle:
                body = json.load(handle)
            for resource in body["resourceSpans"]:
                seen.update(a["key"] for a in resource["resource"]["attributes"])
                for span in resource["scopeSpans"][0]["spans"]:
                    seen.update(a["key"] for a in span["attributes"])
        self.assertEqual(sorted(seen - set(semconv.ATTRIBUTES)), [])
        self.assertEqual(
            sorted(n for n in semconv.GEN_AI_ATTRIBUTES if n not in seen), []
        )  # and every one listed is used


class _Receiver:
    """A local OTLP/HTTP receiver: parses each body with opentelemetry-proto, answers an ExportTraceServiceResponse."""

    def __init__(self) -> None:
        self.received: List[Tuple[str, Dict[str, str], bytes, int]] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                json_format = importlib.import_module("google.protobuf.json_format")
                ExportTraceServiceResponse = importlib.import_module(_TRACE_SERVICE).ExportTraceServiceResponse

                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = parse_otlp(body.decode("utf-8"))
                spans = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
                owner.received.append((self.path, dict(self.headers.items()), body, spans))
                answer = json_format.MessageToJson(ExportTraceServiceResponse()).encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % (self.server.server_address[1],)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@unittest.skipUnless(ENABLED, "the observability interop leg runs from .ci/interop-observe (AGENTLOOP_OBSERVE=1)")
class TestEndpoint(unittest.TestCase):
    def test_the_receiver_gets_the_same_spans_and_the_token_stays_secret(self) -> None:
        need("opentelemetry.proto")
        Work.make()
        receiver = _Receiver()
        self.addCleanup(receiver.close)
        token = "Bearer interop-token-0123456789"
        sent = [("recover", ["--otel", Work.singles["recover"]]), ("batch", ["--otel", "--manifest", Work.manifest])]
        for name, argv in sent:
            out = os.path.join(Work.folder, name + ".sent.json")
            status, text, err = agentloop(
                "export",
                *argv,
                "-o",
                out,
                "--endpoint",
                receiver.url + "/otlp",
                "--header",
                "Authorization=INTEROP_OTLP_TOKEN",
                env={"INTEROP_OTLP_TOKEN": token},
            )
            self.assertEqual(status, 0, err)
            path, headers, body, spans = receiver.received[-1]
            with open(out, "rb") as handle:
                self.assertEqual(body, handle.read())
            self.assertEqual(
                (path, headers["Authorization"], headers["Content-Type"]),
                ("/otlp/v1/traces", token, "application/json"),
            )
            self.assertIn("sent: %d spans to 127.0.0.1:" % (spans,), text)
            self.assertNotIn("interop-token", text + err)
        self.assertEqual([r[3] for r in receiver.received], [10, 16])
        print("receiver: %s spans parsed by opentelemetry-proto" % ([r[3] for r in receiver.received],))


@unittest.skipUnless(ENABLED, "the observability interop leg runs from .ci/interop-observe (AGENTLOOP_OBSERVE=1)")
class TestInspect(unittest.TestCase):
    def transcript_of(self, path: str, sample_id: Any) -> List[Dict[str, Any]]:
        base = os.path.basename(path)
        if "batch" in base:
            folder = os.path.join(VECTORS, "batch") if path.startswith(VECTORS) else os.path.join(Work.folder, "batch")
            source = os.path.join(folder, "%s.jsonl" % (sample_id,))
        elif path.startswith(VECTORS):
            source = os.path.join(VECTORS, base.split(".")[0] + ".jsonl")
        else:
            source = Work.singles[base.split("_", 1)[1][: -len(".json")]]
        with open(source, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle]

    def test_read_eval_log_reads_every_export_as_its_transcripts_say(self) -> None:
        need("inspect_ai")
        read_eval_log = importlib.import_module("inspect_ai.log").read_eval_log

        files = Work.inspect_files()
        self.assertGreaterEqual(len(files), 16)
        for path in files:
            with self.subTest(os.path.basename(path)):
                log = read_eval_log(path)
                with open(path, encoding="utf-8") as handle:
                    written = json.load(handle)
                self.assertEqual((log.status, len(log.samples or [])), ("success", len(written["samples"])))
                for sample in log.samples or []:
                    if sample.error is not None and not sample.messages:
                        continue  # a batch run without a transcript
                    self.check(sample, self.transcript_of(path, sample.id))
        print("inspect-ai read_eval_log read %d logs" % (len(files),))

    def check(self, sample: Any, records: List[Dict[str, Any]]) -> None:
        later = [r for r in records[1:] if r["kind"] in ("assistant", "tool")]
        messages = [m for m in sample.messages if m.role in ("assistant", "tool")]
        self.assertEqual([m.role for m in messages], [r["kind"] for r in later])
        self.assertEqual(sample.input, records[0]["payload"]["task"])
        for message, record in zip(messages, later):
            payload = record["payload"]
            if message.role == "assistant":
                calls = [(c.id, c.function, c.arguments) for c in message.tool_calls or []]
                self.assertEqual(calls, [(c["id"], c["name"], c["arguments"] or {}) for c in payload["tool_calls"]])
            else:
                self.assertEqual(
                    (message.tool_call_id, message.function, message.error is None),
                    (payload["id"], payload["name"], payload["ok"]),
                )
        self.assertEqual((sample.metadata["verdict"], sample.metadata["head"]), ("verified", records[-1]["hash"]))

    def test_inspect_view_lists_and_serves_the_logs(self) -> None:
        need("inspect_ai")
        list_eval_logs = importlib.import_module("inspect_ai.log").list_eval_logs

        Work.make()
        logs = os.path.join(Work.folder, "logs")
        listed = sorted(os.path.basename(i.name) for i in list_eval_logs(logs))
        self.assertEqual(listed, sorted(os.listdir(logs)))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        inspect = os.path.join(os.path.dirname(sys.executable), "inspect")
        view = subprocess.Popen(
            [inspect, "view", "start", "--log-dir", logs, "--host", "127.0.0.1", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.addCleanup(self.stop, view)
        listing = json.loads(self.get("http://127.0.0.1:%d/api/logs" % (port,), view))
        self.assertEqual(sorted(os.path.basename(f["name"]) for f in listing["files"]), listed)
        # the viewer reads a log through Inspect's own EvalLog model and serves it again
        served = json.loads(
            self.get(
                "http://127.0.0.1:%d/api/logs/%s" % (port, os.path.join(logs, "1970-01-01T00-00-00_recover.json")), view
            )
        )
        self.assertEqual(len(served["samples"]), 1)
        self.assertEqual(served["samples"][0]["metadata"]["verdict"], "verified")
        print("inspect view on 127.0.0.1:%d served %d logs" % (port, len(listed)))

    @staticmethod
    def stop(view: "subprocess.Popen[bytes]") -> None:
        view.terminate()
        view.communicate(timeout=60)

    def get(self, url: str, view: "subprocess.Popen[bytes]") -> bytes:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=10) as response:
                    data: bytes = response.read()
                    return data
            except OSError as exc:
                if view.poll() is not None or time.monotonic() > deadline:
                    view.kill()
                    raise AssertionError(
                        "inspect view did not serve %s: %s %s" % (url, exc, view.communicate()[1][-2000:])
                    )
                time.sleep(0.5)


# --- Chromium ------------------------------------------------------------------------


class _Trap:
    """A web server on 127.0.0.1 that counts every request: a page must make none."""

    def __init__(self) -> None:
        self.hits: List[str] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                owner.hits.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Tags(html.parser.HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: List[str] = []
        self.title = ""
        self._in_title = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data


def _png_rows(path: str) -> Tuple[int, int, List[bytes], int]:
    """Width, height, raw rows and bytes per pixel of an 8-bit RGB(A), non-interlaced PNG (what Chromium writes)."""
    with open(path, "rb") as handle:
        data = handle.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks, header = 8, [], b""
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        if kind == b"IHDR":
            header = data[at + 8 : at + 8 + length]
        elif kind == b"IDAT":
            chunks.append(data[at + 8 : at + 8 + length])
        at += 12 + length
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * bpp
    rows: List[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - bpp] if x >= bpp else 0
            up, corner = prev[x], prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + left) & 255
            elif kind == 2:
                line[x] = (line[x] + up) & 255
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows, bpp


def verdict_bar(path: str, rgb: Tuple[int, int, int]) -> Optional[Tuple[int, int]]:
    """``(x, y)`` of the verdict's left border in a screenshot: a column of ``rgb`` at least 30 pixels tall."""
    width, height, rows, bpp = _png_rows(path)
    for x in range(min(width, 200)):
        run = 0
        for y in range(height):
            pixel = tuple(rows[y][x * bpp : x * bpp + 3])
            run = run + 1 if all(abs(a - b) <= 8 for a, b in zip(pixel, rgb)) else 0
            if run >= 30:
                return x, y - 29
    return None


@unittest.skipUnless(ENABLED, "the observability interop leg runs from .ci/interop-observe (AGENTLOOP_OBSERVE=1)")
class TestChromium(unittest.TestCase):
    def setUp(self) -> None:
        if not CHROMIUM:
            if REQUIRE:
                raise AssertionError("AGENTLOOP_CHROMIUM is not set, and AGENTLOOP_REQUIRE_INTEROP=1")
            raise unittest.SkipTest("chromium is not installed")
        self.folder = tempfile.mkdtemp(prefix="agentloop-chromium-")
        self.addCleanup(shutil.rmtree, self.folder, True)
        self.trap = _Trap()
        self.addCleanup(self.trap.close)

    def chromium(self, page: str, *what: str) -> Tuple[str, str]:
        profile = tempfile.mkdtemp(prefix="profile-", dir=self.folder)
        argv = (
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--user-data-dir=" + profile,
                "--enable-logging=stderr",
                "--v=0",
                "--window-size=1280,800",
            ]
            + list(what)
            + ["file://" + page]
        )
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        return proc.stdout, proc.stderr

    def load(self, page: str, expect_title: str) -> str:
        dom, log = self.chromium(page, "--dump-dom")
        tags = _Tags(dom)
        self.assertEqual(tags.title, expect_title)  # a script would have rewritten it
        self.assertEqual(
            sorted({"script", "img", "iframe", "svg", "link", "object", "embed", "b"} & set(tags.tags)), []
        )
        self.assertNotIn("Content Security Policy", log)  # nothing even tried to load
        self.assertNotIn("Refused to", log)
        time.sleep(0.5)
        self.assertEqual(self.trap.hits, [])
        return dom

    def screenshot(self, page: str, name: str) -> str:
        shot = os.path.join(self.folder, name)
        self.chromium(page, "--screenshot=" + shot, "--hide-scrollbars")
        keep = os.environ.get("AGENTLOOP_SCREENSHOTS")
        if keep:
            shutil.copyfile(shot, os.path.join(keep, name))
        return shot

    def pages(self) -> Tuple[str, str]:
        sys.path.insert(0, ROOT)
        from tests.export import fixtures

        os.mkdir(os.path.join(self.folder, "batch"))
        os.mkdir(os.path.join(self.folder, "hostile"))
        manifest = fixtures.demo_batch(os.path.join(self.folder, "batch"), failed=False)  # a green verdict
        hostile = fixtures.hostile_batch(os.path.join(self.folder, "hostile"), self.trap.port)
        for path in (manifest, hostile):
            status, out, err = agentloop("report", "--manifest", path)
            self.assertEqual(status, 0, out + err)
        return os.path.join(self.folder, "batch", "batch.html"), os.path.join(self.folder, "hostile", "batch.html")

    def test_the_pages_run_no_script_make_no_request_and_show_the_verdict_first(self) -> None:
        batch, hostile = self.pages()
        self.load(batch, "✓ batch verified: batch")
        dom = self.load(hostile, "✓ batch verified: hostile")
        self.assertIn("&lt;svg onload=", dom)
        self.assertIn("\\u001b", dom)
        for page in (batch, hostile, os.path.join(os.path.dirname(hostile), '"><svg onload="document.title=2">.html')):
            with open(page, encoding="utf-8") as handle:
                self.load(page, _Tags(handle.read()).title)  # the title agentloop wrote, unchanged by any script
        for page, name in ((batch, "batch.png"), (hostile, "hostile.png")):
            bar = verdict_bar(self.screenshot(page, name), (0x1A, 0x7F, 0x37))  # the verdict's green border
            self.assertIsNotNone(bar, name)
            assert bar is not None
            self.assertLess(bar[1], 400, "the verdict is not in the first screen of %s" % (name,))
        print("chromium: both pages loaded, no script, no request; verdict at y=%d" % (bar[1],))

    def test_an_altered_batch_shows_its_red_verdict_first(self) -> None:
        batch, _ = self.pages()
        os.remove(os.path.join(os.path.dirname(batch), "beta.jsonl"))
        status, _, _ = agentloop("report", "--manifest", os.path.join(os.path.dirname(batch), "manifest.jsonl"))
        self.assertEqual(status, 1)
        self.load(batch, "✗ batch NOT verified: batch")
        bar = verdict_bar(self.screenshot(batch, "altered.png"), (0xCF, 0x22, 0x2E))
        self.assertTrue(bar is not None and bar[1] < 400, bar)

    def test_the_detector_sees_a_page_that_is_not_escaped(self) -> None:
        """The negative control, kept: the same hostile text pasted raw, without a CSP, is caught."""
        sys.path.insert(0, ROOT)
        from tests.export.fixtures import hostile_text

        page = os.path.join(self.folder, "raw.html")
        with open(page, "w", encoding="utf-8") as handle:
            handle.write(
                "<!DOCTYPE html><html><head><title>raw</title></head><body>%s</body></html>"
                % (hostile_text(self.trap.port),)
            )
        dom, _ = self.chromium(page, "--dump-dom")
        time.sleep(0.5)
        self.assertTrue(self.trap.hits or _Tags(dom).title != "raw", "the detector saw nothing")
        print(
            "negative control: an unescaped page made %d request(s), title %r" % (len(self.trap.hits), _Tags(dom).title)
        )


def tearDownModule() -> None:  # noqa: N802 -- unittest's name
    if Work.folder:
        shutil.rmtree(Work.folder, ignore_errors=True)
