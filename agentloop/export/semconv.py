"""The OpenTelemetry semantic conventions the span exporter follows: one version, every name it uses.

The GenAI conventions are marked *Development*, so they are pinned here, and
nowhere else: :data:`SEMCONV_VERSION` names the release, and every attribute
name :mod:`.otel` writes is one of the constants below, listed again in
:data:`GEN_AI_ATTRIBUTES`, :data:`GENERAL_ATTRIBUTES` and
:data:`AGENTLOOP_ATTRIBUTES` (the interop leg ``.ci/interop-observe`` checks
the first two against the registry of that release).

Source: open-telemetry/semantic-conventions, tag ``v1.41.1`` (commit
ead83b9b0fa36540c1642fce46e874f002ac23f1), the last release whose repository
held the GenAI conventions (v1.42.0 moved them to their own repository):

* ``docs/gen-ai/gen-ai-agent-spans.md`` "Invoke agent internal span" (the run);
* ``docs/gen-ai/gen-ai-spans.md`` "Inference" (a model turn) and "Execute
  tool span" (a tool call); "Recording content on attributes" (content is
  opt-in);
* ``model/gen-ai/registry.yaml`` (the attribute registry);
* ``docs/gen-ai/gen-ai-output-messages.json`` and
  ``gen-ai-input-messages.json`` (the shape of the message attributes).
"""

from __future__ import annotations

from typing import Tuple

__all__ = [
    "SEMCONV_VERSION",
    "SCHEMA_URL",
    "GEN_AI_ATTRIBUTES",
    "CONTENT_ATTRIBUTES",
    "GENERAL_ATTRIBUTES",
    "AGENTLOOP_ATTRIBUTES",
    "ATTRIBUTES",
]

#: The release of the OpenTelemetry semantic conventions followed (GenAI: Development).
SEMCONV_VERSION = "1.41.1"
#: Its schema URL, written as each scope's ``schemaUrl``.
SCHEMA_URL = "https://opentelemetry.io/schemas/" + SEMCONV_VERSION

# --- gen_ai.* (model/gen-ai/registry.yaml) -------------------------------------
OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
CONVERSATION_ID = "gen_ai.conversation.id"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION = "gen_ai.usage.cache_creation.input_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
# Content: opt-in (``--include-content``), as "Recording content on attributes" advises.
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"

# --- general conventions (stable) ----------------------------------------------
ERROR_TYPE = "error.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
SERVICE_NAME = "service.name"

# --- agentloop.* (this project's own namespace) ---------------------------------
RECORD_SEQ = "agentloop.record.seq"
RECORD_HASH = "agentloop.record.hash"
TRANSCRIPT_HEAD = "agentloop.transcript.head"
TRANSCRIPT_RECORDS = "agentloop.transcript.records"
RUN_NAME = "agentloop.run.name"
LEDGER_STATUS = "agentloop.ledger.status"
STOP_REASON = "agentloop.stop.reason"
STEP = "agentloop.step"
STEPS = "agentloop.steps"
TOKENS = "agentloop.tokens"
COST = "agentloop.cost"
APPROVAL_DECISION = "agentloop.approval.decision"

#: Every ``gen_ai.*`` attribute the exporter may write.
GEN_AI_ATTRIBUTES: Tuple[str, ...] = (
    OPERATION_NAME,
    PROVIDER_NAME,
    REQUEST_MODEL,
    CONVERSATION_ID,
    RESPONSE_FINISH_REASONS,
    USAGE_INPUT_TOKENS,
    USAGE_OUTPUT_TOKENS,
    USAGE_CACHE_READ,
    USAGE_CACHE_CREATION,
    TOOL_NAME,
    TOOL_CALL_ID,
    TOOL_TYPE,
    TOOL_DESCRIPTION,
    TOOL_CALL_ARGUMENTS,
    TOOL_CALL_RESULT,
    TOOL_DEFINITIONS,
    SYSTEM_INSTRUCTIONS,
    INPUT_MESSAGES,
    OUTPUT_MESSAGES,
)
#: Those that hold content, written only with ``include_content=True``.
CONTENT_ATTRIBUTES: Tuple[str, ...] = (
    TOOL_CALL_ARGUMENTS,
    TOOL_CALL_RESULT,
    TOOL_DEFINITIONS,
    SYSTEM_INSTRUCTIONS,
    INPUT_MESSAGES,
    OUTPUT_MESSAGES,
)
#: The general (non-GenAI) convention attributes it may write.
GENERAL_ATTRIBUTES: Tuple[str, ...] = (ERROR_TYPE, SERVER_ADDRESS, SERVER_PORT, SERVICE_NAME)
#: Its own attributes, in the ``agentloop.`` namespace.
AGENTLOOP_ATTRIBUTES: Tuple[str, ...] = (
    RECORD_SEQ,
    RECORD_HASH,
    TRANSCRIPT_HEAD,
    TRANSCRIPT_RECORDS,
    RUN_NAME,
    LEDGER_STATUS,
    STOP_REASON,
    STEP,
    STEPS,
    TOKENS,
    COST,
    APPROVAL_DECISION,
)
#: All of them: no other attribute name appears in an export.
ATTRIBUTES: Tuple[str, ...] = GEN_AI_ATTRIBUTES + GENERAL_ATTRIBUTES + AGENTLOOP_ATTRIBUTES
