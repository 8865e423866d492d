"""run_many, the batch ledger and resume, on the real loop with the models of tests.support.batch_models."""

from __future__ import annotations

import base64
import concurrent.futures
import hashlib
import json
import os
import pickle
import sys
import types
import unittest
from typing import Any, List, Optional, Sequence
from unittest import mock

from agentloop.batch import (
    RunSpec,
    check_extension,
    check_manifest_checkpoint,
    check_run_proof,
    parse_ledger,
    parse_manifest_checkpoint,
    prove_extension,
    prove_run,
    run_many,
)
from agentloop.batch import earlier
from agentloop.batch.ledger import ManifestCheckpoint, ledger_bytes, make_checkpoint
from agentloop.batch.spec import spec_list_hash
from agentloop.batch.executors import process_pool
from agentloop.canonical import canonical_bytes
from agentloop.batch.ledger import current
from agentloop.errors import BadSignatureError, LedgerMismatchError, MalformedManifestError, ProofError, RunConfigError

from tests.support.helpers import TempDir

MODEL = "tests.support.batch_models:factory"
TOOLS = "tests.support.batch_models:tools"
KEY = b"batch-test-key-0123456789abcdef!"


def specs(n: int = 8) -> List[RunSpec]:
    out = [RunSpec("run-%02d" % i, "task number %d" % i, 5, 10000) for i in range(n)]
    out[1] = RunSpec("run-01", "a short budget", 1, 10000)  # a step_budget stop
    out[2] = RunSpec("run-02", "with a sentinel", 5, 10000, stop_sentinel="step 1", options={"max_record_bytes": 65536})
    return out


def naive_root(leaves: Sequence[bytes]) -> bytes:
    """RFC 6962 section 2.1, written from the text (recursive, hashlib only): the oracle.

    MTH({}) = SHA-256(); MTH({d0}) = SHA-256(0x00 || d0);
    MTH(D[n]) = SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n])), k the largest power of 2 < n.
    """
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + naive_root(leaves[:k]) + naive_root(leaves[k:])).digest()


class BatchCase(TempDir):
    def batch(self, folder: str, spec_list: Optional[List[RunSpec]] = None, **kwargs: Any) -> Any:
        kwargs.setdefault("model", MODEL)
        kwargs.setdefault("tools", TOOLS)
        return run_many(specs() if spec_list is None else spec_list, out_dir=self.path(folder), **kwargs)

    def read(self, path: str) -> bytes:
        with open(path, "rb") as handle:
            return handle.read()


class TestLedgerIdentity(BatchCase):
    def test_serial_threads_processes_and_bytes_transfer_give_one_ledger(self) -> None:
        serial = self.batch("serial", checkpoint=self.path("serial.ckpt"), key=KEY)
        self.assertTrue(serial.ok, serial.failed)
        ledger = self.read(serial.manifest)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            threads = self.batch("threads", executor=pool, checkpoint=self.path("threads.ckpt"), key=KEY)
        with process_pool(2) as pool:
            processes = self.batch("processes", executor=pool, checkpoint=self.path("processes.ckpt"), key=KEY)
            moved = self.batch("bytes", executor=pool, transfer="bytes")
        for other in (threads, processes, moved):
            self.assertEqual(self.read(other.manifest), ledger)
            self.assertEqual([e.name for e in other.entries], [s.name for s in specs()])  # spec order
        self.assertEqual(self.read(self.path("threads.ckpt")), self.read(self.path("serial.ckpt")))
        self.assertEqual(self.read(self.path("processes.ckpt")), self.read(self.path("serial.ckpt")))
        for spec in specs():  # and the transcripts themselves
            self.assertEqual(
                self.read(self.path("bytes/%s.jsonl" % spec.name)), self.read(self.path("serial/%s.jsonl" % spec.name))
            )
        stops = [line["stop"] for line in parse_ledger(ledger)]
        self.assertEqual(stops[:3], ["no_tool_calls", "step_budget", "sentinel"])
        self.assertFalse([n for n in os.listdir(self.path("processes")) if n.endswith(".tmp")])

    def test_negative_control_another_spec_list_gives_another_ledger(self) -> None:
        one = self.batch("one")
        changed = specs()
        changed[5] = RunSpec("run-05", "task number 5!", 5, 10000)
        two = self.batch("two", changed)
        self.assertNotEqual(self.read(one.manifest), self.read(two.manifest))
        self.assertNotEqual(one.origin, two.origin)
        self.assertEqual(parse_ledger(self.read(one.manifest))[4], parse_ledger(self.read(two.manifest))[4])

    def test_the_root_is_rfc_6962_computed_independently(self) -> None:
        result = self.batch("a")
        data = self.read(result.manifest)
        leaves = data.split(b"\n")[:-1]
        self.assertEqual(len(leaves), 8)
        self.assertEqual(result.root, naive_root(leaves).hex())
        self.assertNotEqual(result.root, naive_root(leaves[::-1]).hex())  # the oracle can disagree
        for size in (1, 2, 3, 5, 7):  # odd shapes too
            self.assertEqual(
                make_checkpoint(result.origin, b"".join(x + b"\n" for x in leaves[:size])).root,
                naive_root(leaves[:size]).hex(),
            )
        # each line's origin is agentloop/1/ + the hash of that transcript's record 0
        for line in parse_ledger(data):
            with open(self.path("a/%s.jsonl" % line["name"]), "rb") as handle:
                first = json.loads(handle.readline())
            self.assertEqual(line["origin"], "agentloop/1/" + first["hash"])
            self.assertEqual(
                line["sha256"], hashlib.sha256(self.read(self.path("a/%s.jsonl" % line["name"]))).hexdigest()
            )
        # the batch origin: SHA-256 of the RFC 8785 spec list
        listed = json.dumps([s.to_json() for s in specs()], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        self.assertEqual(result.origin, "agentloop-manifest/1/" + hashlib.sha256(listed.encode("utf-8")).hexdigest())
        self.assertEqual(spec_list_hash(specs()), result.origin.rsplit("/", 1)[1])


class TestWorkerDeath(BatchCase):
    def test_a_worker_that_exits_is_a_worker_error_every_time_and_resume_reruns_only_it(self) -> None:
        flag = self.path("crash.flag")
        with open(flag, "w"):
            pass
        spec_list = specs()
        spec_list[3] = RunSpec("run-03", "crash-if:" + flag, 5, 10000)
        ledgers = []
        for folder in ("a", "b"):
            with process_pool(2) as pool:
                result = self.batch(folder, spec_list, executor=pool)
            self.assertEqual(
                [(e.name, e.status, e.error) for e in result.failed], [("run-03", "worker_error", "BrokenProcessPool")]
            )
            ledgers.append(self.read(result.manifest))
            with open(result.error_log, encoding="utf-8") as handle:
                self.assertIn("run-03: BrokenProcessPool: ", handle.read())
        self.assertEqual(ledgers[0], ledgers[1])
        line = parse_ledger(ledgers[0])[3]
        self.assertEqual(sorted(line), ["error", "name", "origin", "status"])  # the type only, never a message

        os.unlink(flag)
        ran: List[str] = []
        with process_pool(2) as pool:
            again = self.batch(
                "a",
                spec_list,
                executor=pool,
                resume=True,
                progress=lambda e, d, t: ran.append(e.name) if not e.resumed else None,
            )
        self.assertEqual(ran, ["run-03"])
        self.assertTrue(again.ok)
        self.assertIsNone(again.error_log)
        self.assertFalse(os.path.exists(self.path("a/manifest.errors.log")))
        self.assertTrue(again.extends)  # the ledger only grows: run-03's retry is a line appended
        lines = parse_ledger(self.read(again.manifest))
        self.assertEqual([(line["name"], line["status"]) for line in lines[7:]], [("run-07", "ok"), ("run-03", "ok")])
        self.assertEqual(lines[:8], parse_ledger(ledgers[0]))
        clean = self.batch("clean", spec_list)  # the flag is gone: nothing crashes
        self.assertEqual(list(current(lines).values()), parse_ledger(self.read(clean.manifest)))


class TestTrustNothing(BatchCase):
    def test_a_record_0_other_than_the_spec_implies_is_rejected(self) -> None:
        serial = self.batch("serial", model="tests.support.batch_models:pid_factory")
        self.assertTrue(serial.ok)  # same process: the driver's model_info is the worker's
        with process_pool(2) as pool:
            result = self.batch("pool", model="tests.support.batch_models:pid_factory", executor=pool)
        self.assertEqual({(e.status, e.error) for e in result.entries}, {("rejected", "wrong_task_record")})

    def test_an_identical_existing_transcript_is_a_success_and_a_different_one_an_error(self) -> None:
        first = self.batch("a")
        os.unlink(first.manifest)
        second = self.batch("a")  # every transcript is there already, byte for byte
        self.assertTrue(second.ok)
        self.assertEqual(self.read(first.manifest), self.read(second.manifest))
        os.unlink(second.manifest)
        other = self.path("a/run-04.jsonl")
        os.replace(self.path("a/run-05.jsonl"), other)  # a valid transcript, of another run
        third = self.batch("a")
        self.assertEqual([(e.name, e.error) for e in third.failed], [("run-04", "TranscriptExistsError")])
        self.assertTrue(os.path.exists(other + ".tmp"))  # the new one is kept beside it for a look
        # resume does not keep the wrong one either
        fourth = self.batch("a", resume=True)
        self.assertEqual([(e.name, e.error) for e in fourth.failed], [("run-04", "TranscriptExistsError")])

    def test_resume_never_reruns_or_recertifies_what_the_earlier_ledger_certified(self) -> None:
        first = self.batch("a")
        ledger = self.read(first.manifest)
        with open(self.path("a/run-06.jsonl"), "ab") as handle:
            handle.truncate(os.path.getsize(self.path("a/run-06.jsonl")) - 5)  # torn
        torn = self.read(self.path("a/run-06.jsonl"))
        os.unlink(self.path("a/run-07.jsonl"))
        ran: List[str] = []
        with self.assertRaises(LedgerMismatchError) as caught:
            self.batch("a", resume=True, progress=lambda e, d, t: ran.append(e.name))
        self.assertEqual([name for name, _ in caught.exception.altered], ["run-06", "run-07"])
        self.assertIn("missing", dict(caught.exception.altered)["run-07"])
        self.assertEqual(ran, [])  # nothing ran
        self.assertEqual(self.read(first.manifest), ledger)  # nothing was written
        self.assertEqual(self.read(self.path("a/run-06.jsonl")), torn)  # evidence is never replaced
        self.assertFalse(os.path.exists(self.path("a/run-07.jsonl")))

    def test_a_ledger_changed_on_disk_after_resume_read_it_is_neither_trusted_nor_grown(self) -> None:
        os.makedirs(self.path("a"))
        with open(self.path("a/run-04.jsonl"), "wb") as handle:
            handle.write(b"someone else's file\n")  # run-04: a worker_error line
        note = self.path("a/manifest.checkpoint")
        first = self.batch("a", checkpoint=note, key=KEY)
        os.unlink(self.path("a/run-04.jsonl"))
        checked = self.read(first.manifest)
        lines = [json.loads(line) for line in checked.splitlines()]
        lines[4] = dict(lines[0], name="run-04", origin=lines[4]["origin"])  # run-04 "ok", with run-00's facts
        forged = ledger_bytes(lines)
        real = earlier.transcript_facts

        def rewrite(path: str) -> Any:  # while the certified files are checked, the ledger on disk changes
            with open(first.manifest, "wb") as handle:
                handle.write(forged)
            return real(path)

        with mock.patch.object(earlier, "transcript_facts", rewrite):
            again = self.batch("a", checkpoint=note, key=KEY, resume=True)
        self.assertTrue(again.ok and again.extends, again.failed)
        grown = self.read(first.manifest)
        self.assertEqual(grown[: len(checked)], checked)  # the bytes checked, grown by run-04 run again
        self.assertEqual(parse_ledger(grown[len(checked) :])[0]["name"], "run-04")
        check_manifest_checkpoint(parse_manifest_checkpoint(self.read(note)), grown, KEY)

    def test_resume_keeps_only_what_verifies_with_the_expected_origin(self) -> None:
        self.batch("a")
        data = self.read(self.path("a/manifest.jsonl"))
        with open(self.path("a/manifest.jsonl"), "wb") as handle:  # what an interrupted batch left: its first 6 lines
            handle.write(b"".join(x + b"\n" for x in data.split(b"\n")[:6]))
        with open(self.path("a/run-06.jsonl"), "ab") as handle:
            handle.truncate(os.path.getsize(self.path("a/run-06.jsonl")) - 5)  # torn
        os.unlink(self.path("a/run-07.jsonl"))
        ran: List[str] = []
        result = self.batch("a", resume=True, progress=lambda e, d, t: ran.append(e.name) if not e.resumed else None)
        self.assertEqual(ran, ["run-06", "run-07"])
        self.assertEqual([(e.name, e.error) for e in result.failed], [("run-06", "TranscriptExistsError")])
        self.assertEqual(result.entries[7].status, "ok")

    def test_misuse_raises_before_anything_runs(self) -> None:
        with self.assertRaisesRegex(RunConfigError, 'the name "x" is used twice'):
            self.batch("m", [RunSpec("x", "a", 1, 1), RunSpec("x", "b", 1, 1)])
        with self.assertRaisesRegex(RunConfigError, "^tools: cannot import nowhere"):
            self.batch("m", tools="nowhere:tools")
        with self.assertRaisesRegex(RunConfigError, "nothing would be signed"):
            self.batch("m", key=KEY)
        self.batch("m")
        with self.assertRaisesRegex(RunConfigError, "already exists \\(pass resume=True"):
            self.batch("m")
        with self.assertRaisesRegex(RunConfigError, "max_record_bytes"):
            self.batch("n", [RunSpec("x", "a", 1, 1, options={"max_record_bytes": 5})])
        self.assertFalse(os.path.exists(self.path("n/x.jsonl")))


class TestSpec(unittest.TestCase):
    def test_json_round_trip_and_strictness(self) -> None:
        spec = RunSpec("a.b_c-1", "t", 2, 3, stop_sentinel="DONE", options={"max_record_bytes": 70000})
        self.assertEqual(RunSpec.from_json(json.loads(json.dumps(spec.to_json()))), spec)
        self.assertEqual(RunSpec("a", "t", 2, 3).to_json(), {"name": "a", "task": "t", "max_steps": 2, "max_tokens": 3})
        with self.assertRaisesRegex(
            RunConfigError, r"^tasks:3: RunSpec\(\"a\"\)\.options: \"transcript\" is not an option"
        ):
            RunSpec.from_json(
                {"name": "a", "task": "t", "max_steps": 1, "max_tokens": 1, "options": {"transcript": "x"}}, "tasks:3"
            )
        with self.assertRaisesRegex(RunConfigError, 'unknown key "model"'):
            RunSpec.from_json({"name": "a", "task": "t", "max_steps": 1, "max_tokens": 1, "model": "x"})
        for bad in ("", "../x", ".hidden", "a/b", "x" * 129):
            with self.assertRaises(RunConfigError):
                RunSpec(bad, "t", 1, 1)
        with self.assertRaisesRegex(RunConfigError, "max_steps: must be an int"):
            RunSpec("a", "t", True, 1)  # bool before int


class TestLedger(BatchCase):
    def test_checkpoint_signatures_and_tampering(self) -> None:
        result = self.batch("a", checkpoint=self.path("c"), key=KEY)
        data = self.read(result.manifest)
        note = parse_manifest_checkpoint(self.read(self.path("c")))
        self.assertEqual(note.to_bytes(), self.read(self.path("c")))
        check_manifest_checkpoint(note, data, KEY)
        with self.assertRaises(BadSignatureError):
            check_manifest_checkpoint(note, data, b"another key, long enough........")
        tampered = data.replace(b'"stop":"step_budget"', b'"stop":"no_tool_calls"')
        self.assertNotEqual(tampered, data)
        with self.assertRaisesRegex(ProofError, "root"):
            check_manifest_checkpoint(note, tampered, KEY)
        unsigned = parse_manifest_checkpoint(ManifestCheckpoint(note.origin, note.size, note.root).to_bytes())
        with self.assertRaisesRegex(BadSignatureError, "not signed"):
            check_manifest_checkpoint(unsigned, data, KEY)
        check_manifest_checkpoint(unsigned, data)  # no key asked for: the tree head alone

    def test_ed25519_signer(self) -> None:
        from agentloop.signing import Ed25519Signer, Ed25519Verifier, generate_key, parse_signer_key

        skey, vkey = generate_key("batches.example", allow_slow_unsafe_signer=True)
        signer = Ed25519Signer(parse_signer_key(skey, allow_slow_unsafe_signer=True), allow_slow_unsafe_signer=True)
        result = self.batch("a", checkpoint=self.path("c"), signer=signer, key=KEY)
        note = parse_manifest_checkpoint(self.read(self.path("c")))
        self.assertEqual([s.name for s in note.signatures], [result.origin, "batches.example"])
        check_manifest_checkpoint(note, self.read(result.manifest), KEY, [Ed25519Verifier.from_key(vkey)])
        other_skey, other_vkey = generate_key("batches.example", allow_slow_unsafe_signer=True)
        with self.assertRaises(BadSignatureError):
            check_manifest_checkpoint(note, self.read(result.manifest), None, [Ed25519Verifier.from_key(other_vkey)])

    def test_inclusion_and_consistency_proofs(self) -> None:
        result = self.batch("a")
        data = self.read(result.manifest)
        note = make_checkpoint(result.origin, data)
        lines = parse_ledger(data)
        for line in lines:
            index, proof = prove_run(data, line["name"])
            check_run_proof(line, index, proof, note)
        forged = dict(lines[2], stop="no_tool_calls")
        index, proof = prove_run(data, "run-02")
        with self.assertRaises(ProofError):
            check_run_proof(forged, index, proof, note)
        prefix = b"".join(x + b"\n" for x in data.split(b"\n")[:5])
        old = make_checkpoint(result.origin, prefix)
        check_extension(old, note, prove_extension(5, data))
        with self.assertRaises(ProofError):  # a ledger whose line 2 changed does not extend
            check_extension(
                make_checkpoint(result.origin, prefix.replace(b"step_budget", b"sentinel")),
                note,
                prove_extension(5, data),
            )

    def test_a_driver_stopped_midway_leaves_a_ledger_the_resumed_one_extends(self) -> None:
        full = self.batch("a")
        data = self.read(full.manifest)
        with open(full.manifest, "wb") as handle:
            handle.write(b"".join(x + b"\n" for x in data.split(b"\n")[:3]))  # what an interrupted batch left
        again = self.batch("a", resume=True)
        self.assertTrue(again.extends)

    def test_parse_ledger_refuses_every_other_spelling(self) -> None:
        data = self.read(self.batch("a").manifest)
        first = data.split(b"\n")[0]
        cases = {
            b"": "manifest: empty",
            data[:-1]: "no terminating newline",
            data + b"\n": "an empty line",
            first.replace(b'{"head"', b'{ "head"') + b"\n": "canonical",
            first.replace(b'"status":"ok"', b'"status":"fine"') + b"\n": "status must be",
            first + b"\n" + first + b"\n": "appears again after its ok line",
            canonical_bytes(dict(json.loads(first), x=1)) + b"\n": "holds exactly",
        }
        for bad, message in cases.items():
            with self.subTest(message), self.assertRaisesRegex(MalformedManifestError, message):
                parse_ledger(bad)


class TestSecrets(unittest.TestCase):
    def test_an_adapter_pickle_holds_no_api_key(self) -> None:
        from agentloop.models import AnthropicMessages, OpenAIChat

        secret = "sk-batch-test-" + "7" * 24
        control = types.SimpleNamespace(key=secret)  # negative control: the search finds a key that is there
        self.assertIn(secret.encode(), pickle.dumps(control))
        for adapter in (OpenAIChat("gpt-4o-mini", api_key=secret), AnthropicMessages("claude-x", api_key=secret)):
            with self.subTest(type(adapter).__name__):
                try:
                    blob = pickle.dumps(adapter)
                except Exception:
                    continue  # refusing to pickle also keeps the key out
                # assertFalse, not assertNotIn: a failure must not print the pickle, key and all
                self.assertFalse(
                    secret.encode() in blob, "the pickle of %s holds its API key" % (type(adapter).__name__,)
                )
                self.assertFalse(base64.b64encode(secret.encode()) in blob, "the pickle holds the key in base64")


class TestRayExecutor(unittest.TestCase):
    def test_submit_goes_through_object_ref_future_and_ray_is_imported_only_when_used(self) -> None:
        import agentloop.batch.executors as executors

        self.assertNotIn("ray", sys.modules)
        calls: List[Any] = []

        class Ref:
            def __init__(self, value: Any) -> None:
                self.value = value

            def future(self) -> "concurrent.futures.Future[Any]":
                done: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
                done.set_result(self.value)
                return done

        fake = types.ModuleType("ray")
        fake.is_initialized = lambda: False  # type: ignore[attr-defined]
        fake.init = lambda **kw: calls.append(("init", kw))  # type: ignore[attr-defined]
        fake.shutdown = lambda: calls.append(("shutdown",))  # type: ignore[attr-defined]

        def remote(**options: Any) -> Any:
            calls.append(("remote", options))
            return lambda fn: types.SimpleNamespace(remote=lambda *a, **k: Ref(fn(*a, **k)))

        fake.remote = remote  # type: ignore[attr-defined]
        executor = executors.RayExecutor()
        sys.modules["ray"] = fake
        try:
            self.assertEqual(executor.submit(pow, 2, 10).result(), 1024)
            self.assertEqual(executor.submit(pow, 3, 2).result(), 9)
            executor.shutdown()
        finally:
            del sys.modules["ray"]
        self.assertEqual(
            calls, [("init", {"address": None}), ("remote", {"num_cpus": 1, "max_retries": 0}), ("shutdown",)]
        )


if __name__ == "__main__":
    unittest.main()


class TestProcessPools(unittest.TestCase):
    def test_a_threaded_process_never_forks_its_workers(self) -> None:
        import threading

        release = threading.Event()
        other = threading.Thread(target=release.wait)
        other.start()
        try:
            for fork_if_alone in (False, True):
                with process_pool(1, fork_if_alone=fork_if_alone) as pool:
                    self.assertNotEqual(pool._mp_context.get_start_method(), "fork")  # type: ignore[attr-defined]
                    self.assertEqual(pool.submit(abs, -3).result(timeout=60), 3)
        finally:
            release.set()
            other.join()
