"""The loop's plain lane (agentloop/loop/engine.py ``_ran_plainly``, ``_plain_asker``) against its general path.

Under ``run`` a lone call that ``SyncRunner`` would run as a plain call runs
so, a model found sync at its first turn is asked without a coroutine, and
the common records are assembled without their payload dicts.  Each run here
is made twice, with the lane and with it switched off
(the engine's ``run_plain`` and ``SyncRunner.plain_asker`` answering ``None``), and
must end the same: the same ``RunResult``, the same transcript bytes, the
same messages shown to the model -- also when a tool changes another tool
mid-run, or a resumed turn's tool changes the model.
"""

from __future__ import annotations

import contextlib
import copy
import os
import time
from typing import Any, Callable, Dict, Iterator, List, Tuple
from unittest import mock

from agentloop import Approve, ModelReply, Tool, ToolCall, ToolFailure, resume, run, verify_file
from agentloop.loop import calls, engine

from tests.support.helpers import TempDir


class _Model:
    """A scripted model that keeps a copy of every conversation it was shown."""

    def __init__(self, replies: List[ModelReply]) -> None:
        self.replies = list(replies)
        self.seen: List[Any] = []

    def __call__(self, messages: List[Dict[str, Any]], manifest: List[Dict[str, Any]]) -> ModelReply:
        self.seen.append(copy.deepcopy(messages))
        return self.replies.pop(0)


class _AsyncModel(_Model):
    async def __call__(self, messages: List[Dict[str, Any]], manifest: List[Dict[str, Any]]) -> ModelReply:  # type: ignore[override]
        return self.replies.pop(0)


def _tool(name: str, fn: Callable[..., Any], **options: Any) -> Tool:
    return Tool(name, "d", {"type": "object"}, fn, **options)


@contextlib.contextmanager
def _lane(on: bool) -> Iterator[List[int]]:
    """The plain lane on (counting the calls it ran) or off."""
    ran: List[int] = []
    real = engine.run_plain

    def counted(*args: Any) -> Any:
        outcome = real(*args)
        ran.append(outcome is not None)
        return outcome

    if on:
        with mock.patch.object(engine, "run_plain", counted):
            yield ran
    else:
        with mock.patch.object(engine, "run_plain", lambda *args: None), mock.patch.object(
            calls.SyncRunner, "plain_asker", lambda *args: None
        ):
            yield ran


Made = Tuple[_Model, List[Tool]]


class TestPlainLane(TempDir):
    def both(self, make: Callable[[], Made], **options: Any) -> int:
        """Run ``make()``'s model and tools with the lane and without; assert the two ends agree; return how
        many calls the lane ran."""
        ends = []
        lane_ran = 0
        for on in (True, False):
            model, tools = make()
            path = self.path("%s-%d.jsonl" % ("on" if on else "off", len(os.listdir(self.dir))))
            settings: Dict[str, Any] = {"max_steps": 20, "max_tokens": 10**6}
            settings.update(options)
            with _lane(on) as ran:
                try:
                    result = run("task", model, tools, transcript=path, **settings)
                    end: Any = (result.stop_reason, result.detail, result.output, result.steps, result.records)
                except KeyboardInterrupt:
                    end = "KeyboardInterrupt"
            lane_ran += sum(ran)
            with open(path, "rb") as handle:
                ends.append((end, handle.read(), model.seen))
            self.assertTrue(verify_file(path).ok or end == "KeyboardInterrupt")
        self.assertEqual(ends[0], ends[1])
        self.assertNotIn("model_error", str(ends[0][0]))
        return lane_ran

    def test_every_outcome_of_a_lone_call_is_recorded_as_the_general_path_records_it(self) -> None:
        async def later() -> int:
            return 1

        def failing(**_: Any) -> Any:
            raise ToolFailure("nope")

        def raising(**_: Any) -> Any:
            raise ValueError("x")

        def make() -> Made:
            tools = [
                _tool("ok", lambda **_: {"a": [1, 2.5, "é"]}),
                _tool("fail", failing),
                _tool("boom", raising),
                _tool("coro", lambda **_: later()),
                _tool("big", lambda **_: "x" * 70000),
                _tool("nan", lambda **_: float("nan")),
                Tool("typed", "d", {"type": "object", "properties": {"n": {"type": "integer"}}}, lambda n=0: n * 2),
            ]
            names = ["ok", "fail", "boom", "coro", "big", "nan", "nosuch"]
            replies = [ModelReply("t", [ToolCall(name, {}, "id-" + name)]) for name in names]
            replies += [ModelReply("", [ToolCall("typed", {"n": "x"})]), ModelReply("", [ToolCall("typed", {"n": 3})])]
            return _Model(replies + [ModelReply("end")]), tools

        self.assertGreater(self.both(make, max_record_bytes=65536), 5)
        for options in ({"on_record": lambda record: None}, {"tell_budgets": True, "max_tool_calls": 6}):
            with self.subTest(options=sorted(options)):
                self.both(make, max_record_bytes=65536, **options)
        self.both(make, stop_sentinel="zz")

    def test_a_tool_changed_mid_run_is_read_at_its_call(self) -> None:
        # "b" gated, or given a timeout, by "a" in the turn before: the general path reads both at b's call
        for field, value in (("requires_approval", True), ("timeout", 0.1)):

            def make(field: str = field, value: Any = value) -> Made:
                late = _tool("b", lambda **_: (time.sleep(0.5), "b ran")[1])

                def change(**_: Any) -> str:
                    object.__setattr__(late, field, value)
                    return "a ran"

                replies = [ModelReply("", [ToolCall("a", {}, "1")]), ModelReply("", [ToolCall("b", {}, "2")])]
                return _Model(replies + [ModelReply("end")]), [_tool("a", change), late]

            with self.subTest(field=field):
                self.both(make)

    def test_an_interrupt_from_a_lone_call_leaves_the_same_prefix(self) -> None:
        def interrupted(**_: Any) -> Any:
            raise KeyboardInterrupt

        def make() -> Made:
            replies = [ModelReply("", [ToolCall("ok", {})]), ModelReply("", [ToolCall("stop", {})])]
            return _Model(replies), [_tool("ok", lambda **_: 1), _tool("stop", interrupted)]

        self.both(make)

    def test_an_async_model_is_awaited_every_turn(self) -> None:
        def make() -> Made:
            replies = [ModelReply("", [ToolCall("ok", {})]) for _ in range(3)]
            return _AsyncModel(replies + [ModelReply("end")]), [_tool("ok", lambda **_: 1)]

        self.both(make)

    def test_a_model_swapped_by_a_resumed_turn_is_asked_as_the_general_path_asks_it(self) -> None:
        ends = []
        for on in (True, False):
            path = self.path("resumed-%s.jsonl" % on)
            later = _Model([ModelReply("end")])

            def swap(**_: Any) -> str:
                later.__class__ = _AsyncModel  # the resumed model turns async before its first turn
                return "swapped"

            tools = [_tool("g", swap, requires_approval=True)]
            with _lane(on):
                first = _Model([ModelReply("", [ToolCall("g", {}, "1")])])
                run("task", first, tools, transcript=path, max_steps=5, max_tokens=10**6, approver=lambda r: None)
                result = resume(path, later, tools, decisions={"1": Approve("a person")})
            with open(path, "rb") as handle:
                ends.append((result.stop_reason, result.detail, handle.read()))
        self.assertEqual(ends[0], ends[1])
        self.assertEqual(ends[0][0], "no_tool_calls")
