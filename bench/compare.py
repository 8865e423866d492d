"""agentloop's loop against smolagents' ToolCallingAgent, step for step, measured in one run.

    python3 -m venv /tmp/smol && /tmp/smol/bin/pip install smolagents
    python3 bench/compare.py --smolagents-python /tmp/smol/bin/python [--steps 200] [--rounds 5]

Both run the same agent: a scripted model that asks for one call of an
``echo`` tool per turn (a fresh reply object each turn, as a real model gives)
for N turns, then stops on its step budget.  agentloop also writes and
hashes its transcript, with ``run``'s defaults: a new file (removed after
the timing), each record handed to the OS, no fsync; smolagents keeps its memory in RAM and logs nothing (``verbosity_level
-1``): its best case.  The two alternate for ``--rounds`` rounds (smolagents
in a subprocess of the given Python, since it is not a dependency) and each
reports its best time; the ratio is the figure.

Target (issue 12): agentloop >= 10x faster per step at 200 steps.
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

steps = int(sys.argv[1])
agent = ToolCallingAgent(tools=[echo], model=Scripted(), max_steps=steps, verbosity_level=-1)
start = time.perf_counter()
agent.run("bench")
print((time.perf_counter() - start) / steps * 1e6)
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


def smolagents_step(python: str, steps: int, folder: str) -> float:
    script = os.path.join(folder, "smolagents_bench.py")  # a file: smolagents' @tool reads the tool's source
    with open(script, "w", encoding="utf-8") as handle:
        handle.write(SMOLAGENTS)
    done = subprocess.run([python, script, str(steps)], capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise SystemExit("smolagents failed:\n" + done.stderr[-2000:])
    return float(done.stdout.strip().splitlines()[-1])


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    ours: List[float] = []
    theirs: List[float] = []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.rounds):
            ours.append(min(agentloop_step(args.steps, folder) for _ in range(3)))
            theirs.append(smolagents_step(args.smolagents_python, args.steps, folder))
    print("%-12s %10s" % ("", "us/step (best of %d rounds, N=%d)" % (args.rounds, args.steps)))
    print("%-12s %10.1f" % ("agentloop", min(ours)))
    print("%-12s %10.1f" % ("smolagents", min(theirs)))
    print("ratio: agentloop is %.1fx faster per step" % (min(theirs) / min(ours)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
