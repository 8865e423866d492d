"""tool_sources: the one description of the servers behind a run's tools (agentloop/tools/registry.py),
typed (a ToolServer, found by Tool.server()), never duck-typed; agentloop.mcp.describe is its "mcp" member."""

from __future__ import annotations

import dataclasses
import unittest
from typing import Any, Dict, Iterable, Optional

from agentloop.mcp import describe
from agentloop.tools import Tool, ToolServer, tool_sources


class Server(ToolServer):
    record_member = "elsewhere"

    def __init__(self, name: str) -> None:
        self.name = name

    def describe(self, names: Optional[Iterable[str]] = None) -> Dict[str, Any]:
        return {"name": self.name, "tools": sorted(names or ())}


@dataclasses.dataclass(frozen=True)
class ServedTool(Tool):
    home: Optional[ToolServer] = dataclasses.field(default=None, compare=False)

    def server(self) -> Optional[ToolServer]:
        return self.home


class _Duck:
    record_member = "elsewhere"

    def describe(self, names: Optional[Iterable[str]] = None) -> Dict[str, Any]:
        return {"name": "a duck"}


@dataclasses.dataclass(frozen=True)
class DuckTool(Tool):
    """A tool with the attributes the old duck-typed lookup read (origin.server), and no server()."""

    origin: Any = dataclasses.field(default=None, compare=False)


def _tool(name: str, **extra: Any) -> Tool:
    cls = DuckTool if "origin" in extra else ServedTool if "home" in extra else Tool
    return cls(name, "", {"type": "object"}, lambda: 1, **extra)


class TestToolSources(unittest.TestCase):
    def test_servers_in_the_order_of_their_first_tool_then_the_extra_ones(self) -> None:
        a, b, c = Server("a"), Server("b"), Server("c")
        tools = [_tool("local"), _tool("b1", home=b), _tool("a1", home=a), _tool("b2", home=b)]
        self.assertEqual(
            tool_sources(tools, [c, a]),
            {
                "elsewhere": [
                    {"name": "b", "tools": ["b1", "b2"]},
                    {"name": "a", "tools": ["a1"]},
                    {"name": "c", "tools": []},
                ]
            },
        )
        self.assertEqual(tool_sources([_tool("local")]), {})

    def test_it_is_typed_not_duck_typed(self) -> None:
        class Origin:
            server = _Duck()

        self.assertEqual(tool_sources([_tool("quack", origin=Origin())]), {})
        with self.assertRaises(TypeError):
            ToolServer()  # type: ignore[abstract]

    def test_mcp_describe_is_its_mcp_member(self) -> None:
        self.assertEqual(describe([_tool("local"), _tool("x", home=Server("x"))]), [])
