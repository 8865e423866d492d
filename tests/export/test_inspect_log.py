"""Inspect AI eval logs: every vector parsed back against its transcript, and the mappings.

The shape is checked here against what Inspect's models require (EvalLog,
EvalSpec, EvalSample, ChatMessage*, ToolCall, ModelUsage); the interop leg
has inspect_ai.log.read_eval_log read the same files.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile
import unittest
from typing import Any, Dict, List

from agentloop.export import inspect_json, inspect_log, is_inspect_export, read_run
from agentloop.export.run import FailedRun
from tests.support.helpers import read_lines

VECTORS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "export")


def records_of(name: str) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in read_lines(os.path.join(VECTORS, name))]


class TestEveryLogParsesBack(unittest.TestCase):
    def test_messages_tool_calls_and_metadata_match_the_transcript(self) -> None:
        files = sorted(glob.glob(os.path.join(VECTORS, "*.inspect.json")))
        self.assertGreaterEqual(len(files), 8)
        for path in files:
            name = os.path.basename(path).split(".")[0]
            if name == "batch":
                continue
            with self.subTest(name), open(path, encoding="utf-8") as handle:
                log = json.load(handle)
                self.check_log(log)
                (sample,) = log["samples"]
                self.check_sample(sample, records_of(name + ".jsonl"))

    def test_the_batch_log_has_one_sample_per_ledger_line(self) -> None:
        with open(os.path.join(VECTORS, "batch.inspect.json"), encoding="utf-8") as handle:
            log = json.load(handle)
        self.check_log(log)
        self.assertEqual([s["id"] for s in log["samples"]], ["alpha", "beta", "gamma", "delta"])
        for sample in log["samples"][:3]:
            self.check_sample(sample, records_of(os.path.join("batch", sample["id"] + ".jsonl")))
        delta = log["samples"][3]
        self.assertEqual(
            delta["error"]["message"], "worker_error: BrokenProcessPool (the batch has no transcript of this run)"
        )
        self.assertNotIn("messages", delta)
        self.assertEqual(log["samples"][2]["limit"], {"type": "turn", "limit": 1})
        self.assertEqual((log["eval"]["created"], log["eval"]["model"]), ("2023-11-14T22:13:20+00:00", "test/counting"))

    def check_log(self, log: Dict[str, Any]) -> None:
        self.assertEqual(list(log)[:3], ["version", "status", "eval"])
        self.assertEqual((log["version"], log["status"]), (2, "success"))
        spec = log["eval"]
        for required in ("created", "task", "dataset", "model", "config"):
            self.assertIn(required, spec)
        self.assertTrue(spec["eval_id"].startswith("agentloop-"))
        self.assertEqual(spec["dataset"]["samples"], len(log["samples"]))
        self.assertEqual(log["results"]["total_samples"], len(log["samples"]))

    def check_sample(self, sample: Dict[str, Any], records: List[Dict[str, Any]]) -> None:
        for required in ("id", "epoch", "input", "target"):
            self.assertIn(required, sample)
        task = records[0]["payload"]
        self.assertEqual(sample["input"], task["task"])
        messages = sample["messages"]
        expected_roles = (
            (["system"] if "system" in task else [])
            + ["user"]
            + [r["kind"] for r in records[1:] if r["kind"] in ("assistant", "tool")]
        )
        self.assertEqual([m["role"] for m in messages], expected_roles)
        later = [r for r in records[1:] if r["kind"] in ("assistant", "tool")]
        for message, record in zip(messages[len(messages) - len(later) :], later):
            self.assertEqual(message["metadata"], {"seq": record["seq"], "hash": record["hash"]})
            payload = record["payload"]
            if record["kind"] == "assistant":
                self.assertEqual(message["content"], payload["text"])
                calls = [(c["id"], c["function"], c["arguments"]) for c in message["tool_calls"] or []]
                self.assertEqual(calls, [(c["id"], c["name"], c["arguments"] or {}) for c in payload["tool_calls"]])
            else:
                self.assertEqual((message["tool_call_id"], message["function"]), (payload["id"], payload["name"]))
                if payload["ok"]:
                    self.assertEqual(json.loads(message["content"]), payload["value"])
                    self.assertNotIn("error", message)
                else:
                    self.assertEqual(message["error"]["message"], payload["error"])
        meta = sample["metadata"]
        self.assertEqual(
            (meta["verdict"], meta["records"], meta["head"]), ("verified", len(records), records[-1]["hash"])
        )
        self.assertEqual(meta["origin"], "agentloop/1/" + records[0]["hash"])
        if records[-1]["kind"] == "stop":
            self.assertEqual(meta["stop_reason"], records[-1]["payload"]["reason"])


class TestMappings(unittest.TestCase):
    def sample(self, name: str) -> Dict[str, Any]:
        result: Dict[str, Any] = inspect_log([read_run(os.path.join(VECTORS, name + ".jsonl"))])["samples"][0]
        return result

    def test_a_budget_stop_is_a_sample_limit(self) -> None:
        self.assertEqual(self.sample("budget")["limit"], {"type": "token", "limit": 40})

    def test_a_model_error_is_the_sample_s_error(self) -> None:
        sample = self.sample("model_error")
        self.assertTrue(sample["error"]["message"].startswith("model_error: "))
        self.assertIn("server went away", sample["error"]["message"])

    def test_usage_and_cost_are_the_provider_s(self) -> None:
        sample = self.sample("members")
        self.assertEqual(
            sample["model_usage"],
            {
                "openai/m-1": {
                    "input_tokens": 2500,
                    "output_tokens": 60,
                    "total_tokens": 2560,
                    "input_tokens_cache_read": 1000,
                    "input_tokens_cache_write": 100,
                    "total_cost": 0.005775,
                }
            },
        )
        self.assertEqual(
            sample["messages"][0],
            {
                "id": sample["messages"][1]["id"][:16] + "-system",
                "content": "Answer with final_result.",
                "source": "input",
                "role": "system",
                "metadata": sample["messages"][1]["metadata"],
            },
        )
        self.assertEqual(sample["output"]["choices"][0]["stop_reason"], "tool_calls")
        self.assertEqual(sample["metadata"]["cost"], "0.005775")
        self.assertEqual(self.sample("answer")["model_usage"], {})  # the scripted model reported none

    def test_a_failed_batch_run_is_an_error_sample_without_messages(self) -> None:
        sample = inspect_log([FailedRun("x", "agentloop/1/" + "0" * 64, "rejected", "missing")])["samples"][0]
        self.assertEqual((sample["metadata"]["ledger_status"], sample["input"]), ("rejected", ""))
        self.assertEqual(sample["error"]["message"], "rejected: missing (the batch has no transcript of this run)")

    def test_a_denied_call_is_an_approval_error(self) -> None:
        from agentloop import Deny, ModelReply, ScriptedModel, Tool, ToolCall, run

        folder = tempfile.mkdtemp(prefix="agentloop-test-")
        self.addCleanup(shutil.rmtree, folder, True)

        def delete_file(path: str) -> dict:
            """Delete a file."""
            return {"deleted": path}

        gated = Tool.from_function(delete_file, requires_approval=True)
        model = ScriptedModel(
            [ModelReply("Deleting.", [ToolCall("delete_file", {"path": "x"})]), ModelReply("Not allowed.")]
        )
        path = os.path.join(folder, "t.jsonl")
        run(
            "Delete x.",
            model,
            [gated],
            transcript=path,
            max_steps=4,
            max_tokens=1000,
            approver=lambda r: Deny("no", by="ops"),
        )
        (tool,) = [m for m in inspect_log([read_run(path)])["samples"][0]["messages"] if m["role"] == "tool"]
        self.assertEqual(tool["error"], {"type": "approval", "message": 'call denied by "ops": no'})

    def test_an_export_is_recognised_and_nothing_else_is(self) -> None:
        data = inspect_json([read_run(os.path.join(VECTORS, "answer.jsonl"))])
        self.assertTrue(is_inspect_export(data[:4096]))
        self.assertFalse(is_inspect_export(data.replace(b"agentloop-", b"abcdefghi-", 1)[:4096]))
        with open(os.path.join(VECTORS, "answer.otlp.json"), "rb") as handle:
            self.assertFalse(is_inspect_export(handle.read(4096)))


if __name__ == "__main__":
    unittest.main()
