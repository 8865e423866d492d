"""What every command prints, and the one function that makes outside bytes safe to print.

Every character that reaches the terminal from a transcript, a model, a
tool, a server, a file or an exception passes through :func:`visible`: the
commands print only through :func:`emit` and :func:`complain`, which call it
on the whole line (a test fails on a ``print`` or ``write`` anywhere else in
:mod:`agentloop.cli`).  Colour is painted after the escaping, so only
agentloop's own colour codes reach the terminal.

Exit codes shared by every command (each module's docstring lists its own):

==== ===================================================================
0    done: verified, written, identical, or (``run``) an answer
1    a fault was found, a proof does not hold, a replay differs, or
     (``run``) the run ended on ``model_error``
2    usage error, or a file that cannot be read or written (nothing done)
3    ``run``: the run hit a budget (``step_budget``, ``token_budget``)
4    ``run``: the run did not finish (a tool or the model raised
     ``SystemExit``); the transcript is a verifiable prefix
5    ``run``: the run paused for an approval (see :mod:`.approval`)
70   internal error (a bug in agentloop: please report it)
130  interrupted (Ctrl-C); a transcript being written is a verifiable prefix
141  standard output was closed early (``| head``); nothing more is printed
==== ===================================================================
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import sys
import unicodedata
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, TextIO

from ..errors import ModelConfigError, RunConfigError, TranscriptExistsError
from ..transcript.durable import file_type, write_atomic
from ..transcript.format import Fault, VerifyResult, is_hash
from ..transcript.verify import verify_file

__all__ = [
    "Commands",
    "Paint",
    "Refused",
    "visible",
    "quote",
    "field",
    "as_dict",
    "as_list",
    "format_record",
    "fault_json",
    "plain",
    "ansi",
    "painter",
    "emit",
    "live",
    "complain",
    "cli_message",
    "check_input",
    "check_output",
    "report_verdict",
    "tone",
    "same_file",
    "hash_arg",
    "count_arg",
    "positive_arg",
    "seconds_arg",
    "EXIT_OK",
    "EXIT_FAULT",
    "EXIT_USAGE",
    "EXIT_BUDGET",
    "EXIT_UNFINISHED",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_PIPE",
]

EXIT_OK = 0
EXIT_FAULT = 1
EXIT_USAGE = 2
EXIT_BUDGET = 3
EXIT_UNFINISHED = 4
EXIT_INTERNAL = 70  # EX_SOFTWARE of sysexits.h
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it
EXIT_PIPE = 141  # 128 + SIGPIPE, as a shell reports ``yes | head``

_LISTED_FAULTS = 10
_SHOWN_CHARS = 160
_COLORS = {"ok": "\x1b[32m", "bad": "\x1b[31m", "stop": "\x1b[1;33m", "head": "\x1b[1m"}
_RESET = "\x1b[0m"
#: Control (C0, DEL, C1), format (bidi controls U+202A-202E, U+2066-2069,
#: U+200E/U+200F, U+061C, zero-width and others), lone surrogates, and the
#: line and paragraph separators: every category a terminal may act on.
_HIDDEN = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))

Paint = Callable[[str, Optional[str]], str]


class Commands(Protocol):
    """What a command module's ``add_commands`` adds its commands to (:mod:`.main` gives it):
    ``add_parser(name, **kwargs)`` as argparse's, the one-line help being :data:`.main.COMMANDS`'."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


class Refused(Exception):
    """A command refuses its arguments before doing anything: one line on stderr, exit 2.

    ``where`` names the file or the option, ``reason`` what is wrong with it.
    Raised inside :mod:`agentloop.cli` only, and caught by ``main``.
    """

    def __init__(self, where: str, reason: str, status: int = EXIT_USAGE) -> None:
        self.where = where
        self.reason = reason
        self.status = status
        super().__init__("%s: %s" % (where, reason))


def visible(text: str, lines: bool = False) -> str:
    """``text`` with every character a terminal could act on shown as JSON's ``\\uXXXX`` (a pair above U+FFFF).

    Escaped: ESC, BEL and every other C0 control, DEL, the C1 controls, the
    bidi controls (U+202A-202E, U+2066-2069, U+200E, U+200F, U+061C) and
    every other format character, lone surrogates, U+2028 and U+2029.  With
    ``lines=True``, ``\\n`` and ``\\t`` are kept (output of several lines);
    otherwise the result is one line.  Everything else is kept as it is, so
    the escapes are JSON's and a JSON text stays a JSON text.
    """
    if text.isprintable():
        return text
    return "".join(
        _escape(ord(ch)) if unicodedata.category(ch) in _HIDDEN and not (lines and ch in "\n\t") else ch for ch in text
    )


def _escape(code: int) -> str:
    """JSON's escape of one code point: ``\\uXXXX``, or a surrogate pair above U+FFFF (RFC 8259, section 7)."""
    if code <= 0xFFFF:
        return "\\u%04x" % code
    code -= 0x10000
    return "\\u%04x\\u%04x" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))


def quote(value: object, limit: Optional[int] = _SHOWN_CHARS) -> str:
    """The JSON text of ``value``, cut to ``limit`` characters (``None``: whole), made :func:`visible`."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=lambda v: "<%s>" % (type(v).__name__,))
    except (TypeError, ValueError, RecursionError):
        text = "<%s that cannot be shown>" % (type(value).__name__,)
    if limit is not None and len(text) > limit:
        text = text[: limit - 3] + "..."
    return visible(text)


def field(value: object) -> str:
    """A scalar field as ``show`` prints it: numbers and booleans bare, anything else quoted."""
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return quote(value) if not -(10**20) < value < 10**20 else str(value)
    return quote(value)


def as_dict(value: object) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> List[Any]:
    return value if isinstance(value, list) else []


def _calls(calls: List[Any], full: bool) -> str:
    """The tool calls of an assistant record: names, or (``full``) ``name(arguments)`` each."""
    if not full:
        names = ",".join(str(c.get("name")) for c in calls if isinstance(c, dict))
        return quote(names or "-")[1:-1]
    shown = []
    for call in calls:
        c = as_dict(call)
        arguments = c.get("arguments")
        inner = (
            quote(arguments, None)
            if arguments is not None or "arguments_error" not in c
            else "error=%s" % (quote(c.get("arguments_error"), None),)
        )
        shown.append("%s(%s)" % (quote(c.get("name"), None), inner))
    return ",".join(shown) or "-"


def format_record(record: object, full: bool = False) -> str:
    """One line summarising a record, as ``agentloop show`` prints it.

    Texts and values are cut to 160 characters; ``full=True`` (``show
    --full``) prints them whole, with each tool call's arguments.  Either way
    the line is :func:`visible`.
    """
    limit = None if full else _SHOWN_CHARS
    if not isinstance(record, dict):
        return "seq=? (not an object: %s)" % (quote(record, limit),)
    seq = field(record.get("seq", "?"))
    kind = record.get("kind")
    payload = record.get("payload")
    p = as_dict(payload)
    if kind == "tool":
        name = p.get("name")
        name_text = name if isinstance(name, str) else quote(name)
        ok = p.get("ok")
        outcome = "value=%s" % quote(p.get("value"), limit) if ok is True else "error=%s" % quote(p.get("error"), limit)
        return "seq=%s %-8s ok=%-5s %s" % (seq, quote(name_text, limit)[1:-1], field(ok), outcome)
    if kind == "task":
        budgets = as_dict(p.get("budgets"))
        tools = as_list(p.get("tools"))
        names = ",".join(str(t.get("name")) for t in tools if isinstance(t, dict))
        return "seq=%s task     max_steps=%s max_tokens=%s tools=%s task=%s" % (
            seq,
            field(budgets.get("max_steps")),
            field(budgets.get("max_tokens")),
            quote(names or "-", limit)[1:-1],
            quote(p.get("task"), limit),
        )
    if kind == "assistant":
        return "seq=%s assistant step=%s tokens=%s total=%s calls=%s text=%s" % (
            seq,
            field(p.get("step")),
            field(p.get("tokens")),
            field(p.get("total_tokens")),
            _calls(as_list(p.get("tool_calls")), full),
            quote(p.get("text"), limit),
        )
    if kind == "stop":
        return "seq=%s stop     reason=%s steps=%s tokens=%s detail=%s" % (
            seq,
            quote(p.get("reason"))[1:-1],
            field(p.get("steps")),
            field(p.get("tokens")),
            quote(p.get("detail"), limit),
        )
    return "seq=%s %s payload=%s" % (seq, quote(kind), quote(payload, limit))


def fault_json(fault: Fault) -> Dict[str, Any]:
    return {"index": fault.index, "line": fault.line, "kind": fault.kind, "detail": fault.detail}


def plain(text: str, tone: Optional[str]) -> str:
    return text


def ansi(text: str, tone: Optional[str]) -> str:
    return text if tone is None else _COLORS[tone] + text + _RESET


def painter(args: argparse.Namespace, out: TextIO) -> Paint:
    """ANSI colour only for a terminal, without ``NO_COLOR`` and ``--no-color``."""
    if getattr(args, "no_color", False) or os.environ.get("NO_COLOR"):
        return plain
    isatty = getattr(out, "isatty", None)
    return ansi if callable(isatty) and isatty() else plain


class OutputError(Refused):
    """An output stream could not be written (a full disk, an I/O error, closed): said as such.

    ``where`` names the stream (``standard output``, ``standard error``).  A
    closed pipe is not this: ``BrokenPipeError`` goes on to ``main``, which
    exits 141 quietly, as ``yes | head`` does.
    """

    def __init__(self, stream: str, error: Exception) -> None:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        super().__init__(stream, "cannot write: %s" % (reason,))


def emit(
    out: TextIO, text: str, tone: Optional[str] = None, paint: Paint = plain, lines: bool = False, end: str = "\n"
) -> None:
    """Print ``text`` to ``out`` made :func:`visible` (``lines=True`` keeps its newlines), then painted."""
    try:
        out.write(paint(visible(text, lines), tone) + end)
        out.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:  # ValueError: the stream was closed (by a tool's sys.stdout.close())
        raise OutputError("standard error" if out is sys.stderr else "standard output", exc) from None


def note(text: str) -> None:
    """One :func:`visible` line on stderr, never raising: when stderr cannot be written, the exit status says it all."""
    try:
        if sys.stderr is not None:
            emit(sys.stderr, text)
    except (OSError, Refused):
        pass


def live(text: str) -> None:
    """``text`` on stderr as it is, :func:`visible` (newlines and tabs kept), with no line end added and
    flushed at once (a streamed reply's text as it arrives); never raising, like :func:`note`."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(visible(text, lines=True))
            sys.stderr.flush()
    except (OSError, ValueError):
        pass


def transcript_state(path: str) -> str:
    """What the transcript at ``path`` holds, in words: for a note after a run that stopped short."""
    if not os.path.exists(path):
        return "nothing was written to %s" % (path,)
    result = verify_file(path)
    records = "%d record%s" % (result.count, "" if result.count == 1 else "s")
    if not result.ok:
        return "%s holds %s, NOT verifiable: %s" % (path, records, result.faults[0])
    if result.complete:
        return "%s holds %s, the whole run with its stop record" % (path, records)
    return "%s holds %s, a verifiable prefix without a stop record" % (path, records)


def complain(command: Optional[str], message: str) -> None:
    """``agentloop COMMAND: error: MESSAGE``, one :func:`visible` line on stderr."""
    prefix = "agentloop" if not command else "agentloop %s" % (command,)
    note("%s: error: %s" % (prefix, message))


#: Library words -> command-line words, for messages raised by the library.
_OPTIONS = {
    "overwrite": "--overwrite",
    "checkpoint": "--checkpoint",
    "key": "--key-file/--key-env",
    "max_steps": "--max-steps",
    "max_tokens": "--max-tokens",
    "stop_sentinel": "--stop-sentinel",
    "system": "--system",
    "task": "--task",
    "model": "--model",
    "base_url": "--base-url",
    "timeout": "--timeout",
    "max_retries": "--max-retries",
    "max_output_tokens": "--max-output-tokens",
    "max_tokens_per_reply": "--max-output-tokens",
    "transcript": "-o/--output",
    "max_faults": "--max-faults",
}
#: Commands whose FILE is the library's ``transcript`` parameter (for ``run`` it is ``-o/--output``).
_TRANSCRIPT_IS_FILE = frozenset({"pending", "resume"})
_KEYWORD = re.compile(r"\b([a-z][a-z_]*)=(True\b|(?=[\s),;]|$))")


def cli_message(exc: BaseException, command: str = "") -> str:
    """The message of a library exception in the words of the command line's ``command``.

    ``pass overwrite=True`` becomes ``pass --overwrite``, a parameter named
    at the start of the message becomes its option (for ``pending`` and
    ``resume`` the ``transcript`` is their FILE, which the message names
    already), and ``api_key=`` (the command line
    takes keys only from the environment) becomes ``set``.
    """
    text = str(exc)
    if isinstance(exc, TranscriptExistsError):
        return "%s already exists (pass --overwrite to replace it)" % (exc.path,)
    if isinstance(exc, RunConfigError) and exc.parameter == "transcript" and command in _TRANSCRIPT_IS_FILE:
        text = exc.reason  # it names the FILE itself
    elif isinstance(exc, (RunConfigError, ModelConfigError)) and exc.parameter in _OPTIONS:
        text = "%s: %s" % (_OPTIONS[exc.parameter], exc.reason)
    if isinstance(exc, ModelConfigError) and exc.parameter == "api_key":
        text = exc.reason
    text = text.replace("pass api_key= or set ", "set ").replace(
        "pass api_key= instead", "set the key's environment variable (OPENAI_API_KEY, ANTHROPIC_API_KEY) instead"
    )
    return _KEYWORD.sub(lambda m: _OPTIONS.get(m.group(1), "--" + m.group(1).replace("_", "-")), text)


def _what(mode: int) -> str:
    return file_type(mode)


def _is_stdin(st: os.stat_result) -> bool:
    try:
        return os.path.samestat(st, os.fstat(0))
    except OSError:
        return False


def write_file(path: str, data: bytes) -> None:
    """Replace ``path`` atomically with ``data`` (:func:`~agentloop.transcript.durable.write_atomic`).

    An ``OSError`` is a :class:`Refused` naming the file (exit 2).
    """
    try:
        write_atomic(path, data)
    except OSError as exc:
        raise Refused(path, "cannot write it: %s" % (exc.strerror or exc,)) from None


def check_input(path: str, pipe: bool = True) -> None:
    """Refuse at once an input that is not a transcript file; raise :class:`Refused`.

    Accepted: a regular file, a path that does not exist (the command
    reports it as ``unreadable``), and, when ``pipe`` (commands that read
    once: ``verify``, ``show``, ``report``), the pipe on standard input
    (``cat t.jsonl | agentloop show /dev/stdin``).  Refused, without reading a
    byte: a directory, a device (``/dev/zero``, ``/dev/urandom``, a
    terminal), a socket, and a named FIFO (it would block or never end).
    """
    try:
        st = os.stat(path)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode):
        return
    if pipe and stat.S_ISFIFO(st.st_mode) and _is_stdin(st):
        return
    if stat.S_ISFIFO(st.st_mode):
        how = "only the pipe on standard input is read" if pipe else "this command needs a regular file"
        raise Refused(path, "is a named pipe (FIFO), not a transcript file (%s)" % (how,))
    raise Refused(path, "is %s, not a transcript file" % (_what(st.st_mode),))


def check_output(
    path: str,
    overwrite: bool,
    option: str = "--overwrite",
    replaceable: Callable[[str], bool] = lambda p: False,
    inputs: Sequence[Optional[str]] = (),
) -> None:
    """Refuse at once a file a command cannot or must not write; raise :class:`Refused`.

    0. ``-`` is refused: it means standard output, and a command that can
       write there handles it before it calls this (never a file named ``-``);
    1. one of the command's own ``inputs`` (a transcript, a checkpoint, a
       witness's state, a request) is refused, even with ``overwrite``:
       evidence is never replaced by what was made from it;
    2. an existing directory, device, FIFO or socket is refused (a directory is called one);
    3. an existing file is refused unless ``overwrite`` (named ``option``) or
       ``replaceable(path)`` (a file the command itself wrote earlier);
    4. the folder it goes in must exist and be a folder.
    """
    if path == "-":
        raise Refused(path, "standard output is not an output of this command: give a file name")
    for source in inputs:
        if source is not None and source != "-" and os.path.lexists(path) and same_file(source, path):
            raise Refused(path, "is read by this command, which never writes over its input")
    if os.path.lexists(path):
        try:
            st = os.stat(path)
        except OSError:
            raise Refused(path, "is a dangling symbolic link") from None
        if stat.S_ISDIR(st.st_mode):
            raise Refused(path, "is a directory; give a file name (for example %s)" % (os.path.join(path, "out"),))
        if not stat.S_ISREG(st.st_mode):
            raise Refused(path, "is %s, not a regular file" % (_what(st.st_mode),))
        if not overwrite and not replaceable(path):
            raise Refused(path, "already exists (pass %s to replace it)" % (option,))
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        what = "does not exist" if not os.path.lexists(folder) else "is not a folder"
        raise Refused(path, "the folder %s %s" % (folder, what))


def report_verdict(path: str, result: VerifyResult, out: TextIO, paint: Paint = plain) -> None:
    """A file's verdict line, then up to 10 of its faults (the rest counted)."""
    if result.ok:
        tail = "" if result.complete else " (no stop record: the run did not finish, or its tail is missing)"
        emit(out, "%s: ok, %d records, head %s%s" % (path, result.count, result.head, tail), "ok", paint)
        return
    first = result.faults[0]
    emit(out, "%s: FAILED at %s: %s: %s" % (path, first.where(), first.kind, first.detail), "bad", paint)
    for fault in result.faults[1:_LISTED_FAULTS]:
        emit(out, "  also %s" % (fault,), "bad", paint)
    if len(result.faults) > _LISTED_FAULTS:
        emit(out, "  (+%d more faults)" % (len(result.faults) - _LISTED_FAULTS,), "bad", paint)


def tone(record: object, faulty: bool) -> Optional[str]:
    if faulty:
        return "bad"
    p = as_dict(record)
    if p.get("kind") == "stop":
        return "stop"
    if p.get("kind") == "tool":
        return "ok" if as_dict(p.get("payload")).get("ok") is True else "bad"
    return None


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def hash_arg(text: str) -> str:
    if not is_hash(text):
        raise argparse.ArgumentTypeError("must be 64 lowercase hex digits")
    return text


def count_arg(text: str) -> int:
    if not text.isdigit() or not text.isascii() or len(text) > 30:
        raise argparse.ArgumentTypeError("must be a non-negative integer (at most 30 digits)")
    return int(text)


def positive_arg(text: str) -> int:
    if not text.isdigit() or not text.isascii() or len(text) > 30 or int(text) == 0:
        raise argparse.ArgumentTypeError("must be a positive integer (at most 30 digits)")
    return int(text)


def seconds_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a number of seconds") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError("must be above 0 and at most 3600")
    return value
