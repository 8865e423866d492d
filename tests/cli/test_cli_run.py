"""``agentloop run`` and ``agentloop replay`` in-process: exit codes, the lines printed, what is left on disk.

The models are factories in tests/support/cli_run_models.py (``--model
tests.support.cli_run_models:NAME``), the way a user names their own; the HTTP
models talk to tests/support/loopback.py's server.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import unittest
from typing import Tuple
from unittest import mock

from agentloop.cli import main
from agentloop.transcript.verify import verify_file

from tests.support.helpers import TempDir, read_lines
from tests.support.loopback import LoopbackServer, openai_error, openai_reply

M = "tests.support.cli_run_models:"
TOOLS = ("--tools", M + "tools")


class RunCase(TempDir):
    def cli(self, *argv: str) -> Tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(list(argv), out=out)
        return status, out.getvalue(), err.getvalue()

    def run_cli(self, model: str, *extra: str, steps: str = "8", tokens: str = "1000") -> Tuple[int, str, str]:
        return self.cli(
            "run",
            "--model",
            model,
            "--task",
            "t",
            "--max-steps",
            steps,
            "--max-tokens",
            tokens,
            "-o",
            self.path(),
            *extra,
        )


class TestRunExitCodes(RunCase):
    def test_a_budget_stop_exits_3_and_the_transcript_verifies(self) -> None:
        status, out, err = self.run_cli(M + "adds_forever", *TOOLS, steps="2")
        self.assertEqual((status, err), (3, ""))
        self.assertIn("stop: step_budget (steps=2, tokens=20): max_steps of 2 reached (steps=2)", out)
        self.assertNotIn("answer:", out)
        self.assertTrue(verify_file(self.path()).ok)

    def test_a_tool_raising_system_exit_exits_4_and_names_the_prefix_left(self) -> None:
        status, out, err = self.run_cli(M + "exits", *TOOLS)
        self.assertEqual(status, 4)
        self.assertEqual(
            err,
            "agentloop run: error: the run did not finish: a tool or the model raised SystemExit(3); "
            "%s holds 2 records, a verifiable prefix without a stop record\n" % (self.path(),),
        )
        self.assertNotIn("stop:", out)
        result = verify_file(self.path())
        self.assertEqual((result.ok, result.count, result.complete), (True, 2, False))

    def test_ctrl_c_in_a_tool_exits_130_and_names_the_prefix_left(self) -> None:
        status, _, err = self.run_cli(M + "interrupted", *TOOLS)
        self.assertEqual(status, 130)
        self.assertEqual(
            err,
            "agentloop run: error: interrupted (Ctrl-C); %s holds 2 records, "
            "a verifiable prefix without a stop record\n" % (self.path(),),
        )

    def test_a_prefix_that_does_not_verify_is_said_so(self) -> None:
        # The tool damages the transcript being written, then exits.
        status, _, err = self.cli(
            "run",
            "--model",
            M + "wrecks",
            *TOOLS,
            "--task",
            self.path(),
            "--max-steps",
            "2",
            "--max-tokens",
            "1000",
            "-o",
            self.path(),
        )
        self.assertEqual(status, 4, _ + err)
        self.assertEqual(
            err,
            "agentloop run: error: the run did not finish: a tool or the model raised SystemExit(0); "
            "%s holds 1 record, NOT verifiable: line 1: bad_json: not JSON: Expecting value: "
            "line 1 column 1 (char 0)\n" % (self.path(),),
        )

    def test_system_exit_before_the_transcript_exists_says_nothing_was_written(self) -> None:
        status, out, err = self.run_cli(M + "exits_at_once")
        self.assertEqual((status, out), (4, ""))
        self.assertEqual(
            err,
            "agentloop run: error: the run did not finish: a tool or the model raised SystemExit(9); "
            "nothing was written to %s\n" % (self.path(),),
        )
        self.assertFalse(os.path.exists(self.path()))

    def test_prices_record_the_cost_and_a_cost_budget(self) -> None:
        self.write_bytes(b'{"m": {"input": 1.50, "output": 10}}', "prices.json")
        status, out, err = self.run_cli(M + "priced", "--prices", self.path("prices.json"), "--max-cost", "1")
        self.assertEqual((status, err), (0, ""), out)
        self.assertIn("answer:\npriced answer\n", out)
        assistant = [json.loads(line) for line in read_lines(self.path())][1]["payload"]
        self.assertEqual(assistant["cost"], "0.0049")  # 600 * 1.50 / 1e6 + 400 * 10 / 1e6, exact decimals

    def test_unreadable_prices_are_a_usage_error_and_nothing_runs(self) -> None:
        self.write_bytes(b"{not json", "prices.json")
        self.write_bytes(
            b'{"m": {"input": 100, "input": 1, "output": 10}}', "twice.json"
        )  # which input price is meant?
        for where in (self.path("prices.json"), self.path("absent.json"), self.path("twice.json")):
            status, out, err = self.run_cli(M + "priced", "--prices", where)
            self.assertEqual((status, out), (2, ""), where)
            self.assertTrue(err.startswith("agentloop run: error: --prices: cannot read %s as JSON: " % (where,)), err)
            self.assertFalse(os.path.exists(self.path()))

    def test_max_seconds_must_be_a_number_of_seconds(self) -> None:
        for text, reason in (
            ("soon", "must be a number of seconds"),
            ("-1", "must be a number of seconds >= 0"),
            ("nan", "must be a number of seconds >= 0"),
        ):
            with self.subTest(text):
                status, _, err = self.run_cli(M + "priced", "--max-seconds", text)
                self.assertEqual(status, 2)
                self.assertIn("argument --max-seconds: %s" % (reason,), err)

    def test_key_and_sign_options_need_a_checkpoint(self) -> None:
        for extra, message in (
            (("--key-env", "SOME_KEY"), "--key-file/--key-env: needs --checkpoint"),
            (("--sign", "k.key"), "--sign: needs --checkpoint"),
        ):
            status, out, err = self.run_cli(M + "priced", *extra)
            self.assertEqual((status, out), (2, ""))
            self.assertEqual(err, "agentloop run: error: %s\n" % (message,))
            self.assertFalse(os.path.exists(self.path()))

    def test_a_checkpoint_at_the_transcripts_own_path_is_refused(self) -> None:
        status, _, err = self.run_cli(M + "priced", "--checkpoint", self.path())
        self.assertEqual(status, 2)
        self.assertEqual(err, "agentloop run: error: %s: is the transcript's own path\n" % (self.path(),))

    def test_an_unsigned_checkpoint_is_named_without_signed(self) -> None:
        status, out, _ = self.run_cli(M + "priced", "--checkpoint", self.path("t.checkpoint"))
        self.assertEqual(status, 0)
        self.assertIn("checkpoint: %s\n" % (self.path("t.checkpoint"),), out)
        self.assertTrue(os.path.exists(self.path("t.checkpoint")))

    def test_a_transcript_that_cannot_be_created_is_a_usage_error(self) -> None:
        long = self.path("x" * 255 + ".jsonl")  # over the file system's name limit: open() fails
        status, out, err = self.cli(
            "run", "--model", M + "priced", "--task", "t", "--max-steps", "1", "--max-tokens", "9", "-o", long
        )
        self.assertEqual((status, out), (2, ""))
        self.assertEqual(err, "agentloop run: error: %s: cannot write it: File name too long\n" % (long,))


class TestModelReferences(RunCase):
    def test_a_factory_reference_that_is_not_a_working_factory(self) -> None:
        for spec, message in [
            (M + "NOT_CALLABLE", '--model: "%sNOT_CALLABLE" is a int, not a factory' % (M,)),
            (M + "raises", "--model: %sraises() raised RuntimeError" % (M,)),
            (M + "gives_a_number", "--model: %sgives_a_number() returned a int, not a model" % (M,)),
        ]:
            with self.subTest(spec):
                status, out, err = self.run_cli(spec)
                self.assertEqual((status, out), (2, ""))
                self.assertEqual(err, "agentloop run: error: %s\n" % (message,))
        status, _, err = self.run_cli(M + "priced", "--max-retries", "0")
        self.assertEqual(status, 2)
        self.assertEqual(
            err,
            "agentloop run: error: --model: a MODULE:FACTORY model takes no model options "
            "(--base-url, --system, ...)\n",
        )

    def test_options_that_do_not_go_with_the_model(self) -> None:
        for argv, message in [
            (
                ("--model", "http://127.0.0.1:9/v1", "--base-url", "http://127.0.0.1:9/v1", "--model-name", "m"),
                "--base-url: the model is already a URL",
            ),
            (("--model", "openai:gpt", "--model-name", "m"), "--model-name: only goes with a URL --model"),
            (
                ("--model", "openai:gpt", "--max-output-tokens", "5"),
                "--max-output-tokens: only goes with anthropic: and openai-responses: models",
            ),
            (
                ("--model", "gpt-4"),
                "--model: must be openai:MODEL, openai-responses:MODEL, anthropic:MODEL, "
                'an http(s):// base URL or MODULE:FACTORY, got "gpt-4"',
            ),
            (
                ("--model", "openai:"),
                "--model: must be openai:MODEL, openai-responses:MODEL, anthropic:MODEL, "
                'an http(s):// base URL or MODULE:FACTORY, got "openai:"',
            ),
        ]:
            with self.subTest(argv):
                status, out, err = self.cli(
                    "run", *argv, "--task", "t", "--max-steps", "1", "--max-tokens", "9", "-o", self.path()
                )
                self.assertEqual((status, out), (2, ""))
                self.assertEqual(err, "agentloop run: error: %s\n" % (message,))
                self.assertFalse(os.path.exists(self.path()))

    def test_a_retry_is_said_on_stderr_never_a_silent_wait(self) -> None:
        server = LoopbackServer(
            [openai_error(429, "slow down", "rate_limit_error", headers={"Retry-After": "0"}), openai_reply("fine")]
        ).start()
        self.addCleanup(server.stop)
        with mock.patch.dict(os.environ, {"OPENAI_API_KEY": ""}):
            status, out, err = self.run_cli("openai:gpt-test", "--base-url", server.openai_url, "--max-retries", "1")
        self.assertEqual(status, 0, out + err)
        self.assertTrue(err.startswith("agentloop run: waiting to retry: "), err)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertIn("answer:\nfine\n", out)

    def test_a_retry_notice_that_cannot_be_written_does_not_end_the_run(self) -> None:
        server = LoopbackServer(
            [openai_error(429, "slow down", "rate_limit_error", headers={"Retry-After": "0"}), openai_reply("fine")]
        ).start()
        self.addCleanup(server.stop)
        full = mock.Mock(write=mock.Mock(side_effect=OSError(28, "No space left on device")))
        out = io.StringIO()
        with mock.patch.dict(os.environ, {"OPENAI_API_KEY": ""}), mock.patch.object(sys, "stderr", full):
            status = main(
                [
                    "run",
                    "--model",
                    "openai:gpt-test",
                    "--base-url",
                    server.openai_url,
                    "--max-retries",
                    "1",
                    "--task",
                    "t",
                    "--max-steps",
                    "8",
                    "--max-tokens",
                    "1000",
                    "-o",
                    self.path(),
                ],
                out=out,
            )
        self.assertEqual(status, 0, out.getvalue())
        self.assertIn("answer:\nfine\n", out.getvalue())
        self.assertNotIn("OutputError", out.getvalue())

    def test_an_anthropic_model_gets_its_max_output_tokens(self) -> None:
        from tests.support.loopback import anthropic_reply

        server = LoopbackServer([anthropic_reply("hello")]).start()
        self.addCleanup(server.stop)
        with mock.patch.dict(os.environ, {"ANTHROPIC_API_KEY": ""}):
            status, out, err = self.run_cli(
                "anthropic:claude-test", "--base-url", server.url, "--max-output-tokens", "77"
            )
        self.assertEqual((status, err), (0, ""), out)
        self.assertEqual(server.requests[0].body["max_tokens"], 77)


class TestMcpOption(RunCase):
    def test_an_http_mcp_server_gives_the_run_its_tools(self) -> None:
        from tests.support.mcp_server import serve_http

        server, _, url = serve_http()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        status, out, err = self.run_cli(M + "adds_forever", "--mcp", "calc=" + url, steps="1")
        self.assertEqual(status, 3, out + err)
        with open(self.path(), encoding="utf-8") as handle:
            task = json.loads(handle.readline())["payload"]
        host = url.split("/")[2]
        self.assertEqual(
            (task["mcp"][0]["name"], task["mcp"][0]["transport"], task["mcp"][0]["host"]), ("calc", "http", host)
        )
        self.assertNotIn("query-secret", json.dumps(task))  # the URL's query (a token) is never recorded

    def test_malformed_mcp_options(self) -> None:
        for spec in ("=cmd", "name=", "plain"):
            with self.subTest(spec):
                status, _, err = self.run_cli(M + "priced", "--mcp", spec)
                self.assertEqual(status, 2)
                self.assertEqual(
                    err, 'agentloop run: error: --mcp: takes NAME=COMMAND or NAME=URL, got "%s"\n' % (spec,)
                )
        for url, reason in (
            (
                "https://u:TOKEN@h/x",
                "its URL must not hold credentials (pass a token with --mcp-option NAME.bearer-env=VARIABLE)",
            ),
            ("http://h:99999/x", "its URL has a bad port"),
            ("http://[TOKEN/x", "its URL is not a URL that can be read (a bracketed host?)"),
            ('echo "unterminated', "its command cannot be split into words: No closing quotation"),
        ):
            with self.subTest(url):
                status, out, err = self.run_cli(M + "priced", "--mcp", "srv=" + url)
                self.assertEqual((status, out), (2, ""))
                self.assertEqual(err, 'agentloop run: error: --mcp "srv": %s\n' % (reason,))


class TestReplayCommand(RunCase):
    def setUp(self) -> None:
        super().setUp()
        self.assertEqual(self.run_cli(M + "adds_forever", *TOOLS, steps="2")[0], 3)

    def test_the_default_output_is_beside_the_source(self) -> None:
        status, out, err = self.cli("replay", self.path(), *TOOLS)
        self.assertEqual((status, err), (0, ""), out)
        self.assertIn("replay: identical to %s\n" % (self.path(),), out)
        self.assertEqual(read_lines(self.path("t.replay.jsonl")), read_lines(self.path()))
        os.rename(self.path(), self.path("plain"))
        self.assertEqual(self.cli("replay", self.path("plain"), "--recorded-tools")[0], 0)
        self.assertTrue(os.path.exists(self.path("plain.replay.jsonl")))

    def test_a_replay_onto_its_own_source_is_refused(self) -> None:
        before = read_lines(self.path())
        status, _, err = self.cli("replay", self.path(), "--recorded-tools", "-o", self.path(), "--overwrite")
        self.assertEqual(status, 2)
        self.assertEqual(err, "agentloop replay: error: %s: is the transcript being replayed\n" % (self.path(),))
        self.assertEqual(read_lines(self.path()), before)

    def test_a_replay_whose_tools_raise_system_exit_exits_4(self) -> None:
        self.assertEqual(self.run_cli(M + "exits", *TOOLS, "--overwrite")[0], 4)
        status, _, err = self.cli("replay", self.path(), *TOOLS, "-o", self.path("r.jsonl"))
        self.assertEqual(status, 4)
        self.assertTrue(
            err.startswith(
                "agentloop replay: error: the run did not finish: a tool or the model raised SystemExit(3); "
            ),
            err,
        )


if __name__ == "__main__":
    unittest.main()
