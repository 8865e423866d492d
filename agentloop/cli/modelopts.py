"""The provider options ``run`` and ``resume`` share: ``--thinking``, ``--cache``, ``--prompt-cache-key``
and ``--stream``, and the live text a streamed reply shows on standard error.

The first three change the requests, so the adapter records them in the task
record's ``model`` (:func:`agentloop.models.spec.model_from_spec` builds
it): a run is resumed with the options it was run with, or ``resume``
refuses it.  ``--stream`` changes only how replies travel (a streamed turn is
recorded the same bytes), so it is not recorded; it is on by default when
standard error is a terminal.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Dict, Optional

from .output import count_arg, live

__all__ = ["add_model_options", "model_options", "live_text", "LiveText"]


class LiveText:
    """The text of a streamed reply on standard error, as it arrives, made :func:`~.output.visible`
    (newlines and tabs kept); :meth:`end` finishes its line before anything else is printed.
    Never raises: standard error that cannot be written loses the live text, nothing else."""

    def __init__(self) -> None:
        self.open = False

    def __call__(self, text: str) -> None:
        live(text)
        self.open = not text.endswith("\n")

    def end(self) -> None:
        if self.open:
            live("\n")
            self.open = False

    def before(self, then: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``then``, with the live text's line ended first (for ``on_record`` and ``on_retry``)."""

        def ended(value: Any) -> Any:
            self.end()
            return then(value)

        return ended


def add_model_options(command: argparse.ArgumentParser) -> None:
    """Register the options on ``command``."""
    command.add_argument(
        "--thinking",
        type=count_arg,
        metavar="N",
        help="anthropic: extended thinking with a budget of N tokens (from 1024, below --max-output-tokens)",
    )
    command.add_argument(
        "--cache",
        action="store_true",
        help="anthropic: place prompt-cache breakpoints (the tools, the system prompt, the newest two turns)",
    )
    command.add_argument(
        "--prompt-cache-key", metavar="KEY", help="openai, openai-responses: the prompt_cache_key of every request"
    )
    shown = command.add_mutually_exclusive_group()
    shown.add_argument(
        "--stream",
        dest="stream",
        action="store_true",
        default=None,
        help="stream each reply and show its text on stderr as it arrives (default when stderr is a terminal)",
    )
    shown.add_argument("--no-stream", dest="stream", action="store_false", help="ask for whole replies")


def live_text(args: argparse.Namespace) -> Optional[LiveText]:
    """The live text of a run that streams (``--stream``, or by default a terminal on stderr), else ``None``."""
    stream = args.stream
    if stream is None:
        try:
            stream = sys.stderr is not None and sys.stderr.isatty()
        except (OSError, ValueError):
            stream = False
    return LiveText() if stream else None


def model_options(args: argparse.Namespace, live: Optional[LiveText] = None) -> Dict[str, Any]:
    """The options as :func:`~agentloop.models.spec.model_from_spec` keywords (``live``: stream, and show the text)."""
    return {
        "thinking": args.thinking,
        "cache": args.cache,
        "prompt_cache_key": args.prompt_cache_key,
        "stream": live is not None,
        "on_text": live,
    }
