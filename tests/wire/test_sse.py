"""agentloop.wire.sse against tests/vectors/sse/events.json, split at every byte, and against a naive oracle.

Each vector is fed whole, in two chunks split at every byte offset, one
byte at a time, and in three chunks at every pair of offsets for the short
ones; the events and the parser's state at the end must be the same every
time.  The oracle below reads a whole stream at once, as the WHATWG text
reads (decode, split into lines, process), and random streams from a small
alphabet of the tricky bytes must give the same events incrementally.
"""

from __future__ import annotations

import json
import os
import random
import re
import unittest
from typing import Any, Dict, List, Optional, Sequence, Tuple

from agentloop.errors import WrongTypeError
from agentloop.wire.sse import Event, EventStreamParser, iter_events

VECTORS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "sse", "events.json")
Outcome = Tuple[List[Event], str, Optional[int]]


def load() -> List[Dict[str, Any]]:
    with open(VECTORS, encoding="utf-8") as handle:
        vectors = json.load(handle)["vectors"]
    if len(vectors) < 30:
        raise AssertionError("expected the SSE vectors, found %d" % (len(vectors),))
    return list(vectors)


def raw(vector: Dict[str, Any]) -> bytes:
    return bytes.fromhex(vector["input_hex"]) if "input_hex" in vector else vector["input"].encode("utf-8")


def run(chunks: Sequence[bytes]) -> Outcome:
    parser = EventStreamParser()
    events: List[Event] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    return events, parser.last_event_id, parser.retry


def oracle(data: bytes) -> Outcome:
    """The whole stream at once, written from the specification's prose, not from the module."""
    text = data.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = re.split(r"\r\n|\r|\n", text)[:-1]  # the last piece never ended: discarded
    events: List[Event] = []
    data_buffer, type_buffer, id_buffer, last_id, retry = "", "", "", "", None
    for line in lines:
        if line == "":
            last_id = id_buffer
            if data_buffer == "":
                type_buffer = ""
                continue
            if data_buffer.endswith("\n"):
                data_buffer = data_buffer[:-1]
            events.append(Event(type_buffer or "message", data_buffer, last_id, retry))
            data_buffer, type_buffer = "", ""
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            field, value = line.split(":", 1)
            if value.startswith(" "):
                value = value[1:]
        else:
            field, value = line, ""
        if field == "event":
            type_buffer = value
        elif field == "data":
            data_buffer += value + "\n"
        elif field == "id" and "\x00" not in value:
            id_buffer = value
        elif field == "retry" and value != "" and all(c in "0123456789" for c in value):
            retry = int(value)
    return events, last_id, retry


class TestVectors(unittest.TestCase):
    def expected(self, vector: Dict[str, Any]) -> Outcome:
        events = [Event(e["type"], e["data"], e["id"], e["retry"]) for e in vector["events"]]
        return events, vector["last_event_id"], vector["retry"]

    def test_whole(self) -> None:
        for vector in load():
            with self.subTest(vector["name"]):
                self.assertEqual(run([raw(vector)]), self.expected(vector))

    def test_the_oracle_agrees_with_the_vectors(self) -> None:
        for vector in load():
            with self.subTest(vector["name"]):
                self.assertEqual(oracle(raw(vector)), self.expected(vector))

    def test_split_at_every_byte_offset(self) -> None:
        for vector in load():
            data = raw(vector)
            want = self.expected(vector)
            for cut in range(len(data) + 1):
                with self.subTest(vector["name"], cut=cut):
                    self.assertEqual(run([data[:cut], data[cut:]]), want)
            with self.subTest(vector["name"], bytewise=True):
                self.assertEqual(run([data[i : i + 1] for i in range(len(data))]), want)

    def test_three_chunks_at_every_pair_of_offsets(self) -> None:
        for vector in load():
            data = raw(vector)
            if len(data) > 40:
                continue
            want = self.expected(vector)
            for i in range(len(data) + 1):
                for j in range(i, len(data) + 1):
                    with self.subTest(vector["name"], i=i, j=j):
                        self.assertEqual(run([data[:i], b"", data[i:j], data[j:]]), want)

    def test_iter_events(self) -> None:
        vector = next(v for v in load() if v["name"] == "named events")
        data = raw(vector)
        self.assertEqual(list(iter_events(data[i : i + 3] for i in range(0, len(data), 3))), self.expected(vector)[0])


class TestOracle(unittest.TestCase):
    ALPHABET = [
        b"data",
        b"id",
        b"event",
        b"retry",
        b"x",
        b"7",
        b":",
        b" ",
        b"\r",
        b"\n",
        b"\r\n",
        b"\x00",
        b"\xef\xbb\xbf",
        b"\xc3",
        b"\xa9",
        b"\xff",
        b"foo",
    ]

    def test_random_streams_in_random_chunks(self) -> None:
        rng = random.Random(20)  # fixed: the same streams on every run
        for case in range(1500):
            data = b"".join(rng.choice(self.ALPHABET) for _ in range(rng.randrange(0, 40)))
            cuts = sorted(rng.randrange(0, len(data) + 1) for _ in range(rng.randrange(0, 5)))
            chunks = [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]
            with self.subTest(case=case, data=data, cuts=cuts):
                self.assertEqual(run(chunks), oracle(data))


class TestApi(unittest.TestCase):
    def test_chunks_must_be_bytes(self) -> None:
        with self.assertRaises(WrongTypeError) as caught:
            EventStreamParser().feed("data: x\n\n")  # type: ignore[arg-type]
        self.assertEqual(str(caught.exception), "an event stream chunk must be bytes, got str")
        self.assertEqual(EventStreamParser().feed(bytearray(b"data: x\n\n")), [Event("message", "x")])
        self.assertEqual(EventStreamParser().feed(memoryview(b"data: x\n\n")), [Event("message", "x")])

    def test_a_huge_retry_is_ignored_not_raised(self) -> None:
        parser = EventStreamParser()
        self.assertEqual(parser.feed(b"retry: " + b"9" * 5000 + b"\n\nretry: " + b"0" * 5000 + b"12\n\n"), [])
        self.assertEqual(parser.retry, 12)

    def test_long_lines_in_many_chunks(self) -> None:
        parser = EventStreamParser()
        payload = "é" * 50000
        data = ("data: " + payload + "\r\n\r\n").encode("utf-8")
        events: List[Event] = []
        for i in range(0, len(data), 7):
            events.extend(parser.feed(data[i : i + 7]))
        self.assertEqual(events, [Event("message", payload)])


if __name__ == "__main__":
    unittest.main()
