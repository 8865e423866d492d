"""The command line's approval seams: a recorded approval never runs a real tool in a
replay, and a decisions file never approves arguments it does not name."""

from __future__ import annotations

import json
from typing import Any

from tests.support import approval_fixtures as fx
from tests.cli.test_approval_cli import RESUME, RUN, Cli, fx_sha


class ApprovalSeams(Cli):
    def decisions(self, data: Any, name: str = "d.json") -> str:
        with open(self.path(name), "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        return self.path(name)


class TestReplayAsksAgain(ApprovalSeams):
    def test_replay_with_real_tools_denies_a_recorded_approval_with_one_line_and_runs_nothing_gated(self) -> None:
        status, _, err = self.cli(RUN + ["-o", self.path(), "--approve", "ask", "--by", "al"], stdin="a\n")
        self.assertEqual(status, 0, err)
        self.assertEqual(fx.CALLS, [("delete", {"path": fx.HOSTILE})])
        fx.CALLS.clear()
        status, out, err = self.cli(
            ["replay", self.path(), "--tools", "tests.support.approval_fixtures:TOOLS", "-o", self.path("r.jsonl")]
        )
        self.assertEqual(status, 1, out + err)  # the replay differs: the call was denied this time
        self.assertEqual(fx.CALLS, [])
        lines = err.splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertIn('call "c1" of step 1 (tool "delete") was approved in the original run', lines[0])
        self.assertIn("replay: differs from", out)

    def test_replay_approve_decides_again_and_recorded_tools_stay_safe(self) -> None:
        self.cli(RUN + ["-o", self.path(), "--approve", "ask", "--by", "al"], stdin="a\n")
        fx.CALLS.clear()
        status, out, err = self.cli(
            [
                "replay",
                self.path(),
                "--tools",
                "tests.support.approval_fixtures:TOOLS",
                "-o",
                self.path("r.jsonl"),
                "--approve",
                "ask",
                "--by",
                "al",
            ],
            stdin="a\n",
        )
        self.assertEqual(status, 0, out + err)  # the same person approving the same arguments again: identical
        self.assertEqual(fx.CALLS, [("delete", {"path": fx.HOSTILE})])
        fx.CALLS.clear()
        status, out, err = self.cli(["replay", self.path(), "--recorded-tools", "-o", self.path("r2.jsonl")])
        self.assertEqual((status, fx.CALLS), (0, []), out + err)
        status, _, err = self.cli(
            ["replay", self.path(), "--recorded-tools", "-o", self.path("r3.jsonl"), "--approve", "deny-all"]
        )
        self.assertEqual(status, 2, err)


class TestNoBlankCheques(ApprovalSeams):
    def test_a_decision_to_run_a_call_without_its_arguments_sha256_is_refused_naming_the_call(self) -> None:
        for decision in (
            {"decision": "approve", "by": "al"},
            {"decision": "modify", "by": "al", "arguments": {"path": "/x"}},
            {"decision": "approve", "by": "al", "arguments_sha256": None},
        ):  # null binds nothing either
            status, out, err = self.cli(
                RUN + ["-o", self.path(), "--overwrite", "--approve", self.decisions({"c1": decision})]
            )
            self.assertEqual((status, out), (2, ""), err)
            self.assertIn("names no arguments_sha256", err)
            self.assertIn('call "c1"', err)
            self.assertEqual(fx.CALLS, [])
        self.cli(RUN + ["-o", self.path("p.jsonl"), "--approve", self.decisions({}, "none.json")])  # paused
        for unbound in (
            {"decision": "approve", "by": "al"},
            {"decision": "approve", "by": "al", "arguments_sha256": None},
        ):
            status, _, err = self.cli(
                ["resume", self.path("p.jsonl"), "--decisions", self.decisions({"c1": unbound})] + RESUME
            )
            self.assertEqual(status, 2, err)
            self.assertIn('call "c1"', err)
            self.assertEqual(fx.CALLS, [])

    def test_a_denial_needs_no_binding_and_any_arguments_opts_in_explicitly(self) -> None:
        status, _, err = self.cli(
            RUN
            + ["-o", self.path(), "--approve", self.decisions({"c1": {"decision": "deny", "by": "al", "reason": "no"}})]
        )
        self.assertEqual(status, 0, err)
        status, _, err = self.cli(
            RUN
            + [
                "-o",
                self.path("b.jsonl"),
                "--approve",
                self.decisions({"c1": {"decision": "approve", "by": "al", "any_arguments": True}}),
            ]
        )
        self.assertEqual(status, 0, err)
        self.assertEqual(fx.CALLS, [("delete", {"path": fx.HOSTILE})])
        for bad in (
            {"decision": "approve", "by": "al", "any_arguments": 1},
            {"decision": "deny", "by": "al", "reason": "", "any_arguments": True},
            {"decision": "approve", "by": "al", "any_arguments": True, "arguments_sha256": fx_sha()},
        ):
            status, _, err = self.cli(
                RUN + ["-o", self.path("c.jsonl"), "--overwrite", "--approve", self.decisions({"c1": bad})]
            )
            self.assertEqual(status, 2, bad)
            self.assertIn("any_arguments", err)
