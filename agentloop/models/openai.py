"""``OpenAIChat``: a model for :func:`agentloop.run` that calls the OpenAI
Chat Completions API, and so every OpenAI-compatible server (vLLM,
llama.cpp's server, Ollama's ``/v1``, LM Studio) through ``base_url``.

Reference followed: OpenAI API reference, "Create chat completion",
``POST /v1/chat/completions``
(https://platform.openai.com/docs/api-reference/chat/create, also served at
https://developers.openai.com/api/reference), and the "Function calling"
guide (https://platform.openai.com/docs/guides/function-calling):

* request headers ``Authorization: Bearer <key>`` and
  ``Content-Type: application/json``; ``base_url`` is the URL up to and
  including ``/v1``, as the official SDK takes it (``OPENAI_BASE_URL``
  otherwise), and the endpoint is ``<base_url>/chat/completions``;
* request body ``{"model", "messages", "tools"}`` (``tools`` only when there
  are tools: the API refuses an empty array), plus the fixed ``params``;
* ``tools`` entries ``{"type": "function", "function": {"name",
  "description", "parameters", "strict"}}``, built by
  ``ToolRegistry.manifest(style="openai")`` (:mod:`agentloop.tools.providers`);
* the messages: ``{"role": "system", "content"}`` first when ``system`` is
  set; ``{"role": "user", "content"}``; an assistant turn is
  ``{"role": "assistant", "content", "tool_calls": [{"id", "type":
  "function", "function": {"name", "arguments"}}]}`` with ``arguments`` a
  JSON *string* and ``content`` null when the turn is only tool calls; each
  result is ``{"role": "tool", "tool_call_id", "content"}``, in call order;
* the reply: ``choices[0].message`` with ``content`` (string or null),
  ``refusal`` (string or null) and ``tool_calls``; ``usage.prompt_tokens``
  and ``usage.completion_tokens``;
* errors: ``{"error": {"message", "type", "param", "code"}}``
  (:func:`agentloop.models.http.provider_message`).

Mapping choices, documented where they are made:

* the reply's text is ``content``, or the ``refusal`` text when ``content``
  is null (a refusal asks for no tools, so the run ends on ``no_tool_calls``
  with the refusal as the last text);
* arguments the model sent that are not a JSON object
  (:func:`agentloop.models.base.read_arguments`) become the call's
  ``arguments_error``: that call fails as data, the run goes on.  Sent back
  to the API in later turns, such a call's arguments are ``"{}"``, since
  servers that render a chat template parse them (the tool result says what
  went wrong);
* ``usage`` becomes :class:`agentloop.Usage` (``prompt_tokens`` includes
  cached tokens, so it is the whole prompt); a reply without it falls back
  to the loop's heuristic;
* only ``choices[0]`` is read; a tool call whose ``type`` is not
  ``"function"`` is an unexpected response;
* ``finish_reason: "length"`` (the reply hit its token limit) sets
  ``ModelReply.truncated``, recorded as ``"truncated": true``;
* a leading ``{"role": "system"}`` message in ``messages`` (how the loop
  passes ``run(system=...)``) replaces the constructor's ``system``;
* ``base_url`` may carry a query (``?api-version=...``, as Azure wants): it is
  kept after the appended ``/chat/completions``.

Not covered yet: images and other content parts, audio,
``parallel_tool_calls`` and ``tool_choice`` (passable through ``params``
but not interpreted), ``n > 1``.  The Responses API is
:class:`~agentloop.models.OpenAIResponses`.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional

from ..canonical import canonical_text
from ..errors import ModelConfigError
from ..messages import Message, ModelReply, ToolCall, shown
from .base import Adapter, Endpoint, Reader, join_url, read_arguments, system_prompt, usage_from
from .http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, HttpTransport, Notice
from .streaming import ChatCollector

__all__ = ["OpenAIChat", "DEFAULT_BASE_URL", "cache_key_params"]

#: The official endpoint's base URL (the SDK's default).
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: The host where a key is required (elsewhere a local server may need none).
OFFICIAL_HOST = "api.openai.com"
_RESERVED = ("model", "messages", "tools", "stream", "stream_options")


def cache_key_params(
    params: Optional[Mapping[str, Any]], prompt_cache_key: Optional[str]
) -> Optional[Mapping[str, Any]]:
    """``params`` with ``prompt_cache_key`` added when given (OpenAI routes requests that share
    one to the same prompt cache): a body parameter, passed through and recorded with ``params``."""
    if prompt_cache_key is None:
        return params
    if not isinstance(prompt_cache_key, str) or not prompt_cache_key:
        raise ModelConfigError("prompt_cache_key", "must be a non-empty str, got %s" % (shown(prompt_cache_key),))
    if isinstance(params, Mapping) and "prompt_cache_key" in params:
        raise ModelConfigError("prompt_cache_key", "is also in params: give it once")
    if params is not None and not isinstance(params, Mapping):
        return params  # Endpoint refuses it, naming params
    return dict(params or {}, prompt_cache_key=prompt_cache_key)


def bearer_headers(key: str, extra: Mapping[str, str]) -> Dict[str, str]:
    """The request headers of both OpenAI APIs: JSON, ``Authorization: Bearer <key>`` when there
    is a key, then the extra ``headers`` (with the key: do not print them)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "agentloop"}
    if key:
        headers["Authorization"] = "Bearer " + key
    headers.update(extra)
    return headers


class OpenAIChat(Adapter):
    """A model ``(messages, manifest) -> ModelReply`` over the Chat Completions API.

    ``api_key`` defaults to ``$OPENAI_API_KEY``; it is required for
    ``api.openai.com`` and optional elsewhere (a local server may need
    none: then no ``Authorization`` header is sent).  ``system`` is sent as
    a first system message; ``params`` are fixed body parameters
    (``temperature``, ``max_completion_tokens``, ``seed``, ...); ``headers``
    are extra request headers (values of 8 characters or more are redacted like the key).
    Both ``system`` and ``params`` are recorded in the task record through
    :meth:`model_info`; the key and the headers never are.
    ``prompt_cache_key`` is added to ``params`` (:func:`cache_key_params`).
    """

    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        system: Optional[str] = None,
        params: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
        prompt_cache_key: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        transport: Optional[HttpTransport] = None,
        on_retry: Optional[Notice] = None,
        stream: bool = False,
        on_text: Optional[Callable[[str], None]] = None,
    ) -> None:
        end = Endpoint(
            model,
            base_url=base_url,
            api_key=api_key,
            system=system,
            params=cache_key_params(params, prompt_cache_key),
            headers=headers,
            timeout=timeout,
            max_retries=max_retries,
            transport=transport,
            on_retry=on_retry,
            base_url_env="OPENAI_BASE_URL",
            default_base_url=DEFAULT_BASE_URL,
            api_key_env="OPENAI_API_KEY",
            official_host=OFFICIAL_HOST,
            reserved=_RESERVED,
            style="openai",
        )
        self._take(end)
        self._streaming(stream, on_text)

    def __repr__(self) -> str:  # never the key
        return "OpenAIChat(%r, base_url=%r)" % (self.model, self.base_url)

    @property
    def url(self) -> str:
        """The endpoint requests go to."""
        return join_url(self.base_url, "/chat/completions")

    def model_info(self) -> Dict[str, Any]:
        """What the task record says about this model: provider, model, host, and ``system``/``params`` when set."""
        info: Dict[str, Any] = {"provider": self.provider, "model": self.model, "host": self.host}
        if self.system is not None:
            info["system"] = self.system
        if self.params:
            info["params"] = dict(self.params)
        return info

    def headers(self) -> Dict[str, str]:
        """The request headers (with the key: do not print them)."""
        return bearer_headers(self._key, self._extra_headers)

    def request_body(self, messages: List[Message], manifest: List[Dict[str, Any]]) -> Dict[str, Any]:
        """The JSON body sent for one turn (see the module docstring)."""
        body: Dict[str, Any] = {"model": self.model, "messages": chat_messages(messages, self.system)}
        tools = self._tools(manifest)
        if tools:
            body["tools"] = tools
        body.update(self.params)
        return body

    def __call__(self, messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
        answer = self._post(
            self.request_body(messages, manifest),
            ChatCollector,
            {"stream": True, "stream_options": {"include_usage": True}},
        )
        return self._reply(chat_reply(answer, self.provider, self.host))


def chat_messages(messages: List[Message], system: Optional[str] = None) -> List[Dict[str, Any]]:
    """agentloop's messages in Chat Completions shape; a leading system message
    overrides ``system`` (:func:`~agentloop.models.base.system_prompt`)."""
    system, messages = system_prompt(messages, system)
    out: List[Dict[str, Any]] = [] if system is None else [{"role": "system", "content": system}]
    for position, message in enumerate(messages):
        role = message.get("role")
        if role == "user":
            out.append({"role": "user", "content": message["content"]})
        elif role == "assistant":
            calls = message.get("tool_calls") or []
            entry: Dict[str, Any] = {
                "role": "assistant",
                "content": message["content"] if message["content"] or not calls else None,
            }
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {
                            "name": call["name"],
                            "arguments": canonical_text(call["arguments"] if call["arguments"] is not None else {}),
                        },
                    }
                    for call in calls
                ]
            out.append(entry)
        elif role == "tool":
            out.append({"role": "tool", "tool_call_id": message["tool_call_id"], "content": message["content"]})
        else:
            raise ModelConfigError(
                "messages",
                "messages[%d] has role %r, not user, assistant or tool (system only first)" % (position, role),
            )
    return out


def chat_reply(answer: Mapping[str, Any], provider: str = "openai", host: str = "") -> ModelReply:
    """A Chat Completions response body as a :class:`~agentloop.ModelReply`."""
    read = Reader(provider, host)
    choices = read.get(answer, "choices", "$", list)
    if not choices:
        raise read.fail("$.choices", "expected at least one choice, got none")
    if not isinstance(choices[0], dict):
        raise read.fail("$.choices[0]", "expected an object")
    message = read.get(choices[0], "message", "$.choices[0]", dict)
    where = "$.choices[0].message"
    content = read.get(message, "content", where, str, optional=True)
    refusal = read.get(message, "refusal", where, str, optional=True)
    text = content if content else (refusal or "")
    calls: List[ToolCall] = []
    for position, call in enumerate(read.get(message, "tool_calls", where, list, optional=True) or []):
        at = "%s.tool_calls[%d]" % (where, position)
        if not isinstance(call, dict):
            raise read.fail(at, "expected an object")
        kind = call.get("type", "function")
        if kind != "function":
            raise read.fail(at + ".type", 'expected "function", got %r' % (kind,))
        function = read.get(call, "function", at, dict)
        name = read.get(function, "name", at + ".function", str)
        call_id = read.get(call, "id", at, str, optional=True) or ""
        arguments, problem = read_arguments(function.get("arguments"))
        calls.append(ToolCall(name, arguments, call_id, problem))
    # finish_reason "length": the reply was cut at its token limit (max_completion_tokens or the context).
    truncated = choices[0].get("finish_reason") == "length"
    return ModelReply(
        text,
        calls,
        usage_from(
            answer,
            "prompt_tokens",
            "completion_tokens",
            ("prompt_tokens_details.cached_tokens",),
            cache_included=True,
            read=read,
        ),
        truncated,
    )
