"""The ``format`` values agentloop can assert (Validation 7.3), stdlib only.

``format`` is an annotation unless assertion is asked for (Validation 7.2.1);
with ``assert_formats=True`` these names are checked and any other name is
refused when the schema is compiled (Validation 7.2.2: an implementation that
asserts formats must not silently pass one it does not know).

| name | grammar followed |
| --- | --- |
| ``date-time`` | RFC 3339 section 5.6 ``date-time`` (below) |
| ``date`` | RFC 3339 ``full-date``, with the real number of days in the month |
| ``time`` | RFC 3339 ``full-time`` (the offset is required) |
| ``email`` | RFC 5321 section 4.1.2 ``Mailbox`` (below) |
| ``uuid`` | RFC 9562 (formerly 4122) string form: 8-4-4-4-12 hex digits, any version |
| ``ipv4`` | RFC 2673 section 3.2 dotted-quad: four decimal octets 0-255, no leading zeros |
| ``ipv6`` | RFC 4291 section 2.2 text forms (``::`` compression, a dotted-quad tail), no zone, ASCII only |
| ``uri`` | RFC 3986 section 3 ``URI`` (absolute, with a scheme; percent-escapes well formed) |

``date-time`` takes ``T``/``Z`` in either case, and a second 60 only where the UTC time is 23:59.
``email`` takes a dot-string or quoted-string local part (at most 64 octets), and a domain name or an
address literal (IPv4 or ``IPv6:``).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Callable, Dict, Optional

__all__ = ["FORMAT_CHECKS", "check_format"]

_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))\Z")
_IPV4 = re.compile(
    r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\Z"
)
_IPV6_CHARS = re.compile(r"[0-9A-Fa-f:.]+\Z")
_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z")
_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

# RFC 5321 4.1.2 / RFC 5322 3.2.3: atext, dot-string, quoted-string (SMTP form).
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LOCAL = re.compile(r'(?:%s(?:\.%s)*|"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*")\Z' % (_ATOM, _ATOM))
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\Z")

# RFC 3986 section 3, as regular-expression pieces.
_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = r"(?:[%s%s:@]|%s)" % (_UNRESERVED, _SUB_DELIMS, _PCT)
_URI = re.compile(
    r"[A-Za-z][A-Za-z0-9+.\-]*:"  # scheme ":"
    r"(?:"
    r"//(?:((?:[%s%s:]|%s)*)@)?"
    % (_UNRESERVED, _SUB_DELIMS, _PCT)  # "//" [userinfo "@"]
    + r"(\[[^\]]*\]|(?:[%s%s]|%s)*)" % (_UNRESERVED, _SUB_DELIMS, _PCT)  # host
    + r"(?::[0-9]*)?"  # [":" port]
    r"(?:/%s*)*"
    % _PCHAR  # path-abempty
    + r"|/(?:%s+(?:/%s*)*)?" % (_PCHAR, _PCHAR)  # path-absolute
    + r"|%s+(?:/%s*)*" % (_PCHAR, _PCHAR)  # path-rootless
    + r"|)"  # path-empty
    r"(?:\?(?:%s|[/?])*)?"
    % _PCHAR  # [ "?" query ]
    + r"(?:#(?:%s|[/?])*)?\Z" % _PCHAR  # [ "#" fragment ]
)
_IP_FUTURE = re.compile(r"v[0-9A-Fa-f]+\.[%s%s:]+\Z" % (_UNRESERVED, _SUB_DELIMS))


def _leap_year(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _date(text: str) -> bool:
    match = _DATE.match(text)
    if match is None:
        return False
    year, month, day = (int(part) for part in match.groups())
    if not 1 <= month <= 12 or day < 1:
        return False
    if month == 2 and not _leap_year(year):
        return day <= 28
    return day <= _DAYS[month - 1]


def _time(text: str) -> bool:
    match = _TIME.match(text)
    if match is None:
        return False
    hour, minute, second = int(match.group(1)), int(match.group(2)), int(match.group(3))
    if match.group(4) is None:
        offset_hour, offset_minute = int(match.group(6)), int(match.group(7))
        if offset_hour > 23 or offset_minute > 59:
            return False
        sign = 1 if match.group(5) == "+" else -1
        offset = sign * (offset_hour * 60 + offset_minute)
    else:
        offset = 0
    if hour > 23 or minute > 59 or second > 60:
        return False
    # RFC 3339 5.7: a leap second is the last second of a UTC day.
    return second < 60 or (hour * 60 + minute - offset) % 1440 == 23 * 60 + 59


def _date_time(text: str) -> bool:
    if len(text) < 11 or text[10] not in "Tt":
        return False
    return _date(text[:10]) and _time(text[11:])


def _ipv4(text: str) -> bool:
    return _IPV4.match(text) is not None


def _ipv6(text: str) -> bool:
    if _IPV6_CHARS.match(text) is None:  # no zone, brackets, spaces or non-ASCII digits
        return False
    if "." in text and not _ipv4(text[text.rfind(":") + 1 :]):
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _hostname(text: str) -> bool:
    labels = text.split(".")
    return len(text) <= 253 and all(_LABEL.match(label) for label in labels)


def _email(text: str) -> bool:
    at = text.rfind("@")
    if at <= 0:
        return False
    local, domain = text[:at], text[at + 1 :]
    if len(local.encode("utf-8")) > 64 or _LOCAL.match(local) is None:
        return False
    if domain.startswith("[") and domain.endswith("]"):
        literal = domain[1:-1]
        if literal[:5].lower() == "ipv6:":
            return _ipv6(literal[5:])
        return _ipv4(literal)
    return len(domain) <= 255 and _hostname(domain)


def _uuid(text: str) -> bool:
    return _UUID.match(text) is not None


def _uri(text: str) -> bool:
    match = _URI.match(text)
    if match is None:
        return False
    host: Optional[str] = match.group(2)
    if host is not None and host.startswith("["):
        literal = host[1:-1]
        return _IP_FUTURE.match(literal) is not None or _ipv6(literal)
    return True


#: Format name -> check of a string instance.
FORMAT_CHECKS: Dict[str, Callable[[str], bool]] = {
    "date-time": _date_time,
    "date": _date,
    "time": _time,
    "email": _email,
    "uuid": _uuid,
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "uri": _uri,
}


def check_format(name: str, text: str) -> bool:
    """Whether ``text`` is a valid ``name`` (one of :data:`FORMAT_CHECKS`)."""
    return FORMAT_CHECKS[name](text)
