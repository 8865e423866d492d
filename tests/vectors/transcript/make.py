"""Rebuild the transcript vectors in this folder, byte for byte.

    python3 tests/vectors/transcript/make.py [--out DIR]

Run from the repository's root (or with it on ``PYTHONPATH``).  Every file is
a pure function of this script: the base transcripts come from
``agentloop.run`` with a scripted model (the loop touches no clock and no
random source), and each faulty vector is a base with one documented change,
made here with ``hashlib`` and ``agentloop.canonical_bytes`` only.

The expected verdicts are written by hand below (``faults=[...]``), from the
rules of docs/format.md (the chain, section 6; the payload grammar, section
2), not read back from the verifier: ``ok``, ``records`` and ``head`` follow
from the construction, and
``tests/transcript/test_transcript_vectors.py`` checks that ``agentloop.verify_file`` (or
``agentloop.verify_checkpoint``) agrees with every one of them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))

from agentloop import (  # noqa: E402 -- after the path is set
    STOP_REASONS,
    Approve,
    ModelReply,
    Modify,
    ScriptedModel,
    Tool,
    ToolCall,
    Usage,
    canonical_bytes,
    checkpoint_of,
    run,
)
from agentloop.signing import Ed25519Signer  # noqa: E402
from agentloop.signing.keys import encode_signer_key  # noqa: E402

Record = Dict[str, Any]
#: The key that signs the checkpoint of bad_signature (32 bytes).
SIGNING_KEY = b"agentloop test vector key: sign!"
#: The key bad_signature is verified with (another 32 bytes).
OTHER_KEY = b"agentloop test vector key: other"


def add_tool() -> Tool:
    return Tool(
        "add",
        "Add two integers.",
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
        lambda a, b: {"sum": a + b},
    )


def numbers_tool() -> Tool:
    """A tool whose result exercises RFC 8785: number forms, UTF-16 key order, escapes."""

    def numbers() -> Dict[str, Any]:
        return {
            "big": 1e21,
            "small": 1e-7,
            "tenth": 0.1,
            "negative_zero": -0.0,
            "max_safe": 2**53 - 1,
            "\ue000 private use": 1,
            "\U0001f600 emoji": 2,
            "escapes": "\u0001\b\t\n\f\r\"\\/\u007f\u2028",
            "text": "na\u00efve caf\u00e9",
        }

    return Tool("numbers", "Return awkward numbers.", {"type": "object", "additionalProperties": False}, numbers)


def base_run(path: str) -> None:
    """valid.jsonl: task, assistant (calls add), tool, assistant, stop -- 5 records."""
    model = ScriptedModel([ModelReply("Adding.", [ToolCall("add", {"a": 40, "b": 2})]), ModelReply("40 + 2 = 42.")])
    run("What is 40 + 2?", model, [add_tool()], transcript=path, max_steps=4, max_tokens=1000)


def canonical_run(path: str) -> None:
    """valid_canonical.jsonl: usage, failed calls, unrecordable arguments, a sentinel stop."""
    model = ScriptedModel(
        [
            ModelReply(
                "Calling \u00e9\u00e8 tools \u2192 now.\u0007",
                [
                    ToolCall("numbers", {}, id="n1"),
                    ToolCall("add", {"a": "forty", "b": 2}, id="a1"),
                    ToolCall("missing", {}, id="m1"),
                    ToolCall("add", {"a": float("nan"), "b": 2}, id="a2"),
                    ToolCall("add", {}, id="a3", arguments_error="arguments are not valid JSON: {\"a\":"),
                ],
                usage=Usage(120, 30),
            ),
            ModelReply("All done. DONE"),
        ]
    )
    run("Exercise the canonical form.", model, [add_tool(), numbers_tool()], transcript=path,
        max_steps=4, max_tokens=100000, stop_sentinel="DONE")


#: The task record's ``clock`` and the readings before each turn, in seconds.
MEMBERS_CLOCK = (100, 100.5, 102.25)
#: The price table of members_run, USD per million tokens.
MEMBERS_PRICES = {"m-1": {"input": "3", "output": "15", "cache_read": "0.3", "cache_write": "3.75"}}


def members_run(path: str) -> None:
    """valid_members.jsonl: every optional member a run of this version can write, and a final_result stop.

    Turn 1 costs (1200-1000-100)*3 + 1000*0.3 + 100*3.75 + 40*15 = 1575 micro-USD
    (prices are per million tokens): "0.001575"; turn 2, (1300-1200)*3 + 1200*0.3
    + 20*15 = 960: "0.00096", so total_cost "0.002535".
    """
    readings = iter(MEMBERS_CLOCK)
    model = ScriptedModel(
        [
            ModelReply("Adding.", [ToolCall("add", {"a": 40, "b": 2})],
                       usage=Usage(1200, 40, cache_read_tokens=1000, cache_write_tokens=100), truncated=True),
            ModelReply("Done.", [ToolCall("final_result", {"answer": 42})], usage=Usage(1300, 20, cache_read_tokens=1200)),
        ],
        info={"model": "m-1"},
    )
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"],
              "additionalProperties": False}
    run("What is 40 + 2?", model, [add_tool()], transcript=path, max_steps=4, max_tokens=100000,
        system="Answer with final_result.", output_schema=schema, max_tool_calls=5, max_cost="1",
        prices=MEMBERS_PRICES, max_seconds=60, clock=lambda: next(readings), tool_timeout=30, tell_budgets=True)


#: The provider_data of provider_data_run's first reply: Anthropic extended thinking with a tool call.
PROVIDER_DATA = {"api": "anthropic-messages", "items": [
    {"type": "thinking", "thinking": "Add 40 and 2 with the tool.", "signature": "RXhhbXBsZSBzaWduYXR1cmU="},
    {"type": "redacted_thinking", "data": "RXhhbXBsZSByZWRhY3RlZA=="},
    {"type": "text", "text": "Adding."},
    {"type": "tool_use", "id": "toolu_01", "name": "add", "input": {"a": 40, "b": 2}},
]}


def provider_data_run(path: str) -> None:
    """valid_provider_data.jsonl: an assistant record with provider_data and usage.reasoning_tokens."""
    model = ScriptedModel([
        ModelReply("Adding.", [ToolCall("add", {"a": 40, "b": 2}, id="toolu_01")], usage=Usage(500, 90, reasoning_tokens=60),
                   provider_data=PROVIDER_DATA),
        ModelReply("40 + 2 = 42.", usage=Usage(620, 12)),
    ])
    run("What is 40 + 2?", model, [add_tool()], transcript=path, max_steps=4, max_tokens=10000)


def clock_run(path: str) -> None:
    """valid_time_budget.jsonl: max_seconds of 2; readings 0 (start), 0.5 (turn 1), 2.5 (a time_budget stop)."""
    readings = iter((0, 0.5, 2.5))
    model = ScriptedModel([ModelReply("Adding.", [ToolCall("add", {"a": 40, "b": 2})])])
    run("What is 40 + 2?", model, [add_tool()], transcript=path, max_steps=4, max_tokens=1000,
        max_seconds=2, clock=lambda: next(readings))


#: The seed of the approval signer "alice" of valid_approval.jsonl (32 bytes; Ed25519 signs deterministically).
ALICE_SEED = b"agentloop approval vector seed!!"


def alice() -> Ed25519Signer:
    text = encode_signer_key("alice", ALICE_SEED, allow_slow_unsafe_signer=True)
    return Ed25519Signer.from_key(text, allow_slow_unsafe_signer=True)


def gated_run(path: str) -> None:
    """valid_approval.jsonl: an ungated tool, one gated always and one gated by a predicate, decisions signed.

    Turn 1 calls add (ungated), delete (always gated: approved by alice), pay 5 (the
    predicate, amount > 100, lets it through: "gated": false) and pay 500 (gated:
    modified by alice to 150); alice's key, the run's approval_signer, signs both decisions.
    """
    number = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"],
              "additionalProperties": False}
    text = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": False}
    tools = [add_tool(), Tool("delete", "Delete a file.", text, lambda path: {"deleted": path}, requires_approval=True),
             Tool("pay", "Pay an amount.", number, lambda amount: {"paid": amount},
                  requires_approval=lambda arguments: arguments["amount"] > 100)]
    model = ScriptedModel([
        ModelReply("Working.", [ToolCall("add", {"a": 1, "b": 2}, id="a1"), ToolCall("delete", {"path": "a.log"}, id="d1"),
                                ToolCall("pay", {"amount": 5}, id="p1"), ToolCall("pay", {"amount": 500}, id="p2")]),
        ModelReply("Done."),
    ])

    def approver(request: Any) -> Any:
        return Approve("alice") if request.tool == "delete" else Modify({"amount": 150}, "alice")

    run("Tidy up and pay.", model, tools, transcript=path, max_steps=4, max_tokens=1000, approver=approver,
        approval_signer=alice())


def read(path: str) -> List[bytes]:
    with open(path, "rb") as handle:
        return handle.read().splitlines(keepends=True)


def write(path: str, lines: List[bytes]) -> None:
    with open(path, "wb") as handle:
        handle.write(b"".join(lines))


def parse(line: bytes) -> Record:
    record: Record = json.loads(line)
    return record


def seal(record: Record) -> bytes:
    """The canonical line of ``record`` with its ``hash`` recomputed (docs/format.md, "Hashing")."""
    body = {k: v for k, v in record.items() if k != "hash"}
    digest = hashlib.sha256(canonical_bytes(body)).hexdigest()
    return canonical_bytes(dict(body, hash=digest)) + b"\n"


def unsealed(record: Record) -> bytes:
    """The canonical line of ``record`` as it is, ``hash`` left alone."""
    return canonical_bytes(record) + b"\n"


def rechain(lines: List[bytes], start: int) -> List[bytes]:
    """Recompute ``prev`` and ``hash`` from record ``start`` on: what a forger does."""
    out = list(lines)
    for i in range(start, len(out)):
        record = parse(out[i])
        if i:
            record["prev"] = parse(out[i - 1])["hash"]
        out[i] = seal(record)
    return out


def head_of(lines: List[bytes]) -> Optional[str]:
    """The ``hash`` member of the last line that parses (the verifier's ``head``)."""
    for line in reversed(lines):
        try:
            return str(parse(line)["hash"]) if line.endswith(b"\n") else None
        except ValueError:
            continue
    return None


def fault(kind: str, index: Optional[int], line: Optional[int]) -> Dict[str, Any]:
    return {"kind": kind, "index": index, "line": line}


class Vectors:
    def __init__(self, out: str) -> None:
        self.out = out
        self.names: List[str] = []

    def path(self, name: str) -> str:
        return os.path.join(self.out, name)

    def add(
        self,
        name: str,
        description: str,
        lines: Optional[List[bytes]],
        *,
        records: int,
        complete: bool,
        faults: List[Dict[str, Any]],
        head: Optional[str] = "auto",
        verify: Optional[Dict[str, Any]] = None,
        transcript: Optional[str] = None,
        unexamined: Optional[Dict[str, int]] = None,
    ) -> None:
        """Write ``NAME.jsonl`` (unless ``lines`` is None) and ``NAME.expect.json``.

        ``unexamined`` (``{"lines": N, "bytes": M}``) is what a verification
        stopped by ``too_many_faults`` left unjudged; it is written only then.
        """
        transcript = transcript or name + ".jsonl"
        if lines is not None:
            write(self.path(transcript), lines)
        expect = {
            "description": description,
            "transcript": transcript,
            "verify": verify or {},
            "ok": not faults,
            "records": records,
            "head": head_of(lines or []) if head == "auto" else head,
            "complete": complete,
            "faults": faults,
        }
        if unexamined is not None:
            expect["unexamined_lines"] = unexamined["lines"]
            expect["unexamined_bytes"] = unexamined["bytes"]
        text = json.dumps(expect, indent=2, ensure_ascii=True, sort_keys=False) + "\n"
        with open(self.path(name + ".expect.json"), "w", encoding="ascii", newline="\n") as handle:
            handle.write(text)
        self.names.append(name)

    def checkpoint(self, name: str, lines: List[bytes], key: Optional[bytes] = None) -> str:
        """Write the checkpoint of ``lines`` (a valid transcript) as ``NAME``; return NAME."""
        scratch = tempfile.mkdtemp(prefix="agentloop-vectors-")
        try:
            write(os.path.join(scratch, "t.jsonl"), lines)
            made, verdict = checkpoint_of(os.path.join(scratch, "t.jsonl"), key)
        finally:
            shutil.rmtree(scratch, True)
        assert made is not None and verdict.ok, name
        with open(self.path(name), "wb") as handle:
            handle.write(made.to_bytes())
        return name


def build(out: str) -> List[str]:
    os.makedirs(out, exist_ok=True)
    v = Vectors(out)
    scratch = tempfile.mkdtemp(prefix="agentloop-vectors-")
    try:
        base_run(os.path.join(scratch, "valid.jsonl"))
        canonical_run(os.path.join(scratch, "canonical.jsonl"))
        members_run(os.path.join(scratch, "members.jsonl"))
        clock_run(os.path.join(scratch, "clock.jsonl"))
        gated_run(os.path.join(scratch, "gated.jsonl"))
        gated = read(os.path.join(scratch, "gated.jsonl"))
        provider_data_run(os.path.join(scratch, "provider_data.jsonl"))
        valid = read(os.path.join(scratch, "valid.jsonl"))
        canonical = read(os.path.join(scratch, "canonical.jsonl"))
        members = read(os.path.join(scratch, "members.jsonl"))
        clocked = read(os.path.join(scratch, "clock.jsonl"))
        provided = read(os.path.join(scratch, "provider_data.jsonl"))
    finally:
        shutil.rmtree(scratch, True)
    assert len(valid) == 5 and len(members) == 5 and len(clocked) == 4

    # --- valid transcripts ---------------------------------------------------
    v.add("valid", "A complete run: task, assistant (one add call), tool, assistant, stop (no_tool_calls).",
          valid, records=5, complete=True, faults=[])
    v.add("valid_canonical", "A complete run whose records exercise RFC 8785: floats (1e+21, 1e-7, 0.1, -0 as 0), "
          "2**53-1, keys sorted by UTF-16 code units (U+E000 after U+1F600), escapes, non-ASCII text; reported usage; "
          "failed calls (invalid arguments, unknown tool, unrecordable and unreadable arguments with arguments: null); "
          "a sentinel stop.", canonical, records=len(canonical), complete=True, faults=[])
    v.add("valid_members", "A complete run with every optional member: the task record's system, model, clock and "
          "budgets max_tool_calls, max_cost, prices, max_seconds, tool_timeout, tell_budgets, and the reserved "
          "final_result tool (output_schema); assistant records with usage (cache_read_tokens, cache_write_tokens), "
          "truncated, cost, total_cost and clock; a final_result stop right after the turn that calls it "
          "(that call has no tool record).", members, records=5, complete=True, faults=[])
    v.add("valid_time_budget", "A run with max_seconds 2 whose clock reads 0 at the start, 0.5 before turn 1 and 2.5 "
          "before turn 2: a time_budget stop record carrying the reading (clock 2.5) that stopped it.",
          clocked, records=4, complete=True, faults=[])
    v.add("valid_provider_data", "A complete run whose first assistant record holds provider_data (Anthropic thinking "
          "and redacted_thinking blocks with their signature, then the text and tool_use blocks, as the provider sent them) "
          "and usage with reasoning_tokens; the second has neither.", provided, records=5, complete=True, faults=[])
    v.add("valid_incomplete", "The first 3 records of valid.jsonl: a valid chain with no stop record "
          "(complete is false; a chain cannot show its missing tail).", valid[:3], records=3, complete=False, faults=[])

    # --- one fault kind each, per record ---------------------------------------
    lines = list(valid)
    lines[2] = b"[1,2]\n"
    v.add("not_an_object", "Line 3 (record 2) is the JSON array [1,2]. The record after it is not checked for prev.",
          lines, records=5, complete=True, faults=[fault("not_an_object", 2, 3)])

    record = parse(valid[2])
    del record["prev"]
    lines = list(valid)
    lines[2] = seal(record)
    v.add("missing_fields", "Record 2 has no prev member (its hash recomputed over what is left). "
          "Record 3's prev then no longer names record 2's hash.",
          lines, records=5, complete=True, faults=[fault("missing_fields", 2, 3), fault("prev_mismatch", 3, 4)])

    record = parse(valid[2])
    record["note"] = "not covered by the hash"
    lines = list(valid)
    lines[2] = unsealed(record)
    v.add("unexpected_fields", "Record 2 has a sixth top-level member, note, which the hash would not cover.",
          lines, records=5, complete=True, faults=[fault("unexpected_fields", 2, 3)])

    lines = valid[:2] + valid[3:]
    v.add("seq_gap", "Record 2 (the tool record) is deleted: the record now at index 2 has seq 3, "
          "and its prev names the deleted record. The count resumes from seq 3, so there is one gap.",
          lines, records=4, complete=True, faults=[fault("seq_gap", 2, 3), fault("prev_mismatch", 2, 3)])

    record = parse(valid[2])
    record["payload"]["value"]["sum"] = 43
    lines = list(valid)
    lines[2] = seal(record)
    v.add("prev_mismatch", "Record 2's result rewritten to 43 and its hash recomputed (a forger's first step): "
          "record 2 is self-consistent, record 3's prev names the old hash.",
          lines, records=5, complete=True, faults=[fault("prev_mismatch", 3, 4)])

    lines = list(valid)
    lines[2] = unsealed(record)  # 43, with record 2's original hash
    v.add("hash_mismatch", "Record 2's result rewritten to 43, its hash left as it was.",
          lines, records=5, complete=True, faults=[fault("hash_mismatch", 2, 3)])

    lines = list(valid)
    lines[2] = valid[2].replace(b'"sum":42', b'"sum":1152921504606846976')
    v.add("unserialisable_payload", "Record 2's result is the integer 2**60, outside I-JSON's +/-(2**53-1): "
          "the record has no canonical form, so no hash can be computed for it.",
          lines, records=5, complete=True, faults=[fault("unserialisable_payload", 2, 3)])

    lines = list(valid)
    lines[2] = json.dumps(parse(valid[2]), sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n"
    v.add("not_canonical", "Record 2 written with a space after each ':' and ',' (json.dumps defaults): "
          "the same record, so its hash still matches, but not its one canonical spelling.",
          lines, records=5, complete=True, faults=[fault("not_canonical", 2, 3)])

    record = parse(valid[0])
    record["payload"]["format"] = "agentloop/2"
    v.add("unknown_format", "A single task record whose payload.format is \"agentloop/2\" (hash recomputed).",
          [seal(record)], records=1, complete=False, faults=[fault("unknown_format", 0, 1)])

    extra = {"kind": "assistant", "payload": parse(valid[3])["payload"], "prev": parse(valid[4])["hash"], "seq": 5}
    lines = valid + [seal(extra)]
    v.add("unexpected_kind", "A sixth record, an assistant record correctly chained, after the stop record.",
          lines, records=6, complete=False, faults=[fault("unexpected_kind", 5, 6)])

    lines = list(valid)
    lines[2] = valid[2].replace(b'"sum":42', b'"sum":"\xef\xb7\x90"')
    v.add("unserialisable_payload_noncharacter", "Record 2's result is the string U+FDD0, a Unicode noncharacter "
          "that I-JSON (RFC 7493 section 2.1) forbids, written as itself in UTF-8: the record has no canonical form.",
          lines, records=5, complete=True, faults=[fault("unserialisable_payload", 2, 3)])

    # --- the payload grammar (a chain intact so far) -----------------------------
    record = parse(valid[4])
    record["payload"]["reason"] = "done"
    assert "done" not in STOP_REASONS
    lines = valid[:4] + [seal(record)]
    v.add("bad_payload", "The stop record's reason rewritten to \"done\", not a stop reason, and its hash "
          "recomputed: the chain is intact, the payload breaks the grammar.",
          lines, records=5, complete=True, faults=[fault("bad_payload", 4, 5)])

    record = parse(valid[0])
    record["payload"]["budgets"]["max_steps"] = "4"
    lines = rechain([seal(record)] + valid[1:], 1)
    v.add("bad_payload_task", "The task record's budgets.max_steps rewritten to the string \"4\" and every hash "
          "recomputed: a member of the wrong type (\"4\" is not 4).",
          lines, records=5, complete=True, faults=[fault("bad_payload", 0, 1)])

    record = parse(valid[3])
    record["payload"]["tokens"] = 4
    lines = rechain(valid[:3] + [seal(record), valid[4]], 4)
    v.add("bad_payload_tokens", "Record 3's tokens rewritten from 3 to 4 (its total_tokens left at 9) and every hash "
          "recomputed: 6 + 4 is not 9. The stop record's tokens, 9, still equal the last total_tokens.",
          lines, records=5, complete=True, faults=[fault("bad_payload", 3, 4)])

    record = parse(valid[2])
    record["payload"]["id"] = "call_1_9"
    lines = rechain(valid[:2] + [seal(record)] + valid[3:], 3)
    v.add("bad_payload_answer", "The tool record's id rewritten to call_1_9 and every hash recomputed: it does not "
          "answer the call the assistant record asked for (call_1_0).",
          lines, records=5, complete=True, faults=[fault("bad_payload", 2, 3)])

    renumbered = []
    for position, line in enumerate(valid[:2] + valid[3:]):
        record = parse(line)
        record["seq"] = position
        renumbered.append(unsealed(record))
    lines = rechain(renumbered, 0)
    v.add("bad_payload_unanswered", "The tool record deleted and seq, prev and hash recomputed after it (a forger's "
          "whole work): the chain is intact, but the assistant record of step 2 comes while step 1's call awaits "
          "its tool record.", lines, records=4, complete=True, faults=[fault("bad_payload", 2, 3)])

    record = parse(provided[1])
    record["payload"]["provider_data"]["items"][1] = "redacted"
    lines = rechain(provided[:1] + [seal(record)] + provided[2:], 2)
    v.add("bad_payload_provider_data", "valid_provider_data with the second of its provider_data items rewritten to the "
          "string \"redacted\" and every hash recomputed: the items must be objects.",
          lines, records=5, complete=True, faults=[fault("bad_payload", 1, 2)])

    record = parse(valid[2])
    record["payload"]["value"]["sum"] = 43
    stop = parse(valid[4])
    stop["payload"]["reason"] = "done"
    lines = valid[:2] + [unsealed(record), valid[3], seal(stop)]
    v.add("hash_mismatch_hides_bad_payload", "hash_mismatch.jsonl with its stop reason also rewritten to \"done\" "
          "(that record's hash recomputed): once a record has broken the chain, no later payload is judged, so the "
          "only fault is the hash_mismatch.", lines, records=5, complete=True, faults=[fault("hash_mismatch", 2, 3)])

    spec_vectors(v, valid)
    gate_vectors(v, gated)

    # --- against an expectation held outside the file -------------------------
    v.add("count_mismatch", "valid_incomplete.jsonl's 3 records, checked against an expected count of 5.",
          valid[:3], records=3, complete=False, faults=[fault("count_mismatch", None, None)],
          verify={"expect_count": 5})
    v.add("head_mismatch", "valid.jsonl checked against an expected head that is record 3's hash.",
          valid, records=5, complete=True, faults=[fault("head_mismatch", None, None)],
          verify={"expect_head": parse(valid[3])["hash"]})

    # --- per file ----------------------------------------------------------------
    lines = valid[:4] + [valid[4][:60]]
    v.add("bad_json", "valid.jsonl with its last line torn after 60 bytes (no newline): "
          "a line that is not a record; the 4 records before it verify.",
          lines, records=4, complete=False, faults=[fault("bad_json", None, 5)], head=parse(valid[3])["hash"])
    v.add("unreadable", "A transcript path that does not exist (there is no unreadable.jsonl).",
          None, records=0, complete=False, faults=[fault("unreadable", None, None)], head=None,
          transcript="unreadable.jsonl")
    v.add("no_records", "An empty file: no record, so no run (head null).",
          [], records=0, complete=False, faults=[fault("no_records", None, None)], head=None)
    v.add("no_records_torn", "A file holding only the first 60 bytes of valid.jsonl's first line (a writer that died "
          "during its first write): the torn line, then no record at all.", [valid[0][:60]], records=0,
          complete=False, faults=[fault("bad_json", None, 1), fault("no_records", None, None)], head=None)
    v.add("no_records_require_complete", "no_records.jsonl verified with require_complete: a file with no record is "
          "no_records only (incomplete is not added to it).", None, records=0, complete=False,
          faults=[fault("no_records", None, None)], head=None, verify={"require_complete": True},
          transcript="no_records.jsonl")
    v.add("incomplete", "valid_incomplete.jsonl's 3 records verified with require_complete: a valid chain whose run "
          "has no stop record.", valid[:3], records=3, complete=False, faults=[fault("incomplete", None, None)],
          verify={"require_complete": True})
    rest = valid[1:]
    lines = valid[:1] + [b"x\n"] * 4 + rest
    v.add("too_many_faults", "valid.jsonl with 4 lines 'x' after record 0, verified with max_faults 3: lines 2-4 are "
          "3 bad_json faults, line 5 a fourth, so verification stops there; the 4 lines after it (valid.jsonl's "
          "records 1-4, %d bytes) are counted, not judged. records, head and complete describe lines 1-5 only."
          % (len(b"".join(rest)),), lines, records=1, complete=False,
          faults=[fault("bad_json", None, 2), fault("bad_json", None, 3), fault("bad_json", None, 4),
                  fault("too_many_faults", None, None)],
          head=parse(valid[0])["hash"], verify={"max_faults": 3},
          unexamined={"lines": len(rest), "bytes": len(b"".join(rest))})

    # --- against a checkpoint (agentloop.verify_checkpoint) ----------------------
    full = v.checkpoint("valid.checkpoint", valid)
    v.add("truncated", "The first 3 records of valid.jsonl against valid.checkpoint, which covers 5.",
          valid[:3], records=3, complete=False, faults=[fault("truncated", None, None)], verify={"checkpoint": full})
    lines = list(valid)
    record = parse(valid[2])
    record["payload"]["value"]["sum"] = 43
    lines[2] = seal(record)
    lines = rechain(lines, 3)
    v.add("anchor_mismatch", "Record 2 rewritten to 43 and every later prev and hash recomputed: the chain "
          "verifies alone, but its first 5 records do not give valid.checkpoint's Merkle root.",
          lines, records=5, complete=True, faults=[fault("anchor_mismatch", None, None)], verify={"checkpoint": full})
    first3 = v.checkpoint("first3.checkpoint", valid[:3])
    v.add("unanchored_tail", "valid.jsonl against first3.checkpoint (3 records) with exact: records 3 and 4 "
          "are not covered.", valid, records=5, complete=True, faults=[fault("unanchored_tail", 3, None)],
          verify={"checkpoint": first3, "exact": True})
    signed = v.checkpoint("signed.checkpoint", valid, SIGNING_KEY)
    with open(v.path("bad_signature.key"), "wb") as handle:
        handle.write(OTHER_KEY)
    v.add("bad_signature", "valid.jsonl against signed.checkpoint (signed by another key), verified with the key in "
          "bad_signature.key.", valid, records=5, complete=True, faults=[fault("bad_signature", None, None)],
          verify={"checkpoint": signed, "key_file": "bad_signature.key"})
    with open(v.path("valid.checkpoint"), "rb") as handle:
        note = handle.read().split(b"\n")
    note[1] = b"05"  # a size with a leading zero
    with open(v.path("malformed.checkpoint"), "wb") as handle:
        handle.write(b"\n".join(note))
    v.add("anchor_malformed", "valid.jsonl against malformed.checkpoint, whose size line (line 2) reads 05: "
          "a leading zero. The fault's line is the checkpoint's line.", valid, records=5, complete=True,
          faults=[fault("anchor_malformed", None, 2)], verify={"checkpoint": "malformed.checkpoint"})
    return v.names


#: The optional budget members, each with a value of the wrong type or range (docs/format.md, the payload grammar).
BAD_BUDGETS = (
    ("max_tool_calls", -1, "-1, not an integer >= 0"),
    ("max_cost", 0.5, "the number 0.5, not a decimal string"),
    ("prices", "3", "the string \"3\", not an object"),
    ("prices", {"m-1": {"input": 3, "output": "15"}}, "an entry whose input price is the number 3, not a decimal string"),
    ("max_seconds", 0, "0, not a number > 0"),
    ("tool_timeout", "30", "the string \"30\", not a number > 0"),
    ("tell_budgets", False, "false, not true (the member is absent when not set)"),
)


def spec_vectors(v: Vectors, valid: List[bytes]) -> None:
    """The points where docs/format.md and the verifier once disagreed, one vector each (issue 19)."""
    lines = list(valid)
    lines[2] = valid[2].replace(b'"sum":42', b'"sum":NaN')
    v.add("bad_json_nan", "Record 2's result is the token NaN, which Python's parser reads but JSON has not "
          "(RFC 8259 section 6): line 3 is not a JSON text, so bad_json, no index, not a record. The chain goes on "
          "from record 1: the record on line 4 has seq 3 where 2 is expected, and its prev names the lost record.",
          lines, records=4, complete=True,
          faults=[fault("bad_json", None, 3), fault("seq_gap", 2, 4), fault("prev_mismatch", 2, 4)])

    lines = list(valid)
    lines[2] = valid[2].replace(b'"sum":42', b'"sum":1e400')
    v.add("unserialisable_payload_overflow", "Record 2's result is the JSON number 1e400, beyond the double range: "
          "a JSON text (so a record), but no I-JSON value, so it has no canonical form.",
          lines, records=5, complete=True, faults=[fault("unserialisable_payload", 2, 3)])

    lines = list(valid)
    lines[2] = valid[2].replace(b'"sum":42', b'"sum":100000000000000000')
    v.add("unserialisable_payload_integral_float", "Record 2's result is 100000000000000000, the RFC 8785 form of the "
          "float 1e17: a number token written as an integer is an integer, here one beyond I-JSON's +/-(2**53-1), "
          "so the record has no canonical form (and agentloop's writer refuses the float 1e17).",
          lines, records=5, complete=True, faults=[fault("unserialisable_payload", 2, 3)])

    record = parse(valid[1])
    record["payload"]["truncated"] = False
    lines = rechain(valid[:1] + [seal(record)] + valid[2:], 2)
    v.add("bad_payload_truncated", "Record 1 (an assistant record) with \"truncated\": false and every later hash "
          "recomputed: the member is true when set and absent otherwise.",
          lines, records=5, complete=True, faults=[fault("bad_payload", 1, 2)])

    for name, value, what in BAD_BUDGETS:
        record = parse(valid[0])
        record["payload"]["budgets"][name] = value
        lines = rechain([seal(record)] + valid[1:], 1)
        suffix = "_entry" if name == "prices" and isinstance(value, dict) else ""
        v.add("bad_payload_%s%s" % (name, suffix), "The task record's budgets.%s set to %s, and every hash recomputed."
              % (name, what), lines, records=5, complete=True, faults=[fault("bad_payload", 0, 1)])

    record = parse(valid[0])
    record["payload"]["budgets"]["max_seconds"] = 0
    lines = [seal(record)] + valid[1:]
    v.add("bad_payload_before_prev_mismatch", "The task record's budgets.max_seconds set to 0 and its hash recomputed, "
          "nothing after it: record 0 is judged (the chain is intact up to it) and breaks the payload grammar, then "
          "record 1's prev names the old hash. The first fault is record 0's.",
          lines, records=5, complete=True, faults=[fault("bad_payload", 0, 1), fault("prev_mismatch", 1, 2)])


def gate_vectors(v: Vectors, gated: List[bytes]) -> None:
    """Gated calls have their decisions, and signed runs their notes (docs/format.md, the payload grammar; issue 19)."""
    assert len(gated) == 8 and [parse(line)["kind"] for line in gated].count("tool") == 4
    v.add("valid_approval", "A complete run with approvals: the task record gates delete always and pay by a predicate "
          "(predicate_outcomes true) and names alice's key as approval_signer; record 2 answers add (ungated), record 3 "
          "delete (approved, signed), record 4 pay 5 (\"gated\": false: the predicate let it through), record 5 pay "
          "500 (modified to 150, signed).", gated, records=8, complete=True, faults=[])

    def changed(name: str, index: int, description: str, edit: Any, faults: List[Dict[str, Any]]) -> None:
        record = parse(gated[index])
        edit(record["payload"])
        lines = rechain(gated[:index] + [seal(record)] + gated[index + 1:], index + 1)
        v.add(name, description + " Every later hash recomputed.", lines, records=8, complete=True, faults=faults)

    changed("bad_payload_no_decision", 3, "valid_approval.jsonl with record 3's approval member deleted: a call of a "
            "tool gated always that ran (ok true) with no decision.", lambda p: p.pop("approval"), [fault("bad_payload", 3, 4)])
    changed("bad_payload_no_outcome", 4, "valid_approval.jsonl with record 4's \"gated\": false deleted: a call of a "
            "predicate-gated tool that ran, in a run that records predicate outcomes, with neither a decision nor "
            "the outcome.", lambda p: p.pop("gated"), [fault("bad_payload", 4, 5)])
    changed("bad_payload_no_note", 3, "valid_approval.jsonl with record 3's approval.note deleted, in a run whose task "
            "record names an approval_signer.", lambda p: p["approval"].pop("note"), [fault("bad_payload", 3, 4)])
    changed("bad_payload_no_note_by", 3, "valid_approval.jsonl with record 3's approval.by changed to \"mallory\" and "
            "its note deleted.", lambda p: (p["approval"].pop("note"), p["approval"].update(by="mallory")),
            [fault("bad_payload", 3, 4)])
    changed("bad_payload_gated_always", 3, "valid_approval.jsonl with record 3's approval replaced by \"gated\": false: "
            "a tool gated always has no predicate outcome.", lambda p: (p.pop("approval"), p.update(gated=False)),
            [fault("bad_payload", 3, 4)])
    changed("bad_payload_approval_ungated", 2, "valid_approval.jsonl with an approval member added to record 2, the "
            "call of add, a tool the task record does not gate.",
            lambda p: p.update(approval={"decision": "approve", "by": "alice"}), [fault("bad_payload", 2, 3)])
    changed("bad_payload_approval_signer", 0, "valid_approval.jsonl with the task record's approval_signer.key_id "
            "rewritten to \"alice\" (not 8 hex digits).", lambda p: p["approval_signer"].update(key_id="alice"),
            [fault("bad_payload", 0, 1)])
    changed("bad_payload_gated_true", 4, "valid_approval.jsonl with record 4's \"gated\": false made true: the member "
            "is false when set, absent otherwise.", lambda p: p.update(gated=True), [fault("bad_payload", 4, 5)])
    changed("bad_payload_gated_and_approval", 5, "valid_approval.jsonl with \"gated\": false added beside record 5's "
            "approval: a call the predicate let through was asked about no one.", lambda p: p.update(gated=False),
            [fault("bad_payload", 5, 6)])
    changed("bad_payload_gated_unrecorded", 0, "valid_approval.jsonl with the task record's predicate_outcomes deleted: "
            "record 4's \"gated\": false then stands in a run that records no predicate outcome.",
            lambda p: p.pop("predicate_outcomes"), [fault("bad_payload", 4, 5)])
    changed("bad_payload_predicate_outcomes", 0, "valid_approval.jsonl with the task record's predicate_outcomes made "
            "false: the member is true when set, absent otherwise.", lambda p: p.update(predicate_outcomes=False),
            [fault("bad_payload", 0, 1)])
    changed("bad_payload_signer_ungated", 0, "valid_approval.jsonl with the task record's approval member deleted: "
            "an approval_signer (and predicate_outcomes) stand only in a run with gated tools.",
            lambda p: p.pop("approval"), [fault("bad_payload", 0, 1)])


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=HERE, help="where to write the vectors (default: this folder)")
    args = parser.parse_args(argv)
    names = build(args.out)
    print("wrote %d vectors to %s" % (len(names), args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
