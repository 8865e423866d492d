"""A person in the loop: approval, pause and resume, replay, signed decisions.

Every test runs the real loop with stateless scripted models and tools that
count their real invocations (tests/support/approval_fixtures.py).
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, List

from agentloop import (
    ApprovalRequest,
    Approve,
    Deny,
    Modify,
    ModelReply,
    RunConfigError,
    Terminate,
    ToolCall,
    ToolRegistry,
    check_consistency,
    prove_consistency,
    read_checkpoint,
    read_pending,
    resume,
    run,
    run_async,
    verify_approvals,
    verify_file,
)
from agentloop.loop.approval import NOTE_HEADER, decision_from_json, note_text
from agentloop.loop.calls import groups
from agentloop.canonical import canonical_bytes
from agentloop.models import replay
from agentloop.loop.plan import plan_turn
from agentloop.signing import Ed25519Signer, Ed25519Verifier, generate_key
from agentloop.transcript.verify import verify_records

from tests.support import approval_fixtures as fx
from tests.support.helpers import TempDir, read_records


def digest(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def sha(arguments: Dict[str, Any]) -> str:
    return hashlib.sha256(canonical_bytes(arguments)).hexdigest()


class Base(TempDir):
    def setUp(self) -> None:
        super().setUp()
        fx.CALLS.clear()

    def go(self, approver: Any, name: str = "t.jsonl", model: Any = None, tools: Any = None, **options: Any) -> Any:
        return run(
            "clean up",
            model or fx.delete_model(),
            tools or fx.tools(),
            transcript=self.path(name),
            max_steps=5,
            max_tokens=10_000,
            approver=approver,
            **options,
        )

    def tool_record(self, name: str = "t.jsonl") -> Dict[str, Any]:
        return [r for r in read_records(self.path(name)) if r["kind"] == "tool"][0]["payload"]


class TestInline(Base):
    def test_inline_deny_runs_the_tool_zero_times_and_the_model_sees_who_and_why(self) -> None:
        result = self.go(lambda request: Deny("not on a Friday", by="alice"))
        self.assertEqual(fx.CALLS, [])
        self.assertEqual(result.stop_reason, "no_tool_calls")
        self.assertEqual(
            self.tool_record(),
            {
                "step": 1,
                "id": "c1",
                "name": "delete",
                "ok": False,
                "error": 'call denied by "alice": not on a Friday',
                "approval": {"decision": "deny", "by": "alice", "reason": "not on a Friday"},
            },
        )
        self.assertEqual(result.output, 'the tool said: call denied by "alice": not on a Friday')
        self.assertTrue(verify_file(self.path()).ok)

    def test_a_deny_without_a_reason_says_so(self) -> None:
        self.go(lambda request: Deny("", by="alice"))
        self.assertEqual(self.tool_record()["error"], 'call denied by "alice": (no reason given)')

    def test_approve_runs_the_tool_once_and_records_who(self) -> None:
        result = self.go(lambda request: Approve(by="alice"))
        self.assertEqual(fx.CALLS, [("delete", {"path": "/tmp/x"})])
        self.assertEqual(result.stop_reason, "no_tool_calls")
        record = self.tool_record()
        self.assertEqual(
            (record["ok"], record["value"], record["approval"]),
            (True, {"deleted": "/tmp/x"}, {"decision": "approve", "by": "alice"}),
        )

    def test_the_request_names_the_run_the_step_the_call_and_the_exact_arguments(self) -> None:
        seen: List[ApprovalRequest] = []
        self.go(lambda request: seen.append(request) or Approve(by="alice"))
        records = read_records(self.path())
        self.assertEqual(len(seen), 1)
        request = seen[0]
        self.assertEqual(request.origin, "agentloop/1/" + records[0]["hash"])
        self.assertEqual(
            (request.step, request.call_id, request.tool, request.arguments), (1, "c1", "delete", {"path": "/tmp/x"})
        )
        # Recompute: sha256 of the RFC 8785 bytes {"path":"/tmp/x"}
        self.assertEqual(request.arguments_sha256, hashlib.sha256(b'{"path":"/tmp/x"}').hexdigest())
        self.assertEqual(request.assistant_hash, records[1]["hash"])

    def test_the_approver_gets_a_copy_it_cannot_use_to_change_the_call(self) -> None:
        def meddle(request: ApprovalRequest) -> Approve:
            request.arguments["path"] = "/"
            return Approve(by="alice")

        self.go(meddle)
        self.assertEqual(fx.CALLS, [("delete", {"path": "/tmp/x"})])

    def test_modify_runs_the_tool_with_the_new_arguments_and_records_them(self) -> None:
        self.go(lambda request: Modify({"path": "/tmp/x.bak"}, by="bob"))
        self.assertEqual(fx.CALLS, [("delete", {"path": "/tmp/x.bak"})])
        record = self.tool_record()
        self.assertEqual(record["approval"], {"decision": "modify", "by": "bob", "arguments": {"path": "/tmp/x.bak"}})
        self.assertEqual(record["value"], {"deleted": "/tmp/x.bak"})

    def test_modified_arguments_are_validated_and_invalid_ones_fail_as_data(self) -> None:
        self.go(lambda request: Modify({"path": ""}, by="bob"))
        self.assertEqual(fx.CALLS, [])
        record = self.tool_record()
        self.assertEqual(
            record["error"],
            'invalid arguments (modified by "bob"): $.delete.path: string of length 0 is shorter than minLength 1',
        )
        self.assertEqual(record["approval"]["arguments"], {"path": ""})

    def test_terminate_fails_the_call_as_data_and_stops_the_run(self) -> None:
        result = self.go(lambda request: Terminate("wrong task", by="carol"))
        self.assertEqual(fx.CALLS, [])
        self.assertEqual(result.stop_reason, "approval_terminated")
        self.assertEqual(result.detail, '"carol" terminated the run at call "c1" (delete) of step 1: wrong task')
        records = read_records(self.path())
        self.assertEqual([r["kind"] for r in records], ["task", "assistant", "tool", "stop"])
        self.assertEqual(records[2]["payload"]["error"], 'call refused: the run was terminated by "carol": wrong task')
        verdict = verify_file(self.path(), require_complete=True)
        self.assertEqual((verdict.ok, verdict.complete), (True, True))

    def test_terminate_leaves_the_later_calls_of_the_turn_unrun(self) -> None:
        model = fx.stateless(
            ModelReply("two", [ToolCall("delete", {"path": "/a"}, "c1"), ToolCall("look", {"path": "/b"}, "c2")])
        )
        result = self.go(lambda request: Terminate("stop", by="carol"), model=model)
        self.assertEqual((result.stop_reason, fx.CALLS), ("approval_terminated", []))
        self.assertTrue(verify_file(self.path()).ok)

    def test_an_approver_that_raises_denies_fail_closed(self) -> None:
        def broken(request: ApprovalRequest) -> Any:
            raise RuntimeError("no terminal")

        result = self.go(broken)
        self.assertEqual(fx.CALLS, [])
        self.assertEqual(result.stop_reason, "no_tool_calls")
        self.assertEqual(
            self.tool_record()["approval"],
            {"decision": "deny", "by": None, "reason": "the approver raised RuntimeError: no terminal"},
        )
        self.assertEqual(
            self.tool_record()["error"], "call denied (fail closed): the approver raised RuntimeError: no terminal"
        )

    def test_an_approver_returning_anything_else_denies_fail_closed(self) -> None:
        for answer, shown in ((True, "bool"), ("yes", "str"), (Approve, "type")):
            with self.subTest(answer=answer):
                fx.CALLS.clear()
                self.go(lambda request: answer, overwrite=True)
                self.assertEqual(fx.CALLS, [])
                self.assertEqual(
                    self.tool_record()["approval"]["reason"],
                    "the approver returned %s, not Approve, Deny, Modify, Terminate or None" % (shown,),
                )

    def test_a_decision_bound_to_other_arguments_denies_fail_closed(self) -> None:
        self.go(lambda request: Approve(by="alice", arguments_sha256="0" * 64))
        self.assertEqual(fx.CALLS, [])
        self.assertIn("is bound to arguments with SHA-256 " + "0" * 64, self.tool_record()["approval"]["reason"])

    def test_a_decision_bound_to_these_arguments_runs(self) -> None:
        self.go(lambda request: Approve(by="alice", arguments_sha256=sha({"path": "/tmp/x"})))
        self.assertEqual(len(fx.CALLS), 1)

    def test_keyboard_interrupt_in_the_approver_propagates_and_leaves_a_verifiable_prefix(self) -> None:
        def interrupted(request: ApprovalRequest) -> Any:
            raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            self.go(interrupted)
        verdict = verify_file(self.path())
        self.assertEqual((verdict.ok, verdict.count, verdict.complete, fx.CALLS), (True, 2, False, []))

    def test_a_gated_tool_without_an_approver_is_refused_before_the_file_is_touched(self) -> None:
        with self.assertRaises(RunConfigError) as caught:
            run("t", fx.delete_model(), fx.tools(), transcript=self.path(), max_steps=5, max_tokens=100)
        self.assertEqual(str(caught.exception), "approver: tools 'delete' require approval, and no approver was given")
        self.assertFalse(os.path.exists(self.path()))

    def test_invalid_arguments_fail_before_the_approver_is_asked(self) -> None:
        asked: List[Any] = []
        model = fx.stateless(ModelReply("bad", [ToolCall("delete", {"path": 3}, "c1")]))
        self.go(lambda request: asked.append(request) or Approve(by="a"), model=model)
        self.assertEqual((asked, fx.CALLS), ([], []))
        self.assertNotIn("approval", self.tool_record())

    def test_the_task_record_holds_the_policy_and_ungated_runs_are_unchanged(self) -> None:
        self.go(lambda request: Approve(by="a"), tools=ToolRegistry([fx.delete_tool(), fx.look_tool(), fx.pay_tool()]))
        self.assertEqual(read_records(self.path())[0]["payload"]["approval"], {"delete": "always", "pay": "predicate"})
        run("t", fx.stateless(), [fx.look_tool()], transcript=self.path("plain.jsonl"), max_steps=2, max_tokens=100)
        self.assertNotIn("approval", read_records(self.path("plain.jsonl"))[0]["payload"])

    def test_a_predicate_gates_only_the_calls_it_says(self) -> None:
        model = fx.stateless(
            ModelReply("pay", [ToolCall("pay", {"amount": 5}, "small"), ToolCall("pay", {"amount": 500}, "big")])
        )
        asked: List[str] = []
        self.go(
            lambda request: asked.append(request.call_id) or Deny("too much", by="a"),
            model=model,
            tools=[fx.pay_tool()],
        )
        self.assertEqual(asked, ["big"])
        self.assertEqual(fx.CALLS, [("pay", {"amount": 5})])
        tools = [r["payload"] for r in read_records(self.path()) if r["kind"] == "tool"]
        self.assertEqual(["approval" in t for t in tools], [False, True])

    def test_a_predicate_that_raises_gates_the_call(self) -> None:
        def boom(arguments: Dict[str, Any]) -> bool:
            raise ValueError("bad predicate")

        tool = fx.delete_tool(requires_approval=boom)
        self.assertTrue(tool.needs_approval({"path": "x"}))
        self.assertTrue(fx.delete_tool(requires_approval=lambda a: "yes").needs_approval({"path": "x"}))
        self.assertFalse(fx.delete_tool(requires_approval=lambda a: False).needs_approval({"path": "x"}))

    def test_a_gated_tool_marked_parallel_is_still_a_barrier(self) -> None:
        registry = ToolRegistry([fx.delete_tool(parallel=True), fx.look_tool(parallel=True)])
        reply = ModelReply(
            "",
            [
                ToolCall("look", {"path": "a"}),
                ToolCall("look", {"path": "b"}),
                ToolCall("delete", {"path": "c"}),
                ToolCall("look", {"path": "d"}),
                ToolCall("look", {"path": "e"}),
            ],
        )
        self.assertEqual(groups(plan_turn(reply, 1, 1 << 20).calls, registry), [[0, 1], [2], [3, 4]])

    def test_run_async_writes_the_same_bytes_and_awaits_an_async_approver(self) -> None:
        import asyncio

        async def approver(request: ApprovalRequest) -> Approve:
            return Approve(by="alice")

        self.go(lambda request: Approve(by="alice"), name="sync.jsonl")
        asyncio.run(
            run_async(
                "clean up",
                fx.delete_model(),
                fx.tools(),
                transcript=self.path("async.jsonl"),
                max_steps=5,
                max_tokens=10_000,
                approver=approver,
            )
        )
        self.assertEqual(digest(self.path("sync.jsonl")), digest(self.path("async.jsonl")))


class TestPauseAndResume(Base):
    def pause(self, name: str = "t.jsonl", **options: Any) -> Any:
        return self.go(lambda request: None, name=name, checkpoint=self.path(name + ".pause"), **options)

    def test_defer_pauses_without_a_stop_record_and_the_file_verifies_incomplete(self) -> None:
        result = self.pause()
        self.assertEqual(fx.CALLS, [])
        self.assertEqual(result.stop_reason, "awaiting_approval")
        self.assertEqual(
            result.detail, 'call "c1" (delete) of step 1 awaits approval; 1 gated call(s) of this turn wait in all'
        )
        self.assertEqual([(p.call_id, p.arguments) for p in result.pending], [("c1", {"path": "/tmp/x"})])
        self.assertEqual([r["kind"] for r in read_records(self.path())], ["task", "assistant"])
        verdict = verify_file(self.path())
        self.assertEqual((verdict.ok, verdict.complete, verdict.count), (True, False, 2))
        self.assertEqual(read_checkpoint(self.path("t.jsonl.pause")).size, 2)

    def test_pause_then_resume_approve_equals_inline_approve_byte_for_byte_and_runs_once(self) -> None:
        self.go(lambda request: Approve(by="alice"), name="inline.jsonl")
        self.assertEqual(len(fx.CALLS), 1)
        fx.CALLS.clear()
        self.pause()
        result = resume(
            self.path(),
            fx.delete_model(),
            fx.tools(),
            decisions={"c1": Approve(by="alice")},
            anchor=self.path("t.jsonl.pause"),
            checkpoint=self.path("t.jsonl.final"),
        )
        self.assertEqual(fx.CALLS, [("delete", {"path": "/tmp/x"})])
        self.assertEqual(result.stop_reason, "no_tool_calls")
        self.assertEqual(digest(self.path()), digest(self.path("inline.jsonl")))
        # The pause checkpoint and the final one are consistent (RFC 9162 section 2.1.4).
        old, new = read_checkpoint(self.path("t.jsonl.pause")), read_checkpoint(self.path("t.jsonl.final"))
        check_consistency(old, new, prove_consistency(self.path(), old.size))
        self.assertEqual((old.size, new.size), (2, 5))

    def test_every_decision_resumed_equals_the_same_decision_inline(self) -> None:
        for decision in (Deny("no", by="bob"), Modify({"path": "/tmp/y"}, by="bob"), Terminate("enough", by="carol")):
            with self.subTest(decision=type(decision).__name__):
                inline, paused = (
                    "inline-%s.jsonl" % type(decision).__name__,
                    "paused-%s.jsonl" % type(decision).__name__,
                )
                self.go(lambda request: decision, name=inline)
                ran_inline = list(fx.CALLS)
                fx.CALLS.clear()
                self.pause(paused)
                resume(self.path(paused), fx.delete_model(), fx.tools(), decisions={"c1": decision})
                self.assertEqual(fx.CALLS, ran_inline)
                self.assertEqual(digest(self.path(paused)), digest(self.path(inline)))
                fx.CALLS.clear()

    def test_read_pending_lists_the_calls_without_a_tool_record(self) -> None:
        model = fx.stateless(
            ModelReply(
                "two",
                [
                    ToolCall("look", {"path": "/a"}, "c0"),
                    ToolCall("delete", {"path": "/b"}, "c1"),
                    ToolCall("delete", {"path": "/c"}, "c2"),
                ],
            )
        )
        result = self.go(lambda request: None, model=model)
        self.assertEqual([p.call_id for p in result.pending], ["c1", "c2"])
        pending = read_pending(self.path())
        self.assertEqual(
            [(c.call_id, c.position, c.policy, c.arguments_sha256) for c in pending.calls],
            [("c1", 1, "always", sha({"path": "/b"})), ("c2", 2, "always", sha({"path": "/c"}))],
        )
        self.assertEqual(fx.CALLS, [("look", {"path": "/a"})])
        # One decision: the turn goes on to c2 and pauses again there.
        again = resume(self.path(), model, fx.tools(), decisions={"c1": Approve(by="a")})
        self.assertEqual((again.stop_reason, [p.call_id for p in again.pending]), ("awaiting_approval", ["c2"]))
        done = resume(self.path(), model, fx.tools(), decisions={"c2": Deny("no", by="a")})
        self.assertEqual(done.stop_reason, "no_tool_calls")
        self.assertEqual(read_pending(self.path()).stop, "no_tool_calls")

    def test_a_decision_for_a_call_that_is_not_pending_is_refused(self) -> None:
        self.pause()
        with self.assertRaises(RunConfigError) as caught:
            resume(self.path(), fx.delete_model(), fx.tools(), decisions={"c9": Approve(by="a")})
        self.assertEqual(str(caught.exception), 'decisions: call "c9" is not pending (pending: "c1")')
        self.assertEqual((fx.CALLS, verify_file(self.path()).count), ([], 2))

    def test_a_decision_with_another_arguments_sha256_is_refused(self) -> None:
        self.pause()
        with self.assertRaises(RunConfigError) as caught:
            resume(
                self.path(),
                fx.delete_model(),
                fx.tools(),
                decisions={"c1": Approve(by="a", arguments_sha256=sha({"path": "/"}))},
            )
        self.assertEqual(
            str(caught.exception),
            'decisions: the decision for call "c1" is bound to arguments with SHA-256 %s, '
            "but the pending call's are %s" % (sha({"path": "/"}), sha({"path": "/tmp/x"})),
        )
        self.assertEqual(fx.CALLS, [])
        resume(
            self.path(),
            fx.delete_model(),
            fx.tools(),
            decisions={"c1": Approve(by="a", arguments_sha256=sha({"path": "/tmp/x"}))},
        )
        self.assertEqual(len(fx.CALLS), 1)

    def test_a_finished_run_is_not_resumed(self) -> None:
        self.go(lambda request: Approve(by="a"))
        with self.assertRaises(RunConfigError) as caught:
            resume(self.path(), fx.delete_model(), fx.tools())
        self.assertIn("is a finished run (stop record: no_tool_calls)", str(caught.exception))

    def test_other_tools_than_the_recorded_ones_are_refused(self) -> None:
        self.pause()
        with self.assertRaises(RunConfigError) as caught:
            resume(
                self.path(),
                fx.delete_model(),
                [fx.delete_tool(requires_approval=lambda a: True), fx.look_tool()],
                decisions={"c1": Approve(by="a")},
            )
        self.assertEqual(
            str(caught.exception),
            "tools: the model and tools given do not give the recorded task record: its 'approval' differs",
        )

    def test_a_paused_file_edited_with_every_hash_recomputed_is_caught_against_the_pause_checkpoint(self) -> None:
        self.pause()
        records = read_records(self.path())
        records[1]["payload"]["tool_calls"][0]["arguments"] = {"path": "/"}  # what the person will now be asked about
        prev = records[0]["hash"]
        with open(self.path(), "rb") as handle:
            lines = [handle.readline()]
        for record in records[1:]:
            body = {"kind": record["kind"], "payload": record["payload"], "prev": prev, "seq": record["seq"]}
            record["hash"] = prev = hashlib.sha256(canonical_bytes(body)).hexdigest()
            lines.append(canonical_bytes(dict(body, hash=prev)) + b"\n")
        with open(self.path(), "wb") as handle:
            handle.write(b"".join(lines))
        self.assertTrue(verify_file(self.path()).ok)  # the chain alone cannot tell
        self.assertEqual(read_pending(self.path()).calls[0].arguments, {"path": "/"})
        with self.assertRaises(RunConfigError) as caught:
            resume(
                self.path(),
                fx.delete_model(),
                fx.tools(),
                decisions={"c1": Approve(by="a")},
                anchor=self.path("t.jsonl.pause"),
            )
        self.assertIn("does not match the checkpoint", str(caught.exception))
        self.assertIn("anchor_mismatch", str(caught.exception))
        self.assertEqual(fx.CALLS, [])

    def test_a_crash_mid_turn_leaves_an_ungated_call_that_is_refused_unless_rerun_unrecorded(self) -> None:
        state = {"interrupt": True}

        def look(path: str) -> Dict[str, Any]:
            fx.CALLS.append(("look", {"path": path}))
            if state["interrupt"]:
                raise KeyboardInterrupt  # the process dies after the tool did its work, before its record
            return {"exists": True}

        tools = [fx.delete_tool(), _replace_fn(fx.look_tool(), look)]
        model = fx.stateless(ModelReply("look", [ToolCall("look", {"path": "/a"}, "c1")]))
        with self.assertRaises(KeyboardInterrupt):
            run(
                "t",
                model,
                tools,
                transcript=self.path(),
                max_steps=5,
                max_tokens=10_000,
                approver=lambda r: Approve(by="a"),
            )
        self.assertEqual(len(fx.CALLS), 1)
        with self.assertRaises(RunConfigError) as caught:
            resume(self.path(), model, tools)
        self.assertEqual(
            str(caught.exception),
            'rerun_unrecorded: call "c1" (look) of step 1 has no record and needs no approval: '
            "it may already have run before the run ended; pass rerun_unrecorded=True to run it again",
        )
        state["interrupt"] = False
        result = resume(self.path(), model, tools, rerun_unrecorded=True)
        self.assertEqual((result.stop_reason, len(fx.CALLS)), ("no_tool_calls", 2))
        self.assertTrue(verify_file(self.path(), require_complete=True).ok)

    def test_a_file_cut_between_turns_goes_on_with_the_next_turn(self) -> None:
        self.go(lambda request: Approve(by="a"), name="whole.jsonl")
        with open(self.path("whole.jsonl"), "rb") as handle:
            lines = handle.readlines()
        with open(self.path(), "wb") as handle:
            handle.write(b"".join(lines[:3]))  # task, assistant, tool: the model call of turn 2 never answered
        resume(self.path(), fx.delete_model(), fx.tools())
        self.assertEqual(digest(self.path()), digest(self.path("whole.jsonl")))

    def test_resume_refuses_a_file_a_live_writer_holds(self) -> None:
        from agentloop import TranscriptLockedError
        from agentloop.transcript.durable import lock_exclusive

        self.pause()
        fd = os.open(self.path(), os.O_RDONLY)
        try:
            lock_exclusive(fd, self.path())
            with self.assertRaises(TranscriptLockedError):
                resume(self.path(), fx.delete_model(), fx.tools(), decisions={"c1": Approve(by="a")})
        finally:
            os.close(fd)
        self.assertEqual(fx.CALLS, [])


def _replace_fn(tool: Any, fn: Any) -> Any:
    import dataclasses

    return dataclasses.replace(tool, fn=fn)


class TestReplay(Base):
    def test_a_run_with_every_kind_of_decision_replays_byte_for_byte_with_nobody_present(self) -> None:
        calls = [
            ToolCall("delete", {"path": "/a"}, "c1"),
            ToolCall("delete", {"path": "/b"}, "c2"),
            ToolCall("pay", {"amount": 500}, "c3"),
            ToolCall("pay", {"amount": 5}, "c4"),
            ToolCall("delete", {"path": "/c"}, "c5"),
        ]
        answers = {"c1": Approve(by="a"), "c2": Modify({"path": "/b2"}, by="b"), "c3": Deny("too much", by="c")}

        def approver(request: ApprovalRequest) -> Any:
            if request.call_id == "c5":
                raise RuntimeError("gone")
            return answers[request.call_id]

        model = fx.stateless(ModelReply("all", calls))
        tools = ToolRegistry([fx.delete_tool(), fx.look_tool(), fx.pay_tool()])
        self.go(approver, model=model, tools=tools)
        fx.CALLS.clear()
        outcome = replay(self.path(), "recorded", transcript=self.path("replay.jsonl"), overwrite=True)
        self.assertIsNone(outcome.difference)
        self.assertEqual(fx.CALLS, [])

    def test_a_replay_with_real_tools_never_runs_a_gated_tool_on_a_recorded_approval(self) -> None:
        # issue 19, seam 4: a recorded approval authorised the original run, not the replay
        calls = [
            ToolCall("delete", {"path": "/a"}, "c1"),
            ToolCall("pay", {"amount": 500}, "c3"),
            ToolCall("pay", {"amount": 5}, "c4"),
            ToolCall("delete", {"path": "/b"}, "c2"),
        ]
        answers = {"c1": Approve(by="a"), "c3": Modify({"amount": 50}, by="b"), "c2": Deny("no", by="c")}
        model = fx.stateless(ModelReply("all", calls))
        self.go(
            lambda request: answers[request.call_id], model=model, tools=ToolRegistry([fx.delete_tool(), fx.pay_tool()])
        )
        fx.CALLS.clear()
        refused: List[str] = []
        outcome = replay(
            self.path(),
            ToolRegistry([fx.delete_tool(), fx.pay_tool()]),
            transcript=self.path("replay.jsonl"),
            on_refused=lambda request: refused.append(request.call_id),
        )
        self.assertEqual(fx.CALLS, [("pay", {"amount": 5})])  # the ungated call ran again, no gated one did
        self.assertEqual(refused, ["c1", "c3"])
        self.assertIsNotNone(outcome.difference)
        again = {
            r["payload"]["id"]: r["payload"] for r in read_records(self.path("replay.jsonl")) if r["kind"] == "tool"
        }
        self.assertEqual((again["c1"]["ok"], again["c1"]["approval"]["by"]), (False, None))
        self.assertIn("replay with real tools", again["c1"]["error"])
        self.assertEqual(again["c2"]["approval"], {"decision": "deny", "by": "c", "reason": "no"})  # a denial stands
        # an approver decides again, for this replay
        fx.CALLS.clear()
        replay(
            self.path(),
            ToolRegistry([fx.delete_tool(), fx.pay_tool()]),
            transcript=self.path("replay2.jsonl"),
            approver=lambda request: Approve(by="replayer"),
        )
        self.assertEqual(fx.CALLS, [("delete", {"path": "/a"}), ("pay", {"amount": 500}), ("pay", {"amount": 5})])

    def test_a_paused_file_replays_to_the_same_pause(self) -> None:
        self.go(lambda request: None)
        outcome = replay(self.path(), "recorded", transcript=self.path("replay.jsonl"))
        self.assertEqual((outcome.identical, outcome.run.stop_reason), (True, "awaiting_approval"))


class TestSignedDecisions(Base):
    def setUp(self) -> None:
        super().setUp()
        skey, vkey = generate_key("alice", allow_slow_unsafe_signer=True)
        self.signer = Ed25519Signer.from_key(skey, allow_slow_unsafe_signer=True)
        self.verifier = Ed25519Verifier.from_key(vkey)

    def test_a_signed_decision_carries_a_note_binding_run_record_call_arguments_and_decision(self) -> None:
        self.go(lambda request: Deny("no", by="alice", signer=self.signer))
        records = read_records(self.path())
        note = records[2]["payload"]["approval"]["note"]
        text = note.split("\n\n")[0] + "\n"
        self.assertEqual(
            text,
            "\n".join(
                [
                    NOTE_HEADER,
                    "agentloop/1/" + records[0]["hash"],
                    "step 1",
                    "assistant " + records[1]["hash"],
                    'call "c1"',
                    'tool "delete"',
                    "arguments " + sha({"path": "/tmp/x"}),
                    "decision deny",
                    'by "alice"',
                    'reason "no"',
                ]
            )
            + "\n",
        )
        self.assertTrue(note.endswith("\n") and "\n\u2014 alice " in note)
        self.assertEqual(verify_approvals(self.path(), [self.verifier]), [])

    def test_a_signed_decision_is_deterministic_so_pause_resume_and_replay_are_byte_identical(self) -> None:
        self.go(lambda request: Modify({"path": "/y"}, by="alice", signer=self.signer), name="inline.jsonl")
        self.go(lambda request: None, name="paused.jsonl")
        resume(
            self.path("paused.jsonl"),
            fx.delete_model(),
            fx.tools(),
            decisions={"c1": Modify({"path": "/y"}, by="alice", signer=self.signer)},
        )
        self.assertEqual(digest(self.path("paused.jsonl")), digest(self.path("inline.jsonl")))
        self.assertTrue(replay(self.path("inline.jsonl"), "recorded", transcript=self.path("replay.jsonl")).identical)

    def test_a_note_checked_with_another_key_or_moved_to_another_decision_fails(self) -> None:
        self.go(lambda request: Approve(by="alice", signer=self.signer))
        _, other = generate_key("alice", allow_slow_unsafe_signer=True)
        self.assertEqual(len(verify_approvals(self.path(), [Ed25519Verifier.from_key(other)])), 1)
        # Negative control: the note kept, the decision changed (every hash recomputed) -> the text no longer matches.
        records = read_records(self.path())
        records[2]["payload"]["approval"]["by"] = "mallory"
        prev = records[1]["hash"]
        rewritten = []
        for record in records[2:]:
            body = {"kind": record["kind"], "payload": record["payload"], "prev": prev, "seq": record["seq"]}
            prev = hashlib.sha256(canonical_bytes(body)).hexdigest()
            rewritten.append(canonical_bytes(dict(body, hash=prev)) + b"\n")
        with open(self.path(), "rb") as handle:
            head = handle.readlines()[:2]
        with open(self.path("moved.jsonl"), "wb") as handle:
            handle.write(b"".join(head + rewritten))
        problems = verify_approvals(self.path("moved.jsonl"), [self.verifier])
        self.assertEqual(problems, [(2, "bad signature: the note's text does not match this call and decision")])

    def test_a_signer_that_fails_denies_fail_closed(self) -> None:
        class Broken:
            name, key_id = "alice", b"\x00\x00\x00\x00"

            def sign(self, message: bytes) -> bytes:
                raise OSError("no key")

        self.go(lambda request: Approve(by="alice", signer=Broken()))
        self.assertEqual(fx.CALLS, [])
        self.assertEqual(
            self.tool_record()["approval"]["reason"], 'the decision of "alice" could not be signed: OSError: no key'
        )


class TestDecisionsAndGrammar(Base):
    def test_decisions_from_json(self) -> None:
        self.assertEqual(decision_from_json({"decision": "approve", "by": "a"}), Approve(by="a"))
        self.assertEqual(
            decision_from_json({"decision": "modify", "by": "a", "arguments": {"x": 1}}), Modify({"x": 1}, by="a")
        )
        for bad, message in (
            ([], "$: a decision is an object, got list"),
            ({"decision": "yes"}, '$.decision: "yes" is not one of approve, deny, modify, terminate'),
            ({"decision": "deny", "by": "a"}, "$: a deny needs 'reason'"),
            ({"decision": "approve", "by": ""}, "$: Approve.by must be a non-empty str naming who decided, got str"),
            (
                {"decision": "approve", "by": "a", "extra": 1},
                '$: unknown member "extra" (have: arguments, arguments_sha256, by, decision, reason)',
            ),
        ):
            with self.subTest(bad=bad):
                with self.assertRaises(ValueError) as caught:
                    decision_from_json(bad)
                self.assertEqual(str(caught.exception), message)

    def test_the_grammar_checks_the_approval_member(self) -> None:
        self.go(lambda request: Deny("no", by="a"))
        records = read_records(self.path())
        self.assertEqual(verify_records(records), [])
        for change, problem in (
            (
                {"decision": "maybe", "by": "a"},
                'payload.approval.decision is "maybe", not one of approve, deny, modify, terminate',
            ),
            ({"decision": "deny", "by": "a"}, "payload.approval has no 'reason'"),
            (
                {"decision": "approve", "by": None},
                "payload.approval.by is null with a approve decision (only a fail-closed deny has no one)",
            ),
            ({"decision": "modify", "by": "a"}, "payload.approval has no 'arguments'"),
            ({"decision": "deny", "by": 3, "reason": ""}, "payload.approval.by is 3, expected a string"),
        ):
            with self.subTest(change=change):
                bad = json.loads(json.dumps(records))
                bad[2]["payload"]["approval"] = change
                body = {k: bad[2][k] for k in ("kind", "payload", "prev", "seq")}
                bad[2]["hash"] = hashlib.sha256(canonical_bytes(body)).hexdigest()
                bad[3]["prev"] = bad[2]["hash"]
                body = {k: bad[3][k] for k in ("kind", "payload", "prev", "seq")}
                bad[3]["hash"] = hashlib.sha256(canonical_bytes(body)).hexdigest()
                faults = [f for f in verify_records(bad[:4]) if f.kind == "bad_payload"]
                self.assertEqual([f.detail for f in faults], [problem])

    def test_note_text_is_ascii_whatever_the_call_holds(self) -> None:
        from agentloop.loop.approval import Verdict

        request = ApprovalRequest("agentloop/1/" + "0" * 64, 1, "id\n\u202e", "t", {}, "0" * 64, "1" * 64)
        text = note_text(request, Verdict("deny", "\x1bme", "why\n"))
        self.assertTrue(text.isascii())
        self.assertEqual(text.count("\n"), 10)


class TestMisuse(Base):
    def test_decisions_check_their_fields(self) -> None:
        for build, message in (
            (lambda: Approve(by=""), "Approve.by must be a non-empty str naming who decided, got str"),
            (
                lambda: Approve(by="a", arguments_sha256="XYZ"),
                "Approve.arguments_sha256 must be None or 64 lowercase hex digits",
            ),
            (
                lambda: Approve(by="a", signer=object()),
                "Approve.signer must be None or a note signer (name, key_id, sign)",
            ),
            (lambda: Deny(3, by="a"), "Deny.reason must be a str, got int"),  # type: ignore[arg-type]
            (lambda: Modify([1], by="a"), "Modify.arguments must be a mapping, got list"),  # type: ignore[arg-type]
        ):
            with self.subTest(message=message):
                with self.assertRaises((TypeError, ValueError)) as caught:
                    build()
                self.assertEqual(str(caught.exception), message)
        self.assertEqual(
            decision_from_json({"decision": "terminate", "by": "a", "reason": "r"}), Terminate("r", by="a")
        )
        with self.assertRaises(ValueError) as caught:
            decision_from_json({"decision": "modify", "by": "a"})
        self.assertEqual(str(caught.exception), "$: a modify needs 'arguments'")

    def test_an_unrecordable_modify_and_an_unrecordable_reason_deny_fail_closed(self) -> None:
        self.go(lambda request: Modify({"path": float("nan")}, by="a"))
        self.assertIn('the arguments modified by "a" cannot be recorded', self.tool_record()["approval"]["reason"])
        self.go(lambda request: Deny("\ud800", by="a"), name="u.jsonl")
        self.assertIn("the decision cannot be recorded", self.tool_record("u.jsonl")["approval"]["reason"])
        self.go(lambda request: Modify({"path": "x" * 70_000}, by="a"), name="big.jsonl", max_record_bytes=65_536)
        self.assertIn("more than a record holds", self.tool_record("big.jsonl")["approval"]["reason"])
        self.assertEqual(fx.CALLS, [])

    def test_resume_checks_its_arguments(self) -> None:
        self.go(lambda request: None)
        for options, message in (
            (
                {"decisions": {"c1": True}},
                'decisions: must map call ids (str) to Approve, Deny, Modify or Terminate; got bool for "c1"',
            ),
            ({"approver": 3}, "approver: must be None or a callable taking an ApprovalRequest"),
            ({"rerun_unrecorded": 1}, "rerun_unrecorded: must be True or False"),
        ):
            with self.subTest(options=options):
                with self.assertRaises(RunConfigError) as caught:
                    resume(self.path(), fx.delete_model(), fx.tools(), **options)
                self.assertEqual(str(caught.exception), message)
        with self.assertRaises(RunConfigError) as caught:
            resume(self.write_bytes(b"{}\n", "bad.jsonl"), fx.delete_model(), fx.tools())
        self.assertIn("does not verify", str(caught.exception))
        with self.assertRaises(RunConfigError) as caught:  # a decision for an ungated pending call
            model = fx.stateless(
                ModelReply("two", [ToolCall("delete", {"path": "/a"}, "c1"), ToolCall("look", {"path": "/b"}, "c2")])
            )
            self.go(lambda request: None, model=model, name="two.jsonl")
            resume(self.path("two.jsonl"), model, fx.tools(), decisions={"c2": Approve(by="a")})
        self.assertEqual(str(caught.exception), 'decisions: call "c2" is pending but needs no approval')

    def test_a_resumed_run_asks_its_approver_for_calls_without_a_decision(self) -> None:
        self.go(lambda request: None)
        asked: List[str] = []
        result = resume(
            self.path(),
            fx.delete_model(),
            fx.tools(),
            approver=lambda request: asked.append(request.call_id) or Approve(by="b"),
        )
        self.assertEqual((result.stop_reason, asked, len(fx.CALLS)), ("no_tool_calls", ["c1"], 1))

    def test_a_file_with_only_its_task_record_goes_on_and_a_decision_there_is_refused(self) -> None:
        self.go(lambda request: Approve(by="a"), name="whole.jsonl")
        with open(self.path("whole.jsonl"), "rb") as handle:
            first = handle.readline()
        with open(self.path(), "wb") as handle:
            handle.write(first)
        self.assertEqual((read_pending(self.path()).step, read_pending(self.path()).calls), (0, ()))
        with self.assertRaises(RunConfigError) as caught:
            resume(self.path(), fx.delete_model(), fx.tools(), decisions={"c1": Approve(by="a")})
        self.assertIn('call "c1" is not pending: no call waits in', str(caught.exception))
        resume(self.path(), fx.delete_model(), fx.tools(), approver=lambda request: Approve(by="a"))
        self.assertEqual(digest(self.path()), digest(self.path("whole.jsonl")))

    def test_a_max_seconds_run_needs_a_clock_to_resume(self) -> None:
        ticks = iter(range(100))
        self.go(lambda request: None, max_seconds=1000, clock=lambda: next(ticks))
        with self.assertRaises(RunConfigError) as caught:
            resume(self.path(), fx.delete_model(), fx.tools(), decisions={"c1": Approve(by="a")})
        self.assertIn("the run has max_seconds: resume needs clock=", str(caught.exception))
        result = resume(
            self.path(), fx.delete_model(), fx.tools(), decisions={"c1": Approve(by="a")}, clock=lambda: next(ticks)
        )
        self.assertEqual(result.stop_reason, "no_tool_calls")

    def test_the_resumed_clock_goes_on_from_the_last_reading_without_the_pause(self) -> None:
        self.go(lambda request: None, max_seconds=1000, clock=lambda: 500)
        with self.assertRaises(RunConfigError) as caught:
            resume(self.path(), fx.delete_model(), fx.tools(), decisions={"c1": Approve(by="a")}, clock="wall")
        self.assertEqual(str(caught.exception), 'clock: must be a callable or "resumed", got "wall"')
        paused = len(read_records(self.path()))
        result = resume(self.path(), fx.delete_model(), fx.tools(), decisions={"c1": Approve(by="a")}, clock="resumed")
        self.assertEqual(result.stop_reason, "no_tool_calls")
        readings = [r["payload"]["clock"] for r in read_records(self.path()) if "clock" in r["payload"]]
        self.assertEqual(readings[:2], [500, 500])  # recorded before the pause
        self.assertEqual(len(readings), 3)
        self.assertTrue(500 <= readings[2] < 510, readings)  # on from 500, not a new monotonic origin
        self.assertGreater(len(read_records(self.path())), paused)
        self.assertTrue(verify_file(self.path()).ok)

    def test_verify_approvals_on_a_file_that_does_not_verify(self) -> None:
        path = self.write_bytes(b"{}\n", "bad.jsonl")
        self.assertEqual(verify_approvals(path, [])[0][0], -1)

    def test_the_request_as_json(self) -> None:
        seen: List[ApprovalRequest] = []
        self.go(lambda request: seen.append(request) or Approve(by="a"))
        self.assertEqual(
            sorted(seen[0].to_json()),
            ["arguments", "arguments_sha256", "assistant_hash", "call_id", "origin", "step", "tool"],
        )
