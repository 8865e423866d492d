"""The command line of tlog-proofs and of the log-free witness (agentloop/cli/tlog.py), and a live witness over HTTP."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import io
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from typing import List, Tuple

from agentloop.batch.ledger import check_manifest_checkpoint, make_checkpoint, parse_manifest_checkpoint
from agentloop.cli import main
from agentloop.signing.note import sign_note
from agentloop.signing.keys import ALG_COSIGNATURE_V1, encode_signer_key
from agentloop.tlog.proof import TlogProof
from agentloop.tlog.server import start_server
from agentloop.tlog.witness import Witness, WitnessPolicy
from agentloop.transcript.checkpoint import parse_checkpoint

from tests.tlog.make_vectors import LOG_NAME, WITNESS_NAME, seed
from tests.tlog.support import TIME, log_signer, trusted, vector, vector_path, witness_signer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNSAFE = "--unsafe-pure-python-signer"


class CliCase(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        for name in (
            "run.jsonl",
            "run.checkpoint",
            "run-2.checkpoint",
            "manifest.jsonl",
            "manifest.checkpoint",
            "log.pub",
            "witness.pub",
            "record-1.tlog-proof",
            "add-checkpoint-0.txt",
            "add-checkpoint-2.txt",
        ):
            shutil.copy(vector_path(name), self.path(name))
        self.write(
            "log.key",
            encode_signer_key(LOG_NAME, seed("agentloop tlog vector: log key"), allow_slow_unsafe_signer=True),
        )
        self.write(
            "witness.key",
            encode_signer_key(
                WITNESS_NAME,
                seed("agentloop tlog vector: witness key"),
                ALG_COSIGNATURE_V1,
                allow_slow_unsafe_signer=True,
            ),
        )

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def write(self, name: str, text: str) -> None:
        with open(self.path(name), "w", encoding="utf-8") as handle:
            handle.write(text + "\n")

    def read(self, name: str) -> bytes:
        with open(self.path(name), "rb") as handle:
            return handle.read()

    def cli(self, *argv: str) -> Tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        args = [self.path(a) if os.path.exists(self.path(a)) and not a.startswith("-") else a for a in argv]
        with contextlib.redirect_stderr(err):
            status = main([a.replace("@", self.dir + "/") for a in args], out=out)
        self.assertNotIn("Traceback", err.getvalue())
        return status, out.getvalue(), err.getvalue()


class TestProveBundle(CliCase):
    def test_the_last_record_by_default_and_any_index(self) -> None:
        status, out, _ = self.cli("prove", "run.jsonl", "--bundle", "-o", "@p.tlog-proof")
        self.assertEqual(status, 0)
        self.assertIn("tlog-proof: ", out)
        self.assertEqual(self.read("p.tlog-proof"), vector("record-2.tlog-proof"))  # run.checkpoint is FILE's default
        status, out, _ = self.cli("prove", "run.jsonl", "--bundle", "--index", "0", "--checkpoint", "run.checkpoint")
        self.assertEqual((status, out.encode("utf-8")), (0, vector("record-0.tlog-proof")))

    def test_a_ledger_line(self) -> None:
        status, out, _ = self.cli("prove", "manifest.jsonl", "--bundle", "--run", "b")
        self.assertEqual((status, out.encode("utf-8")), (0, vector("ledger-b.tlog-proof")))
        status, out, _ = self.cli("prove", "manifest.jsonl", "--bundle", "--run", "nobody")
        self.assertEqual(status, 1)
        self.assertIn('no proof: no run named "nobody"', out)

    def test_usage(self) -> None:
        for argv, message in (
            (("prove", "run.jsonl", "--bundle", "--from", "1"), "--from and --size are not taken"),
            (("prove", "run.jsonl", "--bundle", "--run", "a", "--index", "0"), "--index is not taken"),
            (("prove", "run.jsonl", "--index", "0", "--checkpoint", "run.checkpoint"), "are taken with --bundle only"),
            (("prove", "run.jsonl"), "one of the arguments --index --from is required"),
            (("prove", "run.jsonl", "--bundle", "-o", "run.checkpoint"), "is read by this command"),
            (("prove", "run.jsonl", "--bundle", "-o", "run-2.checkpoint"), "already exists"),
        ):
            with self.subTest(argv=argv):
                status, _, err = self.cli(*argv)
                self.assertEqual(status, 2)
                self.assertIn(message, err)

    def test_an_unsigned_or_foreign_checkpoint(self) -> None:
        with open(self.path("bare.checkpoint"), "wb") as handle:
            handle.write(parse_checkpoint(self.read("run.checkpoint")).unsigned().to_bytes())
        status, out, _ = self.cli("prove", "run.jsonl", "--bundle", "--checkpoint", "bare.checkpoint")
        self.assertEqual(status, 1)
        self.assertIn("the checkpoint is not signed", out)
        status, out, _ = self.cli("prove", "run.jsonl", "--bundle", "--checkpoint", "manifest.checkpoint")
        self.assertEqual(status, 1)
        self.assertIn("anchor_malformed", out)


class TestCheckProof(CliCase):
    def test_ok(self) -> None:
        status, out, _ = self.cli(
            "check-proof",
            "record-1.tlog-proof",
            "--trust",
            "log.pub",
            "--trust",
            "witness.pub",
            "--require",
            WITNESS_NAME,
        )
        self.assertEqual(status, 0, out)
        self.assertIn("ok, record 1 (assistant, hash 1189", out)
        self.assertIn("signed by %s; cosigned by %s" % (LOG_NAME, WITNESS_NAME), out)
        line = vector("run.jsonl").split(b"\n")[1] + b"\n"
        with open(self.path("leaf"), "wb") as handle:
            handle.write(line)
        self.assertEqual(self.cli("check-proof", "record-1.tlog-proof", "--trust", "log.pub", "--leaf", "leaf")[0], 0)

    def test_another_logs_entry_is_its_bytes_as_they_are(self) -> None:
        """Go's sumdb records end in a newline: for a log not agentloop's, --leaf is not trimmed."""
        entries = [b"golang.org/x/text v0.3.0 h1:...\ngolang.org/x/text v0.3.0/go.mod h1:...\n", b"second\n"]
        leaves = [hashlib.sha256(b"\x00" + entry).digest() for entry in entries]
        root = hashlib.sha256(b"\x01" + leaves[0] + leaves[1]).digest()
        checkpoint = sign_note("example.com/sumdb\n2\n%s\n" % (base64.b64encode(root).decode(),), log_signer())
        with open(self.path("sumdb.tlog-proof"), "wb") as handle:
            handle.write(TlogProof(0, (leaves[1],), checkpoint).to_bytes())
        with open(self.path("entry"), "wb") as handle:
            handle.write(entries[0])
        argv = ("check-proof", "sumdb.tlog-proof", "--trust", "log.pub", "--origin", "example.com/sumdb", "--leaf")
        status, out, _ = self.cli(*argv, "entry")
        self.assertEqual(status, 0, out)
        self.assertIn("ok, entry 0 is entry 0 of the 2 of 'example.com/sumdb'", out)
        with open(self.path("entry"), "wb") as handle:
            handle.write(entries[0][:-1])
        self.assertEqual(self.cli(*argv, "entry")[0], 1)

    def test_failures_exit_1_naming_what_failed(self) -> None:
        origin = parse_checkpoint(self.read("run.checkpoint")).origin
        for argv, message in (
            (("--trust", "witness.pub"), "bad_signature: no trusted log key signed the checkpoint"),
            (("--trust", "log.pub", "--origin", "example.com/log"), "is not the one accepted"),
            (("--trust", "log.pub", "--leaf", "log.pub"), "extra data is not the entry given"),
        ):
            with self.subTest(argv=argv):
                status, out, _ = self.cli("check-proof", "record-1.tlog-proof", *argv)
                self.assertEqual(status, 1)
                self.assertIn(": FAILED: ", out)
                self.assertIn(message, out)
        self.assertEqual(self.cli("check-proof", "record-1.tlog-proof", "--trust", "log.pub", "--origin", origin)[0], 0)
        data = bytearray(self.read("record-1.tlog-proof"))
        data[data.index(b"index 1") + 6] = ord("0")
        with open(self.path("changed.tlog-proof"), "wb") as handle:
            handle.write(bytes(data))
        status, out, _ = self.cli("check-proof", "changed.tlog-proof", "--trust", "log.pub")
        self.assertEqual(status, 1)
        self.assertIn("FAILED: the inclusion proof of entry 0 does not reach the checkpoint's root", out)

    def test_usage(self) -> None:
        for argv, message in (
            ((), "a tlog-proof is checked against the log's keys"),
            (("--trust", "log.pub", "--checkpoint", "run.checkpoint"), "carries its checkpoint"),
            (("--trust", "log.pub", "--require", "nobody"), "no --trust key is named 'nobody'"),
        ):
            with self.subTest(argv=argv):
                status, _, err = self.cli("check-proof", "record-1.tlog-proof", *argv)
                self.assertEqual(status, 2)
                self.assertIn(message, err)
        status, _, err = self.cli("check-proof", "run.checkpoint", "--origin", "x")
        self.assertEqual(status, 2)
        self.assertIn("--origin/--leaf: are taken with a tlog-proof", err)
        status, _, err = self.cli("check-proof", "run.checkpoint")
        self.assertEqual(status, 2)
        self.assertIn("the argument --checkpoint is required", err)
        status, out, err = self.cli("check-proof", "@missing.tlog-proof", "--trust", "log.pub")  # not a usage error
        self.assertEqual((status, err), (1, ""))
        missing = self.path("missing.tlog-proof")
        self.assertEqual(out, "%s: FAILED: cannot read %s: No such file or directory\n" % (missing, missing))


class TestCosignRequest(CliCase):
    def witness(self, request: str, *more: str) -> Tuple[int, str, str]:
        return self.cli(
            "cosign",
            "--request",
            request,
            "--key",
            "witness.key",
            "--trust",
            "log.pub",
            "--state",
            "@w.state",
            "--time",
            str(TIME),
            UNSAFE,
            *more,
        )

    def test_from_the_request_alone(self) -> None:
        status, out, _ = self.witness("add-checkpoint-0.txt", "-o", "@first.checkpoint")
        self.assertEqual(status, 0, out)
        self.assertIn("cosigned 2 entries", out)
        status, out, _ = self.witness("add-checkpoint-0.txt")
        self.assertEqual(status, 1)
        self.assertIn("FAILED: 409: the old size is 0, the witness holds 2 for this log", out)
        status, out, _ = self.witness("add-checkpoint-2.txt")
        self.assertEqual(status, 0)
        self.assertEqual(out.encode("utf-8"), self.read("run.checkpoint"))  # the vector: log and witness, at TIME
        status, out, _ = self.cli(
            "verify",
            "run.jsonl",
            "--checkpoint",
            "first.checkpoint",
            "--trust",
            "log.pub",
            "--trust",
            "witness.pub",
            "--require",
            WITNESS_NAME,
        )
        self.assertEqual(status, 0, out)

    def test_one_state_file_for_both_witnesses(self) -> None:
        """cosign --transcript and cosign --request read and write the same state file."""
        lines = self.read("run.jsonl").split(b"\n")
        with open(self.path("log.jsonl"), "wb") as handle:
            handle.write(lines[0] + b"\n" + lines[1] + b"\n")
        plain = ("--key", "witness.key", "--trust", "log.pub", "--state", "@w.state", "--time", str(TIME), UNSAFE)
        status, out, _ = self.cli(
            "cosign", "run-2.checkpoint", "--transcript", "log.jsonl", "-o", "@a.checkpoint", *plain
        )
        self.assertEqual(status, 0, out)
        status, out, _ = self.witness("add-checkpoint-2.txt", "-o", "@b.checkpoint")  # from 2 to 3, no transcript
        self.assertEqual(status, 0, out)
        with open(self.path("log.jsonl"), "ab") as handle:
            handle.write(lines[2] + b"\n")
        status, out, _ = self.cli(
            "cosign", "run.checkpoint", "--transcript", "log.jsonl", "-o", "@c.checkpoint", *plain
        )
        self.assertEqual(status, 0, out)
        self.assertIn("consistent with the 3 records cosigned before", out)
        status, out, _ = self.witness("add-checkpoint-0.txt")
        self.assertIn("409: the old size is 0, the witness holds 3", out)

    def test_a_version_1_state_file_moves_to_version_2(self) -> None:
        checkpoint = parse_checkpoint(self.read("run-2.checkpoint"))
        entry = {"size": 2, "root": checkpoint.root, "head": checkpoint.head}
        self.write(
            "w.state",
            json.dumps(
                {
                    "format": "agentloop-witness-state/1",
                    "logs": {checkpoint.origin: entry, "agentloop/1/" + "a" * 64: entry},
                }
            ),
        )
        status, out, _ = self.witness("add-checkpoint-2.txt", "-o", "@b.checkpoint")
        self.assertEqual(status, 0, out)
        with open(self.path("w.state"), encoding="utf-8") as handle:
            state = json.load(handle)
        self.assertEqual(state["format"], "agentloop-witness-state/2")
        self.assertEqual(
            state["logs"]["agentloop/1/" + "a" * 64], dict(entry, checkpoint=None)
        )  # untouched, kept whole
        self.assertEqual(state["logs"][checkpoint.origin]["size"], 3)

    def test_usage(self) -> None:
        for argv, message in (
            (
                ("cosign", "--request", "add-checkpoint-0.txt", "--key", "witness.key", "--trust", "log.pub", UNSAFE),
                "--state",
            ),
            (
                ("cosign", "--request", "add-checkpoint-0.txt", "--key", "witness.key", "--state", "@s", UNSAFE),
                "--trust",
            ),
            (
                (
                    "cosign",
                    "--request",
                    "add-checkpoint-0.txt",
                    "--key",
                    "witness.key",
                    "--trust",
                    "witness.pub",
                    "--state",
                    "@s",
                    UNSAFE,
                ),
                "is a witness key",
            ),
            (
                (
                    "cosign",
                    "--request",
                    "add-checkpoint-0.txt",
                    "--key",
                    "log.key",
                    "--trust",
                    "log.pub",
                    "--state",
                    "@s",
                    UNSAFE,
                ),
                "is not a witness key",
            ),
            (
                (
                    "cosign",
                    "run.checkpoint",
                    "--request",
                    "add-checkpoint-0.txt",
                    "--key",
                    "witness.key",
                    "--trust",
                    "log.pub",
                    "--state",
                    "@s",
                    UNSAFE,
                ),
                "CKPT and --transcript are not taken",
            ),
            (("cosign", "run.checkpoint", "--key", "witness.key", "--trust", "log.pub", UNSAFE), "both are needed"),
            (
                ("cosign", "run.checkpoint", "--origin", "x", "--key", "witness.key", "--trust", "log.pub", UNSAFE),
                "--origin: is taken with --request only",
            ),
        ):
            with self.subTest(argv=argv):
                status, _, err = self.cli(*argv)
                self.assertEqual(status, 2, err)
                self.assertIn(message, err)


class TestServer(unittest.TestCase):
    """The HTTP side, in process: status codes, content types, methods."""

    def setUp(self) -> None:
        self.lines: List[str] = []
        witness = Witness(witness_signer(), WitnessPolicy(tuple(trusted()[:1])), None, clock=lambda: TIME)
        self.server, thread = start_server(witness, "127.0.0.1", 0, "/w", self.lines.append)
        self.addCleanup(thread.join, 5)
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.host, self.port = "127.0.0.1", self.server.server_address[1]

    def request(
        self, method: str, path: str, body: bytes = b"", headers: Tuple[Tuple[str, str], ...] = ()
    ) -> Tuple[int, str, bytes]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            connection.putrequest(method, path)
            for name, value in headers or (("Content-Length", str(len(body))),):
                connection.putheader(name, value)
            connection.endheaders(body or None)
            response = connection.getresponse()
            return response.status, response.getheader("Content-Type") or "", response.read()
        finally:
            connection.close()

    def test_add_checkpoint_over_http(self) -> None:
        self.assertEqual(self.server.url, "http://127.0.0.1:%d/w" % (self.port,))
        status, kind, body = self.request("POST", "/w/add-checkpoint", vector("add-checkpoint-0.txt"))
        self.assertEqual((status, body), (200, vector("add-checkpoint-0.response")))
        status, kind, body = self.request("POST", "/w/add-checkpoint", vector("add-checkpoint-0.txt"))
        self.assertEqual((status, kind, body), (409, "text/x.tlog.size", b"2\n"))
        origin = parse_checkpoint(vector("run-2.checkpoint")).origin
        status, _, body = self.request("GET", "/w/%s/checkpoint" % (hashlib.sha256(origin.encode()).hexdigest(),))
        self.assertEqual(status, 200)
        self.assertTrue(body.endswith(vector("add-checkpoint-0.response")))
        self.assertEqual(self.request("GET", "/w/%s/checkpoint" % ("0" * 64,))[0], 404)
        self.assertTrue(any(" 409 " in line for line in self.lines), self.lines)

    def test_what_is_not_add_checkpoint(self) -> None:
        self.assertEqual(self.request("GET", "/w/add-checkpoint")[0], 405)
        self.assertEqual(self.request("PUT", "/w/add-checkpoint")[0], 405)
        self.assertEqual(self.request("POST", "/add-checkpoint", b"x")[0], 404)
        self.assertEqual(self.request("POST", "/w/add-checkpoint", headers=(("Transfer-Encoding", "chunked"),))[0], 411)
        self.assertEqual(self.request("POST", "/w/add-checkpoint", headers=(("Content-Length", "99999999"),))[0], 413)
        self.assertEqual(self.request("POST", "/w/add-checkpoint", b"old 0\n")[0], 400)
        self.assertEqual(
            self.request("POST", "/w/add-checkpoint", headers=(("Content-Length", "-1"),))[:2],
            (400, "text/plain; charset=utf-8"),
        )


class TestSlowAndRudeClients(unittest.TestCase):
    """A client that trickles its request, many that hold connections, one that resets: none holds the witness."""

    def serve(self, timeout: float, connections: int) -> int:
        self.lines: List[str] = []
        witness = Witness(witness_signer(), WitnessPolicy(tuple(trusted()[:1])), None, clock=lambda: TIME)
        server, thread = start_server(witness, "127.0.0.1", 0, "", self.lines.append, timeout, connections)
        self.addCleanup(thread.join, 5)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return int(server.server_address[1])

    def connect(self, port: int) -> socket.socket:
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.addCleanup(conn.close)
        return conn

    def test_a_trickled_request_is_cut_off_after_the_request_time(self) -> None:
        port = self.serve(timeout=1.0, connections=8)
        conn = self.connect(port)
        body = vector("add-checkpoint-0.txt")
        conn.sendall(b"POST /add-checkpoint HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (len(body),))
        start = time.monotonic()
        closed = False
        for byte in body[:40]:  # a byte every 0.2 s: never idle for the socket's timeout, slower than any request
            try:
                conn.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.2)
            if time.monotonic() - start > 6:
                break
        if not closed:
            conn.settimeout(5)
            try:
                closed = conn.recv(100) == b""
            except socket.timeout:
                closed = False
            except OSError:  # reset
                closed = True
        self.assertTrue(closed, "the trickling client still holds its connection")
        self.assertLess(time.monotonic() - start, 6)

    def test_at_most_so_many_connections_are_served_at_once(self) -> None:
        port = self.serve(timeout=30.0, connections=2)
        held = [self.connect(port) for _ in range(2)]
        time.sleep(0.3)  # both are being served (waiting for their request line)
        third = self.connect(port)
        third.settimeout(5)
        self.assertEqual(third.recv(100), b"")  # closed unread
        self.assertTrue(any("refused: 2 connections are open" in line for line in self.lines), self.lines)
        for conn in held:
            conn.close()
        time.sleep(0.3)
        status = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        self.addCleanup(status.close)
        status.request("GET", "/%s/checkpoint" % ("0" * 64,))
        self.assertEqual(status.getresponse().status, 404)  # the slots are free again

    def test_a_client_that_resets_the_connection_is_one_line_not_a_traceback(self) -> None:
        port = self.serve(timeout=30.0, connections=8)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            for _ in range(3):
                conn = socket.create_connection(("127.0.0.1", port), timeout=10)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.sendall(b"GET /%s/checkpoint HTTP/1.1\r\n\r\n" % (b"0" * 64,) * 500)
                conn.close()  # reset, with 499 answers still to write
            time.sleep(1)
        self.assertEqual(err.getvalue(), "")
        self.assertTrue(any("connection failed: " in line for line in self.lines), self.lines)


class TestWitnessRequestFromASize(CliCase):
    def test_the_size_a_witness_holds(self) -> None:
        status, out, _ = self.cli("witness-request", "2", "run.checkpoint", "--transcript", "run.jsonl")
        self.assertEqual(status, 0)
        body = vector("add-checkpoint-2.txt")
        self.assertEqual(
            out.encode("utf-8").split(b"\n\n")[0], body.split(b"\n\n")[0]
        )  # the same proof as from run-2.checkpoint
        for old, message in (("4", "fewer than the 4 given: a rollback"), ("1", "")):
            status, out, _ = self.cli("witness-request", old, "run.checkpoint", "--transcript", "run.jsonl")
            self.assertEqual(status, 1 if message else 0, out)
            self.assertIn(message, out)
        status, out, _ = self.cli("witness-request", "2", "run.checkpoint", "--transcript", "manifest.jsonl")
        self.assertEqual(status, 1)
        status, _, err = self.cli("witness-request", "2", "run.checkpoint")
        self.assertEqual(status, 2)
        self.assertIn("--transcript: is needed to compute the consistency proof from size 2", err)


class TestWitnessRequestForALedger(CliCase):
    """witness-request of a batch ledger's checkpoint, its proof from --ledger, cosigned by cosign --request."""

    def setUp(self) -> None:
        super().setUp()
        ledger = self.read("manifest.jsonl")
        self.new = parse_manifest_checkpoint(self.read("manifest.checkpoint"))
        two = b"".join(ledger.splitlines(keepends=True)[:2])
        old = make_checkpoint(self.new.origin, two, signers=[log_signer()])
        with open(self.path("old.checkpoint"), "wb") as handle:
            handle.write(old.to_bytes())
        # RFC 9162 section 2.1.4.1 by hand for 2 -> 3: the proof is [leaf 2],
        # and the new root is SHA-256(0x01 || MTH(D[0:2]) || leaf 2)
        self.leaf2 = hashlib.sha256(b"\x00" + ledger.splitlines()[2]).digest()
        self.assertEqual(hashlib.sha256(b"\x01" + bytes.fromhex(old.root) + self.leaf2).hexdigest(), self.new.root)

    def witness(self, request: str) -> Tuple[int, str, str]:
        argv = ("--key", "witness.key", "--trust", "log.pub", "--state", "@w.state", "--time", str(TIME), UNSAFE)
        return self.cli("cosign", "--request", request, *argv, "-o", "@" + request + ".cosigned")

    def request(self, name: str, *argv: str) -> str:
        status, out, err = self.cli("witness-request", *argv)
        self.assertEqual((status, err), (0, ""), out)
        with open(self.path(name), "w", encoding="utf-8") as handle:
            handle.write(out)
        return out

    def test_from_nothing_then_from_the_checkpoint_the_witness_holds(self) -> None:
        body = self.request("r0.txt", "0", "old.checkpoint")
        self.assertEqual(body.encode("utf-8"), b"old 0\n\n" + self.read("old.checkpoint"))
        status, out, _ = self.witness("r0.txt")
        self.assertEqual(status, 0, out)
        self.assertIn("cosigned 2 entries of '%s'" % (self.new.origin,), out)
        body = self.request("r2.txt", "old.checkpoint", "manifest.checkpoint", "--ledger", "manifest.jsonl")
        expected = b"old 2\n" + base64.b64encode(self.leaf2) + b"\n\n" + self.read("manifest.checkpoint")
        self.assertEqual(body.encode("utf-8"), expected)
        self.assertEqual(self.request("r2s.txt", "2", "manifest.checkpoint", "--ledger", "manifest.jsonl"), body)
        status, out, _ = self.witness("r2.txt")
        self.assertEqual(status, 0, out)
        self.assertIn("cosigned 3 entries of '%s'" % (self.new.origin,), out)
        cosigned = parse_manifest_checkpoint(self.read("r2.txt.cosigned"))
        check_manifest_checkpoint(
            cosigned, self.read("manifest.jsonl"), verifiers=trusted(), require=[LOG_NAME, WITNESS_NAME]
        )

    def test_refusals(self) -> None:
        ledger = self.read("manifest.jsonl")
        with open(self.path("changed.jsonl"), "wb") as handle:
            handle.write(ledger[:30] + bytes([ledger[30] ^ 1]) + ledger[31:])
        with open(self.path("unsigned.checkpoint"), "wb") as handle:
            handle.write(self.new.text().encode("ascii") + b"\n")
        two = b"".join(ledger.splitlines(keepends=True)[:2])
        with open(self.path("short.jsonl"), "wb") as handle:
            handle.write(two)
        with open(self.path("other.checkpoint"), "wb") as handle:  # another batch's ledger of the same two lines
            handle.write(make_checkpoint("agentloop-manifest/1/" + "0" * 64, two, signers=[log_signer()]).to_bytes())
        faults = (
            (("2", "manifest.checkpoint", "--ledger", "changed.jsonl"), "do not give it: the checkpoint's root"),
            (("4", "manifest.checkpoint", "--ledger", "manifest.jsonl"), "fewer than the 4 of OLD: a rollback"),
            (("manifest.checkpoint", "old.checkpoint", "--ledger", "manifest.jsonl"), "a rollback"),
            (
                ("1", "manifest.checkpoint", "--ledger", "short.jsonl"),
                "short.jsonl has 2 lines, fewer than the checkpoint's 3",
            ),
            (("run-2.checkpoint", "manifest.checkpoint", "--ledger", "manifest.jsonl"), "anchor_malformed: "),
            (("other.checkpoint", "manifest.checkpoint", "--ledger", "manifest.jsonl"), "name different batches"),
        )
        for argv, words in faults:
            with self.subTest(argv=argv):
                status, out, err = self.cli("witness-request", *argv)
                self.assertEqual((status, err), (1, ""), out)
                self.assertIn(words, out)
        usage = (
            (("2", "manifest.checkpoint"), "--ledger: is needed to compute the consistency proof"),
            (("2", "manifest.checkpoint", "--transcript", "run.jsonl"), "--transcript: NEW is a batch ledger's"),
            (("2", "run.checkpoint", "--ledger", "manifest.jsonl"), "--ledger: is for a batch ledger's checkpoint"),
            (("0", "unsigned.checkpoint"), "is not signed: a witness verifies the log's signature"),
        )
        for argv, words in usage:
            with self.subTest(argv=argv):
                status, out, err = self.cli("witness-request", *argv)
                self.assertEqual((status, out), (2, ""))
                self.assertIn(words, err)


class TestServeAndSubmitInProcess(CliCase):
    def test_serve_until_sigterm(self) -> None:
        out = io.StringIO()
        said: List[str] = []

        def client() -> None:
            for _ in range(200):
                if "add-checkpoint" in out.getvalue():
                    break
                time.sleep(0.05)
            url = out.getvalue().split("POST ", 1)[1].split(" ", 1)[0]
            said.append(url)
            status, text, _ = self.cli("witness", "submit", url, "add-checkpoint-0.txt", "--trust", "witness.pub")
            said.append("%d %s" % (status, text))
            os.kill(os.getpid(), signal.SIGTERM)

        thread = threading.Thread(target=client)
        thread.start()
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(
                [
                    "witness",
                    "serve",
                    "--key",
                    self.path("witness.key"),
                    "--trust",
                    self.path("log.pub"),
                    "--state",
                    self.path("w.state"),
                    "--port",
                    "0",
                    "--prefix",
                    "/w/",
                    UNSAFE,
                ],
                out=out,
            )
        thread.join(30)
        self.assertEqual(status, 0, err.getvalue())
        self.assertTrue(said[0].endswith("/w/add-checkpoint"), said)
        self.assertTrue(said[1].startswith("0 agentloop/1/"), said)  # the cosigned checkpoint, on stdout
        self.assertIn("\u2014 witness.example/w1 ", said[1])
        self.assertIn("stopped", out.getvalue())
        self.assertNotEqual(signal.getsignal(signal.SIGTERM), signal.SIG_IGN)

    def test_serve_usage(self) -> None:
        status, _, err = self.cli(
            "witness", "serve", "--key", "witness.key", "--trust", "log.pub", "--state", "@s", "--prefix", "w", UNSAFE
        )
        self.assertEqual(status, 2)
        self.assertIn("--prefix: must start with /", err)
        for port in ("65536", "99999", "-1", "x"):
            with self.subTest(port=port):
                status, _, err = self.cli(
                    "witness",
                    "serve",
                    "--key",
                    "witness.key",
                    "--trust",
                    "log.pub",
                    "--state",
                    "@s",
                    "--port",
                    port,
                    UNSAFE,
                )
                self.assertEqual(status, 2, err)
                self.assertIn("must be a TCP port, 0 to 65535", err)

    def test_submit_refusals(self) -> None:
        other = witness_signer()
        renamed = Witness(other, WitnessPolicy(tuple(trusted()[:1]), ("example.com/log",)), None, clock=lambda: TIME)
        server, thread = start_server(renamed, "127.0.0.1", 0)
        self.addCleanup(thread.join, 5)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        url = server.url + "/add-checkpoint"
        status, out, _ = self.cli("witness", "submit", url, "add-checkpoint-0.txt", "--trust", "witness.pub")
        self.assertEqual(status, 1)
        self.assertIn("FAILED: 404: unknown log origin", out)
        with open(self.path("bad.txt"), "wb") as handle:
            handle.write(b"old 3\n\n" + self.read("run-2.checkpoint"))
        status, out, _ = self.cli("witness", "submit", url, "bad.txt", "--trust", "witness.pub")
        self.assertEqual(status, 1)
        self.assertIn("FAILED: witness request line 1", out)
        good = Witness(witness_signer(), WitnessPolicy(tuple(trusted()[:1])), None, clock=lambda: TIME)
        server2, thread2 = start_server(good, "127.0.0.1", 0)
        self.addCleanup(thread2.join, 5)
        self.addCleanup(server2.server_close)
        self.addCleanup(server2.shutdown)
        status, out, _ = self.cli(
            "witness", "submit", server2.url + "/add-checkpoint", "add-checkpoint-0.txt", "--trust", "log.pub"
        )  # the log's key is no witness's: its cosignature is unknown
        self.assertEqual(status, 1)
        self.assertIn("bad_signature: the witness's cosignature", out)


class TestLiveWitness(CliCase):
    """A log witnessed over HTTP by a witness process that never saw its transcript."""

    def start_witness(self) -> Tuple["subprocess.Popen[str]", str]:
        folder = tempfile.mkdtemp()  # the witness's own folder: its key, the log's public key, its state; no transcript
        self.addCleanup(shutil.rmtree, folder)
        for name in ("witness.key", "log.pub"):
            shutil.copy(self.path(name), os.path.join(folder, name))
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agentloop",
                "witness",
                "serve",
                "--key",
                "witness.key",
                "--trust",
                "log.pub",
                "--state",
                "w.state",
                "--port",
                "0",
                UNSAFE,
            ],
            cwd=folder,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
        )
        self.addCleanup(self.stop, proc)
        line = proc.stdout.readline() if proc.stdout is not None else ""
        self.assertIn("/add-checkpoint (state w.state", line)
        url = line.split("POST ", 1)[1].split(" ", 1)[0]
        return proc, url

    @staticmethod
    def stop(proc: "subprocess.Popen[str]") -> None:
        if proc.poll() is None:
            proc.terminate()
        proc.communicate(timeout=30)

    def test_a_log_witnessed_over_http(self) -> None:
        proc, url = self.start_witness()
        lines = self.read("run.jsonl").split(b"\n")
        with open(self.path("log.jsonl"), "wb") as handle:  # the log: a transcript that grows
            handle.write(lines[0] + b"\n" + lines[1] + b"\n")
        sign = ("--sign", "log.key", UNSAFE)
        self.assertEqual(self.cli("checkpoint", "log.jsonl", "-o", "@old.checkpoint", *sign)[0], 0)
        status, out, _ = self.cli("witness-request", "0", "old.checkpoint")
        self.write("req0", out.rstrip("\n"))
        status, out, err = self.cli("witness", "submit", url, "req0", "--trust", "witness.pub", "-o", "@old.cosigned")
        self.assertEqual(status, 0, out + err)
        self.assertIn("cosigned by %s" % (WITNESS_NAME,), out)
        with open(self.path("log.jsonl"), "ab") as handle:
            handle.write(lines[2] + b"\n")
        self.assertEqual(self.cli("checkpoint", "log.jsonl", "-o", "@new.checkpoint", *sign)[0], 0)
        status, out, _ = self.cli("witness-request", "old.checkpoint", "new.checkpoint", "--transcript", "log.jsonl")
        self.write("req3", out.rstrip("\n"))
        status, out, err = self.cli("witness", "submit", url, "req3", "--trust", "witness.pub", "-o", "@new.cosigned")
        self.assertEqual(status, 0, out + err)
        # the cosigned checkpoint verifies against the transcript, the log key and the witness key
        status, out, _ = self.cli(
            "verify",
            "log.jsonl",
            "--checkpoint",
            "new.cosigned",
            "--trust",
            "log.pub",
            "--trust",
            "witness.pub",
            "--require",
            WITNESS_NAME,
            "--require",
            LOG_NAME,
        )
        self.assertEqual(status, 0, out)
        # and makes a tlog-proof others check with the two public keys alone
        self.assertEqual(
            self.cli("prove", "log.jsonl", "--bundle", "--checkpoint", "new.cosigned", "-o", "@p.tlog-proof")[0], 0
        )
        status, out, _ = self.cli(
            "check-proof", "p.tlog-proof", "--trust", "log.pub", "--trust", "witness.pub", "--require", WITNESS_NAME
        )
        self.assertEqual(status, 0, out)
        # a replay of the old request is a rollback: 409, and the witness says the size it holds
        status, out, _ = self.cli("witness", "submit", url, "req0", "--trust", "witness.pub")
        self.assertEqual(status, 1)
        self.assertIn("FAILED: 409: the witness holds size 3 for this log", out)
        # the log answers from the size the witness holds, with no old checkpoint at hand
        status, out, _ = self.cli("witness-request", "3", "new.checkpoint", "--transcript", "log.jsonl")
        self.assertEqual(status, 0)
        self.write("req3b", out.rstrip("\n"))
        self.assertEqual(self.cli("witness", "submit", url, "req3b", "--trust", "witness.pub")[0], 0)
        proc.terminate()
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn("stopped", out)
        self.assertIn(" 409 the old size is 0, the witness holds 3", err)

    def test_submit_failures(self) -> None:
        status, out, _ = self.cli(
            "witness", "submit", "http://127.0.0.1:9/add-checkpoint", "add-checkpoint-0.txt", "--trust", "witness.pub"
        )
        self.assertEqual(status, 1)
        self.assertIn("the witness cannot be reached", out)
        status, _, err = self.cli(
            "witness", "submit", "ftp://x/add-checkpoint", "add-checkpoint-0.txt", "--trust", "witness.pub"
        )
        self.assertEqual(status, 2)
        self.assertIn("must be an http:// or https:// URL", err)

    def test_a_witness_that_does_not_answer_in_http(self) -> None:
        """A bad status line, a header over http.client's limit: one FAILED line, exit 1 (it was exit 70)."""
        for answer, words in (
            (b"GARBAGE\r\n\r\n", "the witness's answer is not HTTP (BadStatusLine: "),
            (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70000 + b"\r\n\r\n", "the witness's answer is not HTTP (LineTooLong"),
        ):
            listener = socket.socket()
            self.addCleanup(listener.close)
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)

            def answer_once(listener: socket.socket = listener, answer: bytes = answer) -> None:
                conn, _ = listener.accept()
                with conn:
                    conn.recv(1 << 16)
                    conn.sendall(answer)

            thread = threading.Thread(target=answer_once, daemon=True)
            thread.start()
            url = "http://127.0.0.1:%d/add-checkpoint" % (listener.getsockname()[1],)
            status, out, err = self.cli("witness", "submit", url, "add-checkpoint-0.txt", "--trust", "witness.pub")
            thread.join(10)
            self.assertEqual((status, err), (1, ""))
            self.assertIn("add-checkpoint-0.txt: FAILED: " + words, out)
            self.assertEqual(out.count("\n"), 1)


if __name__ == "__main__":
    unittest.main()


class TestOutputsNeverReplaceInputs(CliCase):
    """``-o X --overwrite`` may replace a file, never the transcript, checkpoint, request or state a command reads."""

    def test_each_command_refuses_its_own_inputs_even_with_overwrite(self) -> None:
        shutil.copy(self.path("add-checkpoint-0.txt"), self.path("r.txt"))
        shutil.copy(self.path("run.checkpoint"), self.path("c.checkpoint"))
        witness = ("--key", "witness.key", "--trust", "log.pub", "--time", str(TIME), UNSAFE, "--overwrite")
        with open(self.path("w.state"), "w", encoding="utf-8") as handle:
            handle.write('{"format": "agentloop-witness-state/2", "logs": {}}\n')
        cases = (
            ("prove", "run.jsonl", "--bundle", "-o", "run.jsonl", "--overwrite"),
            ("prove", "run.jsonl", "--bundle", "--checkpoint", "c.checkpoint", "-o", "c.checkpoint", "--overwrite"),
            ("cosign", "--request", "r.txt", "--state", "w.state", "-o", "r.txt", *witness),
            ("cosign", "--request", "r.txt", "--state", "w.state", "-o", "w.state", *witness),
            ("cosign", "c.checkpoint", "--transcript", "run.jsonl", "--state", "w.state", "-o", "run.jsonl", *witness),
            ("cosign", "c.checkpoint", "--transcript", "run.jsonl", "--state", "w.state", "-o", "w.state", *witness),
            (
                "witness",
                "submit",
                "http://127.0.0.1:9/add-checkpoint",
                "r.txt",
                "--trust",
                "witness.pub",
                "-o",
                "r.txt",
                "--overwrite",
            ),
        )
        before = {name: self.read(name) for name in ("run.jsonl", "c.checkpoint", "r.txt", "w.state")}
        for argv in cases:
            with self.subTest(argv=argv):
                status, out, err = self.cli(*argv)
                self.assertEqual((status, out), (2, ""))
                self.assertIn("is read by this command, which never writes over its input", err)
                self.assertEqual({name: self.read(name) for name in before}, before)


class TestCosignHoldsTheStateLock(CliCase):
    def test_cosign_with_a_transcript_waits_for_a_witness_sharing_its_state(self) -> None:
        from agentloop.tlog.witness import state_lock

        held = threading.Event()

        def hold() -> None:
            with state_lock(self.path("w.state")):
                held.set()
                time.sleep(0.5)

        thread = threading.Thread(target=hold)
        thread.start()
        self.addCleanup(thread.join)
        held.wait(10)
        started = time.monotonic()
        status, out, _ = self.cli(
            "cosign",
            "run.checkpoint",
            "--transcript",
            "run.jsonl",
            "--key",
            "witness.key",
            "--trust",
            "log.pub",
            "--state",
            "@w.state",
            "--time",
            str(TIME),
            "-o",
            "@out.checkpoint",
            UNSAFE,
        )
        self.assertEqual(status, 0, out)
        self.assertGreaterEqual(time.monotonic() - started, 0.4)
