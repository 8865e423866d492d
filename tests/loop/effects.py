"""Effects that happen once across SIGKILL and ``resume --rerun-unrecorded``: the tool, the model, the harness.

The tool, ``pay``, is the idempotent pattern of docs/tools.md ("Effects that
happen once"): it writes its payment into a SQLite table whose ``key`` column
is UNIQUE, under the call's :attr:`agentloop.CallContext.key`, then sleeps --
the window in which a crash leaves an effect with no ``tool`` record.  Each
time its body runs it also notes an *attempt* (a table without the
constraint), so the harness can count the re-runs the key absorbed.

:func:`campaign` runs ``agentloop run`` in a child process, SIGKILLs it at a
random moment, and goes on with ``agentloop repair`` (a torn last line) and
``agentloop resume --rerun-unrecorded`` -- killed at random moments too --
until the run has its stop record; then starts another run, until it has
killed the children ``kills`` times.  It checks every finished run:

1. the transcript verifies and is complete;
2. every payment happened exactly once: one row per step (no step paid
   twice under another key: *duplicated*), and a row for every step (none
   *lost*);
3. every ``tool`` record matches its row (the payment's id and amount) and
   the row's key is the documented key of that call.

The tool and the model are read from the environment, so the command line
can load them (``--tools tests.loop.effects:TOOLS --model tests.loop.effects:model``):
``AGENTLOOP_EFFECTS_DB`` (the database), ``AGENTLOOP_EFFECTS_STEPS`` (payments
per run, default 6), ``AGENTLOOP_EFFECTS_SLEEP`` (seconds the tool sleeps
after paying, default 0.05).
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from agentloop import CallContext, ModelReply, ToolCall, ToolRegistry, call_key, tool, verify_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS payments "
    "(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, step INTEGER, amount INTEGER)",
    "CREATE TABLE IF NOT EXISTS attempts (key TEXT NOT NULL, step INTEGER)",
)


def _connect() -> sqlite3.Connection:
    db = sqlite3.connect(os.environ["AGENTLOOP_EFFECTS_DB"], timeout=30)
    for statement in SCHEMA:
        db.execute(statement)
    return db


@tool
def pay(amount: int, ctx: CallContext) -> Dict[str, Any]:
    """Pay an amount, once per call whatever happens.

    Args:
        amount: How much.
    """
    db = _connect()
    try:
        with db:  # noted first, committed on its own: every run of this body is counted
            db.execute("INSERT INTO attempts (key, step) VALUES (?, ?)", (ctx.key, ctx.step))
        try:
            with db:  # the effect, under the call's key: a second run of the same call finds it done
                db.execute("INSERT INTO payments (key, step, amount) VALUES (?, ?, ?)", (ctx.key, ctx.step, amount))
        except sqlite3.IntegrityError:
            pass  # this call paid before the process died: the same payment, not a second one
        row = db.execute("SELECT id, amount FROM payments WHERE key = ?", (ctx.key,)).fetchone()
    finally:
        db.close()
    time.sleep(float(os.environ.get("AGENTLOOP_EFFECTS_SLEEP", "0.05")))  # paid, not yet recorded: where a crash hurts
    return {"payment": row[0], "amount": row[1]}


#: For ``--tools tests.loop.effects:TOOLS``.
TOOLS = ToolRegistry([pay])


def model() -> Any:
    """For ``--model tests.loop.effects:model``: step n pays n, until ``AGENTLOOP_EFFECTS_STEPS``; stateless."""
    steps = int(os.environ.get("AGENTLOOP_EFFECTS_STEPS", "6"))

    def reply(messages: List[Dict[str, Any]], manifest: Any) -> ModelReply:
        step = 1 + sum(1 for m in messages if m.get("role") == "assistant")
        if step > steps:
            return ModelReply("paid %d times" % (steps,))
        return ModelReply("paying %d" % (step,), [ToolCall("pay", {"amount": step}, "pay-%d" % (step,))])

    return reply


@dataclass
class Figures:
    """What a campaign did and found."""

    kills: int = 0
    runs: int = 0
    children: int = 0
    repairs: int = 0
    killed_before_first_record: int = 0
    payments: int = 0
    attempts: int = 0
    duplicated: int = 0
    lost: int = 0
    mismatched: int = 0
    unverified: int = 0
    problems: List[str] = field(default_factory=list)

    @property
    def reruns_absorbed(self) -> int:
        """How many times a call's body ran again after a crash and found its payment made."""
        return self.attempts - self.payments

    def line(self) -> str:
        return (
            "kills %d, runs %d, child processes %d, repairs %d, killed before a first record %d; payments %d, "
            "attempts %d (re-runs absorbed by the key: %d); duplicated %d, lost %d, records not matching %d, "
            "transcripts not verifying %d"
            % (
                self.kills,
                self.runs,
                self.children,
                self.repairs,
                self.killed_before_first_record,
                self.payments,
                self.attempts,
                self.reruns_absorbed,
                self.duplicated,
                self.lost,
                self.mismatched,
                self.unverified,
            )
        )


def _cli(*argv: str) -> List[str]:
    return [sys.executable, "-m", "agentloop"] + list(argv)


def _next_command(path: str, figures: Figures) -> Optional[List[str]]:
    """The command that goes on with the run at ``path``: run, repair then resume, or ``None`` when it is finished."""
    spec = ["--model", "tests.loop.effects:model", "--tools", "tests.loop.effects:TOOLS"]
    if not os.path.exists(path):
        return _cli("run", "--task", "pay", "--max-steps", "100", "--max-tokens", "1000000", "-o", path, *spec)
    verdict = verify_file(path)
    if (
        not verdict.ok
        and [f.kind for f in verdict.faults] == ["bad_json"]
        and verdict.faults[0].line == verdict.count + 1
    ):
        subprocess.run(
            _cli("repair", path), cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, check=True
        )
        figures.repairs += 1
        verdict = verify_file(path)
    if not verdict.ok:
        figures.problems.append("%s does not verify: %s" % (path, verdict.faults[0]))
        return None
    if verdict.complete:
        return None
    return _cli("resume", path, "--rerun-unrecorded", *spec)


def _check(path: str, db_path: str, steps: int, figures: Figures) -> None:
    """The three checks of the module docstring, on one finished run."""
    verdict = verify_file(path, require_complete=True)
    if not verdict.ok:
        figures.unverified += 1
        figures.problems.append("%s: %s" % (path, verdict.faults[0]))
        return
    with open(path, "rb") as handle:
        records = [json.loads(line) for line in handle]
    origin = "agentloop/1/" + records[0]["hash"]
    db = sqlite3.connect(db_path)
    try:
        rows = db.execute("SELECT id, key, step, amount FROM payments").fetchall()
        figures.attempts += db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    finally:
        db.close()
    figures.payments += len(rows)
    per_step: Dict[int, List[Any]] = {}
    for row in rows:
        per_step.setdefault(row[2], []).append(row)
    figures.duplicated += sum(len(found) - 1 for found in per_step.values())
    figures.lost += sum(1 for step in range(1, steps + 1) if step not in per_step)
    for record in records:
        payload = record["payload"]
        if record["kind"] != "tool":
            continue
        found = per_step.get(payload["step"], [])
        expected_key = call_key(origin, payload["step"], payload["id"])
        if not (
            payload["ok"]
            and len(found) == 1
            and found[0][1] == expected_key
            and payload["value"] == {"payment": found[0][0], "amount": found[0][3]}
        ):
            figures.mismatched += 1
            figures.problems.append("%s: record %d does not match its payment %r" % (path, record["seq"], found))


def _startup(env: Dict[str, str]) -> float:
    """Seconds this machine takes to start the command line (the window of a kill before anything is written)."""
    began = time.monotonic()
    subprocess.run(_cli("--version"), cwd=ROOT, env=env, capture_output=True, check=True)
    return time.monotonic() - began


def _kill_at_random(
    child: "subprocess.Popen[bytes]", rng: random.Random, startup: float, steps: int, sleep: float
) -> bool:
    """SIGKILL ``child`` at a random moment; ``True`` if it was killed (``False``: it ended first).

    One time in five the moment falls while it starts (importing, before any record of its own); otherwise after
    a random number of the records it writes (it prints each as written), at a random point of the next
    ``1.5 * sleep`` seconds: inside a tool call (paid, not recorded), between records, or while it ends.
    """
    assert child.stdout is not None
    if rng.random() < 0.2:
        deadline = time.monotonic() + rng.uniform(0.0, startup)
    else:
        for _ in range(rng.randint(1, 2 * steps + 1)):
            ready, _, _ = select.select([child.stdout], [], [], 120)
            if not ready or not child.stdout.readline():
                return False  # it ended (or stopped printing) first
        deadline = time.monotonic() + rng.uniform(0.0, 1.5 * sleep)
    while time.monotonic() < deadline:
        if child.poll() is not None:
            return False
        time.sleep(0.002)
    if child.poll() is not None:
        return False
    child.send_signal(signal.SIGKILL)
    return True


def campaign(folder: str, kills: int, seed: int = 19, steps: int = 6, sleep: float = 0.05) -> Figures:
    """SIGKILL ``agentloop run``/``resume`` children ``kills`` times at random moments (``random.Random(seed)``);
    each run goes on until it is finished, and is checked; return the figures."""
    rng = random.Random(seed)
    figures = Figures()
    base = dict(os.environ, PYTHONPATH=ROOT)
    startup = _startup(base)
    while figures.kills < kills:
        figures.runs += 1
        path = os.path.join(folder, "run-%d.jsonl" % (figures.runs,))
        db_path = os.path.join(folder, "run-%d.sqlite" % (figures.runs,))
        env = dict(
            base, AGENTLOOP_EFFECTS_DB=db_path, AGENTLOOP_EFFECTS_STEPS=str(steps), AGENTLOOP_EFFECTS_SLEEP=str(sleep)
        )
        while True:
            command = _next_command(path, figures)
            if command is None:
                break
            figures.children += 1
            child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            killed = figures.kills < kills and _kill_at_random(child, rng, startup, steps, sleep)
            _, err = child.communicate(timeout=300)
            if killed:
                figures.kills += 1
                figures.killed_before_first_record += not os.path.exists(path)
                continue
            if child.returncode != 0:
                figures.problems.append(
                    "%s exited %d: %s"
                    % (" ".join(command[3:5]), child.returncode, err.decode("utf-8", "replace")[-300:])
                )
                break
        _check(path, db_path, steps, figures)
    return figures
