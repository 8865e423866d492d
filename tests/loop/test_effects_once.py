"""Effects happen once across SIGKILL and ``resume --rerun-unrecorded``: the crash test.

Always: a short campaign (2 kills of ``agentloop run``/``resume`` children, 3 payments a run).  With
``AGENTLOOP_CRASH_KILLS=N`` (N >= 50 for the figures quoted in docs/performance.md) the long one, as
``python3 bench/crash_effects.py`` runs it.  Either way: every run verifies, every payment happened exactly
once (0 duplicated, 0 lost), every ``tool`` record matches its payment (tests/loop/effects.py).
"""

from __future__ import annotations

import os
import signal
import unittest

from tests.support.helpers import TempDir
from tests.loop.effects import campaign

KILLS = int(os.environ.get("AGENTLOOP_CRASH_KILLS", "0") or 0)


@unittest.skipUnless(hasattr(signal, "SIGKILL") and os.name == "posix", "SIGKILL and select on pipes")
class TestEffectsOnce(TempDir):
    def check(self, kills: int, steps: int) -> None:
        figures = campaign(self.dir, kills=kills, seed=19, steps=steps)
        self.assertEqual(figures.problems, [], figures.line())
        self.assertEqual(figures.kills, kills)
        self.assertEqual(
            (figures.duplicated, figures.lost, figures.mismatched, figures.unverified), (0, 0, 0, 0), figures.line()
        )
        self.assertEqual(figures.payments, figures.runs * steps)

    def test_a_few_kills_leave_every_payment_made_exactly_once(self) -> None:
        self.check(2, 3)

    @unittest.skipUnless(KILLS, "set AGENTLOOP_CRASH_KILLS=N for the long campaign (or run bench/crash_effects.py)")
    def test_many_kills_leave_every_payment_made_exactly_once(self) -> None:
        self.check(KILLS, 6)
