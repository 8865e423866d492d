"""One run of a batch as data: :class:`RunSpec`, its JSON form, and the record 0 it implies.

A spec holds every budget and option of :func:`agentloop.run` that is data:
``task``, ``max_steps``, ``max_tokens``, ``stop_sentinel`` as fields, and any
other keyword argument of ``run`` (``max_record_bytes`` and whatever budgets
the loop grows) in ``options``, which ``run`` receives as they are.  The
spec is JSON, so it can cross to any worker and be hashed: the batch's
identity is the SHA-256 of the RFC 8785 bytes of its spec list
(:func:`spec_list_hash`).

The task record (record 0) of a run is a pure function of its spec, the
tools manifest and the model's ``model_info()``; :func:`expected_task_line`
asks :func:`agentloop.run` itself for it, with a stand-in model that stops
the run before its first turn, so the driver knows each run's origin before
any worker starts.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..canonical import MAX_SAFE_INTEGER, canonical_bytes, strict_loads
from ..errors import RunConfigError, UnrecordableError
from ..loop.engine import run
from ..messages import Message, ModelReply, shown
from ..tools.registry import ToolRegistry
from ..transcript.durable import read_small

__all__ = [
    "RunSpec",
    "RESERVED_OPTIONS",
    "run_options",
    "spec_list_hash",
    "read_specs",
    "expected_task_line",
]

#: Keyword arguments of ``run`` a spec cannot hold: where the transcript goes
#: is the batch's business, the four fields have their own place, and
#: objects (a clock, a callback, an approver, a signer) are not data.
RESERVED_OPTIONS = frozenset(
    {"transcript", "overwrite", "checkpoint", "key", "max_steps", "max_tokens", "stop_sentinel",
     "approver", "clock", "on_record", "signer"}
)
#: A run's name is its transcript's file name, ``NAME.jsonl``.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
_FIELDS = ("name", "task", "max_steps", "max_tokens", "stop_sentinel", "options")


def run_options() -> List[str]:
    """The keyword-only arguments of :func:`agentloop.run` a spec's ``options`` may hold, sorted."""
    return sorted(
        name
        for name, parameter in inspect.signature(run).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name not in RESERVED_OPTIONS
    )


def _count(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and 0 <= value <= MAX_SAFE_INTEGER


@dataclass(frozen=True)
class RunSpec:
    """One run: its name (the transcript is ``NAME.jsonl``), task, budgets and options.

    ``options`` maps other keyword arguments of :func:`agentloop.run` to
    JSON values (``{"max_record_bytes": 65536}``); the loop checks their
    values when the batch starts.  Raises
    :class:`~agentloop.errors.RunConfigError` naming the field.
    """

    name: str
    task: str
    max_steps: int
    max_tokens: int
    stop_sentinel: Optional[str] = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = "RunSpec(%s)" % (shown(self.name),)
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise RunConfigError(
                "%s.name" % (where,), "must be 1-128 of A-Z a-z 0-9 . _ - not starting with . _ or - (it names NAME.jsonl)"
            )
        if not isinstance(self.task, str):
            raise RunConfigError(where + ".task", "must be a str, got %s" % (type(self.task).__name__,))
        for name in ("max_steps", "max_tokens"):
            if not _count(getattr(self, name)):
                raise RunConfigError("%s.%s" % (where, name), "must be an int from 0 to 2**53-1, got %s" % (shown(getattr(self, name)),))
        if self.stop_sentinel is not None and not isinstance(self.stop_sentinel, str):
            raise RunConfigError(where + ".stop_sentinel", "must be None or a str, got %s" % (shown(self.stop_sentinel),))
        if not isinstance(self.options, Mapping):
            raise RunConfigError(where + ".options", "must be a dict, got %s" % (type(self.options).__name__,))
        allowed = run_options()
        for key in self.options:
            if key not in allowed:
                raise RunConfigError(
                    "%s.options" % (where,),
                    "%s is not an option of run() a spec can hold (have: %s)" % (shown(key), ", ".join(allowed)),
                )
        try:  # a copy in plain JSON, so the spec cannot change under the batch
            frozen = json.loads(canonical_bytes(dict(self.options), where + ".options"))
        except UnrecordableError as exc:
            raise RunConfigError(exc.path, exc.reason) from None
        object.__setattr__(self, "options", frozen)

    def to_json(self) -> Dict[str, Any]:
        """The spec as a JSON object: ``stop_sentinel`` and ``options`` only when set."""
        out: Dict[str, Any] = {"name": self.name, "task": self.task, "max_steps": self.max_steps, "max_tokens": self.max_tokens}
        if self.stop_sentinel is not None:
            out["stop_sentinel"] = self.stop_sentinel
        if self.options:
            out["options"] = dict(self.options)
        return out

    @classmethod
    def from_json(cls, value: object, where: str = "$") -> "RunSpec":
        """A spec from its JSON object; unknown keys are refused, naming ``where``."""
        if not isinstance(value, dict):
            raise RunConfigError(where, "a spec is a JSON object, got %s" % (type(value).__name__,))
        unknown = sorted(set(value) - set(_FIELDS))
        if unknown:
            raise RunConfigError(where, "unknown key %s (a spec has %s)" % (shown(unknown[0]), ", ".join(_FIELDS)))
        missing = [name for name in _FIELDS[:4] if name not in value]
        if missing:
            raise RunConfigError(where, "missing %s" % (", ".join(missing),))
        try:
            return cls(**value)
        except RunConfigError as exc:
            raise RunConfigError(where, str(exc)) from None

    def run_kwargs(self) -> Dict[str, Any]:
        """The keyword arguments of ``run`` this spec stands for (all but the transcript)."""
        kwargs: Dict[str, Any] = dict(self.options)
        kwargs.update(max_steps=self.max_steps, max_tokens=self.max_tokens, stop_sentinel=self.stop_sentinel)
        return kwargs


def spec_list_hash(specs: Sequence[RunSpec]) -> str:
    """SHA-256 (hex) of the RFC 8785 bytes of ``[spec.to_json(), ...]``: the batch's name."""
    return hashlib.sha256(canonical_bytes([spec.to_json() for spec in specs])).hexdigest()


#: The largest tasks file ``agentloop batch`` reads (64 MiB); a larger one is refused.
MAX_TASKS_FILE_BYTES = 64 << 20


def read_specs(path: str) -> List[RunSpec]:
    """A tasks file: one spec per line (JSON), blank lines ignored; errors name ``FILE:LINE``."""
    specs: List[RunSpec] = []
    try:  # a regular file, read whole but bounded: never a FIFO or a device
        data = read_small(path, MAX_TASKS_FILE_BYTES)
    except OSError as exc:
        raise RunConfigError(path, "cannot be read: %s" % (exc.strerror or exc,)) from None
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        where = "%s:%d" % (path, number)
        try:
            value = strict_loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise RunConfigError(where, "not JSON: %s" % (exc,)) from None
        except RecursionError:
            raise RunConfigError(where, "not JSON this reader takes: nested too deeply") from None
        specs.append(RunSpec.from_json(value, where))
    if not specs:
        raise RunConfigError(path, "holds no spec")
    return specs


class _Stop(BaseException):
    """Raised by :class:`_Probe` to end a run before its first turn (``run`` lets a ``BaseException`` through)."""


class _Probe:
    """A stand-in model: the real model's ``model_info()``, and no turn at all."""

    def __init__(self, info: Optional[Dict[str, Any]]) -> None:
        self.info = info

    def model_info(self) -> Optional[Dict[str, Any]]:
        return self.info

    def __call__(self, messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
        raise _Stop()


def expected_task_line(spec: RunSpec, tools: ToolRegistry, model_info: Optional[Dict[str, Any]], scratch: str) -> bytes:
    """Record 0's line (with its ``\\n``) of ``spec`` run with these tools and this model.

    ``run`` writes it to ``scratch`` (replaced) and is stopped before its
    first model turn; misuse in the spec raises here, as ``run`` would.
    """
    kwargs = spec.run_kwargs()
    kwargs["fsync"] = False  # durability does not change a byte
    try:
        run(spec.task, _Probe(model_info), tools, transcript=scratch, overwrite=True, **kwargs)
    except _Stop:
        pass
    except RunConfigError as exc:
        raise RunConfigError("spec %s: %s" % (spec.name, exc.parameter), exc.reason) from None
    with open(scratch, "rb") as handle:
        line = handle.readline()
    os.unlink(scratch)
    if not line.endswith(b"\n"):
        raise RunConfigError("spec %s" % (spec.name,), "run() wrote no task record")
    return line
