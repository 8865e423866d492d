"""OpenTelemetry spans: the demo answer run checked by hand, then every vector parsed back.

The parse-back follows the OTLP JSON encoding (opentelemetry-proto
docs/specification.md, "JSON Protobuf Encoding") and the pinned conventions
(agentloop.export.semconv); the interop leg has opentelemetry-proto parse the
same files.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import unittest
from typing import Any, Dict, List

from agentloop.errors import ExportError
from agentloop.export import FailedRun, SCHEMA_URL, SEMCONV_VERSION, is_otel_export, otel_json, otel_request, read_run
from agentloop.export import semconv
from tests.support.helpers import TempDir, read_lines

VECTORS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "export")
HEX = re.compile(r"[0-9a-f]+\Z")


def value(v: Dict[str, Any]) -> Any:
    """An OTLP AnyValue as the JSON value it encodes."""
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        assert isinstance(v["intValue"], str), "int64 is a decimal string in OTLP JSON"
        return int(v["intValue"])
    if "boolValue" in v:
        return v["boolValue"]
    if "doubleValue" in v:
        return v["doubleValue"]
    if "arrayValue" in v:
        return [value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return {x["key"]: value(x["value"]) for x in v["kvlistValue"].get("values", [])}
    assert v == {}, v
    return None


def spans(body: Dict[str, Any]) -> List[Dict[str, Any]]:
    (resource,) = body["resourceSpans"]
    (scope,) = resource["scopeSpans"]
    return list(scope["spans"])


def attrs(span: Dict[str, Any]) -> Dict[str, Any]:
    keys = [a["key"] for a in span["attributes"]]
    assert len(keys) == len(set(keys)), keys
    return {a["key"]: value(a["value"]) for a in span["attributes"]}


def load(name: str) -> Dict[str, Any]:
    with open(os.path.join(VECTORS, name), encoding="utf-8") as handle:
        result: Dict[str, Any] = json.load(handle)
    return result


class TestTheAnswerRunByHand(unittest.TestCase):
    """demo-answer.jsonl (5 records), every span written out from the transcript by hand."""

    def test_spans(self) -> None:
        records = [json.loads(line) for line in read_lines(os.path.join(VECTORS, "answer.jsonl"))]
        head, task, first, tool, second = (r["hash"] for r in records[::-1][:1] + records[:4])
        self.assertEqual(head, "051f3991d4d2f2161002e5da164d1a2606484452e06a15052c6167515a47a65d")
        body = otel_request([read_run(os.path.join(VECTORS, "answer.jsonl"))])
        origin = "agentloop/1/" + task
        trace = "051f3991d4d2f2161002e5da164d1a26"  # the head's first 32 hex digits
        common = {"gen_ai.provider.name": "unknown", "gen_ai.conversation.id": origin}
        expected = [
            (
                "invoke_agent",
                1,
                task[:16],
                None,
                "0",
                "5000000",
                dict(
                    common,
                    **{
                        "gen_ai.operation.name": "invoke_agent",
                        "agentloop.stop.reason": "no_tool_calls",
                        "agentloop.steps": 2,
                        "agentloop.tokens": 13,
                        "agentloop.transcript.head": head,
                        "agentloop.transcript.records": 5,
                        "agentloop.record.seq": 0,
                        "agentloop.record.hash": task,
                    },
                ),
            ),
            (
                "chat",
                1,
                first[:16],
                task[:16],
                "1000000",
                "2000000",
                dict(
                    common,
                    **{
                        "gen_ai.operation.name": "chat",
                        "gen_ai.response.finish_reasons": ["tool_call"],
                        "agentloop.step": 1,
                        "agentloop.tokens": 10,
                        "agentloop.record.seq": 1,
                        "agentloop.record.hash": first,
                    },
                ),
            ),
            (
                "execute_tool add",
                1,
                tool[:16],
                task[:16],
                "2000000",
                "3000000",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "add",
                    "gen_ai.tool.call.id": "call_1_0",
                    "gen_ai.tool.type": "function",
                    "gen_ai.tool.description": "Add two integers.",
                    "agentloop.step": 1,
                    "agentloop.record.seq": 2,
                    "agentloop.record.hash": tool,
                },
            ),
            (
                "chat",
                1,
                second[:16],
                task[:16],
                "3000000",
                "4000000",
                dict(
                    common,
                    **{
                        "gen_ai.operation.name": "chat",
                        "gen_ai.response.finish_reasons": ["stop"],
                        "agentloop.step": 2,
                        "agentloop.tokens": 3,
                        "agentloop.record.seq": 3,
                        "agentloop.record.hash": second,
                    },
                ),
            ),
        ]
        got = [
            (
                s["name"],
                s["kind"],
                s["spanId"],
                s.get("parentSpanId"),
                s["startTimeUnixNano"],
                s["endTimeUnixNano"],
                attrs(s),
            )
            for s in spans(body)
        ]
        self.assertEqual(got, expected)
        self.assertEqual({s["traceId"] for s in spans(body)}, {trace})
        self.assertTrue(all("status" not in s for s in spans(body)))  # UNSET: nothing failed
        self.assertEqual(
            body["resourceSpans"][0]["resource"]["attributes"],
            [{"key": "service.name", "value": {"stringValue": "agentloop"}}],
        )
        self.assertEqual(
            body["resourceSpans"][0]["scopeSpans"][0]["schemaUrl"], "https://opentelemetry.io/schemas/1.41.1"
        )
        self.assertEqual((SEMCONV_VERSION, SCHEMA_URL), ("1.41.1", "https://opentelemetry.io/schemas/1.41.1"))


class TestEveryVectorParsesBack(unittest.TestCase):
    def test_the_spans_say_what_their_transcripts_say(self) -> None:
        files = sorted(glob.glob(os.path.join(VECTORS, "*.otlp.json")))
        self.assertGreaterEqual(len(files), 12)
        for path in files:
            name = os.path.basename(path).split(".")[0]
            if name == "batch":
                continue
            with self.subTest(os.path.basename(path)):
                records = [json.loads(line) for line in read_lines(os.path.join(VECTORS, name + ".jsonl"))]
                self.check(load(os.path.basename(path)), records, path.endswith(".content.otlp.json"))

    def check(self, body: Dict[str, Any], records: List[Dict[str, Any]], content: bool) -> None:
        by_hash = {r["hash"]: r for r in records}
        got = spans(body)
        root = got[0]
        self.assertEqual(root["name"], "invoke_agent")
        self.assertNotIn("parentSpanId", root)
        expected_spans = 1 + sum(1 for r in records if r["kind"] in ("assistant", "tool"))
        self.assertEqual(len(got), expected_spans)
        for span in got:
            a = attrs(span)
            self.assertTrue(set(a) <= set(semconv.ATTRIBUTES), set(a) - set(semconv.ATTRIBUTES))
            self.assertTrue(HEX.match(span["traceId"]) and len(span["traceId"]) == 32)
            self.assertTrue(HEX.match(span["spanId"]) and len(span["spanId"]) == 16)
            self.assertEqual(span["traceId"], records[-1]["hash"][:32])
            record = by_hash[a["agentloop.record.hash"]]  # the span names its record, and it is there
            self.assertEqual((record["seq"], span["spanId"]), (a["agentloop.record.seq"], record["hash"][:16]))
            self.assertEqual(span["startTimeUnixNano"], str(record["seq"] * 1_000_000))
            self.assertIn(span["kind"], (1, 3))
            if span is not root:
                self.assertEqual(span["parentSpanId"], root["spanId"])
                self.assertEqual(int(span["endTimeUnixNano"]) - int(span["startTimeUnixNano"]), 1_000_000)
                kind = {"assistant": "chat", "tool": "execute_tool"}[record["kind"]]
                self.assertEqual(a["gen_ai.operation.name"], kind)
            if record["kind"] == "tool":
                failed = record["payload"]["ok"] is not True
                self.assertEqual(span.get("status", {}).get("code"), 2 if failed else None)
                self.assertEqual(a.get("error.type"), "tool_error" if failed else None)
                self.assertEqual(
                    (a["gen_ai.tool.name"], a["gen_ai.tool.call.id"]),
                    (record["payload"]["name"], record["payload"]["id"]),
                )
            has_content = any(k in a for k in semconv.CONTENT_ATTRIBUTES)
            if span is root or record["kind"] == "assistant":
                self.assertEqual(has_content, content)
        self.assertEqual(root["endTimeUnixNano"], str(len(records) * 1_000_000))


class TestContentIsOptIn(TempDir):
    def test_no_task_value_or_error_text_without_include_content(self) -> None:
        run = read_run(os.path.join(VECTORS, "recover.jsonl"))
        bare, full = otel_json([run]), otel_json([run], include_content=True)
        for secret in (b"What is 6 * 7?", b"the tool is broken on purpose", b'"sum"', b"Multiplying first."):
            self.assertNotIn(secret, bare)
            self.assertIn(secret, full)

    def test_model_error_is_the_run_span_s_error(self) -> None:
        run = read_run(os.path.join(VECTORS, "model_error.jsonl"))
        for content in (False, True):
            root = spans(otel_request([run], include_content=content))[0]
            self.assertEqual(attrs(root)["error.type"], "model_error")
            self.assertEqual(root["status"]["code"], 2)
            self.assertEqual("server went away" in root["status"].get("message", ""), content)


class TestRefusals(TempDir):
    def test_a_transcript_that_does_not_verify_is_not_exported(self) -> None:
        lines = read_lines(os.path.join(VECTORS, "recover.jsonl"))
        lines[8] = lines[8].replace(b'"sum":42', b'"sum":43')
        with self.assertRaises(ExportError) as caught:
            read_run(self.write_bytes(b"".join(lines)))
        self.assertIn("it does not verify: record 8 (line 9): hash_mismatch: stored", str(caught.exception))
        with self.assertRaises(ExportError):
            read_run(self.path("missing.jsonl"))

    def test_a_run_without_its_stop_record_exports_as_it_is(self) -> None:
        lines = read_lines(os.path.join(VECTORS, "recover.jsonl"))
        run = read_run(self.write_bytes(b"".join(lines[:5])))
        root = spans(otel_request([run]))[0]
        self.assertNotIn("agentloop.stop.reason", attrs(root))
        self.assertEqual((attrs(root)["agentloop.steps"], root["endTimeUnixNano"]), (2, "5000000"))


class TestDeterminism(unittest.TestCase):
    def test_the_same_transcript_gives_the_same_bytes_and_start_only_shifts_times(self) -> None:
        run = read_run(os.path.join(VECTORS, "parallel.jsonl"))
        self.assertEqual(otel_json([run]), otel_json([read_run(os.path.join(VECTORS, "parallel.jsonl"))]))
        shifted = spans(otel_request([run], start_ns=7 * 10**9))
        for a, b in zip(spans(otel_request([run])), shifted):
            self.assertEqual(int(b["startTimeUnixNano"]) - int(a["startTimeUnixNano"]), 7 * 10**9)
            self.assertEqual(
                {k: v for k, v in a.items() if "Time" not in k}, {k: v for k, v in b.items() if "Time" not in k}
            )

    def test_a_failed_batch_run_is_one_error_span_from_its_ledger_line(self) -> None:
        (span,) = spans(otel_request([FailedRun("delta", "agentloop/1/" + "ab" * 32, "rejected", "does_not_verify")]))
        trace = hashlib.sha256(("delta\n" + "ab" * 32).encode("utf-8")).hexdigest()[:32]
        self.assertEqual((span["traceId"], span["spanId"]), (trace, "ab" * 8))
        self.assertEqual(span["status"], {"code": 2, "message": "rejected: does_not_verify"})
        self.assertEqual(attrs(span)["agentloop.ledger.status"], "rejected")

    def test_two_batch_runs_of_the_same_transcript_are_two_traces(self) -> None:
        path = os.path.join(VECTORS, "answer.jsonl")
        alone, a, b = read_run(path), read_run(path, "a"), read_run(path, "b")
        self.assertEqual({s["traceId"] for s in spans(otel_request([alone]))}, {alone.head[:32]})
        got = spans(otel_request([a, b]))
        self.assertEqual(
            [s["traceId"] for s in got],
            [hashlib.sha256(("%s\n%s" % (n, a.head)).encode("utf-8")).hexdigest()[:32] for n in "aaaabbbb"],
        )
        self.assertEqual(len({(s["traceId"], s["spanId"]) for s in got}), 8)  # what a collector keys a span by

    def test_an_export_is_recognised_and_nothing_else_is(self) -> None:
        with open(os.path.join(VECTORS, "answer.otlp.json"), "rb") as handle:
            self.assertTrue(is_otel_export(handle.read(4096)))
        with open(os.path.join(VECTORS, "answer.inspect.json"), "rb") as handle:
            self.assertFalse(is_otel_export(handle.read(4096)))
        self.assertFalse(is_otel_export(b'{"resourceSpans":[]}'))


if __name__ == "__main__":
    unittest.main()


class TestValues(unittest.TestCase):
    def test_json_values_as_any_values_and_hosts_as_server_attributes(self) -> None:
        from agentloop.export.otel import _any, _server

        self.assertEqual(
            _any({"f": 1.5, "n": None, "b": True, "l": [1, "x"]}),
            {
                "kvlistValue": {
                    "values": [
                        {"key": "f", "value": {"doubleValue": 1.5}},
                        {"key": "n", "value": {}},
                        {"key": "b", "value": {"boolValue": True}},
                        {"key": "l", "value": {"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "x"}]}}},
                    ]
                }
            },
        )
        self.assertEqual(
            [_server(h) for h in ("h:8000", "[::1]:4318", "[::1]", "h", "", None, "h:99x")],
            [("h", 8000), ("::1", 4318), ("::1", None), ("h", None), (None, None), (None, None), ("h", None)],
        )
