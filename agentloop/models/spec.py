"""Model references: ``openai:MODEL``, ``openai-responses:MODEL``, ``anthropic:MODEL``, a base URL,
or ``MODULE:FACTORY``.

Shared by the command line (``agentloop run``, ``agentloop batch``) and
:func:`agentloop.batch.run_many`, whose workers resolve the reference
themselves so that no model object, and no API key, crosses a process
boundary.  Keys come from the resolving process's environment.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Optional

from ..errors import RunConfigError
from ..messages import Model
from ..tools.loader import import_reference
from .anthropic import DEFAULT_MAX_TOKENS, AnthropicMessages
from .http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from .openai import OpenAIChat
from .responses import OpenAIResponses

__all__ = ["model_from_spec"]

_PROVIDERS = ("openai", "openai-responses", "anthropic")


def _from_factory(spec: str, options: bool) -> Model:
    """``MODULE:FACTORY`` -> ``FACTORY()``, a fresh model per call (a model may keep state per run)."""
    if options:
        raise RunConfigError("--model", "a MODULE:FACTORY model takes no model options (--base-url, --system, ...)")
    factory = import_reference(spec, "--model", "mymodels:make_model")
    if not callable(factory):
        raise RunConfigError("--model", "%s is a %s, not a factory" % (json.dumps(spec), type(factory).__name__))
    try:
        model = factory()
    except Exception as exc:
        raise RunConfigError("--model", "%s() raised %s" % (spec, type(exc).__name__)) from None
    if not callable(model):
        raise RunConfigError("--model", "%s() returned a %s, not a model" % (spec, type(model).__name__))
    return model  # type: ignore[no-any-return]


def _check_options(
    provider: str,
    max_output_tokens: Optional[int],
    thinking: Optional[int],
    cache: bool,
    prompt_cache_key: Optional[str],
) -> None:
    """Each provider option only with a provider that has it."""
    if max_output_tokens is not None and provider == "openai":
        raise RunConfigError("--max-output-tokens", "only goes with anthropic: and openai-responses: models")
    if provider != "anthropic":
        if thinking is not None:
            raise RunConfigError(
                "--thinking", "only goes with anthropic: models (for OpenAI reasoning, use openai-responses:)"
            )
        if cache:
            raise RunConfigError(
                "--cache", "only goes with anthropic: models (OpenAI caches prompts itself: give --prompt-cache-key)"
            )
    elif prompt_cache_key is not None:
        raise RunConfigError(
            "--prompt-cache-key",
            "only goes with openai:, openai-responses: and URL models (for anthropic: give --cache)",
        )


def model_from_spec(
    spec: str,
    *,
    base_url: Optional[str] = None,
    model_name: Optional[str] = None,
    max_output_tokens: Optional[int] = None,
    system: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    thinking: Optional[int] = None,
    cache: bool = False,
    prompt_cache_key: Optional[str] = None,
    stream: bool = False,
    on_text: Optional[Callable[[str], None]] = None,
) -> Model:
    """A model from its reference.

    ``openai:MODEL`` (Chat Completions), ``openai-responses:MODEL`` (the
    Responses API), ``anthropic:MODEL`` or an OpenAI-compatible base URL
    (with ``model_name``) -> an adapter; ``MODULE:FACTORY`` (any module but
    those) -> ``FACTORY()``, called anew on every resolution.  ``thinking``
    (a budget of tokens) and ``cache`` go with ``anthropic:`` only,
    ``prompt_cache_key`` with the OpenAI ones.  ``stream`` and ``on_text``
    go to every adapter (a factory's model streams or not as it likes).
    Raises :class:`~agentloop.errors.RunConfigError`.
    """
    live: Dict[str, Any] = {"stream": stream, "on_text": on_text}
    if spec.startswith(("http://", "https://")):
        if base_url is not None:
            raise RunConfigError("--base-url", "the model is already a URL")
        if not model_name:
            raise RunConfigError(
                "--model-name", "an OpenAI-compatible URL needs --model-name (the name the server knows)"
            )
        _check_options("openai", max_output_tokens, thinking, cache, prompt_cache_key)
        # A bare URL is someone else's server: never send it $OPENAI_API_KEY
        # (use openai:NAME --base-url URL to send that key on purpose).
        return OpenAIChat(
            model_name,
            base_url=spec,
            api_key="",
            system=system,
            timeout=timeout,
            max_retries=max_retries,
            prompt_cache_key=prompt_cache_key,
            **live,
        )
    provider, sep, name = spec.partition(":")
    if sep and name and provider and provider not in _PROVIDERS:
        options = (base_url, model_name, max_output_tokens, system, thinking, prompt_cache_key) != (None,) * 6 or cache
        return _from_factory(spec, options or (timeout, max_retries) != (DEFAULT_TIMEOUT, DEFAULT_MAX_RETRIES))
    if not sep or not name or provider not in _PROVIDERS:
        raise RunConfigError(
            "--model",
            "must be openai:MODEL, openai-responses:MODEL, anthropic:MODEL, an http(s):// base URL or MODULE:FACTORY, "
            "got %s" % (json.dumps(spec),),
        )
    if model_name is not None:
        raise RunConfigError("--model-name", "only goes with a URL --model")
    if max_output_tokens is not None and (
        isinstance(max_output_tokens, bool) or not isinstance(max_output_tokens, int) or max_output_tokens < 1
    ):
        raise RunConfigError("--max-output-tokens", "must be a positive int, got %r" % (max_output_tokens,))
    _check_options(provider, max_output_tokens, thinking, cache, prompt_cache_key)
    if provider == "openai":
        return OpenAIChat(
            name,
            base_url=base_url,
            system=system,
            timeout=timeout,
            max_retries=max_retries,
            prompt_cache_key=prompt_cache_key,
            **live,
        )
    if provider == "openai-responses":
        params = None if max_output_tokens is None else {"max_output_tokens": max_output_tokens}
        return OpenAIResponses(
            name,
            base_url=base_url,
            system=system,
            timeout=timeout,
            max_retries=max_retries,
            params=params,
            prompt_cache_key=prompt_cache_key,
            **live,
        )
    return AnthropicMessages(
        name,
        base_url=base_url,
        max_tokens=DEFAULT_MAX_TOKENS if max_output_tokens is None else max_output_tokens,
        system=system,
        timeout=timeout,
        max_retries=max_retries,
        thinking=None if thinking is None else {"type": "enabled", "budget_tokens": thinking},
        cache=cache,
        **live,
    )
