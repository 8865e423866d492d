"""The gate: ``python3 check.py``.  Its exit status is the verdict.

Legs:

1. ``suite``  -- the unittest suite under ``tests/`` (every ``test*.py``, as
   ``unittest discover`` finds them), run module by module by a few worker
   processes side by side;
2. ``tamper`` -- independent of the suite: writes a real transcript, derives
   what verification must say from the file's own bytes (using only
   ``hashlib`` and ``json``), then mutates the file at every record and checks
   that ``verify_file`` names the right record each time;
3. ``demo``   -- runs ``demo.py`` in a fresh folder and verifies its files;
4. ``conformance`` -- runs the JSON-Schema-Test-Suite (draft 2020-12) from
   ``../shared/conformance`` through ``agentloop.schema.compile_schema``:
   every test must get the suite's verdict, or its group's schema must be
   refused at compile time for the one documented reason (a pattern Python's
   ``re`` cannot express); any other refusal, a wrong verdict or an exception
   is a fault, and the counts must be exactly :data:`CONFORMANCE` (720 right,
   5 refused, 0 wrong).  Without ``../shared/conformance`` the leg says so
   loudly and passes as a skip;
5. ``types`` -- ``mypy --strict agentloop`` when mypy is importable; without
   it the leg says "SKIPPED: mypy not installed" and passes.  Branch coverage
   is not run here (under coverage the suite takes about twice as long as the
   whole check): ``.ci/gates`` runs both mypy and coverage from a throwaway
   venv and fails under 95%.

Exit status: 0 every leg passed, 1 a leg found a fault, 2 a leg could not be
graded (it could not run, or ran nothing).  The last line is
``check: N passed, M failed``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from typing import IO, Any, Callable, Dict, List, Optional, Tuple

Record = Dict[str, Any]

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, ROOT)

PASS, FAIL, UNGRADED = "pass", "fail", "ungraded"
Verdict = Tuple[str, str]


# Seconds each test module takes alone on a quiet 2-core machine (wall time, with the
# processes it starts): the workers take the heaviest first, so the long ones start at
# once and the short ones fill the end.  A module not listed counts _DEFAULT_WEIGHT.
# Refresh when a module grows: time it alone (`time python3 -m unittest tests.x.test_y`).
_WEIGHTS = {
    "tests.mcp.test_mcp": 27.1,
    "tests.cli.test_hostile_cli": 16.4,
    "tests.docs.test_page_integrity": 12.5,
    "tests.cli.test_keys_cli": 12.4,
    "tests.tlog.test_cli": 9.3,
    "tests.docs.test_page_performance": 8.2,
    "tests.mcp.test_mcp_odd_servers": 8.0,
    "tests.transcript.test_parallel": 7.4,
    "tests.docs.test_page_cli": 6.5,
    "tests.transcript.test_parallel_random": 5.8,
    "tests.transcript.test_hardening": 5.5,
    "tests.test_fuzz": 5.4,
    "tests.cli.test_mcp_options": 4.3,
    "tests.models.test_streaming": 4.2,
    "tests.batch.test_batch": 4.1,
    "tests.transcript.test_kill": 3.9,
    "tests.docs.test_page_observability": 3.6,
    "tests.test_canonical_fast": 3.6,
    "tests.models.test_models_hardening": 3.6,
    "tests.transcript.test_transcript": 3.3,
    "tests.test_canonical": 3.1,
    "tests.loop.test_loop_parallel": 2.8,
    "tests.models.test_models_openai": 2.7,
    "tests.models.test_models_http": 2.5,
    "tests.docs.test_page_readme": 2.4,
    "tests.batch.test_windows": 2.4,
    "tests.test_api": 2.2,
    "tests.tlog.test_proof": 2.2,
    "tests.docs.test_page_approvals": 2.1,
    "tests.cli.test_keys_cli_inprocess": 2.1,
    "tests.batch.test_batch_untrusted_replies": 2.1,
    "tests.loop.test_loop": 2.1,
    "tests.signing.test_signed_note": 1.9,
    "tests.cli.test_lazy_parser": 1.9,
    "tests.provenance.test_vectors": 1.9,
    "tests.loop.test_effects_once": 1.7,
    "tests.cli.test_provenance": 1.6,
    "tests.docs.test_page_batch": 1.6,
}
_DEFAULT_WEIGHT = 0.5


def _weight(module: str) -> float:
    return _WEIGHTS.get(module, _DEFAULT_WEIGHT)


def _test_modules() -> List[str]:
    """What ``unittest discover -s tests -t .`` would load: every ``test*.py`` in a package under tests/."""
    found = []
    for folder, dirs, files in os.walk(os.path.join(ROOT, "tests")):
        dirs[:] = sorted(d for d in dirs if os.path.exists(os.path.join(folder, d, "__init__.py")))
        for name in sorted(files):
            if name.startswith("test") and name.endswith(".py"):
                found.append(os.path.relpath(os.path.join(folder, name), ROOT)[:-3].replace(os.sep, "."))
    return found


def _heaviest_first(modules: List[str]) -> List[str]:
    """The order the workers take the modules in: the long ones start at once, the short ones fill the end."""
    return sorted(modules, key=lambda m: -_weight(m))  # stable: equal weights keep discovery order


def _cores() -> int:
    """The cores this process may run on (its affinity where the OS tells it, as in a CPU-limited container)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


def _bytecode_env(folder: str) -> Dict[str, str]:
    """The suite's environment: bytecode cached in ``folder``, even under ``PYTHONDONTWRITEBYTECODE``.

    The suite starts a few hundred ``python -m agentloop`` processes; without
    a bytecode cache each compiles the package again (about 0.2 s of a 0.45 s
    start here).  The cache goes to a temporary ``PYTHONPYCACHEPREFIX``
    folder, so the source tree stays as clean as the setting asked; a prefix
    the caller set is kept, and written to too.  (A prefix that may not be
    written to is worse than none: Python then looks for the standard
    library's bytecode there as well, and compiles it in every process,
    which made the check more than twice as slow.)
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not env.get("PYTHONPYCACHEPREFIX"):
        env["PYTHONPYCACHEPREFIX"] = folder
    return env


def serve_modules(commands: int, results: int) -> None:
    """A worker of the suite: run each test module named on the pipe ``commands`` as
    ``python -m unittest MODULE`` would, and answer each with one JSON line on the pipe ``results``.

    The pipes are not the worker's stdin and stdout, which the processes its
    tests start inherit, and may read or write.
    """
    warnings = None if sys.warnoptions else "default"  # as unittest.main
    with open(commands, encoding="utf-8") as names, open(results, "w", encoding="utf-8") as answers:
        for line in names:
            module = line.strip()
            stream = io.StringIO()
            runner = unittest.TextTestRunner(stream=stream, warnings=warnings)
            result = runner.run(unittest.defaultTestLoader.loadTestsFromName(module))
            ok = result.wasSuccessful()
            answer = {"module": module, "ran": result.testsRun, "skipped": len(result.skipped), "ok": ok}
            answer["report"] = "" if ok else stream.getvalue()
            answers.write(json.dumps(answer) + "\n")
            answers.flush()


class _Worker:
    """A process running :func:`serve_modules`, and :meth:`work`, which a thread runs to feed it."""

    def __init__(self, env: Dict[str, str], log: IO[bytes]) -> None:
        to_worker, self._commands = os.pipe()
        self._results, from_worker = os.pipe()
        code = "import sys, check; check.serve_modules(int(sys.argv[1]), int(sys.argv[2]))"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, str(to_worker), str(from_worker)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            pass_fds=(to_worker, from_worker),
        )
        os.close(to_worker)
        os.close(from_worker)
        self.answers: List[Dict[str, Any]] = []
        self.seconds = 0.0

    def work(self, queue: List[str], lock: threading.Lock, start: float) -> None:
        """Hand the worker the next module of ``queue`` until none is left, or until the worker dies in one."""
        with open(self._commands, "w", encoding="utf-8") as commands, open(self._results, encoding="utf-8") as results:
            while True:
                with lock:
                    if not queue:
                        break
                    module = queue.pop(0)
                try:
                    commands.write(module + "\n")
                    commands.flush()
                    line = results.readline()
                except OSError:
                    line = ""
                if not line:
                    self.answers.append({"module": module, "died": True})
                    break
                self.answers.append(json.loads(line))
        self.proc.wait()
        self.seconds = time.monotonic() - start


def leg_suite() -> Verdict:
    """The unittest suite, in ``AGENTLOOP_CHECK_WORKERS`` processes at once, each taking the next module.

    The default is three more workers than cores: nearly half of the
    suite's time is spent waiting (on child processes, servers and
    deadlines), which the other workers fill.  The modules go out one at a
    time, heaviest first (:data:`_WEIGHTS`), so the workers end within a
    second or two of each other whatever else the machine is doing.  On the
    shared 2-core machine, in the same minutes, the whole check took 101 s
    and 113 s with three fixed shards, 81 s and 74 s with five workers
    (three workers: 101 s; four: 89 s, against 80 s for five).
    """
    modules = _test_modules()
    if not modules:
        return UNGRADED, "no test modules under tests/"
    count = int(os.environ.get("AGENTLOOP_CHECK_WORKERS", "0") or 0) or _cores() + 3
    queue, lock = _heaviest_first(modules), threading.Lock()
    with tempfile.TemporaryDirectory(prefix="agentloop-check-") as tmp, open(os.path.join(tmp, "log"), "w+b") as log:
        env = _bytecode_env(os.path.join(tmp, "pyc"))
        start = time.monotonic()
        workers = [_Worker(env, log) for _ in range(min(count, len(modules)))]
        # daemon: a check that is stopped does not wait for them; its workers then end after their module
        threads = [threading.Thread(target=worker.work, args=(queue, lock, start), daemon=True) for worker in workers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        log.seek(0)
        noise = log.read().decode("utf-8", "replace")
    answers = [answer for worker in workers for answer in worker.answers]
    died = [answer["module"] for answer in answers if answer.get("died")]
    if died or queue:
        sys.stdout.write(noise[-3000:])
        return UNGRADED, "a worker died running %s; %d modules were not run" % (", ".join(died), len(queue))
    failed = [answer for answer in answers if not answer["ok"]]
    for answer in failed:
        sys.stdout.write(answer["report"][-6000:])
    total = sum(answer["ran"] for answer in answers)
    if total == 0:
        return UNGRADED, "the suite ran no tests"
    verdict = "FAILED: " + ", ".join(a["module"] for a in failed) if failed else "OK"
    return (FAIL if failed else PASS), "Ran %d tests (%d skipped) in %d modules, %d workers (done after %s s): %s" % (
        total,
        sum(answer["skipped"] for answer in answers),
        len(modules),
        len(workers),
        ", ".join("%.0f" % worker.seconds for worker in workers),
        verdict,
    )


# --- tamper leg: expectations from the bytes, by hashlib + json alone -------


def _canonical(obj: object) -> bytes:
    # The demo transcript holds only ASCII keys, strings and small integers,
    # for which RFC 8785 is exactly this json.dumps configuration.
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _rehash(record: Record) -> Record:
    body = {k: v for k, v in record.items() if k != "hash"}
    return dict(record, hash=hashlib.sha256(_canonical(body)).hexdigest())


def _line(record: Record) -> bytes:
    return _canonical(record) + b"\n"


def leg_tamper() -> Verdict:
    from agentloop import run, verify_file, verify_records  # the code under test
    from demo import demo_tools, recover_model

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.jsonl")
        run("tamper leg", recover_model(), demo_tools(), transcript=path, max_steps=8, max_tokens=2000)
        with open(path, "rb") as handle:
            lines = handle.read().splitlines(keepends=True)
        records = [json.loads(line) for line in lines]
        n = len(records)

        # The untouched file, judged from its bytes: canonical lines, each hash
        # the SHA-256 of the record without it, each prev the hash before.
        prev = "0" * 64
        for i, (line, record) in enumerate(zip(lines, records)):
            if _line(record) != line or _rehash(record)["hash"] != record["hash"]:
                return FAIL, "line %d of a fresh transcript is not canonical or its hash is wrong" % (i + 1)
            if record["prev"] != prev or record["seq"] != i:
                return FAIL, "line %d of a fresh transcript breaks the chain" % (i + 1)
            prev = record["hash"]
        clean = verify_file(path)
        if not (clean.ok and clean.count == n and clean.head == prev):
            return FAIL, "an intact transcript did not verify as %d records ending %s: %s" % (n, prev[:12], clean)

        def write(data: List[bytes]) -> str:
            target = os.path.join(tmp, "m.jsonl")
            if os.path.exists(target):  # a new file: truncating one makes ext4 flush it when it is closed
                os.remove(target)
            with open(target, "wb") as handle:
                handle.write(b"".join(data))
            return target

        def edit(i: int, change: Callable[[Record], Record]) -> List[bytes]:
            return lines[:i] + [_line(change(dict(records[i])))] + lines[i + 1 :]

        # (name, mutated lines, the record index the first fault must name, or
        #  None for "some fault, at a line, must be reported")
        cases: List[Tuple[str, List[bytes], Optional[int]]] = []
        for i in range(n):
            cases.append(
                ("rewrite payload of record %d" % i, edit(i, lambda r: dict(r, payload={"tampered": True})), i)
            )
            cases.append(("change kind of record %d" % i, edit(i, lambda r: dict(r, kind="forged")), i))
            cases.append(
                (
                    "flip a hash digit of record %d" % i,
                    edit(i, lambda r: dict(r, hash=("1" if r["hash"][0] == "0" else "0") + r["hash"][1:])),
                    i,
                )
            )
            cases.append(("renumber record %d" % i, edit(i, lambda r: dict(r, seq=r["seq"] + 1)), i))
            if i + 1 < n:
                forged = edit(i, lambda r: _rehash(dict(r, payload=dict(r["payload"], forged=True))))
                cases.append(("forge record %d with a recomputed hash" % i, forged, i + 1))
                cases.append(("delete record %d" % i, lines[:i] + lines[i + 1 :], i))
                swapped = lines[:i] + [lines[i + 1], lines[i]] + lines[i + 2 :]
                cases.append(("swap records %d and %d" % (i, i + 1), swapped, i))
        cases.append(("tear the last line", lines[:-1] + [lines[-1][:-5]], None))
        cases.append(("junk line in the middle", lines[:3] + [b"not json\n"] + lines[3:], None))

        missed: List[str] = []
        for name, data, expect_index in cases:
            result = verify_file(write(data))
            if result.ok or not result.faults:
                missed.append("%s: VERIFIED" % name)
                continue
            first = result.faults[0]
            # verify_records must agree on every mutation whose lines all parse.
            try:
                parsed = [json.loads(line) for line in data]
            except ValueError:
                parsed = None
            if parsed is not None:
                from_records = {(f.index, f.kind) for f in verify_records(parsed)}
                from_file = {(f.index, f.kind) for f in result.faults if f.kind != "not_canonical"}
                if from_records != from_file:
                    missed.append(
                        "%s: verify_records says %s, verify_file %s" % (name, sorted(from_records), sorted(from_file))
                    )
            if expect_index is not None and first.index != expect_index:
                missed.append("%s: first fault at %s, expected record %d" % (name, first.where(), expect_index))
            if expect_index is None and first.line is None:
                missed.append("%s: the fault names no line" % name)

        # The documented limit: a clean cut at a line boundary still verifies,
        # and only an outside count exposes it.
        cut = write(lines[:-1])
        if not verify_file(cut).ok or verify_file(cut, expect_count=n).ok:
            missed.append("a tail cut should verify alone and fail against the external count")

    if missed:
        for problem in missed:
            print("    " + problem)
        return FAIL, "%d of %d mutations not caught as expected" % (len(missed), len(cases) + 1)
    return PASS, "%d mutations over %d records, each named at the right record" % (len(cases) + 1, n)


def leg_demo() -> Verdict:
    from agentloop import verify_file

    expected = {"demo-answer.jsonl": 5, "demo-recover.jsonl": 11, "demo-budget.jsonl": 9}
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [sys.executable, os.path.join(ROOT, "demo.py"), "--out", tmp],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
        )
        if proc.returncode != 0:
            sys.stdout.write(proc.stdout[-4000:])
            return FAIL, "demo.py exited %d" % proc.returncode
        problems = []
        for name, count in sorted(expected.items()):
            result = verify_file(os.path.join(tmp, name))
            if not (result.ok and result.count == count and result.complete):
                problems.append("%s: ok=%s count=%d (expected %d)" % (name, result.ok, result.count, count))
    if problems:
        return FAIL, "; ".join(problems)
    return PASS, "demo.py exit 0; " + ", ".join(
        "%s %d" % kv for kv in sorted(expected.items())
    ) + " records, all verify"


# The documented reasons a suite schema may be refused, and how to recognise
# each in a SchemaError's reason.  Nothing else may be refused: the two groups
# that $ref the meta-schema resolve it from agentloop/schema/metaschemas/.
REFUSAL_REASONS = (("regex Python's re cannot express", "cannot be expressed in Python's re"),)

#: (right, refused, wrong) the suite at commit 44401e0c must give, exactly.
CONFORMANCE = (720, 5, 0)


def leg_conformance() -> Verdict:
    suite = os.path.join(
        os.path.dirname(ROOT), "shared", "conformance", "json-schema-test-suite", "tests", "draft2020-12"
    )
    if not os.path.isdir(suite):
        print("    !! SKIPPED: %s is not present, so the JSON-Schema-Test-Suite was NOT run" % suite)
        return PASS, "SKIPPED (suite not present, nothing graded): %s" % suite
    from agentloop.errors import SchemaError
    from agentloop.schema.validator import compile_schema

    names = sorted(name for name in os.listdir(suite) if name.endswith(".json"))
    right = wrong = total = 0
    refused: Dict[str, int] = {}
    for name in names:
        with open(os.path.join(suite, name), encoding="utf-8") as handle:
            groups = json.load(handle)
        for group in groups:
            tests = group["tests"]
            total += len(tests)
            where = "%s: %s" % (name, group["description"])
            try:
                validator = compile_schema(group["schema"])
            except SchemaError as exc:
                reason = next((label for label, marker in REFUSAL_REASONS if marker in exc.reason), None)
                if reason is None:
                    print("    %s: refused for an undocumented reason: %s" % (where, exc))
                    wrong += len(tests)
                else:
                    refused[reason] = refused.get(reason, 0) + len(tests)
                continue
            for test in tests:
                try:
                    verdicts = {
                        validator.is_valid(test["data"]),
                        not validator.errors(test["data"]),
                        validator.first_error(test["data"]) is None,
                    }
                except Exception as exc:  # validation must never raise
                    print("    %s / %s: raised %s: %s" % (where, test["description"], type(exc).__name__, exc))
                    wrong += 1
                    continue
                if verdicts == {test["valid"]}:
                    right += 1
                else:
                    print("    %s / %s: expected valid=%s" % (where, test["description"], test["valid"]))
                    wrong += 1
    if total == 0:
        return UNGRADED, "no suite tests found in %s" % suite
    counts = (right, sum(refused.values()), wrong)
    detail = "%d verdicts right, %d refused (%s), %d wrong -- %d tests in %d files" % (
        right,
        counts[1],
        ", ".join("%s: %d" % kv for kv in sorted(refused.items())) or "none",
        wrong,
        total,
        len(names),
    )
    if counts != CONFORMANCE:
        return FAIL, "%s; expected %d right, %d refused, %d wrong" % ((detail,) + CONFORMANCE)
    return PASS, detail


def leg_types() -> Verdict:
    coverage_note = "coverage: left to .ci/gates (it would double the suite's time here)"
    if importlib.util.find_spec("mypy") is None:
        print("    !! SKIPPED: mypy not installed, so mypy --strict was NOT run (.ci/gates installs it)")
        return PASS, "SKIPPED: mypy not installed; " + coverage_note
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "agentloop"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
    )
    lines = proc.stdout.strip().splitlines()
    last = lines[-1] if lines else "(no output)"
    if proc.returncode != 0 or not last.startswith("Success:"):
        sys.stdout.write("".join("    %s\n" % line for line in lines[-40:]))
        return FAIL, "mypy --strict agentloop (exit %d): %s; %s" % (proc.returncode, last, coverage_note)
    return PASS, "mypy --strict agentloop: %s; %s" % (last, coverage_note)


LEGS = [
    ("suite", leg_suite),
    ("tamper", leg_tamper),
    ("demo", leg_demo),
    ("conformance", leg_conformance),
    ("types", leg_types),
]


def main() -> int:
    verdicts = []
    for name, leg in LEGS:
        try:
            status, detail = leg()
        except Exception as exc:  # a leg that crashes could not grade anything
            status, detail = UNGRADED, "the leg crashed: %s: %s" % (type(exc).__name__, exc)
        verdicts.append(status)
        word = {PASS: "ok", FAIL: "FAILED", UNGRADED: "COULD NOT GRADE"}[status]
        print("leg %-6s %s -- %s" % (name, word, detail), flush=True)
    passed = verdicts.count(PASS)
    print("check: %d passed, %d failed" % (passed, len(verdicts) - passed))
    if FAIL in verdicts:
        return 1
    return 2 if UNGRADED in verdicts else 0


if __name__ == "__main__":
    sys.exit(main())
