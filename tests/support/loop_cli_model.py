"""A model factory for ``agentloop run --model tests.support.loop_cli_model:make`` in tests/loop/test_loop_output.py.

Its second turn records what the command line had printed by then (the
module-level ``PRINTED``), so a test can see that the first turn's records
were printed live, before the run went on.
"""

from __future__ import annotations

import io
from typing import Any, Dict, List, Optional

from agentloop import ModelReply, ScriptedModel, ToolCall

#: The stream the test gives ``main(..., out=STREAM)``; set by the test.
STREAM: Optional[io.StringIO] = None
#: What had been printed when turn 2 began.
PRINTED: List[str] = []
#: The messages of each turn.
SEEN: List[List[Dict[str, Any]]] = []


def _second(messages: List[Dict[str, Any]], manifest: Any) -> ModelReply:
    PRINTED.append(STREAM.getvalue() if STREAM is not None else "")
    return ModelReply("The sum is 42.")


def _first(messages: List[Dict[str, Any]], manifest: Any) -> ModelReply:
    SEEN.append(list(messages))
    return ModelReply("adding", [ToolCall("add", {"a": 40, "b": 2})])


def make() -> ScriptedModel:
    return ScriptedModel([_first, _second])
