"""in-toto Statement v1 attestations of a run or a batch, in DSSE envelopes, in ``.intoto.jsonl`` bundles.

The Statement (in-toto attestation spec v1, ``spec/v1/statement.md``)::

    {"_type": "https://in-toto.io/Statement/v1",
     "subject": [{"name": "run.jsonl", "digest": {"sha256": "<hex of the file>"}}],
     "predicateType": "https://agentloop.dev/attestation/run/v1",
     "predicate": {...}}

serialised as RFC 8785 JSON, is the payload of a DSSE envelope whose
``payloadType`` is ``application/vnd.in-toto+json`` (``spec/v1/envelope.md``)
signed by an Ed25519 note key (:mod:`.dsse`); the envelope is one line of
a bundle (``spec/v1/bundle.md``), ``<file>.intoto.jsonl``.

Two predicate types, agentloop's own (``docs/integrity.md`` documents
every field):

* :data:`RUN_PREDICATE` -- one transcript: ``format``, ``origin``,
  ``records``, ``head``, ``root`` (RFC 6962 Merkle root over the record
  lines), ``stop``, ``steps``, ``tokens`` (from the stop record),
  ``model`` (record 0's ``model``, or ``null``), ``tools`` (the names
  offered, sorted) and ``budgets`` (record 0's, whole);
* :data:`BATCH_PREDICATE` -- a batch: ``format``, ``ledger`` (``origin``,
  ``size``, ``root`` of the ``agentloop-manifest/1`` ledger) and ``runs``,
  one per ledger line in ledger order: the line itself, and for an ``ok``
  run the run fields above; the subjects are the ``ok`` runs' transcripts.

Nothing is signed that was not checked first: :func:`attest_run` verifies
the transcript (chain, stop record) in the same pass that hashes it;
:func:`attest_batch` also checks every ``ok`` transcript against its ledger
line and the ledger against its checkpoint.  :func:`check_bundle` reverses
both: the signature, then the Statement, then every file given against it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..batch.ledger import ledger_bytes, ledger_root, parse_ledger
from ..batch.worker import transcript_path
from ..canonical import canonical_bytes
from ..errors import AgentloopError, ProvenanceError
from ..signing.note import Ed25519Verifier, Signer
from .dsse import Envelope, envelope_line, parse_envelope, sign_envelope, verify_envelope
from .runs import checked_batch, checked_facts, differing, ok_line, run_fields

__all__ = [
    "STATEMENT_TYPE",
    "PAYLOAD_TYPE",
    "RUN_PREDICATE",
    "BATCH_PREDICATE",
    "Attestation",
    "FilesChecked",
    "default_name",
    "run_predicate",
    "attest_run",
    "attest_batch",
    "read_bundle",
    "check_files",
]

#: in-toto ``spec/v1/statement.md``: the Statement's ``_type``.
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
#: in-toto ``spec/v1/envelope.md``: the DSSE ``payloadType`` of a Statement in JSON.
PAYLOAD_TYPE = "application/vnd.in-toto+json"
#: agentloop's predicate type for one run.
RUN_PREDICATE = "https://agentloop.dev/attestation/run/v1"
#: agentloop's predicate type for a batch.
BATCH_PREDICATE = "https://agentloop.dev/attestation/batch/v1"
_LEDGER_KEYS = ("head", "name", "origin", "records", "root", "sha256", "status", "stop", "error", "reason")


def run_predicate(facts: Mapping[str, Any]) -> Dict[str, Any]:
    """The :data:`RUN_PREDICATE` predicate of a verified transcript's facts (``transcript_facts(path, task=True)``)."""
    return dict(run_fields(facts), format="agentloop/1")


def _statement(subjects: List[Dict[str, Any]], predicate_type: str, predicate: Dict[str, Any]) -> bytes:
    statement = {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": predicate_type, "predicate": predicate}
    return canonical_bytes(statement)


def _subject(name: str, sha256: str) -> Dict[str, Any]:
    return {"name": name, "digest": {"sha256": sha256}}


def attest_run(path: str, signers: Sequence[Signer]) -> bytes:
    """The bundle line attesting transcript ``path``: verified, hashed and described in one pass, then signed."""
    facts = checked_facts(path)
    statement = _statement([_subject(os.path.basename(path), facts["sha256"])], RUN_PREDICATE, run_predicate(facts))
    return envelope_line(sign_envelope(PAYLOAD_TYPE, statement, signers))


# --- a batch ---------------------------------------------------------------------------------


def attest_batch(manifest: str, signers: Sequence[Signer]) -> bytes:
    """The bundle line attesting the batch whose ledger is ``manifest`` (transcripts beside it).

    1. and 2. the ledger matches its checkpoint, and every ``ok`` run's
       transcript verifies and is the one its line describes
       (:func:`~.runs.checked_batch`);
    3. at least one run is ``ok`` (a Statement needs a subject);
    4. the Statement, signed.
    """
    # 1. and 2.
    batch = checked_batch(manifest)
    folder = os.path.dirname(manifest)
    runs: List[Dict[str, Any]] = []
    subjects: List[Dict[str, Any]] = []
    for line in batch.lines:
        facts = batch.facts.get(line["name"]) if line["status"] == "ok" else None
        if facts is None:
            runs.append(dict(line))
            continue
        runs.append(dict(line, **run_fields(facts)))
        subjects.append(_subject(os.path.basename(transcript_path(folder, line["name"])), facts["sha256"]))
    # 3.
    if not subjects:
        raise ProvenanceError(
            "manifest %s" % (manifest,), "no run of the batch is ok: there is no transcript to attest"
        )
    # 4.
    predicate = {
        "format": "agentloop-manifest/1",
        "ledger": {"origin": batch.origin, "size": len(batch.lines), "root": ledger_root(batch.data)},
        "runs": runs,
    }
    return envelope_line(sign_envelope(PAYLOAD_TYPE, _statement(subjects, BATCH_PREDICATE, predicate), signers))


# --- reading a bundle ----------------------------------------------------------------------


@dataclass(frozen=True)
class Attestation:
    """One verified attestation of a bundle: its line, signers, subjects and predicate."""

    line: int
    signers: Tuple[str, ...]
    predicate_type: str
    subjects: Tuple[Tuple[str, str], ...]
    predicate: Dict[str, Any] = field(hash=False)


def _statement_of(envelope: Envelope, where: str) -> Tuple[str, Tuple[Tuple[str, str], ...], Dict[str, Any]]:
    """The verified payload read as a Statement v1 with a sha256 subject per entry."""
    if envelope.payload_type != PAYLOAD_TYPE:
        raise ProvenanceError(where + " payloadType", "is %r, not %r" % (envelope.payload_type[:80], PAYLOAD_TYPE))
    try:
        doc = json.loads(envelope.payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ProvenanceError(where + " payload", "is not a JSON Statement") from None
    if not isinstance(doc, dict) or doc.get("_type") != STATEMENT_TYPE:
        raise ProvenanceError(where + " $._type", "must be %r" % (STATEMENT_TYPE,))
    subject = doc.get("subject")
    if not isinstance(subject, list) or not subject:
        raise ProvenanceError(where + " $.subject", "must be a non-empty array (in-toto Statement v1)")
    subjects: List[Tuple[str, str]] = []
    for index, entry in enumerate(subject):
        digest = entry.get("digest") if isinstance(entry, dict) else None
        sha = digest.get("sha256") if isinstance(digest, dict) else None
        name = entry.get("name", "_") if isinstance(entry, dict) else None
        if not isinstance(sha, str) or len(sha) != 64 or not isinstance(name, str):
            raise ProvenanceError(
                "%s $.subject[%d]" % (where, index), "needs a name and a digest.sha256 of 64 hex digits"
            )
        subjects.append((name, sha))
    predicate_type, predicate = doc.get("predicateType"), doc.get("predicate")
    if not isinstance(predicate_type, str) or not isinstance(predicate, dict):
        raise ProvenanceError(
            where + " $.predicateType", "a Statement has a predicateType string and a predicate object"
        )
    return predicate_type, tuple(subjects), predicate


def read_bundle(data: bytes, verifiers: Sequence[Ed25519Verifier], what: str = "attestation") -> List[Attestation]:
    """The attestations of a ``.intoto.jsonl`` bundle that agentloop recognises, their signatures verified.

    in-toto ``spec/v1/bundle.md``: a line that is not an envelope, an
    envelope with no signature by a trusted key, a payload type or
    predicate type that is not agentloop's, is ignored ("Consumers MUST
    ignore unrecognized lines" and attestations); but a signature by a
    trusted key that does not verify is a fault
    (:class:`~agentloop.errors.BadSignatureError`), and a bundle with no
    recognised attestation is refused, with the reason each line was
    ignored (:class:`~agentloop.errors.ProvenanceError`).
    """
    found: List[Attestation] = []
    ignored: List[str] = []
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for number, raw in enumerate(lines, 1):
        where = "%s line %d" % (what, number)
        try:
            envelope = parse_envelope(raw, where)
            signers = verify_envelope(envelope, verifiers, where)  # a trusted signature that fails raises
            if not signers:
                keyids = ", ".join(repr(s.keyid[:80]) for s in envelope.signatures)
                raise ProvenanceError(where, "no signature by a trusted key (--trust): its keyids are %s" % (keyids,))
            predicate_type, subjects, predicate = _statement_of(envelope, where)
        except ProvenanceError as exc:
            ignored.append(str(exc))
            continue
        if predicate_type not in (RUN_PREDICATE, BATCH_PREDICATE):
            ignored.append("%s: predicate type %r is not agentloop's" % (where, predicate_type[:100]))
            continue
        found.append(Attestation(number, signers, predicate_type, subjects, predicate))
    if not found:
        reasons = "; ".join(ignored[:3]) if ignored else "it holds no line"
        raise ProvenanceError(what, "no attestation of agentloop's signed by a trusted key: %s" % (reasons,))
    return found


# --- checking files against an attestation -------------------------------------------------


@dataclass(frozen=True)
class FilesChecked:
    """What :func:`check_files` checked: each file and the run it is, the subjects no file was given for."""

    files: Tuple[Tuple[str, str], ...]
    unchecked: Tuple[str, ...]
    ledger: Optional[Dict[str, Any]] = None
    manifest: bool = False


def _check_run_predicate(attestation: Attestation, files: Sequence[str]) -> FilesChecked:
    if len(attestation.subjects) != 1 or len(files) != 1:
        raise ProvenanceError(
            "attestation line %d" % (attestation.line,),
            "a run's attestation has one subject and is checked against one FILE",
        )
    path = files[0]
    facts = checked_facts(path, "checked")
    name, sha = attestation.subjects[0]
    if facts["sha256"] != sha:
        raise ProvenanceError(
            path, "its SHA-256 %s... is not the subject's %s... (%s)" % (facts["sha256"][:16], sha[:16], name)
        )
    key = differing(attestation.predicate, run_predicate(facts))
    if key:
        raise ProvenanceError(path, "the attestation's predicate.%s differs from the transcript's" % (key,))
    return FilesChecked(((path, name),), ())


def _ledger_part(run: Mapping[str, Any]) -> Dict[str, Any]:
    return {key: run[key] for key in _LEDGER_KEYS if key in run}


def _check_ledger(predicate: Mapping[str, Any], where: str) -> Tuple[Dict[str, Any], List[Dict[str, Any]], bytes]:
    """The predicate's ledger and runs; the ledger re-derived from the runs must be the one named."""
    ledger, runs = predicate.get("ledger"), predicate.get("runs")
    if (
        predicate.get("format") != "agentloop-manifest/1"
        or not isinstance(ledger, dict)
        or not isinstance(runs, list)
        or not runs
    ):
        raise ProvenanceError(where + " predicate", "a batch predicate holds format, ledger and a non-empty runs array")
    if not all(isinstance(run, dict) for run in runs):
        raise ProvenanceError(where + " predicate.runs", "every run is an object")
    try:
        data = ledger_bytes(_ledger_part(run) for run in runs)
        parse_ledger(data)
    except (AgentloopError, KeyError, TypeError) as exc:
        raise ProvenanceError(where + " predicate.runs", "are not ledger lines: %s" % (exc,)) from None
    expected = {"size": len(runs), "root": ledger_root(data)}
    if differing({"size": ledger.get("size"), "root": ledger.get("root")}, expected):  # as JSON: true is not 1
        raise ProvenanceError(where + " predicate.ledger", "its size and root are not those of its runs' ledger lines")
    return ledger, runs, data


def _subject_of(run: Mapping[str, Any]) -> Tuple[str, str]:
    """The subject :func:`attest_batch` writes for an ``ok`` run: its transcript's file name and SHA-256."""
    return (os.path.basename(transcript_path("", str(run["name"]))), str(run["sha256"]))


def _run_of(path: str, sha256: str, ok_runs: Sequence[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """The ``ok`` run whose transcript ``path`` is: by SHA-256, and by file name among runs with the same bytes."""
    same = [run for run in ok_runs if run["sha256"] == sha256]
    named = [run for run in same if _subject_of(run)[0] == os.path.basename(path)]
    found = named or same
    return found[0] if found else None


def _check_batch_predicate(attestation: Attestation, files: Sequence[str], manifest: Optional[bytes]) -> FilesChecked:
    where = "attestation line %d" % (attestation.line,)
    ledger, runs, data = _check_ledger(attestation.predicate, where)
    ok_runs = [run for run in runs if run.get("status") == "ok"]
    # one subject per ok run, name and digest: two runs may have the very same bytes (the same task, replayed)
    if sorted(attestation.subjects) != sorted(_subject_of(run) for run in ok_runs):
        raise ProvenanceError(where + " subject", "the subjects are not the ok runs of its predicate")
    checked: List[Tuple[str, str]] = []
    for path in files:
        facts = checked_facts(path, "checked")
        run = _run_of(path, facts["sha256"], ok_runs)
        if run is None:
            raise ProvenanceError(path, "its SHA-256 %s... is no subject of the attestation" % (facts["sha256"][:16],))
        expected = dict(ok_line(run["name"], facts), **run_fields(facts))
        key = differing(run, expected)
        if key:
            raise ProvenanceError(path, "the attestation's run %s has another %s" % (json.dumps(run["name"]), key))
        checked.append((path, run["name"]))
    if manifest is not None and manifest != data:
        raise ProvenanceError(
            "--manifest",
            "is not the attested ledger of %d runs with root %s..." % (len(runs), str(ledger.get("root"))[:16]),
        )
    given = {name for _, name in checked}
    unchecked = tuple(run["name"] for run in ok_runs if run["name"] not in given)
    return FilesChecked(tuple(checked), unchecked, dict(ledger), manifest is not None)


def check_files(attestation: Attestation, files: Sequence[str], manifest: Optional[bytes] = None) -> FilesChecked:
    """Check ``files`` (and, for a batch, the ledger ``manifest`` when given) against a verified attestation.

    A run's: the one file is the subject (SHA-256), verifies, and gives the
    very predicate.  A batch's: the predicate's runs are ledger lines whose
    root and size are its ledger's; the subjects are its ``ok`` runs; every
    file is a subject and gives its run's fields; ``manifest``, when given,
    is byte for byte the ledger.  Raises
    :class:`~agentloop.errors.ProvenanceError` naming the file and field.
    """
    if attestation.predicate_type == RUN_PREDICATE:
        if manifest is not None:
            raise ProvenanceError("--manifest", "is for a batch's attestation; this one is of one run")
        return _check_run_predicate(attestation, files)
    return _check_batch_predicate(attestation, files, manifest)


def default_name(path: str) -> str:
    """Where an attestation of ``path`` goes: ``<path>.intoto.jsonl`` (in-toto ``spec/v1/bundle.md``)."""
    return path + ".intoto.jsonl"
