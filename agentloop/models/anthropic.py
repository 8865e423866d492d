"""``AnthropicMessages``: a model for :func:`agentloop.run` that calls the
Anthropic Messages API.

Reference followed: Anthropic API reference, "Create a Message",
``POST /v1/messages``
(https://platform.claude.com/docs/en/api/messages, formerly
https://docs.anthropic.com/en/api/messages), the "Tool use" guide
(https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use),
and "Errors" (https://docs.anthropic.com/en/api/errors):

* request headers ``x-api-key: <key>``, ``anthropic-version: 2023-06-01``
  and ``content-type: application/json``; ``base_url`` is the URL *without*
  ``/v1``, as the official SDK takes it (``ANTHROPIC_BASE_URL`` otherwise),
  and the endpoint is ``<base_url>/v1/messages``;
* request body ``{"model", "max_tokens", "messages", "tools"}`` (``tools``
  only when there are tools), ``system`` (a top-level string) when set, plus
  the fixed ``params``;
* ``tools`` entries ``{"name", "description", "input_schema"}``, built by
  ``ToolRegistry.manifest(style="anthropic")`` (:mod:`agentloop.tools.providers`);
* the messages: ``{"role": "user", "content": task}``; an assistant turn is
  ``{"role": "assistant", "content": [{"type": "text", "text"},
  {"type": "tool_use", "id", "name", "input"}, ...]}``; the results of one
  turn go back together as *one* user message of ``tool_result`` blocks,
  ``{"type": "tool_result", "tool_use_id", "content", "is_error"}``, in call
  order (the API wants every ``tool_use`` answered in the next message, and
  the results first in it);
* the reply: ``content`` blocks (``text`` and ``tool_use`` with ``id``,
  ``name`` and ``input`` an object), ``stop_reason`` and ``usage``
  (``input_tokens``, ``output_tokens``, ``cache_creation_input_tokens``,
  ``cache_read_input_tokens``);
* errors: ``{"type": "error", "error": {"type", "message"}}``, HTTP 529
  ``overloaded_error`` among the retried 5xx
  (:func:`agentloop.models.http.provider_message`).

Mapping choices, documented where they are made:

* the reply's text is its ``text`` blocks joined as they are (citations can
  split one text into several blocks); other block types (``thinking``,
  server tools) are not asked for and are skipped;
* a text block that is empty or blank is not sent back (the API refuses
  them); an assistant turn without tool calls is sent as a plain string;
* a ``tool_use`` whose ``input`` is not an object becomes the call's
  ``arguments_error`` (the call fails as data); sent back, it is ``{}``;
* ``usage``: input is ``input_tokens`` plus both cache counts (the API
  reports cached input apart), output is ``output_tokens``;
* ``stop_reason: "refusal"`` (or an empty reply) is a turn with whatever
  text came and no tool calls: the run ends on ``no_tool_calls``;
* ``stop_reason: "max_tokens"`` sets ``ModelReply.truncated``, recorded as
  ``"truncated": true``;
* a leading ``{"role": "system"}`` message in ``messages`` (how the loop
  passes ``run(system=...)``) replaces the constructor's ``system`` as the
  body's ``system`` field;
* a query in ``base_url`` is kept after the appended ``/v1/messages``.

Not covered yet: streaming, images and documents, extended thinking (whose
blocks would have to be sent back with tool results), prompt caching
controls, ``tool_choice`` / ``disable_parallel_tool_use`` (passable through
``params`` but not interpreted), server tools, and the Batches API.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from ..errors import ModelConfigError
from ..messages import Message, ModelReply, ToolCall
from .base import Adapter, Endpoint, Reader, join_url, system_prompt, usage_from
from .http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, HttpTransport, Notice

__all__ = ["AnthropicMessages", "DEFAULT_BASE_URL", "API_VERSION", "DEFAULT_MAX_TOKENS"]

#: The official endpoint's base URL (the SDK's default).
DEFAULT_BASE_URL = "https://api.anthropic.com"
#: The ``anthropic-version`` header sent.
API_VERSION = "2023-06-01"
#: ``max_tokens`` (the reply's length limit, required by the API) when not given.
DEFAULT_MAX_TOKENS = 4096
_OFFICIAL_HOST = "api.anthropic.com"
_RESERVED = ("model", "messages", "tools", "max_tokens", "system", "stream")


class AnthropicMessages(Adapter):
    """A model ``(messages, manifest) -> ModelReply`` over the Messages API.

    ``api_key`` defaults to ``$ANTHROPIC_API_KEY``; it is required for
    ``api.anthropic.com`` and optional elsewhere (no ``x-api-key`` header is
    sent without one).  ``max_tokens`` bounds each reply (the API requires
    it); ``system`` is the top-level system prompt; ``params`` are fixed body
    parameters (``temperature``, ``tool_choice``, ...); ``headers`` are
    extra request headers (values of 8 characters or more are redacted like the key).
    ``max_tokens``, ``system`` and ``params`` are recorded in the task record
    through :meth:`model_info`; the key and the headers never are.
    """

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        system: Optional[str] = None,
        params: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        transport: Optional[HttpTransport] = None,
        on_retry: Optional[Notice] = None,
    ) -> None:
        if isinstance(model, str) and model and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= 2**31
        ):
            raise ModelConfigError("max_tokens", "must be a positive int, got %r" % (max_tokens,))
        end = Endpoint(
            model, base_url=base_url, api_key=api_key, system=system, params=params, headers=headers,
            timeout=timeout, max_retries=max_retries, transport=transport, on_retry=on_retry,
            base_url_env="ANTHROPIC_BASE_URL", default_base_url=DEFAULT_BASE_URL, api_key_env="ANTHROPIC_API_KEY",
            official_host=_OFFICIAL_HOST, reserved=_RESERVED, style="anthropic",
        )
        self._take(end)
        self.max_tokens = max_tokens

    def __repr__(self) -> str:  # never the key
        return "AnthropicMessages(%r, base_url=%r)" % (self.model, self.base_url)

    @property
    def url(self) -> str:
        """The endpoint requests go to."""
        return join_url(self.base_url, "/v1/messages")

    def model_info(self) -> Dict[str, Any]:
        """What the task record says about this model: provider, model, host, ``params`` (with ``max_tokens``), ``system``."""
        info: Dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            "host": self.host,
            "params": dict(self.params, max_tokens=self.max_tokens),
        }
        if self.system is not None:
            info["system"] = self.system
        return info

    def headers(self) -> Dict[str, str]:
        """The request headers (with the key: do not print them)."""
        headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "anthropic-version": API_VERSION,
            "user-agent": "agentloop",
        }
        if self._key:
            headers["x-api-key"] = self._key
        headers.update(self._extra_headers)
        return headers

    def request_body(self, messages: List[Message], manifest: List[Dict[str, Any]]) -> Dict[str, Any]:
        """The JSON body sent for one turn (see the module docstring)."""
        system, messages = system_prompt(messages, self.system)
        body: Dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": messages_api_messages(messages)}
        if system is not None:
            body["system"] = system
        tools = self._tools(manifest)
        if tools:
            body["tools"] = tools
        body.update(self.params)
        return body

    def __call__(self, messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
        answer = self.transport.post_json(
            self.url,
            self.headers(),
            self.request_body(messages, manifest),
            provider=self.provider,
            secrets=self._secrets,
        )
        return self._reply(messages_api_reply(answer, self.provider, self.host))


def messages_api_messages(messages: List[Message]) -> List[Dict[str, Any]]:
    """agentloop's messages in Messages API shape: the results of a turn become one user message."""
    out: List[Dict[str, Any]] = []
    results: List[Dict[str, Any]] = []
    for position, message in enumerate(messages):
        role = message.get("role")
        if role != "tool" and results:
            out.append({"role": "user", "content": results})
            results = []
        if role == "user":
            out.append({"role": "user", "content": message["content"]})
        elif role == "assistant":
            calls = message.get("tool_calls") or []
            if not calls:
                out.append({"role": "assistant", "content": message["content"]})
                continue
            blocks: List[Dict[str, Any]] = []
            if message["content"].strip():
                blocks.append({"type": "text", "text": message["content"]})
            for call in calls:
                arguments = call["arguments"] if call["arguments"] is not None else {}
                blocks.append({"type": "tool_use", "id": call["id"], "name": call["name"], "input": arguments})
            out.append({"role": "assistant", "content": blocks})
        elif role == "tool":
            result: Dict[str, Any] = {"type": "tool_result", "tool_use_id": message["tool_call_id"], "content": message["content"]}
            if not message["ok"]:
                result["is_error"] = True
            results.append(result)
        else:
            raise ModelConfigError("messages", "messages[%d] has role %r, not user, assistant or tool" % (position, role))
    if results:
        out.append({"role": "user", "content": results})
    return out


def messages_api_reply(answer: Mapping[str, Any], provider: str = "anthropic", host: str = "") -> ModelReply:
    """A Messages API response body as a :class:`~agentloop.ModelReply`."""
    read = Reader(provider, host)
    blocks = read.get(answer, "content", "$", list)
    texts: List[str] = []
    calls: List[ToolCall] = []
    for position, block in enumerate(blocks):
        at = "$.content[%d]" % (position,)
        if not isinstance(block, dict):
            raise read.fail(at, "expected an object")
        kind = block.get("type")
        if kind == "text":
            texts.append(read.get(block, "text", at, str))
        elif kind == "tool_use":
            name = read.get(block, "name", at, str)
            call_id = read.get(block, "id", at, str)
            arguments = block.get("input")
            if isinstance(arguments, dict):
                calls.append(ToolCall(name, arguments, call_id))
            else:
                kind_name = "null" if arguments is None else "an array" if isinstance(arguments, list) else type(arguments).__name__
                calls.append(ToolCall(name, {}, call_id, "tool_use input must be a JSON object, got %s" % (kind_name,)))
    usage = usage_from(
        answer, "input_tokens", "output_tokens", ("cache_read_input_tokens",), ("cache_creation_input_tokens",), read=read
    )
    # stop_reason "max_tokens": the reply was cut at max_tokens.
    return ModelReply("".join(texts), calls, usage, answer.get("stop_reason") == "max_tokens")
