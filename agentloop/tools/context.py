"""A call's identity, for tools whose side effect must happen once: :class:`CallContext` and :func:`call_key`.

A tool that pays, mails or writes to a database can run, and the process
die before its ``tool`` record is written; ``resume --rerun-unrecorded``
then runs the same call again.  A tool that declares a parameter of type
:class:`CallContext` (it is not part of the tool's JSON Schema and never
shown to the model) receives the call's identity, and can make its effect
idempotent: record the effect under :attr:`CallContext.key`, a key that is
the same every time this call runs -- again after a crash, on resume, in a
replay -- and different for every other call of every run with another
task record (``docs/tools.md``, "Effects that happen once": two runs with
the same inputs have the same origin, so calls of theirs with the same step
and id share a key).

The key, :func:`call_key`, is the lowercase hex SHA-256 of the RFC 8785
bytes of the JSON array ``["agentloop-call-key/1", origin, step, call_id]``:
a domain-separation tag naming this derivation and its version, the run's
origin (``agentloop/1/<hash of record 0>``, which names the run), the step
(from 1) and the call's id (unique within its step).
"""

from __future__ import annotations

import hashlib
import inspect
import sys
import typing
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..canonical import canonical_bytes
from ..errors import ToolDefinitionError

__all__ = ["CallContext", "call_key", "context_parameter", "CALL_KEY_DOMAIN"]

#: The first member of the array :func:`call_key` hashes: which derivation, which version.
CALL_KEY_DOMAIN = "agentloop-call-key/1"


def call_key(origin: str, step: int, call_id: str) -> str:
    """``sha256(RFC 8785 of ["agentloop-call-key/1", origin, step, call_id])``, lowercase hex."""
    return hashlib.sha256(canonical_bytes([CALL_KEY_DOMAIN, origin, step, call_id])).hexdigest()


@dataclass(frozen=True)
class CallContext:
    """The identity of one tool call, given to a tool that declares a parameter of this type.

    ``key`` is :func:`call_key` of (``origin``, ``step``, ``call_id``): the
    same whenever this call runs (after a crash, on resume, in a replay),
    another for every other call.  ``tool`` is the tool's name.
    """

    key: str
    step: int
    call_id: str
    tool: str
    origin: str

    @classmethod
    def of(cls, origin: str, step: int, call_id: str, tool: str) -> "CallContext":
        """The context of call ``call_id`` of step ``step`` in the run named ``origin``."""
        return cls(call_key(origin, step, call_id), step, call_id, tool, origin)


def _is_context(fn: Callable[..., Any], annotation: Any) -> bool:
    if annotation is CallContext:
        return True
    if not isinstance(annotation, str) or "CallContext" not in annotation:
        return False  # only a string that may name it is evaluated
    namespace = getattr(inspect.unwrap(fn), "__globals__", None)
    if namespace is None:
        namespace = vars(sys.modules.get(getattr(fn, "__module__", "") or "", typing))
    holder = type("_Holder", (), {"__annotations__": {"p": annotation}})
    try:
        return typing.get_type_hints(holder, globalns=dict(namespace)).get("p") is CallContext
    except Exception:  # an annotation that does not resolve is not this one
        return False


def context_parameter(fn: Callable[..., Any], tool: str = "") -> Optional[str]:
    """The name of ``fn``'s parameter annotated :class:`CallContext`, or ``None``.

    Raises :class:`~agentloop.errors.ToolDefinitionError` (naming ``tool``) for two
    of them, or for one that cannot be passed by name.
    """
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    found = [name for name, p in parameters.items() if _is_context(fn, p.annotation)]
    if len(found) > 1:
        raise ToolDefinitionError(
            tool, "parameters %s are both CallContext: a call has one" % (" and ".join(repr(f) for f in found),)
        )
    by_name = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    if found and parameters[found[0]].kind not in by_name:
        raise ToolDefinitionError(tool, "the CallContext parameter %r must be passable by name" % (found[0],))
    return found[0] if found else None
