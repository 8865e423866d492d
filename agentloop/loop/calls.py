"""Running what a turn needs: the model call, and the tool calls in groups.

The loop (:mod:`agentloop.loop.engine`) is one coroutine; a runner does its waiting.
:class:`SyncRunner` (for :func:`agentloop.run`) never suspends that coroutine:
it blocks its thread instead, so ``run`` drives the coroutine without an
event loop.  :class:`AsyncRunner` (for :func:`agentloop.run_async`) awaits on
the caller's event loop.  Both run tool calls the same way:

* A turn's calls go in groups (:func:`groups`): consecutive calls of tools
  marked ``parallel=True`` form one group; any other call is a group of its
  own, a barrier (the calls before it have finished, it runs alone, the calls
  after it start after it).  A call of a tool with ``requires_approval`` is
  always a barrier, even when the tool is marked ``parallel=True``: its
  approval is asked for when every call before it has its record, and no
  call after it has started.
* Within a group, ``async def`` tools run as tasks on an event loop (the
  caller's under ``run_async``; under ``run``, one the run owns, in a daemon
  thread, started at the first need), and sync tools each on a daemon thread,
  at most ``max_workers`` of them at once.  A lone sync call without a timeout
  runs in the loop's own thread under ``run``, as a plain function call.
* Each call's outcome is collected in the model's order, whatever order they
  finish in, and holds nothing that depends on scheduling.  A failing call
  cancels nothing.
* A call past its timeout fails as data with :data:`TIMEOUT_ERROR` (the
  configured limit, no measured time).  An async tool is cancelled; a sync
  tool cannot be stopped from outside in Python, so its thread is abandoned:
  it runs on in the background (a daemon thread: it never holds up the
  process's exit) and whatever it returns later is dropped.  Its slot is
  given back, so an abandoned call never starves later ones.
* ``KeyboardInterrupt``, ``SystemExit`` (and any other ``BaseException`` that
  is not an ``Exception``) raised by a tool, in whichever thread, is raised
  again in the loop's thread when that call's outcome is collected: the
  records before it are on disk and the run ends there, as with a serial call.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import inspect
import threading
import types
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence, Tuple, Union, cast

from ..canonical import json_path, parse_canonical, snapshot
from ..errors import ToolFailure, UnrecordableError
from ..messages import Message
from .plan import PlannedCall
from ..tools.context import CallContext
from ..tools.registry import Tool, ToolRegistry

__all__ = [
    "Job",
    "Raised",
    "Outcome",
    "Done",
    "Runner",
    "SyncRunner",
    "AsyncRunner",
    "is_async_callable",
    "groups",
    "prepare",
    "run_plain",
    "describe",
    "TIMEOUT_ERROR",
    "RESULT_DEPTH",
    "DEFAULT_MAX_WORKERS",
]

#: How deep a tool's result sits in its record (record > payload > value).
RESULT_DEPTH = 2
#: The default of ``run(max_workers=...)``: sync tools running at once in one group.
DEFAULT_MAX_WORKERS = 4
#: The error of a call past its timeout: ``TIMEOUT_ERROR % (name, limit)``.
TIMEOUT_ERROR = "tool %r timed out: no result within its timeout of %s seconds"
# How long closing a run's own event loop waits for cancelled async tools.
_CLOSE_WAIT = 1.0


def describe(exc: BaseException) -> str:
    """``RuntimeError: message``, safe to record whatever the exception holds."""
    try:
        message = str(exc)
    except Exception:  # an exception whose __str__ itself raises
        message = "<unprintable>"
    text = "%s: %s" % (type(exc).__name__, message) if message else type(exc).__name__
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass(frozen=True)
class Raised:
    """A ``BaseException`` that is not an ``Exception``, caught where a call ran, to raise in the loop's thread."""

    exception: BaseException


#: A call's outcome: ``(True, recorded value, its RFC 8785 text)``, ``(False, error text, "")``,
#: or :class:`Raised`.
Done = Tuple[bool, Any, str]
Outcome = Union[Done, Raised]


@dataclass(frozen=True, init=False)
class Job:
    """A call that passed every check and will run: its tool, a private copy of its arguments, its timeout."""

    tool: Tool
    arguments: Dict[str, Any]
    timeout: Optional[float]
    context: Optional[CallContext] = None  # for a tool with a CallContext parameter (agentloop.tools.context)

    def __init__(
        self, tool: Tool, arguments: Dict[str, Any], timeout: Optional[float], context: Optional[CallContext] = None
    ) -> None:
        # the generated __init__ of a frozen dataclass, in one call instead of object.__setattr__ per field
        self.__dict__.update(tool=tool, arguments=arguments, timeout=timeout, context=context)


def groups(calls: Sequence[PlannedCall], registry: ToolRegistry) -> List[List[int]]:
    """The positions of ``calls`` in run groups: consecutive parallel-safe calls together, any other
    call (serial, unknown, or of a tool that requires approval) alone."""
    if len(calls) == 1:  # the common turn: one call, a group of its own whatever its tool
        return [[0]]
    runs: List[List[int]] = []
    joinable = False
    for position, call in enumerate(calls):
        tool = registry.get(call.name)
        parallel = tool is not None and tool.parallel and not tool.gated  # a gated call waits for a person: a barrier
        if parallel and joinable:
            runs[-1].append(position)
        else:
            runs.append([position])
        joinable = parallel
    return runs


def prepare(call: PlannedCall, registry: ToolRegistry, default_timeout: Optional[float]) -> Union[Done, Job]:
    """The outcome of a call that fails before running (a problem from its plan, an
    unknown tool, invalid arguments), else the :class:`Job` that runs it."""
    if call.problem or call.arguments is None:
        return False, call.problem, ""
    tool = registry.get(call.name)
    if tool is None:
        return False, "no tool named %r (have: %s)" % (call.name, ", ".join(registry.names) or "none"), ""
    # The tool's schema was compiled when it was built; report the first error (its path made only then).
    error = (
        None if tool.validator.is_valid(call.arguments) else tool.first_error(call.arguments, json_path("$", call.name))
    )
    if error is not None:
        return False, "invalid arguments: %s" % (error,), ""
    timeout = tool.timeout if tool.timeout is not None else default_timeout
    return Job(tool, _own_arguments(call), timeout)


def _own_arguments(call: PlannedCall) -> Dict[str, Any]:
    """The tool's own copy of a call's arguments (read back from the recorded text: plain JSON, fast)."""
    if call.arguments_text:
        arguments: Dict[str, Any] = parse_canonical(call.arguments_text)
        return arguments
    assert call.arguments is not None  # a call that may run has its arguments
    return copy.deepcopy(call.arguments)


def run_plain(call: PlannedCall, registry: ToolRegistry, default_timeout: Optional[float]) -> Optional[Done]:
    """The outcome of ``call``, a turn's lone call, when :class:`SyncRunner` would run it as a plain function
    call in the loop's thread with nothing to decide or wait for: its tool sync, ungated, without a
    ``CallContext`` or a timeout (its own or ``default_timeout``), its arguments passing their checks.  Run
    here, as :func:`prepare` and :meth:`SyncRunner.start` run it, the tool read at this call as they read it;
    ``None``, nothing run, for any other call (it takes the general path)."""
    if call.problem or call.arguments is None or default_timeout is not None:
        return None
    tool = registry.get(call.name)
    if tool is None or tool.is_async or tool.gated or tool.context is not None or tool.timeout is not None:
        return None
    if not tool.validator.is_valid(call.arguments):
        return None
    return _invoke(Job(tool, _own_arguments(call), None))


def _recorded(name: str, value: Any) -> Done:
    if isinstance(value, types.CoroutineType):  # (inspect.iscoroutine) a sync fn that returned a coroutine:
        # never awaited, never recorded
        value.close()
        return False, "tool %r returned a coroutine: make its function an async def, or await inside it" % (name,), ""
    try:
        recorded, text = snapshot(value, "$", RESULT_DEPTH)
    except UnrecordableError as exc:
        return False, "tool %r returned an unrecordable result: %s" % (name, exc), ""
    return True, recorded, text


def _invoke(job: Job) -> Done:
    """Run a sync job; every ``Exception`` becomes a failure (a ``BaseException`` propagates)."""
    try:  # invoke converts validated arguments to fn's annotations when the tool knows them
        value = job.tool.invoke(job.arguments, job.context)
    except ToolFailure as exc:  # the tool chose its own error text
        return False, exc.text, ""
    except Exception as exc:
        return False, "tool %r raised %s" % (job.tool.name, describe(exc)), ""
    return _recorded(job.tool.name, value)


async def _invoke_async(job: Job) -> Outcome:
    try:
        value = await job.tool.invoke(job.arguments, job.context)
    except ToolFailure as exc:
        return False, exc.text, ""
    except Exception as exc:
        return False, "tool %r raised %s" % (job.tool.name, describe(exc)), ""
    except asyncio.CancelledError:
        raise  # cancelled by its timeout (or the run's end): the waiter knows
    except BaseException as exc:
        return Raised(exc)
    return _recorded(job.tool.name, value)


def _thread(job: Job, loop: asyncio.AbstractEventLoop, future: "asyncio.Future[Outcome]") -> None:
    outcome: Outcome
    try:
        outcome = _invoke(job)
    except BaseException as exc:  # KeyboardInterrupt, SystemExit...: raised again in the loop's thread
        outcome = Raised(exc)
    try:
        loop.call_soon_threadsafe(_settle, future, outcome)
    except RuntimeError:  # the event loop is closed: the call was abandoned long ago
        pass


def _settle(future: "asyncio.Future[Outcome]", outcome: Outcome) -> None:
    if not future.done():  # not cancelled by a timeout
        future.set_result(outcome)


async def _within(future: "asyncio.Future[Outcome]", job: Job) -> Outcome:
    """The outcome of ``future``, or the timeout failure once ``job.timeout`` has passed
    (the future cancelled, not awaited)."""
    done, _ = await asyncio.wait({future}, timeout=job.timeout)
    if not done:
        future.cancel()
        return False, TIMEOUT_ERROR % (job.tool.name, _limit(job.timeout)), ""
    if future.cancelled():
        return False, "tool %r was cancelled" % (job.tool.name,), ""
    return future.result()


def _limit(seconds: Optional[float]) -> str:
    return repr(seconds) if isinstance(seconds, float) else str(seconds)


async def _run_job(job: Job, slots: asyncio.Semaphore) -> Outcome:
    loop = asyncio.get_running_loop()
    if job.tool.is_async:
        return await _within(asyncio.ensure_future(_invoke_async(job)), job)
    async with slots:
        future: "asyncio.Future[Outcome]" = loop.create_future()
        worker = threading.Thread(
            target=_thread, args=(job, loop, future), name="agentloop-tool-" + job.tool.name, daemon=True
        )
        worker.start()
        return await _within(future, job)


async def _guarded(job: Job, slots: asyncio.Semaphore) -> Outcome:
    try:
        return await _run_job(job, slots)
    except BaseException as exc:  # nothing may escape into an event loop's thread
        return Raised(exc)


#: What a runner's ``start`` gives per job: a future of its outcome, or the outcome itself.
Handle = Union["concurrent.futures.Future[Outcome]", "asyncio.Future[Outcome]", Done]


class SyncRunner:
    """Waits by blocking: the model is called in the loop's thread; groups run on the run's own event loop."""

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self._owned: Optional[Tuple[asyncio.AbstractEventLoop, threading.Thread]] = None
        self._async_model: Optional[bool] = None

    def _loop(self) -> asyncio.AbstractEventLoop:
        if self._owned is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=_serve, args=(loop,), name="agentloop-event-loop", daemon=True)
            thread.start()
            self._owned = (loop, thread)
        return self._owned[0]

    async def ask(self, model: Any, messages: List[Message], manifest: List[Dict[str, Any]]) -> Any:
        if self._async_model is None:  # read once: a run has one model
            self._async_model = is_async_callable(model)
        if self._async_model:
            return self._blocking(model(messages, manifest))
        return self.ask_plainly(model, messages, manifest)

    def plain_asker(self) -> Optional[Callable[[Any, List[Message], List[Dict[str, Any]]], Any]]:
        """:meth:`ask_plainly` once :meth:`ask` has found the run's model sync at its first call (the loop then
        calls it without a coroutine, as ``ask`` would call it), else ``None``: not asked yet, or async."""
        return self.ask_plainly if self._async_model is False else None

    def ask_plainly(self, model: Any, messages: List[Message], manifest: List[Dict[str, Any]]) -> Any:
        """:meth:`ask` of a sync model, without a coroutine: its reply, called in this thread."""
        reply = model(messages, manifest)
        if isinstance(
            reply, types.CoroutineType
        ):  # (inspect.iscoroutine) a sync model that returned a coroutine: refused, never awaited
            reply.close()
        return reply

    async def decide(self, approver: Any, request: Any) -> Any:
        """The approver's answer to ``request`` (``None`` without an approver: defer)."""
        if approver is None:
            return None
        if is_async_callable(approver):
            return self._blocking(approver(request))
        return approver(request)

    def _blocking(self, awaitable: Awaitable[Any]) -> Any:
        outcome = asyncio.run_coroutine_threadsafe(_caught(awaitable), self._loop()).result()
        if isinstance(outcome, Raised):
            raise outcome.exception
        return outcome[1]

    def start(self, jobs: List[Job]) -> List[Handle]:
        if len(jobs) == 1 and not jobs[0].tool.is_async and jobs[0].timeout is None:
            return [_invoke(jobs[0])]  # a lone sync call: a plain call, in this thread, done
        handles: List["concurrent.futures.Future[Outcome]"] = [concurrent.futures.Future() for _ in jobs]
        asyncio.run_coroutine_threadsafe(_group(jobs, self.max_workers, handles), self._loop())
        return list(handles)

    async def wait(self, handle: Handle) -> Outcome:
        if isinstance(handle, concurrent.futures.Future):
            outcome: Outcome = handle.result()
            return outcome
        return handle  # type: ignore[return-value]  # a Done (cast() is a call, in each step)

    def close(self) -> None:
        if self._owned is not None:
            loop, thread = self._owned
            self._owned = None
            loop.call_soon_threadsafe(loop.stop)
            thread.join(2 * _CLOSE_WAIT)


class AsyncRunner:
    """Waits by awaiting on the caller's event loop."""

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self._pending: List["asyncio.Future[Outcome]"] = []

    async def ask(self, model: Any, messages: List[Message], manifest: List[Dict[str, Any]]) -> Any:
        acall = getattr(model, "acall", None)
        if callable(acall):
            return await acall(messages, manifest)
        if is_async_callable(model):
            return await model(messages, manifest)
        return await asyncio.get_running_loop().run_in_executor(None, model, messages, manifest)

    async def decide(self, approver: Any, request: Any) -> Any:
        """The approver's answer: awaited when it is ``async def``, else asked on a thread
        (it may wait for a person)."""
        if approver is None:
            return None
        if is_async_callable(approver):
            return await approver(request)
        return await asyncio.get_running_loop().run_in_executor(None, approver, request)

    def start(self, jobs: List[Job]) -> List[Handle]:
        slots = asyncio.Semaphore(self.max_workers)
        self._pending = [asyncio.ensure_future(_guarded(job, slots)) for job in jobs]
        return list(self._pending)

    async def wait(self, handle: Handle) -> Outcome:
        return await cast("asyncio.Future[Outcome]", handle)

    def close(self) -> None:
        for task in self._pending:  # a run that ended mid-group (a re-raised KeyboardInterrupt)
            task.cancel()
        self._pending = []


def is_async_callable(fn: object) -> bool:
    """Whether calling ``fn`` gives a coroutine: an ``async def`` function (or a partial of one),
    or an object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


async def _caught(awaitable: Awaitable[Any]) -> Outcome:
    try:
        return True, await awaitable, ""
    except BaseException as exc:  # raised again in the waiting thread, whatever it is
        return Raised(exc)


async def _group(jobs: List[Job], max_workers: int, handles: List["concurrent.futures.Future[Outcome]"]) -> None:
    slots = asyncio.Semaphore(max_workers)

    async def one(job: Job, handle: "concurrent.futures.Future[Outcome]") -> None:
        handle.set_result(await _guarded(job, slots))

    await asyncio.gather(*[one(job, handle) for job, handle in zip(jobs, handles)])


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    """The run's own event loop: serve until stopped, then cancel what is left (waiting at most a moment)."""
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        try:
            left = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.wait(left, timeout=_CLOSE_WAIT))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


Runner = Union[SyncRunner, AsyncRunner]
