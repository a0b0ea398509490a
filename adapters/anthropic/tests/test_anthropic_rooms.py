"""Many rooms at once, several rounds per turn, several turns per room, with
caching on: every message is answered once, every request is a valid
conversation with at most four breakpoints, and every call of a room reads
the room's previous call from the cache."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from typing import Any

import anthropic
import trio
from anthropic_stub import (
    Account,
    AnthropicStub,
    Reply,
    message,
    read_as_api,
    text,
    tool_use,
)
from band_trio_anthropic import AnthropicAdapter, AnthropicAdapterConfig

from band_trio import PlatformMessage
from band_trio.testing import FakeAgentTools

ROOMS = 6
TURNS = 4
_calls = itertools.count(1)


def model(body: dict[str, Any]) -> Reply:
    """Look at the participants, then answer, then stop: three rounds a turn."""
    last = read_as_api(body)["messages"][-1]["content"]
    if isinstance(last, str):
        return message(tool_use(f"toolu_{next(_calls)}", "band_get_participants", {}))
    result = json.loads(last[0]["content"]) if last[0]["type"] == "tool_result" else None
    if isinstance(result, dict) and "id" in result:  # band_send_message's receipt
        return message(text("done"))
    first = read_as_api(body)["messages"][0]["content"]
    room = first.split(" ")[1]
    args = {"content": f"answer in {room}", "mentions": ["user-1"]}
    return message(tool_use(f"toolu_{next(_calls)}", "band_send_message", args))


async def test_many_rooms_many_rounds(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(*[model] * (ROOMS * TURNS * 3))
    adapter = AnthropicAdapter(AnthropicAdapterConfig(), client=anthropic_client)
    await adapter.on_started("Claude", "a helpful agent")
    chats: dict[str, list[str]] = defaultdict(list)

    async def room(name: str) -> None:
        for turn in range(TURNS):
            msg = PlatformMessage(
                id=f"{name}-{turn}",
                room_id=name,
                content=f"{name} question {turn}",
                sender_id="user-1",
                sender_type="User",
                sender_name="Alice",
            )
            tools = FakeAgentTools()
            await adapter.on_message(
                msg, tools, [], None, None, is_session_bootstrap=False, room_id=name
            )
            chats[name] += tools.chat

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for index in range(ROOMS):
                nursery.start_soon(room, f"room{index}")

    assert anthropic_stub.refused == []
    assert not anthropic_stub.exhausted
    assert {name: chat for name, chat in chats.items()} == {
        f"room{i}": [f"answer in room{i}"] * TURNS for i in range(ROOMS)
    }
    by_room: dict[str, list[tuple[dict[str, Any], Account]]] = defaultdict(list)
    for body, account in zip(anthropic_stub.bodies, anthropic_stub.accounts, strict=True):
        name = read_as_api(body)["messages"][0]["content"].split(" ")[1]
        by_room[name].append((body, account))
        assert account.breakpoints <= 4
    assert len(by_room) == ROOMS
    for calls in by_room.values():
        assert len(calls) == TURNS * 3
        for (before, previous), (body, account) in itertools.pairwise(calls):
            sent_before = read_as_api(before)["messages"]
            assert read_as_api(body)["messages"][: len(sent_before)] == sent_before
            assert account.cache_read == previous.total
            assert account.breakpoints == 4
    # across the run, most input was read from the cache
    accounts = anthropic_stub.accounts
    assert sum(a.cache_read for a in accounts) > 5 * sum(a.input + a.cache_write for a in accounts)
