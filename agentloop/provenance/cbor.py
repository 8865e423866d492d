"""Deterministic CBOR (RFC 8949): one encoding per value, written and read.

:func:`encode` writes, and :func:`decode` accepts, only the *deterministic
encoding* of RFC 8949 section 4.2.1 ("Core Deterministic Encoding
Requirements"), so a value has exactly one byte string and a changed byte
is either another value or refused:

1. preferred serialization (section 4.1): every argument -- an integer,
   a length, a tag number, a simple value -- in its shortest form
   (section 3: additional information 0-23 in the initial byte, else 1, 2,
   4 or 8 following bytes, the fewest that hold it); a float as the
   shortest of half, single and double precision that keeps its value
   exactly, NaN as ``0xf97e00`` (section 4.2.2);
2. no indefinite-length item (section 3.2);
3. the keys of every map sorted by the bytewise lexicographic order of
   their deterministic encodings, and none twice (section 5.6: a map with a
   duplicate key is not valid);
4. an integer beyond 64 bits as a bignum, tag 2 or 3 (section 3.4.3), whose
   byte string has no leading zero byte, and only when it does not fit
   major type 0 or 1.

The decoder also refuses what is not well-formed (section 3, appendix F):
a reserved additional information (28-30), a "break" outside an
indefinite-length item, a two-byte simple value below 32 (section 3.3),
text that is not UTF-8, a length beyond the bytes left, trailing bytes; and,
as limits of its own, nesting deeper than :data:`MAX_DEPTH` and map keys
that are arrays or maps, or tags of one (Python cannot hold them as keys),
or that equal another key as Python values (``1`` and ``1.0``).

Python values: ``int``, ``bytes``, ``str``, ``list`` (``tuple`` is
encoded as an array too), ``dict``, ``bool``, ``None``, ``float``,
:class:`Tag` and :class:`Simple` (:data:`UNDEFINED` is simple value 23).
Tags 2 and 3 decode to ``int``; every other tag to a :class:`Tag`.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ..errors import MalformedCBORError, WrongTypeError

__all__ = ["MAX_DEPTH", "Tag", "Simple", "UNDEFINED", "encode", "decode"]

#: The deepest nesting of arrays, maps and tags :func:`decode` and :func:`encode` accept.
MAX_DEPTH = 64

_UINT, _NINT, _BYTES, _TEXT, _ARRAY, _MAP, _TAG, _SIMPLE = range(8)
_FALSE, _TRUE, _NULL = 20, 21, 22
_BIGNUM_POSITIVE, _BIGNUM_NEGATIVE = 2, 3
_MAX_UINT64 = 2**64 - 1
_NAN = b"\xf9\x7e\x00"


@dataclass(frozen=True)
class Tag:
    """A tagged data item (RFC 8949 section 3.4): ``number`` and the item it tags."""

    number: int
    value: Any


@dataclass(frozen=True)
class Simple:
    """A simple value (major type 7, RFC 8949 section 3.3) other than false, true and null."""

    value: int


#: Simple value 23, "undefined".
UNDEFINED = Simple(23)


# --- encoding ------------------------------------------------------------------------------


def _head(major: int, argument: int) -> bytes:
    """The initial byte and argument, in the shortest form (RFC 8949 sections 3 and 4.2.1)."""
    if argument < 24:
        return bytes([major << 5 | argument])
    if argument <= 0xFF:
        return bytes([major << 5 | 24, argument])
    if argument <= 0xFFFF:
        return bytes([major << 5 | 25]) + argument.to_bytes(2, "big")
    if argument <= 0xFFFFFFFF:
        return bytes([major << 5 | 26]) + argument.to_bytes(4, "big")
    return bytes([major << 5 | 27]) + argument.to_bytes(8, "big")


def _float(value: float) -> bytes:
    """The shortest of half, single and double precision that keeps ``value`` (sections 4.1, 4.2.2)."""
    if math.isnan(value):
        return _NAN
    exact = struct.pack(">d", value)
    for initial, form in ((0xF9, ">e"), (0xFA, ">f")):
        try:
            packed = struct.pack(form, value)
        except OverflowError:
            continue
        if struct.pack(">d", struct.unpack(form, packed)[0]) == exact:
            return bytes([initial]) + packed
    return b"\xfb" + exact


def _integer(value: int) -> bytes:
    if 0 <= value <= _MAX_UINT64:
        return _head(_UINT, value)
    if -(2**64) <= value < 0:
        return _head(_NINT, -1 - value)
    # 4. a bignum (section 3.4.3): tag 2 (n) or 3 (-1 - n), the magnitude big-endian, no leading zero.
    tag, magnitude = (_BIGNUM_POSITIVE, value) if value > 0 else (_BIGNUM_NEGATIVE, -1 - value)
    raw = magnitude.to_bytes((magnitude.bit_length() + 7) // 8, "big")
    return _head(_TAG, tag) + _head(_BYTES, len(raw)) + raw


def _text(value: str, path: str) -> bytes:
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:
        raise WrongTypeError("the CBOR text at %s" % (path,), "valid Unicode (no lone surrogate)", value) from None
    return _head(_TEXT, len(raw)) + raw


def _simple(value: Simple, path: str) -> bytes:
    number = value.value
    if (
        isinstance(number, bool)
        or not isinstance(number, int)
        or not (0 <= number <= 19 or number == 23 or 32 <= number <= 255)
    ):
        raise WrongTypeError(
            "the CBOR simple value at %s" % (path,), "0-19, 23 or 32-255 (false, true, null are bool and None)", number
        )
    return _head(_SIMPLE, number)


def _scalar(value: Any, path: str) -> Optional[bytes]:
    """The encoding of a value that holds no other (``None`` for a container, a tag or an unknown type)."""
    if value is None or isinstance(value, bool):  # bool before int: True is an int in Python
        return bytes([0xE0 | {None: _NULL, False: _FALSE, True: _TRUE}[value]])
    if isinstance(value, int):
        return _integer(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        return _head(_BYTES, len(raw)) + raw
    if isinstance(value, str):
        return _text(value, path)
    if isinstance(value, Simple):
        return _simple(value, path)
    return None


def _tag_head(value: Tag, path: str) -> bytes:
    number = value.number
    if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= _MAX_UINT64:
        raise WrongTypeError("the CBOR tag number at %s" % (path,), "an int from 0 to 2**64-1", number)
    if number in (_BIGNUM_POSITIVE, _BIGNUM_NEGATIVE):
        raise WrongTypeError(
            "the CBOR tag at %s" % (path,), "a tag other than 2 and 3 (a bignum is given as an int)", number
        )
    return _head(_TAG, number)


def _encode(value: Any, path: str, depth: int, out: List[bytes]) -> None:
    if depth > MAX_DEPTH:
        raise WrongTypeError("the CBOR value at %s" % (path,), "nested at most %d deep" % (MAX_DEPTH,), value)
    scalar = _scalar(value, path)
    if scalar is not None:
        out.append(scalar)
    elif isinstance(value, (list, tuple)):
        out.append(_head(_ARRAY, len(value)))
        for index, item in enumerate(value):
            _encode(item, "%s[%d]" % (path, index), depth + 1, out)
    elif isinstance(value, dict):
        out.append(_map(value, path, depth))
    elif isinstance(value, Tag):
        out.append(_tag_head(value, path))
        _encode(value.value, "%s<%d>" % (path, value.number), depth + 1, out)
    else:
        raise WrongTypeError(
            "the CBOR value at %s" % (path,), "int, float, bytes, str, list, dict, bool, None, Tag or Simple", value
        )


def _map(value: Dict[Any, Any], path: str, depth: int) -> bytes:
    """3. The entries sorted by the bytewise order of the keys' encodings (section 4.2.1)."""
    entries: List[Tuple[bytes, bytes]] = []
    for key, item in value.items():
        key_out: List[bytes] = []
        _encode(key, path + "{key}", depth + 1, key_out)
        item_out: List[bytes] = []
        _encode(item, "%s[%r]" % (path, key), depth + 1, item_out)
        entries.append((b"".join(key_out), b"".join(item_out)))
    entries.sort(key=lambda entry: entry[0])
    return _head(_MAP, len(entries)) + b"".join(key + item for key, item in entries)


def encode(value: Any) -> bytes:
    """The deterministic encoding (RFC 8949 section 4.2.1) of ``value``.

    Raises :class:`~agentloop.errors.WrongTypeError` for a value outside
    the types of the module docstring, naming where it is (``$[2]{key}``).
    """
    out: List[bytes] = []
    _encode(value, "$", 0, out)
    return b"".join(out)


# --- decoding ------------------------------------------------------------------------------


class _Reader:
    """A position in the bytes being decoded; every refusal names the offset."""

    __slots__ = ("data", "at")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def fail(self, reason: str, offset: int = -1) -> MalformedCBORError:
        return MalformedCBORError(self.at if offset < 0 else offset, reason)

    def take(self, count: int) -> bytes:
        if count > len(self.data) - self.at:
            raise self.fail("%d bytes are needed, %d are left" % (count, len(self.data) - self.at))
        chunk = self.data[self.at : self.at + count]
        self.at += count
        return chunk

    def head(self) -> Tuple[int, int, int, int]:
        """``(major, additional information, argument, offset of the initial byte)``; floats are read by the caller."""
        start = self.at
        initial = self.take(1)[0]
        major, info = initial >> 5, initial & 0x1F
        if info < 24 or (major == _SIMPLE and 25 <= info <= 27):
            return major, info, info, start
        if info == 31:
            raise self.fail("an indefinite-length item or a break: not deterministic (RFC 8949 section 4.2.1)", start)
        if info > 27:
            raise self.fail("reserved additional information %d (RFC 8949 section 3)" % (info,), start)
        size = 1 << (info - 24)
        argument = int.from_bytes(self.take(size), "big")
        if argument < (24 if size == 1 else 1 << (4 * size)):
            raise self.fail("the argument %d is not in its shortest form (RFC 8949 section 4.2.1)" % (argument,), start)
        return major, info, argument, start


def _decode_float(reader: _Reader, info: int, start: int) -> float:
    size = 1 << (info - 24)
    raw = reader.take(size)
    value = float(struct.unpack({2: ">e", 4: ">f", 8: ">d"}[size], raw)[0])
    if _float(value) != reader.data[start : reader.at]:
        raise reader.fail(
            "the float %r is not in its shortest form (RFC 8949 sections 4.1 and 4.2.2)" % (value,), start
        )
    return value


def _decode_simple(reader: _Reader, info: int, argument: int, start: int) -> Any:
    if info >= 25:
        return _decode_float(reader, info, start)
    if info == 24 and argument < 32:
        raise reader.fail("a two-byte simple value below 32 is not well-formed (RFC 8949 section 3.3)", start)
    return {_FALSE: False, _TRUE: True, _NULL: None}.get(argument, Simple(argument))


def _decode_map(reader: _Reader, count: int, depth: int) -> Dict[Any, Any]:
    out: Dict[Any, Any] = {}
    previous = b""
    for _ in range(count):
        start = reader.at
        key = _decode(reader, depth + 1)
        encoded = reader.data[start : reader.at]
        if previous and encoded <= previous:
            why = "repeats a key" if encoded == previous else "has its keys out of order"
            raise reader.fail("the map %s (RFC 8949 sections 4.2.1 and 5.6)" % (why,), start)
        previous = encoded
        try:
            hash(key)  # a list, a dict, or a tag around one (Tag(1, [])) cannot be a Python key
        except TypeError:
            why = "a map key that is an array or a map (or a tag of one) is not supported here"
            raise reader.fail(why, start) from None
        if key in out:
            raise reader.fail("two map keys are equal as values (%r)" % (key,), start)
        out[key] = _decode(reader, depth + 1)
    return out


def _decode_tag(reader: _Reader, number: int, start: int, depth: int) -> Any:
    value = _decode(reader, depth + 1)
    if number not in (_BIGNUM_POSITIVE, _BIGNUM_NEGATIVE):
        return Tag(number, value)
    if not isinstance(value, bytes):
        raise reader.fail("a bignum (tag %d) holds a byte string (RFC 8949 section 3.4.3)" % (number,), start)
    if value[:1] == b"\x00" or int.from_bytes(value, "big") <= _MAX_UINT64:
        raise reader.fail("a bignum with a leading zero byte or that fits 64 bits (RFC 8949 section 3.4.3)", start)
    magnitude = int.from_bytes(value, "big")
    return magnitude if number == _BIGNUM_POSITIVE else -1 - magnitude


def _decode_string(reader: _Reader, major: int, size: int, start: int) -> Any:
    raw = reader.take(size)
    if major == _BYTES:
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise reader.fail("a text string that is not UTF-8 (RFC 8949 section 3.1)", start) from None


def _decode_container(reader: _Reader, major: int, count: int, start: int, depth: int) -> Any:
    left = len(reader.data) - reader.at
    if major == _ARRAY:
        if count > left:
            raise reader.fail("an array of %d items in %d bytes" % (count, left), start)
        return [_decode(reader, depth + 1) for _ in range(count)]
    if count > left // 2:
        raise reader.fail("a map of %d entries in %d bytes" % (count, left), start)
    return _decode_map(reader, count, depth)


def _decode(reader: _Reader, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise reader.fail("nested deeper than %d" % (MAX_DEPTH,))
    major, info, argument, start = reader.head()
    if major == _UINT:
        return argument
    if major == _NINT:
        return -1 - argument
    if major in (_BYTES, _TEXT):
        return _decode_string(reader, major, argument, start)
    if major in (_ARRAY, _MAP):
        return _decode_container(reader, major, argument, start, depth)
    if major == _TAG:
        return _decode_tag(reader, argument, start, depth)
    return _decode_simple(reader, info, argument, start)


def decode(data: bytes) -> Any:
    """The one data item ``data`` encodes deterministically; anything else raises.

    Raises :class:`~agentloop.errors.MalformedCBORError` naming the byte at
    fault and the rule (see the module docstring).
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise WrongTypeError("CBOR data", "bytes", data)
    reader = _Reader(bytes(data))
    if not reader.data:
        raise reader.fail("no data item: the input is empty")
    value = _decode(reader, 0)
    if reader.at != len(reader.data):
        raise reader.fail("%d bytes after the data item" % (len(reader.data) - reader.at,))
    return value
