"""Parallel and async tools, timeouts, run_async: concurrency that never shows in the bytes.

Every test that waits on concurrency has a timeout, so a regression fails
instead of hanging: the Barrier tools give up after BARRIER_WAIT seconds and
then raise BrokenBarrierError, which the loop records as a failed call.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import random
import sys
import threading
import time
from typing import Any, Dict, List

from agentloop import ModelReply, ScriptedModel, Tool, ToolCall, ToolDefinitionError, tool, verify_file
from agentloop.loop.calls import TIMEOUT_ERROR
from agentloop.loop import run, run_async

from tests.support.helpers import TempDir, read_lines, read_records

BARRIER_WAIT = 5.0


@dataclasses.dataclass
class Point:
    x: int
    y: int


def barrier_tools(n: int, parallel: bool = True, wait: float = BARRIER_WAIT) -> Tool:
    """A tool whose calls only return once ``n`` of them are running at the same time."""
    barrier = threading.Barrier(n, timeout=wait)

    def meet(i: int) -> Dict[str, int]:
        barrier.wait()
        return {"met": i}

    return Tool(
        "meet",
        "Meet the others.",
        {"type": "object", "properties": {"i": {"type": "integer"}}},
        meet,
        parallel=parallel,
    )


def calls(name: str, count: int, **extra: Any) -> List[ToolCall]:
    return [ToolCall(name, dict({"i": i}, **extra)) for i in range(count)]


class TestParallel(TempDir):
    def tool_payloads(self, name: str = "t.jsonl") -> List[Dict[str, Any]]:
        return [r["payload"] for r in read_records(self.path(name)) if r["kind"] == "tool"]

    def test_n_parallel_calls_really_run_at_once(self) -> None:
        for n in (2, 4, 8):
            with self.subTest(n=n):
                script = [ModelReply("meet", calls("meet", n)), ModelReply("done")]
                result = run(
                    "t",
                    ScriptedModel(script),
                    [barrier_tools(n)],
                    transcript=self.path("%d.jsonl" % n),
                    max_steps=3,
                    max_tokens=10**6,
                    max_workers=n,
                )
                self.assertEqual(result.stop_reason, "no_tool_calls")
                self.assertEqual(
                    [(p["ok"], p.get("value")) for p in self.tool_payloads("%d.jsonl" % n)],
                    [(True, {"met": i}) for i in range(n)],
                )

    def test_serial_calls_cannot_meet_the_negative_control(self) -> None:
        # The same tool without parallel=True: each call runs alone, so the barrier breaks.
        script = [ModelReply("meet", calls("meet", 2)), ModelReply("done")]
        run(
            "t",
            ScriptedModel(script),
            [barrier_tools(2, parallel=False, wait=0.2)],
            transcript=self.path(),
            max_steps=3,
            max_tokens=10**6,
        )
        self.assertEqual([p["error"] for p in self.tool_payloads()], ["tool 'meet' raised BrokenBarrierError"] * 2)

    def test_max_workers_caps_the_sync_calls_running_at_once(self) -> None:
        script = [ModelReply("meet", calls("meet", 2)), ModelReply("done")]
        run(
            "t",
            ScriptedModel(script),
            [barrier_tools(2, wait=0.2)],
            transcript=self.path(),
            max_steps=3,
            max_tokens=10**6,
            max_workers=1,
        )
        self.assertEqual([p["ok"] for p in self.tool_payloads()], [False, False])

    def test_async_tools_run_at_once_on_the_event_loop(self) -> None:
        arrived: List[int] = []

        @tool(parallel=True)
        async def gather(i: int) -> int:
            """Wait until all three have arrived."""
            arrived.append(i)
            for _ in range(500):  # at most 5 s
                if len(arrived) >= 3:
                    return i
                await asyncio.sleep(0.01)
            raise TimeoutError("alone")

        script = [ModelReply("go", calls("gather", 3)), ModelReply("done")]
        run("t", ScriptedModel(script), [gather], transcript=self.path(), max_steps=3, max_tokens=10**6)
        self.assertEqual([(p["ok"], p.get("value")) for p in self.tool_payloads()], [(True, 0), (True, 1), (True, 2)])

    def test_a_serial_call_is_a_barrier(self) -> None:
        log: List[str] = []
        lock = threading.Lock()

        def note(text: str) -> None:
            with lock:
                log.append(text)

        first, second = threading.Barrier(2, timeout=30), threading.Barrier(2, timeout=30)
        together = {0: first, 1: first, 3: second, 4: second}

        def slow(i: int) -> int:
            note("start %d" % i)
            barrier = together.get(i)
            if barrier is not None:  # both of a parallel pair have started before either ends (a deadline, not a sleep)
                barrier.wait()
            else:
                time.sleep(0.05)  # the serial call: were it not a barrier, 3 and 4 would start meanwhile
            note("end %d" % i)
            return i

        p = Tool("p", "parallel", {"type": "object"}, slow, parallel=True)
        s = Tool("s", "serial", {"type": "object"}, slow)
        order = [
            ToolCall("p", {"i": 0}),
            ToolCall("p", {"i": 1}),
            ToolCall("s", {"i": 2}),
            ToolCall("p", {"i": 3}),
            ToolCall("p", {"i": 4}),
        ]
        run(
            "t",
            ScriptedModel([ModelReply("", order), ModelReply("done")]),
            [p, s],
            transcript=self.path(),
            max_steps=3,
            max_tokens=10**6,
        )
        self.assertEqual(sorted(log[:2]), ["start 0", "start 1"])  # 0 and 1 together,
        self.assertEqual(log[4:6], ["start 2", "end 2"])  # then 2 alone,
        self.assertEqual(sorted(log[6:8]), ["start 3", "start 4"])  # then 3 and 4 together
        self.assertEqual([p["value"] for p in self.tool_payloads()], [0, 1, 2, 3, 4])

    def test_records_follow_the_calls_order_not_the_finishing_order(self) -> None:
        def wait(i: int) -> int:
            time.sleep(0.02 * (3 - i))  # the first call finishes last
            return i

        w = Tool("wait", "", {"type": "object"}, wait, parallel=True)
        run(
            "t",
            ScriptedModel([ModelReply("", calls("wait", 4)), ModelReply("done")]),
            [w],
            transcript=self.path(),
            max_steps=3,
            max_tokens=10**6,
        )
        self.assertEqual(
            [(p["id"], p["value"]) for p in self.tool_payloads()], [("call_1_%d" % i, i) for i in range(4)]
        )

    def test_fifty_runs_with_random_sleeps_give_one_byte_sequence(self) -> None:
        rng = random.Random(12)  # the sleeps vary; the bytes must not

        def sync_sleep(i: int) -> Dict[str, int]:
            time.sleep(rng.uniform(0, 0.004))
            return {"sync": i}

        async def async_sleep(i: int) -> Dict[str, int]:
            await asyncio.sleep(rng.uniform(0, 0.004))
            if i == 2:
                raise ValueError("two fails")
            return {"async": i}

        tools = [
            Tool("a", "", {"type": "object"}, sync_sleep, parallel=True),
            Tool("b", "", {"type": "object"}, async_sleep, parallel=True),
        ]
        script = [
            ModelReply(
                "",
                [
                    ToolCall("a", {"i": 0}),
                    ToolCall("b", {"i": 1}),
                    ToolCall("a", {"i": 2}),
                    ToolCall("b", {"i": 2}),
                    ToolCall("nope", {}),
                    ToolCall("a", {"i": "bad"}),
                    ToolCall("b", {"i": 3}),
                ],
            ),
            ModelReply("", [ToolCall("b", {"i": 4}), ToolCall("a", {"i": 5}), ToolCall("a", {"i": 6})]),
            ModelReply("done"),
        ]
        tools[0] = dataclasses.replace(
            tools[0], parameters={"type": "object", "properties": {"i": {"type": "integer"}}}
        )
        digests = set()
        for attempt in range(50):
            path = self.path("r%d.jsonl" % attempt)
            run("t", ScriptedModel(script), tools, transcript=path, max_steps=5, max_tokens=10**6, max_workers=3)
            digests.add(hashlib.sha256(b"".join(read_lines(path))).hexdigest())
        self.assertEqual(len(digests), 1)
        payloads = self.tool_payloads("r0.jsonl")
        self.assertEqual(
            [p.get("value", p.get("error")) for p in payloads],
            [
                {"sync": 0},
                {"async": 1},
                {"sync": 2},
                "tool 'b' raised ValueError: two fails",
                "no tool named 'nope' (have: a, b)",
                "invalid arguments: $.a.i: expected type integer, got str",
                {"async": 3},
                {"async": 4},
                {"sync": 5},
                {"sync": 6},
            ],
        )

    def test_parallel_and_serial_runs_write_the_same_bytes(self) -> None:
        def echo(i: int) -> int:
            return i

        for parallel in (False, True):
            t = Tool("e", "", {"type": "object"}, echo, parallel=parallel)
            run(
                "t",
                ScriptedModel([ModelReply("", calls("e", 5)), ModelReply("ok")]),
                [t],
                transcript=self.path("%s.jsonl" % parallel),
                max_steps=3,
                max_tokens=10**6,
            )
        self.assertEqual(read_lines(self.path("False.jsonl")), read_lines(self.path("True.jsonl")))

    def test_one_failing_call_cancels_nothing(self) -> None:
        def maybe(i: int) -> int:
            time.sleep(0.01)
            if i == 1:
                raise RuntimeError("one is broken")
            return i

        t = Tool("m", "", {"type": "object"}, maybe, parallel=True)
        run(
            "t",
            ScriptedModel([ModelReply("", calls("m", 3)), ModelReply("ok")]),
            [t],
            transcript=self.path(),
            max_steps=3,
            max_tokens=10**6,
        )
        self.assertEqual(
            [p.get("value", p.get("error")) for p in self.tool_payloads()],
            [0, "tool 'm' raised RuntimeError: one is broken", 2],
        )


class TestTimeouts(TempDir):
    def tool_payloads(self) -> List[Dict[str, Any]]:
        return [r["payload"] for r in read_records(self.path()) if r["kind"] == "tool"]

    def test_a_timed_out_sync_tool_becomes_data_and_the_run_goes_on(self) -> None:
        release = threading.Event()

        def stuck() -> str:
            release.wait(10)  # cannot be stopped from outside: abandoned, then released by the test
            return "late"

        slow = Tool("slow", "", {"type": "object"}, stuck, timeout=0.1)
        script = [ModelReply("", [ToolCall("slow")]), ModelReply("it timed out")]
        started = time.monotonic()
        result = run("t", ScriptedModel(script), [slow], transcript=self.path(), max_steps=3, max_tokens=10**6)
        self.assertLess(time.monotonic() - started, 5)
        release.set()
        self.assertEqual((result.stop_reason, result.output), ("no_tool_calls", "it timed out"))
        self.assertEqual(
            self.tool_payloads()[0]["error"], "tool 'slow' timed out: no result within its timeout of 0.1 seconds"
        )
        self.assertEqual(TIMEOUT_ERROR % ("slow", "0.1"), self.tool_payloads()[0]["error"])
        self.assertTrue(verify_file(self.path()).ok)

    def test_a_timed_out_async_tool_is_cancelled(self) -> None:
        cancelled = threading.Event()

        async def forever() -> str:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return "never"

        t = Tool("forever", "", {"type": "object"}, forever, timeout=0.05)
        run(
            "t",
            ScriptedModel([ModelReply("", [ToolCall("forever")]), ModelReply("ok")]),
            [t],
            transcript=self.path(),
            max_steps=3,
            max_tokens=10**6,
        )
        self.assertEqual(self.tool_payloads()[0]["error"], TIMEOUT_ERROR % ("forever", "0.05"))
        self.assertTrue(cancelled.wait(5))

    def test_the_run_wide_default_and_a_tools_own_timeout(self) -> None:
        def nap(s: float) -> float:
            time.sleep(s)
            return s

        default = Tool("nap", "", {"type": "object"}, nap, parallel=True)
        own = Tool("nap2", "", {"type": "object"}, nap, parallel=True, timeout=1.5)
        script = [
            ModelReply("", [ToolCall("nap", {"s": 0.5}), ToolCall("nap2", {"s": 0.5}), ToolCall("nap", {"s": 0})]),
            ModelReply("ok"),
        ]
        result = run(
            "t",
            ScriptedModel(script),
            [default, own],
            transcript=self.path(),
            max_steps=3,
            max_tokens=10**6,
            tool_timeout=0.2,
        )
        self.assertEqual(
            [p.get("value", p.get("error")) for p in self.tool_payloads()], [TIMEOUT_ERROR % ("nap", "0.2"), 0.5, 0]
        )
        self.assertEqual(read_records(self.path())[0]["payload"]["budgets"]["tool_timeout"], 0.2)
        self.assertEqual(result.stop_reason, "no_tool_calls")

    def test_bad_options_are_refused_when_built(self) -> None:
        for kwargs in (
            {"parallel": "yes"},
            {"timeout": 0},
            {"timeout": -1},
            {"timeout": float("inf")},
            {"timeout": True},
        ):
            with self.subTest(kwargs=kwargs), self.assertRaises(ToolDefinitionError):
                Tool("t", "", {"type": "object"}, lambda: 1, **kwargs)

        async def agen() -> Any:
            yield 1

        with self.assertRaises(ToolDefinitionError):
            Tool("g", "", {"type": "object"}, agen)


class TestAsync(TempDir):
    def test_async_def_tools_are_typed_validated_and_converted(self) -> None:
        @tool
        async def norm(p: Point, scale: int = 1) -> int:
            """Manhattan norm of a point.

            Args:
                p: the point.
                scale: a factor.
            """
            await asyncio.sleep(0)
            assert isinstance(p, Point)
            return (abs(p.x) + abs(p.y)) * scale

        self.assertTrue(norm.is_async)
        self.assertEqual(norm.parameters["properties"]["p"]["required"], ["x", "y"])
        script = [
            ModelReply("", [ToolCall("norm", {"p": {"x": 3, "y": -4}}), ToolCall("norm", {"p": {"x": "3"}})]),
            ModelReply("ok"),
        ]
        run("t", ScriptedModel(script), [norm], transcript=self.path(), max_steps=3, max_tokens=10**6)
        payloads = [r["payload"] for r in read_records(self.path()) if r["kind"] == "tool"]
        self.assertEqual(payloads[0]["value"], 7)
        self.assertTrue(payloads[1]["error"].startswith("invalid arguments: $.norm.p"))

    def test_run_async_with_an_async_model_and_async_tools_writes_what_run_writes(self) -> None:
        class AsyncModel:
            def __init__(self) -> None:
                self.turns = 0

            async def __call__(self, messages: Any, manifest: Any) -> ModelReply:
                self.turns += 1
                await asyncio.sleep(0)
                if self.turns == 1:
                    return ModelReply("two", [ToolCall("twice", {"n": 1}), ToolCall("twice", {"n": 2})])
                return ModelReply("done: %s" % (messages[-1]["content"],))

        @tool(parallel=True)
        async def twice(n: int) -> int:
            """Twice n."""
            await asyncio.sleep(0.01 / n)
            return 2 * n

        result = asyncio.run(
            run_async("t", AsyncModel(), [twice], transcript=self.path("a.jsonl"), max_steps=4, max_tokens=10**6)
        )
        self.assertEqual((result.stop_reason, result.output), ("no_tool_calls", "done: 4"))
        run(
            "t", AsyncModel(), [twice], transcript=self.path("s.jsonl"), max_steps=4, max_tokens=10**6
        )  # run awaits it too
        self.assertEqual(read_lines(self.path("a.jsonl")), read_lines(self.path("s.jsonl")))

    def test_run_async_prefers_acall_and_runs_a_sync_model_in_a_thread(self) -> None:
        threads: List[str] = []

        class Both:
            def __call__(self, messages: Any, manifest: Any) -> ModelReply:
                raise AssertionError("the sync call is not used when acall exists")

            async def acall(self, messages: Any, manifest: Any) -> ModelReply:
                return ModelReply("from acall")

        def sync_model(messages: Any, manifest: Any) -> ModelReply:
            threads.append(threading.current_thread().name)
            return ModelReply("from a thread")

        async def main() -> List[str]:
            a = await run_async("t", Both(), [], transcript=self.path("a.jsonl"), max_steps=2, max_tokens=100)
            b = await run_async("t", sync_model, [], transcript=self.path("b.jsonl"), max_steps=2, max_tokens=100)
            return [a.output, b.output]

        self.assertEqual(asyncio.run(main()), ["from acall", "from a thread"])
        self.assertNotEqual(threads, [threading.main_thread().name])

    def test_a_sync_function_returning_a_coroutine_fails_as_data(self) -> None:
        async def inner() -> int:
            return 1

        t = Tool("lazy", "", {"type": "object"}, lambda: inner())
        run(
            "t",
            ScriptedModel([ModelReply("", [ToolCall("lazy")]), ModelReply("ok")]),
            [t],
            transcript=self.path(),
            max_steps=3,
            max_tokens=100,
        )
        payload = read_records(self.path())[2]["payload"]
        self.assertEqual(
            payload["error"], "tool 'lazy' returned a coroutine: make its function an async def, or await inside it"
        )


class TestStopsFromTools(TempDir):
    """A tool raising SystemExit/KeyboardInterrupt, wherever it runs, leaves a verifiable prefix."""

    def check(self, fn: Any, parallel: bool, expected: type) -> None:
        ok = Tool("ok", "", {"type": "object"}, lambda: "fine", parallel=parallel)
        bad = Tool("bad", "", {"type": "object"}, fn, parallel=parallel)
        script = [ModelReply("", [ToolCall("ok"), ToolCall("bad"), ToolCall("ok")]), ModelReply("never")]
        with self.assertRaises(expected):
            run("t", ScriptedModel(script), [ok, bad], transcript=self.path(), max_steps=3, max_tokens=100)
        verdict = verify_file(self.path())
        self.assertTrue(verdict.ok)
        self.assertFalse(verdict.complete)
        kinds = [(r["kind"], r["payload"].get("name")) for r in read_records(self.path())]
        self.assertEqual(kinds, [("task", None), ("assistant", None), ("tool", "ok")])

    def test_system_exit_and_keyboard_interrupt_from_sync_and_async_tools(self) -> None:
        def exits() -> None:
            sys.exit(3)

        def interrupts() -> None:
            raise KeyboardInterrupt

        async def async_exits() -> None:
            raise SystemExit(4)

        for fn, expected in ((exits, SystemExit), (interrupts, KeyboardInterrupt), (async_exits, SystemExit)):
            for parallel in (False, True):
                with self.subTest(fn=fn.__name__, parallel=parallel):
                    self.check(fn, parallel, expected)
                    os.remove(self.path())
