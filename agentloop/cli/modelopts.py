"""The provider options ``run`` and ``resume`` share: ``--thinking``, ``--cache``, ``--prompt-cache-key``.

They change the requests, so the adapter records them in the task record's
``model`` (:func:`agentloop.models.spec.model_from_spec` builds it): a run is
resumed with the options it was run with, or ``resume`` refuses it.
"""

from __future__ import annotations

import argparse
from typing import Any, Dict

from .output import count_arg

__all__ = ["add_model_options", "model_options"]


def add_model_options(command: argparse.ArgumentParser) -> None:
    """Register the options on ``command``."""
    command.add_argument("--thinking", type=count_arg, metavar="N",
                         help="anthropic: extended thinking with a budget of N tokens (from 1024, below --max-output-tokens)")
    command.add_argument("--cache", action="store_true",
                         help="anthropic: place prompt-cache breakpoints (the tools, the system prompt, the newest turn)")
    command.add_argument("--prompt-cache-key", metavar="KEY", help="openai, openai-responses: the prompt_cache_key of every request")


def model_options(args: argparse.Namespace) -> Dict[str, Any]:
    """The options as :func:`~agentloop.models.spec.model_from_spec` keywords."""
    return {"thinking": args.thinking, "cache": args.cache, "prompt_cache_key": args.prompt_cache_key}
