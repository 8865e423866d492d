"""Ed25519 (RFC 8032) in pure Python: strict verification, and an unsafe signer.

Verification is what agentloop needs everywhere, so it is here, stdlib only.
It follows RFC 8032 section 5.1.7 with the choices Go's ``crypto/ed25519``
makes, plus a few stricter ones:

* cofactorless: the check is ``[S]B == R + [k]A``, done as Go does it, by
  computing ``R' = [S]B - [k]A`` and comparing its encoding with the 32
  bytes of ``R`` (so a non-canonical encoding of ``R`` never verifies);
* ``S`` must be below the group order ``L`` (section 5.1.7 step 1, section
  8.4: no malleability);
* the public key ``A`` must be a canonical encoding (``y < p``; not the
  ``x = 0`` point with the sign bit set; section 5.1.3) of a point on the
  curve, and not of small order: a small-order key is nobody's key (a
  clamped secret scalar times ``B`` always has order ``L``) and lets anyone
  forge one signature in eight.  Go accepts both a non-canonical and a
  small-order ``A``; honest keys are never either;
* lengths: a public key is 32 bytes, a signature 64, nothing else.

Speed: points are in extended twisted Edwards coordinates (RFC 8032 section
5.1.4, Hisil-Wong-Carter-Dawson 2008); ``[S]B`` uses a table of
``j * 16^i * B`` built on first use (no work at import time), ``[k]A`` a
4-bit fixed window.  ``bench/ed25519.py`` measures a verification at a few
milliseconds on CPython.

The signer (:func:`unsafe_sign`, :func:`unsafe_public_key`) is RFC 8032
section 5.1.6, deterministic, and **not side-channel safe**: Python integer
arithmetic and the table lookups take time and touch memory depending on the
secret.  Only :mod:`agentloop.signing.backend` calls it, and only when the
caller opts in with ``allow_slow_unsafe_signer=True``.
"""

from __future__ import annotations

import hashlib
from typing import List, Optional, Tuple

from ..errors import SigningKeyError

__all__ = [
    "PUBLIC_KEY_SIZE",
    "SEED_SIZE",
    "SIGNATURE_SIZE",
    "verify",
    "is_valid_public_key",
    "unsafe_public_key",
    "unsafe_sign",
]

#: RFC 8032 section 5.1.5: a public key is 32 octets.
PUBLIC_KEY_SIZE = 32
#: RFC 8032 section 5.1.5: a private key (the seed) is 32 octets.
SEED_SIZE = 32
#: RFC 8032 section 5.1.6: a signature is 64 octets, ``R || S``.
SIGNATURE_SIZE = 64

# RFC 8032 section 5.1: the field, the curve constant d, the group order L.
_P = 2**255 - 19
_D = (-121665 * pow(121666, _P - 2, _P)) % _P
_D2 = (2 * _D) % _P
_L = 2**252 + 27742317777372353535851937790883648493
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)

# Extended coordinates (X, Y, Z, T) with x = X/Z, y = Y/Z, x*y = T/Z.
_Point = Tuple[int, int, int, int]
# A precomputed affine point for mixed addition: (y + x, y - x, 2*d*x*y).
_Niels = Tuple[int, int, int]

_IDENTITY: _Point = (0, 1, 1, 0)
# RFC 8032 section 5.1: B = (x, 4/5) with x positive (even).
_BY = (4 * pow(5, _P - 2, _P)) % _P
_BX = 15112221349535400772501151409588531511454012693041857206046113283949847762202


def _recover_x(y: int, sign: int) -> Optional[int]:
    """RFC 8032 section 5.1.3 steps 2-4: x from y and its sign bit, or None."""
    yy = y * y % _P
    u = (yy - 1) % _P
    v = (_D * yy + 1) % _P
    # x = u v^3 (u v^7)^((p-5)/8)
    v3 = v * v % _P * v % _P
    x = u * v3 % _P * pow(u * v3 % _P * v3 % _P * v % _P, (_P - 5) // 8, _P) % _P
    vxx = v * x % _P * x % _P
    if vxx == u:
        pass
    elif vxx == (-u) % _P:
        x = x * _SQRT_M1 % _P
    else:
        return None
    if x == 0 and sign == 1:
        return None
    if x & 1 != sign:
        x = _P - x
    return x


def _decode(data: bytes) -> Optional[_Point]:
    """RFC 8032 section 5.1.3, strict: ``None`` unless ``data`` is a canonical point encoding."""
    if len(data) != 32:
        return None
    n = int.from_bytes(data, "little")
    sign = n >> 255
    y = n & ((1 << 255) - 1)
    if y >= _P:  # step 1: "If the resulting value is >= p, decoding fails."
        return None
    x = _recover_x(y, sign)
    if x is None:
        return None
    return (x, y, 1, x * y % _P)


def _encode(point: _Point) -> bytes:
    """RFC 8032 section 5.1.2: y with the low bit of x in the top bit."""
    x, y, z, _ = point
    zi = pow(z, _P - 2, _P)
    x = x * zi % _P
    y = y * zi % _P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def _add(p1: _Point, p2: _Point) -> _Point:
    """RFC 8032 section 5.1.4, addition in extended coordinates."""
    x1, y1, z1, t1 = p1
    x2, y2, z2, t2 = p2
    a = (y1 - x1) * (y2 - x2) % _P
    b = (y1 + x1) * (y2 + x2) % _P
    c = t1 * _D2 % _P * t2 % _P
    d = 2 * z1 * z2 % _P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _add_niels(p1: _Point, q: _Niels) -> _Point:
    """Addition of an affine precomputed point (Z = 1): one multiplication fewer."""
    x1, y1, z1, t1 = p1
    yplusx, yminusx, xy2d = q
    a = (y1 - x1) * yminusx % _P
    b = (y1 + x1) * yplusx % _P
    c = t1 * xy2d % _P
    d = 2 * z1
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _double(p1: _Point) -> _Point:
    """RFC 8032 section 5.1.4, doubling in extended coordinates."""
    x1, y1, z1, _ = p1
    a = x1 * x1 % _P
    b = y1 * y1 % _P
    c = 2 * z1 * z1 % _P
    h = a + b
    s = x1 + y1
    e = h - s * s % _P
    g = a - b
    f = c + g
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _negate(p1: _Point) -> _Point:
    x, y, z, t = p1
    return ((-x) % _P, y, z, (-t) % _P)


def _is_identity(p1: _Point) -> bool:
    x, y, z, _ = p1
    return x % _P == 0 and (y - z) % _P == 0


def _base_point() -> _Point:
    return (_BX, _BY, 1, _BX * _BY % _P)


_BASE_TABLE: List[List[_Niels]] = []


def _base_table() -> List[List[_Niels]]:
    """``table[i][j] = j * 16^i * B`` for i < 64, 1 <= j <= 15 (index 0 unused), built once.

    The 960 points are made affine with one inversion (Montgomery's trick).
    """
    if _BASE_TABLE:
        return _BASE_TABLE
    points: List[_Point] = []
    start = _base_point()
    for _ in range(64):
        points.append(start)
        for _ in range(14):
            points.append(_add(points[-1], start))
        start = _add(points[-1], start)  # 16 * start
    # Montgomery's trick: prefix products, one inversion, then walk back.
    prefix = [1]
    for point in points:
        prefix.append(prefix[-1] * point[2] % _P)
    inverse = pow(prefix[-1], _P - 2, _P)
    inverses = [0] * len(points)
    for index in range(len(points) - 1, -1, -1):
        inverses[index] = inverse * prefix[index] % _P
        inverse = inverse * points[index][2] % _P
    rows: List[List[_Niels]] = []
    for i in range(64):
        row: List[_Niels] = [(1, 1, 0)]  # the identity in niels form, never used
        for j in range(15):
            x, y, _z, _t = points[15 * i + j]
            zi = inverses[15 * i + j]
            ax, ay = x * zi % _P, y * zi % _P
            row.append(((ay + ax) % _P, (ay - ax) % _P, ax * ay % _P * _D2 % _P))
        rows.append(row)
    _BASE_TABLE.extend(rows)
    return _BASE_TABLE


def _mul_base(scalar: int) -> _Point:
    """``[scalar]B`` for 0 <= scalar < 2^256: one table addition per nibble, no doublings."""
    table = _base_table()
    acc = _IDENTITY
    for i in range(64):
        nibble = (scalar >> (4 * i)) & 15
        if nibble:
            acc = _add_niels(acc, table[i][nibble])
    return acc


def _mul(scalar: int, point: _Point) -> _Point:
    """``[scalar]point`` for 0 <= scalar < 2^256 with a 4-bit fixed window."""
    multiples = [_IDENTITY, point]
    for _ in range(14):
        multiples.append(_add(multiples[-1], point))
    acc = _IDENTITY
    for i in range(63, -1, -1):
        acc = _double(_double(_double(_double(acc))))
        nibble = (scalar >> (4 * i)) & 15
        if nibble:
            acc = _add(acc, multiples[nibble])
    return acc


def _has_small_order(point: _Point) -> bool:
    """True when ``[8]point`` is the identity: the point is in the torsion subgroup."""
    return _is_identity(_double(_double(_double(point))))


def is_valid_public_key(public_key: bytes) -> bool:
    """True when ``public_key`` is 32 bytes canonically encoding a point of large order.

    RFC 8032 section 5.1.3 decoding, strictly: ``y < p``, the point is on
    the curve, ``x = 0`` has sign bit 0; and the point is not of small order.
    """
    if not isinstance(public_key, (bytes, bytearray)):
        return False
    point = _decode(bytes(public_key))
    return point is not None and not _has_small_order(point)


def verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """True when ``signature`` is ``public_key``'s Ed25519 signature of ``message``.

    RFC 8032 section 5.1.7, cofactorless:

    1. the key is 32 bytes and the signature 64; the key decodes strictly
       (see :func:`is_valid_public_key`); ``S``, the second half of the
       signature read little-endian, is below ``L``;
    2. ``k = SHA-512(R || A || M)`` read little-endian, modulo ``L``;
    3. ``R' = [S]B - [k]A``; the signature is valid when the encoding of
       ``R'`` equals the first 32 bytes of the signature, byte for byte.

    Never raises for bad input: anything that is not a valid signature is
    ``False``.
    """
    # 1. lengths, the key, S < L
    if not isinstance(public_key, (bytes, bytearray)) or not isinstance(signature, (bytes, bytearray)):
        return False
    if not isinstance(message, (bytes, bytearray)):
        return False
    if len(public_key) != PUBLIC_KEY_SIZE or len(signature) != SIGNATURE_SIZE:
        return False
    a_point = _decode(bytes(public_key))
    if a_point is None or _has_small_order(a_point):
        return False
    r_bytes = bytes(signature[:32])
    s = int.from_bytes(signature[32:], "little")
    if s >= _L:
        return False

    # 2. the challenge
    k = int.from_bytes(hashlib.sha512(r_bytes + bytes(public_key) + bytes(message)).digest(), "little") % _L

    # 3. R' = [S]B - [k]A, compared as encodings
    r_check = _add(_mul_base(s), _mul(k, _negate(a_point)))
    return _encode(r_check) == r_bytes


def _expand(seed: bytes) -> Tuple[int, bytes]:
    """RFC 8032 section 5.1.5 steps 1-3: the clamped scalar ``s`` and the prefix."""
    if not isinstance(seed, (bytes, bytearray)) or len(seed) != SEED_SIZE:
        raise SigningKeyError("seed", "an Ed25519 private key is %d bytes" % (SEED_SIZE,))
    digest = hashlib.sha512(bytes(seed)).digest()
    scalar = int.from_bytes(digest[:32], "little")
    scalar &= (1 << 254) - 8
    scalar |= 1 << 254
    return scalar, digest[32:]


def unsafe_public_key(seed: bytes) -> bytes:
    """RFC 8032 section 5.1.5: the public key of a 32-byte seed.

    Not side-channel safe (see the module docstring): it computes with the
    secret scalar in variable time.
    """
    scalar, _ = _expand(seed)
    return _encode(_mul_base(scalar))


def unsafe_sign(seed: bytes, message: bytes) -> bytes:
    """RFC 8032 section 5.1.6: the deterministic Ed25519 signature of ``message``.

    1. ``s``, ``prefix`` from SHA-512 of the seed; ``A = [s]B``;
    2. ``r = SHA-512(prefix || M) mod L``; ``R = [r]B``;
    3. ``k = SHA-512(R || A || M) mod L``; ``S = (r + k * s) mod L``;
    4. the signature is ``R || S`` (S little-endian, 32 bytes).

    Not side-channel safe (see the module docstring).
    """
    # 1.
    scalar, prefix = _expand(seed)
    a_bytes = _encode(_mul_base(scalar))
    # 2.
    r = int.from_bytes(hashlib.sha512(prefix + bytes(message)).digest(), "little") % _L
    r_bytes = _encode(_mul_base(r))
    # 3.
    k = int.from_bytes(hashlib.sha512(r_bytes + a_bytes + bytes(message)).digest(), "little") % _L
    s = (r + k * scalar) % _L
    # 4.
    return r_bytes + s.to_bytes(32, "little")
