"""The batch page: the ledger's verdict first, problem runs first, every byte from the data escaped.

Pages are parsed back with html.parser (tests/report/test_report.py's ``Page``) and
checked as elements and text; headless Chromium loads them in the interop leg.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import urllib.parse
from typing import Dict, List, Tuple
from unittest import mock

from agentloop.errors import ExportError
from agentloop.report import is_report_page
from agentloop.report.batch import is_plain_name, run_page_names, write_batch_report
from tests.export.fixtures import BATCH_KEY, copy_batch, hostile_batch, hostile_text, retried_batch
from tests.support.helpers import TempDir
from tests.report.test_report import Page, visible

BATCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "export", "batch")
ALLOWED = frozenset(
    "html head meta title style body header main section h1 h2 p dl dt dd span bdi strong code a ul li "
    "table thead tbody tr th td".split()
)


class BatchPageCase(TempDir):
    def write(self, manifest: str, **options: object) -> Tuple[Page, str, bool]:
        out = os.path.join(os.path.dirname(manifest), "batch.html")
        report = write_batch_report(manifest, out, **options)  # type: ignore[arg-type]
        with open(out, encoding="utf-8") as handle:
            text = handle.read()
        return Page(text), text, report.ok

    def rows(self, page: Page) -> List[List[str]]:
        out: List[List[str]] = []
        for element in page.elements:
            if element.tag == "tr":
                out.append([])
            elif element.tag == "td":
                out[-1].append(element.content())
        return [row for row in out if row]

    def assert_safe(self, page: Page, text: str) -> None:
        self.assertEqual(sorted({e.tag for e in page.elements} - ALLOWED), [])
        for element in page.elements:
            for name, value in element.attrs.items():
                self.assertFalse(name.startswith("on"), (element.tag, name))
                if name == "href":
                    self.assertRegex(value or "", r"\A[A-Za-z0-9_.~%-]+\.html\Z")  # a sibling page, percent-encoded
        (csp,) = [e for e in page.all("meta") if e.attrs.get("http-equiv") == "Content-Security-Policy"]
        style = page.all("style")[0].content()
        digest = base64.b64encode(hashlib.sha256(style.encode("utf-8")).digest()).decode("ascii")
        self.assertEqual(
            csp.attrs["content"],
            "default-src 'none'; style-src 'sha256-%s'; img-src 'none'; font-src 'none'; "
            "base-uri 'none'; form-action 'none'" % (digest,),
        )
        self.assertTrue(is_report_page(text.encode("utf-8")))


class TestAVerifiedBatch(BatchPageCase):
    def test_verdict_first_then_totals_then_one_row_per_line_failed_first(self) -> None:
        manifest = copy_batch(BATCH, self.path("b"))
        page, text, ok = self.write(manifest, checkpoint=self.path("b/manifest.checkpoint"), key=BATCH_KEY)
        self.assertFalse(ok)  # a run of the batch failed (worker_error): the audit fails, as verify --manifest does
        self.assert_safe(page, text)
        self.assertEqual([h.content() for h in page.all("h2")], ["Verdict of the ledger", "Totals", "Runs"])
        self.assertEqual(
            page.verdict().content(),
            "✗ RUNS FAILED: all 3 transcripts match the ledger (4 runs); 1 run failed in the batch",
        )
        self.assertIn(
            "✓ checkpoint verified: %s covers the ledger; signed by the keys given"
            % (self.path("b/manifest.checkpoint"),),
            "".join(page.text),
        )
        self.assertEqual(page.summary()["Ledger"].split(" · ")[1], "4 lines")
        self.assertEqual(
            self.rows(page),
            [
                ["4", "delta", "✗ FAILED: worker_error: BrokenProcessPool", "–", "–", "–", "–", "–", "–"],
                ["1", "alpha", "✓ verified", "no_tool_calls", "3", "16", "–", "–", "one"],
                ["2", "beta", "✓ verified", "no_tool_calls", "3", "16", "–", "–", "three"],
                ["3", "gamma", "✓ verified", "step_budget", "1", "7", "–", "–", "seven"],
            ],
        )
        self.assertEqual([a.attrs["href"] for a in page.all("a")], ["alpha.html", "beta.html", "gamma.html"])
        for name in ("alpha", "beta", "gamma"):  # each run's own page is written beside it
            with open(self.path("b/%s.html" % name), "rb") as handle:
                self.assertTrue(is_report_page(handle.read(200)))
        self.assertFalse(os.path.exists(self.path("b/delta.html")))

    def test_a_retried_run_is_one_row_verified_and_says_it_was_retried(self) -> None:
        manifest = retried_batch(BATCH, self.path("r"))
        page, text, ok = self.write(manifest)
        self.assertFalse(ok)  # delta failed; beta, failed once, was run again and is not a failed run
        self.assertEqual(
            page.verdict().content(),
            "✗ RUNS FAILED: all 3 transcripts match the ledger (4 runs); 1 run failed in the batch",
        )
        self.assertIn("✗ 1 run failed in the batch (no transcript): listed first below", "".join(page.text))
        self.assertEqual(page.summary()["Ledger"].split(" · ")[1], "5 lines")
        self.assertEqual(
            [row[:3] for row in self.rows(page)],
            [
                ["5", "delta", "✗ FAILED: worker_error: BrokenProcessPool"],
                ["2", "alpha", "✓ verified"],
                ["3", "beta", "✓ verified (retried after line 1: worker_error: BrokenProcessPool)"],
                ["4", "gamma", "✓ verified"],
            ],
        )
        self.assertIn("<dt>Runs</dt><dd>4: 1 failed · 3 verified</dd>", text)

    def test_a_run_with_cost_and_clock_shows_them(self) -> None:
        from tests.export.fixtures import members_run
        from agentloop.batch.ledger import ledger_bytes
        from agentloop.batch.facts import transcript_facts

        os.mkdir(self.path("m"))
        path = members_run(self.path("m/members.jsonl"))
        facts = transcript_facts(path)
        line = {
            "head": facts["head"],
            "name": "members",
            "origin": "agentloop/1/" + facts["first"],
            "records": facts["records"],
            "root": facts["root"],
            "sha256": facts["sha256"],
            "status": "ok",
            "stop": facts["stop"],
        }
        with open(self.path("m/manifest.jsonl"), "wb") as handle:
            handle.write(ledger_bytes([line]))
        page, text, ok = self.write(self.path("m/manifest.jsonl"))
        self.assertTrue(ok)
        self.assertEqual(
            self.rows(page),
            [["1", "members", "✓ verified", "final_result", "2", "2560", "0.005775", "2.25 s", "What is 40 + 2?"]],
        )
        self.assertIn("<dt>Cost</dt><dd>0.005775 USD</dd>", text)


class TestAnAlteredBatch(BatchPageCase):
    def test_not_verified_the_altered_run_first_and_its_file_s_words_never_shown(self) -> None:
        manifest = copy_batch(BATCH, self.path("b"))
        with open(self.path("b/beta.jsonl"), "rb") as handle:
            data = handle.read()
        with open(self.path("b/beta.jsonl"), "wb") as handle:
            handle.write(data.replace(b'"task":"three"', b'"task":"FORGED"'))
        os.remove(self.path("b/gamma.jsonl"))
        page, text, ok = self.write(manifest)
        self.assertFalse(ok)
        self.assert_safe(page, text)
        self.assertEqual(page.verdict().content(), "✗ NOT VERIFIED: 1 of 3 transcripts match the ledger (4 runs)")
        rows = self.rows(page)
        self.assertEqual([r[:2] for r in rows], [["2", "beta"], ["3", "gamma"], ["4", "delta"], ["1", "alpha"]])
        self.assertTrue(rows[0][2].startswith("✗ ALTERED: does not verify: "))
        self.assertEqual(
            rows[0][3:], ["no_tool_calls", "–", "–", "–", "–", "–"]
        )  # the ledger's stop; nothing from the file
        self.assertTrue(rows[1][2].startswith("✗ MISSING"))
        self.assertNotIn("FORGED", "".join(r for row in rows for r in row))
        self.assertIn("no file is there", text)

    def test_a_transcript_that_changes_after_the_verdict_is_shown_as_changed(self) -> None:
        manifest = copy_batch(BATCH, self.path("b"))
        with mock.patch("agentloop.report.batch.read_run", side_effect=ExportError("x", "it does not verify: ...")):
            page, _, ok = self.write(manifest)
        self.assertFalse(ok)
        rows = self.rows(page)
        self.assertEqual(
            [(r[1], r[2][:9]) for r in rows],
            [("alpha", "✗ CHANGED"), ("beta", "✗ CHANGED"), ("gamma", "✗ CHANGED"), ("delta", "✗ FAILED:")],
        )
        self.assertEqual(rows[0][4:], ["–"] * 5)  # nothing read from a file that changed


class TestAHostileBatch(BatchPageCase):
    def test_markup_and_control_characters_are_text(self) -> None:
        os.mkdir(self.path("h"))
        manifest = hostile_batch(self.path("h"), 9)
        page, text, ok = self.write(manifest)
        self.assertTrue(ok)
        self.assert_safe(page, text)
        self.assertNotRegex(text, r"<(script|img|iframe|svg|link|meta http-equiv=\"refresh)[\s>]")
        self.assertNotRegex(text, "[\x00-\x08\x0b-\x1f\x7f\u200b\u202e\u2028]")
        names = [r[1] for r in self.rows(page)]
        self.assertEqual(names[1], visible("\x1b[2J\u202e<b>bold\u200b"))
        self.assertTrue(names[0].startswith('<img src="http:\\\\127.0.0.1:9\\name"'))
        hrefs = [a.attrs["href"] for a in page.all("a")]
        self.assertEqual(
            hrefs,
            [
                urllib.parse.quote(n + ".html", safe="")
                for n in ("\x1b[2J\u202e<b>bold\u200b", '"><svg onload="document.title=2">')
            ],
        )
        self.assertIn(visible(hostile_text(9))[:40], " ".join(r[8] for r in self.rows(page)))


class TestNames(TempDir):
    def test_only_plain_file_names_get_a_page(self) -> None:
        self.assertEqual(
            [is_plain_name(n) for n in ("a", "x<y>", "../x", "a/b", ".hidden", "a\\b", "x\x00", "é" * 101)],
            [True, True, False, False, False, False, False, False],
        )
        lines: List[Dict[str, object]] = [{"name": n, "status": "ok"} for n in ("a", "batch", "../up")]
        lines.append({"name": "f", "status": "worker_error"})
        self.assertEqual(run_page_names(lines, "batch.html"), {"a": "a.html"})  # type: ignore[arg-type]

    def test_the_page_has_no_script_and_no_outside_link(self) -> None:
        with open(
            os.path.join(os.path.dirname(__file__), "..", "..", "agentloop", "report", "batch.py"), encoding="utf-8"
        ) as handle:
            source = handle.read()
        self.assertIsNone(
            re.search(r"<script|https?://|src=", source.split('"""', 2)[2])
        )  # the code past its docstring
