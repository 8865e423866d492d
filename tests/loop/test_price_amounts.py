"""USD amounts are exact: a decimal string, a finite non-negative Decimal or an int, never a float."""

from __future__ import annotations

import unittest
from decimal import Decimal

from agentloop.errors import RunConfigError
from agentloop.loop.prices import parse_amount, price_table


class TestAmounts(unittest.TestCase):
    def test_decimals_and_ints_are_taken_as_they_are(self) -> None:
        self.assertEqual(parse_amount(Decimal("0.075"), "max_cost"), Decimal("0.075"))
        self.assertEqual(parse_amount(3, "max_cost"), Decimal(3))
        self.assertEqual(parse_amount(Decimal(0), "max_cost"), Decimal(0))

    def test_amounts_that_are_not_finite_non_negative_and_short_are_refused(self) -> None:
        cases = [  # a list, not a dict: Decimal("-1") and -1 are equal keys
            (Decimal("NaN"), "max_cost: must be a finite Decimal >= 0 of at most 40 digits, got NaN"),
            (Decimal("Infinity"), "max_cost: must be a finite Decimal >= 0 of at most 40 digits, got Infinity"),
            (Decimal("-1"), "max_cost: must be a finite Decimal >= 0 of at most 40 digits, got -1"),
            (Decimal("1e50"), "max_cost: must be a finite Decimal >= 0 of at most 40 digits, got 1E+50"),
            (10**40, 'max_cost: must be a decimal string like "0.075", got 10000000000000000000000000000000000000000'),
            (-1, 'max_cost: must be a decimal string like "0.075", got -1'),
            (True, 'max_cost: must be a decimal string like "0.075", got True'),  # bool before int
            (None, 'max_cost: must be a decimal string like "0.075", got None'),
        ]
        for value, message in cases:
            with self.subTest(value=value), self.assertRaises(RunConfigError) as caught:
                parse_amount(value, "max_cost")
            self.assertEqual(str(caught.exception), message)


class TestPriceTableEntries(unittest.TestCase):
    def test_a_model_name_or_entry_of_the_wrong_type_is_named(self) -> None:
        cases = [
            ({"": {}}, 'prices: model names must be non-empty strings, got ""'),
            ({1: {}}, "prices: model names must be non-empty strings, got 1"),
            ({"m": "0.5"}, 'prices["m"]: must be a dict of prices, got "0.5"'),
            ({"m": None}, 'prices["m"]: must be a dict of prices, got None'),
        ]
        for table, message in cases:
            with self.subTest(message), self.assertRaises(RunConfigError) as caught:
                price_table(table)
            self.assertEqual(str(caught.exception), message)


if __name__ == "__main__":
    unittest.main()
