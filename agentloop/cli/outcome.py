"""How ``run``, ``replay`` and ``resume`` say the end of a run: the ``stop:`` and
``transcript:`` lines, the answer, the exit status, and what is said (and returned)
when the run did not finish (docs/cli.md, "Exit codes").
"""

from __future__ import annotations

import json
from typing import Any, Callable, TextIO

from ..errors import AgentloopError
from ..messages import RunResult
from .output import (
    EXIT_BUDGET,
    EXIT_FAULT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNFINISHED,
    OutputError,
    Refused,
    complain,
    emit,
    transcript_state,
)
from .terminate import Terminated, on_termination

__all__ = ["ANSWERS", "Stopped", "exit_status", "report_stop", "report_answer", "left", "guarded", "settled"]

#: The stop reasons that are an answer (``run`` and ``resume`` exit 0 on them only).
ANSWERS = ("no_tool_calls", "sentinel", "final_result")


def exit_status(result: RunResult) -> int:
    """The exit status of a run that ended (a pause is reported before: ``report_pause``)."""
    if result.stop_reason in ANSWERS:
        return EXIT_OK
    return EXIT_FAULT if result.stop_reason == "model_error" else EXIT_BUDGET


def report_stop(result: RunResult, path: str, out: TextIO) -> None:
    """The ``stop:`` and ``transcript:`` lines of a run that ended."""
    emit(out, "stop: %s (steps=%d, tokens=%d): %s" % (result.stop_reason, result.steps, result.tokens, result.detail))
    emit(out, "transcript: %s (%d records, head %s)" % (path, result.records, result.head))


def report_answer(result: RunResult, out: TextIO) -> None:
    """The run's answer, whole, escaped (its newlines kept); nothing when it ended without one."""
    value = getattr(result, "output", None)
    if value is None:
        return
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    emit(out, "answer:")
    emit(out, text, lines=True)


def left(command: str, path: str, what: str) -> None:
    """After a run that did not finish (or whose output failed): say what happened and what the transcript holds."""
    complain(command, "%s; %s" % (what, transcript_state(path)))


class Stopped(Exception):
    """A run that did not finish; its message is already printed, ``status`` is the exit status."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def guarded(command: str, path: str, work: Callable[[], Any], verb: str = "write") -> Any:
    """``work()``; Ctrl-C, SIGTERM, SIGHUP and ``SystemExit`` inside it become a message and exit
    130 / 143 / 129 / 4 (as :class:`Stopped`); an ``OSError`` is refused as "cannot ``verb`` it"."""
    try:
        with on_termination():
            return work()
    except KeyboardInterrupt:
        left(command, path, "interrupted (Ctrl-C)")
        raise Stopped(EXIT_INTERRUPTED) from None
    except Terminated as ended:
        left(command, path, "terminated (%s)" % (ended.name,))
        raise Stopped(ended.status) from None
    except SystemExit as exc:
        left(command, path, "the run did not finish: a tool or the model raised SystemExit(%s)" % (exc.code,))
        raise Stopped(EXIT_UNFINISHED) from None
    except AgentloopError:
        raise  # TranscriptExistsError, TranscriptLockedError: said in the command line's words by main
    except BrokenPipeError:  # standard output, not the transcript: main exits 141
        left(command, path, "standard output was closed (a broken pipe)")
        raise
    except OSError as exc:
        where = getattr(exc, "filename", None) or path
        raise Refused(str(where), "cannot %s it: %s" % (verb, exc.strerror or exc)) from None


def settled(command: str, path: str, work: Callable[[], int]) -> int:
    """``work()``'s exit status; that of a run that did not finish (:class:`Stopped`, already said);
    4 after saying so when standard output failed, during the run or after it (not a usage error)."""
    try:
        return work()
    except Stopped as stopped:
        return stopped.status
    except OutputError as exc:
        left(command, path, str(exc))
        return EXIT_UNFINISHED
