"""One run of a batch as data: :class:`RunSpec`, its JSON form, and the record 0 it implies.

A spec holds every option of :func:`agentloop.run` that is data:
``task``, ``max_steps``, ``max_tokens``, ``stop_sentinel`` as fields, and any
other field of :class:`~agentloop.loop.options.RunOptions`
(``max_record_bytes`` and whatever budgets the loop grows) in ``options``;
:meth:`RunSpec.run_options` makes the ``RunOptions`` value the run gets.  The
spec is JSON, so it can cross to any worker and be hashed: the batch's
identity is the SHA-256 of the RFC 8785 bytes of its spec list
(:func:`spec_list_hash`).

The task record (record 0) of a run is a pure function of its spec, the
tools manifest and the model's ``model_info()``; :func:`expected_task_line`
computes it without running anything
(:func:`agentloop.loop.start.planned_task_line`), so the driver knows each
run's origin before any worker starts.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..canonical import MAX_SAFE_INTEGER, canonical_bytes, strict_loads
from ..errors import RunConfigError, UnrecordableError
from ..loop.options import OPTION_NAMES, RunOptions
from ..loop.start import planned_task_line
from ..messages import shown
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

#: Options of ``run`` a spec cannot hold: where the transcript goes is the
#: batch's business, the four fields have their own place, objects (a clock,
#: a callback, an approver, a signer, an approval signer) are not data, and ``max_seconds``
#: records a clock reading in record 0, which no one can know before the run.
RESERVED_OPTIONS = frozenset(
    {
        "transcript",
        "overwrite",
        "checkpoint",
        "key",
        "max_steps",
        "max_tokens",
        "stop_sentinel",
        "approver",
        "clock",
        "on_record",
        "signer",
        "approval_signer",
        "max_seconds",
    }
)
#: A run's name is its transcript's file name, ``NAME.jsonl``.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
_FIELDS = ("name", "task", "max_steps", "max_tokens", "stop_sentinel", "options")


def run_options() -> List[str]:
    """The options of :func:`agentloop.run` (the fields of :class:`~agentloop.loop.options.RunOptions`)
    a spec's ``options`` may hold, sorted."""
    return sorted(name for name in OPTION_NAMES if name not in RESERVED_OPTIONS)


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
                "%s.name" % (where,),
                "must be 1-128 of A-Z a-z 0-9 . _ - not starting with . _ or - (it names NAME.jsonl)",
            )
        if not isinstance(self.task, str):
            raise RunConfigError(where + ".task", "must be a str, got %s" % (type(self.task).__name__,))
        for name in ("max_steps", "max_tokens"):
            if not _count(getattr(self, name)):
                raise RunConfigError(
                    "%s.%s" % (where, name), "must be an int from 0 to 2**53-1, got %s" % (shown(getattr(self, name)),)
                )
        if self.stop_sentinel is not None and not isinstance(self.stop_sentinel, str):
            raise RunConfigError(
                where + ".stop_sentinel", "must be None or a str, got %s" % (shown(self.stop_sentinel),)
            )
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
        out: Dict[str, Any] = {
            "name": self.name,
            "task": self.task,
            "max_steps": self.max_steps,
            "max_tokens": self.max_tokens,
        }
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

    def run_options(self) -> RunOptions:
        """The options of the run this spec stands for (all but where its transcript goes).

        A bad option value raises :class:`~agentloop.errors.RunConfigError`
        naming the spec and the option.
        """
        try:
            return RunOptions(
                max_steps=self.max_steps, max_tokens=self.max_tokens, stop_sentinel=self.stop_sentinel, **self.options
            )
        except RunConfigError as exc:
            raise RunConfigError("spec %s: %s" % (self.name, exc.parameter), exc.reason) from None


def spec_list_hash(specs: Sequence[RunSpec]) -> str:
    """SHA-256 (hex) of the RFC 8785 bytes of ``[spec.to_json(), ...]``: the batch's name.

    Hashed one spec at a time, never holding the list's JSON: RFC 8785
    section 3.2.2 writes an array as ``[``, its elements' serialisations
    separated by ``,``, and ``]``, each element one level deeper (``$[i]``,
    depth 1), exactly as :func:`~agentloop.canonical.canonical_bytes` of
    the whole list would.
    """
    digest = hashlib.sha256(b"[")
    for index, spec in enumerate(specs):
        if index:
            digest.update(b",")
        digest.update(canonical_bytes(spec.to_json(), "$[%d]" % (index,), 1))
    digest.update(b"]")
    return digest.hexdigest()


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


def expected_task_line(spec: RunSpec, tools: ToolRegistry, model: object) -> bytes:
    """Record 0's line (with its ``\\n``) of ``spec`` run with these tools and this model,
    computed without running anything (``model`` only gives its ``model_info()``).

    Misuse in the spec raises here, as ``run`` would, naming the spec.
    """
    options = spec.run_options()
    try:
        return planned_task_line(spec.task, model, tools, options)
    except RunConfigError as exc:
        raise RunConfigError("spec %s: %s" % (spec.name, exc.parameter), exc.reason) from None
