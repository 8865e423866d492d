"""The stdio transport: an MCP server as a child process.

MCP "Transports: stdio" (2025-11-25; 2026-07-28 "stdio" the same framing):
the client starts the server as a subprocess and writes JSON-RPC messages to
its stdin, one per line with no newline inside; the server answers on
stdout; stderr is the server's log, which the client MAY capture and SHOULD
NOT take as an error.  Here:

* a reader thread parses stdout and hands each response to the request
  waiting for its ``id``; a server *request* gets a JSON-RPC
  method-not-found error (``ping`` an empty result, as 2025-11-25 "Ping"
  requires), notifications are ignored;
* a second thread drains stderr into a bounded buffer (the last
  :data:`STDERR_KEEP` bytes), so a chatty server never fills the pipe and
  blocks; its tail explains a server that died;
* a request waits ``timeout`` seconds; then the client sends
  ``notifications/cancelled`` for it (2025-11-25 "Lifecycle: Timeouts",
  "Cancellation"; 2026-07-28 "stdio: Cancellation"; never for
  ``initialize``) and stops waiting; a late answer is dropped;
* a server that exits fails the waiting request and every later one with
  the same text: its exit status and last stderr;
* closing follows "stdio: Shutdown": close stdin, wait, SIGTERM, SIGKILL.

Values of ``env`` never appear in errors or ``repr`` (they are also
redacted from the stderr tail).
"""

from __future__ import annotations

import itertools
import os
import shlex
import subprocess
import threading
from typing import IO, Any, Dict, List, Mapping, Optional, Sequence, Union

from ..errors import MCPConfigError, MCPError
from .client import MCPClient, Origin, Failed, RpcFailed
from .jsonrpc import (
    METHOD_NOT_FOUND,
    Malformed,
    Notification,
    Request,
    Response,
    encode,
    error_response,
    notification,
    parse,
    request,
    short,
)

__all__ = ["MCPStdio", "STDERR_KEEP", "STDERR_SHOWN", "MAX_MESSAGE", "CLOSE_GRACE"]

#: Bytes of the server's stderr kept (the most recent ones).
STDERR_KEEP = 8192
#: Characters of that tail quoted in an error.
STDERR_SHOWN = 600
#: The longest line accepted from the server's stdout.
MAX_MESSAGE = 64 * 1024 * 1024
#: Seconds each shutdown step waits (stdin closed, then SIGTERM, then SIGKILL).
CLOSE_GRACE = 2.0


class _Slot:
    __slots__ = ("event", "response", "failure")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.response: Optional[Response] = None
        self.failure: Optional[Failed] = None


class MCPStdio(MCPClient):
    """Tools from an MCP server started as a subprocess.

    ``command`` is an argv list or a string split like a POSIX shell would
    (no shell runs); ``env`` adds to (and overrides) the inherited
    environment; ``timeout`` bounds each call, ``init_timeout`` starting and
    the handshake.  Use as a context manager::

        with MCPStdio([sys.executable, "server.py"], name="calc") as calc:
            run(task, model, calc.tools(), ...)
    """

    transport = "stdio"

    def __init__(
        self,
        command: Union[str, Sequence[str]],
        *,
        name: str,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        protocol: str = "auto",
        timeout: float = 30,
        init_timeout: float = 30,
    ) -> None:
        super().__init__(name, protocol, timeout, init_timeout)
        if isinstance(command, str):
            try:
                argv = shlex.split(command)
            except ValueError as exc:
                raise MCPConfigError("command", "cannot be split into words: %s" % (exc,)) from None
        else:
            argv = list(command)
        if not argv or not all(isinstance(a, str) for a in argv):
            raise MCPConfigError("command", "must be a non-empty string or list of strings")
        if env is not None and not (
            isinstance(env, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        ):
            raise MCPConfigError("env", "must map names to string values")
        self.command: List[str] = argv
        self.cwd = cwd
        self._env: Dict[str, str] = dict(env or {})
        self._proc: Optional["subprocess.Popen[bytes]"] = None
        self._ids = itertools.count(1)
        self._pending: Dict[Union[int, str], _Slot] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._stderr = bytearray()
        self._stderr_lock = threading.Lock()
        self._threads: List[threading.Thread] = []
        self._dead: Optional[str] = None

    def __repr__(self) -> str:
        env = "" if not self._env else ", env=<%d names>" % (len(self._env),)
        return "MCPStdio(%r, name=%r%s, protocol=%r)" % (
            self.command,
            self.name,
            env,
            self.protocol or self.requested_protocol,
        )

    def _where(self) -> Dict[str, Any]:
        return {"command": list(self.command)}

    # --- process ---------------------------------------------------------

    def _open(self) -> None:
        environ = dict(os.environ)
        environ.update(self._env)
        try:
            self._proc = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=environ,
                cwd=self.cwd,
            )
        except OSError as exc:
            raise MCPError(
                self.name,
                "cannot start %s: %s" % (short(" ".join(self.command), 200), exc.strerror or exc.__class__.__name__),
            ) from None
        for target, label in ((self._read_stdout, "stdout"), (self._read_stderr, "stderr")):
            thread = threading.Thread(target=target, name="mcp-%s-%s" % (self.name, label), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _stderr_tail(self) -> str:
        with self._stderr_lock:
            text = bytes(self._stderr).decode("utf-8", "replace")
        for value in self._env.values():
            if len(value) >= 3:
                text = text.replace(value, "[redacted]")
        text = " ".join(text.split())
        return text if len(text) <= STDERR_SHOWN else "..." + text[-(STDERR_SHOWN - 3) :]

    def _read_stderr(self) -> None:
        proc = self._proc
        if proc is None or proc.stderr is None:
            return
        stream = proc.stderr
        while True:
            try:
                chunk = stream.read1(4096) if hasattr(stream, "read1") else stream.read(4096)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            if proc is not self._proc:
                return  # a process replaced by _fresh
            with self._stderr_lock:
                self._stderr += chunk
                if len(self._stderr) > STDERR_KEEP:
                    del self._stderr[: len(self._stderr) - STDERR_KEEP]

    def _read_stdout(self) -> None:
        proc = self._proc
        if proc is None or proc.stdout is None:
            return
        stream: IO[bytes] = proc.stdout
        while True:
            try:
                line = stream.readline(MAX_MESSAGE + 1)
            except (OSError, ValueError):
                line = b""
            if not line:
                break
            if len(line) > MAX_MESSAGE:
                self._fail_pending("sent a message longer than %d bytes" % (MAX_MESSAGE,), "malformed")
                self._kill()
                break
            line = line.strip()
            if proc is not self._proc:
                return  # a process replaced by _fresh: its answers concern no waiting request
            if line:
                self._dispatch(line)
        if proc is self._proc:
            self._died()

    def _dispatch(self, line: bytes) -> None:
        try:
            message = parse(line)
        except Malformed as exc:
            # One channel: the garbage cannot be tied to a request, so every
            # waiting request fails with it; the server stays usable.
            self._fail_pending("sent a malformed message: %s" % (exc,), "malformed")
            return
        if isinstance(message, Response):
            with self._lock:
                slot = self._pending.pop(message.id, None) if message.id is not None else None
            if slot is not None:
                slot.response = message
                slot.event.set()
            elif message.id is None and message.error is not None:
                self._fail_pending(
                    "sent an error about an unreadable request: %s" % (message.error.describe(),), "malformed"
                )
        elif isinstance(message, Request):
            if message.method == "ping":
                reply: Dict[str, Any] = {"jsonrpc": "2.0", "id": message.id, "result": {}}
            else:
                reply = error_response(
                    message.id,
                    METHOD_NOT_FOUND,
                    "Method not found: agentloop does not serve %s" % (short(message.method, 80),),
                )
            try:
                self._write(reply)
            except Failed:
                pass
        else:
            assert isinstance(message, Notification)  # progress, logging, list_changed: nothing to do

    def _died(self) -> None:
        proc = self._proc
        status: Optional[int] = None
        if proc is not None:
            try:
                status = proc.wait(timeout=CLOSE_GRACE)
            except subprocess.TimeoutExpired:
                status = None
        for thread in self._threads[1:]:
            thread.join(timeout=1.0)  # the rest of stderr, for the message
        if self._closed:
            reason = "the client is closed"
        elif status is None:
            reason = "closed its stdout"
        elif status < 0:
            reason = "was killed by signal %d" % (-status,)
        else:
            reason = "exited with status %d" % (status,)
        tail = self._stderr_tail()
        if tail and not self._closed:
            reason += "; last stderr: %s" % (tail,)
        self._dead = reason
        self._fail_pending(reason, "dead")

    def _fail_pending(self, text: str, kind: str) -> None:
        with self._lock:
            slots = list(self._pending.values())
            self._pending.clear()
        for slot in slots:
            slot.failure = Failed(text, kind)
            slot.event.set()

    def _write(self, message: Dict[str, Any]) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise Failed(self._dead or "not started", "dead")
        data = encode(message) + b"\n"
        with self._write_lock:
            try:
                proc.stdin.write(data)
                proc.stdin.flush()
            except (OSError, ValueError):
                raise Failed(self._dead_reason(), "dead") from None

    def _dead_reason(self) -> str:
        # A broken pipe: the reader thread is about to find EOF and say why.
        if self._threads and self._threads[0] is not threading.current_thread():
            self._threads[0].join(timeout=CLOSE_GRACE + 1.5)
        return self._dead or "stopped reading its stdin"

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                proc.kill()
            except OSError:
                pass

    # --- requests --------------------------------------------------------

    def _exchange(
        self, method: str, params: Dict[str, Any], timeout: float, origin: Optional[Origin] = None
    ) -> Dict[str, Any]:
        if self._dead is not None:
            raise Failed(self._dead, "dead")
        id_ = next(self._ids)
        slot = _Slot()
        with self._lock:
            self._pending[id_] = slot
        try:
            self._write(request(id_, method, params))
        except Failed:
            with self._lock:
                self._pending.pop(id_, None)
            raise
        if not slot.event.wait(timeout):
            with self._lock:
                self._pending.pop(id_, None)
            if not slot.event.is_set():
                if method == "initialize":  # "The initialize request MUST NOT be cancelled by clients"
                    raise Failed("timed out after %g s" % (timeout,), "timeout")
                try:
                    self._write(
                        notification(
                            "notifications/cancelled", {"requestId": id_, "reason": "timed out after %g s" % (timeout,)}
                        )
                    )
                except Failed:
                    pass
                raise Failed("timed out after %g s (sent notifications/cancelled)" % (timeout,), "timeout")
        if slot.failure is not None:
            raise slot.failure
        response = slot.response
        if response is None:
            raise Failed("no response", "malformed")
        if response.error is not None:
            raise RpcFailed(response.error)
        assert response.result is not None
        return response.result

    def _notify(self, method: str, params: Optional[Dict[str, Any]], timeout: float) -> None:
        self._write(notification(method, params))  # a line written to the pipe: nothing to wait for

    def _fresh(self) -> str:
        """One connection per attempt: the process that left the probe unanswered is stopped, a new one started.

        The old one gets no grace (stdin closed and SIGTERM at once, SIGKILL
        after :data:`CLOSE_GRACE`); its stderr is forgotten with it.
        """
        self._shutdown(grace=False)
        with self._stderr_lock:
            self._stderr = bytearray()
        self._proc = None
        self._threads = []
        self._dead = None
        self._open()
        return "; the server was restarted for initialize"

    def _shutdown(self, grace: bool = True) -> None:
        """2025-11-25 "Lifecycle: Shutdown", stdio: close stdin; wait; SIGTERM; wait; SIGKILL.

        Without ``grace``, SIGTERM follows closing stdin at once.
        """
        proc = self._proc
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                with self._write_lock:
                    proc.stdin.close()
        except OSError:
            pass
        _stop(proc, grace)
        for thread in self._threads:
            thread.join(timeout=CLOSE_GRACE + 2)
        for stream in (proc.stdout, proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self._dead = self._dead or "the client is closed"
        self._fail_pending("the client is closed", "dead")


def _stop(proc: "subprocess.Popen[bytes]", grace: bool) -> None:
    """Wait for ``proc`` to exit (with ``grace``), then SIGTERM and wait, then SIGKILL and wait."""
    for step in ((None,) if grace else ()) + (proc.terminate, proc.kill):
        if step is not None:
            try:
                step()
            except OSError:
                pass
        try:
            proc.wait(timeout=CLOSE_GRACE)
            return
        except subprocess.TimeoutExpired:
            continue
