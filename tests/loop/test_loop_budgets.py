"""The budgets beyond steps and tokens: tool calls, cost, time; their stops and precedence.

The precedence table is in the docstring of agentloop.loop; each test below
pins one row or one pair of rows.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Dict, Iterator, List, Optional

from agentloop import ModelReply, RunConfigError, ScriptedModel, Tool, ToolCall, Usage, verify_file
from agentloop.loop.budgets import BUDGET_NOTE_PREFIX
from agentloop.loop import run
from agentloop.models.replay import replay
from agentloop.loop.prices import amount_text, turn_cost

from tests.support.helpers import TempDir, read_lines, read_records

ECHO = Tool("echo", "Echo.", {"type": "object"}, lambda **kw: kw, parallel=True)
PRICES = {"m": {"input": "0.075", "output": "0.30", "cache_read": "0.0075", "cache_write": "0.09375"}}


def echo_turn(n: int, usage: Optional[Usage] = None, text: str = "") -> ModelReply:
    return ModelReply(text, [ToolCall("echo", {"i": i}) for i in range(n)], usage)


class Clock:
    """A fake clock: each reading is the next of ``readings``."""

    def __init__(self, *readings: Any) -> None:
        self.readings: Iterator[Any] = iter(readings)
        self.reads = 0

    def __call__(self) -> Any:
        self.reads += 1
        return next(self.readings)


class Base(TempDir):
    def go(self, script: List[Any], info: Optional[Dict[str, Any]] = None, **options: Any) -> Any:
        options.setdefault("max_steps", 10)
        options.setdefault("max_tokens", 10**9)
        return run("t", ScriptedModel(script, info=info), [ECHO], transcript=self.path(), **options)

    def records(self) -> List[Dict[str, Any]]:
        return read_records(self.path())

    def kinds(self) -> List[str]:
        return [r["kind"] for r in self.records()]


class TestToolCallBudget(Base):
    def test_a_turn_whose_calls_would_exceed_it_runs_none(self) -> None:
        result = self.go([echo_turn(2), echo_turn(2), echo_turn(1)], max_tool_calls=3)
        self.assertEqual(result.stop_reason, "tool_call_budget")
        self.assertEqual(self.kinds(), ["task", "assistant", "tool", "tool", "assistant", "stop"])
        self.assertEqual(
            result.detail, "max_tool_calls of 3 would be exceeded (2 run, 2 more asked for); 2 tool call(s) not run"
        )
        self.assertEqual(self.records()[0]["payload"]["budgets"]["max_tool_calls"], 3)

    def test_reaching_it_exactly_is_allowed_and_failed_calls_count(self) -> None:
        result = self.go(
            [echo_turn(2), ModelReply("", [ToolCall("nope")]), echo_turn(1), ModelReply("done")], max_tool_calls=3
        )
        self.assertEqual(result.stop_reason, "tool_call_budget")  # 2 + 1 (a failing call) = 3, then 1 more
        result = self.go([echo_turn(3), ModelReply("done")], max_tool_calls=3, overwrite=True)
        self.assertEqual((result.stop_reason, result.output), ("no_tool_calls", "done"))

    def test_an_answer_beats_it(self) -> None:
        result = self.go([echo_turn(2, text="DONE")], max_tool_calls=1, stop_sentinel="DONE")
        self.assertEqual(result.stop_reason, "sentinel")


class TestCost(Base):
    def test_cost_is_exact_decimal_per_turn_and_in_total(self) -> None:
        usages = [Usage(1234, 567), Usage(1000, 1, cache_read_tokens=600, cache_write_tokens=300), Usage(7, 3)]
        script = [echo_turn(1, usages[0]), echo_turn(1, usages[1]), ModelReply("done", usage=usages[2])]
        result = self.go(script, info={"model": "m"}, prices=PRICES)
        price = {k: Decimal(v) for k, v in PRICES["m"].items()}
        expected = [
            (Decimal(1234) * price["input"] + Decimal(567) * price["output"]) / Decimal(10**6),
            (
                Decimal(100) * price["input"]
                + Decimal(600) * price["cache_read"]
                + Decimal(300) * price["cache_write"]
                + Decimal(1) * price["output"]
            )
            / Decimal(10**6),
            (Decimal(7) * price["input"] + Decimal(3) * price["output"]) / Decimal(10**6),
        ]
        turns = [r["payload"] for r in self.records() if r["kind"] == "assistant"]
        self.assertEqual([Decimal(t["cost"]) for t in turns], expected)
        self.assertEqual([t["cost"] for t in turns], ["0.00026265", "0.000040425", "0.000001425"])
        self.assertEqual(Decimal(turns[-1]["total_cost"]), sum(expected))
        self.assertEqual(Decimal(result.cost), sum(expected))
        self.assertEqual(
            turns[1]["usage"],
            {"input_tokens": 1000, "output_tokens": 1, "cache_read_tokens": 600, "cache_write_tokens": 300},
        )
        self.assertEqual(
            turns[0]["usage"], {"input_tokens": 1234, "output_tokens": 567}
        )  # zero cache counts are not recorded
        recorded = {"m": {"input": "0.075", "output": "0.3", "cache_read": "0.0075", "cache_write": "0.09375"}}
        self.assertEqual(self.records()[0]["payload"]["budgets"]["prices"], recorded)  # each price in its plain form

    def test_many_small_sums_stay_exact(self) -> None:
        # 0.1 + 0.2 in binary is not 0.3; here every sum is exact.
        price = {"input": Decimal("0.1"), "output": Decimal("0.2")}
        total = Decimal(0)
        for _ in range(1000):
            cost, problem = turn_cost(price, Usage(1, 1))
            assert cost is not None and problem == ""
            total += cost
        self.assertEqual(total, Decimal("0.0003"))
        self.assertEqual(amount_text(total), "0.0003")
        self.assertEqual(
            [amount_text(Decimal(t)) for t in ("3.000", "0E-8", "1E+2", "0.075")], ["3", "0", "100", "0.075"]
        )

    def test_cost_budget_stops_after_the_turn_that_exceeds_it(self) -> None:
        script = [echo_turn(1, Usage(1_000_000, 0))] * 5  # 0.075 USD a turn
        result = self.go(script, info={"model": "m"}, prices=PRICES, max_cost="0.15")
        self.assertEqual(result.stop_reason, "cost_budget")  # 0.075, 0.15 (not over), 0.225
        self.assertEqual(result.steps, 3)
        self.assertEqual(result.detail, "max_cost of 0.15 USD exceeded (cost=0.225 USD); 1 tool call(s) not run")
        self.assertEqual(self.records()[0]["payload"]["budgets"]["max_cost"], "0.15")

    def test_no_usage_fails_closed(self) -> None:
        result = self.go([echo_turn(1, Usage(10, 10)), echo_turn(1)], info={"model": "m"}, prices=PRICES, max_cost="1")
        self.assertEqual(result.stop_reason, "cost_unknown")
        self.assertEqual(
            result.detail, "the cost of step 2 cannot be counted: the model reported no usage; 1 tool call(s) not run"
        )
        self.assertIsNone(result.cost)
        self.assertNotIn("cost", self.records()[-2]["payload"])

    def test_a_model_without_a_price_stops_before_any_call(self) -> None:
        model = ScriptedModel([echo_turn(1, Usage(1, 1))], info={"model": "other"})
        result = run(
            "t", model, [ECHO], transcript=self.path(), max_steps=5, max_tokens=100, prices=PRICES, max_cost="1"
        )
        self.assertEqual((result.stop_reason, model.turns), ("cost_unknown", 0))
        self.assertEqual(result.detail, 'prices has no entry for the model "other" (have: m); nothing was spent')
        result = run(
            "t",
            ScriptedModel([]),
            [ECHO],
            transcript=self.path(),
            max_steps=5,
            max_tokens=100,
            prices=PRICES,
            overwrite=True,
        )
        self.assertEqual(result.stop_reason, "cost_unknown")  # no model_info: no name to look up

    def test_cache_tokens_without_a_cache_price_fail_closed(self) -> None:
        prices = {"m": {"input": "1", "output": "1"}}
        result = self.go([echo_turn(1, Usage(10, 1, cache_read_tokens=4))], info={"model": "m"}, prices=prices)
        self.assertEqual(
            result.detail,
            "the cost of step 1 cannot be counted: the model reported 4 cache read tokens "
            "and prices has no 'cache_read' price; 1 tool call(s) not run",
        )

    def test_bad_prices_are_refused_before_any_file(self) -> None:
        for prices, max_cost in (
            ({"m": {"input": 3.0, "output": "1"}}, None),
            ({"m": {"input": "1"}}, None),
            ({"m": {"input": "1", "output": "1", "cached": "1"}}, None),
            ({"m": {"input": "-1", "output": "1"}}, None),
            ({"m": {"input": "1e3", "output": "1"}}, None),
            ({}, None),
            (None, "1"),
            (PRICES, 0.5),
            (PRICES, "abc"),
        ):
            with self.subTest(prices=prices, max_cost=max_cost), self.assertRaises(RunConfigError):
                self.go([], prices=prices, max_cost=max_cost)
        with self.assertRaises(ValueError):
            Usage(10, 1, cache_read_tokens=6, cache_write_tokens=5)


class TestTime(Base):
    def test_time_budget_stops_before_a_turn_with_every_reading_recorded(self) -> None:
        clock = Clock(100.0, 100.5, 101.25, 103.5, 999.0)
        result = self.go([echo_turn(1)] * 5, max_seconds=3, clock=clock)
        self.assertEqual(result.stop_reason, "time_budget")
        self.assertEqual(
            result.detail, "max_seconds of 3 reached (3.5 seconds since the start, by the recorded clock readings)"
        )
        self.assertEqual(clock.reads, 4)  # the start, then before each turn: read at the documented points only
        readings = [(r["kind"], r["payload"].get("clock")) for r in self.records() if "clock" in r["payload"]]
        self.assertEqual(readings, [("task", 100), ("assistant", 100.5), ("assistant", 101.25), ("stop", 103.5)])
        self.assertEqual(self.records()[0]["payload"]["budgets"]["max_seconds"], 3)

    def test_a_replay_of_a_max_seconds_run_is_byte_identical(self) -> None:
        script = [echo_turn(2), ModelReply("", [ToolCall("nope")]), echo_turn(1)] * 3
        self.go(script, max_seconds=10, clock=Clock(0.1, 0.30000000000000004, 2, 5.5, 9.999, 10.1, 11))
        outcome = replay(self.path(), [ECHO], transcript=self.path("r.jsonl"))
        self.assertTrue(outcome.identical, outcome.difference)
        self.assertEqual(read_lines(self.path()), read_lines(self.path("r.jsonl")))
        self.assertEqual(outcome.run.stop_reason, "time_budget")

    def test_the_default_clock_and_the_step_budget_before_time(self) -> None:
        result = self.go([echo_turn(1)] * 3, max_steps=2, max_seconds=3600)
        self.assertEqual(result.stop_reason, "step_budget")
        self.assertIsInstance(self.records()[0]["payload"]["clock"], (int, float))
        result = self.go([echo_turn(1)], max_steps=0, max_seconds=0, overwrite=True)
        self.assertEqual(result.stop_reason, "step_budget")
        result = self.go([echo_turn(1)], max_steps=3, max_seconds=0, overwrite=True)
        self.assertEqual(result.stop_reason, "time_budget")

    def test_a_clock_that_fails_mid_run_stops_it_and_a_bad_one_is_refused_up_front(self) -> None:
        result = self.go([echo_turn(1)] * 3, max_seconds=10, clock=Clock(0, 1, "late"))
        self.assertEqual(
            (result.stop_reason, result.detail),
            ("time_budget", 'max_seconds cannot be checked: the clock returned "late", not a number of seconds'),
        )
        self.assertTrue(verify_file(self.path()).ok)
        for options in (
            {"clock": Clock(float("nan")), "max_seconds": 1},
            {"clock": Clock(0)},
            {"max_seconds": -1},
            {"max_seconds": True},
        ):
            with self.subTest(options=options), self.assertRaises(RunConfigError):
                self.go([], overwrite=True, **options)


class TestTellBudgets(Base):
    def test_the_model_sees_what_remains_before_each_turn_and_replay_agrees(self) -> None:
        seen: List[str] = []

        def look(messages: List[Dict[str, Any]], manifest: Any) -> ModelReply:
            seen.append(messages[-1]["content"])
            self.assertEqual(sum(1 for m in messages if str(m.get("content")).startswith(BUDGET_NOTE_PREFIX)), 1)
            return echo_turn(1, Usage(1000, 1000))

        result = self.go(
            [look, look, look],
            info={"model": "m"},
            max_steps=3,
            max_tokens=6000,
            max_tool_calls=5,
            prices=PRICES,
            max_cost="1",
            max_seconds=60,
            clock=Clock(0, 0, 1.25, 2.5, 3),
            tell_budgets=True,
        )
        self.assertEqual(result.stop_reason, "step_budget")
        self.assertEqual(
            seen,
            [
                (
                    "[agentloop] Budget left: 3 of 3 steps, 6000 of 6000 tokens, "
                    "5 of 5 tool calls, 1 of 1 USD, 60.0 of 60 seconds."
                ),
                (
                    "[agentloop] Budget left: 2 of 3 steps, 4000 of 6000 tokens, "
                    "4 of 5 tool calls, 0.999625 of 1 USD, 58.8 of 60 seconds."
                ),
                (
                    "[agentloop] Budget left: 1 of 3 steps, 2000 of 6000 tokens, "
                    "3 of 5 tool calls, 0.99925 of 1 USD, 57.5 of 60 seconds."
                ),
            ],
        )
        self.assertIs(self.records()[0]["payload"]["budgets"]["tell_budgets"], True)
        outcome = replay(self.path(), [ECHO], transcript=self.path("r.jsonl"))
        self.assertTrue(outcome.identical, outcome.difference)


class TestPrecedence(Base):
    """One turn over every budget at once stops on the first row of the table that applies."""

    def over_everything(self, **extra: Any) -> Any:
        script = [echo_turn(3, Usage(2_000_000, 0), **extra)]
        return self.go(
            script, info={"model": "m"}, max_tokens=10, prices=PRICES, max_cost="0.01", max_tool_calls=1, overwrite=True
        )

    def test_the_after_turn_order(self) -> None:
        self.assertEqual(self.over_everything().stop_reason, "token_budget")
        self.assertEqual(self.over_everything(text="DONE").stop_reason, "token_budget")
        result = self.go(
            [echo_turn(3, Usage(2, 0))],
            info={"model": "m"},
            prices=PRICES,
            max_cost="0",
            max_tool_calls=1,
            overwrite=True,
        )
        self.assertEqual(result.stop_reason, "cost_budget")
        result = self.go(
            [echo_turn(3)], info={"model": "m"}, prices=PRICES, max_cost="0", max_tool_calls=1, overwrite=True
        )
        self.assertEqual(result.stop_reason, "cost_unknown")
        result = self.go(
            [echo_turn(3, Usage(0, 0))],
            info={"model": "m"},
            prices=PRICES,
            max_cost="0",
            max_tool_calls=1,
            overwrite=True,
        )
        self.assertEqual(result.stop_reason, "tool_call_budget")

    def test_answers_beat_budgets_and_before_turn_checks_come_first(self) -> None:
        result = self.go(
            [ModelReply("done", usage=Usage(10**6, 0))], info={"model": "m"}, prices=PRICES, max_cost="0", max_tokens=1
        )
        self.assertEqual((result.stop_reason, result.output), ("no_tool_calls", "done"))
        result = self.go(
            [echo_turn(1)],
            max_steps=0,
            max_seconds=0,
            clock=Clock(0, 5),
            info={"model": "x"},
            prices=PRICES,
            overwrite=True,
        )
        self.assertEqual(result.stop_reason, "step_budget")
        result = self.go(
            [echo_turn(1)], max_seconds=1, clock=Clock(0, 5), info={"model": "x"}, prices=PRICES, overwrite=True
        )
        self.assertEqual(result.stop_reason, "time_budget")

    def test_budgets_are_recorded_only_when_set(self) -> None:
        self.go([ModelReply("done")])
        self.assertEqual(
            self.records()[0]["payload"]["budgets"], {"max_steps": 10, "max_tokens": 10**9, "stop_sentinel": None}
        )
        self.assertNotIn("clock", self.records()[0]["payload"])
