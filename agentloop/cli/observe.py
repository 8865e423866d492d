"""``agentloop export`` and ``agentloop report --manifest``: runs where people already look.

``export --otel FILE -o spans.json`` writes OpenTelemetry GenAI spans
(OTLP/JSON); ``--endpoint URL`` also POSTs them to a collector's
``URL/v1/traces``, with ``--header NAME=ENVVAR`` headers whose values come
from the environment and are never printed.  ``export --inspect FILE -o
log.json`` writes an Inspect AI eval log.  ``--manifest DIR/manifest.jsonl``
exports a whole batch instead of FILE, once its ledger's verdict holds.
``report --manifest DIR/manifest.jsonl -o batch.html`` writes the batch's
page and each run's page beside it.

Exit codes: 0 written (and sent); 1 nothing exported because a transcript
does not verify or the ledger's verdict fails, or the collector did not take
the spans (the file, when asked for, is written first); for ``report
--manifest``, 1 the ledger's verdict fails (the page is written and says
so); 2 usage error, a file that cannot be read or written, or an output
that exists and was not written by the same command (without
``--overwrite``); 70 internal error; 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Callable, Dict, List, Optional, Sequence, TextIO, Tuple, Union

from ..batch.ledger import parse_ledger
from ..errors import BadArgumentError, CollectorError, ExportError
from ..export.batch import batch_problems, read_batch
from ..export.inspect_log import inspect_json, is_inspect_export
from ..export.otel import is_otel_export, otel_json
from ..export.otlp_http import collector, send_otlp
from ..export.run import FailedRun, Run, read_run
from ..export.semconv import SEMCONV_VERSION
from ..report.batch import run_page_names, write_batch_report
from ..report.page import is_report_page
from ..signing.note import Verifier
from ..transcript.checkpoint import load_key
from ..transcript.durable import write_atomic
from .keys import add_trust_options, load_trusted
from .output import (
    Commands,
    EXIT_FAULT,
    EXIT_OK,
    Refused,
    check_input,
    check_output,
    count_arg,
    emit,
    quote,
    report_verdict,
    same_file,
    seconds_arg,
)

__all__ = ["add_commands", "report_manifest"]

#: An environment variable's name as shells write them (upper case): the only ``ENVVAR`` an error quotes.
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,63}\Z")
#: A header's name (an HTTP token, RFC 9110 section 5.6.2).
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}\Z")
#: The latest ``--start`` (9999-12-31T23:59:59Z): what a date can hold.
_LAST_START = 253402300799
#: The latest ``--start`` of spans (2261-07-15): their times are nanosecond counts, which collectors
#: read as 64-bit integers (up to 2**63 - 1, 2262-04-11), and the run's timeline, 1 ms a record, needs room.
_LAST_SPAN_START = 9_200_000_000

Runs = List[Union[Run, FailedRun]]


def _written_by(kind: str) -> Callable[[str], bool]:
    """Whether a file is an export of ``kind`` (``otel`` or ``inspect``) this command wrote earlier."""
    check = is_otel_export if kind == "otel" else is_inspect_export

    def replaceable(path: str) -> bool:
        try:
            with open(path, "rb") as handle:
                return check(handle.read(4096))
        except OSError:
            return False

    return replaceable


def _headers(specs: Sequence[str]) -> Dict[str, str]:
    """``--header NAME=ENVVAR``: each header's value from the environment variable named (never shown).

    A spec that is not ``NAME=ENVVAR`` (``Authorization: Bearer sk-...``, as
    curl takes it) is refused without being quoted, and ``ENVVAR`` is quoted
    only when it looks like a variable's name: either may be the token itself.
    """
    headers: Dict[str, str] = {}
    for spec in specs:
        name, sep, variable = spec.partition("=")
        if not sep or not _HEADER_NAME.match(name) or not variable:
            raise Refused(
                "--header",
                "takes NAME=ENVVAR, a header name and the environment variable holding its value "
                "(what was given is not shown: it may hold the token)",
            )
        value = os.environ.get(variable)
        if value is None:
            shown = quote(variable) if _ENV_NAME.match(variable) else "after %s= (not shown: is it the value?)" % name
            raise Refused("--header %s" % (quote(name),), "the environment variable %s is not set" % (shown,))
        headers[name] = value
    return headers


def _ledger_keys(
    args: argparse.Namespace,
) -> Tuple[Optional[str], Optional[bytes], List[Verifier], Optional[List[str]]]:
    """The ledger's checkpoint and the keys to check it with.

    ``--checkpoint``, ``--key-file``/``--key-env``, ``--trust`` and ``--require``.
    """
    key = load_key(args.key_file, args.key_env) if args.key_file is not None or args.key_env is not None else None
    verifiers = load_trusted(args)
    if (key is not None or verifiers) and args.checkpoint is None:
        raise Refused("--key-file/--key-env/--trust", "need --checkpoint (the manifest's checkpoint)")
    if args.checkpoint is not None:
        check_input(args.checkpoint, pipe=False)
    return args.checkpoint, key, verifiers, list(args.require) if verifiers else None


def _source(args: argparse.Namespace) -> str:
    if (args.file is None) == (args.manifest is None):
        raise Refused("FILE/--manifest", "give one transcript FILE, or --manifest DIR/manifest.jsonl for a batch")
    source: str = args.file if args.file is not None else args.manifest
    check_input(source, pipe=args.file is not None)
    return source


def _read(args: argparse.Namespace, out: TextIO) -> Runs:
    """The runs to export, verified; ``Refused`` with exit 1 when they cannot be."""
    if args.file is not None and (args.checkpoint or args.key_file or args.key_env or args.trust or args.require):
        raise Refused(
            "--checkpoint/--key-file/--key-env/--trust/--require", "are for --manifest (the ledger's checkpoint)"
        )
    try:
        if args.file is not None:
            run = read_run(args.file)
            report_verdict(args.file, run.verdict, out)
            return [run]
        checkpoint, key, verifiers, require = _ledger_keys(args)
        runs: Runs = read_batch(args.manifest, checkpoint=checkpoint, key=key, verifiers=verifiers, require=require)
    except ExportError as exc:
        raise Refused(exc.what, exc.reason, EXIT_FAULT) from None
    except OSError as exc:
        raise Refused(exc.filename or args.manifest, "cannot be read: %s" % (exc.strerror or exc,)) from None
    failed = sum(1 for r in runs if isinstance(r, FailedRun))
    emit(
        out,
        "ok: %s: %d of %d transcripts match the ledger (%d runs%s)"
        % (
            quote(args.manifest),
            len(runs) - failed,
            len(runs) - failed,
            len(runs),
            "; %d failed in the batch and are exported as errors" % (failed,) if failed else "",
        ),
    )
    return runs


def _check_outputs(args: argparse.Namespace, source: str, kind: str) -> None:
    if args.output is None and args.endpoint is None:
        raise Refused("-o/--output", "give -o OUT%s" % (" (or --endpoint URL)" if kind == "otel" else "",))
    if kind == "inspect" and (args.endpoint is not None or args.header or args.include_content):
        raise Refused(
            "--endpoint/--header/--include-content", "are for --otel (an Inspect log always holds the messages)"
        )
    if args.header and args.endpoint is None:
        raise Refused("--header", "needs --endpoint")
    if args.start is not None and args.start > _LAST_START:
        raise Refused("--start", "must be at most %d (9999-12-31)" % (_LAST_START,))
    if kind == "otel" and args.start is not None and args.start > _LAST_SPAN_START:
        raise Refused(
            "--start", "must be at most %d (2261-07-15) for spans: 64-bit nanosecond times" % (_LAST_SPAN_START,)
        )
    if args.endpoint is not None:
        try:
            collector(args.endpoint)
        except BadArgumentError as exc:
            raise Refused("--endpoint", exc.reason) from None
    if args.output is not None:
        if same_file(source, args.output):
            raise Refused(args.output, "the export would replace its own input %s" % (source,))
        check_output(args.output, args.overwrite, replaceable=_written_by(kind))


def _spans(runs: Runs) -> int:
    """How many spans :func:`~agentloop.export.otel_json` writes: a run's, and one per model turn and tool call."""
    return sum(
        1 + sum(1 for rec in r.records if rec.get("kind") in ("assistant", "tool")) if isinstance(r, Run) else 1
        for r in runs
    )


def _body(args: argparse.Namespace, kind: str, runs: Runs) -> Tuple[bytes, str]:
    start = args.start or 0
    if kind == "otel":
        body = otel_json(runs, include_content=args.include_content, start_ns=start * 1_000_000_000)
        return body, "%d spans in %d trace%s, OpenTelemetry semantic conventions %s" % (
            _spans(runs),
            len(runs),
            "" if len(runs) == 1 else "s",
            SEMCONV_VERSION,
        )
    source = args.file if args.file is not None else os.path.dirname(os.path.abspath(args.manifest))
    name = os.path.basename(source)
    dataset = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return inspect_json(runs, dataset=dataset, start=start), "%d sample%s" % (len(runs), "" if len(runs) == 1 else "s")


def _cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    kind = "otel" if args.otel else "inspect"
    source = _source(args)
    _check_outputs(args, source, kind)
    headers = _headers(args.header)
    runs = _read(args, out)
    body, what = _body(args, kind, runs)
    if args.output is not None:
        try:
            write_atomic(args.output, body)
        except OSError as exc:
            raise Refused(args.output, "cannot write it: %s" % (exc.strerror or exc,)) from None
        emit(out, "%s: %s (%s)" % ("spans" if kind == "otel" else "inspect log", args.output, what))
    if args.endpoint is not None:
        try:
            sent = send_otlp(body, args.endpoint, headers=headers, timeout=args.timeout, spans=_spans(runs))
        except BadArgumentError as exc:
            raise Refused("--header" if exc.parameter == "headers" else "--endpoint", exc.reason) from None
        except CollectorError as exc:
            raise Refused("--endpoint", str(exc), EXIT_FAULT) from None
        emit(out, "sent: %d spans to %s/v1/traces (HTTP %d)" % (sent.spans, collector(args.endpoint).host, sent.status))
    return EXIT_OK


# --- report --manifest ------------------------------------------------------------


def _is_page(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return is_report_page(handle.read(4096))
    except OSError:
        return False


def _page_targets(args: argparse.Namespace, target: str) -> None:
    """Refuse, before writing anything, a page or run page that would replace a file ``report`` did not write."""
    try:
        with open(args.manifest, "rb") as handle:
            lines = parse_ledger(handle.read())
    except OSError as exc:
        raise Refused(args.manifest, "cannot be read: %s" % (exc.strerror or exc,)) from None
    page = os.path.basename(target)
    if page in {line["name"] + ".html" for line in lines}:
        raise Refused(target, "a run of the batch has that page's name; choose another -o")
    check_output(target, args.overwrite, replaceable=_is_page)
    for name in run_page_names(lines, page).values():
        check_output(os.path.join(os.path.dirname(target), name), args.overwrite, replaceable=_is_page)


def report_manifest(args: argparse.Namespace, out: TextIO) -> int:
    """``report --manifest DIR/manifest.jsonl [-o batch.html] [--checkpoint C [--key-file K | --trust V]...]``."""
    if args.file is not None:
        raise Refused("FILE/--manifest", "give one transcript FILE, or --manifest for a batch, not both")
    check_input(args.manifest, pipe=False)
    target = (
        args.output if args.output is not None else os.path.join(os.path.dirname(args.manifest) or ".", "batch.html")
    )
    if same_file(args.manifest, target):
        raise Refused(target, "the page would replace the manifest")
    checkpoint, key, verifiers, require = _ledger_keys(args)
    _page_targets(args, target)
    try:
        written = write_batch_report(
            args.manifest, target, checkpoint=checkpoint, key=key, verifiers=verifiers, require=require
        )
    except ExportError as exc:
        raise Refused(exc.what, exc.reason, EXIT_FAULT) from None
    except OSError as exc:
        raise Refused(exc.filename or target, "cannot be read or written: %s" % (exc.strerror or exc,)) from None
    audit = written.audit
    problems = batch_problems(audit)  # the evidence's problems; then the runs the batch did not complete
    if audit.failed:
        problems.append(
            "%d run%s failed in the batch (%s)"
            % (len(audit.failed), "" if len(audit.failed) == 1 else "s", ", ".join(quote(n) for n, _ in audit.failed))
        )
    emit(
        out,
        "%s: %s: %d of %d transcripts match the ledger (%d runs)%s"
        % (
            "ok" if written.ok else "FAILED",
            quote(args.manifest),
            len(audit.verified),
            len(audit.verified) + len(audit.missing) + len(audit.altered),
            audit.runs,
            "; " + "; ".join(problems) if problems else "",
        ),
    )
    emit(
        out,
        "report: %s (and %d run page%s beside it)"
        % (written.path, len(written.pages), "" if len(written.pages) == 1 else "s"),
    )
    return EXIT_OK if written.ok else EXIT_FAULT


def add_commands(sub: Commands) -> None:
    """Register ``export``."""
    export = sub.add_parser(
        "export",
        epilog="exit status: 0 written (and sent), 1 does not verify or the collector did not take the spans, "
        "2 usage error",
    )
    kind = export.add_mutually_exclusive_group(required=True)
    kind.add_argument(
        "--otel",
        action="store_true",
        help="OTLP/JSON spans (OpenTelemetry GenAI semantic conventions %s)" % (SEMCONV_VERSION,),
    )
    kind.add_argument("--inspect", action="store_true", help="an Inspect AI eval log (JSON)")
    export.add_argument("file", nargs="?", metavar="FILE", help="the transcript")
    export.add_argument("--manifest", metavar="MANIFEST", help="a batch instead of FILE: one trace or sample per run")
    export.add_argument("-o", "--output", metavar="OUT", help="where to write the export")
    export.add_argument("--overwrite", action="store_true", help="replace OUT even if this command did not write it")
    export.add_argument(
        "--include-content",
        action="store_true",
        help="--otel: also the task, messages, tool arguments and results, and error texts",
    )
    export.add_argument(
        "--start",
        type=count_arg,
        metavar="SECONDS",
        help="the Unix time the run is shown starting at (the transcript records none; default 0)",
    )
    export.add_argument(
        "--endpoint", metavar="URL", help="--otel: also POST the spans to the OTLP/HTTP collector at URL/v1/traces"
    )
    export.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME=ENVVAR",
        help="with --endpoint: send header NAME with the value of environment variable ENVVAR; repeatable",
    )
    export.add_argument(
        "--timeout",
        type=seconds_arg,
        default=10.0,
        metavar="SECONDS",
        help="with --endpoint: seconds to wait (default 10)",
    )
    export.add_argument("--checkpoint", metavar="CKPT", help="with --manifest: the ledger's checkpoint, checked first")
    keys = export.add_mutually_exclusive_group()
    keys.add_argument("--key-file", metavar="K", help="the checkpoint's HMAC-SHA256 key, in a file")
    keys.add_argument("--key-env", metavar="VAR", help="the checkpoint's HMAC-SHA256 key, in an environment variable")
    add_trust_options(export)
    export.set_defaults(handler=_cmd_export)
