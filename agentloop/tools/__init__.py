"""Tools the model may call: :class:`Tool`, :class:`ToolRegistry` and ``@tool``.

Its parts: the tool and registry (``registry``), tools from typed Python
functions (``typed``, with docstrings read by ``docstrings``) and tool
definitions in the OpenAI (Chat Completions, Responses) and Anthropic request shapes (``providers``).
"""

from __future__ import annotations

from .providers import anthropic_tool, is_openai_strict, openai_strict_problems, openai_tool, responses_tool
from .registry import MANIFEST_STYLES, Tool, ToolRegistry, tool

__all__ = [
    "Tool",
    "ToolRegistry",
    "tool",
    "MANIFEST_STYLES",
    "openai_tool",
    "responses_tool",
    "anthropic_tool",
    "openai_strict_problems",
    "is_openai_strict",
]
