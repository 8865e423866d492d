"""Streamed answers of the three APIs, rebuilt into the body the same request gets unstreamed.

Each collector takes a stream's server-sent events one at a time
(:meth:`~agentloop.models.http.HttpTransport.post_stream` feeds them) and,
once the API's last event has come, gives back the object the adapter reads
as it reads an unstreamed answer -- so a streamed turn is recorded exactly
as the same reply unstreamed would be.  Text is passed to ``on_text`` as it
arrives (the key redacted: :class:`TextRelay`).  Shapes followed:

* OpenAI Chat Completions ("Streaming", and the SDK's
  ``ChatCompletionChunk``): ``data:`` chunks ``{"choices": [{"index",
  "delta": {"role", "content", "refusal", "tool_calls": [{"index", "id",
  "type", "function": {"name", "arguments"}}]}, "finish_reason"}]}``, the
  pieces of each call's ``arguments`` to be joined; with
  ``stream_options.include_usage`` a last chunk with ``usage`` and no
  choices; then ``data: [DONE]``, the end.
* OpenAI Responses (the SDK's ``ResponseStreamEvent``): typed events
  (``response.created``, ``response.output_item.added``,
  ``response.output_text.delta``, ``response.function_call_arguments.delta``,
  ...), ending with ``response.completed`` (or ``response.incomplete``,
  ``response.failed``), which carries the whole ``Response``; an ``error``
  event is an error.
* Anthropic Messages ("Streaming Messages", the SDK's
  ``RawMessageStreamEvent``): ``message_start`` (the message, its content
  empty, its usage so far), per block ``content_block_start`` /
  ``content_block_delta`` (``text_delta``, ``input_json_delta`` whose
  ``partial_json`` pieces join into the ``tool_use`` input,
  ``thinking_delta``, ``signature_delta``, ``citations_delta``) /
  ``content_block_stop``, ``message_delta`` (``stop_reason``,
  ``stop_sequence``, the final usage counts), ``message_stop``, the end;
  ``ping`` events carry nothing; an ``error`` event is an error.

An event that cannot be read is a :class:`~agentloop.errors.ModelResponseError`
naming it (``$stream[3]: ...``); events after the last one are ignored.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from ..canonical import strict_loads
from ..errors import ModelResponseError
from ..wire.sse import Event
from .http import holds_secret, redact, redact_forms, secret_forms, unescaped_view

__all__ = ["TextRelay", "ChatCollector", "ResponsesCollector", "MessagesCollector"]

OnText = Callable[[str], None]
#: How much more text with escapes a :class:`TextRelay` takes before it looks again at all it holds.
_ESCAPED_PIECE = 256


class TextRelay:
    """``on_text`` with the key kept out.  Every whole occurrence of a secret (as it is or in base64)
    is replaced as text comes in, and the last characters, where one may be still arriving, are held
    back: twice the longest secret's length, counted in the text as it reads once its ``\\u``,
    ``\\x``, ``%`` and ``\\`` escapes are undone (the view :func:`~agentloop.models.http.holds_secret`
    looks at), so that a secret spelled with escapes is seen whole before any of it is passed on.
    Before anything is passed on, the text held is looked at whole: if it holds a secret behind an
    escape, all of it is withheld (``[withheld]``).  :meth:`flush`, at the end of the stream, redacts
    what is held as :func:`~agentloop.models.http.redact` does and passes it on (or withholds it).
    Without secrets, text is passed on at once."""

    def __init__(self, on_text: Optional[OnText], secrets: Iterable[str] = ()) -> None:
        self.on_text = on_text
        self.secrets = tuple(s for s in secrets if s)
        self._hold = 2 * max((len(s) for s in self.secrets), default=0)
        self._forms = secret_forms(self.secrets)
        self._pending = ""
        self._next = 0  # the length the text held must reach before text with escapes is looked at again

    def __call__(self, text: str) -> None:
        if self.on_text is None or not text:
            return
        pending = self._pending = redact_forms(self._pending + text, self._forms)
        if len(pending) <= self._hold:
            return
        if "\\" not in pending and "%" not in pending:
            cut = len(pending) - self._hold
        elif len(pending) < self._next:  # text with escapes is looked at every _ESCAPED_PIECE characters
            return
        elif holds_secret(pending, self.secrets):  # an escaped secret, whole or its first part: none of it shown
            self._pending, self._next = "", 0
            self._withheld()
            return
        else:
            cut = self._escaped_cut(pending)
        if cut > 0:
            self._pass(pending[:cut])
            self._pending = pending[cut:]
        self._next = len(self._pending) + _ESCAPED_PIECE

    def _escaped_cut(self, pending: str) -> int:
        """Where what may be passed on of a text with escapes ends: the held rest reads as at least
        ``_hold`` characters once unescaped."""
        cut, step = len(pending) - self._hold, max(1, self._hold // 4)
        while cut > 0 and len(unescaped_view(pending[cut:])) < self._hold:
            cut -= step
        return cut

    def flush(self) -> None:
        if self._pending:
            self._pass(redact(self._pending, self.secrets))
            self._pending = ""

    def _pass(self, text: str) -> None:
        if holds_secret(text, self.secrets):
            self._withheld()
            return
        assert self.on_text is not None
        self.on_text(text)

    def _withheld(self) -> None:
        assert self.on_text is not None
        self.on_text("[withheld]")


class _Collector:
    """What the three collectors share: the provider and host for errors, the event count, the text relay."""

    def __init__(self, provider: str, host: str, relay: TextRelay) -> None:
        self.provider, self.host, self.relay = provider, host, relay
        self.done = False
        self.count = 0

    def fail(self, reason: str) -> ModelResponseError:
        """The error for this event: ``reason``, which may quote the stream, with the key redacted (or withheld)."""
        secrets = self.relay.secrets
        reason = redact(reason, secrets)
        if holds_secret(reason, secrets):
            reason = "(the reason is withheld: it holds a secret in an escaped form)"
        return ModelResponseError(self.provider, self.host, "$stream[%d]" % (self.count - 1,), reason)

    def data(self, event: Event) -> Dict[str, Any]:
        """The event's data as a JSON object."""
        try:
            value = strict_loads(event.data)  # a repeated member or NaN: refused, as in a whole reply
        except (ValueError, RecursionError):
            quoted = json.dumps(
                redact(event.data, self.relay.secrets)[:200]
            )  # redacted before the cut, which could split a key
            raise self.fail("the event's data is not JSON: %s" % (quoted,)) from None
        if not isinstance(value, dict):
            raise self.fail("the event's data is not a JSON object")
        return value

    def feed(self, event: Event) -> None:
        if self.done:
            return
        self.count += 1
        self.take(event)
        if self.done:
            self.relay.flush()

    def take(self, event: Event) -> None:
        raise NotImplementedError

    def error(self, error: object) -> ModelResponseError:
        """An ``error`` the stream reported, in the words of the API's error object."""
        if isinstance(error, dict):
            kind = "/".join(str(error[k]) for k in ("type", "code") if isinstance(error.get(k), str) and error.get(k))
            message = redact(str(error.get("message", "")), self.relay.secrets)[:500]  # before the cut
            return self.fail("the stream reported an error: %s%s" % (kind + ": " if kind else "", message))
        return self.fail("the stream reported an error")


def _lenient_json(text: str) -> bool:
    """Whether ``text`` is JSON to :func:`json.loads` (which takes repeated members and ``NaN``)."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


#: The Messages API deltas whose pieces add up to a member of their block: delta type -> member.
_APPENDED = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}


def _joined(pieces: Optional[List[str]]) -> Optional[str]:
    return None if pieces is None else "".join(pieces)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


class ChatCollector(_Collector):
    """Chat Completions chunks -> a ``chat.completion`` body (module docstring)."""

    def __init__(self, provider: str, host: str, relay: TextRelay) -> None:
        super().__init__(provider, host, relay)
        # Pieces, joined once at the end (adding each piece to a string would cost the square of its length).
        self.content: Optional[List[str]] = None
        self.refusal: Optional[List[str]] = None
        self.calls: List[Dict[str, Any]] = []
        self.call_pieces: List[Dict[str, List[str]]] = []
        self.finish: Optional[str] = None
        self.usage: Optional[Dict[str, Any]] = None
        self.head: Dict[str, Any] = {}

    def take(self, event: Event) -> None:
        if event.data.strip() == "[DONE]":
            self.done = True
            return
        chunk = self.data(event)
        if "error" in chunk:
            raise self.error(chunk["error"])
        for key in ("id", "model", "created"):
            self.head.setdefault(key, chunk.get(key))
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            raise self.fail("expected a list of choices")
        for choice in choices:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._choice(choice)

    def _choice(self, choice: Dict[str, Any]) -> None:
        if isinstance(choice.get("finish_reason"), str):
            self.finish = choice["finish_reason"]
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return
        if isinstance(delta.get("content"), str):
            self.content = self.content or []
            self.content.append(delta["content"])
            self.relay(delta["content"])
        if isinstance(delta.get("refusal"), str):
            self.refusal = self.refusal or []
            self.refusal.append(delta["refusal"])
        for piece in delta.get("tool_calls") or []:
            self._call(piece)

    def _call(self, piece: object) -> None:
        if (
            not isinstance(piece, dict)
            or isinstance(piece.get("index"), bool)
            or not isinstance(piece.get("index"), int)
        ):
            raise self.fail("a tool_calls delta without an integer index")
        index = piece["index"]
        if not 0 <= index <= len(self.calls):
            raise self.fail("a tool_calls delta for index %d before index %d" % (index, len(self.calls)))
        if index == len(self.calls):
            self.calls.append({"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
            self.call_pieces.append({"name": [], "arguments": []})
        call = self.calls[index]
        if isinstance(piece.get("id"), str):
            call["id"] = piece["id"]
        if isinstance(piece.get("type"), str):
            call["type"] = piece["type"]
        function = piece.get("function")
        if isinstance(function, dict):
            for key in ("name", "arguments"):
                self.call_pieces[index][key].append(_text(function.get(key)))

    def result(self) -> Dict[str, Any]:
        message: Dict[str, Any] = {
            "role": "assistant",
            "content": _joined(self.content),
            "refusal": _joined(self.refusal),
        }
        for call, pieces in zip(self.calls, self.call_pieces):
            call["function"] = {key: "".join(pieces[key]) for key in ("name", "arguments")}
        if self.calls:
            message["tool_calls"] = self.calls
        body: Dict[str, Any] = dict(
            self.head,
            object="chat.completion",
            choices=[{"index": 0, "message": message, "finish_reason": self.finish}],
        )
        if self.usage is not None:
            body["usage"] = self.usage
        return body


class ResponsesCollector(_Collector):
    """Responses API events -> the ``Response`` of its last event (module docstring)."""

    _LAST = ("response.completed", "response.incomplete", "response.failed")

    def __init__(self, provider: str, host: str, relay: TextRelay) -> None:
        super().__init__(provider, host, relay)
        self.response: Dict[str, Any] = {}

    def take(self, event: Event) -> None:
        data = self.data(event)
        kind = data.get("type")
        if kind == "error":  # {"type": "error", "code", "message", "param"}
            raise self.error({"code": data.get("code"), "message": data.get("message")})
        if kind == "response.output_text.delta":
            self.relay(_text(data.get("delta")))
        elif kind in self._LAST:
            response = data.get("response")
            if not isinstance(response, dict):
                raise self.fail("%s without a response object" % (kind,))
            self.response = response
            self.done = True

    def result(self) -> Dict[str, Any]:
        return self.response


class MessagesCollector(_Collector):
    """Messages API events -> a ``message`` body (module docstring)."""

    def __init__(self, provider: str, host: str, relay: TextRelay) -> None:
        super().__init__(provider, host, relay)
        self.message: Dict[str, Any] = {}
        self.blocks: List[Dict[str, Any]] = []
        self.json: Dict[int, List[str]] = {}
        #: The pieces of each block's text, thinking and signature, joined once the block stops (or at the end).
        self.pieces: Dict[Tuple[int, str], List[str]] = {}

    def take(self, event: Event) -> None:
        data = self.data(event)
        kind = data.get("type")
        if kind == "message_start":
            message = data.get("message")
            if not isinstance(message, dict):
                raise self.fail("message_start without a message")
            self.message = dict(message)
        elif kind == "content_block_start":
            self._start(data)
        elif kind == "content_block_delta":
            self._delta(self._block(data), data.get("delta"))
        elif kind == "content_block_stop":
            self._stop(data)
        elif kind == "message_delta":
            self._message_delta(data)
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            raise self.error(data.get("error"))

    def _index(self, data: Dict[str, Any]) -> int:
        index = data.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= len(self.blocks):
            raise self.fail("a content block index that is not the next one: %s" % (json.dumps(index),))
        return index

    def _block(self, data: Dict[str, Any]) -> int:
        index = self._index(data)
        if index == len(self.blocks):
            raise self.fail("a delta for content block %d, which has not started" % (index,))
        return index

    def _start(self, data: Dict[str, Any]) -> None:
        if self._index(data) != len(self.blocks):
            raise self.fail("content block %s started twice" % (data.get("index"),))
        block = data.get("content_block")
        if not isinstance(block, dict):
            raise self.fail("content_block_start without a content_block")
        self.blocks.append(dict(block))
        if block.get("type") == "tool_use":
            self.json[len(self.blocks) - 1] = []

    def _delta(self, index: int, delta: object) -> None:
        if not isinstance(delta, dict):
            raise self.fail("content_block_delta without a delta")
        kind = delta.get("type")
        if kind == "input_json_delta":
            self.json.setdefault(index, []).append(_text(delta.get("partial_json")))
        elif kind == "citations_delta":
            block = self.blocks[index]
            if not isinstance(block.get("citations"), list):
                block["citations"] = []
            block["citations"].append(delta.get("citation"))
        elif kind in _APPENDED:
            key = _APPENDED[kind]
            piece = _text(delta.get(key))
            pieces = self.pieces.get((index, key))
            if pieces is None:
                pieces = self.pieces[(index, key)] = [_text(self.blocks[index].get(key))]
            pieces.append(piece)
            if kind == "text_delta":
                self.relay(piece)

    def _joined(self, index: Optional[int] = None) -> None:
        """Join the pieces of block ``index`` (``None``: of every block) into it."""
        for at, key in [place for place in self.pieces if index is None or place[0] == index]:
            self.blocks[at][key] = "".join(self.pieces.pop((at, key)))

    def _stop(self, data: Dict[str, Any]) -> None:
        index = self._index(data)
        self._joined(index)
        pieces = self.json.pop(index, None)
        if pieces is not None:
            text = "".join(pieces)
            try:
                self.blocks[index]["input"] = strict_loads(text) if text.strip() else {}
            except RecursionError:
                self.blocks[index]["input"] = text  # read as the unstreamed reply's: a call whose input is no object
            except ValueError as exc:
                if not _lenient_json(text):
                    self.blocks[index]["input"] = text
                else:  # a repeated member or NaN: refused, as the same input in a whole reply is
                    raise self.fail("content block %d's input: %s" % (index, exc)) from None

    def _message_delta(self, data: Dict[str, Any]) -> None:
        delta = data.get("delta")
        if isinstance(delta, dict):
            for key in ("stop_reason", "stop_sequence"):
                if key in delta:
                    self.message[key] = delta[key]
        usage = data.get("usage")
        if isinstance(usage, dict):
            merged = dict(self.message.get("usage") or {})
            merged.update({k: v for k, v in usage.items() if v is not None})
            self.message["usage"] = merged

    def result(self) -> Dict[str, Any]:
        self._joined()
        return dict(self.message, content=self.blocks)
