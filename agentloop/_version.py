"""The version of agentloop: its one home, read by ``pyproject.toml`` and the package."""

__version__ = "0.3.1"
