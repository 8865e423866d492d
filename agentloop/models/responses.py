"""``OpenAIResponses``: a model for :func:`agentloop.run` that calls the OpenAI
Responses API, the API OpenAI's reasoning models are meant to be used through.

Reference followed: OpenAI API reference, "Create a model response",
``POST /v1/responses`` (https://platform.openai.com/docs/api-reference/responses/create),
the "Conversation state" and "Reasoning" guides (managing context yourself
with ``store: false``: pass back every output item, reasoning items with
their ``encrypted_content``), and the openai-python SDK's types
(``ResponseCreateParams``, ``Response``, ``ResponseOutputItem``,
``ResponseUsage``):

* request headers as for Chat Completions (``Authorization: Bearer <key>``);
  ``base_url`` up to and including ``/v1``; the endpoint is
  ``<base_url>/responses``;
* request body ``{"model", "input", "store": false, "include":
  ["reasoning.encrypted_content"]}``, ``instructions`` (the system prompt)
  when set, ``tools`` when there are tools, plus the fixed ``params``
  (``reasoning``, ``max_output_tokens``, ``prompt_cache_key``, ...);
  ``store=True`` sends ``"store": true`` and no ``include``;
* ``tools`` entries ``{"type": "function", "name", "description",
  "parameters", "strict"}`` (``ToolRegistry.manifest(style="responses")``);
* ``input`` items: the task ``{"role": "user", "content"}``; an assistant
  turn, when it recorded ``provider_data`` of this API, is its output items
  again, exactly as the API sent them (reasoning, message and
  ``function_call`` items with their ids), else ``{"role": "assistant",
  "content": text}`` (when there is text) and one ``{"type":
  "function_call", "call_id", "name", "arguments"}`` per call (arguments as
  a JSON string); each result is ``{"type": "function_call_output",
  "call_id", "output"}``, in call order;
* the reply: ``output`` items of type ``message`` (``content`` parts
  ``output_text`` and ``refusal``), ``function_call`` (``call_id``,
  ``name``, ``arguments``, a JSON string) and ``reasoning``; ``status``
  (``completed``, ``incomplete`` with ``incomplete_details.reason``,
  ``failed`` with ``error``); ``usage.input_tokens`` (cached ones
  included: ``input_tokens_details.cached_tokens``), ``output_tokens``
  (reasoning included: ``output_tokens_details.reasoning_tokens``).

Mapping choices, documented where they are made:

* the reply's text is its ``output_text`` parts joined as they are, or, when
  there are none, its ``refusal`` parts (a refusal asks for no tools, so the
  run ends on ``no_tool_calls`` with the refusal as the last text);
* a response holding a ``reasoning`` item gives the reply ``provider_data``
  ``{"api": "openai-responses", "items": <its output items>}``: recorded in
  the assistant record and sent back as they are in every later turn (the
  API refuses a reasoning item without the item that followed it, so they
  all go back, ids and all);
* ``status: "incomplete"`` with ``reason: "max_output_tokens"`` sets
  ``ModelReply.truncated``; any other incomplete reply is taken as it is;
  ``status: "failed"`` is a :class:`~agentloop.errors.ModelResponseError`
  naming the error's code and message (the loop stops with ``model_error``);
* arguments that are not a JSON object fail that call as data
  (:func:`~agentloop.models.base.read_arguments`), and go back as ``"{}"``
  when rebuilt (items recorded as ``provider_data`` go back as sent);
* output items of other types (hosted tools, which this adapter never asks
  for) are skipped when reading, and kept in ``provider_data``.

Not covered: hosted tools (web search, file search, code interpreter,
computer use), ``previous_response_id`` and conversations (the transcript is
the state), images and files in the input, background responses.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Mapping, Optional

from ..canonical import canonical_text
from ..errors import ModelConfigError
from ..messages import Message, ModelReply, ToolCall
from .base import Adapter, Endpoint, Reader, join_url, read_arguments, system_prompt, usage_from
from .http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, HttpTransport, Notice
from .openai import DEFAULT_BASE_URL, OFFICIAL_HOST, bearer_headers, cache_key_params
from .streaming import ResponsesCollector

__all__ = ["OpenAIResponses", "API", "responses_input", "responses_reply"]

#: ``provider_data["api"]`` of this adapter's replies.
API = "openai-responses"
_RESERVED = ("model", "input", "tools", "stream", "stream_options", "instructions", "store", "include")


class OpenAIResponses(Adapter):
    """A model ``(messages, manifest) -> ModelReply`` over the Responses API.

    The same key and base-URL rules as :class:`~agentloop.models.OpenAIChat`
    (``$OPENAI_API_KEY``, ``$OPENAI_BASE_URL``, the key required only for
    ``api.openai.com``).  ``store`` (default ``False``) is sent as is: with
    ``False`` the API keeps nothing, and reasoning items come back encrypted
    to be carried from turn to turn in the transcript.  ``prompt_cache_key``
    is passed through (a body parameter, recorded with ``params``).
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
        store: bool = False,
        prompt_cache_key: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        transport: Optional[HttpTransport] = None,
        on_retry: Optional[Notice] = None,
        stream: bool = False,
        on_text: Optional[Callable[[str], None]] = None,
    ) -> None:
        if not isinstance(store, bool):
            raise ModelConfigError("store", "must be True or False, got %s" % (type(store).__name__,))
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
            style="responses",
        )
        self._take(end)
        self._streaming(stream, on_text)
        self.store = store

    def __repr__(self) -> str:  # never the key
        return "OpenAIResponses(%r, base_url=%r)" % (self.model, self.base_url)

    @property
    def url(self) -> str:
        """The endpoint requests go to."""
        return join_url(self.base_url, "/responses")

    def model_info(self) -> Dict[str, Any]:
        """What the task record says: provider, ``"api": "responses"``, model, host, and
        ``system``, ``params`` and ``"store": true`` when set."""
        info: Dict[str, Any] = {"provider": self.provider, "api": "responses", "model": self.model, "host": self.host}
        if self.system is not None:
            info["system"] = self.system
        if self.params:
            info["params"] = dict(self.params)
        if self.store:
            info["store"] = True
        return info

    def headers(self) -> Dict[str, str]:
        """The request headers (with the key: do not print them)."""
        return bearer_headers(self._key, self._extra_headers)

    def request_body(self, messages: List[Message], manifest: List[Dict[str, Any]]) -> Dict[str, Any]:
        """The JSON body sent for one turn (see the module docstring)."""
        system, rest = system_prompt(messages, self.system)
        body: Dict[str, Any] = {"model": self.model, "input": responses_input(rest), "store": self.store}
        if not self.store:
            body["include"] = ["reasoning.encrypted_content"]
        if system is not None:
            body["instructions"] = system
        tools = self._tools(manifest)
        if tools:
            body["tools"] = tools
        body.update(self.params)
        return body

    def __call__(self, messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
        answer = self._post(self.request_body(messages, manifest), ResponsesCollector)
        return self._reply(responses_reply(answer, self.provider, self.host))


def _recorded_items(message: Message) -> Optional[List[Dict[str, Any]]]:
    """The output items an assistant message carries as this API's ``provider_data`` (a copy), or ``None``."""
    data = message.get("provider_data")
    if isinstance(data, dict) and data.get("api") == API and isinstance(data.get("items"), list):
        copied: List[Dict[str, Any]] = json.loads(json.dumps(data["items"]))
        return copied
    return None


def _assistant_items(message: Message) -> List[Dict[str, Any]]:
    """One assistant turn as input items: its recorded output items, else rebuilt from its text and calls."""
    recorded = _recorded_items(message)
    if recorded is not None:
        return recorded
    items: List[Dict[str, Any]] = []
    if message["content"]:
        items.append({"role": "assistant", "content": message["content"]})
    for call in message.get("tool_calls") or []:
        arguments = canonical_text(call["arguments"] if call["arguments"] is not None else {})
        items.append({"type": "function_call", "call_id": call["id"], "name": call["name"], "arguments": arguments})
    return items


def responses_input(messages: List[Message]) -> List[Dict[str, Any]]:
    """agentloop's messages (after any system message) as Responses ``input`` items."""
    items: List[Dict[str, Any]] = []
    for position, message in enumerate(messages):
        role = message.get("role")
        if role == "user":
            items.append({"role": "user", "content": message["content"]})
        elif role == "assistant":
            items.extend(_assistant_items(message))
        elif role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": message["tool_call_id"], "output": message["content"]}
            )
        else:
            raise ModelConfigError(
                "messages",
                "messages[%d] has role %r, not user, assistant or tool (system only first)" % (position, role),
            )
    return items


def _message_text(read: Reader, item: Mapping[str, Any], at: str, texts: List[str], refusals: List[str]) -> None:
    for index, part in enumerate(read.get(item, "content", at, list)):
        where = "%s.content[%d]" % (at, index)
        if not isinstance(part, dict):
            raise read.fail(where, "expected an object")
        kind = part.get("type")
        if kind == "output_text":
            texts.append(read.get(part, "text", where, str))
        elif kind == "refusal":
            refusals.append(read.get(part, "refusal", where, str))


def _failure(read: Reader, answer: Mapping[str, Any]) -> None:
    """A ``failed`` response is an error naming the API's own code and message."""
    error = answer.get("error")
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        said = "%s: %s" % (code, message) if isinstance(code, str) and code else str(message)
    else:
        said = "no error object"
    raise read.fail("$.status", "the response failed (%s)" % (said[:500],))


def responses_reply(answer: Mapping[str, Any], provider: str = "openai", host: str = "") -> ModelReply:
    """A Responses API ``Response`` object as a :class:`~agentloop.ModelReply`."""
    read = Reader(provider, host)
    if answer.get("status") == "failed":
        _failure(read, answer)
    output = read.get(answer, "output", "$", list)
    texts: List[str] = []
    refusals: List[str] = []
    calls: List[ToolCall] = []
    reasoning = False
    for position, item in enumerate(output):
        at = "$.output[%d]" % (position,)
        if not isinstance(item, dict):
            raise read.fail(at, "expected an object")
        kind = item.get("type")
        if kind == "message":
            _message_text(read, item, at, texts, refusals)
        elif kind == "function_call":
            name = read.get(item, "name", at, str)
            call_id = read.get(item, "call_id", at, str)
            arguments, problem = read_arguments(item.get("arguments"))
            calls.append(ToolCall(name, arguments, call_id, problem))
        elif kind == "reasoning":
            reasoning = True
    details = answer.get("incomplete_details")
    truncated = (
        answer.get("status") == "incomplete"
        and isinstance(details, dict)
        and details.get("reason") == "max_output_tokens"
    )
    usage = usage_from(
        answer,
        "input_tokens",
        "output_tokens",
        ("input_tokens_details.cached_tokens",),
        ("input_tokens_details.cache_write_tokens",),
        cache_included=True,
        read=read,
        reasoning="output_tokens_details.reasoning_tokens",
    )
    data = {"api": API, "items": list(output)} if reasoning else None
    return ModelReply("".join(texts) or "".join(refusals), calls, usage, truncated, data)
