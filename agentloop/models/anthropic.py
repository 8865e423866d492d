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

Extended thinking ("Building with extended thinking",
https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking):
``thinking={"type": "enabled", "budget_tokens": N}`` is sent as the body's
``thinking``; the reply then starts with ``thinking`` blocks (``thinking``
text and a ``signature``) or ``redacted_thinking`` blocks (``data``), which
must go back unchanged in the assistant turn before the tool results, or the
API refuses the next turn.  A reply holding one gets ``provider_data``
``{"api": "anthropic-messages", "items": <its content blocks>}``, recorded
in the assistant record; every later request sends that turn's content as
it came (the blocks, signatures and all, then the text and ``tool_use``
blocks), less any blank text block (the API sends them but refuses them
back) and with ``{}`` for a ``tool_use`` input that is not an object.

Prompt caching ("Prompt caching",
https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching):
``cache=True`` puts ``"cache_control": {"type": "ephemeral"}`` breakpoints
on the last tool, on the system prompt (sent as one text block), on the
last block of the newest message (or of the message before it, when a
trailing note such as the loop's budget note follows the tool results: the
note is not part of the next request) and on the last block of the message
the previous request ended with -- the four the API allows.  Each request
writes its prefix to the cache at the first of these message breakpoints,
and the next request reads it back at the second, exactly, however many
blocks a turn adds (the API itself looks back only 20 blocks from a
breakpoint); the counts come back as ``cache_creation_input_tokens`` and
``cache_read_input_tokens`` and are recorded and priced as before.

Mapping choices, documented where they are made:

* the reply's text is its ``text`` blocks joined as they are (citations can
  split one text into several blocks); other block types (``thinking``,
  server tools) do not add to the text;
* a text block that is empty or blank is not sent back (the API refuses
  them); an assistant turn without tool calls is sent as a plain string;
* a ``tool_use`` whose ``input`` is not an object becomes the call's
  ``arguments_error`` (the call fails as data); sent back, it is ``{}``;
* ``usage``: input is ``input_tokens`` plus both cache counts (the API
  reports cached input apart), output is ``output_tokens``, of which
  ``output_tokens_details.thinking_tokens`` are reasoning;
* ``stop_reason: "refusal"`` (or an empty reply) is a turn with whatever
  text came and no tool calls: the run ends on ``no_tool_calls``;
* ``stop_reason: "max_tokens"`` (or ``"model_context_window_exceeded"``, the
  reply cut where the context window ends) sets ``ModelReply.truncated``, recorded as
  ``"truncated": true``;
* a leading ``{"role": "system"}`` message in ``messages`` (how the loop
  passes ``run(system=...)``) replaces the constructor's ``system`` as the
  body's ``system`` field;
* a query in ``base_url`` is kept after the appended ``/v1/messages``.

Not covered yet: images and documents, ``tool_choice`` /
``disable_parallel_tool_use`` (passable through ``params`` but not
interpreted), server tools, cache lifetimes other than the default (pass
``params``), and the Batches API.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Mapping, Optional

from ..errors import ModelConfigError
from ..messages import Message, ModelReply, ToolCall
from .base import Adapter, Endpoint, Reader, join_url, system_prompt, usage_from
from .http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, HttpTransport, Notice
from .streaming import MessagesCollector

__all__ = [
    "AnthropicMessages",
    "DEFAULT_BASE_URL",
    "API_VERSION",
    "DEFAULT_MAX_TOKENS",
    "API",
    "messages_api_messages",
    "messages_api_reply",
]

#: ``provider_data["api"]`` of this adapter's replies.
API = "anthropic-messages"
#: The blocks that make a reply's content worth recording whole (they must go back unchanged).
_OPAQUE = ("thinking", "redacted_thinking")
_EPHEMERAL = {"type": "ephemeral"}
#: The stop reasons of a reply cut short at a limit (``ModelReply.truncated``).
_CUT = ("max_tokens", "model_context_window_exceeded")

#: The official endpoint's base URL (the SDK's default).
DEFAULT_BASE_URL = "https://api.anthropic.com"
#: The ``anthropic-version`` header sent.
API_VERSION = "2023-06-01"
#: ``max_tokens`` (the reply's length limit, required by the API) when not given.
DEFAULT_MAX_TOKENS = 4096
_OFFICIAL_HOST = "api.anthropic.com"
_RESERVED = ("model", "messages", "tools", "max_tokens", "system", "stream", "thinking")


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
    ``thinking`` (``{"type": "enabled", "budget_tokens": N}``, N from 1024
    and below ``max_tokens``; or another type the API knows) turns on
    extended thinking and is recorded among ``params``; ``cache=True`` places
    prompt-cache breakpoints (the module docstring) and is recorded as
    ``"cache": true``.
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
        thinking: Optional[Mapping[str, Any]] = None,
        cache: bool = False,
        stream: bool = False,
        on_text: Optional[Callable[[str], None]] = None,
    ) -> None:
        if (
            isinstance(model, str)
            and model
            and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= 2**31)
        ):
            raise ModelConfigError("max_tokens", "must be a positive int, got %r" % (max_tokens,))
        if not isinstance(cache, bool):
            raise ModelConfigError("cache", "must be True or False, got %s" % (type(cache).__name__,))
        end = Endpoint(
            model,
            base_url=base_url,
            api_key=api_key,
            system=system,
            params=params,
            headers=headers,
            timeout=timeout,
            max_retries=max_retries,
            transport=transport,
            on_retry=on_retry,
            base_url_env="ANTHROPIC_BASE_URL",
            default_base_url=DEFAULT_BASE_URL,
            api_key_env="ANTHROPIC_API_KEY",
            official_host=_OFFICIAL_HOST,
            reserved=_RESERVED,
            style="anthropic",
        )
        self._take(end)
        self._streaming(stream, on_text)
        self.max_tokens = max_tokens
        if thinking is not None:
            self.params["thinking"] = _thinking(thinking, max_tokens)
        self.cache = cache

    def __repr__(self) -> str:  # never the key
        return "AnthropicMessages(%r, base_url=%r)" % (self.model, self.base_url)

    @property
    def url(self) -> str:
        """The endpoint requests go to."""
        return join_url(self.base_url, "/v1/messages")

    def model_info(self) -> Dict[str, Any]:
        """What the task record says about this model: provider, model, host, ``params`` (with ``max_tokens``),
        ``system``."""
        info: Dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            "host": self.host,
            "params": dict(self.params, max_tokens=self.max_tokens),
        }
        if self.system is not None:
            info["system"] = self.system
        if self.cache:
            info["cache"] = True
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
        body: Dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": messages_api_messages(messages),
        }
        if system is not None:
            body["system"] = system
        tools = self._tools(manifest)
        if tools:
            body["tools"] = tools
        body.update(self.params)
        if self.cache:
            _breakpoints(body)
        return body

    def __call__(self, messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
        answer = self._post(self.request_body(messages, manifest), MessagesCollector)
        return self._reply(messages_api_reply(answer, self.provider, self.host))


def _thinking(value: object, max_tokens: int) -> Dict[str, Any]:
    """The ``thinking`` body parameter, checked: ``enabled`` needs ``budget_tokens`` from 1024
    and below ``max_tokens``."""
    if not isinstance(value, Mapping) or not isinstance(value.get("type"), str):
        raise ModelConfigError("thinking", 'must be a mapping like {"type": "enabled", "budget_tokens": 2048}')
    if value["type"] == "enabled":
        budget = value.get("budget_tokens")
        if isinstance(budget, bool) or not isinstance(budget, int) or not 1024 <= budget < max_tokens:
            raise ModelConfigError(
                "thinking",
                "budget_tokens must be an int from 1024 and below max_tokens %d, got %r" % (max_tokens, budget),
            )
    try:
        checked: Dict[str, Any] = json.loads(json.dumps(dict(value), allow_nan=False))
    except (TypeError, ValueError):
        raise ModelConfigError("thinking", "must hold plain JSON values") from None
    return checked


def _marked(block: Dict[str, Any]) -> Dict[str, Any]:
    return dict(block, cache_control=dict(_EPHEMERAL))


def _breakpoints(body: Dict[str, Any]) -> None:
    """``cache=True``: a cache breakpoint on the last tool, on the system prompt, and on the last block of
    the messages :func:`_cache_points` names (four at most, the API's limit)."""
    tools = body.get("tools")
    if tools:
        tools[-1] = _marked(tools[-1])
    if isinstance(body.get("system"), str):
        body["system"] = [_marked({"type": "text", "text": body["system"]})]
    messages = body["messages"]
    for position in _cache_points(messages):
        content = messages[position]["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if blocks and blocks[-1].get("type") not in _OPAQUE:  # a thinking block cannot carry one
            blocks[-1] = _marked(blocks[-1])
            messages[position] = dict(messages[position], content=blocks)


def _cache_points(messages: List[Dict[str, Any]]) -> List[int]:
    """The messages (in Messages API shape) whose last block gets a breakpoint: where this request's
    prompt is written for the next one -- the newest message, or the one before it when both are user
    messages (a trailing note, such as the loop's budget note, is not in the next request) -- and where
    the previous request wrote it: the last user message before the newest assistant message.  The next
    request then reads exactly what this one wrote, however many blocks a turn adds (the API looks back
    only 20 blocks from a breakpoint for a cached prefix)."""
    if not messages:
        return []
    write = len(messages) - 1
    if write >= 1 and messages[write].get("role") == "user" and messages[write - 1].get("role") == "user":
        write -= 1
    assistant = [at for at, message in enumerate(messages) if message.get("role") == "assistant"]
    read = (
        [at for at, message in enumerate(messages[: assistant[-1]]) if message.get("role") == "user"]
        if assistant
        else []
    )
    return [write] + [read[-1]] if read and read[-1] != write else [write]


def _recorded_content(message: Message) -> Optional[List[Dict[str, Any]]]:
    """The content blocks an assistant message carries as this API's ``provider_data`` (a copy), or ``None``."""
    data = message.get("provider_data")
    if isinstance(data, dict) and data.get("api") == API and isinstance(data.get("items"), list):
        copied: List[Dict[str, Any]] = json.loads(json.dumps(data["items"]))
        return copied
    return None


def _sendable(blocks: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Recorded blocks as the API takes them back: as they came, but for a blank ``text`` block, left out
    (the API sends them and refuses them: "text content blocks must be non-empty"), and a ``tool_use``
    whose ``input`` is not an object, given ``{}`` (as a rebuilt turn gives it)."""
    sent: List[Dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "text" and isinstance(block.get("text"), str) and not block["text"].strip():
            continue
        if block.get("type") == "tool_use" and not isinstance(block.get("input"), dict):
            block = dict(block, input={})
        sent.append(block)
    return sent


def _assistant_content(message: Message) -> Any:
    """An assistant turn's content: its recorded blocks (thinking blocks with their signatures: back
    exactly as they came; :func:`_sendable`), else a plain string (no calls), else its text block and
    ``tool_use`` blocks."""
    recorded = _recorded_content(message)
    if recorded is not None:
        return _sendable(recorded)
    calls = message.get("tool_calls") or []
    if not calls:
        return message["content"]
    blocks: List[Dict[str, Any]] = []
    if message["content"].strip():
        blocks.append({"type": "text", "text": message["content"]})
    for call in calls:
        arguments = call["arguments"] if call["arguments"] is not None else {}
        blocks.append({"type": "tool_use", "id": call["id"], "name": call["name"], "input": arguments})
    return blocks


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
            out.append({"role": "assistant", "content": _assistant_content(message)})
        elif role == "tool":
            result: Dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": message["content"],
            }
            if not message["ok"]:
                result["is_error"] = True
            results.append(result)
        else:
            raise ModelConfigError(
                "messages", "messages[%d] has role %r, not user, assistant or tool" % (position, role)
            )
    if results:
        out.append({"role": "user", "content": results})
    return out


def messages_api_reply(answer: Mapping[str, Any], provider: str = "anthropic", host: str = "") -> ModelReply:
    """A Messages API response body as a :class:`~agentloop.ModelReply`."""
    read = Reader(provider, host)
    blocks = read.get(answer, "content", "$", list)
    texts: List[str] = []
    calls: List[ToolCall] = []
    opaque = False
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
                kind_name = (
                    "null"
                    if arguments is None
                    else "an array"
                    if isinstance(arguments, list)
                    else type(arguments).__name__
                )
                calls.append(ToolCall(name, {}, call_id, "tool_use input must be a JSON object, got %s" % (kind_name,)))
        elif kind in _OPAQUE:
            opaque = True
    usage = usage_from(
        answer,
        "input_tokens",
        "output_tokens",
        ("cache_read_input_tokens",),
        ("cache_creation_input_tokens",),
        read=read,
        reasoning="output_tokens_details.thinking_tokens",
    )
    data = {"api": API, "items": list(blocks)} if opaque else None
    # stop_reason "max_tokens": the reply was cut at max_tokens; "model_context_window_exceeded": at the context's end.
    return ModelReply("".join(texts), calls, usage, answer.get("stop_reason") in _CUT, data)
