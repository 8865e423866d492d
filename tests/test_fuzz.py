"""Bounded fuzzing in the suite; run ``python3 bench/fuzz.py`` for as long as you like."""

from __future__ import annotations

import unittest

from .fuzzing import fuzz_all


class TestFuzz(unittest.TestCase):
    def test_mutated_transcripts_and_hostile_calls(self) -> None:
        reports = fuzz_all(seed=6, transcript_cases=1500, loop_runs=60, every_truncation=True)
        for name, report in reports.items():
            with self.subTest(name):
                self.assertGreater(report.cases, 50)
                self.assertEqual(report.crashes, [], report.summary())
                self.assertEqual(report.silent_accepts, [], report.summary())
