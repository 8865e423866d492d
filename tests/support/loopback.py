"""A stand-in for the OpenAI Chat Completions and Responses APIs and the
Anthropic Messages API on 127.0.0.1, for the tests and the README's
walk-through.  Stdlib only.

    python3 -m tests.support.loopback [--port 8765]

serves the three APIs (``/v1/chat/completions``, ``/v1/responses`` and
``/v1/messages``) until Ctrl-C.  Its default model is deterministic: when the request offers a tool
``add`` and the conversation has no tool result yet, it asks for
``add(a=40, b=2)``; once the results are in, it answers with a text quoting
them.  Tests instead give a script of canned answers (status, headers, body,
delay) and read back every request the server saw.

The shapes follow the providers' API references (see
``agentloop/models/openai.py`` and ``agentloop/models/anthropic.py`` for the
pages): a chat completion ``{"id", "object": "chat.completion", "model",
"choices": [{"index", "message", "finish_reason"}], "usage"}``, a message
``{"id", "type": "message", "role": "assistant", "model", "content",
"stop_reason", "stop_sequence", "usage"}``, and their error bodies.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import socket
import sys
import ssl
import threading
import traceback
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from tests.support.loopback_streams import events_for, sse

__all__ = [
    "Canned",
    "Seen",
    "LoopbackServer",
    "openai_reply",
    "openai_error",
    "anthropic_reply",
    "anthropic_error",
    "responses_reply",
    "responses_problem",
    "anthropic_problem",
    "sealed",
    "PromptCache",
]

HOST = "127.0.0.1"  # never any other address


@dataclass(frozen=True)
class Canned:
    """One scripted answer: ``body`` is JSON (a dict) or raw bytes; ``delay`` seconds before answering;
    ``drip`` seconds between single bytes of the body (a server that keeps a request alive).

    Streams: a 200 answer with a JSON body goes as the API's server-sent events
    (:mod:`tests.support.loopback_streams`) when the request asks for a stream, unless ``stream=False``;
    ``events`` sends these raw events instead; ``gap`` seconds pass between two events; ``cut``
    drops the connection after that many events.  ``hangup`` closes the connection after the answer
    without saying so (a server closing an idle keep-alive connection)."""

    body: Union[Dict[str, Any], bytes] = b""
    status: int = 200
    headers: Dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drip: float = 0.0
    stream: Optional[bool] = None
    events: Optional[List[bytes]] = None
    gap: float = 0.0
    cut: Optional[int] = None
    hangup: bool = False
    drop: bool = False


@dataclass(frozen=True)
class Seen:
    """One request the server received: lower-cased headers, the parsed JSON body (``None`` if not JSON)."""

    method: str
    path: str
    headers: Dict[str, str]
    raw: bytes
    body: Any


#: A script entry that answers from the request it is given: a Canned, or a JSON body.
Answer = Callable[[Seen], Union[Canned, Dict[str, Any]]]


def openai_reply(
    text: Optional[str] = None,
    calls: Sequence[Tuple[str, str, str]] = (),
    *,
    usage: Optional[Tuple[int, int]] = (11, 7),
    refusal: Optional[str] = None,
    finish_reason: Optional[str] = None,
    model: str = "gpt-test",
) -> Dict[str, Any]:
    """A chat completion; ``calls`` are ``(id, name, arguments as a JSON string)``."""
    message: Dict[str, Any] = {"role": "assistant", "content": text, "refusal": refusal}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}
            for cid, name, arguments in calls
        ]
    body: Dict[str, Any] = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
            }
        ],
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": usage[0] + usage[1]}
    return body


def openai_error(
    status: int, message: str, kind: str, code: Optional[str] = None, headers: Optional[Dict[str, str]] = None
) -> Canned:
    """An error answer in the Chat Completions shape."""
    return Canned({"error": {"message": message, "type": kind, "param": None, "code": code}}, status, headers or {})


def anthropic_reply(
    text: Optional[str] = None,
    calls: Sequence[Tuple[str, str, Any]] = (),
    *,
    usage: Optional[Dict[str, Any]] = None,
    stop_reason: Optional[str] = None,
    model: str = "claude-test",
    thinking: Optional[str] = None,
    redacted: Optional[str] = None,
) -> Dict[str, Any]:
    """A message; ``calls`` are ``(id, name, input object)``; ``thinking`` puts a thinking block first
    (signed: :func:`sealed`), ``redacted`` a redacted_thinking block after it."""
    content: List[Dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": sealed(thinking)})
    if redacted is not None:
        content.append({"type": "redacted_thinking", "data": redacted})
    if text is not None:
        content.append({"type": "text", "text": text})
    content.extend({"type": "tool_use", "id": cid, "name": name, "input": value} for cid, name, value in calls)
    return {
        "id": "msg_loopback",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if calls else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": 13, "output_tokens": 5} if usage is None else usage,
    }


def sealed(text: str) -> str:
    """The stand-in's "encryption" of reasoning and its thinking signatures: a digest of the text, so
    that a block sent back changed is caught, as the real APIs catch it."""
    return "sealed:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def responses_reply(
    text: Optional[str] = None,
    calls: Sequence[Tuple[str, str, str]] = (),
    *,
    reasoning: Optional[str] = None,
    usage: Optional[Tuple[int, int]] = (11, 7),
    cached: int = 0,
    reasoning_tokens: int = 0,
    refusal: Optional[str] = None,
    status: str = "completed",
    incomplete: Optional[str] = None,
    model: str = "gpt-test",
    serial: int = 1,
) -> Dict[str, Any]:
    """A Responses API ``Response``; ``calls`` are ``(call_id, name, arguments as a JSON string)``;
    ``reasoning``, a summary text, puts a reasoning item first, with an ``encrypted_content``."""
    output: List[Dict[str, Any]] = []
    if reasoning is not None:
        item_id = "rs_loopback_%d" % (serial,)
        output.append(
            {
                "id": item_id,
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": reasoning}],
                "encrypted_content": sealed(item_id + reasoning),
            }
        )
    parts: List[Dict[str, Any]] = []
    if text is not None:
        parts.append({"type": "output_text", "text": text, "annotations": []})
    if refusal is not None:
        parts.append({"type": "refusal", "refusal": refusal})
    if parts:
        output.append(
            {
                "id": "msg_loopback_%d" % (serial,),
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": parts,
            }
        )
    for position, (cid, name, arguments) in enumerate(calls):
        output.append(
            {
                "id": "fc_loopback_%d_%d" % (serial, position),
                "type": "function_call",
                "call_id": cid,
                "name": name,
                "arguments": arguments,
                "status": "completed",
            }
        )
    body: Dict[str, Any] = {
        "id": "resp_loopback_%d" % (serial,),
        "object": "response",
        "created_at": 1700000000,
        "status": status,
        "error": None,
        "incomplete_details": None if incomplete is None else {"reason": incomplete},
        "instructions": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "temperature": 1.0,
        "top_p": 1.0,
    }
    if usage is not None:
        body["usage"] = {
            "input_tokens": usage[0],
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": usage[1],
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": usage[0] + usage[1],
        }
    return body


def responses_problem(body: Any) -> str:
    """What the real Responses API would refuse in a request's ``input`` (``""`` when nothing): a
    reasoning item whose ``encrypted_content`` was changed, or one not followed by the item that followed it."""
    items = body.get("input") if isinstance(body, dict) else None
    for position, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict) or item.get("type") != "reasoning":
            continue
        summary = "".join(part.get("text", "") for part in item.get("summary") or [] if isinstance(part, dict))
        if item.get("encrypted_content") != sealed(str(item.get("id")) + summary):
            return "Could not decrypt the provided encrypted_content. Ensure the value is unmodified."
        following = items[position + 1] if position + 1 < len(items) else {}
        if not isinstance(following, dict) or not str(following.get("id", "")).startswith(("msg_", "fc_")):
            return "Item '%s' of type 'reasoning' was provided without its required following item." % (item.get("id"),)
    return ""


def anthropic_problem(body: Any) -> str:
    """What the real Messages API would refuse (``""`` when nothing): a blank text block, a thinking block whose
    signature does not match its text, or, with thinking enabled, a last assistant turn with tool_use that does not
    start with thinking."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "text" and not str(block.get("text", "")).strip():
                return "messages: text content blocks must contain non-whitespace text"
    assistant = (
        [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
        if isinstance(messages, list)
        else []
    )
    for message in assistant:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if (
                isinstance(block, dict)
                and block.get("type") == "thinking"
                and block.get("signature") != sealed(str(block.get("thinking")))
            ):
                return "messages: Invalid `signature` in `thinking` block"
    thinking = body.get("thinking") if isinstance(body, dict) else None
    if not (isinstance(thinking, dict) and thinking.get("type") == "enabled") or not assistant:
        return ""
    content = assistant[-1].get("content")
    blocks = content if isinstance(content, list) else [{"type": "text"}]
    uses_tools = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks)
    first = blocks[0].get("type") if blocks and isinstance(blocks[0], dict) else None
    if uses_tools and first not in ("thinking", "redacted_thinking"):
        return (
            "messages: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final "
            "`assistant` message must start with a thinking block." % (first,)
        )
    return ""


class PromptCache:
    """The stand-in's prompt cache for the Messages API, after "Prompt caching" (Anthropic docs):
    the prompt is the tools, the system blocks and the messages' content blocks, in that order; a
    ``cache_control`` breakpoint writes the prefix up to it (when it is at least ``minimum`` tokens);
    a request reads the longest cached prefix ending at a breakpoint or at one of the 20 blocks before
    it.  A token is 4 characters of the blocks' compact JSON (without their ``cache_control``).
    :meth:`usage` gives a reply's ``usage`` for a request and writes what its breakpoints cache."""

    LOOKBACK = 20

    def __init__(self, minimum: int = 1024) -> None:
        self.minimum = minimum
        self.cached: Dict[str, int] = {}

    @staticmethod
    def blocks(body: Dict[str, Any]) -> List[Dict[str, Any]]:
        system = body.get("system")
        found: List[Dict[str, Any]] = list(body.get("tools") or [])
        found += [{"type": "text", "text": system}] if isinstance(system, str) else list(system or [])
        for message in body.get("messages") or []:
            content = message.get("content")
            found += [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        return found

    def usage(self, body: Dict[str, Any], output_tokens: int) -> Dict[str, int]:
        blocks = self.blocks(body)
        sizes, digests, total, state = [], [], 0, hashlib.sha256()
        for block in blocks:
            plain = json.dumps(
                {k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True, separators=(",", ":")
            )
            total += len(plain) // 4
            state.update(plain.encode("utf-8"))
            sizes.append(total)
            digests.append(state.hexdigest())
        marks = [i for i, block in enumerate(blocks) if "cache_control" in block]
        read = 0
        for mark in marks:
            for at in range(mark, max(-1, mark - self.LOOKBACK - 1), -1):
                if digests[at] in self.cached:
                    read = max(read, sizes[at])
                    break
        written = 0
        for mark in marks:
            if sizes[mark] >= self.minimum and digests[mark] not in self.cached:
                self.cached[digests[mark]] = sizes[mark]
                written = max(written, sizes[mark] - read)
        return {
            "input_tokens": total - read - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "output_tokens": output_tokens,
        }


def anthropic_error(status: int, kind: str, message: str, headers: Optional[Dict[str, str]] = None) -> Canned:
    """An error answer in the Messages API shape."""
    return Canned({"type": "error", "error": {"type": kind, "message": message}}, status, headers or {})


def _default_answer(path: str, body: Any) -> Dict[str, Any]:
    """The deterministic model: call add(40, 2) when offered, then quote the results."""
    if not isinstance(body, dict):
        return {"error": {"message": "the body is not JSON", "type": "invalid_request_error"}}
    messages = body.get("messages") or []
    tools = body.get("tools") or []
    last = messages[-1] if messages else {}
    if path.endswith("/responses"):
        return _default_responses(body)
    if path.endswith("/chat/completions"):
        names = [t.get("function", {}).get("name") for t in tools]
        results = [m.get("content") for m in messages if m.get("role") == "tool"]
        if results:
            return openai_reply("The tools said: %s." % ("; ".join(str(r) for r in results),))
        if "add" in names:
            return openai_reply("Let me add them.", [("call_add_1", "add", '{"a": 40, "b": 2}')])
        return openai_reply("I have no tool to use.")
    names = [t.get("name") for t in tools]
    content = last.get("content")
    results = [b.get("content") for b in content if b.get("type") == "tool_result"] if isinstance(content, list) else []
    thinks = isinstance(body.get("thinking"), dict) and body["thinking"].get("type") == "enabled"
    if results:
        return anthropic_reply(
            "The tools said: %s." % ("; ".join(str(r) for r in results),),
            thinking="The results are in: quote them." if thinks else None,
        )
    if "add" in names:
        return anthropic_reply(
            "Let me add them.",
            [("toolu_add_1", "add", {"a": 40, "b": 2})],
            thinking="40 and 2: the add tool." if thinks else None,
        )
    return anthropic_reply("I have no tool to use.")


def _default_responses(body: Dict[str, Any]) -> Dict[str, Any]:
    """The deterministic model on the Responses API: it reasons (a reasoning item) before each answer."""
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    names = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    results = [i.get("output") for i in items if i.get("type") == "function_call_output"]
    turn = 1 + sum(1 for i in items if i.get("role") == "assistant" or i.get("type") in ("message", "function_call"))
    if results:
        return responses_reply(
            "The tools said: %s." % ("; ".join(str(r) for r in results),),
            reasoning="Quote the results.",
            reasoning_tokens=3,
            serial=turn,
        )
    if "add" in names:
        return responses_reply(
            None, [("call_add_1", "add", '{"a": 40, "b": 2}')], reasoning="Use add.", reasoning_tokens=4, serial=turn
        )
    return responses_reply("I have no tool to use.", serial=turn)


def _refusal(seen: Seen) -> Optional[Canned]:
    """The 400 the real API answers to a conversation it cannot continue, or ``None``."""
    if seen.path.endswith("/responses"):
        problem = responses_problem(seen.body)
        if problem:
            return Canned(
                {"error": {"message": problem, "type": "invalid_request_error", "param": "input", "code": None}}, 400
            )
    if seen.path.endswith("/messages"):
        problem = anthropic_problem(seen.body)
        if problem:
            return anthropic_error(400, "invalid_request_error", problem)
    return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, owner: "LoopbackServer") -> None:
        self.owner = owner
        super().__init__((HOST, port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet about a connection that ended under a handler (the client left, or :meth:`LoopbackServer.stop`
        shut it): socketserver prints those to ``sys.stderr``, which may by then be a later test's captured
        standard error (a kept-alive connection's thread outlives its test); any other fault goes to the
        process's own standard error."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        traceback.print_exc(file=sys.__stderr__)  # a fault of the stand-in itself: shown, but not as a test's output


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive, as the real APIs
    timeout = 60  # an idle connection's thread ends after this
    disable_nagle_algorithm = True  # the body is not held back behind the headers' unacknowledged segment

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        self.server.owner._opened(self.connection)

    def _stream(self, canned: Canned, events: List[bytes]) -> None:
        """The events as a chunked ``text/event-stream`` body, one chunk each."""
        owner = self.server.owner
        self.send_response(canned.status)
        for name, value in dict(
            {
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "Transfer-Encoding": "chunked",
            },
            **canned.headers,
        ).items():
            self.send_header(name, value)
        self.end_headers()
        for count, event in enumerate(events):
            if canned.cut is not None and count >= canned.cut:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if count and canned.gap and owner.release.wait(canned.gap):
                break
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw.decode("utf-8"))
        except ValueError:
            body = None
        seen = Seen("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, raw, body)
        canned = owner._next(seen)
        if canned.delay:
            owner.release.wait(canned.delay)  # released at stop(), so teardown never waits
        events = canned.events
        streamed = isinstance(body, dict) and body.get("stream") is True and canned.stream is not False
        if events is None and streamed and canned.status == 200 and isinstance(canned.body, dict):
            sent = events_for(self.path, canned.body)
            owner.answers.append((self.path, "events", sent))
            events = [sse(name, data) for name, data in sent]
        elif events is None and canned.status == 200 and isinstance(canned.body, dict):
            owner.answers.append((self.path, "json", canned.body))
        if canned.drop:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if canned.hangup:
            self.close_connection = True  # after this answer, with no Connection: close said
        if events is not None:
            try:
                self._stream(canned, events)
            except OSError:
                self.close_connection = True
            return
        payload = canned.body if isinstance(canned.body, bytes) else json.dumps(canned.body).encode("utf-8")
        try:
            self.send_response(canned.status)
            headers = {"Content-Type": "application/json", "Content-Length": str(len(payload))}
            headers.update(canned.headers)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            if not canned.drip:
                self.wfile.write(payload)
            for at in range(len(payload) if canned.drip else 0):
                self.wfile.write(payload[at : at + 1])
                self.wfile.flush()
                if owner.release.wait(canned.drip):
                    break
        except OSError:  # the client gave up (a timeout test)
            self.close_connection = True


class LoopbackServer:
    """The server, on an ephemeral port of 127.0.0.1 unless ``port`` is given; a context manager."""

    def __init__(
        self,
        script: Sequence[Union[Canned, Dict[str, Any], "Answer"]] = (),
        port: int = 0,
        tls: Optional[Tuple[str, str]] = None,
    ) -> None:
        self.script: List[Union[Canned, Answer]] = [
            c if isinstance(c, Canned) or callable(c) else Canned(c) for c in script
        ]
        self.requests: List[Seen] = []
        self.release = threading.Event()
        self._lock = threading.Lock()
        #: How many TCP connections clients opened to the server.
        self.connections = 0
        #: Each 200 answer with a JSON body sent: ``(path, "json", body)`` or ``(path, "events", [(name, data)])``.
        self.answers: List[Tuple[str, str, Any]] = []
        self._sockets: List[socket.socket] = []
        self._server = _Server(port, self)
        self.scheme = "http"
        if tls is not None:  # (certificate file, key file): HTTPS, for the benchmark of kept connections
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: the Anthropic base URL (without ``/v1``)."""
        return "%s://%s:%d" % (self.scheme, HOST, self.port)

    @property
    def openai_url(self) -> str:
        """The OpenAI base URL (up to and including ``/v1``)."""
        return self.url + "/v1"

    def _next(self, seen: Seen) -> Canned:
        refused = _refusal(seen)  # what the real API refuses, it refuses whatever the script says
        with self._lock:
            self.requests.append(seen)
            if refused is not None:
                return refused
            entry = self.script.pop(0) if self.script else None
        if entry is None:
            return Canned(_default_answer(seen.path, seen.body))
        if isinstance(entry, Canned):
            return entry
        answer = entry(seen)  # an answer that depends on the request
        return answer if isinstance(answer, Canned) else Canned(answer)

    def _opened(self, sock: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            self._sockets.append(sock)

    def start(self) -> "LoopbackServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:  # the kept-alive connections' threads end
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(timeout=5)

    def __enter__(self) -> "LoopbackServer":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tests.support.loopback", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    server = LoopbackServer(port=args.port).start()
    print(
        "loopback model on %s  (OpenAI base URL %s, Anthropic base URL %s); Ctrl-C stops it"
        % (server.url, server.openai_url, server.url),
        flush=True,
    )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
