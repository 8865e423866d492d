"""``python3 -m agentloop``: see :mod:`agentloop.cli`."""

from __future__ import annotations

import sys

from .cli.main import main

if __name__ == "__main__":
    sys.exit(main())
