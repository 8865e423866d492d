"""SCITT signed statements (RFC 9943) over a transcript's checkpoint, or a batch ledger's.

A Signed Statement is a COSE_Sign1 message (RFC 9943 section 6, "Signed
Statements"; RFC 9052 section 4.2) whose protected header holds the CWT
Claims header parameter, label 15 (RFC 9597 section 2), with the Issuer
(claim 1) and the Subject (claim 2), and a ``kid`` (label 4) since no
certificate is used.  agentloop's::

    18([<<{1: -8,                              / alg: EdDSA (RFC 9053) /
           3: "text/plain; charset=utf-8",     / content type /
           4: '<key name>+<8 hex key ID>',     / kid /
           15: {1: "<issuer>", 2: "<the checkpoint's origin>"}}>>,
        {},                                    / unprotected: empty /
        '<the checkpoint note>',               / payload, attached /
        '<64-byte Ed25519 signature>'])

The payload is a checkpoint, unsigned: the COSE signature is what signs
it.  Of a transcript, its checkpoint as ``agentloop checkpoint`` writes it
(C2SP tlog-checkpoint: origin ``agentloop/1/<hash of record 0>``, size,
Merkle root, ``head``, a blank line); of a batch ledger
(``manifest.jsonl``), the ledger's checkpoint as ``agentloop batch`` writes
it (origin ``agentloop-manifest/1/<hash of the spec list>``, size, root, a
blank line: :mod:`agentloop.batch.ledger`).  The payload's origin says
which kind it is.  The subject is the checkpoint's origin, the run's or
the batch's name, so every statement about one log shares it (RFC 9943:
Issuers "can produce Signed Statements about different Artifacts under the
same Identity").  The unprotected header is empty, as a statement
registered in a Statement Sequence must be.

:func:`statement_checkpoint` checks the file before anything is signed (a
transcript verifies; a ledger parses and is the tree head of the checkpoint
beside it); :func:`sign_statement` signs; :func:`make_statement` is the
two.  :func:`check_statement` reads one back, strictly, and
:func:`check_ledger_statement` checks a ledger against it.  A ledger's
statement covers the ledger's lines, not the runs' transcripts, which are
not read: ``agentloop verify --manifest`` checks those against the lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Union

from ..batch.ledger import (
    MANIFEST_ORIGIN_PREFIX,
    ManifestCheckpoint,
    check_manifest_checkpoint,
    parse_ledger,
    parse_manifest_checkpoint,
)
from ..errors import MalformedCheckpointError, MalformedManifestError, ProofError, ProvenanceError
from ..signing.note import Ed25519Signer, Ed25519Verifier, Signer, Verifier
from ..transcript.anchor import checkpoint_of
from ..transcript.checkpoint import Checkpoint, parse_checkpoint
from .runs import checked_ledger, is_ledger, read_file
from .cose import (
    ALG,
    CLAIM_ISS,
    CLAIM_SUB,
    CONTENT_TYPE,
    CWT_CLAIMS,
    EDDSA,
    KID,
    key_label,
    parse_sign1,
    sign1,
    verify_sign1,
)

__all__ = [
    "CHECKPOINT_CONTENT_TYPE",
    "AnyCheckpoint",
    "StatementCheck",
    "statement_checkpoint",
    "sign_statement",
    "make_statement",
    "check_statement",
    "check_ledger_statement",
    "check_claims",
    "check_issuer",
    "default_name",
]

#: The content type (label 3) of the payload, a checkpoint note.
CHECKPOINT_CONTENT_TYPE = "text/plain; charset=utf-8"
#: RFC 9943 section 6: the ``iss`` value is 1 to 8192 characters long.
MAX_ISSUER = 8192

#: What a statement carries: a transcript's checkpoint, or a batch ledger's.
AnyCheckpoint = Union[Checkpoint, ManifestCheckpoint]


@dataclass(frozen=True)
class StatementCheck:
    """A signed statement that holds: who signed it, its issuer and subject, and the checkpoint it carries."""

    signer: str
    issuer: str
    subject: str
    checkpoint: AnyCheckpoint


def check_claims(claims: object, what: str) -> Mapping[int, str]:
    """The CWT claims map (RFC 9597): exactly ``iss`` (1) and ``sub`` (2), each text; ``iss`` 1 to 8192 characters."""
    if not isinstance(claims, dict) or set(claims) != {CLAIM_ISS, CLAIM_SUB}:
        raise ProvenanceError(what + " protected header 15 (CWT Claims)", "must hold exactly iss (1) and sub (2)")
    issuer, subject = claims[CLAIM_ISS], claims[CLAIM_SUB]
    if not isinstance(issuer, str) or not 1 <= len(issuer) <= MAX_ISSUER:
        raise ProvenanceError(what + " CWT claim 1 (iss)", "must be text of 1 to %d characters" % (MAX_ISSUER,))
    if not isinstance(subject, str) or not subject:
        raise ProvenanceError(what + " CWT claim 2 (sub)", "must be non-empty text")
    return claims


def check_issuer(issuer: object) -> str:
    """``issuer``, if it is text of 1 to 8192 characters (RFC 9943 section 6); else :class:`ProvenanceError`."""
    if not isinstance(issuer, str) or not 1 <= len(issuer) <= MAX_ISSUER:
        raise ProvenanceError("issuer", "must be text of 1 to %d characters (RFC 9943 section 6)" % (MAX_ISSUER,))
    return issuer


def statement_checkpoint(path: str, verifiers: Sequence[Verifier] = ()) -> AnyCheckpoint:
    """The checkpoint a statement of ``path`` carries, unsigned, once ``path`` is checked.

    A batch ledger (:func:`~agentloop.provenance.runs.is_ledger`): it parses
    and is the tree head of the checkpoint beside it, which names the batch
    (:func:`~agentloop.provenance.runs.checked_ledger`), and a signature
    line of that checkpoint by one of ``verifiers`` verifies; the runs'
    transcripts are not read.  Anything else is a transcript: it verifies
    (:func:`agentloop.transcript.anchor.checkpoint_of`).

    Raises :class:`~agentloop.errors.ProvenanceError` naming what failed.
    """
    if is_ledger(path):
        return checked_ledger(path, verifiers).checkpoint
    checkpoint, result = checkpoint_of(path)
    if checkpoint is None:  # a file that holds no record does not verify either (no_records)
        why = "%s at %s" % (result.faults[0].kind, result.faults[0].where()) if result.faults else "no record"
        raise ProvenanceError(path, "does not verify (%s): nothing is signed that was not verified" % (why,))
    return checkpoint.unsigned()


def sign_statement(checkpoint: AnyCheckpoint, signer: Signer, issuer: str) -> bytes:
    """The signed statement of ``checkpoint`` (unsigned; its origin the subject), by ``signer`` as ``issuer``.

    COSE_Sign1, EdDSA, the headers of the module docstring.  Raises
    :class:`~agentloop.errors.ProvenanceError` for an issuer RFC 9943 does
    not allow, or a checkpoint that carries signatures (what is signed is
    the tree head, not someone's signature lines).
    """
    issuer = check_issuer(issuer)
    if checkpoint.signatures:
        raise ProvenanceError("checkpoint", "carries signatures: a statement's payload is the unsigned checkpoint")
    protected = {
        ALG: EDDSA,
        CONTENT_TYPE: CHECKPOINT_CONTENT_TYPE,
        KID: key_label(signer.name, signer.key_id).encode("utf-8"),
        CWT_CLAIMS: {CLAIM_ISS: issuer, CLAIM_SUB: checkpoint.origin},
    }
    return sign1(protected, {}, checkpoint.to_bytes(), signer)


def make_statement(path: str, signer: Signer, issuer: str) -> bytes:
    """The signed statement of ``path``'s checkpoint (a transcript's or a batch ledger's), by ``signer`` as ``issuer``.

    1. ``path`` is checked (:func:`statement_checkpoint`);
    2. its checkpoint, unsigned, is the payload; its origin the subject;
    3. COSE_Sign1, EdDSA (:func:`sign_statement`).

    Raises :class:`~agentloop.errors.ProvenanceError` when the transcript
    does not verify or holds no record, or the ledger does not parse or is
    not its checkpoint's.
    """
    issuer = check_issuer(issuer)  # before any work
    # 1., 2. (a ledger checkpoint that says this key signed it must say so truly)
    own = signer.verifier() if isinstance(signer, Ed25519Signer) else None
    checkpoint = statement_checkpoint(path, [] if own is None else [own])
    # 3.
    return sign_statement(checkpoint, signer, issuer)


def _payload(payload: bytes, what: str) -> AnyCheckpoint:
    """Step 4 of :func:`check_statement`: the payload's checkpoint, of the kind its origin says."""
    try:
        if payload.startswith(MANIFEST_ORIGIN_PREFIX.encode("ascii")):
            checkpoint: AnyCheckpoint = parse_manifest_checkpoint(payload)
        else:
            checkpoint = parse_checkpoint(payload)
    except MalformedCheckpointError as exc:
        raise ProvenanceError(what + " payload", "is not a checkpoint: %s" % (exc,)) from None
    if checkpoint.signatures:  # what sign_statement signs: the tree head, never someone's signature lines
        raise ProvenanceError(
            what + " payload", "carries signature lines: a statement's payload is the unsigned checkpoint"
        )
    return checkpoint


def check_statement(data: bytes, verifiers: Sequence[Ed25519Verifier], issuer: Optional[str] = None) -> StatementCheck:
    """Read and verify a signed statement made by :func:`make_statement`.

    1. a tagged COSE_Sign1 in deterministic CBOR
       (:func:`~agentloop.provenance.cose.parse_sign1`);
    2. the protected header holds exactly alg (EdDSA), content type, kid
       and the CWT claims ``iss`` and ``sub``; the unprotected header is
       empty; the payload is attached;
    3. the signature, by the trusted key the kid names;
    4. the payload is a checkpoint (a transcript's, or with the origin
       ``agentloop-manifest/1/...`` a batch ledger's), unsigned, whose
       origin is the subject; with ``issuer``, ``iss`` is it.

    Raises :class:`~agentloop.errors.ProvenanceError` or
    :class:`~agentloop.errors.BadSignatureError`.
    """
    what = "signed statement"
    # 1.
    message = parse_sign1(data, what)
    # 2.
    labels = sorted(message.protected, key=str)
    if set(message.protected) != {ALG, CONTENT_TYPE, KID, CWT_CLAIMS}:
        raise ProvenanceError(what + " protected header", "holds labels %s, not exactly 1, 3, 4 and 15" % (labels,))
    if message.protected[CONTENT_TYPE] != CHECKPOINT_CONTENT_TYPE:
        raise ProvenanceError(what + " protected header 3 (content type)", "must be %r" % (CHECKPOINT_CONTENT_TYPE,))
    claims = check_claims(message.protected[CWT_CLAIMS], what)
    if message.unprotected:
        raise ProvenanceError(what + " unprotected header", "must be empty (RFC 9943 section 6)")
    if message.payload is None:
        raise ProvenanceError(what + " payload", "is detached: agentloop's statements carry the checkpoint")
    # 3.
    verifier = verify_sign1(message, verifiers, what=what)
    # 4.
    checkpoint = _payload(message.payload, what)
    if claims[CLAIM_SUB] != checkpoint.origin:
        raise ProvenanceError(what + " CWT claim 2 (sub)", "is not the checkpoint's origin %s" % (checkpoint.origin,))
    if issuer is not None and claims[CLAIM_ISS] != issuer:
        raise ProvenanceError(what + " CWT claim 1 (iss)", "is %r, not %r" % (claims[CLAIM_ISS][:200], issuer))
    return StatementCheck(verifier.name, claims[CLAIM_ISS], claims[CLAIM_SUB], checkpoint)


def check_ledger_statement(checked: StatementCheck, path: str) -> ManifestCheckpoint:
    """Check that ``path`` is exactly the batch ledger the statement ``checked`` is of; its checkpoint.

    1. a statement of a ledger, given a ledger (and a transcript's, a
       transcript: a mix is refused, saying which is which);
    2. the ledger parses (:func:`~agentloop.batch.ledger.parse_ledger`);
    3. its size and root are the payload's, exactly
       (:func:`~agentloop.batch.ledger.check_manifest_checkpoint`): a
       ledger only grows, and a statement covers the ledger it names, so a
       longer one needs a statement of its own.

    Raises :class:`~agentloop.errors.ProvenanceError`.  The runs'
    transcripts are not read (``verify --manifest`` checks them).
    """
    what = "signed statement"
    checkpoint = checked.checkpoint
    # 1.
    if not isinstance(checkpoint, ManifestCheckpoint):
        raise ProvenanceError(
            what,
            "is of a run's transcript (subject %s), not of the batch ledger %s: give the run's transcript"
            % (checked.subject, path),
        )
    if not is_ledger(path):
        raise ProvenanceError(
            what,
            "is of a batch ledger (subject %s), and %s is not a ledger: give the batch's manifest.jsonl"
            % (checked.subject, path),
        )
    # 2.
    data = read_file(path, "manifest")
    try:
        parse_ledger(data)
    except MalformedManifestError as exc:
        raise ProvenanceError("manifest %s" % (path,), str(exc)) from None
    # 3.
    try:
        check_manifest_checkpoint(checkpoint, data)
    except ProofError as exc:
        raise ProvenanceError(what, "%s is not the ledger of its checkpoint: %s" % (path, exc)) from None
    return checkpoint


def default_name(path: str) -> str:
    """Where the statement of ``path`` goes: ``.jsonl`` replaced by ``.statement.cose`` (or that appended)."""
    stem = path[: -len(".jsonl")] if path.endswith(".jsonl") else path
    return stem + ".statement.cose"
