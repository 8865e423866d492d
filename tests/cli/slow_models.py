"""Models for tests/cli/test_signals.py: importable by ``--model tests.cli.slow_models:NAME``."""

from __future__ import annotations

import time
from typing import Any, List

from agentloop import ModelReply


def sleeper() -> Any:
    """A model whose every call sleeps a minute: the run is in its model call when a signal comes."""

    def model(messages: List[Any], manifest: Any) -> ModelReply:
        time.sleep(60)
        return ModelReply("too late")

    return model
