"""Input tokens billed at full price per turn: the Anthropic adapter over a
50-turn room, with and without prompt caching.

The adapter talks through the real ``anthropic`` client to the scripted
Messages API stub of ``adapters/anthropic/tests/anthropic_stub.py``, which
bills every request under the prompt-cache rules: the prefix up to a block
marked ``cache_control`` is written to the cache when it is long enough (1,024
tokens), a later request starting with that prefix reads it back, at most four
marked blocks per request, tools then system then messages. Tokens are the
stub's count (a quarter of a block's JSON length), the same for every
scenario, so the figures compare scenarios; they are not a tokenizer's.

Each turn of the room: a user message of about 60 words, a model call that
answers with ``band_send_message`` (and, every third turn, looks at the
participants first), and a last call that ends the turn with a short text:
two or three calls a turn. All 28 platform tools are offered (every
capability), as a team running the adapter with memory, contacts, tasks and
files would.

Scenarios:

* ``no cache``: ``AnthropicAdapterConfig(cache=None)``, the adapter as it was:
  every call pays for the tools, the system prompt and the whole conversation;
* ``cache``: the default (breakpoints on the tools, the system prompt and two
  on the conversation);
* ``cache + budget``: the default with ``history_token_budget=6000``, so the
  room's oldest turns are trimmed along the way.

Cost in "input-token equivalents" weighs the counts as the API prices them:
full-price input 1, cache reads 0.1, cache writes 1.25.

Run::

    uv run python benchmarks/bench_anthropic_tokens.py
    uv run python benchmarks/bench_anthropic_tokens.py --turns 50 --json

Figures are printed (and written with ``--json``), never asserted.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import anthropic
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "adapters/anthropic/tests"))

from anthropic_stub import Account, AnthropicStub, Reply, message, text, tool_use
from band_trio_anthropic import AnthropicAdapter, AnthropicAdapterConfig

from band_trio import (
    Capability,
    PlatformMessage,
)
from band_trio.testing import FakeAgentTools

RESULTS = Path(__file__).resolve().parent / "results" / "anthropic-tokens.json"
SCENARIOS: dict[str, dict[str, Any]] = {
    "no cache": {"cache": None},
    "cache": {},
    "cache + budget": {"history_token_budget": 6000},
}
QUESTION = (
    "Could you look at the figures we discussed for the quarterly report and tell me "
    "whether the totals for the northern region still add up after the corrections "
    "that came in this morning, and if not, which line items look wrong to you?"
)


def _model() -> Any:
    calls = itertools.count(1)

    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        blocks = last if isinstance(last, list) else [{"type": "text", "text": last}]
        if blocks[0].get("type") == "tool_result":
            if "band_get_participants" in json.dumps(body["messages"][-2]["content"]):
                args = {"content": "Here is what I found. " * 6, "mentions": ["user-1"]}
                return message(tool_use(f"toolu_{next(calls)}", "band_send_message", args))
            return message(text("Answered."))
        turn = next(calls)
        if turn % 3 == 0:
            return message(tool_use(f"toolu_{turn}", "band_get_participants", {}))
        args = {"content": "The totals add up; line 14 was corrected. " * 3, "mentions": ["user-1"]}
        return message(tool_use(f"toolu_{turn}", "band_send_message", args))

    return answer


async def _scenario(turns: int, config: dict[str, Any]) -> list[list[Account]]:
    """The stub's accounts of each turn's calls."""
    stub = AnthropicStub(accounting=True)
    per_turn: list[list[Account]] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(stub.serve)
        async with anthropic.AsyncAnthropic(
            base_url=stub.url, api_key="bench", max_retries=0
        ) as client:
            adapter = AnthropicAdapter(
                AnthropicAdapterConfig(**config), client=client, capabilities=list(Capability)
            )
            await adapter.on_started("Claude", "a careful analyst")
            stub.push(*[_model()] * (turns * 4))
            for turn in range(turns):
                before = len(stub.accounts)
                msg = PlatformMessage(
                    id=f"m{turn}",
                    room_id="room",
                    content=f"({turn}) {QUESTION}",
                    sender_id="user-1",
                    sender_type="User",
                    sender_name="Alice",
                )
                tools = FakeAgentTools()
                await adapter.on_message(
                    msg, tools, [], None, None, is_session_bootstrap=False, room_id="room"
                )
                per_turn.append(stub.accounts[before:])
        nursery.cancel_scope.cancel()
    if stub.refused:
        raise SystemExit(f"the stub refused requests: {stub.refused[:2]}")
    return per_turn


def _cost(accounts: list[Account]) -> float:
    return sum(a.input + 0.1 * a.cache_read + 1.25 * a.cache_write for a in accounts)


def _summary(per_turn: list[list[Account]]) -> dict[str, Any]:
    every = [a for turn in per_turn for a in turn]
    # Not read from the cache: billed at the full price (input) or a quarter
    # above it (cache writes).
    uncached = [sum(a.input + a.cache_write for a in turn) for turn in per_turn]
    picks = sorted({0, 9, 24, len(uncached) - 1} & set(range(len(uncached))))
    return {
        "calls": len(every),
        "uncached_input_per_turn": {
            **{f"turn {i + 1}": uncached[i] for i in picks},
            "mean": round(sum(uncached) / len(uncached)),
        },
        "total": {
            "prompt_tokens": sum(a.total for a in every),
            "full_price_input": sum(a.input for a in every),
            "cache_write": sum(a.cache_write for a in every),
            "cache_read": sum(a.cache_read for a in every),
            "input_token_equivalents": round(_cost(every)),
        },
    }


async def _main(turns: int) -> dict[str, Any]:
    return {name: _summary(await _scenario(turns, config)) for name, config in SCENARIOS.items()}


def _table(results: dict[str, Any]) -> str:
    names = list(results)
    first = results[names[0]]
    rows = [
        "| | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for key in first["uncached_input_per_turn"]:
        cells = [f"{results[n]['uncached_input_per_turn'][key]:,}" for n in names]
        rows.append(f"| uncached input, {key} | " + " | ".join(cells) + " |")
    labels = {
        "prompt_tokens": "total prompt tokens",
        "full_price_input": "total full-price input (1×)",
        "cache_write": "total cache writes (1.25×)",
        "cache_read": "total cache reads (0.1×)",
    }
    for key, label in labels.items():
        cells = [f"{results[n]['total'][key]:,}" for n in names]
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    base = first["total"]["input_token_equivalents"]
    cells = [
        f"{results[n]['total']['input_token_equivalents']:,} "
        f"({results[n]['total']['input_token_equivalents'] / base:.0%})"
        for n in names
    ]
    rows.append("| total cost, input-token equivalents | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--json", action="store_true", help=f"also write {RESULTS}")
    args = parser.parse_args()
    results = trio.run(_main, args.turns)
    print(_table(results))
    if args.json:
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps({"turns": args.turns, "scenarios": results}, indent=2))


if __name__ == "__main__":
    main()
