"""The batch ledger: a canonical JSONL manifest, its RFC 6962 root, its checkpoint note, its proofs.

Format ``agentloop-manifest/1``
-------------------------------
* One line per spec, in spec order, each the RFC 8785 bytes of a JSON
  object and a ``\\n``.  Every line holds ``name``, ``origin`` (the run's
  ``agentloop/1/<hash of record 0>``, known before the run) and ``status``:

  - ``ok``: ``records``, ``head``, ``root`` (hex RFC 6962 root over the
    transcript's record lines), ``stop`` (the stop reason) and ``sha256``
    (of the transcript file);
  - ``worker_error``: ``error``, the type name of what the worker raised
    (its message, which carries pids and hosts, goes to a side log);
  - ``rejected``: ``reason``, why the driver refused what came back (one of
    :data:`REJECTIONS`).

* The ledger only grows.  A resumed batch keeps every earlier line and
  appends a line for each run it ran again: a name appears again only
  after lines of that name that are not ``ok`` (a retry), never after an
  ``ok`` line, which certifies its transcript for good.  A run's status is
  its last line (:func:`current`).
* The ledger's root is the RFC 6962 Merkle tree hash (RFC 9162 section
  2.1.1) over its lines, each without its ``\\n``: the hashing of
  :mod:`agentloop.transcript.merkle`.
* Its checkpoint is a C2SP signed note (https://c2sp.org/signed-note)
  whose text follows C2SP tlog-checkpoint, with no extension line::

      agentloop-manifest/1/<64 hex: SHA-256 of the RFC 8785 spec list>
      <number of lines>
      <base64 of the root>

  signed by any :class:`agentloop.signing.note.Signer` (Ed25519, or the
  HMAC key of :mod:`agentloop.signing.hmac_sha256` under the origin as key
  name, as transcript checkpoints are).  An unsigned checkpoint is the text
  and the blank line.  The origin is stable for a spec list, so a witness
  can cosign the ledger of a batch and every ledger that extends it.

Inclusion proofs (RFC 9162 section 2.1.3) show that one run belongs to the
batch; consistency proofs (section 2.1.4) that a later ledger extends an
earlier one (a batch whose driver was stopped leaves a prefix).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Set, Tuple, Union

from ..canonical import canonical_bytes
from ..errors import BadSignatureError, MalformedCheckpointError, MalformedManifestError, ProofError, UnrecordableError
from ..signing.hmac_sha256 import HmacKey
from ..signing.note import (
    Note,
    NoteSignature,
    Signer,
    Verifier,
    parse_signature_line,
    sign_note,
    strict_b64decode,
    verify_note,
)
from ..transcript.checkpoint import ORIGIN_PREFIX
from ..transcript.merkle import (
    CompactRange,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)

__all__ = [
    "MANIFEST_ORIGIN_PREFIX",
    "STATUSES",
    "REJECTIONS",
    "batch_origin",
    "ledger_bytes",
    "parse_ledger",
    "iter_ledger",
    "line_at",
    "LastLines",
    "current",
    "ledger_root",
    "GrowingLedger",
    "ManifestCheckpoint",
    "make_checkpoint",
    "sign_checkpoint",
    "parse_manifest_checkpoint",
    "check_manifest_checkpoint",
    "prove_run",
    "check_run_proof",
    "prove_extension",
    "check_extension",
]

#: Every batch ledger's checkpoint origin is this, then the spec list's SHA-256.
MANIFEST_ORIGIN_PREFIX = "agentloop-manifest/1/"
#: The three states of a ledger line.
STATUSES = ("ok", "worker_error", "rejected")
#: Why the driver refuses a transcript a worker says it wrote.
REJECTIONS = (
    "missing",  # no NAME.jsonl after the worker returned
    "does_not_verify",  # the chain or a line is broken
    "incomplete",  # no stop record at the end
    "wrong_task_record",  # record 0 is not the one the spec implies
    "changed_while_checked",  # the bytes hashed twice differ
    "bad_reply",  # the worker's answer is not the JSON run_one returns
)
_KEYS = {
    "ok": ("head", "name", "origin", "records", "root", "sha256", "status", "stop"),
    "worker_error": ("error", "name", "origin", "status"),
    "rejected": ("name", "origin", "reason", "status"),
}
_HEX = frozenset("0123456789abcdef")
#: A ledger's bytes: read from a file, or grown in memory (:class:`GrowingLedger`).
_Data = Union[bytes, bytearray]


def _hex64(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and _HEX.issuperset(value)


def batch_origin(spec_hash: str) -> str:
    """``agentloop-manifest/1/<spec_hash>``."""
    return MANIFEST_ORIGIN_PREFIX + spec_hash


def ledger_bytes(lines: Iterable[Mapping[str, Any]]) -> bytes:
    """The manifest file: each line's RFC 8785 bytes and ``\\n``."""
    return b"".join(canonical_bytes(dict(line)) + b"\n" for line in lines)


def _line_problem(value: object) -> str:
    if not isinstance(value, dict):
        return "a line is a JSON object"
    status = value.get("status")
    if status not in _KEYS:
        return "status must be one of %s" % (", ".join(STATUSES),)
    keys = tuple(sorted(value))
    if keys != _KEYS[status]:
        return "a %s line holds exactly %s, not %s" % (status, ", ".join(_KEYS[status]), ", ".join(keys))
    if not isinstance(value["name"], str) or not value["name"]:
        return "name must be a non-empty string"
    origin = value["origin"]
    if not isinstance(origin, str) or not origin.startswith(ORIGIN_PREFIX) or not _hex64(origin[len(ORIGIN_PREFIX) :]):
        return "origin must be %s and 64 lowercase hex digits" % (ORIGIN_PREFIX,)
    if status == "ok":
        records = value["records"]
        if isinstance(records, bool) or not isinstance(records, int) or records < 2:
            return "records must be an integer of at least 2 (a task and a stop record)"
        for key in ("head", "root", "sha256"):
            if not _hex64(value[key]):
                return "%s must be 64 lowercase hex digits" % (key,)
        if not isinstance(value["stop"], str):
            return "stop must be a string"
    elif status == "worker_error" and not (isinstance(value["error"], str) and value["error"]):
        return "error must be a non-empty string"
    elif status == "rejected" and value["reason"] not in REJECTIONS:
        return "reason must be one of %s" % (", ".join(REJECTIONS),)
    return ""


def parse_ledger(data: bytes) -> List[Dict[str, Any]]:
    """The lines of a manifest, refusing anything but the one spelling.

    1. not empty, ending in ``\\n``, no empty line;
    2. each line valid UTF-8 JSON whose RFC 8785 bytes are the line itself;
    3. each line holds exactly the keys its ``status`` asks for, well typed;
    4. a name appears again only after lines of it that are not ``ok`` (a
       retry appended by a resumed batch), never after an ``ok`` line.

    Raises :class:`~agentloop.errors.MalformedManifestError` naming the line.
    """
    return [value for _, value in iter_ledger(data)]


def iter_ledger(data: bytes) -> Iterator[Tuple[int, Dict[str, Any]]]:
    """:func:`parse_ledger` one line at a time: ``(offset of the line in data, its value)``, never a list of
    every line; the layout (rule 1) is checked before the first line is given, each other rule at its line."""
    # 1. layout
    if not data:
        raise MalformedManifestError(None, "empty")
    if not data.endswith(b"\n"):
        raise MalformedManifestError(data.count(b"\n") + 1, "no terminating newline")
    certified: Set[str] = set()
    offset = 0
    for number, raw in enumerate(_lines(data), 1):
        if not raw:
            raise MalformedManifestError(number, "an empty line")
        # 2. canonical JSON
        try:
            value = json.loads(raw.decode("utf-8"))
            canonical = canonical_bytes(value)
        except (UnicodeDecodeError, ValueError, UnrecordableError, RecursionError):
            raise MalformedManifestError(number, "not a JSON line") from None
        if canonical != raw:
            raise MalformedManifestError(number, "not in RFC 8785 canonical form")
        # 3. keys and types
        problem = _line_problem(value)
        if problem:
            raise MalformedManifestError(number, problem)
        # 4. an ok line is final
        _final(number, value, certified)
        yield offset, value
        offset += len(raw) + 1


def line_at(data: bytes, offset: int) -> Dict[str, Any]:
    """The value of the line of ``data`` that starts at ``offset``, as :func:`iter_ledger` gave it (re-read from
    bytes it has checked: so a caller keeps an offset, not the parsed line)."""
    value: Dict[str, Any] = json.loads(data[offset : data.index(b"\n", offset)].decode("utf-8"))
    return value


class LastLines(Mapping[str, Dict[str, Any]]):
    """Each run's last line, by name, in the order names first appear (:func:`current`), read on demand from
    the ledger's bytes: it keeps one offset a run (from :func:`iter_ledger`), never the parsed lines."""

    def __init__(self, data: bytes, offsets: Mapping[str, int]) -> None:
        self._data, self._offsets = data, offsets

    def __getitem__(self, name: str) -> Dict[str, Any]:
        return line_at(self._data, self._offsets[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self._offsets)

    def __len__(self) -> int:
        return len(self._offsets)


def _final(number: int, line: Mapping[str, Any], certified: Set[str]) -> None:
    """Rule 4 of :func:`parse_ledger`: no line after a run's ``ok`` line (``certified`` collects their names)."""
    if line["name"] in certified:
        raise MalformedManifestError(
            number, "the name %s appears again after its ok line" % (json.dumps(line["name"]),)
        )
    if line["status"] == "ok":
        certified.add(line["name"])


def current(lines: Sequence[Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """Each run's last line (its status now), by name, in the order the names first appear."""
    last: Dict[str, Dict[str, Any]] = {}
    for line in lines:
        last[line["name"]] = dict(line)
    return last


def _lines(data: _Data) -> Iterator[_Data]:
    """Each line of ``data`` without its ``\\n`` (what follows the last ``\\n`` is not a line), one at a time."""
    start, end = 0, data.find(b"\n")
    while end >= 0:
        yield data[start:end]
        start, end = end + 1, data.find(b"\n", end + 1)


def _leaves(data: _Data) -> List[bytes]:
    return [leaf_hash(line) for line in _lines(data)]


def ledger_root(data: _Data) -> str:
    """The hex RFC 6962 root over a manifest's lines (each without ``\\n``), in O(log n) memory."""
    tree = CompactRange()
    for line in _lines(data):
        tree.append(leaf_hash(line))
    return tree.root().hex()


class GrowingLedger:
    """A ledger built in spec order from lines that arrive in any order, and its RFC 6962 tree as it grows.

    :meth:`put` takes line ``index``'s bytes (RFC 8785, no ``\\n``; ``b""``
    for an index that adds no line); a line waits until every earlier index
    has come, then is appended to :attr:`data` and its leaf hash to a
    compact range.  What it holds is the ledger itself (``data``, one
    ``bytearray``), the lines that came before an earlier one, and
    O(log n) subtree roots: never a line twice, never a list of leaves.
    It takes no lock: :func:`~agentloop.batch.run_many` puts every line from
    its own thread (it collects the futures there, whatever the executor).
    """

    __slots__ = ("data", "_tree", "_next", "_waiting")

    def __init__(self, earlier: bytes = b"") -> None:
        self.data = bytearray(earlier)
        self._tree = CompactRange()
        for line in _lines(earlier):
            self._tree.append(leaf_hash(line))
        self._next = 0
        self._waiting: Dict[int, bytes] = {}

    @property
    def size(self) -> int:
        """The number of lines appended so far (an earlier ledger's included)."""
        return self._tree.size

    def root(self) -> str:
        """The hex root over the lines appended so far: :func:`ledger_root` of :attr:`data`."""
        return self._tree.root().hex()

    @property
    def waiting(self) -> int:
        """How many lines wait for an earlier one."""
        return len(self._waiting)

    def put(self, index: int, line: bytes) -> None:
        """Line ``index`` (each index once, from 0 on); appended with the ones it held back."""
        self._waiting[index] = line
        while self._next in self._waiting:
            line = self._waiting.pop(self._next)
            self._next += 1
            if line:
                self.data += line
                self.data += b"\n"
                self._tree.append(leaf_hash(line))


@dataclass(frozen=True)
class ManifestCheckpoint:
    """A ledger's tree head: ``origin``, ``size`` lines, hex ``root``, and signatures."""

    origin: str
    size: int
    root: str
    signatures: Tuple[NoteSignature, ...] = field(default=())

    def text(self) -> str:
        """The note text, three lines each ending in ``\\n``: what a signature covers."""
        root = base64.b64encode(bytes.fromhex(self.root)).decode("ascii")
        return "%s\n%d\n%s\n" % (self.origin, self.size, root)

    def note(self) -> Note:
        """As a :class:`~agentloop.signing.note.Note`."""
        return Note(self.text(), self.signatures)

    def to_bytes(self) -> bytes:
        """The note: text, blank line, one line per signature."""
        return self.note().to_bytes()


def make_checkpoint(
    origin: str, data: bytes, key: Optional[bytes] = None, signers: Sequence[Signer] = ()
) -> ManifestCheckpoint:
    """The checkpoint of manifest ``data``, signed by the HMAC ``key`` (key name: the origin) and ``signers``."""
    return sign_checkpoint(ManifestCheckpoint(origin, data.count(b"\n"), ledger_root(data)), key, signers)


def sign_checkpoint(
    unsigned: ManifestCheckpoint, key: Optional[bytes] = None, signers: Sequence[Signer] = ()
) -> ManifestCheckpoint:
    """``unsigned`` signed by the HMAC ``key`` (key name: the origin) and ``signers``, in that order."""
    keys: List[Signer] = list(signers)
    if key is not None:
        keys.insert(0, HmacKey(unsigned.origin, key))
    if not keys:
        return unsigned
    return ManifestCheckpoint(
        unsigned.origin, unsigned.size, unsigned.root, sign_note(unsigned.text(), *keys).signatures
    )


def parse_manifest_checkpoint(data: bytes) -> ManifestCheckpoint:
    """Parse a ledger checkpoint strictly.

    1. valid UTF-8 of at most 64 KiB, ending in ``\\n``;
    2. three text lines, a blank line, then signature lines (C2SP
       signed-note "Format"), each :func:`~agentloop.signing.note.parse_signature_line`;
    3. line 1: ``agentloop-manifest/1/`` and 64 lowercase hex digits;
    4. line 2: the size, decimal, at least 1, no leading zero;
    5. line 3: canonical base64 of 32 bytes.

    Raises :class:`~agentloop.errors.MalformedCheckpointError` naming the line.
    """
    # 1.
    if len(data) > 64 * 1024:
        raise MalformedCheckpointError(None, "longer than 65536 bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedCheckpointError(None, "invalid UTF-8") from None
    if not text.endswith("\n"):
        raise MalformedCheckpointError(text.count("\n") + 1, "no terminating newline")
    lines = text[:-1].split("\n")
    # 2.
    if len(lines) < 4 or lines[3] != "" or "" in lines[:3]:
        raise MalformedCheckpointError(None, "a ledger checkpoint is 3 text lines, a blank line, then signatures")
    signatures = tuple(parse_signature_line(line, number, "checkpoint") for number, line in enumerate(lines[4:], 5))
    # 3.
    origin = lines[0]
    if not origin.startswith(MANIFEST_ORIGIN_PREFIX) or not _hex64(origin[len(MANIFEST_ORIGIN_PREFIX) :]):
        raise MalformedCheckpointError(1, "origin must be %r and 64 lowercase hex digits" % (MANIFEST_ORIGIN_PREFIX,))
    # 4.
    size = lines[1]
    if not (size.isascii() and size.isdigit()) or size[0] == "0" or len(size) > 16:
        raise MalformedCheckpointError(2, "size must be a decimal number of at least 1 with no leading zero")
    # 5.
    try:
        root = strict_b64decode(lines[2])
    except ValueError as exc:
        raise MalformedCheckpointError(3, "root is %s" % (exc,)) from None
    if len(root) != 32:
        raise MalformedCheckpointError(3, "root is %d bytes, not a 32-byte SHA-256" % (len(root),))
    return ManifestCheckpoint(origin, int(size), root.hex(), signatures)


def check_manifest_checkpoint(
    checkpoint: ManifestCheckpoint,
    data: bytes,
    key: Optional[bytes] = None,
    verifiers: Sequence[Verifier] = (),
    require: Optional[Sequence[str]] = None,
) -> None:
    """Check that ``checkpoint`` is the tree head of manifest ``data`` and, when keys are given, signed by them.

    1. the size is the manifest's line count and the root its root;
    2. with ``key`` (HMAC, key name the origin) or ``verifiers``: C2SP
       signed-note verification (:func:`agentloop.signing.note.verify_note`):
       signatures by other keys are ignored, one by a given key that does not
       verify is a fault, and the names in ``require`` must have signed --
       by default (``None``) every key given; the HMAC ``key`` always.

    Raises :class:`~agentloop.errors.ProofError` (1) or
    :class:`~agentloop.errors.BadSignatureError` (2).
    """
    # 1.
    size = data.count(b"\n")
    if checkpoint.size != size:
        raise ProofError("the checkpoint covers %d lines; the manifest has %d" % (checkpoint.size, size))
    root = ledger_root(data)
    if checkpoint.root != root:
        raise ProofError("the checkpoint's root %s... is not the manifest's %s..." % (checkpoint.root[:16], root[:16]))
    # 2.
    keys: List[Verifier] = list(verifiers)
    if key is not None:
        keys.insert(0, HmacKey(checkpoint.origin, key))
    if keys:
        if not checkpoint.signatures:
            raise BadSignatureError("the checkpoint is not signed")
        names = (
            {k.name for k in keys}
            if require is None
            else set(require) | ({checkpoint.origin} if key is not None else set())
        )
        verify_note(checkpoint.note(), keys, require=sorted(names))


def prove_run(data: bytes, name: str) -> Tuple[int, List[str]]:
    """``(index, proof)``: the RFC 9162 inclusion proof (hex) of run ``name``'s last line in manifest ``data``."""
    lines = parse_ledger(data)
    names = [line["name"] for line in lines]
    if name not in names:
        raise ProofError("no run named %s in the manifest" % (json.dumps(name),))
    index = len(names) - 1 - names[::-1].index(name)  # its last line: its status now
    return index, [h.hex() for h in inclusion_proof(_leaves(data), index, len(lines))]


def check_run_proof(line: Mapping[str, Any], index: int, proof: Sequence[str], checkpoint: ManifestCheckpoint) -> None:
    """Check that ledger ``line`` is line ``index`` of the ledger ``checkpoint`` names; :class:`ProofError` if not."""
    try:
        path = [bytes.fromhex(h) for h in proof]
    except ValueError:
        raise ProofError("a proof hash is not hex") from None
    verify_inclusion(
        index, checkpoint.size, leaf_hash(canonical_bytes(dict(line))), path, bytes.fromhex(checkpoint.root)
    )


def prove_extension(old_size: int, data: _Data) -> List[str]:
    """The RFC 9162 consistency proof (hex) from the first ``old_size`` lines of manifest ``data`` to all of it."""
    leaves = _leaves(data)
    return [h.hex() for h in consistency_proof(leaves, old_size, len(leaves))]


def check_extension(old: ManifestCheckpoint, new: ManifestCheckpoint, proof: Sequence[str]) -> None:
    """Check that the ledger of ``new`` extends that of ``old`` (same origin); :class:`ProofError` if not."""
    if old.origin != new.origin:
        raise ProofError("the checkpoints name different batches: %s and %s" % (old.origin, new.origin))
    try:
        path = [bytes.fromhex(h) for h in proof]
    except ValueError:
        raise ProofError("a proof hash is not hex") from None
    verify_consistency(old.size, new.size, bytes.fromhex(old.root), bytes.fromhex(new.root), path)
