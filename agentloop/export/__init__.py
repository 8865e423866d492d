"""Exports: a verified run, or a batch, where people already look.

Modules, importing downhill in this order:

* :mod:`~agentloop.export.semconv` -- the OpenTelemetry conventions followed:
  their version and every attribute name used, in one place;
* :mod:`~agentloop.export.run` -- :func:`read_run`, a transcript read and
  verified in one pass (one that does not verify is never exported);
* :mod:`~agentloop.export.batch` -- :func:`read_batch`, a batch's runs once
  its ledger's verdict (:func:`agentloop.batch.audit_batch`) holds;
* :mod:`~agentloop.export.otel` -- OpenTelemetry GenAI spans as an OTLP/JSON
  ``ExportTraceServiceRequest``;
* :mod:`~agentloop.export.inspect_log` -- an Inspect AI eval log (JSON);
* :mod:`~agentloop.export.otlp_http` -- sending spans to an OTLP/HTTP collector.

``docs/observability.md`` says what each holds and how to use it.
"""

from __future__ import annotations

from .batch import Batch, batch_problems, load_batch, read_batch
from .inspect_log import INSPECT_LOG_VERSION, inspect_json, inspect_log, is_inspect_export
from .otel import is_otel_export, otel_json, otel_request
from .otlp_http import Sent, collector, send_otlp
from .run import FailedRun, Run, read_run
from .semconv import SCHEMA_URL, SEMCONV_VERSION

__all__ = [
    "SEMCONV_VERSION",
    "SCHEMA_URL",
    "INSPECT_LOG_VERSION",
    "Run",
    "FailedRun",
    "read_run",
    "Batch",
    "load_batch",
    "read_batch",
    "batch_problems",
    "otel_request",
    "otel_json",
    "is_otel_export",
    "inspect_log",
    "inspect_json",
    "is_inspect_export",
    "send_otlp",
    "collector",
    "Sent",
]
