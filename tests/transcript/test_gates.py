"""Gated calls have their decisions, and signed runs their notes (agentloop/transcript/gates.py).

Each test edits a real transcript as a forger would (every later hash
recomputed, :func:`tests.transcript.test_anchor.forge`) and checks that
``verify_file`` names the edited record, and, for signed runs, that
``verify_approvals`` does too.
"""

from __future__ import annotations

from typing import Any, Dict, List

from agentloop import Approve, Deny, Modify, ModelReply, ScriptedModel, ToolCall, run, verify_approvals, verify_file
from agentloop.signing import Ed25519Signer
from agentloop.signing.keys import encode_signer_key

from tests.support.approval_fixtures import delete_tool, look_tool, pay_tool
from tests.support.helpers import TempDir, read_lines, read_records
from tests.transcript.test_anchor import forge


def signer(name: str, seed: bytes) -> Ed25519Signer:
    return Ed25519Signer.from_key(
        encode_signer_key(name, seed, allow_slow_unsafe_signer=True), allow_slow_unsafe_signer=True
    )


ALICE = signer("alice", b"a" * 32)
MALLORY = signer("mallory", b"m" * 32)


def calls_model() -> ScriptedModel:
    """Turn 1: look (ungated), delete (gated always), pay 5 and pay 500 (gated by a predicate: amount > 100)."""
    return ScriptedModel(
        [
            ModelReply(
                "working",
                [
                    ToolCall("look", {"path": "/a"}, "l1"),
                    ToolCall("delete", {"path": "/a"}, "d1"),
                    ToolCall("pay", {"amount": 5}, "p1"),
                    ToolCall("pay", {"amount": 500}, "p2"),
                ],
            ),
            ModelReply("done"),
        ]
    )


def approve_all(request: Any) -> Any:
    return Approve("alice") if request.tool == "delete" else Modify({"amount": 150}, "alice")


class GateCase(TempDir):
    def make(self, **options: Any) -> List[bytes]:
        run(
            "work",
            calls_model(),
            [look_tool(), delete_tool(), pay_tool()],
            transcript=self.path(),
            max_steps=4,
            max_tokens=1000,
            approver=options.pop("approver", approve_all),
            overwrite=True,
            **options,
        )
        return read_lines(self.path())

    def verdict(self, lines: List[bytes], name: str = "forged.jsonl") -> List[Any]:
        target = self.write_bytes(b"".join(lines), name)
        return [(f.index, f.kind, f.detail) for f in verify_file(target).faults]

    def index(self, lines: List[bytes], call_id: str) -> int:
        records = [__import__("json").loads(line) for line in lines]
        return next(i for i, r in enumerate(records) if r["kind"] == "tool" and r["payload"]["id"] == call_id)


class TestGatedCallsHaveDecisions(GateCase):
    def test_a_run_records_the_predicate_outcome_of_every_call_it_let_through(self) -> None:
        lines = self.make()
        records = read_records(self.path())
        self.assertIs(records[0]["payload"]["predicate_outcomes"], True)
        by_id: Dict[str, Dict[str, Any]] = {r["payload"]["id"]: r["payload"] for r in records if r["kind"] == "tool"}
        self.assertIs(by_id["p1"]["gated"], False)
        self.assertNotIn("approval", by_id["p1"])
        self.assertNotIn("gated", by_id["p2"])
        self.assertEqual(by_id["p2"]["approval"]["decision"], "modify")
        self.assertNotIn("gated", by_id["l1"])  # an ungated tool says nothing
        self.assertEqual(self.verdict(lines), [])

    def test_an_always_gated_call_that_ran_with_no_decision_is_bad_payload_at_its_record(self) -> None:
        lines = self.make()
        at = self.index(lines, "d1")
        faults = self.verdict(forge(lines, at, lambda r: r["payload"].pop("approval")))
        self.assertEqual([(i, k) for i, k, _ in faults], [(at, "bad_payload")])
        self.assertIn('gates tool "delete" always', faults[0][2])

    def test_a_predicate_gated_call_that_ran_with_neither_decision_nor_outcome_is_bad_payload(self) -> None:
        lines = self.make()
        for call_id, strip in (("p1", "gated"), ("p2", "approval")):
            at = self.index(lines, call_id)
            faults = self.verdict(forge(lines, at, lambda r: r["payload"].pop(strip)))
            self.assertEqual([(i, k) for i, k, _ in faults], [(at, "bad_payload")], call_id)

    def test_an_outcome_on_a_tool_gated_always_or_not_gated_is_bad_payload(self) -> None:
        lines = self.make()
        for call_id in ("d1", "l1"):
            at = self.index(lines, call_id)

            def outcome(record: Dict[str, Any]) -> None:
                record["payload"].pop("approval", None)
                record["payload"]["gated"] = False

            faults = self.verdict(forge(lines, at, outcome))
            self.assertEqual([(i, k) for i, k, _ in faults], [(at, "bad_payload")], call_id)

    def test_a_decision_on_a_tool_the_task_record_does_not_gate_is_bad_payload(self) -> None:
        lines = self.make()
        at = self.index(lines, "l1")
        faults = self.verdict(
            forge(lines, at, lambda r: r["payload"].update(approval={"decision": "approve", "by": "x"}))
        )
        self.assertEqual([(i, k) for i, k, _ in faults], [(at, "bad_payload")])

    def test_a_denied_call_and_a_call_with_invalid_arguments_need_no_more(self) -> None:
        model = ScriptedModel(
            [
                ModelReply("go", [ToolCall("delete", {"path": ""}, "bad"), ToolCall("delete", {"path": "/b"}, "d2")]),
                ModelReply("ok"),
            ]
        )
        run(
            "work",
            model,
            [delete_tool()],
            transcript=self.path(),
            max_steps=4,
            max_tokens=1000,
            approver=lambda request: Deny("no", "alice"),
        )
        self.assertTrue(verify_file(self.path()).ok)


class TestSignedRuns(GateCase):
    def test_the_task_record_names_the_approval_signer_and_every_decision_is_signed(self) -> None:
        lines = self.make(approval_signer=ALICE)
        records = read_records(self.path())
        self.assertEqual(records[0]["payload"]["approval_signer"], {"name": "alice", "key_id": ALICE.key_id.hex()})
        notes = [
            r["payload"]["approval"]["note"] for r in records if r["kind"] == "tool" and "approval" in r["payload"]
        ]
        self.assertEqual(len(notes), 2)
        self.assertTrue(all("\u2014 alice " in note for note in notes))
        self.assertEqual(self.verdict(lines), [])
        self.assertEqual(verify_approvals(self.path(), [ALICE.verifier()]), [])
        self.assertNotIn("seed", repr(records[0]["payload"]))

    def test_stripped_and_forged_notes_are_named_at_their_records(self) -> None:
        lines = self.make(approval_signer=ALICE)
        at = self.index(lines, "d1")
        edits = {
            "note deleted": lambda r: r["payload"]["approval"].pop("note"),
            "approval deleted": lambda r: r["payload"].pop("approval"),
            "by changed, note deleted": lambda r: (
                r["payload"]["approval"].pop("note"),
                r["payload"]["approval"].update(by="bob"),
            ),
            "by changed, note kept": lambda r: r["payload"]["approval"].update(by="bob"),
        }
        for what, edit in edits.items():
            target = self.write_bytes(b"".join(forge(lines, at, edit)), "forged.jsonl")
            problems = verify_approvals(target, [ALICE.verifier()])
            self.assertEqual([index for index, _ in problems], [at], what)

    def test_a_note_by_another_trusted_key_is_not_the_run_signer_s(self) -> None:
        self.make(approval_signer=ALICE)
        problems = verify_approvals(self.path(), [MALLORY.verifier()])
        self.assertEqual(len(problems), 2)
        self.assertIn("approval signer alice+", problems[0][1])

    def test_a_decision_signed_by_another_key_is_denied_fail_closed(self) -> None:
        self.make(approval_signer=ALICE, approver=lambda request: Approve("mallory", signer=MALLORY))
        records = read_records(self.path())
        member = next(r["payload"]["approval"] for r in records if r["payload"].get("id") == "d1")
        self.assertEqual((member["decision"], member["by"]), ("deny", None))
        self.assertIn("not by the run's approval signer alice+", member["reason"])
        self.assertTrue(verify_file(self.path()).ok)

    def test_an_approval_signer_without_gated_tools_or_not_a_signer_is_refused(self) -> None:
        from agentloop.errors import RunConfigError

        with self.assertRaises(RunConfigError):
            run(
                "x",
                ScriptedModel([ModelReply("a")]),
                [look_tool()],
                transcript=self.path(),
                max_steps=1,
                max_tokens=9,
                approval_signer=ALICE,
            )
        with self.assertRaises(RunConfigError):
            run(
                "x",
                ScriptedModel([ModelReply("a")]),
                [delete_tool()],
                transcript=self.path(),
                max_steps=1,
                max_tokens=9,
                approver=approve_all,
                approval_signer="alice",
            )


class TestVerifyTrustCli(GateCase):
    """``agentloop verify FILE --trust PUB`` (no checkpoint): each missing or bad note at its record."""

    def cli(self, *argv: str) -> Any:
        import contextlib
        import io

        from agentloop.cli.main import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(list(argv), out=out)
        return status, out.getvalue(), err.getvalue()

    def test_verify_trust_reports_each_stripped_or_forged_note_at_its_record(self) -> None:
        lines = self.make(approval_signer=ALICE)
        pub = self.write_bytes(ALICE.verifier().text().encode("ascii") + b"\n", "alice.pub")
        status, out, _ = self.cli("verify", self.path(), "--trust", pub)
        self.assertEqual(status, 0, out)
        self.assertIn("every one signed by the approval signer alice+", out)
        at = self.index(lines, "d1")
        forged = self.write_bytes(
            b"".join(forge(lines, at, lambda r: r["payload"]["approval"].update(by="bob"))), "forged.jsonl"
        )
        status, out, _ = self.cli("verify", forged, "--trust", pub)
        self.assertEqual(status, 1, out)
        self.assertIn("record %d (line %d): decision: " % (at, at + 1), out)
        stripped = self.write_bytes(
            b"".join(forge(lines, at, lambda r: r["payload"]["approval"].pop("note"))), "stripped.jsonl"
        )
        status, out, _ = self.cli("verify", stripped, "--trust", pub, "--json")
        self.assertEqual(status, 1, out)
        self.assertEqual(__import__("json").loads(out)[0]["decisions"][0]["index"], at)

    def test_verify_trust_on_a_run_without_a_signer_says_its_decisions_are_unsigned(self) -> None:
        self.make()
        pub = self.write_bytes(ALICE.verifier().text().encode("ascii") + b"\n", "alice.pub")
        status, out, _ = self.cli("verify", self.path(), "--trust", pub)
        self.assertEqual(status, 0, out)
        self.assertIn("names no approval signer", out)


class TestReplayOfGatedRuns(GateCase):
    def test_a_signed_run_with_predicate_outcomes_replays_byte_for_byte_with_recorded_tools(self) -> None:
        from agentloop.models import replay

        self.make(approval_signer=ALICE)
        outcome = replay(self.path(), "recorded", transcript=self.path("again.jsonl"))
        self.assertTrue(outcome.identical, outcome.difference)

    def test_a_replay_with_real_tools_cannot_sign_a_new_decision_and_denies_it(self) -> None:
        from agentloop.models import replay

        self.make(approval_signer=ALICE)
        outcome = replay(
            self.path(),
            [look_tool(), delete_tool(), pay_tool()],
            transcript=self.path("again.jsonl"),
            approver=lambda request: Approve("replayer"),
        )
        records = read_records(self.path("again.jsonl"))
        member = next(r["payload"]["approval"] for r in records if r["payload"].get("id") == "d1")
        self.assertEqual((member["decision"], member["by"]), ("deny", None))
        self.assertIn("cannot sign a new decision", member["reason"])
        self.assertFalse(outcome.identical)
        self.assertTrue(verify_file(self.path("again.jsonl")).ok)


class TestOlderFiles(GateCase):
    def test_a_paused_file_written_before_predicate_outcomes_resumes_as_it_was(self) -> None:
        from agentloop import resume

        run(
            "work",
            calls_model(),
            [look_tool(), delete_tool(), pay_tool()],
            transcript=self.path("new.jsonl"),
            max_steps=4,
            max_tokens=1000,
            approver=lambda request: None,
        )  # paused at d1
        lines = read_lines(self.path("new.jsonl"))
        old = forge(lines, 0, lambda r: r["payload"].pop("predicate_outcomes"))  # as an earlier agentloop wrote it
        self.write_bytes(b"".join(old), "old.jsonl")
        self.assertTrue(verify_file(self.path("old.jsonl")).ok)
        resume(
            self.path("old.jsonl"), calls_model_after(), [look_tool(), delete_tool(), pay_tool()], approver=approve_all
        )
        records = read_records(self.path("old.jsonl"))
        self.assertNotIn("predicate_outcomes", records[0]["payload"])
        self.assertFalse(any("gated" in r["payload"] for r in records if r["kind"] == "tool"))  # the old rules, kept
        self.assertTrue(verify_file(self.path("old.jsonl"), require_complete=True).ok)

    def test_a_file_written_before_predicate_outcomes_replays_byte_for_byte(self) -> None:
        from agentloop.models import replay

        lines = self.make()
        at = self.index(lines, "p1")  # the call the predicate let through: "gated": false
        old = forge(
            forge(lines, 0, lambda r: r["payload"].pop("predicate_outcomes")), at, lambda r: r["payload"].pop("gated")
        )
        self.write_bytes(b"".join(old), "old.jsonl")
        self.assertTrue(verify_file(self.path("old.jsonl"), require_complete=True).ok)
        for tools in ("recorded", [look_tool(), delete_tool(), pay_tool()]):
            outcome = replay(
                self.path("old.jsonl"),
                tools,
                transcript=self.path("again.jsonl"),
                overwrite=True,
                approver=None if tools == "recorded" else approve_all,
            )
            self.assertTrue(outcome.identical, outcome.difference)


def calls_model_after() -> Any:
    """calls_model as a stateless model: the same reply for the same turn, in another process or object."""
    from tests.support.approval_fixtures import stateless

    return stateless(
        ModelReply(
            "working",
            [
                ToolCall("look", {"path": "/a"}, "l1"),
                ToolCall("delete", {"path": "/a"}, "d1"),
                ToolCall("pay", {"amount": 5}, "p1"),
                ToolCall("pay", {"amount": 500}, "p2"),
            ],
        )
    )


class TestFailClosedInSignedRuns(GateCase):
    def test_a_fail_closed_denial_is_signed_and_one_passed_off_unsigned_is_reported(self) -> None:
        def approver(request: Any) -> Any:
            if request.tool == "delete":
                raise RuntimeError("the approver's service is down")
            return Modify({"amount": 150}, "alice")

        self.make(approval_signer=ALICE, approver=approver)
        records = read_records(self.path())
        member = next(r["payload"]["approval"] for r in records if r["payload"].get("id") == "d1")
        self.assertEqual((member["decision"], member["by"]), ("deny", None))
        self.assertIn("by null", member["note"])  # the run's key signed the loop's own denial
        self.assertEqual(verify_approvals(self.path(), [ALICE.verifier()]), [])
        # a call that ran, rewritten as a fail-closed denial without a note: the grammar allows it, the key does not
        signed = self.make(approval_signer=ALICE)
        at = self.index(signed, "d1")

        def hide(record: Dict[str, Any]) -> None:
            payload = record["payload"]
            payload.pop("value")
            payload.update(
                ok=False, error="call denied (fail closed): x", approval={"decision": "deny", "by": None, "reason": "x"}
            )

        target = self.write_bytes(b"".join(forge(signed, at, hide)), "hidden.jsonl")
        self.assertTrue(verify_file(target).ok)
        self.assertEqual([i for i, _ in verify_approvals(target, [ALICE.verifier()])], [at])
