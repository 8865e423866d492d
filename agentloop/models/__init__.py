"""Real models for the loop, and replay.

* :class:`OpenAIChat` -- the OpenAI Chat Completions API, and every
  OpenAI-compatible server through ``base_url``;
* :class:`OpenAIResponses` -- the OpenAI Responses API (reasoning items
  carried from turn to turn);
* :class:`AnthropicMessages` -- the Anthropic Messages API;
* :class:`ReplayModel` -- the replies of a recorded run, checked against the
  conversation, and :func:`replay`, which re-runs a transcript and compares;
* :class:`HttpTransport` / :class:`RetryPolicy` -- the shared stdlib HTTP
  client (timeouts, bounded retries with backoff, ``Retry-After``).

Each adapter is a model in the loop's sense, ``(messages, manifest) ->
ModelReply``, with a ``model_info()`` the loop records in the task record.
"""

from __future__ import annotations

from ..errors import (
    ModelAPIError,
    ModelConfigError,
    ModelConnectionError,
    ModelResponseError,
    ReplayError,
    ReplayMismatchError,
)
from .anthropic import AnthropicMessages
from .http import HttpTransport, RetryPolicy
from .openai import OpenAIChat
from .responses import OpenAIResponses
from .replay import Difference, ReplayModel, ReplayResult, first_difference, replay

__all__ = [
    "OpenAIChat",
    "OpenAIResponses",
    "AnthropicMessages",
    "ReplayModel",
    "ReplayResult",
    "Difference",
    "replay",
    "first_difference",
    "HttpTransport",
    "RetryPolicy",
    "ModelConfigError",
    "ModelAPIError",
    "ModelConnectionError",
    "ModelResponseError",
    "ReplayError",
    "ReplayMismatchError",
]
