"""A deterministic model that replays a fixed script, for tests and demos.

Like mini-swe-agent's test models, it lets the real loop run with no network
and no mocks.  Each turn takes the next entry of the script: a
:class:`~agentloop.loop.ModelReply`, or a callable ``(messages, manifest) ->
ModelReply`` for a reply that depends on what the model was shown.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Union

from .errors import ScriptExhaustedError
from .messages import Message, ModelReply

__all__ = ["ScriptedModel"]

ScriptEntry = Union[ModelReply, Callable[[List[Message], List[Dict[str, Any]]], ModelReply]]


class ScriptedModel:
    """Return the script's replies in order; raise once it is used up.

    Running out raises :class:`~agentloop.errors.ScriptExhaustedError`, which
    the loop records as a ``model_error`` stop.
    """

    def __init__(self, script: Iterable[ScriptEntry]) -> None:
        self.script: List[ScriptEntry] = list(script)
        for position, entry in enumerate(self.script):
            if not isinstance(entry, ModelReply) and not callable(entry):
                raise TypeError(
                    "script[%d] is a %s, not a ModelReply or a callable" % (position, type(entry).__name__)
                )
        self.turns = 0

    def __call__(self, messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
        if self.turns >= len(self.script):
            raise ScriptExhaustedError(self.turns + 1, len(self.script))
        entry = self.script[self.turns]
        self.turns += 1
        if isinstance(entry, ModelReply):
            return entry
        return entry(messages, manifest)
