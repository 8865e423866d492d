"""The reserved ``final_result`` tool that ``run(output_schema=...)`` adds.

With ``output_schema``, the model ends the run by calling ``final_result``
with arguments that validate; :attr:`~agentloop.RunResult.output` is then the
validated value (converted, for a type).  Invalid arguments fail as data like
any call's, and the run goes on.

``output_schema`` is either

* a JSON Schema (a dict): an object schema becomes the tool's parameters as
  it is and the output is the arguments object; any other schema is wrapped
  as the one required member ``result`` of an object (the root ``$defs``
  moving up with it) and the output is that member; or
* a type from the table of :mod:`agentloop.tools.typed` (a dataclass, a
  ``TypedDict``, ``List[int]``...): its schema, wrapped in the same way unless
  it is an object, and the output converted (a dataclass instance...).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from ..errors import RunConfigError, ToolDefinitionError
from .plan import TurnPlan
from ..tools.registry import Tool
from ..tools.typed import type_schema

__all__ = ["FINAL_RESULT", "FINAL_DESCRIPTION", "FinalResult", "final_result"]

#: The reserved tool name.
FINAL_RESULT = "final_result"
#: Its description, as the model sees it.
FINAL_DESCRIPTION = "Give the final result of the task. The run ends when the arguments are valid."
_WRAP = "result"


def _identity(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class FinalResult:
    """The ``final_result`` tool of a run and how its arguments become the output."""

    tool: Tool

    def answer(self, plan: TurnPlan) -> Optional[Tuple[int, Any]]:
        """``(position, output)`` of the turn's first ``final_result`` call whose
        arguments validate and convert, or ``None``."""
        for position, call in enumerate(plan.calls):
            if call.name != FINAL_RESULT or call.problem or call.arguments is None:
                continue
            if self.tool.first_error(call.arguments) is not None:
                continue
            try:  # a conversion that raises (a dataclass's __post_init__) fails when the call runs
                return position, self.tool.invoke(copy.deepcopy(call.arguments))
            except Exception:
                continue
        return None


def _wrapped(schema: Dict[str, Any]) -> Dict[str, Any]:
    inner = {key: value for key, value in schema.items() if key != "$defs"}
    wrapper: Dict[str, Any] = {
        "type": "object",
        "properties": {_WRAP: inner},
        "required": [_WRAP],
        "additionalProperties": False,
    }
    if "$defs" in schema:
        wrapper["$defs"] = schema["$defs"]
    return wrapper


def final_result(output_schema: object) -> FinalResult:
    """The ``final_result`` tool for ``output_schema`` (see the module docstring).

    Raises :class:`~agentloop.errors.RunConfigError` (or the
    :class:`~agentloop.errors.SchemaError` of a schema the validator cannot enforce).
    """
    convert: Callable[[Any], Any] = _identity
    if isinstance(output_schema, Mapping):
        schema = copy.deepcopy(dict(output_schema))
    elif output_schema is None or isinstance(output_schema, (bool, str, int, float, list)):
        raise RunConfigError(
            "output_schema", "must be a JSON Schema (a dict) or a type, got %s" % (type(output_schema).__name__,)
        )
    else:
        try:
            schema, convert = type_schema(output_schema)
        except ToolDefinitionError as exc:
            raise RunConfigError("output_schema", exc.reason) from None
    if schema.get("type") == "object":

        def unwrap(**arguments: Any) -> Any:
            return convert(arguments)

        parameters = schema
    else:

        def unwrap(**arguments: Any) -> Any:
            return convert(arguments[_WRAP])

        parameters = _wrapped(schema)
    fn: Callable[..., Any] = unwrap
    return FinalResult(Tool(FINAL_RESULT, FINAL_DESCRIPTION, parameters, fn))
