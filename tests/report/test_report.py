"""The HTML report: its structure, its faults in place, and hostile transcripts.

Every page is parsed back with ``html.parser`` and checked as a tree of
elements and text, never by grepping for a rendering the code happens to use.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import re
import unicodedata
from html.parser import HTMLParser
from typing import Any, Dict, List, Optional, Tuple

from agentloop import ModelReply, ToolCall, TranscriptWriter, verify_file
from agentloop.report import default_report_path, render_report, write_report

from tests.support.helpers import TempDir, read_lines

HOSTILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "hostile")

#: Every element the page may contain; anything else means markup got through.
ALLOWED_TAGS = frozenset(
    "html head meta title style body header main section h1 h2 h3 h4 p dl dt dd details summary "
    "pre code span bdi strong a ul ol li meter article".split()
)
VOID = frozenset(("meta", "br", "hr", "img", "input", "link", "wbr", "area", "base", "col", "embed", "source", "track"))
HIDDEN = ("Cc", "Cf", "Cs", "Zl", "Zp")

Attrs = List[Tuple[str, Optional[str]]]


class Element:
    def __init__(self, tag: str, attrs: Attrs) -> None:
        self.tag = tag
        self.attrs: Dict[str, Optional[str]] = dict(attrs)
        self.text: List[str] = []

    @property
    def classes(self) -> List[str]:
        return (self.attrs.get("class") or "").split()

    def content(self) -> str:
        return "".join(self.text)


class Page(HTMLParser):
    """Every element in order, each with all the text inside it."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: List[Element] = []
        self.open: List[Element] = []
        self.text: List[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: Attrs) -> None:
        element = Element(tag, attrs)
        self.elements.append(element)
        if tag not in VOID:
            self.open.append(element)

    def handle_startendtag(self, tag: str, attrs: Attrs) -> None:
        self.elements.append(Element(tag, attrs))

    def handle_endtag(self, tag: str) -> None:
        for at in range(len(self.open) - 1, -1, -1):
            if self.open[at].tag == tag:
                del self.open[at:]
                return

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        for element in self.open:
            element.text.append(data)

    def all(self, tag: str, cls: Optional[str] = None) -> List[Element]:
        return [e for e in self.elements if e.tag == tag and (cls is None or cls in e.classes)]

    def by_id(self, ident: str) -> Element:
        found = [e for e in self.elements if e.attrs.get("id") == ident]
        if len(found) != 1:
            raise AssertionError("expected one element with id %r, found %d" % (ident, len(found)))
        return found[0]

    def records(self) -> Dict[int, Element]:
        return {int(e.attrs["id"][5:]): e for e in self.all("article") if (e.attrs.get("id") or "").startswith("line-")}

    def verdict(self) -> Element:
        found = self.all("p", "verdict")
        if len(found) != 1:
            raise AssertionError("expected one verdict, found %d" % (len(found),))
        return found[0]

    def summary(self) -> Dict[str, str]:
        dl = self.all("dl", "summary")[0]
        terms = [e for e in self.elements if e.tag in ("dt", "dd") and e in self._inside(dl)]
        return {dt.content(): dd.content() for dt, dd in zip(terms[::2], terms[1::2])}

    def _inside(self, parent: Element) -> List[Element]:
        start = self.elements.index(parent)
        inside: List[Element] = []
        for element in self.elements[start + 1 :]:
            if element.tag == "dl":
                break
            inside.append(element)
        return inside


def visible(text: str) -> str:
    """What the page must show for ``text``: hidden characters as ``\\uXXXX``."""
    return "".join(
        ("\\u%04x" % ord(ch) if ord(ch) <= 0xFFFF else "\\U%08x" % ord(ch))
        if ch not in "\n\t" and unicodedata.category(ch) in HIDDEN
        else ch
        for ch in text
    )


def load_payloads() -> List[str]:
    with open(os.path.join(HOSTILE, "payloads.json"), encoding="utf-8") as handle:
        payloads: List[str] = json.load(handle)
    if len(payloads) < 10:
        raise AssertionError("tests/vectors/hostile/payloads.json holds too few payloads: %d" % (len(payloads),))
    return payloads


class ReportCase(TempDir):
    def page(self, path: Optional[str] = None) -> Tuple[Page, str]:
        text, _ = render_report(path or self.path())
        return Page(text), text

    def assert_safe(self, page: Page, text: str) -> None:
        """No markup from the transcript: only known elements, no handlers, no outside links."""
        tags = sorted({e.tag for e in page.elements} - ALLOWED_TAGS)
        self.assertEqual(tags, [], "elements the report never makes")
        self.assertEqual(page.all("script"), [])
        for element in page.elements:
            for name, value in element.attrs.items():
                self.assertFalse(name.startswith("on"), "event handler %s on <%s>" % (name, element.tag))
                self.assertNotIn(name, ("src", "srcdoc", "action", "formaction", "style", "background"))
                self.assertNotIn("javascript:", (value or "").lower())
            if "href" in element.attrs:
                self.assertRegex(element.attrs["href"] or "", r"\A#line-\d+\Z")
                page.by_id((element.attrs["href"] or "")[1:])
        for ch in set(text):
            if ch not in "\n\t":
                self.assertNotIn(unicodedata.category(ch), HIDDEN, "a raw U+%04X reached the page" % ord(ch))
        text.encode("utf-8")  # no lone surrogate


class TestReport(ReportCase):
    def setUp(self) -> None:
        super().setUp()
        self.result = self.recover_run()

    def test_the_verdict_comes_first_and_says_verified(self) -> None:
        page, text = self.page()
        h2 = [e.content() for e in page.all("h2")]
        self.assertEqual(h2, ["Verdict", "Timeline"])
        self.assertEqual(page.verdict().classes, ["verdict", "good"])
        self.assertTrue(page.verdict().content().startswith("✓ VERIFIED: 11 records"))
        self.assertIn(self.result.head[:12], page.verdict().content())
        summary = page.summary()
        self.assertEqual(summary["Stop reason"], "no_tool_calls")
        self.assertEqual(summary["Steps"], " 5 of 8 (62%)")  # a bar, then the same in words
        self.assertEqual(summary["Tokens"], " 36 of 2000 (1%)")
        self.assertEqual(summary["Model"], "not recorded")
        self.assertEqual(summary["Task"], "What is 6 * 7?")
        self.assertIn("SHA-256 " + hashlib.sha256(b"".join(read_lines(self.path()))).hexdigest(), summary["File"])
        meters = page.all("meter")
        self.assertEqual([(m.attrs["value"], m.attrs["max"]) for m in meters], [("5", "8"), ("36", "2000")])
        self.assertTrue(page.all("title")[0].content().startswith("✓ verified: t.jsonl"))

    def test_every_record_is_present_with_its_seq_short_hash_and_full_record(self) -> None:
        page, _ = self.page()
        records = page.records()
        self.assertEqual(sorted(records), list(range(1, 12)))
        for line, (article, record) in enumerate(
            zip(records.values(), [json.loads(b) for b in read_lines(self.path())]), 1
        ):
            with self.subTest(line=line):
                self.assertEqual(article.attrs["id"], "line-%d" % line)
                self.assertTrue(article.content().startswith("seq %d · %s" % (record["seq"], record["kind"])))
                self.assertIn("hash %s…" % record["hash"][:12], article.content())
                self.assertIn(json.dumps(record, indent=2, ensure_ascii=False), article.content())
                self.assertNotIn("fault", article.classes)

    def test_the_timeline_shows_calls_arguments_results_and_errors(self) -> None:
        page, _ = self.page()
        records = page.records()
        self.assertIn('"a": "40"', records[4].content())  # the bad arguments, pretty-printed
        self.assertIn("error", records[5].classes)
        self.assertIn("✗ error:invalid arguments: $.add.a: expected type integer, got str", records[5].content())
        self.assertIn('✓ ok, value:{\n  "sum": 42\n}', records[9].content())
        turns = page.all("details", "turn")
        self.assertEqual(
            [t.content().split(" · ")[0] for t in turns],
            ["Task", "Step 1", "Step 2", "Step 3", "Step 4", "Step 5", "Stop"],
        )
        links = page.all("p", "link")
        self.assertEqual(len(links), 10)
        self.assertTrue(all(link.content().startswith("✓ chain link intact") for link in links))

    def test_the_page_is_self_contained_and_forbids_scripts(self) -> None:
        page, text = self.page()
        self.assert_safe(page, text)
        self.assertNotIn("://", text)  # no outside address at all
        head = [e for e in page.elements if e.tag in ("meta", "title", "style")]
        self.assertEqual(head[0].attrs, {"charset": "utf-8"})
        self.assertEqual(
            head[1].attrs, {"name": "generator", "content": "agentloop"}
        )  # how report -o knows its own pages
        self.assertEqual(head[2].attrs.get("http-equiv"), "Content-Security-Policy")
        policy = head[2].attrs["content"] or ""
        self.assertIn("default-src 'none'", policy)
        self.assertNotIn("unsafe", policy)
        self.assertNotIn("script-src", policy)
        styles = page.all("style")
        self.assertEqual(len(styles), 1)
        digest = base64.b64encode(hashlib.sha256(styles[0].content().encode("utf-8")).digest()).decode("ascii")
        self.assertIn("style-src 'sha256-%s'" % digest, policy)

    def test_rendering_is_a_pure_function_of_the_file(self) -> None:
        self.assertEqual(render_report(self.path())[0], render_report(self.path())[0])

    def test_write_report_and_its_default_path(self) -> None:
        self.assertEqual(default_report_path("a/run.jsonl"), "a/run.html")
        self.assertEqual(default_report_path("run.log"), "run.log.html")
        written, result = write_report(self.path())
        self.assertEqual((written, result.ok), (self.path("t.html"), True))
        with open(written, encoding="utf-8") as handle:
            self.assertEqual(handle.read(), render_report(self.path())[0])

    def test_a_checkpoint_status_is_shown_beside_the_verdict(self) -> None:
        for ok, word in ((True, "✓ checkpoint verified"), (False, "✗ checkpoint NOT verified")):
            page = Page(render_report(self.path(), checkpoint=(ok, "<b>head</b> signed"))[0])
            shown = [p.content() for p in page.all("p") if "checkpoint" in p.content()]
            self.assertEqual(shown, ["%s: <b>head</b> signed" % word])
        self.assertNotIn("checkpoint", Page(render_report(self.path())[0]).all("section")[0].content())


class TestFolding(ReportCase):
    def test_long_runs_fold_by_turn_and_every_record_stays(self) -> None:
        replies = [ModelReply("turn %d" % i, [ToolCall("echo", {"text": "t%d" % i})]) for i in range(30)]
        self.scripted_run(replies + [ModelReply("done")], max_steps=40)
        page, _ = self.page()
        turns = [t for t in page.all("details", "turn") if t.content().startswith("Step")]
        self.assertEqual(len(turns), 31)
        opened = [i for i, t in enumerate(turns, 1) if "open" in t.attrs]
        self.assertEqual(opened, list(range(1, 11)) + [31])
        self.assertEqual(sorted(page.records()), list(range(1, 64)))

    def test_a_faulty_turn_is_open(self) -> None:
        replies = [ModelReply("turn %d" % i, [ToolCall("echo", {"text": "t%d" % i})]) for i in range(30)]
        self.scripted_run(replies + [ModelReply("done")], max_steps=40)
        lines = read_lines(self.path())
        lines[40] = lines[40].replace(b'"t19"', b'"t1X"')  # step 20's echo result
        page, _ = self.page(self.write_bytes(b"".join(lines)))
        turns = [t for t in page.all("details", "turn") if t.content().startswith("Step")]
        self.assertIn("open", turns[19].attrs)
        self.assertIn("fault", turns[19].classes)
        self.assertNotIn("open", turns[18].attrs)

    def test_a_long_value_is_folded_not_dropped(self) -> None:
        text = "".join("line %d of a long answer\n" % i for i in range(400))
        self.scripted_run([ModelReply(text)])
        page, _ = self.page()
        folds = [d for d in page.all("details", "fold") if "line 399" in d.content()]
        self.assertEqual(len(folds), 1)
        self.assertNotIn("open", folds[0].attrs)
        self.assertIn(text, folds[0].content())
        self.assertIn("(%d characters, 401 lines: show all)" % len(text), folds[0].content())

    def test_the_model_is_shown_when_the_task_records_one(self) -> None:
        with TranscriptWriter(self.path()) as out:
            out.append(
                "task",
                {
                    "format": "agentloop/1",
                    "task": "t",
                    "model": "scripted-1",
                    "budgets": {"max_steps": 1, "max_tokens": 5, "stop_sentinel": None},
                    "tools": [],
                },
            )
        page, _ = self.page()
        self.assertEqual(page.summary()["Model"], "scripted-1")
        self.assertTrue(page.summary()["Stop reason"].startswith("✗ no stop record"))


class TestFaults(ReportCase):
    def setUp(self) -> None:
        super().setUp()
        self.recover_run()
        self.lines = read_lines(self.path())

    def test_a_rewritten_payload_is_marked_at_its_record_and_the_chain_breaks_after_it(self) -> None:
        self.lines[4] = self.lines[4].replace(b"expected type integer", b"expected type integex")
        page, _ = self.page(self.write_bytes(b"".join(self.lines)))
        verdict = page.verdict()
        self.assertEqual(verdict.classes, ["verdict", "bad"])
        self.assertTrue(
            verdict.content().startswith("✗ NOT VERIFIED: 1 fault; the first at record 4 (line 5): hash_mismatch")
        )
        self.assertEqual([a.attrs["href"] for a in page.all("a")][:1], ["#line-5"])
        records = page.records()
        self.assertEqual(sorted(records), list(range(1, 12)))
        self.assertEqual([n for n, a in records.items() if "fault" in a.classes], [5])
        self.assertIn("✗ FAULT hash_mismatch: stored ", records[5].content())
        self.assertIn("integex", records[5].content())  # the bytes as tampered, shown
        broken = [link.content() for link in page.all("p", "link") if "broken" in link.classes]
        self.assertEqual(broken, ["✗ chain broken here: the record above is not what its hash says (hash_mismatch)"])
        links = page.all("p", "link")
        self.assertIn("broken", links[4].classes)  # the link into line 6, right after the faulty record

    def test_a_forged_record_with_a_recomputed_hash_breaks_the_next_link(self) -> None:
        record = json.loads(self.lines[4])
        record["payload"]["error"] = "forged"
        body = {k: v for k, v in record.items() if k != "hash"}
        record["hash"] = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        self.lines[4] = json.dumps(record, sort_keys=True, separators=(",", ":")).encode() + b"\n"
        page, _ = self.page(self.write_bytes(b"".join(self.lines)))
        records = page.records()
        self.assertEqual([n for n, a in records.items() if "fault" in a.classes], [6])
        self.assertIn("prev_mismatch", records[6].content())
        broken = [link.content() for link in page.all("p", "link") if "broken" in link.classes]
        self.assertEqual(broken, ["✗ chain broken here: prev_mismatch"])

    def test_bad_lines_render_where_they_are_with_their_bytes(self) -> None:
        data = b"".join(self.lines[:3] + [b"{oops <b>\n"] + self.lines[3:-1] + [self.lines[-1][:-5]])
        page, text = self.page(self.write_bytes(data))
        records = page.records()
        self.assertEqual(sorted(records), list(range(1, 13)))
        self.assertEqual([n for n, a in records.items() if "fault" in a.classes], [4, 12])
        self.assertIn("bad_json: not JSON", records[4].content())
        self.assertIn("{oops <b>", records[4].content())
        self.assertIn("torn line", records[12].content())
        self.assertEqual([a.attrs["href"] for a in page.all("a")], ["#line-4", "#line-4", "#line-12"])
        self.assert_safe(page, text)

    def test_a_missing_file_renders_its_verdict(self) -> None:
        page, text = self.page(self.path("absent.jsonl"))
        self.assertIn("unreadable: FileNotFoundError", page.verdict().content())
        self.assertEqual(page.records(), {})
        self.assertIn("No lines to show.", text)

    def test_an_empty_file_holds_no_run(self) -> None:
        page, _ = self.page(self.write_bytes(b""))
        self.assertTrue(page.verdict().content().startswith("✗ NOT VERIFIED"), page.verdict().content())
        self.assertIn("no_records", page.verdict().content())
        self.assertEqual(page.summary()["Task"], "not recorded")

    def test_many_faults_are_listed_up_to_a_limit_and_all_marked(self) -> None:
        data = b"".join(self.lines + [b"junk %d\n" % i for i in range(70)])
        page, _ = self.page(self.write_bytes(data))
        self.assertIn("… and 20 more, each marked at its line below", page.all("section")[0].content())
        self.assertEqual(len([a for a in page.records().values() if "fault" in a.classes]), 70)


class TestHostile(ReportCase):
    """tests/vectors/hostile: every payload in every field; see its README."""

    def setUp(self) -> None:
        super().setUp()
        self.payloads = load_payloads()

    def test_the_fixtures_are_what_make_py_writes(self) -> None:
        spec = importlib.util.spec_from_file_location("hostile_make", os.path.join(HOSTILE, "make.py"))
        assert spec is not None and spec.loader is not None
        make: Any = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(make)
        for name, data in (
            ("hostile.jsonl", make.hostile_bytes(self.payloads)),
            ("hostile-broken.jsonl", make.broken_bytes(self.payloads)),
        ):
            with self.subTest(name), open(os.path.join(HOSTILE, name), "rb") as handle:
                self.assertEqual(handle.read(), data, "regenerate: python3 tests/vectors/hostile/make.py")

    def test_the_hostile_transcript_verifies_and_holds_every_payload(self) -> None:
        path = os.path.join(HOSTILE, "hostile.jsonl")
        self.assertTrue(verify_file(path).ok)
        with open(path, encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle]
        task = records[0]["payload"]
        for payload in self.payloads:
            with self.subTest(payload=payload):
                self.assertIn(payload, task["task"])
                self.assertIn(payload, task["model"]["model"])
                self.assertIn(payload, [t["name"] for t in task["tools"]])
                self.assertIn(payload, [c["name"] for c in records[1]["payload"]["tool_calls"]])

    def test_a_hostile_report_executes_nothing_and_shows_every_payload_as_text(self) -> None:
        for name in ("hostile.jsonl", "hostile-broken.jsonl"):
            with self.subTest(name):
                page, text = self.page(os.path.join(HOSTILE, name))
                self.assert_safe(page, text)
                shown = "".join(page.text)
                for payload in self.payloads:
                    self.assertIn(visible(payload), shown)
                self.assertIn("\\u202e", shown)

    def test_hostile_names_and_the_summary_are_text(self) -> None:
        page, _ = self.page(os.path.join(HOSTILE, "hostile.jsonl"))
        self.assertTrue(page.verdict().content().startswith("✓ VERIFIED: 29 records"))
        records = page.records()
        self.assertEqual(len(records), 29)
        self.assertTrue(
            records[3].content().startswith("seq 2 · tool <script>alert('xss')</script> · ✓ okline 3 · hash ")
        )
        summary = page.summary()
        self.assertIn(visible(self.payloads[-1]), summary["Model"])
        self.assertIn(visible(self.payloads[0]), summary["Stop detail"])
        long_text = "\n".join(self.payloads) * 40
        self.assertIn(
            "(%d characters, %d lines: show all)" % (len(long_text), long_text.count("\n") + 1), records[28].content()
        )

    def test_the_broken_hostile_transcript_marks_each_fault_in_place(self) -> None:
        path = os.path.join(HOSTILE, "hostile-broken.jsonl")
        result = verify_file(path)
        page, _ = self.page(path)
        records = page.records()
        self.assertEqual(sorted(records), list(range(1, 36)))
        faulty = sorted({f.line for f in result.faults if f.line is not None})
        self.assertEqual([n for n, a in records.items() if "fault" in a.classes], faulty)
        for fault in result.faults:
            with self.subTest(fault=str(fault)[:60]):
                self.assertIn(
                    "✗ FAULT %s: %s" % (fault.kind, visible(fault.detail)), records[fault.line or 0].content()
                )
        self.assertIn("\\xff\\xfe", records[5].content())  # invalid UTF-8 shown as escapes
        self.assertIn("\\ud800", records[8].content())  # a lone surrogate, shown, not written
        self.assertTrue(
            records[34].content().startswith("✗ FAULT · seq 99 · <script>alert('xss')</script>line 34 · hash ")
        )


class TestEscapeIsTheOnlyWay(ReportCase):
    """A guard on the guard: the page's text equals the transcript's, escaped."""

    def test_visible_matches_the_page_for_every_hidden_character(self) -> None:
        every = "".join(chr(c) for c in list(range(0, 0x250)) + list(range(0x2000, 0x2070)) + [0xFEFF, 0xFFF9, 0xE0001])
        self.scripted_run([ModelReply(every)])
        page, text = self.page()
        self.assert_safe(page, text)
        self.assertIn(visible(every), page.records()[2].content())
        self.assertTrue(re.search(r"\\u202e", text))


class TestUnusualLines(ReportCase):
    def test_a_very_long_bad_line_is_shown_in_part_counted_and_hashed_whole(self) -> None:
        from agentloop.report import run as report

        self.recover_run()
        lines = read_lines(self.path())
        data = b"".join(lines[:2] + [b"x" * 100 + b"\n"] + lines[2:])
        saved = report._RAW_SHOWN
        report._RAW_SHOWN = 16
        self.addCleanup(setattr, report, "_RAW_SHOWN", saved)
        page, _ = self.page(self.write_bytes(data))
        records = page.records()
        self.assertEqual(sorted(records), list(range(1, 13)))
        self.assertIn("x" * 16 + "… and 85 more bytes of this line, not shown", records[3].content())
        self.assertNotIn("x" * 17, records[3].content())
        self.assertTrue(records[4].content().startswith("seq 2 · tool multiply"))  # lines stay in step
        self.assertIn(
            "%d bytes · 12 lines · SHA-256 %s" % (len(data), hashlib.sha256(data).hexdigest()), page.summary()["File"]
        )

    def test_a_line_with_a_huge_integer_or_deep_nesting_still_renders(self) -> None:
        self.recover_run()
        lines = read_lines(self.path())
        huge = lines[8].replace(b'"sum":42', b'"sum":' + b"9" * 5000)
        deep = b'{"hash":"h","kind":"tool","payload":' + b"[" * 900 + b"]" * 900 + b',"prev":"p","seq":8}\n'
        page, text = self.page(self.write_bytes(b"".join(lines[:8] + [huge, deep] + lines[9:])))
        records = page.records()
        self.assertEqual(sorted(records), list(range(1, 13)))
        self.assertIn("fault", records[9].classes)
        self.assertIn("fault", records[10].classes)
        self.assert_safe(page, text)

    def test_a_value_json_cannot_write_is_named_not_fatal(self) -> None:
        from agentloop.report import run as report

        class UnparsedInteger:
            digits = 5000

        self.assertEqual(
            report._pretty({"n": UnparsedInteger()}, None), '{"n": "(an integer of 5000 digits, too long to read)"}'
        )
        self.assertEqual(report._pretty([object()], None), '["(a Python object, not a JSON value)"]')
