"""References to Python objects, ``MODULE:NAME``, and the tools they name.

The command line and :func:`agentloop.batch.run_many` name tools (and
models) by reference rather than by object, so a worker on another process
or machine can resolve them itself: only strings cross the boundary.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

from ..errors import RunConfigError
from .registry import Tool, ToolRegistry

__all__ = ["import_reference", "load_tools"]


def import_reference(spec: str, parameter: str, example: str) -> Any:
    """``MODULE:NAME`` (``NAME`` may be dotted) -> the object it names.

    The current folder is importable, as with ``python -m``.  Failures
    raise :class:`~agentloop.errors.RunConfigError` naming ``parameter``.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise RunConfigError(parameter, "must be MODULE:NAME (e.g. %s), got %s" % (example, json.dumps(spec)))
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise RunConfigError(parameter, "cannot import %s: %s: %s" % (module_name, type(exc).__name__, exc)) from None
    value: Any = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise RunConfigError(parameter, "%s has no attribute %s" % (module_name, json.dumps(attribute))) from None
        except Exception as exc:  # a module __getattr__ or a property of the user's: their code, said as theirs
            raise RunConfigError(
                parameter, "%s raised %s as %s was looked up" % (spec, type(exc).__name__, json.dumps(part))
            ) from None
    return value


def load_tools(spec: str, parameter: str = "--tools") -> ToolRegistry:
    """``MODULE:NAME`` -> the tools it names: a ``ToolRegistry``, an iterable of ``Tool``, or a callable returning one.

    The current folder is importable, as with ``python -m``.
    """
    value = import_reference(spec, parameter, "demo:demo_tools")
    if callable(value) and not isinstance(value, (ToolRegistry, Tool)):
        try:
            value = value()
        except Exception as exc:
            raise RunConfigError(parameter, "%s raised %s" % (spec, type(exc).__name__)) from None
    if isinstance(value, ToolRegistry):
        return value
    if isinstance(value, Tool):
        return ToolRegistry([value])
    if not (hasattr(type(value), "__iter__") or hasattr(type(value), "__getitem__")):
        raise RunConfigError(parameter, "%s is a %s, not a ToolRegistry or Tools" % (spec, type(value).__name__))
    try:
        tools = list(value)
    except Exception as exc:  # the user's iterable failed: their code, said as theirs (not an internal error)
        raise RunConfigError(parameter, "%s raised %s as its tools were listed" % (spec, type(exc).__name__)) from None
    for i, item in enumerate(tools):
        if not isinstance(item, Tool):
            raise RunConfigError(parameter, "%s: item %d is not a Tool but %s" % (spec, i, type(item).__name__))
    return ToolRegistry(tools)
