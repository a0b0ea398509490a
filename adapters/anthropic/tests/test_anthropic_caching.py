"""Prompt-cache breakpoints: where the policy puts them (sans-io), and what they
save over multi-round, multi-room conversations billed by the stub's cache rules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anthropic
import pytest
import trio
from anthropic_stub import (
    Account,
    AnthropicStub,
    block_tokens,
    message,
    read_as_api,
    request_blocks,
    text,
    tool_use,
)
from band_trio_anthropic import (
    MAX_CACHE_BREAKPOINTS,
    AnthropicAdapter,
    AnthropicAdapterConfig,
    CachedRequest,
    CachePolicy,
)

from band_trio import BandConfigError, PlatformMessage
from band_trio.testing import FakeAgentTools

MARK = {"type": "ephemeral"}
TOOLS = [{"name": "a", "input_schema": {}}, {"name": "b", "input_schema": {}}]


def incoming(content: str, *, id: str, room: str = "room-1") -> PlatformMessage:
    return PlatformMessage(
        id=id,
        room_id=room,
        content=content,
        sender_id="user-1",
        sender_type="User",
        sender_name="Alice",
    )


async def run_turn(
    adapter: AnthropicAdapter, msg: PlatformMessage, tools: FakeAgentTools | None = None
) -> FakeAgentTools:
    tools = tools or FakeAgentTools()
    with trio.fail_after(20):
        await adapter.on_message(
            msg, tools, [], None, None, is_session_bootstrap=False, room_id=msg.room_id
        )
    return tools


def marked_positions(body: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(where, index) of every marked block: ("tools", i), ("system", i), ("messages", i)."""
    out: list[tuple[str, int]] = []
    out += [("tools", i) for i, t in enumerate(body.get("tools") or []) if "cache_control" in t]
    system = body.get("system")
    if isinstance(system, list):
        out += [("system", i) for i, b in enumerate(system) if "cache_control" in b]
    for i, m in enumerate(body["messages"]):
        content = m["content"]
        if isinstance(content, list) and any("cache_control" in b for b in content):
            out.append(("messages", i))
    return out


def previous_tail(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """The last user message before the latest assistant message."""
    roles = [m["role"] for m in messages]
    if "assistant" not in roles:
        return None
    last_assistant = len(roles) - 1 - roles[::-1].index("assistant")
    users = [i for i in range(last_assistant) if roles[i] == "user"]
    return users[-1] if users else None


# ---------------------------------------------------------------- the policy (sans-io)


CONVERSATION = [
    {"role": "user", "content": "one"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": "two"},
]


def test_the_default_policy_marks_tools_system_the_previous_end_and_the_tail() -> None:
    before = [dict(m) for m in CONVERSATION]
    tools_before = [dict(t) for t in TOOLS]
    cached = CachePolicy().apply(TOOLS, "be brief", CONVERSATION)

    assert isinstance(cached, CachedRequest)
    assert cached.tools[-1]["cache_control"] == MARK
    assert "cache_control" not in cached.tools[0]
    assert cached.system == [{"type": "text", "text": "be brief", "cache_control": MARK}]
    # the previous call ended at the tool results; this one ends at "two"
    assert cached.messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "ok", "cache_control": MARK}
    ]
    assert cached.messages[4]["content"] == [{"type": "text", "text": "two", "cache_control": MARK}]
    assert [cached.messages[i] for i in (0, 1, 3)] == [CONVERSATION[i] for i in (0, 1, 3)]
    body = {"tools": cached.tools, "system": cached.system, "messages": cached.messages}
    assert len(marked_positions(body)) == MAX_CACHE_BREAKPOINTS == 4
    # nothing given was changed
    assert before == CONVERSATION
    assert tools_before == TOOLS


def test_a_first_call_has_no_previous_end() -> None:
    cached = CachePolicy().apply(TOOLS, "s", [{"role": "user", "content": "hi"}])
    body = {"tools": cached.tools, "system": cached.system, "messages": cached.messages}
    assert marked_positions(body) == [("tools", 1), ("system", 0), ("messages", 0)]


def test_policy_knobs() -> None:
    only_tail = CachePolicy(tools=False, system=False, conversation=1, ttl="1h")
    cached = only_tail.apply(TOOLS, "s", CONVERSATION)
    body = {"tools": cached.tools, "system": cached.system, "messages": cached.messages}
    assert marked_positions(body) == [("messages", 4)]
    assert cached.system == "s"
    assert cached.messages[4]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    nothing = CachePolicy(tools=False, system=False, conversation=0).apply(TOOLS, "s", CONVERSATION)
    assert nothing == CachedRequest(TOOLS, "s", CONVERSATION)


def test_thinking_and_empty_blocks_are_never_marked() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": ""}]},
    ]
    cached = CachePolicy().apply([], "", messages)
    assert cached.messages[0]["content"] == [
        {"type": "text", "text": "x", "cache_control": MARK},
        {"type": "text", "text": ""},
    ]
    assert cached.system == ""
    thinking_only = [{"role": "user", "content": [{"type": "thinking", "thinking": "t"}]}]
    assert CachePolicy().apply([], "", thinking_only).messages == thinking_only


@pytest.mark.parametrize(
    "kwargs", [{"conversation": 3}, {"conversation": -1}, {"conversation": True}, {"ttl": "2h"}]
)
def test_bad_policy_values_are_a_config_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(BandConfigError):
        CachePolicy(**kwargs)


def test_the_config_refuses_a_cache_that_is_not_a_policy() -> None:
    with pytest.raises(BandConfigError):
        AnthropicAdapterConfig(cache={"tools": True})  # type: ignore[arg-type]
    assert AnthropicAdapterConfig().cache == CachePolicy()
    assert AnthropicAdapterConfig(cache=None).cache is None


# ---------------------------------------------------------------- over real turns


async def started(client: anthropic.AsyncAnthropic, **config: Any) -> AnthropicAdapter:
    adapter = AnthropicAdapter(AnthropicAdapterConfig(**config), client=client)
    await adapter.on_started("Claude", "a helpful agent")
    return adapter


def prefix_tokens(body: Mapping[str, Any], sections: set[str]) -> int:
    return sum(block_tokens(b) for s, b in request_blocks(body) if s in sections)


async def test_consecutive_calls_of_a_room_read_the_whole_previous_request(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """Three turns of two rounds each: every call after the first reads all of
    the previous call from the cache and bills only what is new at full price."""
    anthropic_stub.accounting = True
    send = {"content": "hi Alice", "mentions": ["user-1"]}
    for turn in range(3):
        anthropic_stub.push(
            message(
                text(f"looking {turn}"), tool_use(f"toolu_{turn}", "band_get_participants", {})
            ),
            message(tool_use(f"toolu_s{turn}", "band_send_message", send)),
            message(text(f"done {turn}")),
        )
    adapter = await started(anthropic_client)
    usages = []
    for turn in range(3):
        tools = await run_turn(adapter, incoming(f"question {turn}", id=f"m{turn}"))
        (usage,) = [e.metadata["band_usage"] for e in tools.events_sent if e.message_type == "task"]
        usages.append(usage)

    bodies, accounts = anthropic_stub.bodies, anthropic_stub.accounts
    assert len(bodies) == len(accounts) == 9
    assert anthropic_stub.refused == []
    for index, body in enumerate(bodies):
        marks = marked_positions(body)
        assert len(marks) <= MAX_CACHE_BREAKPOINTS
        assert marks[:2] == [("tools", len(body["tools"]) - 1), ("system", 0)]
        expected = [previous_tail(body["messages"]), len(body["messages"]) - 1]
        assert marks[2:] == [("messages", i) for i in expected if i is not None]
        if index == 0:
            assert len(marks) == 3
            assert accounts[0].cache_read == 0
            assert accounts[0].cache_write == accounts[0].total - accounts[0].input
        else:
            assert len(marks) == 4
            # the previous request is this one's prefix, read whole
            assert (
                read_as_api(body)["messages"][: len(bodies[index - 1]["messages"])]
                == (read_as_api(bodies[index - 1])["messages"])
            )
            assert accounts[index].cache_read == accounts[index - 1].total
            assert accounts[index].input == 0  # everything up to the tail is cached
    # the usage events carry the cache figures of the turn's calls
    for turn, usage in enumerate(usages):
        calls = accounts[3 * turn : 3 * turn + 3]
        assert usage["input_tokens"] == sum(a.input for a in calls)
        assert usage["cache_read_tokens"] == sum(a.cache_read for a in calls) > 0
        assert usage["cache_write_tokens"] == sum(a.cache_write for a in calls) > 0


async def test_a_new_room_starts_from_the_cached_tools_and_system_prompt(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(message(text("a")), message(text("b")))
    adapter = await started(anthropic_client)
    await run_turn(adapter, incoming("in room a", id="a1", room="room-a"))
    await run_turn(adapter, incoming("in room b", id="b1", room="room-b"))
    first, second = anthropic_stub.accounts
    assert first.cache_read == 0
    assert second.cache_read == prefix_tokens(anthropic_stub.bodies[1], {"tool", "system"})
    assert second.cache_read > 1024


async def test_a_round_of_many_tool_calls_still_hits_through_the_previous_end(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """30 parallel calls add more blocks than the cache looks back over: the
    breakpoint on the previous end finds the previous request exactly; the
    tail alone falls back to the tools and system prompt."""
    calls = [tool_use(f"toolu_{i}", "band_get_participants", {}) for i in range(30)]

    async def two_calls(policy: CachePolicy) -> tuple[Account, Account]:
        stub = AnthropicStub()
        async with trio.open_nursery() as nursery:
            await nursery.start(stub.serve)
            async with anthropic.AsyncAnthropic(
                base_url=stub.url, api_key="k", max_retries=0, timeout=20.0
            ) as client:
                adapter = await started(client, cache=policy)
                stub.push(message(*calls), message(text("done")))
                await run_turn(adapter, incoming("check everyone", id="m1"))
            nursery.cancel_scope.cancel()
        assert stub.refused == []
        first, second = stub.accounts
        return first, second

    first, with_anchor = await two_calls(CachePolicy())
    assert with_anchor.cache_read == first.total
    assert with_anchor.cache_write == with_anchor.total - first.total
    first, tail_only = await two_calls(CachePolicy(conversation=1))
    # only the tools and system prompt are found: the first call's messages
    # are written (and paid for) a second time
    assert tail_only.cache_read < first.total
    assert tail_only.cache_write > with_anchor.cache_write


async def test_caching_off_sends_no_marker_and_bills_everything(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(message(text("a")), message(text("b")))
    adapter = await started(anthropic_client, cache=None)
    await run_turn(adapter, incoming("one", id="m1"))
    await run_turn(adapter, incoming("two", id="m2"))
    for body, account in zip(anthropic_stub.bodies, anthropic_stub.accounts, strict=True):
        assert marked_positions(body) == []
        assert isinstance(body["system"], str)
        assert account == Account(account.total, 0, 0, 0)


class EveryMessage(CachePolicy):
    """A custom policy that marks every message (too many for the API)."""

    def apply(
        self,
        tools: Sequence[Mapping[str, Any]],
        system: str,
        messages: Sequence[Mapping[str, Any]],
    ) -> CachedRequest:
        marked = [
            {**m, "content": [{"type": "text", "text": str(m["content"]), "cache_control": MARK}]}
            for m in messages
        ]
        return CachedRequest([dict(t) for t in tools], system, marked)


async def test_a_custom_policy_is_used_and_too_many_marks_are_refused_before_the_call(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(message(text("a")), message(text("b")))
    adapter = await started(anthropic_client, cache=EveryMessage())
    await run_turn(adapter, incoming("one", id="m1"))
    await run_turn(adapter, incoming("two", id="m2"))
    assert marked_positions(anthropic_stub.bodies[1]) == [("messages", i) for i in range(3)]
    # five messages, five marks: refused before any request
    with pytest.raises(BandConfigError, match="at most 4"):
        await run_turn(adapter, incoming("three", id="m3"))
    assert len(anthropic_stub.bodies) == 2
