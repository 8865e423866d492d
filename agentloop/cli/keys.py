"""The command line of public keys: ``keygen``, ``cosign``, ``witness-request``, and the key options.

::

    agentloop keygen NAME [--witness] [-o PREFIX] [--unsafe-pure-python-signer]
    agentloop cosign CKPT --key WITNESS_KEY --trust LOG_VKEY... [--require NAME]... --transcript FILE
                     [--state STATE] [--time T] [-o OUT | -o -] [--unsafe-pure-python-signer]
    agentloop cosign --request REQ ...   (a witness that needs no log: :mod:`.tlog`)
    agentloop witness-request OLD NEW [--transcript FILE | --ledger MANIFEST]

and, for :mod:`.anchor`, ``--sign KEY`` (``checkpoint``) and ``--trust VKEY`` /
``--require NAME`` (``verify``, ``check-proof``, ``consistency``, ``report``).
Keys are in the text formats of Go's ``golang.org/x/mod/sumdb/note``
(:mod:`agentloop.signing.keys`): a ``.key`` file holds
``PRIVATE+KEY+<name>+<hash>+<base64>``, a ``.pub`` file ``<name>+<hash>+<base64>``.

Signing needs the ``cryptography`` package (constant-time).  Without it,
every command that signs refuses with one line unless
``--unsafe-pure-python-signer`` is given: the pure-Python signer is slow
and not side-channel safe.  Verifying never needs it.

``cosign`` is a witness (C2SP ``tlog-witness``) for a log it trusts: it
checks the checkpoint's signatures with the ``--trust`` keys, then its
consistency with the last checkpoint of the same origin it cosigned (kept
in ``--state``; the proof is computed from ``--transcript`` and checked
against both roots, so a wrong transcript cannot make it pass), then adds a
``cosignature/v1`` signature at ``--time`` (default: the clock), records
the new checkpoint in the state (:mod:`agentloop.tlog.witness`'s file,
shared with ``cosign --request`` and ``witness serve``) and only then
writes it out.

``witness-request`` prints the body of a ``tlog-witness`` ``add-checkpoint``
request: ``old <size>``, the consistency proof from ``OLD`` to ``NEW``
computed from ``--transcript`` (and checked before it is printed), a blank
line, and ``NEW``.  ``OLD`` is the checkpoint the witness last cosigned, or
the size it holds: ``0`` for a witness that has seen none, or the size a
witness's 409 answer names (write ``./5`` for a file named 5).  NEW may
be a batch ledger's checkpoint (``manifest.checkpoint``): then the proof
is computed from ``--ledger MANIFEST`` (:mod:`.ledger_witness`).

Exit codes: 0 done; 1 a fault (a signature that fails, an inconsistent or
rolled-back checkpoint, a transcript that does not give the checkpoint):
nothing is written then; 2 usage error (a key file that exists or cannot
be read, a malformed key or state file, no signer available, an unsigned
checkpoint); 70, 130, 141 as for every command.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import stat
import time
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, TextIO, Tuple, Union

from ..errors import BadSignatureError, MalformedCheckpointError, ProofError
from ..signing.backend import cryptography_available
from ..signing.cosignature import CosignatureSigner, verifier_from_key
from ..signing.keys import (
    ALG_COSIGNATURE_V1,
    ALG_ED25519,
    generate_key,
    read_signer_key,
    read_verifier_key,
    write_signer_key,
    write_verifier_key,
)
from ..signing.note import Ed25519Signer, Verifier
from ..signing.witness import build_add_checkpoint_request
from ..transcript.anchor import verify_checkpoint
from ..transcript.checkpoint import ORIGIN_PREFIX, Checkpoint, read_checkpoint, sign_checkpoint, verify_signatures
from ..transcript.durable import file_type
from ..transcript.proofs import check_consistency, prove_consistency
from .output import Commands, Refused, check_input, check_output, emit, write_file

if TYPE_CHECKING:
    from ..tlog.witness import Held, WitnessState

__all__ = [
    "NO_SIGNER",
    "add_commands",
    "add_sign_options",
    "add_trust_options",
    "load_signers",
    "load_trusted",
    "signer_names",
]

#: The one line a command that must sign prints without a signer.
NO_SIGNER = (
    "signing needs the 'cryptography' package (pip install agentloop[sign]), which is constant-time, "
    "and it is not installed; --unsafe-pure-python-signer signs with the slow pure-Python signer, "
    "which is not side-channel safe"
)


# --- options shared with .anchor ----------------------------------------------------------------


def add_unsafe_option(parser: argparse.ArgumentParser) -> None:
    """``--unsafe-pure-python-signer``."""
    parser.add_argument(
        "--unsafe-pure-python-signer",
        action="store_true",
        help="without the 'cryptography' package, sign with the pure-Python signer (slow, NOT side-channel safe)",
    )


def add_sign_options(parser: argparse.ArgumentParser) -> None:
    """``--sign KEY`` (repeatable) and ``--unsafe-pure-python-signer``."""
    parser.add_argument(
        "--sign",
        action="append",
        default=[],
        metavar="KEY",
        help="also sign with this Ed25519 note key file (PRIVATE+KEY+...; repeatable)",
    )
    add_unsafe_option(parser)


def add_trust_options(parser: argparse.ArgumentParser) -> None:
    """``--trust VKEY`` and ``--require NAME`` (both repeatable)."""
    parser.add_argument(
        "--trust",
        action="append",
        default=[],
        metavar="VKEY",
        help="a public key file (note key or witness key) whose signatures count; repeatable",
    )
    parser.add_argument(
        "--require", action="append", default=[], metavar="NAME", help="this --trust key must have signed; repeatable"
    )


def _can_sign(args: argparse.Namespace, option: str) -> bool:
    """The pure signer's opt-in, or ``Refused`` (exit 2) when no signer is available at all."""
    unsafe = bool(getattr(args, "unsafe_pure_python_signer", False))
    if not cryptography_available() and not unsafe:
        raise Refused(option, NO_SIGNER)
    return unsafe


def _signer_key(path: str, option: str, alg: int, unsafe: bool) -> Any:
    check_input(path, pipe=False)
    key = read_signer_key(path, allow_slow_unsafe_signer=unsafe)
    if key.alg != alg:
        if alg == ALG_ED25519:
            raise Refused(
                option,
                "%s is a witness key (cosignature/v1): it cosigns with 'agentloop cosign', it does not sign checkpoints"
                % (path,),
            )
        raise Refused(option, "%s is not a witness key (make one with 'agentloop keygen NAME --witness')" % (path,))
    return key


def load_signers(args: argparse.Namespace) -> List[Ed25519Signer]:
    """The ``--sign`` key files as signers; ``Refused``/``SigningKeyError`` (exit 2) when unusable."""
    if not args.sign:
        return []
    unsafe = _can_sign(args, "--sign")
    signers = [Ed25519Signer(_signer_key(path, "--sign", ALG_ED25519, unsafe), unsafe) for path in args.sign]
    names = [(s.name, s.key_id) for s in signers]
    if len(set(names)) != len(names):
        raise Refused("--sign", "the same key is given twice")
    return signers


def load_trusted(args: argparse.Namespace) -> List[Verifier]:
    """The ``--trust`` key files as verifiers; ``--require`` without ``--trust`` is ``Refused``."""
    if args.require and not args.trust:
        raise Refused("--require", "names a --trust key, and none is given")
    trusted: List[Verifier] = []
    for path in args.trust:
        check_input(path, pipe=False)
        trusted.append(verifier_from_key(read_verifier_key(path)))
    for name in args.require:
        if name not in {verifier.name for verifier in trusted}:
            raise Refused("--require", "no --trust key is named %r" % (name,))
    return trusted


def signer_names(names: Sequence[str]) -> str:
    """``NAME, NAME`` with the HMAC key (whose name is the origin) called ``the HMAC key``."""
    return ", ".join("the HMAC key" if name.startswith(ORIGIN_PREFIX) else name for name in names)


# --- keygen ------------------------------------------------------------------------------------


def _default_prefix(name: str) -> str:
    """A file name from a key name: every character but letters, digits, ``.``, ``_``, ``-`` becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "key"


def _cmd_keygen(args: argparse.Namespace, out: TextIO) -> int:
    unsafe = _can_sign(args, "no signer")
    prefix = _default_prefix(args.name) if args.output is None else args.output
    try:
        mode: Optional[int] = os.stat(prefix).st_mode
    except OSError:
        mode = None
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # -o /dev/null: keys beside a device
        raise Refused(
            prefix, "is %s: -o takes a file prefix (PREFIX.key and PREFIX.pub are written)" % (file_type(mode),)
        )
    private, public = prefix + ".key", prefix + ".pub"
    for path in (private, public):
        if os.path.lexists(path):
            raise Refused(path, "already exists; keygen never overwrites a key")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise Refused(path, "its folder does not exist")
    skey, vkey = generate_key(args.name, ALG_COSIGNATURE_V1 if args.witness else ALG_ED25519, unsafe)
    write_signer_key(private, skey)
    try:
        write_verifier_key(public, vkey)
    except BaseException:
        os.unlink(private)  # ours: made a moment ago with O_EXCL
        raise
    kind = "witness key (cosignature/v1)" if args.witness else "note signing key (Ed25519)"
    emit(out, "%s: private %s, mode 0600: keep it secret" % (private, kind))
    emit(out, "%s: public key: %s" % (public, vkey))
    return 0


# --- cosign: a witness -------------------------------------------------------------------------


def _read_state(path: str) -> "WitnessState":
    """The witness state (:func:`agentloop.tlog.witness.load_state`): the last checkpoint cosigned per log."""
    from ..tlog.witness import load_state  # only here: the other commands of this module (and verify) need no witness

    if os.path.lexists(path):
        check_input(path, pipe=False)
    return load_state(path)


def _timestamp_arg(text: str) -> int:
    """``--time``: C2SP tlog-cosignature's timestamp "MUST NOT exceed 2^63 - 1"; a witness's is never 0
    (tlog-witness)."""
    if not text.isascii() or not text.isdigit() or len(text) > 20 or not 1 <= int(text) <= 2**63 - 1:
        raise argparse.ArgumentTypeError(
            "must be seconds since the UNIX epoch (a non-negative integer), from 1 to 2**63-1"
        )
    return int(text)


def _failed(name: str, reason: str, out: TextIO) -> int:
    emit(out, "%s: FAILED: %s" % (name, reason))
    return 1


def _extends(args: argparse.Namespace, ckpt: Checkpoint, seen: "Optional[Held]") -> Tuple[bool, str]:
    """Step 3 of :func:`_cmd_cosign`: ``(True, how ckpt extends what was cosigned)`` or ``(False, why not)``."""
    if seen is None or seen.size == 0:
        result = verify_checkpoint(args.transcript, ckpt)
        if not result.ok:
            first = result.faults[0]
            return False, "the transcript %s does not give it: %s: %s" % (args.transcript, first.kind, first.detail)
        return True, "the first checkpoint of this log the witness sees"
    old = Checkpoint(ckpt.first, seen.size, seen.root.hex(), seen.head_hash() or "")
    if ckpt.size < old.size:
        why = "it covers %d records, fewer than the %d this witness cosigned before: a rollback"
        return False, why % (ckpt.size, old.size)
    try:
        check_consistency(old, ckpt, prove_consistency(args.transcript, old.size, ckpt.size))
    except ProofError as exc:
        return False, "not consistent with the %d records this witness cosigned before: %s" % (old.size, exc)
    return True, "consistent with the %d records cosigned before" % (old.size,)


def _cmd_cosign(args: argparse.Namespace, out: TextIO) -> int:
    """Steps: 1. keys; 2. the checkpoint and the log's signatures; 3. consistency; 4. cosign, write, remember."""
    if args.ckpt is None or args.transcript is None:
        raise Refused("CKPT/--transcript", "both are needed (or --request REQ: a witness that needs no log)")
    # 1.
    unsafe = _can_sign(args, "--key")
    witness = _signer_key(args.key, "--key", ALG_COSIGNATURE_V1, unsafe)
    trusted = load_trusted(args)
    if not trusted:
        raise Refused("--trust", "a witness needs the log's public key (repeatable)")
    if args.state is not None:
        _read_state(args.state)  # a state file it cannot use is refused before any work
        if not os.path.isdir(os.path.dirname(os.path.abspath(args.state))):
            raise Refused(args.state, "its folder does not exist")
    target = args.ckpt if args.output is None else args.output
    if target != "-" and target != args.ckpt:
        check_output(target, args.overwrite, inputs=(args.transcript, args.state))
    check_input(args.ckpt, pipe=False)
    check_input(args.transcript, pipe=False)
    # 2.
    try:
        ckpt = read_checkpoint(args.ckpt)
    except MalformedCheckpointError as exc:
        return _failed(args.ckpt, "anchor_malformed: %s" % (exc,), out)
    except OSError as exc:
        raise Refused(args.ckpt, "cannot read it: %s" % (exc.strerror or exc,)) from None
    try:
        signers = verify_signatures(ckpt, trusted, args.require)
    except BadSignatureError as exc:
        return _failed(args.ckpt, "bad_signature: %s" % (exc.reason,), out)
    # 3. and 4. under the state file's lock, from the state as it is now (a witness serve may share the file)
    from ..tlog.witness import Held, save_state, state_lock  # only here: verify and keygen need no witness

    with state_lock(args.state) if args.state is not None else contextlib.nullcontext():
        state = _read_state(args.state) if args.state is not None else {}
        extends, history = _extends(args, ckpt, state.get(ckpt.origin))
        if not extends:
            return _failed(args.ckpt, history, out)
        stamp = int(time.time()) if args.time is None else args.time
        data = sign_checkpoint(ckpt, signers=[CosignatureSigner(witness, stamp, unsafe)]).to_bytes()
        if args.state is not None:  # persisted before it is given out (C2SP tlog-witness, add-checkpoint)
            state[ckpt.origin] = Held(ckpt.size, bytes.fromhex(ckpt.root), data)
            save_state(args.state, state)
    if target == "-":
        emit(out, data.decode("utf-8"), lines=True, end="")
        return 0
    write_file(target, data)
    emit(
        out,
        "%s: cosigned by %s at time %d: %d records, signed by %s, %s"
        % (target, witness.name, stamp, ckpt.size, signer_names(signers), history),
    )
    return 0


# --- witness-request ---------------------------------------------------------------------------


def _from_size(args: argparse.Namespace, new: Checkpoint, old_size: int) -> Union[str, List[bytes]]:
    """The consistency proof from the transcript's first ``old_size`` records to NEW, or why there is none."""
    if args.transcript is None:
        raise Refused("--transcript", "is needed to compute the consistency proof from size %d" % (old_size,))
    check_input(args.transcript, pipe=False)
    if old_size > new.size:
        return "the new checkpoint covers %d records, fewer than the %d given: a rollback" % (new.size, old_size)
    try:
        made = prove_consistency(args.transcript, old_size, new.size)
    except ProofError as exc:
        return str(exc)
    if (made.first, made.root) != (new.first, new.root):
        return "the first %d records of %s do not give it" % (new.size, args.transcript)
    return [bytes.fromhex(node) for node in made.proof]


def _old_and_proof(args: argparse.Namespace, new: Checkpoint, out: TextIO) -> Union[int, Tuple[int, List[bytes]]]:
    """OLD's size and the consistency proof from it to NEW; or the exit status of a failure, printed."""
    if args.old.isascii() and args.old.isdigit():  # a size: 0, or what a witness's 409 answer says it holds
        old_size = int(args.old)
        made_from = _from_size(args, new, old_size) if old_size else []
        if isinstance(made_from, str):
            return _failed(args.new, made_from, out)
        return old_size, made_from
    if args.transcript is None:
        raise Refused("--transcript", "is needed to compute the consistency proof from %s" % (args.old,))
    check_input(args.old, pipe=False)
    check_input(args.transcript, pipe=False)
    try:
        old = read_checkpoint(args.old)
    except MalformedCheckpointError as exc:
        return _failed(args.old, "anchor_malformed: %s" % (exc,), out)
    except OSError as exc:
        raise Refused(args.old, "cannot read it: %s" % (exc.strerror or exc,)) from None
    try:
        if new.size < old.size:
            why = "the new checkpoint covers %d records, fewer than the old one's %d: a rollback"
            raise ProofError(why % (new.size, old.size))
        made = prove_consistency(args.transcript, old.size, new.size)
        check_consistency(old, new, made)
    except ProofError as exc:
        return _failed(args.new, str(exc), out)
    return old.size, [bytes.fromhex(node) for node in made.proof]


#: The start of a batch ledger checkpoint's origin (agentloop.batch.ledger.MANIFEST_ORIGIN_PREFIX, not imported:
#: a transcript's request, and verify, which imports this module, load no batch code).
_LEDGER_ORIGIN = b"agentloop-manifest/1/"


def _names_a_batch(path: str) -> bool:
    """Whether the checkpoint file ``path`` starts with a batch ledger's origin (unreadable: ``False``)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(_LEDGER_ORIGIN)) == _LEDGER_ORIGIN
    except OSError:
        return False


def _cmd_witness_request(args: argparse.Namespace, out: TextIO) -> int:
    check_input(args.new, pipe=False)
    if _names_a_batch(args.new):
        from .ledger_witness import ledger_witness_request  # only here: a transcript's request loads no batch code

        return ledger_witness_request(args, out)
    if args.ledger is not None:
        raise Refused("--ledger", "is for a batch ledger's checkpoint; %s is a transcript's" % (args.new,))
    try:
        new = read_checkpoint(args.new)
    except MalformedCheckpointError as exc:
        return _failed(args.new, "anchor_malformed: %s" % (exc,), out)
    except OSError as exc:
        raise Refused(args.new, "cannot read it: %s" % (exc.strerror or exc,)) from None
    if not new.signatures:
        raise Refused(
            args.new, "is not signed: a witness verifies the log's signature (agentloop checkpoint --sign KEY)"
        )
    found = _old_and_proof(args, new, out)
    if isinstance(found, int):
        return found
    body = build_add_checkpoint_request(found[0], found[1], new.to_bytes())
    emit(out, body.decode("utf-8"), lines=True, end="")
    return 0


def add_commands(sub: Commands) -> None:
    """Register ``keygen``, ``cosign`` and ``witness-request``."""
    keygen = sub.add_parser("keygen")
    keygen.add_argument(
        "name", metavar="NAME", help="the key name in signature lines (yours to choose; no space or '+')"
    )
    keygen.add_argument(
        "--witness", action="store_true", help="a witness key (cosignature/v1) instead of a note signing key"
    )
    keygen.add_argument(
        "-o", "--output", metavar="PREFIX", help="write PREFIX.key and PREFIX.pub (default: NAME, made a file name)"
    )
    add_unsafe_option(keygen)
    keygen.set_defaults(handler=_cmd_keygen)

    cosign = sub.add_parser("cosign")
    cosign.add_argument("ckpt", metavar="CKPT", nargs="?", help="the checkpoint to cosign (with --transcript)")
    cosign.add_argument(
        "--key", required=True, metavar="WITNESS_KEY", help="the witness's private key (keygen --witness)"
    )
    cosign.add_argument("--transcript", metavar="FILE", help="the log's transcript, to compute the consistency proof")
    cosign.add_argument(
        "--state", metavar="STATE", help="the witness's memory: the last size cosigned per log (created if missing)"
    )
    cosign.add_argument(
        "--time",
        type=_timestamp_arg,
        metavar="T",
        help="the cosignature's timestamp, seconds since the epoch (default: now)",
    )
    cosign.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="write the cosigned checkpoint there (default: replace CKPT; - for stdout)",
    )
    cosign.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    add_trust_options(cosign)
    add_unsafe_option(cosign)
    cosign.set_defaults(handler=_cmd_cosign)

    request = sub.add_parser("witness-request")
    request.add_argument(
        "old", metavar="OLD", help="the checkpoint the witness last cosigned, or the size it holds (0 for none)"
    )
    request.add_argument("new", metavar="NEW", help="the new signed checkpoint (a transcript's or a batch ledger's)")
    request.add_argument(
        "--transcript", metavar="FILE", help="the transcript, to compute the consistency proof from OLD to NEW"
    )
    request.add_argument(
        "--ledger",
        metavar="MANIFEST",
        help="when NEW is a batch ledger's checkpoint: the ledger (manifest.jsonl), for the consistency proof",
    )
    request.set_defaults(handler=_cmd_witness_request)
