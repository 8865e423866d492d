"""``agentloop export`` and ``agentloop report --manifest``: outputs, refusals, secrets, exit codes."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from typing import Tuple

from agentloop.cli import main
from tests.export.fixtures import BATCH_KEY, Collector, copy_batch, env
from tests.support.helpers import TempDir, read_lines

VECTORS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "export")
TOKEN = "Bearer sk-collector-0123456789"


class CliCase(TempDir):
    def cli(self, *argv: str) -> Tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(list(argv), out=out)
        return status, out.getvalue(), err.getvalue()

    def vector(self, name: str) -> bytes:
        with open(os.path.join(VECTORS, name), "rb") as handle:
            return handle.read()

    def read(self, name: str) -> bytes:
        with open(self.path(name), "rb") as handle:
            return handle.read()

    def transcript(self, name: str = "recover") -> str:
        shutil.copyfile(os.path.join(VECTORS, name + ".jsonl"), self.path(name + ".jsonl"))
        return self.path(name + ".jsonl")


class TestExport(CliCase):
    def test_otel_and_inspect_write_the_expected_exports(self) -> None:
        source = self.transcript()
        status, out, err = self.cli("export", "--otel", source, "-o", self.path("spans.json"))
        self.assertEqual((status, err), (0, ""))
        self.assertEqual(self.read("spans.json"), self.vector("recover.otlp.json"))
        head = read_lines(source)[-1][9:73].decode("ascii")
        self.assertEqual(
            out,
            "%s: ok, 11 records, head %s\nspans: %s (10 spans in 1 trace, OpenTelemetry semantic conventions 1.41.1)\n"
            % (source, head, self.path("spans.json")),
        )
        status, out, _ = self.cli("export", "--inspect", source, "-o", self.path("log.json"))
        self.assertEqual(status, 0)
        self.assertTrue(out.endswith("inspect log: %s (1 sample)\n" % (self.path("log.json"),)))
        self.assertEqual(self.read("log.json"), self.vector("recover.inspect.json"))
        status, _, _ = self.cli("export", "--otel", source, "-o", self.path("spans.json"), "--include-content")
        self.assertEqual(self.read("spans.json"), self.vector("recover.content.otlp.json"))  # its own export: replaced

    def test_a_batch_exports_once_its_ledger_holds(self) -> None:
        manifest = copy_batch(os.path.join(VECTORS, "batch"), self.path("b"))
        with open(self.path("k"), "wb") as handle:
            handle.write(BATCH_KEY)
        status, out, err = self.cli(
            "export",
            "--otel",
            "--manifest",
            manifest,
            "-o",
            self.path("b.json"),
            "--start",
            "1700000000",
            "--checkpoint",
            self.path("b/manifest.checkpoint"),
            "--key-file",
            self.path("k"),
        )
        self.assertEqual((status, err), (0, ""), out)
        self.assertEqual(self.read("b.json"), self.vector("batch.otlp.json"))
        self.assertIn(
            "3 of 3 transcripts match the ledger (4 runs; 1 failed in the batch and are exported as errors)", out
        )
        status, _, err = self.cli(
            "export",
            "--otel",
            "--manifest",
            manifest,
            "-o",
            self.path("b.json"),
            "--checkpoint",
            self.path("b/manifest.checkpoint"),
            "--key-env",
            "NO_SUCH_VARIABLE_24",
        )
        self.assertEqual(status, 2, err)
        os.remove(self.path("b/alpha.jsonl"))
        status, _, err = self.cli("export", "--inspect", "--manifest", manifest, "-o", self.path("l.json"))
        self.assertEqual(status, 1)
        self.assertEqual(
            err, 'agentloop export: error: %s: the ledger\'s verdict fails: 1 missing ("alpha")\n' % (manifest,)
        )
        self.assertFalse(os.path.exists(self.path("l.json")))

    def test_a_transcript_that_does_not_verify_exits_1_and_writes_nothing(self) -> None:
        lines = read_lines(self.transcript())
        lines[2] = lines[2].replace(b"multiply", b"multiplx")
        tampered = self.write_bytes(b"".join(lines), "t.jsonl")
        status, out, err = self.cli("export", "--otel", tampered, "-o", self.path("spans.json"))
        self.assertEqual((status, out), (1, ""))
        self.assertTrue(
            err.startswith(
                "agentloop export: error: %s: it does not verify: record 2 (line 3): hash_mismatch" % (tampered,)
            ),
            err,
        )
        self.assertEqual(err.count("\n"), 1)
        self.assertFalse(os.path.exists(self.path("spans.json")))

    def test_usage_errors_exit_2_with_one_line(self) -> None:
        source = self.transcript()
        other = self.write_bytes(b"my notes\n", "notes.json")
        cases = [
            (("export", source, "-o", self.path("x.json")), "one of the arguments --otel --inspect is required"),
            (("export", "--otel", "--inspect", source), "not allowed with argument"),
            (("export", "--otel", source), "-o/--output: give -o OUT (or --endpoint URL)"),
            (("export", "--otel"), "FILE/--manifest: give one transcript FILE"),
            (
                ("export", "--otel", source, "-o", other),
                "%s: already exists (pass --overwrite to replace it)" % (other,),
            ),
            (("export", "--otel", source, "-o", source), "would replace its own input"),
            (("export", "--inspect", source, "-o", self.path("x.json"), "--include-content"), "are for --otel"),
            (("export", "--otel", source, "-o", self.path("x.json"), "--header", "A=B"), "--header: needs --endpoint"),
            (
                ("export", "--otel", source, "-o", self.path("x.json"), "--start", "253402300800"),
                "--start: must be at most",
            ),
            (  # a year --inspect can write, but 10**9 times it is no 64-bit nanosecond count
                ("export", "--otel", source, "-o", self.path("x.json"), "--start", "253402300799"),
                "--start: must be at most 9200000000 (2261-07-15) for spans: 64-bit nanosecond times",
            ),
            (
                ("export", "--otel", source, "--endpoint", "http://u:pw-hunter2@127.0.0.1:1"),
                "--endpoint: must not hold credentials",
            ),
            (("export", "--otel", source, "-o", self.path("x.json"), "--checkpoint", other), "are for --manifest"),
            (("export", "--otel", self.dir, "-o", self.path("x.json")), "is a directory"),
        ]
        for argv, words in cases:
            with self.subTest(argv[1:3]):
                status, out, err = self.cli(*argv)
                self.assertEqual(status, 2, err)
                self.assertIn(words, err)
                self.assertEqual(err.splitlines()[-1].startswith("agentloop export: error: "), True, err)
                self.assertNotIn("hunter2", err)
                self.assertNotIn("Traceback", err)
        self.assertEqual(self.read("notes.json"), b"my notes\n")
        self.assertFalse(os.path.exists(self.path("x.json")))
        status, _, _ = self.cli("export", "--otel", source, "-o", other, "--overwrite")
        self.assertEqual(status, 0)


class TestEndpoint(CliCase):
    def test_the_collector_gets_the_file_s_bytes_and_the_token_is_never_shown(self) -> None:
        source = self.transcript()
        with Collector() as c, env(OTLP_TOKEN_24=TOKEN):
            status, out, err = self.cli(
                "export",
                "--otel",
                source,
                "-o",
                self.path("spans.json"),
                "--endpoint",
                c.url + "/otel",
                "--header",
                "Authorization=OTLP_TOKEN_24",
            )
        self.assertEqual((status, err), (0, ""))
        ((path, headers, body),) = c.requests
        self.assertEqual((path, headers["Authorization"], body), ("/otel/v1/traces", TOKEN, self.read("spans.json")))
        self.assertTrue(out.endswith("sent: 10 spans to 127.0.0.1:%d/v1/traces (HTTP 200)\n" % (c.port,)), out)
        self.assertNotIn(b"sk-collector", self.read("spans.json"))
        self.assertNotIn("sk-collector", out)

    def test_a_collector_that_refuses_exits_1_after_the_file_is_written(self) -> None:
        source = self.transcript()
        with Collector([(403, ("forbidden for " + TOKEN).encode())]) as c, env(OTLP_TOKEN_24=TOKEN):
            status, out, err = self.cli(
                "export",
                "--otel",
                source,
                "-o",
                self.path("spans.json"),
                "--endpoint",
                c.url,
                "--header",
                "Authorization=OTLP_TOKEN_24",
            )
        self.assertEqual(status, 1)
        self.assertEqual(
            err,
            "agentloop export: error: --endpoint: collector at 127.0.0.1:%d: HTTP 403: forbidden for [redacted]\n"
            % (c.port,),
        )
        self.assertEqual(self.read("spans.json"), self.vector("recover.otlp.json"))
        self.assertNotIn("sk-collector", out + err)

    def test_a_missing_variable_or_a_bad_value_is_named_not_shown(self) -> None:
        source = self.transcript()
        with Collector() as c:
            status, _, err = self.cli(
                "export", "--otel", source, "--endpoint", c.url, "--header", "Authorization=NO_SUCH_VAR_24"
            )
            self.assertEqual(
                (status, err),
                (
                    2,
                    'agentloop export: error: --header "Authorization": '
                    'the environment variable "NO_SUCH_VAR_24" is not set\n',
                ),
            )
            with env(BAD_24="Bearer sk-line\r\nX: 1"):
                status, _, err = self.cli(
                    "export", "--otel", source, "--endpoint", c.url, "--header", "Authorization=BAD_24"
                )
        self.assertEqual(status, 2)
        self.assertIn(
            "--header: the value of Authorization must be a non-empty string of visible characters (it is not shown)",
            err,
        )
        self.assertNotIn("sk-line", err)
        self.assertEqual(c.requests, [])

    def test_a_token_given_in_place_of_a_variable_is_never_shown(self) -> None:
        source = self.transcript()
        with Collector() as c:
            for spec, said in (
                (
                    "Authorization=Bearer sk-live-0123",
                    '--header "Authorization": the environment variable after '
                    "Authorization= (not shown: is it the value?) is not set",
                ),
                (
                    "x-api-key=sk_live_0123",
                    '--header "x-api-key": the environment variable after x-api-key= '
                    "(not shown: is it the value?) is not set",
                ),
                (
                    "Authorization: Bearer sk-live-0123",
                    "--header: takes NAME=ENVVAR, a header name and the environment "
                    "variable holding its value (what was given is not shown: it may hold the token)",
                ),
                (
                    "Authorization: Bearer sk=live_0123",
                    "--header: takes NAME=ENVVAR, a header name and the "
                    "environment variable holding its value (what was given is not shown: it may hold the token)",
                ),
            ):
                status, out, err = self.cli("export", "--otel", source, "--endpoint", c.url, "--header", spec)
                self.assertEqual((status, err), (2, "agentloop export: error: %s\n" % (said,)), spec)
                self.assertNotIn("live", out + err)
        self.assertEqual(c.requests, [])


class TestReportManifest(CliCase):
    def test_the_page_and_the_run_pages_then_exit_1_for_the_failed_run(self) -> None:
        manifest = copy_batch(os.path.join(VECTORS, "batch"), self.path("b"))
        status, out, err = self.cli("report", "--manifest", manifest)
        self.assertEqual(
            (status, err), (1, "")
        )  # run "delta" failed in the batch (worker_error), as verify --manifest says
        self.assertEqual(
            out,
            'FAILED: "%s": 3 of 3 transcripts match the ledger (4 runs); 1 run failed in the batch ("delta")\n'
            "report: %s (and 3 run pages beside it)\n" % (manifest, self.path("b/batch.html")),
        )
        self.assertTrue(os.path.exists(self.path("b/gamma.html")))
        status, _, _ = self.cli(
            "report", "--manifest", manifest, "-o", self.path("b/batch.html")
        )  # its own pages: replaced
        self.assertEqual(status, 1)

    def test_an_altered_batch_exits_1_with_its_page_written(self) -> None:
        manifest = copy_batch(os.path.join(VECTORS, "batch"), self.path("b"))
        os.remove(self.path("b/beta.jsonl"))
        status, out, _ = self.cli("report", "--manifest", manifest, "-o", self.path("page.html"))
        self.assertEqual(status, 1)
        self.assertTrue(
            out.startswith(
                'FAILED: "%s": 2 of 3 transcripts match the ledger (4 runs); 1 missing ("beta")' % (manifest,)
            ),
            out,
        )
        with open(self.path("page.html"), encoding="utf-8") as handle:
            self.assertIn("✗ NOT VERIFIED", handle.read())

    def test_refusals_before_anything_is_written(self) -> None:
        manifest = copy_batch(os.path.join(VECTORS, "batch"), self.path("b"))
        self.write_bytes(b"mine\n", "b/beta.html")
        status, _, err = self.cli("report", "--manifest", manifest)
        self.assertEqual(
            (status, err),
            (
                2,
                "agentloop report: error: %s: already exists (pass --overwrite to replace it)\n"
                % (self.path("b/beta.html"),),
            ),
        )
        self.assertFalse(os.path.exists(self.path("b/batch.html")) or os.path.exists(self.path("b/alpha.html")))
        for argv, words in [
            (("report", self.path("b/alpha.jsonl"), "--manifest", manifest), "not both"),
            (("report",), "FILE: give a transcript FILE, or --manifest"),
            (
                ("report", "--manifest", manifest, "-o", self.path("b/gamma.html")),
                "a run of the batch has that page's name",
            ),
            (("report", "--manifest", manifest, "-o", manifest), "the page would replace the manifest"),
            (("report", "--manifest", manifest, "--key-file", self.path("b/manifest.checkpoint")), "need --checkpoint"),
        ]:
            with self.subTest(argv[1:]):
                status, _, err = self.cli(*argv)
                self.assertEqual(status, 2, err)
                self.assertIn(words, err)
