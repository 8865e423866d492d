"""The command line of provenance: in-toto attestations, SCITT signed statements, COSE receipts.

::

    agentloop attest FILE --key KEY [--batch] [-o OUT | -o -] [--overwrite] [--unsafe-pure-python-signer]
    agentloop statement FILE --key KEY [--issuer ISS] [-o OUT] [--overwrite] [--unsafe-pure-python-signer]
    agentloop verify FILE... --attestation A.intoto.jsonl --trust PUB... [--require NAME]... [--manifest M]
    agentloop verify FILE --statement S.cose --trust PUB... [--require NAME]... [--issuer ISS]
    agentloop verify FILE --receipt R.cose --trust PUB... [--require NAME]... [--issuer ISS] [--name NAME]
    agentloop run ... --attest KEY
    agentloop batch ... [--attest KEY] [--receipts KEY [--issuer ISS]]

``attest`` writes ``FILE.intoto.jsonl``, a bundle of one in-toto
Statement v1 in a DSSE envelope (:mod:`agentloop.provenance.intoto`); with
``--batch``, FILE is a batch's ``manifest.jsonl`` and every ``ok`` run
beside it is a subject.  ``statement`` writes ``FILE`` with ``.jsonl``
replaced by ``.statement.cose``: a SCITT signed statement over the
transcript's checkpoint, or when FILE is a batch's ``manifest.jsonl`` over
the ledger's (checked against ``manifest.checkpoint`` beside it; the runs'
transcripts are not read) (:mod:`agentloop.provenance.scitt`); the issuer
defaults to the key's name.  ``run --attest`` attests the transcript the
run wrote; ``batch --attest`` the batch (``DIR/manifest.jsonl.intoto.jsonl``),
``batch --receipts`` writes a COSE receipt of inclusion in the ledger for
every run, ``DIR/NAME.receipt.cose`` (:mod:`agentloop.provenance.receipts`).
Every one of them verifies what it signs first; the keys are Ed25519 note
keys (``agentloop keygen``); signing needs ``cryptography`` or
``--unsafe-pure-python-signer``, as for ``checkpoint --sign``.

``verify --attestation``, ``--statement`` and ``--receipt`` check the
signature with the ``--trust`` keys, then that the artefact is about the
FILEs given.  A receipt's FILE is the run's transcript (its ledger line is
rebuilt from it; the run's name is the file name without ``.jsonl``, or
``--name``), or the batch's manifest, whose line ``--name`` names.

Exit codes: 0 written, or verified; 1 a fault: the FILE does not verify
(nothing is signed then), a signature or a proof fails, an artefact does
not match its FILE; 2 usage error (a missing or unusable key, a file that
exists, no signer); 70, 130, 141 as for every command.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO, Tuple

from ..batch.audit import run_name
from ..batch.ledger import ManifestCheckpoint, ledger_root, parse_ledger
from ..batch.spec import read_specs
from ..errors import BadSignatureError, MalformedCheckpointError, MalformedManifestError, ProofError, ProvenanceError
from ..provenance.intoto import (
    BATCH_PREDICATE,
    Attestation,
    attest_batch,
    attest_run,
    check_files,
    default_name,
    read_bundle,
)
from ..provenance.receipts import check_receipt, issue_receipts, receipt_name
from ..provenance.runs import checked_batch, checked_facts, is_ledger, ledger_checkpoint_path, ok_line
from ..provenance.scitt import (
    AnyCheckpoint,
    StatementCheck,
    check_issuer,
    check_ledger_statement,
    check_statement,
    sign_statement,
    statement_checkpoint,
)
from ..provenance.scitt import default_name as statement_name
from ..signing.keys import ALG_ED25519
from ..signing.note import Ed25519Signer, Ed25519Verifier
from ..transcript.anchor import verify_checkpoint
from ..transcript.durable import read_small
from .keys import _can_sign, _signer_key, add_unsafe_option, load_trusted
from .output import (
    Commands,
    EXIT_BUDGET,
    EXIT_FAULT,
    EXIT_OK,
    Refused,
    check_input,
    check_output,
    emit,
    note,
    report_verdict,
    same_file,
    write_file,
)

__all__ = ["add_commands", "verify_with", "run_with", "batch_with"]

Handler = Callable[[argparse.Namespace, TextIO], int]
#: The failures that are a fault of what was checked (exit 1), not of how the command was called.
_FAULTS = (ProvenanceError, BadSignatureError, ProofError)
_MAX_READ = 64 << 20
_KINDS = {"attestation": "attestation", "statement": "signed statement", "receipt": "receipt"}


# --- keys ----------------------------------------------------------------------------------


def _signer(args: argparse.Namespace, path: str, option: str) -> Ed25519Signer:
    """An Ed25519 note signer from ``path``, tried once now (a missing backend fails before any work)."""
    unsafe = _can_sign(args, option)
    signer = Ed25519Signer(_signer_key(path, option, ALG_ED25519, unsafe), unsafe)
    signer.sign(b"agentloop provenance: can this key sign?\n")
    return signer


def _verifiers(args: argparse.Namespace) -> List[Ed25519Verifier]:
    """The ``--trust`` keys, which must be Ed25519 note keys (a witness key signs none of these formats)."""
    trusted = load_trusted(args)
    if not trusted:
        raise Refused("--trust", "a signature is checked against the keys you trust: give the signer's public key")
    keys: List[Ed25519Verifier] = []
    for path, verifier in zip(args.trust, trusted):
        if not isinstance(verifier, Ed25519Verifier):
            raise Refused(
                path, "is a witness key (cosignature/v1): attestations, statements and receipts are signed by note keys"
            )
        keys.append(verifier)
    return keys


def _issuer(args: argparse.Namespace, signer: Ed25519Signer) -> str:
    """``--issuer``, or the key's name; one that no statement or receipt can carry is a usage error, before any work."""
    try:
        return check_issuer(signer.name if args.issuer is None else args.issuer)
    except ProvenanceError as exc:
        raise Refused("--issuer", exc.reason) from None


def _require(args: argparse.Namespace, signers: Sequence[str], what: str) -> None:
    missing = [name for name in args.require if name not in signers]
    if missing:
        raise BadSignatureError("%s is not signed by %s (--require)" % (what, ", ".join(missing)))


def _failed(name: str, exc: Exception, out: TextIO) -> int:
    reason = "bad_signature: %s" % (exc.reason,) if isinstance(exc, BadSignatureError) else str(exc)
    emit(out, "%s: FAILED: %s" % (name, reason))
    return EXIT_FAULT


# --- attest, statement ---------------------------------------------------------------------


def _target(args: argparse.Namespace, default: str, allow_stdout: bool) -> str:
    target = default if args.output is None else args.output
    if target == "-":
        if not allow_stdout:
            raise Refused("-o", "a COSE message is binary: give a file name")
        return target
    if same_file(args.file, target):
        raise Refused(target, "would replace %s" % (args.file,))
    check_output(target, args.overwrite)
    return target


def _cmd_attest(args: argparse.Namespace, out: TextIO) -> int:
    check_input(args.file, pipe=False)
    target = _target(args, default_name(args.file), allow_stdout=True)
    signer = _signer(args, args.key, "--key")
    try:
        line = attest_batch(args.file, [signer]) if args.batch else attest_run(args.file, [signer])
    except ProvenanceError as exc:
        return _failed(args.file, exc, out)
    if target == "-":
        emit(out, line.decode("utf-8").rstrip("\n"))
        return EXIT_OK
    write_file(target, line)
    kind = "batch" if args.batch else "run"
    emit(
        out,
        "%s: attested: %s (in-toto Statement v1 of the %s, DSSE, signed by %s)"
        % (args.file, target, kind, signer.name),
    )
    return EXIT_OK


def _ledger_note(manifest: str) -> str:
    return (
        "note: the statement covers the ledger's lines; the runs' transcripts were not read "
        "(agentloop verify %s/*.jsonl --manifest %s checks them against it)"
        % (os.path.dirname(manifest) or ".", manifest)
    )


def _spare_the_ledger_checkpoint(path: str, target: str) -> None:
    """Refuse an OUT that is the checkpoint beside the ledger ``path`` (the statement's input too)."""
    try:
        ledger = is_ledger(path)
    except ProvenanceError:  # unreadable: said by statement_checkpoint
        return
    checkpoint = ledger_checkpoint_path(path)
    if ledger and same_file(checkpoint, target):
        raise Refused(target, "would replace %s, the checkpoint of the ledger %s" % (checkpoint, path))


def _cmd_statement(args: argparse.Namespace, out: TextIO) -> int:
    check_input(args.file, pipe=False)
    target = _target(args, statement_name(args.file), allow_stdout=False)
    _spare_the_ledger_checkpoint(args.file, target)
    signer = _signer(args, args.key, "--key")
    issuer = _issuer(args, signer)
    try:
        checkpoint: AnyCheckpoint = statement_checkpoint(args.file)
        data = sign_statement(checkpoint, signer, issuer)
    except ProvenanceError as exc:
        return _failed(args.file, exc, out)
    write_file(target, data)
    ledger = isinstance(checkpoint, ManifestCheckpoint)
    emit(
        out,
        "%s: signed statement: %s (COSE_Sign1, EdDSA, issuer %s, signed by %s)%s"
        % (
            args.file,
            target,
            json.dumps(issuer),
            signer.name,
            " of the batch ledger's checkpoint: %d lines, root %s" % (checkpoint.size, checkpoint.root)
            if ledger
            else "",
        ),
    )
    if ledger:
        emit(out, _ledger_note(args.file))
    return EXIT_OK


# --- verify --attestation / --statement / --receipt ------------------------------------------

_NOT_WITH = (
    ("checkpoint", "--checkpoint"),
    ("since", "--since"),
    ("exact", "--exact"),
    ("key_file", "--key-file"),
    ("key_env", "--key-env"),
    ("expect_count", "--expect-count"),
    ("expect_head", "--expect-head"),
    ("workers", "--workers"),
    ("json", "--json"),
)


def _which(args: argparse.Namespace) -> Optional[str]:
    """The artefact ``verify`` was asked to check (``None``: none of these); refuses two at once, and stray options."""
    given = [kind for kind in _KINDS if getattr(args, kind, None) is not None]
    if not given:
        if getattr(args, "issuer", None) is not None or getattr(args, "name", None) is not None:
            raise Refused("--issuer/--name", "are for --statement or --receipt")
        return None
    if len(given) > 1:
        raise Refused("--%s" % (given[1],), "check one artefact at a time")
    for attribute, option in _NOT_WITH:
        if getattr(args, attribute, None) not in (None, False):
            raise Refused(option, "is not taken with --%s" % (given[0],))
    if given[0] == "attestation" and (args.issuer is not None or args.name is not None):
        raise Refused("--issuer/--name", "are for --statement or --receipt")
    if given[0] != "attestation" and args.manifest is not None:
        raise Refused("--manifest", "is for --attestation (a batch's)")
    if given[0] != "attestation" and len(args.files) != 1:
        raise Refused("--%s" % (given[0],), "takes exactly one FILE")
    return given[0]


def _read(path: str) -> bytes:
    check_input(path, pipe=False)
    try:
        return read_small(path, _MAX_READ)
    except OSError as exc:
        raise ProvenanceError(path, "cannot be read: %s" % (exc.strerror or exc,)) from None


def _one_attestation(attestations: List[Attestation], path: str) -> Attestation:
    if len(attestations) != 1:
        lines = ", ".join(str(a.line) for a in attestations)
        raise ProvenanceError(
            path, "holds %d attestations of agentloop's (lines %s): check a bundle of one" % (len(attestations), lines)
        )
    return attestations[0]


def _verify_attestation(args: argparse.Namespace, out: TextIO, verifiers: List[Ed25519Verifier]) -> int:
    for path in args.files:
        check_input(path, pipe=False)
    manifest = _read(args.manifest) if args.manifest is not None else None
    attestation = _one_attestation(read_bundle(_read(args.attestation), verifiers), args.attestation)
    _require(args, attestation.signers, args.attestation)
    checked = check_files(attestation, args.files, manifest)
    emit(
        out,
        "%s: ok, signed by %s: in-toto Statement v1, predicate %s"
        % (args.attestation, ", ".join(attestation.signers), attestation.predicate_type),
    )
    for path, name in checked.files:
        what = (
            "a run of the attested batch, %s" % (json.dumps(name),)
            if attestation.predicate_type == BATCH_PREDICATE
            else "its subject %s" % (json.dumps(name),)
        )
        emit(out, "%s: ok, %s: bytes, chain, Merkle root and stop as attested" % (path, what))
    if checked.ledger is not None:
        ledger = checked.ledger
        emit(
            out,
            "ledger %s: %s runs, root %s%s"
            % (
                ledger.get("origin"),
                ledger.get("size"),
                ledger.get("root"),
                ", the same bytes as %s" % (args.manifest,) if checked.manifest else "",
            ),
        )
        if not checked.manifest:
            emit(
                out,
                "note: the ledger file was not compared (no --manifest); "
                "its root was recomputed from the attested runs",
            )
    if checked.unchecked:
        shown = ", ".join(json.dumps(n) for n in checked.unchecked[:5]) + (
            ", ..." if len(checked.unchecked) > 5 else ""
        )
        emit(
            out,
            "note: %d attested run%s not checked (no file given): %s"
            % (len(checked.unchecked), "" if len(checked.unchecked) == 1 else "s", shown),
        )
    return EXIT_OK


def _verify_ledger_statement(args: argparse.Namespace, out: TextIO, checked: StatementCheck) -> int:
    path = args.files[0]
    checkpoint = check_ledger_statement(checked, path)
    emit(
        out,
        "%s: ok, signed statement by %s, issuer %s, subject %s: %s is the ledger of its checkpoint "
        "(%d lines, root %s)"
        % (
            args.statement,
            checked.signer,
            json.dumps(checked.issuer),
            checked.subject,
            path,
            checkpoint.size,
            checkpoint.root,
        ),
    )
    emit(out, _ledger_note(path))
    return EXIT_OK


def _verify_statement(args: argparse.Namespace, out: TextIO, verifiers: List[Ed25519Verifier]) -> int:
    path = args.files[0]
    check_input(path, pipe=False)
    checked = check_statement(_read(args.statement), verifiers, args.issuer)
    _require(args, (checked.signer,), args.statement)
    if isinstance(checked.checkpoint, ManifestCheckpoint) or is_ledger(path):
        return _verify_ledger_statement(args, out, checked)
    result = verify_checkpoint(path, checked.checkpoint)
    report_verdict(path, result, out)
    if not result.ok:
        emit(out, "%s: FAILED: the transcript does not give the statement's checkpoint" % (args.statement,))
        return EXIT_FAULT
    emit(
        out,
        "%s: ok, signed statement by %s, issuer %s, subject %s: the first %d records match its checkpoint (root %s)"
        % (
            args.statement,
            checked.signer,
            json.dumps(checked.issuer),
            checked.subject,
            result.anchored,
            checked.checkpoint.root,
        ),
    )
    if result.unanchored:
        emit(
            out,
            "note: %d record%s after the checkpoint %s not covered by the statement"
            % (result.unanchored, "" if result.unanchored == 1 else "s", "is" if result.unanchored == 1 else "are"),
        )
    return EXIT_OK


def _ledger_line(path: str, name: Optional[str]) -> Tuple[Dict[str, Any], str, Optional[bytes]]:
    """The ledger line a receipt's FILE stands for, and the manifest it is read from (``None`` for a transcript).

    FILE is a manifest (its line ``name``) or a run's transcript (its line rebuilt from it).
    """
    if is_ledger(path):
        if name is None:
            raise Refused("--name", "names the run whose line of the manifest %s the receipt proves" % (path,))
        data = _read(path)
        try:
            lines = parse_ledger(data)
        except MalformedManifestError as exc:
            raise ProvenanceError(path, str(exc)) from None
        for line in lines:
            if line["name"] == name:
                return line, name, data
        raise ProvenanceError(path, "holds no run named %s" % (json.dumps(name),))
    run = run_name(path) if name is None else name
    return ok_line(run, checked_facts(path, "checked")), run, None


def _verify_receipt(args: argparse.Namespace, out: TextIO, verifiers: List[Ed25519Verifier]) -> int:
    path = args.files[0]
    check_input(path, pipe=False)
    data = _read(args.receipt)
    line, name, ledger = _ledger_line(path, args.name)
    checked = check_receipt(data, line, verifiers, args.issuer)
    _require(args, (checked.signer,), args.receipt)
    if ledger is not None and (checked.size, checked.root) != (ledger.count(b"\n"), ledger_root(ledger)):
        # the same line may be in another batch's ledger: a receipt checked against a manifest must be of that one
        raise ProvenanceError(
            "receipt",
            "proves the line in a ledger of %d runs with root %s..., not in %s (%d runs, root %s...)"
            % (checked.size, checked.root[:16], path, ledger.count(b"\n"), ledger_root(ledger)[:16]),
        )
    emit(
        out,
        "%s: ok, run %s (%s) is entry %d of the ledger of %d runs with root %s; signed by %s, issuer %s"
        % (
            args.receipt,
            json.dumps(name),
            line["status"],
            checked.index,
            checked.size,
            checked.root,
            checked.signer,
            json.dumps(checked.issuer),
        ),
    )
    return EXIT_OK


def verify_with(original: Handler, args: argparse.Namespace, out: TextIO) -> int:
    """``verify``: ``--attestation``/``--statement``/``--receipt`` are handled here; every other use goes to
    ``original``."""
    kind = _which(args)
    if kind is None:
        return original(args, out)
    verifiers = _verifiers(args)
    check = {"attestation": _verify_attestation, "statement": _verify_statement, "receipt": _verify_receipt}[kind]
    try:
        return check(args, out, verifiers)
    except _FAULTS as exc:
        return _failed(getattr(args, kind), exc, out)


# --- run --attest, batch --attest / --receipts ---------------------------------------------


def _check_new(path: str) -> None:
    if os.path.lexists(path):
        raise Refused(
            path, "already exists: an attestation or receipt is evidence and is never replaced; move it away first"
        )


def run_with(original: Handler, args: argparse.Namespace, out: TextIO) -> int:
    """``run --attest KEY``: the key and the output are checked before the run; the transcript is attested after."""
    target = default_name(args.output)
    check_output(target, args.overwrite)
    signer = _signer(args, args.attest, "--attest")
    status = original(args, out)
    if status not in (EXIT_OK, EXIT_FAULT, EXIT_BUDGET):  # each a run that ended in a stop record
        note("agentloop run: no attestation: the run did not finish")
        return status
    try:
        line = attest_run(args.output, [signer])
    except ProvenanceError as exc:
        _failed(args.output, exc, out)
        return status if status != EXIT_OK else EXIT_FAULT
    write_file(target, line)
    emit(out, "attestation: %s (in-toto Statement v1, DSSE, signed by %s)" % (target, signer.name))
    return status


def _batch_outputs(args: argparse.Namespace) -> str:
    """The batch's attestation path; it and every receipt path are refused now if they exist."""
    manifest = os.path.join(args.out, "manifest.jsonl")
    attestation = default_name(manifest)
    names = (
        [spec.name for spec in read_specs(args.tasks)] if args.attest is not None or args.receipts is not None else []
    )
    if args.attest is not None and run_name(attestation) in names:
        raise Refused(
            attestation,
            "is where --attest writes the batch's attestation, and the transcript of run %s: rename that run"
            % (json.dumps(run_name(attestation)),),
        )
    receipts = [receipt_name(args.out, name) for name in names] if args.receipts is not None else []
    for path in ([attestation] if args.attest is not None else []) + receipts:
        _check_new(path)
    return attestation


def _ledger_problem(args: argparse.Namespace, manifest: str) -> Optional[str]:
    """Why the ledger on disk is not the one the batch's checkpoint certifies (``None``: it is).

    The check ``batch --resume`` makes of an earlier ledger: its checkpoint's
    size and root, and with ``--sign`` its signature by that key.  A ledger
    the batch refused (rewritten since it was signed) gets no receipt and no
    attestation: nothing is signed that was not checked first.
    """
    from ..batch.ledger import check_manifest_checkpoint, parse_manifest_checkpoint
    from .batch import _signing

    checkpoint = os.path.join(args.out, "manifest.checkpoint")
    key, signer = _signing(args.sign, args.unsafe_pure_python_signer)
    try:
        note = parse_manifest_checkpoint(read_small(checkpoint, 64 * 1024))
        verifiers = [signer.verifier()] if isinstance(signer, Ed25519Signer) else []
        check_manifest_checkpoint(note, read_small(manifest, _MAX_READ), key, verifiers)
    except (OSError, MalformedCheckpointError, ProofError, BadSignatureError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else getattr(exc, "reason", None) or exc
        return "the ledger's checkpoint %s: %s" % (checkpoint, reason)
    return None


def _after_batch(args: argparse.Namespace, out: TextIO, signers: Dict[str, Ed25519Signer], attestation: str) -> int:
    manifest = os.path.join(args.out, "manifest.jsonl")
    problem = _ledger_problem(args, manifest)
    if problem is not None:
        emit(out, "%s: FAILED: %s; no attestation or receipt was made" % (manifest, problem))
        return EXIT_FAULT
    status = EXIT_OK
    if "attest" in signers:
        try:
            write_file(attestation, attest_batch(manifest, [signers["attest"]]))
            emit(
                out,
                "attestation: %s (in-toto Statement v1 of the batch, DSSE, signed by %s)"
                % (attestation, signers["attest"].name),
            )
        except ProvenanceError as exc:
            status = _failed(manifest, exc, out)
    if "receipts" in signers:
        signer = signers["receipts"]
        issuer = _issuer(args, signer)
        try:  # the ledger as checked (checkpoint, transcripts): nothing is signed that was not
            made = issue_receipts(checked_batch(manifest, "given a receipt").data, signer, issuer)
        except ProvenanceError as exc:
            return _failed(manifest, exc, out)
        for name, receipt in made:
            write_file(receipt_name(args.out, name), receipt)
        emit(
            out,
            "receipts: %d in %s (NAME.receipt.cose: COSE receipts of inclusion, RFC9162_SHA256, "
            "issuer %s, signed by %s)" % (len(made), args.out, json.dumps(issuer), signer.name),
        )
    return status


def batch_with(original: Handler, args: argparse.Namespace, out: TextIO) -> int:
    """``batch --attest KEY --receipts KEY``: keys and outputs checked before the batch; made after it."""
    attestation = _batch_outputs(args)
    signers = {
        option: _signer(args, path, "--" + option)
        for option, path in (("attest", args.attest), ("receipts", args.receipts))
        if path is not None
    }
    if "receipts" in signers:
        _issuer(args, signers["receipts"])  # refused now, not after the batch has run
    status = original(args, out)
    if not os.path.exists(os.path.join(args.out, "manifest.jsonl")):
        return status
    made = _after_batch(args, out, signers, attestation)
    return status if status != EXIT_OK else made


# --- registration --------------------------------------------------------------------------


def add_commands(sub: Commands) -> None:
    """Register ``attest`` and ``statement``."""
    attest = sub.add_parser("attest")
    attest.add_argument("file", metavar="FILE", help="a transcript, or with --batch a batch's manifest.jsonl")
    attest.add_argument("--key", required=True, metavar="KEY", help="the Ed25519 note signing key (agentloop keygen)")
    attest.add_argument(
        "--batch", action="store_true", help="FILE is a batch's manifest.jsonl; its ok runs are the subjects"
    )
    attest.add_argument(
        "-o", "--output", metavar="OUT", help="where to write it (default: FILE.intoto.jsonl; - for stdout)"
    )
    attest.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    add_unsafe_option(attest)
    attest.set_defaults(handler=_cmd_attest)

    statement = sub.add_parser("statement")
    statement.add_argument("file", metavar="FILE")
    statement.add_argument(
        "--key", required=True, metavar="KEY", help="the Ed25519 note signing key (agentloop keygen)"
    )
    statement.add_argument("--issuer", metavar="ISS", help="the CWT iss claim, who states it (default: the key's name)")
    statement.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="where to write it (default: FILE with .jsonl replaced by .statement.cose)",
    )
    statement.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    add_unsafe_option(statement)
    statement.set_defaults(handler=_cmd_statement)
