"""The child process of tests/transcript/test_kill.py: a long run that reports what is durable.

    python tests/support/kill_child.py run PATH          # agentloop.run with fsync=True
    python tests/support/kill_child.py writer PATH CKPT  # TranscriptWriter, a checkpoint after every record

``run``: the model prints ``len(messages)`` before each turn; with ``fsync``
that many records are already on disk (one record per message).  ``writer``
prints the record count after each checkpoint is written.  Each printed
line is a promise the parent checks after it SIGKILLs this process.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from agentloop import ModelReply, Tool, ToolCall, TranscriptWriter, run  # noqa: E402
from tests.support.runs import Run  # noqa: E402


def blob(n: int) -> Dict[str, Any]:
    return {"text": "x" * n}


def size(step: int) -> int:
    """Record sizes from a few bytes to ~900 kB (under the 1 MiB record limit), so that kills land inside writes too."""
    return (step * 7919) % 900_000 if step % 3 == 0 else step % 97


def model(messages: List[Dict[str, Any]], manifest: List[Dict[str, Any]]) -> ModelReply:
    print(len(messages), flush=True)
    step = (len(messages) + 1) // 2
    return ModelReply("step %d" % step, [ToolCall("blob", {"n": size(step)})])


def main(argv: List[str]) -> int:
    mode, path = argv[0], argv[1]
    if mode == "run":
        tools = [
            Tool(
                "blob",
                "Return n x's.",
                {
                    "type": "object",
                    "properties": {"n": {"type": "integer"}},
                    "required": ["n"],
                    "additionalProperties": False,
                },
                blob,
            )
        ]
        run("a long run, killed", model, tools, transcript=path, max_steps=5000, max_tokens=2**40, fsync=True)
        return 0
    payloads = Run()
    with TranscriptWriter(path, fsync=True) as out:
        out.append("task", payloads.task("checkpoint after every record"))
        out.checkpoint(argv[2])
        print(out.count, flush=True)
        for step in range(1, 5000):
            out.append("assistant", payloads.assistant(text="y" * size(step)))
            out.checkpoint(argv[2])
            print(out.count, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
