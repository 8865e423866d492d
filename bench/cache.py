"""What Anthropic prompt caching saves on a 50-turn run: the same run with and without ``cache=True``.

    python3 bench/cache.py [--turns 50] [--system-chars 8000]

``AnthropicMessages`` against the repository's stand-in Messages API (``tests/support/loopback.py``), whose
:class:`~tests.support.loopback.PromptCache` reports usage as the API documents it ("Prompt caching"): a
``cache_control`` breakpoint writes the prompt up to it, a later request reads the longest written
prefix at a breakpoint or up to 20 blocks before one, prefixes under 1024 tokens are not cached,
and a token is counted as 4 characters.  The run: a system prompt of ``--system-chars`` characters,
the demo tools, ``--turns`` turns each calling ``echo`` once (the last answers).  Both runs record
each turn's usage and cost (``prices``: Claude Sonnet 4.5's list prices, USD per million tokens:
input 3, cache writes 3.75, cache reads 0.30, output 15); printed: the input tokens by kind, the
cost, and the ratio.  The transcripts are verified.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from decimal import Decimal
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentloop import run, verify_file  # noqa: E402
from agentloop.models import AnthropicMessages  # noqa: E402
from tests.support.helpers import demo_tools  # noqa: E402
from tests.support.loopback import LoopbackServer, PromptCache, Seen, anthropic_reply  # noqa: E402 -- the stand-in of the tests

PRICES = {"claude-sonnet-4-5": {"input": "3", "cache_write": "3.75", "cache_read": "0.30", "output": "15"}}


def script(turns: int, cache: PromptCache) -> List[Any]:
    def turn(number: int) -> Any:
        def answer(seen: Seen) -> Dict[str, Any]:
            usage = cache.usage(seen.body, 40)
            if number == turns:
                return anthropic_reply("All %d echoes are done." % (turns - 1,), usage=usage)
            return anthropic_reply(
                "Echo number %d." % (number,),
                [("toolu_%d" % number, "echo", {"text": "line %d" % number})],
                usage=usage,
            )

        return answer

    return [turn(number) for number in range(1, turns + 1)]


def one_run(turns: int, system: str, cached: bool, folder: str) -> Dict[str, Any]:
    with LoopbackServer(script(turns, PromptCache())) as server:
        model = AnthropicMessages("claude-sonnet-4-5", base_url=server.url, api_key="", system=system, cache=cached)
        path = os.path.join(folder, "cache-%s.jsonl" % ("on" if cached else "off"))
        result = run(
            "Echo %d lines." % (turns - 1,),
            model,
            demo_tools(),
            transcript=path,
            max_steps=turns,
            max_tokens=10**9,
            prices=PRICES,
            max_cost="1000",
        )
        model.transport.close()
    assert result.stop_reason == "no_tool_calls" and result.steps == turns and verify_file(path).ok, result
    totals = {"input_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0, "output_tokens": 0}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record["kind"] == "assistant":
                for name in totals:
                    totals[name] += record["payload"]["usage"].get(name, 0)
    totals["cost"] = Decimal(result.cost or "0")
    return totals


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--system-chars", type=int, default=8000)
    args = parser.parse_args(argv)
    system = ("You are a careful assistant. Follow the house rules below exactly. " * 200)[: args.system_chars]
    print(
        "%d turns, a system prompt of %d characters (about %d tokens), the 4 demo tools"
        % (args.turns, len(system), len(system) // 4)
    )
    print(
        "%-10s %14s %14s %14s %14s %12s"
        % ("cache", "input tokens", "of which read", "of which written", "output", "cost (USD)")
    )
    with tempfile.TemporaryDirectory() as folder:
        runs = {cached: one_run(args.turns, system, cached, folder) for cached in (False, True)}
    for cached, totals in runs.items():
        print(
            "%-10s %14d %14d %14d %14d %12s"
            % (
                "on" if cached else "off",
                totals["input_tokens"],
                totals["cache_read_tokens"],
                totals["cache_write_tokens"],
                totals["output_tokens"],
                totals["cost"],
            )
        )
    saved = runs[False]["cost"] - runs[True]["cost"]
    print(
        "cache=True costs %.2fx; it saves %s USD (%.0f%%) on this run"
        % (runs[True]["cost"] / runs[False]["cost"], saved, 100 * saved / runs[False]["cost"])
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
