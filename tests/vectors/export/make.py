"""Rebuild the export vectors in this folder, byte for byte.

    python3 tests/vectors/export/make.py            # from the repository's root
    python3 tests/vectors/export/make.py --out DIR  # elsewhere, to compare

The inputs are transcripts the real loop writes with scripted models
(tests/export/fixtures.py): the five demo transcripts of demo.py, a run with
every optional member, a run that ends on ``model_error``, and a demo batch
(three runs with tests.support.batch_models, one ``worker_error`` line, a checkpoint
signed with an HMAC key).  The expected exports are written by agentloop's
exporters and were checked by hand (README.md says what was checked);
tests/export/test_vectors.py checks that every export still equals them, and
that this script rebuilds the folder.  A change here is a change to the
exports' format: review the diff of the expected files line by line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, ROOT)

from agentloop.export import inspect_json, otel_json, read_batch, read_run  # noqa: E402 -- after the path is set
from tests.export import fixtures  # noqa: E402

#: The single transcripts, and which of them are also exported with content.
SINGLES = ("answer", "recover", "budget", "parallel", "approval", "members", "model_error")
WITH_CONTENT = ("recover", "approval", "members", "model_error")
#: The Unix time the batch's exports start at (to show --start); the singles start at 0.
BATCH_START = 1_700_000_000


def build(out: str) -> None:
    work = tempfile.mkdtemp(prefix="agentloop-export-vectors-")
    try:
        paths = fixtures.demo_runs(work)
        for name, path in paths.items():
            shutil.copyfile(path, os.path.join(out, name + ".jsonl"))
        fixtures.members_run(os.path.join(out, "members.jsonl"))
        fixtures.model_error_run(os.path.join(out, "model_error.jsonl"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name in SINGLES:
        run = read_run(os.path.join(out, name + ".jsonl"))
        _write(os.path.join(out, name + ".otlp.json"), otel_json([run]))
        _write(os.path.join(out, name + ".inspect.json"), inspect_json([run], dataset=name))
        if name in WITH_CONTENT:
            _write(os.path.join(out, name + ".content.otlp.json"), otel_json([run], include_content=True))
    batch = os.path.join(out, "batch")
    os.mkdir(batch)
    manifest = fixtures.demo_batch(batch)
    with open(os.path.join(out, "batch.key"), "wb") as handle:
        handle.write(fixtures.BATCH_KEY)
    runs = read_batch(manifest, checkpoint=os.path.join(batch, "manifest.checkpoint"), key=fixtures.BATCH_KEY)
    _write(os.path.join(out, "batch.otlp.json"), otel_json(runs, start_ns=BATCH_START * 10**9))
    _write(os.path.join(out, "batch.inspect.json"), inspect_json(runs, dataset="batch", start=BATCH_START))


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=HERE, help="the folder to write (default: this one)")
    args = parser.parse_args()
    if args.out == HERE:
        for name in os.listdir(HERE):
            if name not in ("make.py", "README.md", "__pycache__"):
                target = os.path.join(HERE, name)
                shutil.rmtree(target) if os.path.isdir(target) else os.remove(target)
    build(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
