"""load_tools resolves MODULE:NAME to tools: a registry, one Tool, an iterable of Tools, or a factory of one.

The references point into this module, whose attributes below are each one
kind of thing a --tools reference may name.
"""

from __future__ import annotations

import unittest
from typing import Any, List

from agentloop import tool
from agentloop.errors import RunConfigError
from agentloop.tools.loader import load_tools


@tool
def double(n: int) -> int:
    """Double an integer."""
    return 2 * n


@tool
def halve(n: int) -> int:
    """Halve an integer, rounding down."""
    return n // 2


one_tool = double
tool_list = [double, halve]
not_tools = 42


def tool_factory() -> List[Any]:
    return [halve]


def broken_factory() -> Any:
    raise OSError("the config file is gone")


HERE = __name__


class TestToolReferences(unittest.TestCase):
    def names(self, reference: str) -> List[str]:
        return [entry["name"] for entry in load_tools(HERE + ":" + reference).manifest()]

    def test_a_tool_a_list_or_a_factory_each_become_a_registry(self) -> None:
        self.assertEqual(self.names("one_tool"), ["double"])
        self.assertEqual(self.names("tool_list"), ["double", "halve"])
        self.assertEqual(self.names("tool_factory"), ["halve"])

    def test_a_factory_that_raises_or_a_value_that_is_no_tools_is_refused(self) -> None:
        cases = {
            "broken_factory": "--tools: %s:broken_factory raised OSError" % (HERE,),
            "not_tools": "--tools: %s:not_tools is a int, not a ToolRegistry or Tools" % (HERE,),
        }
        for reference, message in cases.items():
            with self.subTest(reference), self.assertRaises(RunConfigError) as caught:
                load_tools(HERE + ":" + reference)
            self.assertEqual(str(caught.exception), message)


if __name__ == "__main__":
    unittest.main()
