"""Bounded fuzzing in the suite; run ``python3 bench/fuzz.py`` for as long as you like."""

from __future__ import annotations

import tempfile
import unittest

from tests.support.fuzzing import TypeReport, fuzz_all, fuzz_types, rich_transcript


class TestFuzz(unittest.TestCase):
    def test_mutated_transcripts_and_hostile_calls(self) -> None:
        reports = fuzz_all(seed=6, transcript_cases=1500, loop_runs=60, every_truncation=True)
        for name, report in reports.items():
            with self.subTest(name):
                self.assertGreater(report.cases, 50)
                self.assertEqual(report.crashes, [], report.summary())
                self.assertEqual(report.silent_accepts, [], report.summary())

    def test_every_field_of_every_record_kind_as_every_json_type(self) -> None:
        # Each field replaced by each JSON type, the chain recomputed so only
        # the type is wrong: verify_file never raises (a list as "kind" once
        # made it raise TypeError, and report, checkpoint and repair with it),
        # and a type the grammar fixes is a fault.  Every 7th case also goes
        # through render_report, checkpoint_of and repair.
        report = TypeReport()
        with tempfile.TemporaryDirectory() as folder:
            fuzz_types(rich_transcript(folder), folder, report, readers_every=7)
        self.assertGreater(report.cases, 1000)
        self.assertEqual(report.crashes, [], report.summary())
        self.assertEqual(report.missed, [], report.summary())


if __name__ == "__main__":
    unittest.main()
