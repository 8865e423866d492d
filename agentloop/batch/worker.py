"""What a batch ships to an executor: :func:`run_one`, which takes a JSON string and returns one.

Only JSON and strings cross the boundary.  The job names the model and the
tools by reference (:func:`agentloop.models.spec.model_from_spec`,
:func:`agentloop.tools.loader.load_tools`); the worker resolves them in its
own process, so API keys come from the worker's environment and nothing
holding one is ever pickled.

The transcript is written to ``NAME.jsonl.tmp`` and published as
``NAME.jsonl`` (:func:`publish`): a retried task that finds an identical
``NAME.jsonl`` succeeds, a different one is a
:class:`~agentloop.errors.TranscriptExistsError`.  With
``transfer="bytes"`` the worker writes in a private temporary folder and
returns the transcript's bytes (at most ``max_bytes``) for the driver to
publish: for clusters without a shared file system.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from typing import Any, Dict

from ..errors import RunConfigError, TranscriptExistsError
from ..loop.engine import run
from ..models.spec import model_from_spec
from ..tools.loader import load_tools
from ..transcript.durable import fsync_directory
from .spec import RunSpec

__all__ = ["run_one", "make_job", "publish", "transcript_path", "MAX_TRANSFER_BYTES"]

#: The default cap on a transcript returned with ``transfer="bytes"``.
MAX_TRANSFER_BYTES = 64 * 1024 * 1024
_CHUNK = 1 << 20


def transcript_path(out_dir: str, name: str) -> str:
    """Where run ``name``'s transcript lives: ``OUT_DIR/NAME.jsonl``."""
    return os.path.join(out_dir, name + ".jsonl")


def make_job(spec: RunSpec, model: str, tools: str, out_dir: str, transfer: str, max_bytes: int) -> str:
    """The JSON string :func:`run_one` takes."""
    job = {
        "spec": spec.to_json(),
        "model": model,
        "tools": tools,
        "out_dir": out_dir,
        "transfer": transfer,
        "max_bytes": max_bytes,
    }
    return json.dumps(job, sort_keys=True, ensure_ascii=True)


def _same_bytes(a: str, b: str) -> bool:
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as left, open(b, "rb") as right:
        while True:
            chunk = left.read(_CHUNK)
            if chunk != right.read(_CHUNK):
                return False
            if not chunk:
                return True


def publish(temp: str, final: str, durable: bool = False) -> None:
    """Give ``temp`` the name ``final`` without ever replacing a different file.

    1. hard-link ``temp`` to ``final`` (fails if ``final`` exists, so two
       attempts cannot both win) -- or, where links are not supported,
       rename it when ``final`` does not exist;
    2. if ``final`` exists with the same bytes, the work was already done:
       success; with other bytes, :class:`~agentloop.errors.TranscriptExistsError`;
    3. remove ``temp`` (kept, for a look, when ``final`` differs); with
       ``durable``, ``fsync`` the folder.
    """
    try:  # 1.
        os.link(temp, final)
    except FileExistsError:
        if not _same_bytes(temp, final):  # 2.
            raise TranscriptExistsError(final) from None
    except OSError:  # no hard links here (some network or FAT file systems)
        if os.path.lexists(final):
            if not _same_bytes(temp, final):
                raise TranscriptExistsError(final) from None
        else:
            os.replace(temp, final)
    if os.path.lexists(temp):  # 3.
        os.unlink(temp)
    if durable:
        fsync_directory(os.path.dirname(os.path.abspath(final)))


def run_one(job_text: str) -> str:
    """Run one job (from :func:`make_job`) and return a JSON string.

    ``{"name": NAME}`` when the transcript is at ``OUT_DIR/NAME.jsonl``;
    ``{"name": NAME, "data": BASE64}`` with ``transfer="bytes"``.  Every
    failure raises; the driver records only its type.
    """
    job: Dict[str, Any] = json.loads(job_text)
    spec = RunSpec.from_json(job["spec"], "job")
    tools = load_tools(job["tools"], "tools")
    model = model_from_spec(job["model"])
    options = spec.run_options()
    if job["transfer"] == "bytes":
        folder = tempfile.mkdtemp(prefix="agentloop-batch-")
        try:
            path = os.path.join(folder, spec.name + ".jsonl")
            run(spec.task, model, tools, options, transcript=path)
            size = os.path.getsize(path)
            if size > job["max_bytes"]:
                raise RunConfigError(
                    "max_transfer_bytes", "transcript of %d bytes exceeds %d" % (size, job["max_bytes"])
                )
            with open(path, "rb") as handle:
                data = handle.read()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return json.dumps({"name": spec.name, "data": base64.b64encode(data).decode("ascii")})
    final = transcript_path(job["out_dir"], spec.name)
    temp = final + ".tmp"
    run(spec.task, model, tools, options, transcript=temp, overwrite=True)
    publish(temp, final, options.fsync)
    return json.dumps({"name": spec.name})
