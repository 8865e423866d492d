"""RFC 8785 (JSON Canonicalization Scheme) encoding, with the I-JSON limits.

This is the one place that decides which Python values are recordable and the
exact bytes they become.  A transcript line is ``canonical_bytes(record)``.

What is implemented, by section of RFC 8785:

* 3.1 -- the input must be I-JSON (RFC 7493): no ``NaN``/infinities, strings
  must be valid Unicode (no lone surrogates) and, as RFC 7493 section 2.1
  requires, hold no Unicode noncharacters (U+FDD0..U+FDEF and the last two
  code points of every plane, U+xFFFE and U+xFFFF): such a value is
  unrecordable, so the writer refuses it and the verifier flags a record
  holding one (``unserialisable_payload``), and both agree.  As RFC 7493 section 2.2
  recommends, integers stay within +/-(2**53 - 1) so every consumer reads the
  same number, and so do floats that 3.2.2.3 writes as integer tokens (``1e17``
  is ``100000000000000000``: refused as that integer is).  Anything else
  raises :class:`~agentloop.errors.UnrecordableError`
  naming where the value is.
* 3.2.1 -- no whitespace between tokens.
* 3.2.2.2 -- strings: ``"`` and ``\\`` escaped, ``\\b \\t \\n \\f \\r`` in
  their short form, other control characters as ``\\u00xx`` (lowercase hex),
  everything else as literal UTF-8.
* 3.2.2.3 -- numbers in the ECMAScript ``Number.prototype.toString`` form
  (ECMA-262, section 7.1.12.1), derived from Python's shortest round-trip
  ``repr``; ``-0`` serialises as ``0``.
* 3.2.3 -- object members sorted by their keys' UTF-16 code units.

On top of the RFC, nesting deeper than :data:`MAX_DEPTH` arrays/objects is
refused, so that a hostile value can neither exhaust the stack here nor produce
a line that a stock ``json.loads`` cannot read back.
"""

from __future__ import annotations

import itertools
import json
import marshal
import math
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .errors import UnrecordableError

__all__ = [
    "MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "canonical_bytes",
    "canonical_text",
    "canonical_text_spliced",
    "placeholder",
    "check_string",
    "snapshot",
    "parse_canonical",
    "string_text",
    "describe_integer",
    "json_depth",
    "strict_loads",
    "parse_int",
    "UnparsedInteger",
    "is_canonical_line",
    "FloatVetter",
    "format_number",
    "json_path",
]

#: The largest integer magnitude I-JSON guarantees to round-trip (2**53 - 1).
MAX_SAFE_INTEGER = 2**53 - 1

#: The deepest nesting of arrays and objects a recordable value may have.
#: The top-level value is depth 1, so ``[[1]]`` has depth 2.
MAX_DEPTH = 64

# RFC 7493 section 2.1: "Object member names, and string values in arrays
# and object members, MUST NOT include code points that identify Surrogates or
# Noncharacters as defined by [UNICODE]" (Unicode 15, section 23.7: U+FDD0..U+FDEF
# and U+nFFFE, U+nFFFF for every plane n = 0..16).
_NONCHARACTERS = "\ufdd0-\ufdef\ufffe\uffff" + "".join(
    chr(p + 0xFFFE) + chr(p + 0xFFFF) for p in range(0x10000, 0x110000, 0x10000)
)
_NOT_I_JSON = re.compile("[\ud800-\udfff%s]" % (_NONCHARACTERS,))
# Three ranges that hold every character of _NOT_I_JSON (surrogates; U+FDD0..U+FFFF; U+1FFFE and beyond): a
# text without any is I-JSON.  A class of three ranges is searched several times faster than one of 36 (sre
# tests them in turn for each character), and a text with one is searched again exactly.
_MAYBE_NOT_I_JSON = re.compile("[\ud800-\udfff\ufdd0-\uffff\U0001fffe-\U0010ffff]")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_encode_string: Callable[[str], str] = json.encoder.encode_basestring


def json_path(parent: str, key: object) -> str:
    """Extend a JSONPath-like location: ``$.a``, ``$["odd key"]``, ``$[3]``."""
    if isinstance(key, int) and not isinstance(key, bool):
        return "%s[%d]" % (parent, key)
    text = str.__str__(key) if isinstance(key, str) else str(key)  # a str subclass: its characters, not its __str__
    if _IDENTIFIER.match(text):
        return "%s.%s" % (parent, text)
    return "%s[%s]" % (parent, json.dumps(text, ensure_ascii=True))


def format_number(value: float) -> str:
    """Serialise a finite float as ECMAScript ``Number::toString`` does.

    RFC 8785 section 3.2.2.3 delegates to ECMA-262 7.1.12.1: with ``s`` the
    shortest digit string that round-trips, ``k`` its length and ``n`` the
    position of the decimal point (value = 0.s * 10**n):

    1. ``k <= n <= 21``: the digits followed by ``n - k`` zeros;
    2. ``0 < n <= 21``: the digits with a point after the first ``n``;
    3. ``-6 < n <= 0``: ``0.``, ``-n`` zeros, then the digits;
    4. otherwise exponent form ``d[.ddd]e(+|-)x`` with ``x = n - 1``.

    Python's ``repr`` yields the same shortest round-trip digits (both follow
    Steele-White/Grisu-style "shortest" output), so only the layout differs.
    """
    if value != value or value in (math.inf, -math.inf):
        raise UnrecordableError("$", "%r is not a finite number" % (value,))
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # Position of the point relative to the first significant digit.
    point = len(whole) + (int(exponent) if exponent else 0)
    point -= len(whole + fraction) - len((whole + fraction).lstrip("0"))
    digits = digits.rstrip("0")
    k, n = len(digits), point
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        head = digits if k == 1 else digits[0] + "." + digits[1:]
        body = "%se%s%d" % (head, "+" if e >= 0 else "-", abs(e))
    return sign + body


def _sort_key(key: str) -> bytes:
    # RFC 8785 section 3.2.3: compare keys as arrays of UTF-16 code units.
    # Big-endian UTF-16 bytes compare exactly like those code units (str.encode: a str subclass's
    # characters, as the record writes them, not what its own encode gives).
    return str.encode(key, "utf-16-be", "surrogatepass")


def check_string(text: str, path: str = "$") -> str:
    """``text`` if it is a recordable JSON string (RFC 7493 section 2.1: no lone
    surrogate, no noncharacter), else :class:`~agentloop.errors.UnrecordableError`
    naming ``path``: what encoding it would check, without encoding it."""
    # str.isascii: the characters themselves (a str subclass's own isascii may say anything)
    if str.isascii(text) or _MAYBE_NOT_I_JSON.search(text) is None:
        return text
    match = _NOT_I_JSON.search(text)
    if match is not None:
        point = ord(match.group())
        what = "a lone surrogate" if 0xD800 <= point <= 0xDFFF else "the noncharacter"
        raise UnrecordableError(path, "string has %s U+%04X at index %d" % (what, point, match.start()))
    return text


def _i_json(text: str) -> bool:
    """Whether :func:`check_string` accepts the non-ASCII ``text``, without forming its error."""
    return _MAYBE_NOT_I_JSON.search(text) is None or _NOT_I_JSON.search(text) is None


def _type_name(value: object) -> str:
    return type(value).__name__


def describe_integer(value: int) -> str:
    """``123`` for an integer up to 300 digits, ``of about 5001 digits`` beyond.

    Python 3.11+ refuses to print integers of more than 4300 digits, and a
    message must never fail to form (nor grow without bound).
    """
    if -(10**300) < value < 10**300:
        return str(value)
    return "of about %d digits" % (int(abs(value).bit_length() * 0.30103) + 1,)


def _key_problem(key: object) -> str:
    # Keys are named by type (and by value only when that is a plain scalar),
    # never by repr(): an arbitrary object's repr can hold a memory address
    # or a hash-seed-dependent order, and the message goes into transcripts.
    if key is None or isinstance(key, (bool, float)):
        return "object key %s is a %s, not a string" % (key, _type_name(key))
    if isinstance(key, int):
        return "object key %s is a %s, not a string" % (describe_integer(int(key)), _type_name(key))
    return "object key of type %s is not a string" % (_type_name(key),)


class UnparsedInteger:
    """Stands, in a parsed line, for an integer too long for ``int()`` to read.

    Python 3.11+ refuses to convert more than 4300 digits; such a number is
    far outside I-JSON anyway, and the encoder reports it as unrecordable.
    """

    def __init__(self, digits: str) -> None:
        self.digits = len(digits.lstrip("-"))


def parse_int(digits: str) -> Union[int, UnparsedInteger]:
    """A ``json.loads`` ``parse_int`` hook that never raises on long integers."""
    try:
        return int(digits)
    except ValueError:
        return UnparsedInteger(digits)


#: The smallest float magnitude ECMAScript writes as an integer token beyond
#: :data:`MAX_SAFE_INTEGER` (every float from 2**53 up is integral), and the
#: magnitude from which it writes an exponent instead (``1e+21``).
_UNSAFE_INTEGRAL = float(2**53)
_EXPONENT_FROM = 1e21


def _float_token(real: float, path: str) -> str:
    """A finite float's RFC 8785 token, refused where I-JSON refuses it.

    RFC 8785 section 3.2.2.3 writes ``1e17`` as ``100000000000000000``: an
    integer token, which every reader (and agentloop's verifier) reads as an
    integer, here one beyond +/-(2**53 - 1) that RFC 7493 section 2.2 does
    not guarantee.  So a float with 2**53 <= |x| < 1e21 is unrecordable, as
    the integer it would be written as is: the writer and the verifier agree.
    """
    if real != real or real in (math.inf, -math.inf):
        raise UnrecordableError(path, "%s is not a JSON number" % (real,))
    token = format_number(real)
    if _UNSAFE_INTEGRAL <= abs(real) < _EXPONENT_FROM:
        raise UnrecordableError(
            path, "number %r is written as the integer %s, outside the I-JSON range +/-(2**53-1)" % (real, token)
        )
    return token


def _encode(value: Any, path: str, depth: int, out: List[str]) -> None:
    # bool before int: isinstance(True, int) holds in Python, not in JSON.
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_encode_string(check_string(value, path)))
    elif isinstance(value, int):
        number = int(value)  # an int subclass's own value, checked as written
        if not -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER:
            raise UnrecordableError(
                path, "integer %s is outside the I-JSON range +/-(2**53-1)" % (describe_integer(number),)
            )
        out.append(str(number))
    elif isinstance(value, float):
        out.append(_float_token(float(value), path))
    elif isinstance(value, (dict, list)):
        if depth >= MAX_DEPTH:
            raise UnrecordableError(path, "nesting deeper than the %d levels a record may hold" % (MAX_DEPTH,))
        if isinstance(value, list):
            out.append("[")
            for index, item in enumerate(value):
                if index:
                    out.append(",")
                _encode(item, "%s[%d]" % (path, index), depth + 1, out)
            out.append("]")
            return
        for key in value:
            if not isinstance(key, str):
                raise UnrecordableError(path, _key_problem(key))
            check_string(key, json_path(path, key))
        out.append("{")
        for index, key in enumerate(sorted(value, key=_sort_key)):
            if index:
                out.append(",")
            out.append(_encode_string(key))
            out.append(":")
            _encode(value[key], json_path(path, key), depth + 1, out)
        out.append("}")
    elif isinstance(value, UnparsedInteger):
        raise UnrecordableError(path, "integer of %d digits is outside the I-JSON range +/-(2**53-1)" % (value.digits,))
    else:
        raise UnrecordableError(path, "a %s is not a JSON value" % (_type_name(value),))


# --- Encoding, fast ----------------------------------------------------------
#
# CPython's C JSON encoder writes the RFC 8785 form of a plain JSON value
# (dict, list, str, int, float, bool, None) except where the two differ (see
# "Proving a parsed line canonical" below).  :func:`_fast` encodes with it,
# parses the text back and takes the text only when every difference is ruled
# out; otherwise (and for anything not plain JSON) the exact encoder above
# decides, and builds the error's JSON path.  So paths are built only on the
# way to an error.  tests/test_canonical_fast.py compares the two over random
# values (floats, unicode, big integers, deep nesting, non-JSON types).


def _not_json(value: Any) -> Any:
    raise TypeError("not a JSON value")


# The C encoder and scanner behind json.dumps/json.loads, built once (CPython:
# JSONEncoder.encode builds a new encoder per call, which costs more than the
# encoding of a small record).  No circularity markers: a cycle ends in a
# RecursionError, and the exact encoder decides.  None elsewhere: json.dumps.
_C_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE: Optional[Callable[[Any, int], Sequence[str]]] = (
    None
    if _C_MAKE_ENCODER is None
    else _C_MAKE_ENCODER(None, _not_json, json.encoder.encode_basestring, None, ":", ",", True, False, False)
)


# The C scanner behind json.loads, without hooks: floats are parsed in C.
_SCAN: Callable[[str, int], Tuple[Any, int]] = getattr(json.JSONDecoder(), "scan_once")


def _c_text(value: Any) -> str:
    if _C_ENCODE is not None:
        return "".join(_C_ENCODE(value, 0))
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False, check_circular=False
    )


def _fast(value: Any, depth: int) -> Optional[Tuple[str, Any]]:
    """``(RFC 8785 text of value, json.loads of it)`` when the C encoder's text is
    proven to be it, else ``None`` ("not proven": use the exact encoder).
    Only objects and arrays take this path: a scalar costs the exact encoder little.

    1. every value in it is of an exact built-in type (``marshal`` writes
       those only), so the C encoder and the exact one read it alike; the C
       encoder writes it (no NaN, no type it cannot write, no cycle) and the
       text is UTF-8 (no lone surrogate);
    2. no byte that could start a character in U+E000..U+FFFF (key order by
       code point = by UTF-16 unit; no U+FDD0..U+FDEF, U+FFFE, U+FFFF) and no
       ``BF BE``/``BF BF`` (no noncharacter U+nFFFE/U+nFFFF): RFC 7493 2.1;
    3. no run of 16 digits outside a fraction (no integer beyond 2**53 - 1);
    4. nesting within what ``depth`` leaves of :data:`MAX_DEPTH`;
    5. no float whose ``repr`` layout ECMAScript writes otherwise
       (:func:`_float_layout_differs`: the floats that stay here are the
       ones json.dumps writes as RFC 8785 does, non-integral in
       1e-4 <= |x| < 1e16, and |x| >= 1e21 or < 1e-9);
    6. the text parses back to a value equal to ``value``: so ``value`` was
       plain JSON (a tuple, a non-string key, a set... compare unequal) and
       the text is the C encoder's form of the parsed value, which 1-5 make
       the RFC 8785 form.
    """
    if type(value) is not dict and type(value) is not list:
        return None
    try:
        marshal.dumps(value)  # refuses any subclass (an IntEnum, a dict that reads its own way)
        text = "".join(_C_ENCODE(value, 0)) if _C_ENCODE is not None else _c_text(value)
        raw = text.encode("utf-8")
    except Exception:  # TypeError, ValueError (a subclass, NaN, a lone surrogate), RecursionError
        return None
    if not raw.isascii() and (  # EE, EF deleted in C: a shorter text held one (a search for either costs more)
        len(raw.translate(None, b"\xee\xef")) != len(raw) or _PLANE_NONCHARACTER.search(raw) is not None
    ):
        return None
    if _maybe_long_integer(raw):
        return None
    room = MAX_DEPTH - depth
    if raw.count(b"[") + raw.count(b"{") > room and _deeper_than(raw, room):
        return None
    # no mark, no such float; ``in`` on the str (``in`` on bytes first tries the operand as an int, raising and
    # clearing a TypeError each time), whose ASCII marks are the UTF-8 text's
    if (".0" in text or "e-0" in text or "e+" in text) and _float_layout_differs(raw):
        return None
    try:
        parsed, end = _SCAN(text, 0)
        same = end == len(text) and bool(parsed == value)
    except Exception:  # a value whose __eq__ raises
        return None
    return (text, parsed) if same else None


def canonical_text(value: Any, path: str = "$", depth: int = 0) -> str:
    """Return the RFC 8785 serialisation of ``value`` as a ``str``.

    Raises :class:`~agentloop.errors.UnrecordableError` when ``value`` is not
    recordable; its ``path`` is rooted at ``path``.  ``depth`` is how many
    arrays/objects of a record enclose ``value`` (a tool's result sits at 2,
    in ``record.payload``): :data:`MAX_DEPTH` bounds the whole record.
    """
    fast = _fast(value, depth)
    if fast is not None:
        return fast[0]
    out: List[str] = []
    _encode(value, path, depth, out)
    return "".join(out)


def placeholder(number: int) -> str:
    """The string that stands, in a value given to :func:`canonical_text_spliced`, for its ``number``-th text."""
    return _PLACEHOLDER % (number,)


_PLACEHOLDER = "\x00agentloop-encoded-value-%d\x00"


def canonical_text_spliced(value: Any, texts: Sequence[str], path: str = "$", depth: int = 0) -> Optional[str]:
    """The RFC 8785 text of ``value`` with each :func:`placeholder` string in it
    replaced by its text from ``texts`` (a :func:`snapshot`'s, not encoded again).

    ``value`` is encoded once, with the placeholders (short strings) where the
    values stand; each placeholder's string token must then occur exactly
    once, and is replaced by its text.  A string token occurs only where a
    string equals it, so ``None`` ("not this way") means a value of
    ``value`` equals a placeholder, or one is missing: the caller encodes the
    real value instead.  Each text must be what :func:`canonical_text` gives
    for the value it stands for (at that depth): this is how a record is
    built around values encoded once, not a check of them.  Errors of
    ``value``'s own members raise as :func:`canonical_text` raises them.
    """
    text = canonical_text(value, path, depth)
    places = []
    for number, spliced in enumerate(texts):
        token = _encode_string(_PLACEHOLDER % (number,))
        at = text.find(token)
        if at < 0 or text.find(token, at + 1) >= 0:
            return None
        places.append((at, at + len(token), spliced))
    if len(places) > 1:
        places.sort()
    pieces, done = [], 0
    for at, end, spliced in places:
        pieces += [text[done:at], spliced]
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def string_text(value: object) -> Optional[str]:
    """The RFC 8785 text of ``value`` if it is a ``str`` (not a subclass) that I-JSON
    allows (:func:`check_string`), else ``None``: for texts put together from their
    members' texts (``agentloop.loop.records``)."""
    if type(value) is not str:
        return None
    if not value.isascii() and not _i_json(value):
        return None
    return _encode_string(value)


def parse_canonical(text: str) -> Any:
    """``json.loads(text)`` of an RFC 8785 text made here (no whitespace around it): a fresh
    plain-JSON copy of its value, read by the C scanner without ``json.loads``'s passes over
    the whitespace."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:  # not JSON at all: json.loads raises its own error
        return json.loads(text)
    return value if end == len(text) else json.loads(text)  # json.loads: whitespace after it, or its error


#: The most members :func:`_flat` writes in Python; a bigger object goes to the C encoder (:func:`_fast`).
_FLAT_MEMBERS = 8


def _flat(value: Any, depth: int) -> Optional[Tuple[Dict[str, Any], str]]:
    """``(a copy, its RFC 8785 text)`` of a small object whose keys are ASCII ``str`` and whose
    members are ``str``, ``int``, ``bool`` or ``None`` (exact types), written member by member
    as the exact encoder writes them; ``None`` for any other value, and for such an object that
    is not recordable (the exact encoder then decides, and names the place).

    The common tool call's arguments and a simple result: a few strings and counts.  ASCII
    keys sort by code point as by UTF-16 unit (RFC 8785 section 3.2.3) and are I-JSON; the
    copy holds the same immutable members, in the key order ``json.loads`` of the text gives.
    """
    if type(value) is not dict or len(value) > _FLAT_MEMBERS or depth >= MAX_DEPTH:
        return None
    # Read once, in C: the checks, the text and the copy are of one reading (a tool's own thread may change
    # the dict it returned meanwhile; read twice, a list put in between was written as ``true``).
    try:
        value = dict(value)
    except RuntimeError:  # changed while copied
        return None
    for key, item in value.items():
        kind = type(item)
        if type(key) is not str or not (kind is str or kind is int or kind is bool or item is None):
            return None
    if not "".join(value).isascii():
        return None
    if len(value) == 1:  # one member: no sort, and the copy made above is in key order already
        ((key, item),) = value.items()
        text = _flat_member(item)
        return None if text is None else (value, "{%s:%s}" % (_encode_string(key), text))
    members, copy = [], {}
    for key in sorted(value):
        item = value[key]
        text = _flat_member(item)
        if text is None:
            return None
        members.append("%s:%s" % (_encode_string(key), text))
        copy[key] = item
    return copy, "{%s}" % (",".join(members),)


def _flat_member(item: Any) -> Optional[str]:
    """A member of :func:`_flat`'s object as RFC 8785 writes it: a ``str`` (I-JSON), an ``int``
    (within +/-(2**53 - 1)), a ``bool`` or ``None``; else ``None``."""
    if type(item) is str:
        return _encode_string(item) if item.isascii() or _i_json(item) else None
    if type(item) is int:
        return int.__repr__(item) if -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER else None
    return "null" if item is None else "true" if item is True else "false" if item is False else None


def snapshot(value: Any, path: str = "$", depth: int = 0) -> Tuple[Any, str]:
    """Encode ``value`` once; return ``(a plain-JSON copy, its RFC 8785 text)``.

    The copy is what gets recorded and shown, so a value that reads
    differently each time (a dict subclass, a mutable object) is fixed at the
    moment it is taken.  Any exception while reading ``value`` becomes an
    :class:`~agentloop.errors.UnrecordableError` naming ``path``.
    """
    flat = _flat(value, depth)
    if flat is not None:
        return flat
    fast = _fast(value, depth)
    if fast is not None:
        return fast[1], fast[0]
    try:
        text = canonical_text(value, path, depth)
    except UnrecordableError:
        raise
    except RecursionError:
        raise UnrecordableError(path, "could not be read: nesting too deep") from None
    except Exception as exc:
        raise UnrecordableError(path, "could not be read: %s" % (type(exc).__name__,)) from None
    return json.loads(text), text


def canonical_bytes(value: Any, path: str = "$", depth: int = 0) -> bytes:
    """Return the RFC 8785 serialisation of ``value`` as UTF-8 bytes."""
    return canonical_text(value, path, depth).encode("utf-8")


# --- Proving a parsed line canonical, fast ----------------------------------
#
# CPython's C JSON encoder, with sorted keys, no whitespace and no ASCII
# escaping, writes exactly the RFC 8785 form of a parsed JSON value except
# where the two differ:
#
# * floats: ``repr`` layout instead of ECMAScript's.  The digits are the same
#   (both shortest round-trip); without an exponent and a trailing ``.0`` the
#   layouts agree too (fixed notation in both), otherwise they may differ.
# * key order: code points instead of UTF-16 code units.  They can only
#   disagree when a key holds a character in U+E000..U+FFFF and another one
#   beyond U+FFFF, so a text with no U+E000..U+FFFF character sorts the same;
# * lone surrogates, integers beyond 2**53 - 1 and nesting past MAX_DEPTH,
#   which RFC 8785/I-JSON refuse and the C encoder writes.
#
# ``is_canonical_line`` answers ``True`` only when none of these can matter,
# and ``False`` otherwise -- "not proven", never "invalid": the caller then
# decides with the exact encoder above.  Float tokens are vetted one by one
# while the line is parsed (:class:`FloatVetter`).


def _maybe_long_integer(raw: bytes) -> bool:
    """Whether ``raw`` may hold an integer token of 16+ digits (beyond 2**53 - 1, perhaps).

    In valid JSON an integer token starts the text or follows ``:``, ``,``,
    ``[`` or its ``-`` sign, and is not followed by ``.``, ``e`` or ``E``
    (which make it a float's integer part).  In C: every digit becomes ``0``,
    those four bytes ``a``, those three ``p``, any other byte ``b``; only a
    run of 16+ zeros after an ``a`` and not before a ``p`` can be such an
    integer.  The digits of a fraction (after ``.``: ``0.6428571428571429``),
    of a float's integer part (``1743944176859259.8``) or of a hex hash
    (after a letter or ``"``) are not; digits after ``:`` in a string give a
    needless ``True``.
    """
    runs = b"a" + raw.translate(_RUNS)
    at = runs.find(_INTEGER_RUN)
    while at >= 0:
        end = at + len(_INTEGER_RUN)
        while end < len(runs) and runs[end] == 0x30:
            end += 1
        if end == len(runs) or runs[end] != 0x70:
            return True
        at = runs.find(_INTEGER_RUN, end)
    return False


_RUNS = bytes(
    0x30 if 0x30 <= b <= 0x39 else 0x61 if b in b":,[-" else 0x70 if b in b".eE" else 0x62 for b in range(256)
)
_INTEGER_RUN = b"a" + b"0" * 16


def _float_layout_differs(raw: bytes) -> bool:
    """Whether the C encoder's text ``raw`` may hold a float whose ``repr``
    layout is not its ECMAScript ``Number::toString`` form.

    The C encoder writes a float ``x`` as ``repr(x)``.  Python's ``repr`` and
    ECMAScript (ECMA-262 7.1.12.1, RFC 8785 section 3.2.2.3) write the same
    shortest round-trip digits; their layouts differ in exactly these ranges:

    * integral ``x`` below 1e16: ``repr`` ends in ``.0`` (``1.0``, ``-0.0``;
      ECMAScript ``1``, ``0``);
    * 1e-9 <= |x| < 1e-4: ``repr`` pads the exponent, ``1e-05``, ``1.5e-07``
      (ECMAScript ``0.00001``, ``1.5e-7``);
    * 1e16 <= |x| < 1e21: ``repr`` writes ``1e+16`` .. ``9.9e+20``
      (ECMAScript fixed notation).

    Everywhere else both write fixed notation (1e-4 <= |x| < 1e16) or the
    same exponent form (``1e+21``, ``1.5e-10``, ``5e-324``).  So ``True`` when
    ``raw`` has ``.0`` before ``,``, ``]``, ``}`` or the end (what follows a
    number in the C encoder's compact text), a digit before ``e-0``, or a
    digit before ``e+16`` .. ``e+20`` (two exponent digits); in a string
    these are needless ``True`` answers.
    """
    if b".0" in raw and (_INTEGRAL_REPR.search(raw) is not None or raw.endswith(b".0")):
        return True
    if len(raw) > 512 and _PADDED_EXPONENT.search(raw) is None:  # on a long line one search costs less than two
        return False
    return (b"e-0" in raw and _exponent_at(raw, b"e-0", ())) or (b"e+" in raw and _exponent_at(raw, b"e+", _PADDED))


def _exponent_at(raw: bytes, mark: bytes, exponents: Tuple[bytes, ...]) -> bool:
    """Whether ``mark`` follows a digit somewhere in ``raw`` (and, with ``exponents``, is
    followed by one of them, two digits and no third)."""
    at = raw.find(mark)
    while at > 0:
        after = at + len(mark)
        if 0x30 <= raw[at - 1] <= 0x39 and (
            not exponents or raw[after : after + 2] in exponents and not raw[after + 2 : after + 3].isdigit()
        ):
            return True
        at = raw.find(mark, after)
    return False


_PADDED = (b"16", b"17", b"18", b"19", b"20")
# ``.0`` before what follows a number: one search in C (a literal-led pattern, faster on a long line than three
# ``in``; a short line rarely holds ``.0`` at all, and ``in`` says so at less cost than a search).
_INTEGRAL_REPR = re.compile(rb"\.0[,\]}]")
_PADDED_EXPONENT = re.compile(rb"e(?:-0|\+(?:1[6-9]|20))")  # either mark _exponent_at looks for


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_SIGNS = bytes.maketrans(b"[{]}", b"\x01\x01\x02\x02")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_SHAPE = bytes(b for b in range(256) if b not in b'[]{}"')
_STEP = (0, 1, -1)


def _deeper_than(raw: bytes, limit: int) -> bool:
    """Whether the *valid* JSON text ``raw`` (UTF-8) nests deeper than ``limit``, cheaply.

    In valid JSON a backslash occurs only in a string and starts a
    two-character escape, so removing ``\\\\`` pairs (leftmost first, as a
    parser reads them) and then ``\\"`` leaves every remaining ``"`` a
    string's delimiter.  Every other byte but brackets is dropped, the
    strings (every other piece between quotes) are cut out, and each pass of
    ``replace("()", "")`` removes the innermost pairs: a text nesting ``d``
    deep is empty after exactly ``d`` passes.  Every step is one call in C.
    """
    if limit < 0:
        return True
    shape = raw
    if b"\\" in shape:
        shape = shape.replace(b"\\\\", b"").replace(b'\\"', b"")
    shape = shape.translate(_PARENS, _NOT_SHAPE)
    if b'"' in shape:
        shape = b"".join(shape.split(b'"')[::2])
    for _ in range(limit):
        if not shape:
            return False
        shape = shape.replace(b"()", b"")
    return bool(shape)


_PARENS = bytes.maketrans(b"[{]}", b"(())")


def strict_loads(text: Union[str, bytes], **options: Any) -> Any:
    """``json.loads`` for input a person wrote: a repeated member or ``NaN``/``Infinity`` is a ``ValueError``.

    RFC 8259 section 4 leaves a repeated name's meaning to the parser
    ("the behavior of software that receives such an object is
    unpredictable"), and Python keeps the last: a reader of the file could
    believe the first.  ``options`` go to ``json.loads`` (``parse_float=``).
    """
    return json.loads(text, object_pairs_hook=_no_repeats, parse_constant=_no_constant, **options)


def _no_repeats(pairs: List[Tuple[str, Any]]) -> Any:
    result = {}
    for name, value in pairs:
        if name in result:
            raise ValueError("duplicate key %s" % (json.dumps(name),))
        result[name] = value
    return result


def _no_constant(name: str) -> Any:
    raise ValueError("%s is not JSON" % (name,))


def json_depth(text: str) -> int:
    """The deepest array/object nesting of a JSON text (brackets in strings excluded).

    Linear, with the per-bracket work in C: strings are cut out, each bracket
    becomes +1 or -1, and the deepest running sum is the answer.
    """
    brackets = _JSON_STRING.sub("", text).encode("utf-8", "surrogatepass").translate(_SIGNS, _NOT_BRACKETS)
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0)


class FloatVetter:
    """A ``json`` ``parse_float`` hook that checks each float token of a line.

    ``json``'s C scanner calls it once per float token (and ``on_constant``
    for ``NaN``/``Infinity``), never otherwise, so lines without floats cost
    nothing.  After a line, :attr:`pairs` is ``None`` if some token was not
    in RFC 8785 form, else the ``(repr, token)`` pairs of the tokens that the
    C encoder will write differently (``1e-07`` for ``1e-7``); call
    :meth:`reset` before each line.
    """

    def __init__(self) -> None:
        self.pairs: Optional[List[Tuple[str, str]]] = []

    def reset(self) -> None:
        self.pairs = []

    def on_float(self, token: str) -> float:
        value = float(token)
        written = repr(value)
        if self.pairs is not None and (token != written or "e" in token or token.endswith(".0")):
            # Not a token the C encoder writes back as is: check it exactly.
            if value != value or value in (math.inf, -math.inf) or format_number(value) != token:
                self.pairs = None
            elif written != token:
                self.pairs.append((written, token))
        return value

    def on_constant(self, token: str) -> float:
        self.pairs = None
        return float(token)


def is_canonical_line(value: Any, text: str, raw: bytes, floats: Optional[Sequence[Tuple[str, str]]] = None) -> bool:
    """Whether ``raw`` (the UTF-8 of ``text``) is provably the RFC 8785 form of ``value``.

    ``value`` is what ``json.loads(text)`` returned.  ``floats``, when given,
    are the ``pairs`` of a :class:`FloatVetter` that hooked that parse (not
    ``None``: every float token of ``text`` is in RFC 8785 form).  Without
    them, the floats were parsed in C: a float in a layout where ``repr`` and
    ECMAScript agree is written by the C encoder exactly as a canonical line
    holds it; one in a layout where they differ (:func:`_float_layout_differs`)
    is put in ECMAScript's layout (:func:`_ecmascript_floats`), and the text
    must hold no ``repr`` layout; any doubt left (such a layout in a string)
    is settled by parsing the line again with a vetter.  ``False``
    means "not proven here": the caller must decide with :func:`canonical_bytes`.

    1. no character in U+E000..U+FFFF (UTF-8 lead bytes EE, EF), so code point
       and UTF-16 key order agree, and no U+FDD0..U+FDEF, U+FFFE or U+FFFF;
       and no ``BF BE``/``BF BF`` bytes, the end of every other noncharacter
       U+nFFFE/U+nFFFF (F0-F4 xF BF BE/BF), which RFC 7493 refuses;
    2. no run of 16 digits outside a fraction, so no integer beyond 2**53 - 1;
    3. the C encoder's output (``NaN`` refused), with each vetted float's
       ``repr`` replaced by its token, is exactly ``text``.  The replacements
       touch only runs of ``[0-9.e+-]`` holding an ``e`` or a ``.``, never an
       integer, so equality leaves the structure, every string and every
       integer as the C encoder wrote them, which is canonical; and at each
       float's place stands either the line's own vetted token or ``repr``
       in a layout ECMAScript shares;
    4. nesting within MAX_DEPTH (counted exactly, on what is now known to be
       valid JSON, only when the brackets, strings included, could exceed it:
       :func:`_deeper_than`).
    """
    if (
        b"\xee" in raw
        or b"\xef" in raw
        or b"\xbf" in raw
        and _PLANE_NONCHARACTER.search(raw) is not None
        or _maybe_long_integer(raw)
    ):
        return False
    try:
        written = _c_text(value)
    except (TypeError, ValueError, RecursionError):
        return False
    if floats is None:
        settled = _layouts_settled(written, text, raw)
        if settled is not None:
            return settled
    for before, after in set(floats or ()):
        written = written.replace(before, after)
    if written != text:
        return False
    return _depth_within(raw)


_PLANE_NONCHARACTER = re.compile(b"\xbf[\xbe\xbf]")  # the last two bytes of U+nFFFE, U+nFFFF: one search in C


def _ecmascript_floats(written: str) -> str:
    """The C encoder's text with each float token in a ``repr`` layout that ECMAScript
    writes otherwise (:func:`_float_layout_differs`) replaced by :func:`format_number` of it.

    Tokens are found from the ``.0``/``e-0``/``e+16`` .. ``e+20`` marks and
    stretched over the characters a number holds; a mark inside a string is
    replaced too, which the caller's comparison with the line then refuses
    (the line, parsed, would not hold that string).
    """
    marks = {written.rfind(".0") if written.endswith(".0") else -1}
    for mark in (".0,", ".0]", ".0}", "e-0", "e+1", "e+2"):
        at = written.find(mark)
        while at >= 0:
            marks.add(at)
            at = written.find(mark, at + 1)
    spans = {}
    for at in marks - {-1}:
        start = at
        while start and written[start - 1] in _NUMBER_CHARS:
            start -= 1
        end = at + 1
        while end < len(written) and written[end] in _NUMBER_CHARS:
            end += 1
        spans[start] = end
    pieces, done = [], 0
    for start in sorted(spans):
        token = written[start : spans[start]]
        try:
            value = float(token)
        except ValueError:
            continue
        if start < done or not math.isfinite(value):
            continue
        pieces += [written[done:start], format_number(value)]
        done = spans[start]
    return "".join(pieces) + written[done:]


_NUMBER_CHARS = frozenset("0123456789.+-e")


def _layouts_settled(written: str, text: str, raw: bytes) -> Optional[bool]:
    """For a line parsed without a vetter: ``None`` when its floats need no more thought
    (the comparison with ``written`` decides), else the answer of :func:`is_canonical_line`."""
    if written != text and _unpadded(written) != text:
        # canonical only if floats the C encoder wrote in repr layout stand in ECMAScript's
        if not _float_layout_differs(written.encode("utf-8", "surrogatepass")):
            return False
        if _ecmascript_floats(written) != text:
            return _vetted(text, raw)
    if _float_layout_differs(raw):  # a float in repr layout, or a needless match in a string
        return _vetted(text, raw)
    return None if written == text else _depth_within(raw)


def _unpadded(written: str) -> str:
    """The C encoder's text with the exponents ``repr`` pads, ``e-07`` .. ``e-09``, unpadded: three
    passes in C.

    For 1e-9 <= |x| < 1e-6 both ``repr`` and ECMAScript write the exponent form, with the same
    mantissa; ``repr`` alone pads the exponent (``5.3e-08``; ECMA-262 7.1.12.1: ``5.3e-8``).  So
    where the text was the C encoder's, each such float now stands in ECMAScript's layout.  A
    ``e-0`` in a string loses a literal ``0`` (no escape holds ``-``), so the text it is compared
    with, which parses to the same value, cannot equal it there: only floats are ever matched.
    """
    if "e-0" not in written:
        return written
    return written.replace("e-07", "e-7").replace("e-08", "e-8").replace("e-09", "e-9")


def _depth_within(raw: bytes) -> bool:
    return raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH or not _deeper_than(raw, MAX_DEPTH)


def _vetted(text: str, raw: bytes) -> bool:
    """:func:`is_canonical_line` for a line parsed again with a :class:`FloatVetter`."""
    vetter = FloatVetter()
    try:
        value = json.loads(text, parse_float=vetter.on_float, parse_constant=vetter.on_constant)
    except (ValueError, RecursionError):
        return False
    return vetter.pairs is not None and is_canonical_line(value, text, raw, vetter.pairs)
