"""Tools the model may call: :class:`Tool`, :class:`ToolRegistry` and ``@tool``.

Its parts: the tool and registry (``registry``), a call's identity for
effects that happen once (``context``), tools from typed Python
functions (``typed``, with docstrings read by ``docstrings``) and tool
definitions in the OpenAI (Chat Completions, Responses) and Anthropic request shapes (``providers``).
"""

from __future__ import annotations

from .context import CallContext, call_key
from .providers import anthropic_tool, is_openai_strict, openai_strict_problems, openai_tool, responses_tool
from .registry import MANIFEST_STYLES, Tool, ToolRegistry, ToolServer, tool, tool_sources

__all__ = [
    "Tool",
    "ToolRegistry",
    "tool",
    "ToolServer",
    "tool_sources",
    "MANIFEST_STYLES",
    "CallContext",
    "call_key",
    "openai_tool",
    "responses_tool",
    "anthropic_tool",
    "openai_strict_problems",
    "is_openai_strict",
]
