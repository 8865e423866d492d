"""What the provider adapters share: base URL, API key, fixed request
parameters, tool definitions from the manifest, reading tool-call arguments,
keeping the key out of replies and pickles, and the async call.

The key, in three places it could leak, and what is done:

* a reply that holds it (a server echoing it): every string of the
  :class:`~agentloop.ModelReply` (text, call names, ids, argument keys and
  values at any depth, argument errors) is passed through
  :func:`~agentloop.models.http.redact` (the key as it is, in base64, cut at
  an edge; Anthropic's text blocks are joined first, so a key split across
  two is whole again); a string that still holds it behind an escape
  (``\\u``, ``%XX``, a JSON string inside a JSON string) makes the reply a
  :class:`~agentloop.errors.ModelResponseError` that does not quote it, which
  the loop records as a ``model_error``;
* a pickle (adapters sent to worker processes): an adapter pickles without
  its key and re-reads it from the environment variable it came from
  (``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``) when unpickled, so a worker
  uses its own environment.  A key given directly (``api_key="sk-..."``),
  or a header value treated as a secret (8 characters or more), cannot be
  re-read, so pickling such an adapter raises ``TypeError`` naming the way
  out instead of writing the secret into the pickle.  (``api_key=""``, no
  key, pickles.)
* text printed or recorded from an error: see :mod:`agentloop.models.http`.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import json
import os
import urllib.parse
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..canonical import canonical_bytes, strict_loads
from ..errors import ModelConfigError, ModelResponseError, NotPicklableError, UnrecordableError
from ..messages import Message, ModelReply, ToolCall, Usage
from ..tools.providers import anthropic_tool, openai_tool, responses_tool
from .http import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    Collector,
    HttpTransport,
    Notice,
    RetryPolicy,
    endpoint_host,
    holds_secret,
    redact,
)
from .streaming import TextRelay

__all__ = [
    "base_url_from",
    "api_key_from",
    "check_params",
    "extra_headers",
    "make_transport",
    "ToolShapes",
    "Reader",
    "usage_from",
    "read_arguments",
    "ARGUMENTS_QUOTED_CHARS",
    "join_url",
    "scrub_reply",
    "system_prompt",
    "Adapter",
]

#: How much of unreadable arguments the error quotes back to the model.
ARGUMENTS_QUOTED_CHARS = 200


def base_url_from(base_url: Optional[str], env_var: str, default: str) -> str:
    """The base URL: the argument, else ``$env_var``, else ``default``; without a trailing ``/``.

    It must be ``http`` or ``https`` with a host, and hold no credentials
    (``user:password@``): the key goes in its header, never in a URL.
    """
    chosen = base_url if base_url is not None else os.environ.get(env_var) or default
    source = "" if base_url is not None else " ($%s)" % (env_var,) if os.environ.get(env_var) else " (the default)"
    if not isinstance(chosen, str):
        raise ModelConfigError("base_url", "must be a str, got %s" % (type(chosen).__name__,))
    try:  # "http://[::1/v1", and a bracketed host that is no IPv6 address (which Python 3.8 lets through)
        parts = urllib.parse.urlsplit(chosen)
        if "[" in parts.netloc:
            ipaddress.IPv6Address((parts.hostname or "").split("%")[0])
    except ValueError:  # its words may quote the URL, which may hold a key
        raise ModelConfigError("base_url", "is not a URL that can be read (a bracketed host?)%s" % (source,)) from None
    # Credentials first, and never the whole URL in an error: it may hold a key (user:password@, a query).
    if "@" in parts.netloc:
        raise ModelConfigError(
            "base_url", "must not hold credentials (user:password@)%s; pass api_key= instead" % (source,)
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModelConfigError(
            "base_url",
            "must be an http:// or https:// URL with a host%s, got scheme %s and %s"
            % (
                source,
                json.dumps(parts.scheme[:20]),
                "host " + json.dumps(parts.hostname[:100]) if parts.hostname else "no host",
            ),
        )
    if parts.fragment:
        raise ModelConfigError("base_url", "must not have a #fragment")
    try:
        parts.port
    except ValueError:
        raise ModelConfigError("base_url", "has a bad port") from None
    return urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip("/")))


def join_url(base_url: str, path: str) -> str:
    """``base_url`` with ``path`` appended to its path, its query kept after it
    (``https://h/v1?api-version=2`` + ``/chat/completions`` ->
    ``https://h/v1/chat/completions?api-version=2``)."""
    parts = urllib.parse.urlsplit(base_url)
    return urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip("/") + path))


def api_key_from(api_key: Optional[str], env_var: str, required: bool) -> str:
    """The API key: the argument, else ``$env_var``; ``""`` when there is none and none is ``required``.

    Surrounding whitespace is dropped; a key with whitespace or control
    characters inside is refused without being shown.
    """
    key = api_key if api_key is not None else os.environ.get(env_var, "")
    if not isinstance(key, str):
        raise ModelConfigError("api_key", "must be a str, got %s" % (type(key).__name__,))
    key = key.strip()
    if not key and required:
        raise ModelConfigError("api_key", "no API key: pass api_key= or set %s" % (env_var,))
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in key) or not _latin1(key):
        raise ModelConfigError(
            "api_key", "the key holds whitespace, control or non-Latin-1 characters (it is not shown)"
        )
    return key


def _latin1(text: str) -> bool:
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def check_params(params: Optional[Mapping[str, Any]], reserved: Sequence[str]) -> Dict[str, Any]:
    """Extra request-body parameters (``temperature``, ...): plain JSON, none of the ``reserved`` names."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise ModelConfigError("params", "must be a mapping, got %s" % (type(params).__name__,))
    taken = sorted(name for name in params if name in reserved)
    if taken:
        raise ModelConfigError("params", "%s is set by the adapter itself" % (", ".join(repr(n) for n in taken),))
    try:
        canonical_bytes(dict(params), "$.params", depth=3)
    except UnrecordableError as exc:
        raise ModelConfigError("params", str(exc)) from None
    result: Dict[str, Any] = json.loads(json.dumps(dict(params)))
    return result


def extra_headers(headers: Optional[Mapping[str, str]]) -> Dict[str, str]:
    """Extra request headers: names and values must be str."""
    if headers is None:
        return {}
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ModelConfigError("headers", "must map header names to str values")
    for name, value in headers.items():
        # Refused here, not sent: http.client would raise with the value in
        # its message, and a header may hold a secret (an Azure api-key).
        if not name or not _latin1(name) or any(ord(ch) < 33 or ord(ch) == 127 or ch == ":" for ch in name):
            raise ModelConfigError("headers", "a header name is not a valid HTTP token (it is not shown)")
        if not _latin1(value) or any(ord(ch) < 32 and ch != "\t" or ord(ch) == 127 for ch in value):
            raise ModelConfigError(
                "headers",
                "the value of header %s holds control or non-Latin-1 characters (it is not shown)"
                % (json.dumps(name),),
            )
    return dict(headers)


def make_transport(
    transport: Optional[HttpTransport], timeout: float, max_retries: int, on_retry: Optional[Notice] = None
) -> HttpTransport:
    """The adapter's transport: the one given, else one with ``timeout``, ``max_retries`` and ``on_retry``."""
    if transport is None:
        return HttpTransport(timeout=timeout, retry=RetryPolicy(max_retries=max_retries), on_retry=on_retry)
    if not isinstance(transport, HttpTransport):
        raise ModelConfigError("transport", "must be an HttpTransport, got %s" % (type(transport).__name__,))
    if timeout != DEFAULT_TIMEOUT or max_retries != DEFAULT_MAX_RETRIES or on_retry is not None:
        raise ModelConfigError(
            "transport", "give timeout, max_retries and on_retry to the HttpTransport, not beside it"
        )
    return transport


class Endpoint:
    """What both adapters hold about where and how they call: checked once, when built.

    ``model`` names the model, ``base_url``/``host`` where it is served, the
    key (never shown; required only for ``official_host``), ``system``,
    fixed body ``params`` (none of ``reserved``), extra ``headers``, the
    transport, and the tool shapes of ``style``.
    """

    def __init__(
        self,
        model: object,
        *,
        base_url: Optional[str],
        api_key: Optional[str],
        system: object,
        params: Optional[Mapping[str, Any]],
        headers: Optional[Mapping[str, str]],
        timeout: float,
        max_retries: int,
        transport: Optional[HttpTransport],
        on_retry: Optional[Notice] = None,
        base_url_env: str = "",
        default_base_url: str = "",
        api_key_env: str = "",
        official_host: str = "",
        reserved: Sequence[str] = (),
        style: str = "openai",
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ModelConfigError("model", "must be a non-empty str naming the model")
        if system is not None and not isinstance(system, str):
            raise ModelConfigError("system", "must be a str or None, got %s" % (type(system).__name__,))
        self.model: str = model
        self.base_url = base_url_from(base_url, base_url_env, default_base_url)
        self.host = endpoint_host(self.base_url)
        self.key = api_key_from(api_key, api_key_env, required=self.host == official_host)
        # Where the key came from, so that a pickle can leave it out and re-read it.
        self.key_env: Optional[str] = api_key_env if api_key is None else None
        self.required = self.host == official_host
        self.system: Optional[str] = system
        self.params = check_params(params, reserved)
        self.headers = extra_headers(headers)
        self.transport = make_transport(transport, timeout, max_retries, on_retry)
        self.tools = ToolShapes(style)
        # Redacted from every error text: the key, and header values long enough to be secrets.
        self.secrets: List[str] = [self.key] + [v for v in self.headers.values() if len(v) >= 8]

    def __getstate__(self) -> Dict[str, Any]:
        return _keyless_state(self.__dict__, "Endpoint", self.key_env, self.secrets, "key", "secrets")

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.key = _reread_key(self.key_env, self.required)
        self.secrets = [self.key]


def _keyless_state(
    attributes: Dict[str, Any],
    owner: str,
    key_env: Optional[str],
    secrets: Sequence[str],
    key_name: str,
    secrets_name: str,
) -> Dict[str, Any]:
    """An object's attributes for a pickle, without its key; :class:`NotPicklableError` when
    the key (or a secret header) could not be re-read where it is unpickled."""
    if secrets[1:]:
        raise NotPicklableError(
            owner,
            "a header value of 8 characters or more is treated as a secret and cannot be"
            " re-read from the environment; build the adapter in the process that uses it",
        )
    if secrets and secrets[0] and key_env is None:
        raise NotPicklableError(
            owner,
            "its API key was given as api_key= and would be written into the pickle;"
            " build it without api_key= so that it reads the key from the environment where it is unpickled",
        )
    state = dict(attributes)
    state[key_name] = ""
    state[secrets_name] = []
    return state


def _reread_key(key_env: Optional[str], required: bool) -> str:
    """The key of an unpickled adapter: from ``key_env`` in this process, or none."""
    return "" if key_env is None else api_key_from(None, key_env, required)


class Adapter:
    """What the adapters share besides their :class:`Endpoint`: keyless pickling,
    the scrubbed reply, streaming, ``acall``.

    ``stream=True`` asks the API for a stream of server-sent events
    (:mod:`agentloop.models.streaming`), rebuilt into the reply the request
    would have got unstreamed, so that the turn is recorded the same bytes;
    ``on_text``, when given, is called with the reply's text as it arrives
    (the key redacted; not pickled); an exception it raises ends the call,
    raised as it is, and the request is not sent again.  Neither is recorded: how a reply
    travelled changes nothing in the transcript.
    """

    provider = ""
    host = ""
    stream = False
    on_text: Optional[Callable[[str], None]] = None
    _key = ""
    _key_env: Optional[str] = None
    _required = False
    _secrets: List[str] = []

    def _take(self, end: Endpoint) -> None:
        self.model, self.base_url, self.host, self._key = end.model, end.base_url, end.host, end.key
        self.system, self.params, self._extra_headers = end.system, end.params, end.headers
        self.transport, self._tools, self._secrets = end.transport, end.tools, end.secrets
        self._key_env, self._required = end.key_env, end.required

    def _streaming(self, stream: object, on_text: object) -> None:
        if not isinstance(stream, bool):
            raise ModelConfigError("stream", "must be True or False, got %s" % (type(stream).__name__,))
        if on_text is not None and not callable(on_text):
            raise ModelConfigError("on_text", "must be None or a callable taking each piece of text")
        self.stream, self.on_text = stream, on_text

    @property
    def url(self) -> str:
        """The endpoint requests go to."""
        raise NotImplementedError

    def headers(self) -> Dict[str, str]:
        """The request headers (with the key: do not print them)."""
        raise NotImplementedError

    def _post(
        self,
        body: Dict[str, Any],
        collector: Callable[[str, str, TextRelay], Collector],
        stream_body: Optional[Mapping[str, Any]] = None,
    ) -> Dict[str, Any]:
        """The answer to ``body``: posted as it is, or, with ``stream``, with ``stream_body``'s
        members added and read through ``collector`` (the API's answer either way)."""
        if not self.stream:
            return self.transport.post_json(
                self.url, self.headers(), body, provider=self.provider, secrets=self._secrets
            )
        headers = {k: v for k, v in self.headers().items() if k.lower() != "accept"}
        headers["Accept"] = "text/event-stream"
        relay = TextRelay(self.on_text, self._secrets)
        return self.transport.post_stream(
            self.url,
            headers,
            dict(body, **(stream_body or {"stream": True})),
            lambda: collector(self.provider, self.host, relay),
            provider=self.provider,
            secrets=self._secrets,
        )

    def __getstate__(self) -> Dict[str, Any]:
        state = _keyless_state(self.__dict__, type(self).__name__, self._key_env, self._secrets, "_key", "_secrets")
        state.pop("on_text", None)
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._key = _reread_key(self._key_env, self._required)
        self._secrets = [self._key]

    def _reply(self, reply: ModelReply) -> ModelReply:
        return scrub_reply(reply, self._secrets, self.provider, self.host)

    def __call__(self, messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
        raise NotImplementedError

    async def acall(self, messages: List[Message], manifest: List[Dict[str, Any]]) -> ModelReply:
        """The same call, awaited: the blocking request runs in the event loop's
        default executor (a thread), so other tasks run meanwhile (for ``run_async``)."""
        loop = asyncio.get_event_loop()
        call: Callable[[], ModelReply] = functools.partial(self, messages, manifest)
        return await loop.run_in_executor(None, call)


def system_prompt(messages: List[Message], default: Optional[str]) -> Tuple[Optional[str], List[Message]]:
    """``(system prompt, the other messages)``: a leading ``{"role": "system",
    "content": str}`` message (how the loop passes ``run(system=...)``)
    overrides the adapter's own ``system``."""
    if messages and isinstance(messages[0], dict) and messages[0].get("role") == "system":
        content = messages[0].get("content")
        if not isinstance(content, str):
            raise ModelConfigError("messages", "messages[0] is a system message whose content is not a str")
        return content, list(messages[1:])
    return default, messages


def _scrub(value: Any, secrets: Sequence[str], where: str) -> Any:
    if isinstance(value, str):
        clean = redact(value, secrets)
        if holds_secret(clean, secrets):
            raise ValueError(where)
        return clean
    if isinstance(value, dict):
        return {_scrub(k, secrets, where): _scrub(v, secrets, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, secrets, where) for v in value]
    return value


def scrub_reply(reply: ModelReply, secrets: Sequence[str], provider: str, host: str) -> ModelReply:
    """``reply`` with every secret redacted from every string it holds, or a
    :class:`~agentloop.errors.ModelResponseError` (which does not quote it)
    when a secret hides behind an escape and cannot be cut out."""
    hidden = [s for s in secrets if s]
    if not hidden:
        return reply
    try:
        calls = [
            ToolCall(
                _scrub(call.name, hidden, "$.tool_calls[%d].name" % i),
                _scrub(call.arguments, hidden, "$.tool_calls[%d].arguments" % i),
                _scrub(call.id, hidden, "$.tool_calls[%d].id" % i),
                _scrub(call.arguments_error, hidden, "$.tool_calls[%d].arguments_error" % i),
            )
            for i, call in enumerate(reply.tool_calls)
        ]
        text = _scrub(reply.text, hidden, "$.text")
        data = _scrub(reply.provider_data, hidden, "$.provider_data")
    except ValueError as exc:
        raise ModelResponseError(
            provider,
            host,
            str(exc),
            "the reply holds the API key (or a secret header) in an escaped form; refused, not recorded",
        ) from None
    return ModelReply(text, calls, reply.usage, reply.truncated, data)


class ToolShapes:
    """The loop's manifest (its entries as plain dicts) as one provider's
    ``tools`` array, ``style="openai"``, ``"responses"`` or ``"anthropic"`` (see
    :mod:`agentloop.tools.providers`); converted once per distinct manifest."""

    def __init__(self, style: str) -> None:
        self.style = style
        self._key = b""
        self._tools: List[Dict[str, Any]] = []

    def __call__(self, manifest: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        key = canonical_bytes(manifest)
        if key != self._key or not manifest:
            shape = {"openai": openai_tool, "responses": responses_tool}.get(self.style, anthropic_tool)
            try:
                self._tools = [shape(entry) for entry in manifest]
            except (KeyError, TypeError) as exc:
                raise ModelConfigError(
                    "manifest", "each entry needs name, description and parameters (%s)" % (exc,)
                ) from None
            self._key = key
        return json.loads(json.dumps(self._tools))  # type: ignore[no-any-return]


class Reader:
    """Reads a response body, naming the place of anything unexpected."""

    def __init__(self, provider: str, host: str) -> None:
        self.provider = provider
        self.host = host

    def fail(self, path: str, reason: str) -> ModelResponseError:
        return ModelResponseError(self.provider, self.host, path, reason)

    def get(self, obj: Mapping[str, Any], key: str, path: str, kind: type, optional: bool = False) -> Any:
        """``obj[key]`` if it is a ``kind`` (a bool is never an int); ``None`` if absent or null and ``optional``."""
        value = obj.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
            got = "nothing" if key not in obj else "null" if value is None else type(value).__name__
            raise self.fail("%s.%s" % (path, key), "expected %s, got %s" % (kind.__name__, got))
        return value


def usage_from(
    answer: Mapping[str, Any],
    input_key: str,
    output_key: str,
    cache_read: Sequence[str] = (),
    cache_write: Sequence[str] = (),
    cache_included: bool = False,
    read: Optional[Reader] = None,
    reasoning: str = "",
) -> Optional[Usage]:
    """``answer["usage"]`` as a :class:`~agentloop.Usage`; ``None`` when absent, null, or without either count.

    ``input_key`` and ``output_key`` name the prompt and reply counts;
    ``cache_read``/``cache_write`` are paths (dotted, e.g.
    ``prompt_tokens_details.cached_tokens``) to the cached-prompt counts
    (absent or null ones are 0).  ``Usage.input_tokens`` always holds the
    whole prompt: when the provider counts cached tokens apart from
    ``input_key`` (Anthropic), they are added to it; when its input count
    already includes them (``cache_included``, OpenAI), they are not.
    ``reasoning`` is the path to the count of reasoning tokens (part of the
    output; absent or null is 0).

    A usage the provider sent that cannot be read (a count that is not a
    non-negative integer, more cached tokens than the prompt, a count beyond
    2**53-1) raises ``read``'s :class:`~agentloop.errors.ModelResponseError`:
    the token and cost budgets cannot be kept on a guess.  Without ``read``
    it gives ``None``, as before.
    """
    usage = answer.get("usage")
    if usage is None:
        return None

    def bad(path: str, reason: str) -> Optional[Usage]:
        if read is None:
            return None
        raise read.fail(path, reason)

    if not isinstance(usage, dict):
        return bad("$.usage", "expected an object, got %s" % (type(usage).__name__,))
    if usage.get(input_key) is None and usage.get(output_key) is None:
        return None  # {} or {"total_tokens": ...} from some compatible servers: no count, as if absent

    def count(path: str, default: Optional[int]) -> Optional[int]:
        return _token_count(usage, path, default, bad)

    raw = [count(input_key, None), count(output_key, None)]
    reads = [count(k, 0) for k in cache_read]
    writes = [count(k, 0) for k in cache_write]
    thought = [count(reasoning, 0)] if reasoning else [0]
    if None in raw + reads + writes + thought:
        return None
    read_tokens, written = sum(n or 0 for n in reads), sum(n or 0 for n in writes)
    prompt = (raw[0] or 0) if cache_included else (raw[0] or 0) + read_tokens + written
    if read_tokens + written > prompt:
        return bad("$.usage", "%d cached tokens is more than the prompt's %d" % (read_tokens + written, prompt))
    if (thought[0] or 0) > (raw[1] or 0):
        return bad(
            "$.usage." + reasoning, "%d reasoning tokens is more than the output's %d" % (thought[0] or 0, raw[1] or 0)
        )
    try:
        return Usage(
            prompt,
            raw[1] or 0,
            cache_read_tokens=read_tokens,
            cache_write_tokens=written,
            reasoning_tokens=thought[0] or 0,
        )
    except (TypeError, ValueError):  # beyond 2**53-1
        return bad("$.usage", "a token count beyond 2**53-1")


def _token_count(
    usage: Mapping[str, Any], path: str, default: Optional[int], bad: Callable[[str, str], Any]
) -> Optional[int]:
    """The count at the dotted ``path`` of ``usage``: an integer >= 0 (an integral float taken as one),
    ``default`` when absent or null (if there is one), else ``bad(place, reason)`` and ``None``."""
    value: Any = usage
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None and default is not None:
        return default
    if isinstance(value, float) and value.is_integer():  # 100000.0 from some compatible servers
        value = int(value)
    if type(value) is not int or value < 0:
        bad(
            "$.usage." + path,
            "expected a token count (an integer >= 0), got %s"
            % (
                "nothing"
                if value is None
                else json.dumps(value)
                if isinstance(value, (int, float, str))
                else type(value).__name__,
            ),
        )
        return None
    return value


def _quoted(text: str) -> str:
    cut = text if len(text) <= ARGUMENTS_QUOTED_CHARS else text[:ARGUMENTS_QUOTED_CHARS] + "..."
    return json.dumps(cut)  # ASCII, escaped: safe to record and to print


def _json_kind(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "an array" if isinstance(value, list) else "a string"


def read_arguments(text: object) -> Tuple[Dict[str, Any], str]:
    """Tool-call arguments sent as a JSON string: ``(object, "")``, or ``({}, why not)``.

    The error text is what the loop records as ``arguments_error`` and shows
    the model, so it says what was wrong and quotes (the start of) what was
    sent.  An empty or all-blank string is taken as no arguments, ``{}``
    (some OpenAI-compatible servers send that for a tool without parameters),
    and so is an object sent as is instead of as a string.
    """
    if isinstance(text, dict):  # a few compatible servers send the object itself
        return text, ""
    if not isinstance(text, str):
        return {}, "arguments must be a string of JSON, got %s" % (_json_kind(text),)
    if not text.strip():
        return {}, ""
    try:
        value = strict_loads(text)
    except RecursionError:
        return {}, "arguments are not valid JSON (nested too deeply): %s" % (_quoted(text),)
    except ValueError as exc:
        return {}, "arguments are not valid JSON (%s): %s" % (exc, _quoted(text))
    if not isinstance(value, dict):
        return {}, "arguments must be a JSON object, got %s: %s" % (_json_kind(value), _quoted(text))
    return value, ""
