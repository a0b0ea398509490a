"""FakeAgentTools: protocol conformance, recording, real validation and schemas
(refusals the same as AgentTools', to the letter), scripted failures, waiting
helpers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio

from band_trio.adapter import AgentToolsProtocol, ToolEffect
from band_trio.errors import BandToolError, RoomExecutionStoppedError
from band_trio.testing import FakeAgentTools
from band_trio.testing._memory_rest import MemoryRest
from band_trio.testing.fakes import SentMessage
from band_trio.tools import (
    EVENT_CONTENT_LIMIT,
    AgentTools,
    Capability,
    CustomTools,
    ToolErrorKind,
    get_tool_schemas,
)
from tests.scripted_platform import AGENT_ID, ROOM, ROSTER, RecordingHooks


def fake(**kw: object) -> FakeAgentTools:
    return FakeAgentTools(participants=ROSTER, agent_id=AGENT_ID, **kw)  # type: ignore[arg-type]


def real(rest: MemoryRest | None = None, **kw: Any) -> AgentTools:
    """AgentTools itself over an in-memory REST client, with the fake's roster."""
    return AgentTools(
        rest=rest or MemoryRest([ROOM], agent_id=AGENT_ID, participants=ROSTER),  # type: ignore[arg-type]
        room_id=ROOM,
        agent_id=AGENT_ID,
        participants=ROSTER,
        **kw,
    )


REFUSED_CALLS: dict[str, Callable[[AgentTools], Awaitable[object]]] = {
    "no mention": lambda t: t.send_message("hello", []),
    "a mention of the agent itself": lambda t: t.send_message("hello", ["@carol/me"]),
    "an unknown participant": lambda t: t.send_message("hello", ["@nobody"]),
    "a mention that is no string": lambda t: t.send_message("hello", [7]),  # type: ignore[list-item]
    "an event type the platform refuses": lambda t: t.send_event("x", "usage"),
    "a notice to nobody": lambda t: t.send_notice("on it", []),
}


@pytest.mark.parametrize("call", REFUSED_CALLS.values(), ids=REFUSED_CALLS.keys())
async def test_a_call_the_tools_refuse_is_refused_by_the_fake_to_the_letter(
    call: Callable[[AgentTools], Awaitable[object]],
) -> None:
    with pytest.raises(BandToolError) as by_real:
        await call(real())
    with pytest.raises(BandToolError) as by_fake:
        await call(fake())
    assert type(by_fake.value) is type(by_real.value)
    assert str(by_fake.value) == str(by_real.value)


REFUSED_TOOL_CALLS: dict[str, tuple[str, dict[str, Any] | None]] = {
    "a missing argument": ("band_send_message", {"content": "hi"}),
    "an argument of the wrong type": ("band_send_message", {"content": 1, "mentions": ["alice"]}),
    "arguments that are no object": ("band_send_event", None),
    "a value the argument model refuses": ("band_store_memory", {"content": "x"}),
    "no mention": ("band_send_message", {"content": "hi", "mentions": []}),
    "an unknown participant": ("band_send_message", {"content": "hi", "mentions": ["bo"]}),
    "an unknown tool": ("band_nope", {}),
    "a tool of a capability not offered": ("band_list_memories", {}),
}


@pytest.mark.parametrize(
    ("name", "args"), REFUSED_TOOL_CALLS.values(), ids=REFUSED_TOOL_CALLS.keys()
)
async def test_a_model_call_the_tools_refuse_gets_the_same_error_result_from_the_fake(
    name: str, args: dict[str, Any] | None
) -> None:
    caps = frozenset({Capability.CONTACTS})
    by_real = await real(capabilities=caps).execute_tool_call(name, args)
    by_fake = await fake(capabilities=caps).execute_tool_call(name, args)
    assert by_real.is_error
    assert (by_fake.error_kind, by_fake.text) == (by_real.error_kind, by_real.text)


async def test_the_fake_posts_what_the_tools_post() -> None:
    """An over-long event is cut, a blank post is skipped, mentions resolve to
    ids: the fake's records are what AgentTools sent to the platform."""
    rest = MemoryRest([ROOM], agent_id=AGENT_ID, participants=ROSTER)
    tools = real(rest)
    twin = fake()
    long = "x" * (EVENT_CONTENT_LIMIT + 10)
    for t in (tools, twin):
        await t.send_event(long, "thought")
        assert await t.send_event("  ", "thought") is None
        await t.send_message("hi", ["Alice", "@carol/bob", "alice"])
    assert twin.events_sent == rest.events_sent
    assert len(twin.events_sent[0].content) <= EVENT_CONTENT_LIMIT
    assert twin.messages_sent == rest.messages_sent
    assert twin.messages_sent[0].mentions == ("user-alice", "agent-bob")


def test_fake_and_real_satisfy_the_protocol() -> None:
    assert isinstance(fake(), AgentToolsProtocol)
    proto: type[AgentToolsProtocol] = AgentToolsProtocol
    assert all(hasattr(AgentTools, name) for name in dir(proto) if not name.startswith("_"))


async def test_send_message_resolves_and_records() -> None:
    hooks = RecordingHooks()
    tools = fake(hooks=hooks)
    receipt = await tools.send_message("hello", ["@alice", "Bob Bot"])
    assert receipt is not None
    assert tools.messages_sent == [
        SentMessage(id=receipt.id, content="hello", mentions=("user-alice", "agent-bob"))
    ]
    assert [r.handle for r in receipt.recipients] == ["alice", "carol/bob"]
    assert hooks.replies == [receipt.id]
    assert tools.effects == [ToolEffect.REPLY]
    tools.assert_message_sent("hel", mentions=["user-alice"], count=1)


async def test_send_message_errors_like_the_real_one() -> None:
    tools = fake()
    with pytest.raises(BandToolError, match="At least one mention is required"):
        await tools.send_message("hello", [])
    with pytest.raises(BandToolError, match="Unknown participant"):
        await tools.send_message("hello", ["@nobody"])
    assert await tools.send_message("   ", ["alice"]) is None
    tools.assert_no_messages_sent()
    assert tools.effects == []
    assert [c.name for c in tools.calls] == ["send_message"] * 3


async def test_without_roster_any_mention_is_accepted() -> None:
    tools = FakeAgentTools()
    assert await tools.send_message("x", ["@whoever"]) is not None
    assert tools.messages_sent[0].mentions == ("@whoever",)


async def test_send_event_and_notice() -> None:
    tools = fake()
    await tools.send_event("thinking", "thought", {"a": 1})
    await tools.send_notice("on it", ["alice"])
    tools.assert_event_sent("thought", count=1)
    assert tools.events_sent[0].metadata == {"a": 1}
    assert tools.effects == [ToolEffect.OBSERVE]
    assert tools.replies == []
    with pytest.raises(BandToolError):
        await tools.send_event("x", "usage")


async def test_execute_tool_call_validates_with_the_real_definitions() -> None:
    tools = fake()
    bad = await tools.execute_tool_call("band_send_message", {"content": "hi"})
    assert bad.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    unknown = await tools.execute_tool_call("band_nope", {})
    assert unknown.error_kind is ToolErrorKind.UNKNOWN_TOOL
    ok = await tools.execute_tool_call(
        "band_send_message", {"content": "hi", "mentions": ["alice"]}
    )
    assert not ok.is_error
    assert tools.chat == ["hi"]
    declined = await tools.execute_tool_call("band_no_reply", {})
    assert declined.value == {"status": "no_reply"}
    assert tools.effects == [ToolEffect.REPLY, ToolEffect.DECLINE]
    assert [c.name for c in tools.tool_calls("band_send_message")] == ["band_send_message"] * 2


async def test_canned_results_and_effects() -> None:
    tools = fake(tool_results={"band_create_task": {"id": "t-1", "number": 1}})
    created = await tools.execute_tool_call("band_create_task", {"subject": "Do it"})
    assert created.value == {"id": "t-1", "number": 1}
    peers = await tools.execute_tool_call("band_lookup_peers", {})
    assert peers.value == {"status": "ok"}
    assert tools.effects == [ToolEffect.ACT, ToolEffect.OBSERVE]


async def test_scripted_failures() -> None:
    tools = fake()
    tools.fail_next("band_send_message", RoomExecutionStoppedError("room-fake"))
    with pytest.raises(RoomExecutionStoppedError):
        await tools.send_message("hi", ["alice"])
    assert await tools.send_message("hi", ["alice"]) is not None
    tools.fail_next("band_get_board", BandToolError("board unavailable"), times=2)
    first = await tools.execute_tool_call("band_get_board", {})
    assert first.error_kind is ToolErrorKind.TOOL_ERROR
    assert "board unavailable" in first.text
    assert (await tools.execute_tool_call("band_get_board", {})).is_error
    assert not (await tools.execute_tool_call("band_get_board", {})).is_error
    with pytest.raises(ValueError, match="unknown tool"):
        tools.fail_next("nope", RuntimeError())


async def test_delivered_messages_wait_for_the_agent_until_processed() -> None:
    tools = fake()
    assert await tools.unprocessed_messages() == []
    first = tools.deliver("/approve abc123")
    tools.deliver("and another")
    waiting = await tools.unprocessed_messages(limit=10)
    assert [(m.id, m.content) for m in waiting] == [
        (first, "/approve abc123"),
        (waiting[1].id, "and another"),
    ]
    assert waiting[0].sender_type == "User"
    assert [c.args for c in tools.tool_calls("unprocessed_messages")] == [
        {"limit": 100},
        {"limit": 10},
    ]
    tools.fail_next("unprocessed_messages", RoomExecutionStoppedError("room-fake"))
    with pytest.raises(RoomExecutionStoppedError):
        await tools.unprocessed_messages()
    assert len(await tools.unprocessed_messages()) == 2


async def test_schemas_are_the_real_ones() -> None:
    assert fake().get_tool_schemas("openai") == get_tool_schemas("openai")
    assert len(fake().get_anthropic_tool_schemas(capabilities=frozenset())) == 8


async def test_custom_tools_run_for_real() -> None:
    custom = CustomTools()

    @custom.tool
    def shout(text: str) -> str:
        """Upper-case a text.

        Args:
            text: The text to shout.
        """
        return text.upper()

    tools = fake(custom_tools=custom)
    result = await tools.execute_tool_call("shout", {"text": "hey"})
    assert result.value == "HEY"
    assert tools.effects == [ToolEffect.OBSERVE]
    assert tools.get_tool_schemas("anthropic")[-1]["name"] == "shout"


async def test_wait_until_said(autojump_clock: trio.abc.Clock) -> None:
    tools = fake()
    async with trio.open_nursery() as nursery:

        async def speak() -> None:
            await trio.sleep(1)
            await tools.send_message("done here", ["alice"])

        nursery.start_soon(speak)
        with trio.fail_after(5):
            await tools.wait_until_said("done")
    assert tools.chat == ["done here"]


async def test_tools_not_offered_are_refused_like_the_real_ones() -> None:
    tools = fake()
    tools.get_tool_schemas("anthropic", capabilities=frozenset())
    refused = await tools.execute_tool_call("band_list_contacts", {})
    assert refused.error_kind is ToolErrorKind.NOT_OFFERED
    assert not (await tools.execute_tool_call("band_lookup_peers", {})).is_error


async def test_hold_message_parks_a_send(autojump_clock: trio.abc.Clock) -> None:
    tools = fake()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(tools.send_message, "final answer", ["alice"])
        with trio.fail_after(5):
            async with tools.hold_message("final"):
                await trio.sleep(1)
                tools.assert_no_messages_sent()
            await tools.wait_until_said("final")
    assert tools.chat == ["final answer"]


async def test_hold_message_can_fail_or_be_cancelled(autojump_clock: trio.abc.Clock) -> None:
    tools = fake()
    failures: list[BaseException] = []

    async def send() -> None:
        try:
            await tools.send_message("boom", ["alice"])
        except RoomExecutionStoppedError as exc:
            failures.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send)
        with trio.fail_after(5):
            async with tools.hold_message("boom", RoomExecutionStoppedError("room-fake")):
                pass
    assert len(failures) == 1
    tools.assert_no_messages_sent()

    with trio.CancelScope() as turn:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(tools.send_message, "late", ["alice"])
            async with tools.hold_message("late"):
                turn.cancel()
    tools.assert_no_messages_sent()


async def test_python_tool_methods_record_canned_results_and_effects() -> None:
    hooks = RecordingHooks()
    tools = fake(
        hooks=hooks,
        tool_results={
            "band_add_participant": {"status": "added"},
            "band_create_chatroom": "room-new",
            "band_list_tasks": ["not", "a", "dict"],
        },
    )
    assert await tools.add_participant("@alice", role="member") == {"status": "added"}
    assert await tools.create_chatroom() == "room-new"
    assert await tools.list_tasks(state="active") == {"result": ["not", "a", "dict"]}
    assert await tools.get_memory("m-1") == {"status": "ok"}
    assert await tools.no_reply("not for me") == {"status": "no_reply"}
    assert [c.name for c in tools.calls] == [
        "add_participant",
        "create_chatroom",
        "list_tasks",
        "get_memory",
        "no_reply",
    ]
    assert tools.calls[0].args == {"identifier": "@alice", "role": "member"}
    assert tools.effects == [
        ToolEffect.ACT,
        ToolEffect.ACT,
        ToolEffect.OBSERVE,
        ToolEffect.OBSERVE,
        ToolEffect.DECLINE,
    ]
    assert hooks.effects == tools.effects


async def test_python_tool_methods_fail_as_scripted() -> None:
    tools = fake()
    tools.fail_next("band_store_memory", BandToolError("no memories here"))
    with pytest.raises(BandToolError, match="no memories here"):
        await tools.store_memory("x", "semantic", "fact", "user", "why", "agent")
    assert tools.effects == []
    assert await tools.create_chatroom() == "room-1"


async def test_participant_methods_answer_from_the_roster() -> None:
    tools = fake()
    assert await tools.get_participants_list() == list(ROSTER)
    listed = await tools.get_participants()
    assert [p["id"] for p in listed] == [p.id for p in ROSTER]
