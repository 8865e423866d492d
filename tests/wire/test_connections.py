"""Keep-alive connections (agentloop.wire.connections): one per thread and host, reused across
turns; a connection the server closed while idle reopened without sending a request twice."""

from __future__ import annotations

import os
import pickle
import threading
import time
from typing import Any, List
from unittest import mock

from agentloop import ModelReply, run
from agentloop.models import HttpTransport, OpenAIChat, RetryPolicy
from agentloop.wire import connections
from agentloop.wire.connections import ConnectionPool

from tests.support.loopback import Canned, LoopbackServer, openai_reply
from tests.support.modelcase import NOW, LoopbackCase, some_tools


def echo_turns(turns: int) -> List[Any]:
    """``turns - 1`` replies that each call echo, then an answer."""
    calls = [openai_reply("turn %d" % i, [("c%d" % i, "echo", '{"text": "%d"}' % i)]) for i in range(1, turns)]
    return calls + [openai_reply("done")]


class PoolCase(LoopbackCase):
    def model(self, **transport: Any) -> OpenAIChat:
        transport.setdefault("retry", RetryPolicy(max_retries=2))
        self.http = HttpTransport(
            timeout=5, sleep=self.waits.append, clock=lambda: NOW, jitter=lambda: 0.0, **transport
        )
        self.addCleanup(self.http.close)
        return OpenAIChat("gpt-test", base_url=self.server.openai_url, api_key="", transport=self.http)

    def ask(self, model: OpenAIChat) -> ModelReply:
        return model([{"role": "user", "content": "t"}], [])

    def idle_until_closed(self) -> None:
        """Wait (up to 5 s) until the server's close of this thread's kept connection has arrived."""
        conn = [kept for _, _, kept in self.http.pool._kept.idle.values()][0]
        deadline = time.monotonic() + 5
        while not connections._dropped(conn) and time.monotonic() < deadline:
            time.sleep(0.01)


class TestKeepAlive(PoolCase):
    def test_a_100_turn_run_opens_one_connection(self) -> None:
        self.server = self.serve(*echo_turns(100))
        result = run("Echo.", self.model(), some_tools("echo"), transcript=self.path(), max_steps=100, max_tokens=10**6)
        self.assertEqual((result.stop_reason, result.steps), ("no_tool_calls", 100))
        self.assertEqual((len(self.server.requests), self.server.connections, self.http.pool.opened), (100, 1, 1))
        self.assertNotIn("connection", self.server.requests[50].headers)  # HTTP/1.1: persistent unless said otherwise

    def test_without_keep_alive_each_turn_opens_its_own(self) -> None:
        self.server = self.serve(*echo_turns(100))
        run(
            "Echo.",
            self.model(keep_alive=False),
            some_tools("echo"),
            transcript=self.path(),
            max_steps=100,
            max_tokens=10**6,
        )
        self.assertEqual((len(self.server.requests), self.server.connections), (100, 100))
        self.assertEqual(self.server.requests[0].headers["connection"], "close")

    def test_a_connection_the_server_closed_while_idle_is_reopened_and_nothing_is_sent_twice(self) -> None:
        self.server = self.serve(Canned(openai_reply("one"), hangup=True), openai_reply("two"), openai_reply("three"))
        model = self.model()
        sends: List[Any] = []
        send = ConnectionPool._send

        def counted(*args: Any) -> None:
            sends.append(args[0])
            send(*args)

        with mock.patch.object(ConnectionPool, "_send", staticmethod(counted)):
            self.assertEqual(self.ask(model).text, "one")
            self.idle_until_closed()  # the server's close arrives while the connection sits idle
            self.assertEqual([self.ask(model).text for _ in range(2)], ["two", "three"])
        self.assertEqual((len(self.server.requests), self.server.connections, self.waits), (3, 2, []))
        self.assertEqual(len(sends), 3)  # the closed connection was seen closed before anything went on it
        self.assertIsNot(sends[1], sends[0])

    def test_a_send_that_fails_on_a_kept_connection_goes_once_more_on_a_new_one(self) -> None:
        """Step 2: the check passed but the socket is gone before the send; the server never had it."""
        self.server = self.serve(openai_reply("one"), openai_reply("two"))
        model = self.model()
        self.ask(model)
        kept = list(self.http.pool._kept.idle.values())[0][2]
        kept.sock.close()  # the send on it fails at once
        with mock.patch.object(connections, "_dropped", lambda conn: False):
            self.assertEqual(self.ask(model).text, "two")
        self.assertEqual((len(self.server.requests), self.server.connections, self.waits), (2, 2, []))

    def test_a_request_sent_whole_that_gets_no_answer_is_sent_again_only_by_the_retry_policy_which_says_so(
        self,
    ) -> None:
        """Step 3: the server read the request and closed the kept connection without an answer; it may
        have acted on it, so nothing is resent silently -- the retry policy decides, waits and is heard."""
        self.server = self.serve(openai_reply("one"), Canned(drop=True), openai_reply("two"))
        notices: List[str] = []
        model = self.model(on_retry=notices.append)
        self.ask(model)
        self.assertEqual(self.ask(model).text, "two")
        self.assertEqual((len(self.server.requests), self.server.connections, self.waits), (3, 2, [0.5]))
        self.assertIn("connection failed: RemoteDisconnected", notices[0])
        self.assertIn("retry 1 of 2", notices[0])

    def test_each_thread_has_its_own_connection_and_an_ended_threads_is_closed(self) -> None:
        self.server = self.serve()
        model = self.model()
        threads = [threading.Thread(target=self.ask, args=(model,)) for _ in range(3)]
        for thread in threads:
            thread.start()
            thread.join()  # one after another: still one connection each
        self.assertEqual(self.server.connections, 3)
        self.ask(model)  # this thread's keep closes the ended threads' connections
        idle = self.http.pool._kept.idle
        self.assertEqual([thread for thread, _, _ in idle.values()], [threading.current_thread()])
        self.assertEqual(self.server.connections, 4)

    def test_a_connection_inherited_by_a_fork_is_not_used(self) -> None:
        self.server = self.serve()
        model = self.model()
        self.ask(model)
        with mock.patch.object(os, "getpid", lambda: -1):
            self.ask(model)
        self.assertEqual(self.server.connections, 2)

    def test_a_pool_pickles_without_its_connections(self) -> None:
        self.server = self.serve()
        http = HttpTransport(timeout=5)
        self.addCleanup(http.close)
        self.ask(OpenAIChat("gpt-test", base_url=self.server.openai_url, api_key="", transport=http))
        copy = pickle.loads(pickle.dumps(http))
        self.assertEqual(
            (http.pool.opened, copy.pool.opened, copy.pool._kept.idle, copy.pool.keep_alive), (1, 0, {}, True)
        )


class TestProxies(PoolCase):
    def test_an_http_proxy_from_the_environment_gets_the_absolute_url_and_its_credentials(self) -> None:
        self.server = self.serve()
        proxy = "http://user:p%%40ss@127.0.0.1:%d" % (self.server.port,)
        with mock.patch.dict(os.environ, {"http_proxy": proxy, "HTTP_PROXY": proxy, "no_proxy": "", "NO_PROXY": ""}):
            http = HttpTransport(timeout=5)
            self.addCleanup(http.close)
            model = OpenAIChat("gpt-test", base_url="http://api.example.invalid/v1", api_key="", transport=http)
            self.assertEqual(self.ask(model).text, "I have no tool to use.")
        seen = self.server.requests[0]
        self.assertEqual(seen.path, "http://api.example.invalid/v1/chat/completions")
        self.assertEqual(seen.headers["proxy-authorization"], "Basic dXNlcjpwQHNz")  # user:p@ss
        self.assertEqual(seen.headers["host"], "api.example.invalid")

    def test_where_a_url_goes(self) -> None:
        env = {
            "https_proxy": "http://proxy.example:3128",
            "HTTPS_PROXY": "http://proxy.example:3128",
            "no_proxy": "internal.example",
            "NO_PROXY": "internal.example",
            "http_proxy": "",
            "HTTP_PROXY": "",
        }
        with mock.patch.dict(os.environ, env):
            self.assertEqual(
                ConnectionPool.origin("https://api.openai.com/v1"),
                ("https", "api.openai.com", 443, "proxy.example", 3128, ""),
            )
            self.assertEqual(
                ConnectionPool.origin("https://internal.example:8443/v1"),
                ("https", "internal.example", 8443, "", 0, ""),
            )
            self.assertEqual(
                ConnectionPool.origin("https://127.0.0.1/v1"), ("https", "127.0.0.1", 443, "", 0, "")
            )  # loopback: never
            self.assertEqual(ConnectionPool.origin("http://h:81/v1"), ("http", "h", 81, "", 0, ""))


class TestServerSide(LoopbackCase):
    def test_the_stand_in_counts_connections(self) -> None:
        with LoopbackServer() as server:
            self.assertEqual(server.connections, 0)


class TestEdges(PoolCase):
    def test_a_kept_connection_that_cannot_be_checked_counts_as_closed(self) -> None:
        import http.client
        import socket

        conn = http.client.HTTPConnection("127.0.0.1", 9)
        self.assertTrue(connections._dropped(conn))  # never opened
        conn.sock = socket.socket()
        conn.sock.close()  # select cannot take a closed descriptor
        self.assertTrue(connections._dropped(conn))

    def test_an_https_origin_through_a_proxy_is_a_tunnel_with_its_credentials(self) -> None:
        pool = ConnectionPool()
        origin = ("https", "api.example.invalid", 443, "proxy.example", 3128, "Basic dTpw")
        conn = pool._open(origin, 5)
        self.addCleanup(conn.close)
        self.assertEqual((conn.host, conn.port), ("proxy.example", 3128))
        self.assertEqual((conn._tunnel_host, conn._tunnel_port), ("api.example.invalid", 443))  # type: ignore[attr-defined]
        self.assertEqual(conn._tunnel_headers["Proxy-Authorization"], "Basic dTpw")  # type: ignore[attr-defined]
        self.assertEqual(repr(pool), "ConnectionPool(keep_alive=True, opened=1)")
        with mock.patch.dict(
            os.environ,
            {
                "https_proxy": "http://u:p@proxy.example:3128",
                "HTTPS_PROXY": "http://u:p@proxy.example:3128",
                "no_proxy": "",
                "NO_PROXY": "",
            },
        ):
            self.assertEqual(ConnectionPool.origin("https://api.example.invalid/v1"), origin)
