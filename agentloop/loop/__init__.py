"""The run: the budgeted tool loop and everything one run needs.

* :mod:`.engine` -- :func:`run` / :func:`run_async`: model turn -> tool calls
  -> tool results -> repeat, with the stop precedence in its docstring;
* :mod:`.options` -- :class:`RunOptions`, a run's options as one value, and
  the task record written from it and read back into it;
* :mod:`.start` -- every argument checked and record 0 made before any file
  is touched (and record 0 of a planned run, without running it);
* :mod:`.plan` -- a turn's calls read from a reply, before any runs;
* :mod:`.calls` -- running them (serial, parallel, async, timeouts);
* :mod:`.final` -- ``output_schema``'s ``final_result`` tool;
* :mod:`.budgets` and :mod:`.prices` -- the five budgets and exact prices;
* :mod:`.approval` -- a person approving gated calls, and signed decisions;
* :mod:`.resume` -- going on from a paused or interrupted transcript.

This face re-exports the public names; the modules' ``_private`` names are
the folder's own.
"""

from __future__ import annotations

from .approval import ApprovalRequest, Approve, Deny, Modify, Terminate, verify_approvals
from .engine import estimate_tokens, run, run_async
from .options import RunOptions
from .resume import read_pending, resume

__all__ = [
    "run",
    "run_async",
    "RunOptions",
    "estimate_tokens",
    "resume",
    "read_pending",
    "ApprovalRequest",
    "Approve",
    "Deny",
    "Modify",
    "Terminate",
    "verify_approvals",
]
