"""agentloop's loop against smolagents' ToolCallingAgent, step for step, measured in one run.

    python3 -m venv /tmp/smol && /tmp/smol/bin/pip install smolagents
    python3 bench/compare.py --smolagents-python /tmp/smol/bin/python [--steps 200] [--rounds 5]

Both run the same agent: a scripted model that asks for one call of an
``echo`` tool per turn (a fresh reply object each turn, as a real model gives)
for N turns, then stops on its step budget.  agentloop also writes and
hashes its transcript, with ``run``'s defaults: a new file (removed after the
timing), each record handed to the OS, no fsync.  smolagents keeps its memory
in RAM and logs nothing (``verbosity_level -1``): its best case.  Each side
runs in a subprocess (smolagents' of the given Python, since it is not a
dependency; agentloop's of this one) and times its own run, its module
imported outside the timing (smolagents' agent object is built outside it
too; agentloop's ``run`` checks its tools and options inside).  Two figures:

* **warm**: one process a side for the whole comparison, after a first run
  that is not counted (a service that runs many agents); each round runs
  each side 3 times, in turn, and keeps its best;
* **cold**: the first run in a fresh process (a script that runs one
  agent), one of each side a round, in turn.

Each reports the best time of each side over ``--rounds`` rounds and their
ratio, with each round's own ratio beside it.

Targets: issue 12, agentloop >= 10x faster per step at 200 steps; issue 25,
>= 30x with a fresh reply a turn.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentloop import ModelReply, Tool, ToolCall, run  # noqa: E402

SMOLAGENTS = r'''
import sys, time
from smolagents import ToolCallingAgent, Model, tool
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole

@tool
def echo(text: str) -> dict:
    """Repeat a text back.

    Args:
        text: the text.
    """
    return {"text": text}

class Scripted(Model):
    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
        call = ChatMessageToolCall(
            id="c", type="function", function=ChatMessageToolCallFunction(name="echo", arguments={"text": "hello"})
        )
        return ChatMessage(role=MessageRole.ASSISTANT, content="Working on it.", tool_calls=[call])

for line in sys.stdin:  # one run per line "STEPS": its us/step, the agent built outside the timing
    steps = int(line)
    agent = ToolCallingAgent(tools=[echo], model=Scripted(), max_steps=steps, verbosity_level=-1)
    start = time.perf_counter()
    agent.run("bench")
    print((time.perf_counter() - start) / steps * 1e6, flush=True)
'''

TOOL = Tool(
    "echo",
    "Repeat a text back.",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": False},
    lambda text: {"text": text},
)


def model(messages: List[Dict[str, Any]], manifest: List[Dict[str, Any]]) -> ModelReply:
    return ModelReply("Working on it.", [ToolCall("echo", {"text": "hello"})])  # fresh each turn


def agentloop_step(steps: int, folder: str) -> float:
    path = os.path.join(folder, "compare.jsonl")  # a new file, as run's defaults ask: removed after the timing
    start = time.perf_counter()
    result = run("bench", model, [TOOL], transcript=path, max_steps=steps, max_tokens=10**12)
    elapsed = time.perf_counter() - start
    os.unlink(path)
    assert result.steps == steps and result.stop_reason == "step_budget", result
    return elapsed / steps * 1e6


def serve() -> None:
    """``--serve``: one agentloop run per line "STEPS" read, its us/step printed (as SMOLAGENTS does)."""
    with tempfile.TemporaryDirectory() as folder:
        for line in sys.stdin:
            print(agentloop_step(int(line), folder), flush=True)


class Side:
    """One side of the comparison: a subprocess that runs an agent for each line "STEPS" it is sent."""

    def __init__(self, command: List[str]) -> None:
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def step(self, steps: int) -> float:
        """One run of ``steps`` steps: its us/step."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("%d\n" % steps)
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit("%s failed:\n%s" % (self.process.args, self.process.communicate(timeout=60)[1][-2000:]))
        return float(line)

    def close(self) -> None:
        self.process.communicate(timeout=60)


def _warm(commands: List[List[str]], steps: int, rounds: int) -> List[List[float]]:
    """Each side's best us/step of each round: one process a side, a first run not counted, 3 runs a round."""
    sides = [Side(command) for command in commands]
    try:
        for side in sides:
            side.step(steps)
        best: List[List[float]] = [[] for _ in sides]
        for _ in range(rounds):
            runs: List[List[float]] = [[] for _ in sides]
            for _ in range(3):
                for number, side in enumerate(sides):
                    runs[number].append(side.step(steps))
            for number, times in enumerate(runs):
                best[number].append(min(times))
        return best
    finally:
        for side in sides:
            side.close()


def _cold(commands: List[List[str]], steps: int, rounds: int) -> List[List[float]]:
    """Each side's us/step of the first run in a fresh process, one of each a round."""
    best: List[List[float]] = [[] for _ in commands]
    for _ in range(rounds):
        for number, command in enumerate(commands):
            side = Side(command)
            try:
                best[number].append(side.step(steps))
            finally:
                side.close()
    return best


def _report(name: str, times: List[List[float]]) -> float:
    ours, theirs = times
    ratios = sorted(b / a for a, b in zip(ours, theirs))
    ratio = min(theirs) / min(ours)
    print("%s: agentloop %.1f, smolagents %.1f us/step: %.1fx" % (name, min(ours), min(theirs), ratio))
    print("  each round's ratio: %s (median %.1fx)" % (" ".join("%.1f" % r for r in ratios), ratios[len(ratios) // 2]))
    return ratio


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    if argv == ["--serve"]:
        serve()
        return 0
    parser.add_argument(
        "--smolagents-python", required=True, metavar="PYTHON", help="a Python with smolagents installed"
    )
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    version = subprocess.run(
        [args.smolagents_python, "-c", "import smolagents; print(smolagents.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(
        "python %s on %s, %d cpus; smolagents %s"
        % (platform.python_version(), platform.machine(), os.cpu_count() or 0, version)
    )
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "smolagents_bench.py")  # a file: smolagents' @tool reads the tool's source
        with open(script, "w", encoding="utf-8") as handle:
            handle.write(SMOLAGENTS)
        commands = [[sys.executable, os.path.abspath(__file__), "--serve"], [args.smolagents_python, script]]
        print("best of %d rounds, N=%d steps" % (args.rounds, args.steps))
        _report("warm", _warm(commands, args.steps, args.rounds))
        _report("cold", _cold(commands, args.steps, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
