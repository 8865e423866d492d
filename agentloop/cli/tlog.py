"""The command line of C2SP tlog-proofs and of the log-free witness (wired into :mod:`agentloop.cli`).

::

    agentloop prove FILE --bundle [--index I] [--checkpoint CKPT] [-o OUT [--overwrite]]
    agentloop prove LEDGER --bundle --run NAME [--checkpoint CKPT] [-o OUT [--overwrite]]
    agentloop check-proof PROOF.tlog-proof --trust VKEY... [--require NAME]... [--key-file K | --key-env VAR]
                          [--origin ORIGIN] [--leaf FILE]
    agentloop cosign --request REQ --key WITNESS_KEY --trust LOG_VKEY... --state STATE [--origin ORIGIN]...
                     [--time T] [-o OUT [--overwrite]] [--unsafe-pure-python-signer]
    agentloop witness serve --key WITNESS_KEY --trust LOG_VKEY... --state STATE [--origin ORIGIN]...
                            [--host H] [--port P] [--prefix /PATH] [--unsafe-pure-python-signer]
    agentloop witness submit URL REQ --trust WITNESS_VKEY... [--require NAME]... [-o OUT [--overwrite]]

``prove --bundle``, ``check-proof`` of a tlog-proof and ``cosign
--request`` are reached through :mod:`.anchor` and :mod:`.keys`, which own
those commands; ``witness`` is registered here.

Exit codes: 0 done; 1 a fault (a proof or signature that does not hold,
a witness that refuses, a witness that cannot be reached): nothing is
written then; 2 usage error (an option missing or not taken, a key or state
file that cannot be used, a file that would be replaced); 70, 130, 141 as
for every command.  ``witness serve`` runs until Ctrl-C or SIGTERM, then
exits 0.
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from types import FrameType
from typing import Callable, Optional, Sequence, TextIO, Tuple, Union

from ..batch.ledger import parse_manifest_checkpoint
from ..errors import BadSignatureError, MalformedCheckpointError, MalformedManifestError, MalformedNoteError, ProofError
from ..signing.cosignature import CosignatureSigner, CosignatureVerifier
from ..signing.keys import ALG_COSIGNATURE_V1
from ..signing.note import Note, Verifier, verify_note
from ..signing.witness import parse_add_checkpoint_request, parse_add_checkpoint_response
from ..tlog.bundle import check_agentloop_leaf, describe_origin, prove_ledger_line, prove_record
from ..tlog.proof import MAX_TLOG_PROOF_BYTES, TlogProof, is_tlog_proof, parse_tlog_proof, verify_tlog_proof
from ..tlog.server import MAX_BODY_BYTES, start_server
from ..tlog.witness import Witness, WitnessPolicy, is_agentloop_origin
from ..transcript.checkpoint import read_checkpoint
from ..transcript.durable import read_small
from ..transcript.format import MAX_LINE_BYTES
from .keys import (
    _can_sign,
    _signer_key,
    add_trust_options,
    add_unsafe_option,
    load_trusted,
    signer_names,
)
from .anchor import _key, default_checkpoint_path
from .output import Commands, Refused, check_input, check_output, emit, note, write_file

__all__ = [
    "add_prove_options",
    "prove_bundle",
    "add_check_options",
    "is_tlog_proof_file",
    "check_tlog_proof",
    "add_cosign_options",
    "cosign_request",
    "add_commands",
    "extend",
]

_MAX_LEDGER_BYTES = 1 << 30
_MAX_RESPONSE_BYTES = 1 << 20
_HTTP_SECONDS = 30


def _failed(name: str, reason: str, out: TextIO) -> int:
    emit(out, "%s: FAILED: %s" % (name, reason))
    return 1


def _read(path: str, limit: int, what: str) -> bytes:
    """A regular file of at most ``limit`` bytes (``-``: standard input), or :class:`Refused` (exit 2)."""
    if path == "-":
        data = sys.stdin.buffer.read(limit + 1) if sys.stdin is not None else b""
    else:
        check_input(path, pipe=False)
        try:
            data = read_small(path, limit)
        except OSError as exc:
            raise Refused(path, "cannot read the %s: %s" % (what, exc.strerror or exc)) from None
    if len(data) > limit:
        raise Refused(path, "the %s is longer than %d bytes" % (what, limit))
    return data


def _write(target: str, data: bytes, out: TextIO) -> None:
    if target == "-":
        emit(out, data.decode("utf-8"), lines=True, end="")
        return
    write_file(target, data)


def _port_arg(text: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 5 or int(text) > 65535:
        raise argparse.ArgumentTypeError("must be a TCP port, 0 to 65535 (0 picks a free one)")
    return int(text)


# --- prove --bundle ---------------------------------------------------------------------------


def add_prove_options(prove: argparse.ArgumentParser) -> None:
    """``prove``'s ``--bundle``, ``--checkpoint`` and ``--run``."""
    prove.add_argument(
        "--bundle",
        action="store_true",
        help="write a C2SP tlog-proof@v1 (index, inclusion hashes, the signed checkpoint) instead of JSON",
    )
    prove.add_argument(
        "--checkpoint",
        metavar="CKPT",
        help="with --bundle: the signed checkpoint to prove in (default: FILE with .jsonl replaced by .checkpoint)",
    )
    prove.add_argument(
        "--run", metavar="NAME", help="with --bundle: FILE is a batch ledger; prove run NAME's line in it"
    )


def prove_bundle(args: argparse.Namespace, out: TextIO, default_checkpoint: str) -> int:
    """``prove FILE --bundle``: the tlog-proof of one record (default the last) or of one ledger line."""
    if args.from_size is not None or args.size is not None:
        raise Refused("--bundle", "proves one entry in the signed checkpoint's tree: --from and --size are not taken")
    if args.run is not None and args.index is not None:
        raise Refused("--run", "names the ledger line to prove: --index is not taken with it")
    ckpt_path = args.checkpoint if args.checkpoint is not None else default_checkpoint
    check_input(args.file, pipe=False)
    check_input(ckpt_path, pipe=False)
    if args.output is not None and args.output != "-":
        check_output(args.output, args.overwrite, inputs=(args.file, ckpt_path))
    try:
        if args.run is None:
            proof = prove_record(args.file, read_checkpoint(ckpt_path), args.index)
        else:
            ledger = _read(args.file, _MAX_LEDGER_BYTES, "ledger")
            proof = prove_ledger_line(
                ledger, parse_manifest_checkpoint(_read(ckpt_path, 64 * 1024, "checkpoint")), args.run
            )
    except OSError as exc:
        raise Refused(ckpt_path, "cannot read it: %s" % (exc.strerror or exc,)) from None
    except MalformedCheckpointError as exc:
        return _failed(ckpt_path, "anchor_malformed: %s" % (exc,), out)
    except (ProofError, MalformedManifestError) as exc:
        emit(out, "%s: no proof: %s" % (args.file, exc))
        return 1
    return _emit_bundle(args, proof, out)


def _emit_bundle(args: argparse.Namespace, proof: TlogProof, out: TextIO) -> int:
    data = proof.to_bytes()
    target = "-" if args.output is None else args.output
    _write(target, data, out)
    if target != "-":
        head = proof.tree_head()
        emit(
            out,
            "tlog-proof: %s (entry %d of the %d of %s)"
            % (target, proof.index, head.size, describe_origin(head.origin)),
        )
    return 0


# --- check-proof of a tlog-proof --------------------------------------------------------------


def add_check_options(check: argparse.ArgumentParser) -> None:
    """``check-proof``'s ``--origin`` and ``--leaf`` (tlog-proofs only)."""
    check.add_argument(
        "--origin",
        metavar="ORIGIN",
        help="a tlog-proof: the one log origin accepted (default: any agentloop run or batch)",
    )
    check.add_argument(
        "--leaf", metavar="FILE", help="a tlog-proof: the logged entry's bytes (default: the proof's extra line)"
    )


def is_tlog_proof_file(path: str) -> bool:
    """Whether ``path`` is a regular file that starts with the tlog-proof header."""
    check_input(path, pipe=False)
    try:
        with open(path, "rb") as handle:
            return is_tlog_proof(handle.read(64))
    except OSError:
        return False


def _origin_ok(origin: Optional[str], actual: str) -> Optional[str]:
    """Why ``actual`` is not acceptable, or ``None``: the one ``--origin``, else an agentloop run or batch."""
    if origin is not None or is_agentloop_origin(actual):
        return None  # verify_tlog_proof compares it to --origin
    return "the checkpoint's origin %r is not an agentloop run or batch (name the log with --origin)" % (actual[:100],)


def check_tlog_proof(args: argparse.Namespace, out: TextIO, key: Optional[bytes], trusted: Sequence[Verifier]) -> int:
    """``check-proof PROOF.tlog-proof --trust VKEY...``: tlog-proof verification, then agentloop's leaf check."""
    if args.checkpoint is not None:
        raise Refused("--checkpoint", "a tlog-proof carries its checkpoint: --checkpoint is not taken")
    if key is None and not trusted:
        raise Refused(
            "--trust", "a tlog-proof is checked against the log's keys: give --trust VKEY (or --key-file/--key-env)"
        )
    leaf = _read(args.leaf, MAX_LINE_BYTES + 1, "entry") if args.leaf is not None else None
    data = _read(args.proof, MAX_TLOG_PROOF_BYTES, "tlog-proof")
    try:
        proof = parse_tlog_proof(data)
        origin = proof.tree_head().origin
        wrong = _origin_ok(args.origin, origin)
        if wrong is not None:
            raise ProofError(wrong)
        if leaf is not None and is_agentloop_origin(origin) and leaf.endswith(b"\n"):
            leaf = leaf[:-1]  # a record or ledger line as a file; another log's entry may end in a newline
        proved = verify_tlog_proof(proof, trusted, leaf=leaf, require=args.require, origin=args.origin, key=key)
        what = check_agentloop_leaf(proved, proof.checkpoint.to_bytes())
    except BadSignatureError as exc:
        return _failed(args.proof, "bad_signature: %s" % (exc.reason,), out)
    except ProofError as exc:
        return _failed(args.proof, str(exc), out)
    names = signer_names([name for name in proved.signers if name not in proved.witnesses])
    witnessed = (
        "; cosigned by %s" % (", ".join(proved.witnesses),) if proved.witnesses else "; no witness cosignature checked"
    )
    emit(
        out,
        "%s: ok, %s is entry %d of the %d of %s, signed by %s%s"
        % (args.proof, what, proved.index, proved.size, describe_origin(proved.origin), names, witnessed),
    )
    return 0


# --- cosign --request ---------------------------------------------------------------------------


def add_cosign_options(cosign: argparse.ArgumentParser) -> None:
    """``cosign``'s ``--request`` and ``--origin``."""
    cosign.add_argument(
        "--request",
        metavar="REQ",
        help="witness from an add-checkpoint request body alone (what witness-request prints; - for stdin)",
    )
    _origin_option(cosign)


def _origin_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a log this witness cosigns (repeatable; default: any agentloop run or batch)",
    )


def _witness(args: argparse.Namespace) -> Witness:
    """The witness the options describe; :class:`Refused` (exit 2) when they cannot make one."""
    unsafe = _can_sign(args, "--key")
    key = _signer_key(args.key, "--key", ALG_COSIGNATURE_V1, unsafe)
    trusted = load_trusted(args)
    if not trusted:
        raise Refused("--trust", "a witness needs the log's public key (repeatable)")
    for verifier in trusted:
        if isinstance(verifier, CosignatureVerifier):
            raise Refused("--trust", "%s is a witness key: a witness trusts the log's note key" % (verifier.name,))
    if args.state is None:
        raise Refused("--state", "a witness remembers the last checkpoint it cosigned per log: give its state file")
    if not os.path.isdir(os.path.dirname(os.path.abspath(args.state))):
        raise Refused(args.state, "its folder does not exist")
    return Witness(CosignatureSigner(key, None, unsafe), WitnessPolicy(tuple(trusted), tuple(args.origin)), args.state)


def cosign_request(args: argparse.Namespace, out: TextIO) -> int:
    """``cosign --request REQ``: tlog-witness's add-checkpoint, answered from the body and the state alone."""
    if args.ckpt is not None or args.transcript is not None:
        raise Refused(
            "--request", "the request holds the checkpoint and the proof: CKPT and --transcript are not taken"
        )
    witness = _witness(args)
    target = "-" if args.output is None else args.output
    if target != "-":
        check_output(target, args.overwrite, inputs=(args.request, args.state))
    body = _read(args.request, MAX_BODY_BYTES, "request")
    answer = witness.add_checkpoint(body, args.time)
    if answer.status != 200 or answer.checkpoint is None:
        return _failed(args.request, "%d: %s" % (answer.status, answer.reason), out)
    _write(target, answer.checkpoint, out)
    if target != "-":
        emit(out, "%s: %s by %s" % (target, answer.reason, witness.signer.name))
    return 0


# --- witness serve / submit ---------------------------------------------------------------------


def _stop_on_sigterm(stop: threading.Event) -> Callable[[], None]:
    """SIGTERM sets ``stop`` (in the main thread); returns what puts the previous handler back."""

    def handler(signum: int, frame: Optional[FrameType]) -> None:
        stop.set()

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGTERM, handler)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


def _cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    witness = _witness(args)
    prefix = args.prefix.rstrip("/")
    if prefix and not prefix.startswith("/"):
        raise Refused("--prefix", "must start with /")
    try:
        server, thread = start_server(witness, args.host, args.port, prefix, note)
    except OSError as exc:
        raise Refused("%s:%d" % (args.host, args.port), "cannot listen: %s" % (exc.strerror or exc,)) from None
    emit(
        out,
        "witness %s: POST %s/add-checkpoint (state %s; Ctrl-C stops)" % (witness.signer.name, server.url, args.state),
    )
    stop = threading.Event()
    restore = _stop_on_sigterm(stop)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        restore()
        server.shutdown()
        server.server_close()
        thread.join(5)
    emit(out, "witness %s: stopped" % (witness.signer.name,))
    return 0


def _post(url: str, body: bytes) -> Tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "text/plain"})
    try:
        with urllib.request.urlopen(request, timeout=_HTTP_SECONDS) as response:  # noqa: S310 (http/https checked)
            return int(response.status), response.read(_MAX_RESPONSE_BYTES)
    except urllib.error.HTTPError as exc:
        try:
            return int(exc.code), exc.read(_MAX_RESPONSE_BYTES)
        finally:
            exc.close()


def _cosigned(checkpoint: Note, response: bytes, trusted: Sequence[Verifier], require: Sequence[str]) -> Note:
    """tlog-witness: concatenate the response to the checkpoint, verify with the witness keys, keep the good ones."""
    lines = parse_add_checkpoint_response(response)
    verified = verify_note(Note(checkpoint.text, lines), trusted, require)
    mine = {sig.key for sig in verified.verified}
    kept = [sig for sig in checkpoint.signatures if sig.key not in mine]
    return Note(checkpoint.text, tuple(kept) + verified.verified)


def _exchange(url: str, body: bytes) -> Union[str, bytes]:
    """POST ``body``: the 200 answer's body, or why there is none (unreachable, not HTTP, refused), in one line."""
    try:
        status, answer = _post(url, body)
    except (OSError, ValueError) as exc:
        return "the witness cannot be reached: %s" % (getattr(exc, "reason", None) or exc,)
    except http.client.HTTPException as exc:  # a bad status line, a header too long: not an HTTP answer
        what = "%s: %s" % (type(exc).__name__, str(exc)[:200]) if str(exc) else type(exc).__name__
        return "the witness's answer is not HTTP (%s)" % (what,)
    if status == 409:
        held = answer.decode("ascii", "replace").strip()[:24]
        return (
            "409: the witness holds size %s for this log; make the request from it "
            "(agentloop witness-request OLD NEW --transcript FILE)" % (held,)
        )
    if status != 200:
        return "%d: %s" % (status, answer.decode("utf-8", "replace").strip()[:300])
    return answer


def _cmd_submit(args: argparse.Namespace, out: TextIO) -> int:
    trusted = load_trusted(args)
    if not trusted:
        raise Refused("--trust", "the witness's public key is needed, to check its cosignature")
    parts = urllib.parse.urlsplit(args.url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Refused("URL", "must be an http:// or https:// URL of a witness's add-checkpoint")
    target = "-" if args.output is None else args.output
    if target != "-":
        check_output(target, args.overwrite, inputs=(args.request,))
    body = _read(args.request, MAX_BODY_BYTES, "request")
    try:
        request = parse_add_checkpoint_request(body)
    except MalformedNoteError as exc:
        return _failed(args.request, str(exc), out)
    answer = _exchange(args.url, body)
    if isinstance(answer, str):
        return _failed(args.request, answer, out)
    try:
        cosigned = _cosigned(request.checkpoint, answer, trusted, args.require)
    except MalformedNoteError as exc:
        return _failed(args.request, "the witness's answer: %s" % (exc,), out)
    except BadSignatureError as exc:
        return _failed(args.request, "bad_signature: the witness's cosignature: %s" % (exc.reason,), out)
    _write(target, cosigned.to_bytes(), out)
    if target != "-":
        names = [sig.name for sig in cosigned.signatures if any(sig.name == v.name for v in trusted)]
        emit(out, "%s: cosigned by %s" % (target, ", ".join(sorted(set(names)))))
    return 0


Handler = Callable[[argparse.Namespace, TextIO], int]


def _route_prove(plain: Handler) -> Handler:
    def route(args: argparse.Namespace, out: TextIO) -> int:
        if args.bundle:
            return prove_bundle(args, out, default_checkpoint_path(args.file))
        if args.checkpoint is not None or args.run is not None:
            raise Refused("--checkpoint/--run", "are taken with --bundle only")
        return plain(args, out)

    return route


def _route_check(plain: Handler) -> Handler:
    def route(args: argparse.Namespace, out: TextIO) -> int:
        if is_tlog_proof_file(args.proof):
            return check_tlog_proof(args, out, _key(args), load_trusted(args))
        if args.origin is not None or args.leaf is not None:
            raise Refused("--origin/--leaf", "are taken with a tlog-proof (c2sp.org/tlog-proof@v1) only")
        return plain(args, out)

    return route


def _route_cosign(plain: Handler) -> Handler:
    def route(args: argparse.Namespace, out: TextIO) -> int:
        if args.request is not None:
            return cosign_request(args, out)
        if args.origin:
            raise Refused("--origin", "is taken with --request only")
        return plain(args, out)

    return route


_EXTENDS = {
    "prove": (add_prove_options, _route_prove),
    "check-proof": (add_check_options, _route_check),
    "cosign": (add_cosign_options, _route_cosign),
}


def extend(parser: argparse.ArgumentParser, name: str) -> None:
    """Add this module's options to ``prove``, ``check-proof`` or ``cosign`` (``name``), and route their new forms here.

    Those commands belong to :mod:`.anchor` and :mod:`.keys`, which build
    them first (:data:`.main.EXTENSIONS`); this module imports :mod:`.keys`,
    so the routing is done here, by wrapping their handlers, rather than there.
    """
    options, route = _EXTENDS[name]
    options(parser)
    parser.set_defaults(handler=route(parser.get_default("handler")))


def add_commands(sub: Commands) -> None:
    """Register ``witness serve`` and ``witness submit``."""
    witness = sub.add_parser("witness")
    verbs = witness.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True

    serve = verbs.add_parser("serve", help="answer POST /add-checkpoint as c2sp.org/tlog-witness specifies")
    serve.add_argument(
        "--key", required=True, metavar="WITNESS_KEY", help="the witness's private key (keygen --witness)"
    )
    serve.add_argument(
        "--state",
        metavar="STATE",
        help="the witness's memory: the last checkpoint cosigned per log (created if missing)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=_port_arg, default=8080, help="the port (default 8080; 0 picks a free one)")
    serve.add_argument("--prefix", default="", metavar="/PATH", help="the URL prefix of add-checkpoint (default: none)")
    _origin_option(serve)
    add_trust_options(serve)
    add_unsafe_option(serve)
    serve.set_defaults(handler=_cmd_serve)

    submit = verbs.add_parser(
        "submit", help="POST an add-checkpoint request to a witness, check its cosignature, keep it"
    )
    submit.add_argument("url", metavar="URL", help="the witness's add-checkpoint URL")
    submit.add_argument("request", metavar="REQ", help="the request body (what witness-request prints; - for stdin)")
    submit.add_argument("-o", "--output", metavar="OUT", help="write the cosigned checkpoint there (default: stdout)")
    submit.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    add_trust_options(submit)
    submit.set_defaults(handler=_cmd_submit)
