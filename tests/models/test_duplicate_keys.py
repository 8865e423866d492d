"""A provider reply with a repeated JSON member is refused as model_error, as every file agentloop reads is."""

from __future__ import annotations

from agentloop import run, verify_file
from agentloop.models import OpenAIChat

from tests.support.loopback import Canned
from tests.support.modelcase import LoopbackCase

BODY = (
    b'{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop",'
    b'"message":{"role":"assistant","content":"shown to one reader"}}],'
    b'"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"recorded by another"}}]}'
)


class TestDuplicateKeys(LoopbackCase):
    def test_a_reply_with_a_repeated_member_is_a_model_error(self) -> None:
        server = self.serve(Canned(BODY))
        model = OpenAIChat("m", base_url=server.url, api_key="", transport=self.transport())
        result = run("t", model, [], transcript=self.path(), max_steps=2, max_tokens=100)
        self.assertEqual(result.stop_reason, "model_error")
        self.assertIn('duplicate key "choices"', result.detail)
        self.assertTrue(verify_file(self.path()).ok)

    def test_the_same_reply_without_the_repeat_is_taken(self) -> None:
        single = (
            BODY[
                : BODY.index(
                    b',"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"recorded'
                )
            ]
            + b"}"
        )
        server = self.serve(Canned(single))
        model = OpenAIChat("m", base_url=server.url, api_key="", transport=self.transport())
        result = run("t", model, [], transcript=self.path(), max_steps=2, max_tokens=100)
        self.assertEqual((result.stop_reason, result.output), ("no_tool_calls", "shown to one reader"))
