"""Pages a person reads: one transcript, or a whole batch.

* :mod:`~agentloop.report.page` -- what every page shares: escaping, style, the
  Content-Security-Policy, and how a page agentloop wrote is recognised;
* :mod:`~agentloop.report.run` -- :func:`render_report`, one transcript's page;
* :mod:`~agentloop.report.batch` -- ``render_batch_report`` and
  ``write_batch_report``, a batch's page (the ledger's verdict, then one row
  per run, linking to each run's page).  Import it from there: it reads
  ledgers (:mod:`agentloop.batch`), which ``import agentloop`` does not load.
"""

from __future__ import annotations

from .page import is_report_page
from .run import CheckpointStatus, default_report_path, render_report, write_report

__all__ = ["CheckpointStatus", "render_report", "write_report", "default_report_path", "is_report_page"]
