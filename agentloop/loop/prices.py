"""The exact cost of a turn: provider-reported usage times a price table, in decimal.

A price table maps a model name (what the model's ``model_info()`` calls
``"model"``) to its prices in USD per million tokens, each a decimal string::

    {"claude-x": {"input": "3.00", "output": "15.00", "cache_read": "0.30", "cache_write": "3.75"}}

``input`` and ``output`` are required; ``cache_read`` and ``cache_write`` are
needed only by a turn whose :class:`~agentloop.Usage` reports such tokens.
A turn costs (all divided by one million)::

    (input_tokens - cache_read_tokens - cache_write_tokens) * input
      + cache_read_tokens * cache_read + cache_write_tokens * cache_write
      + output_tokens * output

No binary float is involved anywhere: prices are parsed from their decimal
text, the arithmetic is :mod:`decimal` in a context that traps any rounding
(:data:`_EXACT`), and amounts are recorded as decimal strings in plain
notation (:func:`amount_text`: ``"0.000225"``, never ``"2.25E-4"``).  Floats
are refused as prices and budgets: ``0.075`` as a float is not 0.075.
"""

from __future__ import annotations

import decimal
import re
from decimal import Decimal
from typing import Any, Dict, Mapping, Optional, Tuple

from ..errors import RunConfigError
from ..messages import Usage, shown

__all__ = ["PRICE_KEYS", "Prices", "parse_amount", "amount_text", "price_table", "recorded_table", "turn_cost", "add"]

#: The members a model's prices may have (the first two are required).
PRICE_KEYS = ("input", "output", "cache_read", "cache_write")

#: ``{model name: {price key: USD per million tokens}}``, checked by :func:`price_table`.
Prices = Dict[str, Dict[str, Decimal]]

# A non-negative decimal in plain notation, at most 40 characters.
_AMOUNT = re.compile(r"(?:0|[1-9][0-9]*)(?:\.[0-9]+)?\Z")
_MAX_AMOUNT_CHARS = 40
# Wide enough for any product of a 2**53 token count and a 40-digit price,
# summed over 2**53 turns; Inexact is trapped, so a rounding would raise.
_EXACT = decimal.Context(
    prec=200, Emax=10**6, Emin=-(10**6), traps=[decimal.Inexact, decimal.Overflow, decimal.InvalidOperation]
)
_MILLION = 6


def parse_amount(value: object, where: str) -> Decimal:
    """A USD amount given as a decimal string (``"0.075"``), a ``Decimal`` or an int; never a float.

    Raises :class:`~agentloop.errors.RunConfigError` naming ``where``.
    """
    if isinstance(value, str):
        if len(value) > _MAX_AMOUNT_CHARS or not _AMOUNT.match(value):
            raise RunConfigError(
                where, 'must be a decimal string like "0.075" (digits, one optional point), got %s' % (shown(value),)
            )
        return Decimal(value)
    if isinstance(value, Decimal):
        if not value.is_finite() or value < 0 or len(amount_text(value)) > _MAX_AMOUNT_CHARS:
            raise RunConfigError(
                where, "must be a finite Decimal >= 0 of at most %d digits, got %s" % (_MAX_AMOUNT_CHARS, value)
            )
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**_MAX_AMOUNT_CHARS:
        return Decimal(value)
    if isinstance(value, float):
        raise RunConfigError(
            where, 'must be a decimal string like "0.075", not a float (%r is not exact in binary)' % (value,)
        )
    raise RunConfigError(where, 'must be a decimal string like "0.075", got %s' % (shown(value),))


def amount_text(value: Decimal) -> str:
    """``value`` in plain decimal notation without trailing zeros: ``"0.000225"``, ``"3"``, ``"0"``."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def price_table(prices: object) -> Prices:
    """Check a price table (see the module docstring); raise :class:`~agentloop.errors.RunConfigError`
    naming the entry."""
    if not isinstance(prices, Mapping) or not prices:
        raise RunConfigError(
            "prices", 'must be a non-empty dict {model name: {"input": ..., "output": ...}}, got %s' % (shown(prices),)
        )
    table: Prices = {}
    for model, entry in prices.items():
        if not isinstance(model, str) or not model:
            raise RunConfigError("prices", "model names must be non-empty strings, got %s" % (shown(model),))
        where = "prices[%s]" % (shown(model),)
        if not isinstance(entry, Mapping):
            raise RunConfigError(where, "must be a dict of prices, got %s" % (shown(entry),))
        unknown = sorted(str(key) for key in entry if key not in PRICE_KEYS)
        if unknown:
            raise RunConfigError(where, "unknown price %s (have: %s)" % (shown(unknown[0]), ", ".join(PRICE_KEYS)))
        for required in PRICE_KEYS[:2]:
            if required not in entry:
                raise RunConfigError(where, "needs %r (USD per million tokens)" % (required,))
        table[model] = {key: parse_amount(entry[key], "%s[%r]" % (where, key)) for key in PRICE_KEYS if key in entry}
    return table


def recorded_table(table: Prices) -> Dict[str, Dict[str, str]]:
    """The table as the task record holds it: every price as :func:`amount_text`."""
    return {model: {key: amount_text(price) for key, price in entry.items()} for model, entry in table.items()}


def turn_cost(price: Mapping[str, Decimal], usage: Optional[Usage]) -> Tuple[Optional[Decimal], str]:
    """``(cost in USD, "")`` for one turn, or ``(None, why it cannot be counted)``."""
    if usage is None:
        return None, "the model reported no usage"
    parts: Dict[str, Any] = {
        "input": usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens,
        "output": usage.output_tokens,
        "cache_read": usage.cache_read_tokens,
        "cache_write": usage.cache_write_tokens,
    }
    total = Decimal(0)
    for key, tokens in parts.items():
        if not tokens:
            continue
        if key not in price:
            return None, "the model reported %d %s tokens and prices has no %r price" % (
                tokens,
                key.replace("_", " "),
                key,
            )
        total = _EXACT.add(total, _EXACT.multiply(Decimal(tokens), price[key]))
    return _EXACT.scaleb(total, -_MILLION), ""


def add(a: Decimal, b: Decimal) -> Decimal:
    """``a + b``, exactly (raises ``decimal.Inexact`` rather than round)."""
    return _EXACT.add(a, b)
