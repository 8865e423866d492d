"""Adapter settings refused at construction, with the exact message, and tool-call arguments read from a provider.

Misuse raises at once (STYLE.md practice 4): each bad setting is a
``ModelConfigError`` naming the parameter, and never shows a key or a header
value.  What a provider sends as a call's arguments becomes data for the
model: ``read_arguments`` returns the object, or the reason it could not.
"""

from __future__ import annotations

import unittest
from typing import Any, Dict

from agentloop.errors import ModelConfigError
from agentloop.models import AnthropicMessages, OpenAIChat
from agentloop.models.base import read_arguments, usage_from

URL = "http://127.0.0.1:9/v1"


class TestRefusedSettings(unittest.TestCase):
    def refused(self, message: str, **settings: Any) -> None:
        for adapter in (OpenAIChat, AnthropicMessages):
            with self.subTest(adapter=adapter.__name__, settings=settings):
                kwargs: Dict[str, Any] = dict({"base_url": URL, "api_key": "k"}, **settings)
                with self.assertRaises(ModelConfigError) as caught:
                    adapter("m", **kwargs)
                self.assertEqual(str(caught.exception), message)

    def test_base_urls(self) -> None:
        self.refused("base_url: must be a str, got int", base_url=8080)
        self.refused("base_url: must not have a #fragment", base_url=URL + "#part")
        self.refused("base_url: has a bad port", base_url="http://127.0.0.1:99999/v1")

    def test_keys_params_headers_transport_and_system(self) -> None:
        self.refused("api_key: must be a str, got bytes", api_key=b"sk-secret")
        self.refused("params: must be a mapping, got list", params=[("temperature", 0)])
        self.refused("headers: must map header names to str values", headers={"X-Count": 3})
        self.refused("headers: a header name is not a valid HTTP token (it is not shown)", headers={"X Bad": "v"})
        self.refused("transport: must be an HttpTransport, got str", transport="urllib")
        self.refused("system: must be a str or None, got list", system=["be", "brief"])


class TestReadArguments(unittest.TestCase):
    def test_what_is_not_a_string_of_json(self) -> None:
        self.assertEqual(read_arguments({"a": 1}), ({"a": 1}, ""))  # the object itself, as some servers send it
        for value, kind in ((None, "null"), (True, "a boolean"), (5, "a number"), (2.5, "a number"), ([1], "an array")):
            with self.subTest(value):
                self.assertEqual(read_arguments(value), ({}, "arguments must be a string of JSON, got %s" % (kind,)))

    def test_json_that_is_not_an_object_or_too_deep(self) -> None:
        self.assertEqual(read_arguments("[1]"), ({}, 'arguments must be a JSON object, got an array: "[1]"'))
        self.assertEqual(read_arguments('"x"'), ({}, 'arguments must be a JSON object, got a string: "\\"x\\""'))
        deep = "[" * 100000 + "]" * 100000
        value, why = read_arguments(deep)
        self.assertEqual(value, {})
        self.assertEqual(why, 'arguments are not valid JSON (nested too deeply): "%s..."' % ("[" * 200,))


class TestUsage(unittest.TestCase):
    def test_a_count_beyond_json_integers_is_no_usage(self) -> None:
        answer = {"usage": {"prompt_tokens": 2**53, "completion_tokens": 1}}
        self.assertIsNone(usage_from(answer, "prompt_tokens", "completion_tokens"))
        self.assertIsNone(usage_from({"usage": "none"}, "prompt_tokens", "completion_tokens"))


if __name__ == "__main__":
    unittest.main()
