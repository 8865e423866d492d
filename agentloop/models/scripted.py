"""A deterministic model that replays a fixed script, for tests and demos.

Like mini-swe-agent's test models, it lets the real loop run with no network
and no mocks.  Each turn takes the next entry of the script: a
:class:`~agentloop.messages.ModelReply`, or a callable ``(messages, manifest) ->
ModelReply`` for a reply that depends on what the model was shown.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Union

from ..errors import RunConfigError, ScriptExhaustedError, WrongTypeError
from ..messages import Message, ModelReply

__all__ = ["ScriptedModel"]

ScriptEntry = Union[ModelReply, Callable[[List[Message], List[Dict[str, Any]]], ModelReply]]


class ScriptedModel:
    """Return the script's replies in order; raise once it is used up.

    Running out raises :class:`~agentloop.errors.ScriptExhaustedError`, which
    the loop records as a ``model_error`` stop.  It ignores what it is shown
    (a system message, a budget note): only a callable entry reads the messages.

    ``info``, when given, is what :meth:`model_info` says (the task record's
    ``model``, and the name ``prices`` is looked up by): a run with prices
    needs ``ScriptedModel(script, info={"model": "name"})``.  Without it the
    task record has no ``model`` member, as before.
    """

    def __init__(self, script: Iterable[ScriptEntry], *, info: Optional[Dict[str, Any]] = None) -> None:
        if isinstance(script, (str, bytes)) or not isinstance(script, Iterable):
            raise WrongTypeError("script", "an iterable of ModelReply or callables", script)
        self.script: List[ScriptEntry] = list(script)
        for position, entry in enumerate(self.script):
            if not isinstance(entry, ModelReply) and not callable(entry):
                raise WrongTypeError("script[%d]" % (position,), "a ModelReply or a callable", entry)
        self.turns = 0
        if info is not None and not isinstance(info, dict):
            raise RunConfigError("info", "must be a dict or None, got %s" % (type(info).__name__,))
        self.info = None if info is None else dict(info)

    def model_info(self) -> Optional[Dict[str, Any]]:
        """``info`` as given (a copy), or ``None``."""
        return None if self.info is None else dict(self.info)

    def __call__(self, messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
        if self.turns >= len(self.script):
            raise ScriptExhaustedError(self.turns + 1, len(self.script))
        entry = self.script[self.turns]
        self.turns += 1
        if isinstance(entry, ModelReply):
            return entry
        return entry(messages, manifest)
