"""agentloop's three adapters and the suite's stand-in servers, judged by the official ``openai`` and
``anthropic`` SDKs.

Skipped unless ``AGENTLOOP_PROVIDERS_SDK=1`` (``.ci/interop-providers`` sets it inside a throwaway
venv holding both SDKs).  The SDK code lives in ``AGENTLOOP_PROVIDERS_CHECK``, a module that script
writes into the venv (the tree imports only the standard library).  For plain, tool, reasoning,
thinking, cached and streamed turns of each API:

1. every request body agentloop sent validates against the SDK's own create-params type, every
   member declared, at every depth, in pydantic's strict mode (a ``"false"`` string is no boolean);
2. every answer the stand-in sent parses with the SDK's response model, and every stream event
   with its stream-event type, every member declared, strictly typed;
3. each request agentloop sent, sent again through the SDK's own client to the stand-in, goes out
   as the same JSON and comes back parsed;
4. each stream, read by the SDK's own stream helper, accumulates to the answer agentloop rebuilt
   from the same events (the unstreamed body).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import unittest
from typing import Any, Callable, Dict, List, Tuple

ENABLED = os.environ.get("AGENTLOOP_PROVIDERS_SDK") == "1" and bool(os.environ.get("AGENTLOOP_PROVIDERS_CHECK"))


def _checker() -> Any:
    spec = importlib.util.spec_from_file_location("sdk_check", os.environ["AGENTLOOP_PROVIDERS_CHECK"])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _api(path: str) -> str:
    return "chat" if path.endswith("/chat/completions") else "responses" if path.endswith("/responses") else "anthropic"


@unittest.skipUnless(
    ENABLED, "the provider SDK interop leg runs from .ci/interop-providers (AGENTLOOP_PROVIDERS_SDK=1)"
)
class TestProviderSdks(unittest.TestCase):
    check: Any = None

    @classmethod
    def setUpClass(cls) -> None:
        cls.check = _checker()
        print("\n== SDKs: %s; %d TypedDicts made to refuse undeclared members" % (cls.check.VERSIONS, cls.check.TYPED))

    def setUp(self) -> None:
        from tests.support.loopback import LoopbackServer

        self.dir = tempfile.mkdtemp(prefix="agentloop-interop-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.server = LoopbackServer().start()
        self.addCleanup(self.server.stop)
        self.checked: Dict[str, int] = {"requests": 0, "answers": 0, "events": 0}

    def scenarios(self) -> List[Tuple[str, Callable[[], Any], Any]]:
        """(name, adapter factory, tools) for every kind of turn of every API."""
        from agentloop.models import AnthropicMessages, OpenAIChat, OpenAIResponses
        from tests.support.modelcase import some_tools

        openai_url, anthropic_url = self.server.openai_url, self.server.url
        thinking = {"type": "enabled", "budget_tokens": 2048}
        chat = lambda **o: OpenAIChat("gpt-test", base_url=openai_url, api_key="sk-interop-0123", **o)  # noqa: E731
        responses = lambda **o: OpenAIResponses("gpt-test", base_url=openai_url, api_key="sk-interop-0123", **o)  # noqa: E731
        claude = lambda **o: AnthropicMessages("claude-test", base_url=anthropic_url, api_key="sk-ant-0123", **o)  # noqa: E731
        tools, none = some_tools("add", "fail"), []
        return [
            ("chat plain", lambda: chat(system="Be brief."), none),
            ("chat tool", lambda: chat(params={"temperature": 0.2}), tools),
            ("chat cached", lambda: chat(prompt_cache_key="run-1"), tools),
            ("chat streamed", lambda: chat(stream=True), tools),
            ("responses plain", lambda: responses(system="Be brief."), none),
            ("responses reasoning", lambda: responses(params={"reasoning": {"effort": "low"}}), tools),
            ("responses cached", lambda: responses(prompt_cache_key="run-1", store=True), tools),
            ("responses streamed", lambda: responses(stream=True), tools),
            ("anthropic plain", lambda: claude(system="Be brief."), none),
            ("anthropic tool", lambda: claude(), tools),
            ("anthropic thinking", lambda: claude(thinking=thinking), tools),
            ("anthropic cached", lambda: claude(cache=True, system="Be brief."), tools),
            ("anthropic streamed thinking", lambda: claude(thinking=thinking, stream=True, cache=True), tools),
        ]

    def test_requests_answers_and_events_are_the_sdks_own(self) -> None:
        from agentloop import run

        for name, make, tools in self.scenarios():
            with self.subTest(name):
                self.server.requests.clear()
                self.server.answers.clear()
                result = run(
                    "What is 40 + 2?",
                    make(),
                    tools,
                    transcript=os.path.join(self.dir, name.replace(" ", "-") + ".jsonl"),
                    max_steps=4,
                    max_tokens=100_000,
                )
                self.assertEqual(result.stop_reason, "no_tool_calls", result.detail)
                self.assertEqual(len(self.server.requests), 2 if tools else 1)
                for seen in self.server.requests:  # 1.
                    self.check.request(_api(seen.path), seen.body)
                    self.checked["requests"] += 1
                for path, kind, sent in self.server.answers:  # 2.
                    if kind == "json":
                        self.check.response(_api(path), sent)
                        self.checked["answers"] += 1
                    for event_name, data in sent if kind == "events" else []:
                        self.check.event(_api(path), event_name, data)
                        self.checked["events"] += 1
        print("\n== checked %(requests)d request bodies, %(answers)d answers, %(events)d stream events" % self.checked)
        self.assertGreater(self.checked["events"], 100)

    def test_the_sdks_own_clients_send_agentloops_requests_unchanged_and_read_the_stand_in(self) -> None:
        from agentloop import run

        for name, make, tools in self.scenarios():
            if "streamed" in name:
                continue
            with self.subTest(name):
                self.server.requests.clear()
                run(
                    "What is 40 + 2?",
                    make(),
                    tools,
                    transcript=os.path.join(self.dir, "c-" + name.replace(" ", "-") + ".jsonl"),
                    max_steps=4,
                    max_tokens=100_000,
                )
                ours = [seen for seen in self.server.requests]
                for seen in ours:  # 3.
                    self.server.requests.clear()
                    parsed = self.check.through_sdk(_api(seen.path), self.server.openai_url, self.server.url, seen.body)
                    self.assertEqual(self.server.requests[0].body, seen.body)  # the SDK sent agentloop's JSON as it was
                    self.assertTrue(parsed)

    def test_the_sdks_stream_helpers_accumulate_what_agentloop_rebuilt(self) -> None:
        from agentloop.models.anthropic import messages_api_reply
        from agentloop.models.openai import chat_reply
        from agentloop.models.responses import responses_reply
        from tests.support.loopback import anthropic_reply, openai_reply, responses_reply as responses_body

        readers = {"chat": chat_reply, "responses": responses_reply, "anthropic": messages_api_reply}
        cases = [
            ("chat", openai_reply("Two calls coming.", [("c1", "add", '{"a": 40, "b": 2}'), ("c2", "fail", "{}")])),
            (
                "responses",
                responses_body(
                    "Here it is.", [("c1", "add", '{"a": 40, "b": 2}')], reasoning="Add them.", reasoning_tokens=5
                ),
            ),
            (
                "anthropic",
                anthropic_reply(
                    "Adding.", [("t1", "add", {"a": 40, "b": 2})], thinking="40 plus 2.", redacted="b3BhcXVl"
                ),
            ),
        ]
        bodies = {
            "chat": {"model": "m", "messages": [{"role": "user", "content": "t"}]},
            "responses": {"model": "m", "input": [{"role": "user", "content": "t"}]},
            "anthropic": {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "t"}]},
        }
        from tests.support.loopback import Canned

        for api, answer in cases:
            with self.subTest(api):
                self.server.script.append(Canned(answer))
                final = self.check.final_of_stream(api, self.server.openai_url, self.server.url, bodies[api])  # 4.
                self.assertTrue(self.server.requests[-1].body.get("stream"))
                sdk = readers[api](final)  # the SDK's accumulation, read by agentloop
                ours = readers[api](answer)  # the unstreamed body, which agentloop's collectors rebuild (tests/models)
                self.assertEqual(
                    (sdk.text, sdk.tool_calls, sdk.truncated), (ours.text, ours.tool_calls, ours.truncated)
                )
                if ours.provider_data is not None:
                    self.assertEqual(_plain(sdk.provider_data["items"]), _plain(ours.provider_data["items"]))


def _plain(items: Any) -> Any:
    """Items without the members an SDK dump adds as null (it writes every declared field)."""
    if isinstance(items, dict):
        return {k: _plain(v) for k, v in items.items() if v is not None}
    if isinstance(items, list):
        return [_plain(v) for v in items]
    return items
