"""Five end-to-end runs of agentloop, each written to a verified transcript.

    python3 demo.py [--out DIR]

writes ``demo-answer.jsonl`` (5 records), ``demo-recover.jsonl`` (11),
``demo-budget.jsonl`` (9), ``demo-parallel.jsonl`` (11: parallel sync and
async tools) and ``demo-approval.jsonl`` (5: a gated call, a pause for a
person, a resume; with its two checkpoints) into DIR (default: the current folder), and next to
each its HTML report (``demo-answer.html``, ...; open one in a browser), prints
each listing and its verification, and exits 0 only if every claim held.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from agentloop import (
    ApprovalRequest,
    Approve,
    ModelReply,
    RunResult,
    ScriptedModel,
    Tool,
    ToolCall,
    ToolRegistry,
    check_consistency,
    prove_consistency,
    read_checkpoint,
    read_pending,
    resume,
    run,
    verify_file,
)
from agentloop.cli.output import format_record, visible
from agentloop.report import default_report_path, write_report

Message = Dict[str, Any]


def _add(a: int, b: int) -> Dict[str, int]:
    return {"sum": a + b}


def _echo(text: str) -> Dict[str, str]:
    return {"text": text}


def _fail() -> None:
    raise RuntimeError("the tool is broken on purpose")


def _greet(name: str) -> Dict[str, str]:
    return {"greeting": "Hello, %s!" % (name,)}


def demo_tools() -> ToolRegistry:
    """The four demo tools: add, echo, fail, greet."""
    return ToolRegistry(
        [
            Tool(
                "add",
                "Add two integers.",
                {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"],
                    "additionalProperties": False,
                },
                _add,
            ),
            Tool(
                "echo",
                "Repeat a text back.",
                {
                    "type": "object",
                    "properties": {"text": {"type": "string", "maxLength": 200}},
                    "required": ["text"],
                    "additionalProperties": False,
                },
                _echo,
            ),
            Tool("fail", "A tool that always raises.", {"type": "object", "additionalProperties": False}, _fail),
            Tool(
                "greet",
                "Greet someone by name.",
                {
                    "type": "object",
                    "properties": {"name": {"type": "string", "minLength": 1}},
                    "required": ["name"],
                    "additionalProperties": False,
                },
                _greet,
            ),
        ]
    )


def _answer_from_last_result(messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
    """A reply that reads the last tool result, as a real model would."""
    result = json.loads(messages[-1]["content"])
    return ModelReply(text="40 + 2 = %d." % (result["sum"],))


def answer_model() -> ScriptedModel:
    return ScriptedModel(
        [
            ModelReply("I will add the numbers.", [ToolCall("add", {"a": 40, "b": 2})]),
            _answer_from_last_result,
        ]
    )


def recover_model() -> ScriptedModel:
    return ScriptedModel(
        [
            ModelReply("Multiplying first.", [ToolCall("multiply", {"a": 6, "b": 7})]),
            ModelReply("Then adding.", [ToolCall("add", {"a": "40", "b": 2})]),
            ModelReply("Trying the other tool.", [ToolCall("fail", {})]),
            ModelReply("Adding with integers.", [ToolCall("add", {"a": 40, "b": 2})]),
            ModelReply("The answer is 42."),
        ]
    )


def budget_model(messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
    """A model that never finishes: every turn asks for one more echo, 11
    estimated tokens a turn, so ``max_tokens=40`` stops it in turn 4."""
    turn = sum(1 for m in messages if m["role"] == "assistant") + 1
    return ModelReply("Still working (turn %d)." % turn, [ToolCall("echo", {"text": "turn %d" % turn})])


Check = Tuple[str, bool]


def _payloads(path: str) -> List[Dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _claims_answer(result: RunResult, records: List[Dict[str, Any]]) -> List[Check]:
    return [
        ("5 records", len(records) == 5),
        ("stops on no_tool_calls after 2 steps", (result.stop_reason, result.steps) == ("no_tool_calls", 2)),
        ("add returned {'sum': 42}", records[2]["payload"].get("value") == {"sum": 42}),
        ("the final text uses the tool's result", records[3]["payload"]["text"] == "40 + 2 = 42."),
    ]


RECOVER_EXPECTED = [
    (2, "multiply", False, "no tool named 'multiply' (have: add, echo, fail, greet)"),
    (4, "add", False, "invalid arguments: $.add.a: expected type integer, got str"),
    (6, "fail", False, "tool 'fail' raised RuntimeError: the tool is broken on purpose"),
    (8, "add", True, {"sum": 42}),
]


def _claims_recover(result: RunResult, records: List[Dict[str, Any]]) -> List[Check]:
    checks: List[Check] = [("11 records", len(records) == 11)]
    for seq, name, ok, outcome in RECOVER_EXPECTED:
        p = records[seq]["payload"] if seq < len(records) else {}
        got = p.get("value") if ok else p.get("error")
        checks.append(
            ("seq=%d %s ok=%s %s" % (seq, name, ok, outcome), (p.get("name"), p.get("ok"), got) == (name, ok, outcome))
        )
    checks.append(("stops on no_tool_calls after 5 steps", (result.stop_reason, result.steps) == ("no_tool_calls", 5)))
    return checks


def _claims_budget(result: RunResult, records: List[Dict[str, Any]]) -> List[Check]:
    assistants = sum(1 for r in records if r["kind"] == "assistant")
    return [
        ("9 records", len(records) == 9),
        ("stops on token_budget (44 > max_tokens 40)", (result.stop_reason, result.tokens) == ("token_budget", 44)),
        ("steps == assistant records == 4", result.steps == 4 == assistants),
        (
            "the over-budget turn is recorded, its echo is not run",
            [r["kind"] for r in records[-2:]] == ["assistant", "stop"],
        ),
    ]


CITIES = {"Paris": 18, "Oslo": 4, "Cairo": 31}


def parallel_tools() -> ToolRegistry:
    """Tools the parallel demo calls three at a time: ``lookup`` (sync) and ``fahrenheit`` (``async def``).

    ``lookup`` waits at a barrier of three (five seconds at most): it answers
    only if its three calls really run at the same time, else it fails.
    """
    barrier = threading.Barrier(len(CITIES), timeout=5)

    def lookup(city: str) -> Dict[str, Any]:
        barrier.wait()
        time.sleep(0.05)  # an I/O-bound call: the three overlap
        return {"city": city, "celsius": CITIES[city]}

    async def fahrenheit(celsius: int) -> Dict[str, Any]:
        await asyncio.sleep(0.01 * (40 - celsius) / 40)  # they finish out of order; the records do not
        return {"fahrenheit": celsius * 9 / 5 + 32}

    city = {
        "type": "object",
        "properties": {"city": {"enum": sorted(CITIES)}},
        "required": ["city"],
        "additionalProperties": False,
    }
    degrees = {
        "type": "object",
        "properties": {"celsius": {"type": "integer"}},
        "required": ["celsius"],
        "additionalProperties": False,
    }
    return ToolRegistry(
        [
            Tool("lookup", "Today's temperature of a city, in Celsius.", city, lookup, parallel=True),
            Tool("fahrenheit", "Celsius to Fahrenheit.", degrees, fahrenheit, parallel=True),
        ]
    )


def _parallel_answer(messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
    degrees = [json.loads(m["content"])["fahrenheit"] for m in messages[-3:]]
    return ModelReply("Paris %g F, Oslo %g F, Cairo %g F." % tuple(degrees))


def _parallel_convert(messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
    found = [json.loads(m["content"]) for m in messages[-3:]]
    return ModelReply("Converting.", [ToolCall("fahrenheit", {"celsius": f["celsius"]}) for f in found])


def parallel_model() -> ScriptedModel:
    lookups = [ToolCall("lookup", {"city": city}) for city in CITIES]
    return ScriptedModel([ModelReply("Looking up three cities at once.", lookups), _parallel_convert, _parallel_answer])


def _claims_parallel(result: RunResult, records: List[Dict[str, Any]]) -> List[Check]:
    tools = [r["payload"] for r in records if r["kind"] == "tool"]
    return [
        ("11 records", len(records) == 11),
        (
            "the three lookups met at the barrier: they ran at once",
            [t.get("value", {}).get("celsius") for t in tools[:3]] == [18, 4, 31],
        ),
        (
            "records in the model's order, not the finishing order",
            [t.get("value") for t in tools[3:]] == [{"fahrenheit": 64.4}, {"fahrenheit": 39.2}, {"fahrenheit": 87.8}],
        ),
        (
            "stops on no_tool_calls after 3 steps with the answer",
            (result.stop_reason, result.steps, result.output)
            == ("no_tool_calls", 3, "Paris 64.4 F, Oslo 39.2 F, Cairo 87.8 F."),
        ),
    ]


Demo = Tuple[str, str, Callable[[], Any], Dict[str, Any], Callable[[RunResult, List[Dict[str, Any]]], List[Check]]]

DEMOS: List[Demo] = [
    (
        "demo-answer.jsonl",
        "What is 40 + 2? Use the add tool.",
        answer_model,
        {"max_steps": 8, "max_tokens": 2000},
        _claims_answer,
    ),
    (
        "demo-recover.jsonl",
        "What is 6 * 7? Recover from tool failures.",
        recover_model,
        {"max_steps": 8, "max_tokens": 2000},
        _claims_recover,
    ),
    (
        "demo-budget.jsonl",
        "Echo forever; the budget must stop you.",
        lambda: budget_model,
        {"max_steps": 8, "max_tokens": 40},
        _claims_budget,
    ),
    (
        "demo-parallel.jsonl",
        "Today's temperatures of Paris, Oslo and Cairo in Fahrenheit.",
        parallel_model,
        {"max_steps": 8, "max_tokens": 2000},
        _claims_parallel,
    ),
]
#: The demos that do not use :func:`demo_tools`.
DEMO_TOOLS: Dict[str, Callable[[], ToolRegistry]] = {"demo-parallel.jsonl": parallel_tools}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Run the five agentloop demos.")
    parser.add_argument("--out", default=".", help="folder for the demo-*.jsonl and demo-*.html files (default: .)")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.out):
        what = "is not a folder" if os.path.exists(args.out) else "does not exist"
        print("demo.py: error: --out %s: %s" % (visible(args.out), what), file=sys.stderr)
        return 2
    try:
        return _run_demos(args.out)
    except OSError as exc:
        where = visible(str(exc.filename or args.out))
        print("demo.py: error: %s: %s" % (where, visible(exc.strerror or str(exc))), file=sys.stderr)
        return 2


#: Each real deletion the approval demo's tool made.
DELETED: List[str] = []


def approval_tools() -> ToolRegistry:
    """``delete_file``, which a person must approve before each call (``requires_approval=True``)."""

    def delete_file(path: str) -> Dict[str, str]:
        """Delete a file (the demo only counts it)."""
        DELETED.append(path)
        return {"deleted": path}

    return ToolRegistry([Tool.from_function(delete_file, requires_approval=True)])


def approval_model(messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
    """Stateless (its reply depends on the turns it is shown), so the resumed run asks what the paused one did."""
    if not any(m["role"] == "assistant" for m in messages):
        return ModelReply("Removing the old log.", [ToolCall("delete_file", {"path": "logs/2023.log"}, "call_rm")])
    return ModelReply("Done: %s." % (messages[-1]["content"],))


def _approval_demo(folder: str) -> int:
    """Pause at the gated call, then resume with a person's Approve: the same bytes as approving inline."""
    path, inline = os.path.join(folder, "demo-approval.jsonl"), os.path.join(folder, "demo-approval-inline.jsonl")
    paused_at, final = path + ".pause.ckpt", path + ".ckpt"
    budgets: Dict[str, Any] = {"max_steps": 4, "max_tokens": 1000, "overwrite": True}
    reviewer = Approve(by="demo-reviewer")
    DELETED.clear()
    run(
        "Remove the 2023 log.",
        approval_model,
        approval_tools(),
        transcript=inline,
        approver=lambda request: reviewer,
        **budgets,
    )
    DELETED.clear()
    asked: List[ApprovalRequest] = []
    paused = run(
        "Remove the 2023 log.",
        approval_model,
        approval_tools(),
        transcript=path,
        checkpoint=paused_at,
        approver=lambda request: asked.append(request),
        **budgets,
    )  # None: defer to a person
    at_pause = (paused.stop_reason, paused.records, list(DELETED), verify_file(path).complete)
    pending = [call.call_id for call in read_pending(path).calls]
    result = resume(
        path,
        approval_model,
        approval_tools(),
        decisions={"call_rm": reviewer},
        anchor=paused_at,
        checkpoint=final,
        overwrite=True,
    )
    with open(path, "rb") as a, open(inline, "rb") as b:
        same = a.read() == b.read()
    os.remove(inline)
    old, new = read_checkpoint(paused_at), read_checkpoint(final)
    try:
        check_consistency(old, new, prove_consistency(path, old.size))
        consistent = True
    except Exception:
        consistent = False
    print("== %s" % (path,))
    records = _payloads(path)
    for record in records:
        print("  " + format_record(record))
    verdict = verify_file(path, expect_count=result.records, expect_head=result.head)
    checks = [
        (
            "paused before the call: awaiting_approval, 2 records, nothing deleted, no stop record",
            at_pause == ("awaiting_approval", 2, [], False),
        ),
        (
            "the pending call read from the file is the one the approver was asked about",
            pending == [r.call_id for r in asked] == ["call_rm"],
        ),
        ("resumed with Approve: the file deleted once, 5 records", (DELETED, len(records)) == (["logs/2023.log"], 5)),
        (
            "the tool record says who approved",
            records[2]["payload"].get("approval") == {"decision": "approve", "by": "demo-reviewer"},
        ),
        ("byte-identical to approving inline", same),
        (
            "the pause checkpoint and the final one are consistent (RFC 9162)",
            consistent and (old.size, new.size) == (2, 5),
        ),
        ("verifies from disk (count and head as the run reported)", verdict.ok and verdict.complete),
    ]
    failed = 0
    for label, held in checks:
        failed += not held
        print("  [%s] %s" % ("ok" if held else "FAILED", label))
    print()
    return failed


def _run_demos(folder: str) -> int:
    failed = 0
    for filename, task, make_model, budgets, claims in DEMOS:
        path = os.path.join(folder, filename)
        result = run(
            task, make_model(), DEMO_TOOLS.get(filename, demo_tools)(), transcript=path, overwrite=True, **budgets
        )
        print("== %s" % (path,))
        records = _payloads(path)
        for record in records:
            print("  " + format_record(record))
        verdict = verify_file(path, expect_count=result.records, expect_head=result.head)
        checks = [("verifies from disk (count and head as the run reported)", verdict.ok)] + claims(result, records)
        page, shown = write_report(path, default_report_path(path))
        with open(page, encoding="utf-8") as handle:
            says_verified = "<strong>\u2713 VERIFIED</strong>" in handle.read()
        checks.append(("report written to %s, and it says verified" % (page,), shown.ok and says_verified))
        for label, held in checks:
            failed += not held
            print("  [%s] %s" % ("ok" if held else "FAILED", label))
        print()
    failed += _approval_demo(folder)
    print("demo: %d claims failed" % failed if failed else "demo: every claim held")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
