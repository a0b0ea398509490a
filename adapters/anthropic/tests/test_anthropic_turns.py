"""The adapter's turn loop (docs/reference/tools-and-adapters.rst: "Anthropic
adapter", "Testable statements" 76-93) with the real anthropic client against the
local stub, and FakeAgentTools for the room."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
import trio
from anthropic_stub import HANG, AnthropicStub, Reply, error, message, text, tool_use
from band_trio_anthropic import AnthropicAdapter, AnthropicAdapterConfig

from band_trio import (
    AgentToolsProtocol,
    Capability,
    CustomTools,
    Emit,
    PlatformMessage,
    ToolEffect,
)
from band_trio.testing import FakeAgentTools, reported_failures

CHAT_TOOLS = [
    "band_send_message",
    "band_send_event",
    "band_no_reply",
    "band_add_participant",
    "band_remove_participant",
    "band_lookup_peers",
    "band_get_participants",
    "band_create_chatroom",
]


def incoming(content: str = "hello", *, id: str = "m1", room: str = "room-1") -> PlatformMessage:
    return PlatformMessage(
        id=id,
        room_id=room,
        content=content,
        sender_id="user-1",
        sender_type="User",
        sender_name="Alice",
    )


async def started(client: anthropic.AsyncAnthropic, **kwargs: Any) -> AnthropicAdapter:
    adapter = AnthropicAdapter(client=client, **kwargs)
    await adapter.on_started("Claude", "a helpful agent")
    return adapter


async def run_turn(
    adapter: AnthropicAdapter,
    tools: AgentToolsProtocol,
    msg: PlatformMessage | None = None,
    *,
    history: list[dict[str, Any]] | None = None,
    participants_msg: str | None = None,
    contacts_msg: str | None = None,
    bootstrap: bool = False,
) -> None:
    msg = msg or incoming()
    with trio.fail_after(20):
        await adapter.on_message(
            msg,
            tools,
            history or [],
            participants_msg,
            contacts_msg,
            is_session_bootstrap=bootstrap,
            room_id=msg.room_id,
        )


def events(tools: FakeAgentTools, kind: str) -> list[Any]:
    return [e for e in tools.events_sent if e.message_type == kind]


def tool_events(tools: FakeAgentTools, kind: str) -> list[dict[str, Any]]:
    return [json.loads(e.content) for e in events(tools, kind)]


def usage_events(tools: FakeAgentTools) -> list[dict[str, Any]]:
    return [e.metadata["band_usage"] for e in events(tools, "task")]


SEND = {"content": "hi Alice", "mentions": ["user-1"]}


# ---------------------------------------------------------------- plain text and tools


async def test_a_plain_text_answer_posts_nothing_and_is_kept_as_assistant_text(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Testable statements" 77, 78): the system prompt is the
    ``system`` parameter; text alone reaches nobody (no reply effect: the runtime judges
    a missing reply)."""
    anthropic_stub.push(message(text("Hello!")))
    adapter = await started(anthropic_client)
    tools = FakeAgentTools()
    await run_turn(adapter, tools)

    tools.assert_no_messages_sent()
    # only the usage event's OBSERVE: nothing answered, so the runtime judges a
    # missing reply
    assert tools.effects == [ToolEffect.OBSERVE]
    (body,) = anthropic_stub.read_bodies
    assert body["system"] == adapter.system_prompt
    assert body["system"].startswith("You are Claude, a helpful agent.")
    assert body["messages"] == [{"role": "user", "content": "[Alice]: hello"}]
    assert all(m["role"] != "system" for m in body["messages"])
    assert [t["name"] for t in body["tools"]] == CHAT_TOOLS
    assert body["max_tokens"] == 4096
    assert adapter.history("room-1")[-1] == {"role": "assistant", "content": "Hello!"}


async def test_tool_use_runs_the_tool_and_feeds_the_result_back(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Testable statements" 79, 85, 89): two calls; the second ends
    with the assistant tool_use and the user tool_result; tool events share the call id;
    usage is summed."""
    anthropic_stub.push(
        message(tool_use("toolu_1", "band_send_message", SEND), usage=(100, 20), cache_read=7),
        message(text("done"), usage=(130, 8), cache_write=3),
    )
    adapter = await started(anthropic_client)
    tools = FakeAgentTools()
    await run_turn(adapter, tools)

    assert tools.chat == ["hi Alice"]
    assert ToolEffect.REPLY in tools.effects
    first, second = anthropic_stub.read_bodies
    assert second["messages"][:-2] == first["messages"]
    assistant, results = second["messages"][-2:]
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "band_send_message", "input": SEND}
        ],
    }
    assert results["role"] == "user"
    (result,) = results["content"]
    assert result["type"] == "tool_result"
    assert result["tool_use_id"] == "toolu_1"
    assert result["is_error"] is False
    assert json.loads(result["content"])["id"] == tools.messages_sent[0].id

    (call_event,) = tool_events(tools, "tool_call")
    (result_event,) = tool_events(tools, "tool_result")
    assert call_event == {"name": "band_send_message", "args": SEND, "tool_call_id": "toolu_1"}
    assert result_event["tool_call_id"] == "toolu_1"
    assert result_event["output"] == result["content"]
    assert result_event["is_error"] is False
    # tool_call before the reply, tool_result after it, usage last
    kinds = [c.name if c.name != "send_event" else c.args["message_type"] for c in tools.calls]
    assert kinds == ["tool_call", "band_send_message", "send_message", "tool_result", "task"]
    assert usage_events(tools) == [
        {"input_tokens": 230, "output_tokens": 28, "cache_read_tokens": 7, "cache_write_tokens": 3}
    ]
    assert events(tools, "task")[0].content == "Token usage: input=230 output=28"


async def test_several_tool_uses_run_in_order_and_answer_in_one_message(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Testable statements" 80)"""
    anthropic_stub.push(
        message(
            text("let me look"),
            tool_use("toolu_a", "band_get_participants", {}),
            tool_use("toolu_b", "band_send_message", SEND),
        ),
        message(text("ok")),
    )
    adapter = await started(anthropic_client)
    tools = FakeAgentTools()
    await run_turn(adapter, tools)

    assert [c.name for c in tools.calls if c.name.startswith("band_")] == [
        "band_get_participants",
        "band_send_message",
    ]
    second = anthropic_stub.read_bodies[1]["messages"]
    assert [b["type"] for b in second[-2]["content"]] == ["text", "tool_use", "tool_use"]
    assert [b["tool_use_id"] for b in second[-1]["content"]] == ["toolu_a", "toolu_b"]


async def test_band_no_reply_ends_the_loop_without_another_call(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Testable statements" 81)"""
    anthropic_stub.push(message(tool_use("toolu_1", "band_no_reply", {})))
    adapter = await started(anthropic_client)
    tools = FakeAgentTools()
    await run_turn(adapter, tools)

    assert len(anthropic_stub.requests) == 1
    assert ToolEffect.DECLINE in tools.effects
    assert ToolEffect.REPLY not in tools.effects
    assert not anthropic_stub.exhausted
    # the kept conversation ends with the (complete) tool round
    assert adapter.history("room-1")[-1]["content"][0]["tool_use_id"] == "toolu_1"


async def test_band_no_reply_next_to_a_failed_call_continues(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Testable statements" 82): a sibling call failed, so the model
    gets to see that."""
    anthropic_stub.push(
        message(
            tool_use("toolu_1", "band_send_message", {"content": "hi", "mentions": []}),
            tool_use("toolu_2", "band_no_reply", {}),
        ),
        message(text("sorry")),
    )
    adapter = await started(anthropic_client)
    tools = FakeAgentTools()
    await run_turn(adapter, tools)

    assert len(anthropic_stub.requests) == 2
    failed, declined = anthropic_stub.read_bodies[1]["messages"][-1]["content"]
    assert failed["is_error"] is True
    assert "At least one mention is required" in failed["content"]
    assert declined["is_error"] is False


async def test_every_failed_tool_call_is_fed_back_with_is_error(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Testable statements" 83) deliberately differs ("Weak spots"
    2): invalid arguments, unknown tools, refusals and raised errors all reach the model
    with ``is_error: true``."""
    tools = FakeAgentTools()
    tools.fail_next("band_get_participants", RuntimeError("platform down"))
    anthropic_stub.push(
        message(
            tool_use("toolu_1", "band_send_message", {"content": "no mentions"}),
            tool_use("toolu_2", "band_nonexistent", {}),
            tool_use("toolu_3", "band_get_participants", {}),
        ),
        message(tool_use("toolu_4", "band_send_message", SEND)),
        message(text("done")),
    )
    adapter = await started(anthropic_client)
    await run_turn(adapter, tools)

    results = anthropic_stub.read_bodies[1]["messages"][-1]["content"]
    assert [r["is_error"] for r in results] == [True, True, True]
    assert results[0]["content"].startswith("Invalid arguments for band_send_message")
    assert results[1]["content"] == "Unknown tool: band_nonexistent"
    assert "platform down" in results[2]["content"]
    assert [e["is_error"] for e in tool_events(tools, "tool_result")] == [True, True, True, False]
    assert tools.chat == ["hi Alice"]


async def test_a_turn_stops_after_max_tool_rounds(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Weak spots" 8): a model that keeps calling tools is cut off."""
    rounds = iter(range(100))

    def keep_looking(_body: dict[str, Any]) -> Reply:
        return message(tool_use(f"toolu_{next(rounds)}", "band_get_participants", {}))

    anthropic_stub.push(*[keep_looking] * 10)
    adapter = await started(anthropic_client, config=AnthropicAdapterConfig(max_tool_rounds=3))
    tools = FakeAgentTools()
    await run_turn(adapter, tools)

    assert len(anthropic_stub.requests) == 3
    assert set(tools.effects) == {ToolEffect.OBSERVE}
    assert len(tools.tool_calls("band_get_participants")) == 3
    assert usage_events(tools)[0]["input_tokens"] == 30


async def test_a_tool_use_cut_off_by_max_tokens_is_not_run(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Testable statements" 90)"""
    anthropic_stub.push(
        message(
            text("I will send"),
            tool_use("toolu_1", "band_send_message", SEND),
            stop_reason="max_tokens",
        )
    )
    adapter = await started(anthropic_client)
    tools = FakeAgentTools()
    await run_turn(adapter, tools)

    assert tools.calls == [] or all(c.name == "send_event" for c in tools.calls)
    tools.assert_no_messages_sent()
    assert adapter.history("room-1")[-1] == {"role": "assistant", "content": "I will send"}


# ---------------------------------------------------------------- inputs


async def test_bootstrap_history_then_system_lines_then_the_message(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Testable statements" 76)"""
    anthropic_stub.push(message(tool_use("toolu_1", "band_no_reply", {})))
    adapter = await started(anthropic_client)
    history = [{"role": "user", "content": "[Bob]: earlier"}]
    await run_turn(
        adapter,
        FakeAgentTools(),
        history=history,
        participants_msg="## Current Participants\n- @alice",
        contacts_msg="alice is now a contact",
        bootstrap=True,
    )
    assert anthropic_stub.read_bodies[0]["messages"] == [
        {"role": "user", "content": "[Bob]: earlier"},
        {"role": "user", "content": "[System]: ## Current Participants\n- @alice"},
        {"role": "user", "content": "[System]: alice is now a contact"},
        {"role": "user", "content": "[Alice]: hello"},
    ]


async def test_history_is_kept_per_room_and_dropped_on_cleanup(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Testable statements" 92; "State")"""
    anthropic_stub.push(*[message(text(f"answer {i}")) for i in range(4)])
    adapter = await started(anthropic_client)
    tools = FakeAgentTools()
    await run_turn(adapter, tools, incoming("one", id="a1", room="room-a"))
    await run_turn(adapter, tools, incoming("two", id="b1", room="room-b"))
    await run_turn(adapter, tools, incoming("three", id="a2", room="room-a"))
    await adapter.on_cleanup("room-a")
    await run_turn(adapter, tools, incoming("four", id="a3", room="room-a"))

    bodies = [b["messages"] for b in anthropic_stub.read_bodies]
    assert bodies[1] == [{"role": "user", "content": "[Alice]: two"}]
    assert bodies[2] == [
        {"role": "user", "content": "[Alice]: one"},
        {"role": "assistant", "content": "answer 0"},
        {"role": "user", "content": "[Alice]: three"},
    ]
    assert bodies[3] == [{"role": "user", "content": "[Alice]: four"}]
    assert adapter.history("room-b")[-1] == {"role": "assistant", "content": "answer 1"}


async def test_old_messages_are_trimmed_at_a_user_turn(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(
        message(tool_use("toolu_1", "band_get_participants", {})),
        message(text("first")),
        message(text("second")),
    )
    config = AnthropicAdapterConfig(max_history_messages=3)
    adapter = await started(anthropic_client, config=config)
    await run_turn(adapter, FakeAgentTools(), incoming("one", id="m1"))
    # user, assistant tool_use, user tool_result, assistant text: no user turn
    # that is not a tool result starts the newest 3, so nothing can go yet
    assert [m["role"] for m in adapter.history("room-1")] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    await run_turn(adapter, FakeAgentTools(), incoming("two", id="m2"))
    assert adapter.history("room-1") == [
        {"role": "user", "content": "[Alice]: two"},
        {"role": "assistant", "content": "second"},
    ]


async def test_tool_filters_and_capabilities_shape_the_offered_tools(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Testable statements" 91) deliberately differs ("Weak spots"
    1): filters are honoured."""
    anthropic_stub.push(message(text("x")))
    adapter = await started(
        anthropic_client,
        capabilities=Capability.MEMORY,
        exclude_tools=["band_create_chatroom"],
    )
    await run_turn(adapter, FakeAgentTools())
    names = [t["name"] for t in anthropic_stub.read_bodies[0]["tools"]]
    assert "band_create_chatroom" not in names
    assert names[:7] == [n for n in CHAT_TOOLS if n != "band_create_chatroom"]
    assert names[7:] == [
        "band_list_memories",
        "band_store_memory",
        "band_get_memory",
        "band_supersede_memory",
        "band_archive_memory",
    ]
    assert "## Memory Tools" in anthropic_stub.read_bodies[0]["system"]


async def test_a_custom_tool_is_offered_last_and_run(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Testable statements" 84), with band-trio's CustomTools."""
    custom = CustomTools()
    seen: list[str] = []

    @custom.tool
    def echo(text: str) -> str:
        """Repeat a text.

        Args:
            text: what to repeat.
        """
        seen.append(text)
        return f"echo: {text}"

    anthropic_stub.push(
        message(tool_use("toolu_1", "echo", {"text": "ping"})),
        message(tool_use("toolu_2", "band_send_message", SEND)),
        message(text("done")),
    )
    adapter = await started(anthropic_client, custom_tools=custom)
    await run_turn(adapter, FakeAgentTools())
    first, second, _ = anthropic_stub.read_bodies
    assert [t["name"] for t in first["tools"]] == [*CHAT_TOOLS, "echo"]
    assert seen == ["ping"]
    (result,) = second["messages"][-1]["content"]
    assert result == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "echo: ping",
        "is_error": False,
    }


async def test_an_image_file_becomes_image_blocks(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Testable statements" 86)"""
    image = {"content": [{"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}]}
    tools = FakeAgentTools(tool_results={"band_read_room_file": image})
    anthropic_stub.push(
        message(tool_use("toolu_1", "band_read_room_file", {"file_id": "f1"})),
        message(tool_use("toolu_2", "band_no_reply", {})),
    )
    adapter = await started(anthropic_client, capabilities=Capability.FILES)
    await run_turn(adapter, tools)
    (result,) = anthropic_stub.read_bodies[1]["messages"][-1]["content"]
    assert result["content"] == [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "aGVsbG8="},
        }
    ]
    assert tool_events(tools, "tool_result")[0]["output"] == "<1 image content block(s)>"


# ---------------------------------------------------------------- emit flags


@pytest.mark.parametrize(
    ("emit", "kinds"),
    [
        (None, ["tool_call", "tool_result", "task"]),
        ((), []),
        (Emit.USAGE, ["task"]),
        (Emit.TOOL_CALLS, ["tool_call", "tool_result"]),
    ],
)
async def test_emit_flags_choose_the_events(
    anthropic_stub: AnthropicStub,
    anthropic_client: anthropic.AsyncAnthropic,
    emit: Any,
    kinds: list[str],
) -> None:
    """(tools and adapters, "Testable statements" 59; "Event shapes the two adapters post")"""
    anthropic_stub.push(
        message(tool_use("toolu_1", "band_send_message", SEND)), message(text("ok"))
    )
    adapter = await started(anthropic_client, emit=emit)
    tools = FakeAgentTools()
    await run_turn(adapter, tools)
    assert [e.message_type for e in tools.events_sent] == kinds
    assert tools.chat == ["hi Alice"]


# ---------------------------------------------------------------- provider failures


@pytest.mark.parametrize(
    ("status", "kind", "exc_type"),
    [
        (429, "rate_limit_error", anthropic.RateLimitError),
        (500, "api_error", anthropic.InternalServerError),
        (529, "overloaded_error", anthropic.APIStatusError),
    ],
)
async def test_a_provider_error_is_logged_and_reraised_never_posted(
    anthropic_stub: AnthropicStub,
    anthropic_client: anthropic.AsyncAnthropic,
    status: int,
    kind: str,
    exc_type: type[Exception],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """(tools and adapters, "Testable statements" 89 second half; "Weak spots" 11): the
    error is raised as it was and logged with its status and type; the adapter posts
    nothing (the runtime posts one report when the message fails for the last time),
    and the provider's own message never reaches the room."""
    anthropic_stub.push(
        message(tool_use("toolu_1", "band_get_participants", {}), usage=(100, 20)),
        error(status, kind, "secret provider detail sk-ant-xyz"),
    )
    adapter = await started(anthropic_client)
    tools = FakeAgentTools()
    with pytest.raises(exc_type) as raised:
        await run_turn(adapter, tools)
    assert getattr(raised.value, "status_code", None) == status

    assert reported_failures(tools) == []
    assert tools.failures_reported == 0
    assert "secret provider detail" not in json.dumps([e.content for e in tools.events_sent])
    (logged,) = [r.getMessage() for r in caplog.records if r.name == "band_trio_anthropic"]
    assert f"HTTP {status} {kind} (request id req_" in logged
    # the first call's usage is still posted
    assert usage_events(tools) == [
        {"input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 0, "cache_write_tokens": 0}
    ]


async def test_an_unreachable_provider_is_raised_never_posted(
    anthropic_client: anthropic.AsyncAnthropic,
) -> None:
    async with anthropic.AsyncAnthropic(
        base_url="http://127.0.0.1:9", api_key="k", max_retries=0
    ) as dead:
        adapter = await started(dead)
        tools = FakeAgentTools()
        with pytest.raises(anthropic.APIConnectionError):
            await run_turn(adapter, tools)
    assert reported_failures(tools) == []
    assert usage_events(tools) == []


async def test_a_retried_message_is_not_appended_twice(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Weak spots" 9): after a failed attempt the retry starts from
    the same place."""
    anthropic_stub.push(
        message(tool_use("toolu_1", "band_get_participants", {})),
        error(500, "api_error", "boom"),
        message(tool_use("toolu_2", "band_no_reply", {})),
    )
    adapter = await started(anthropic_client)
    with pytest.raises(anthropic.InternalServerError):
        await run_turn(adapter, FakeAgentTools(), participants_msg="## Current Participants")
    await run_turn(adapter, FakeAgentTools())
    assert anthropic_stub.read_bodies[2]["messages"] == [
        {"role": "user", "content": "[System]: ## Current Participants"},
        {"role": "user", "content": "[Alice]: hello"},
    ]


async def test_a_cancelled_retry_keeps_the_retry_point(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Weak spots" 9): a retry of a failed message that is
    itself cancelled (a turn timeout) does not make the next retry add the message a
    second time."""
    anthropic_stub.push(
        error(529, "overloaded_error", "overloaded"),
        HANG,
        message(tool_use("toolu_1", "band_no_reply", {})),
    )
    adapter = await started(anthropic_client)
    with trio.fail_after(20):
        # attempt 1: the provider fails
        with pytest.raises(anthropic.APIStatusError):
            await run_turn(adapter, FakeAgentTools())
        # attempt 2: the turn is cancelled while the model call is in flight
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_turn, adapter, FakeAgentTools())
            await anthropic_stub.wait_for_requests(2)
            nursery.cancel_scope.cancel()
        assert nursery.cancel_scope.cancelled_caught
        # attempt 3: the message is in the conversation once
        await run_turn(adapter, FakeAgentTools())
    expected = [{"role": "user", "content": "[Alice]: hello"}]
    assert [r["messages"] for r in anthropic_stub.read_bodies] == [expected] * 3


# ---------------------------------------------------------------- cancellation


async def test_cancellation_propagates_posts_no_usage_and_keeps_no_partial_turn(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(
        message(tool_use("toolu_1", "band_get_participants", {}), usage=(100, 20)),
        HANG,
    )
    adapter = await started(anthropic_client)
    tools = FakeAgentTools()
    finished = False

    async def turn() -> None:
        nonlocal finished
        await run_turn(adapter, tools)
        finished = True

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(turn)
            await anthropic_stub.wait_for_requests(2)
            nursery.cancel_scope.cancel()
    assert nursery.cancel_scope.cancelled_caught
    assert not finished
    assert events(tools, "task") == []
    assert reported_failures(tools) == []
    assert adapter.history("room-1") == []


async def test_a_failed_event_post_does_not_change_the_tool_result(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """(tools and adapters, "Testable statements" 85, second half): event posts are best-
    effort."""
    tools = FakeAgentTools()
    tools.fail_next("band_send_event", RuntimeError("events are down"), times=2)
    anthropic_stub.push(
        message(tool_use("toolu_1", "band_send_message", SEND)), message(text("ok"))
    )
    adapter = await started(anthropic_client)
    await run_turn(adapter, tools)
    assert tools.chat == ["hi Alice"]
    (result,) = anthropic_stub.read_bodies[1]["messages"][-1]["content"]
    assert result["is_error"] is False
    # both tool events were lost; the usage event still went out
    assert [e.message_type for e in tools.events_sent] == ["task"]


class RaisingTools(FakeAgentTools):
    """A tools object that breaks the never-raises contract of execute_tool_call."""

    async def execute_tool_call(self, name: str, args: Any, **kwargs: Any) -> Any:
        await trio.lowlevel.checkpoint()
        if name == "band_get_participants":
            raise RuntimeError("broken tools object")
        return await super().execute_tool_call(name, args, **kwargs)


async def test_a_tools_object_that_raises_gives_an_error_result(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(
        message(tool_use("toolu_1", "band_get_participants", {})),
        message(tool_use("toolu_2", "band_no_reply", {})),
    )
    adapter = await started(anthropic_client)
    tools = RaisingTools()
    await run_turn(adapter, tools)
    (result,) = anthropic_stub.read_bodies[1]["messages"][-1]["content"]
    assert result["is_error"] is True
    assert "broken tools object" in result["content"]
    assert len(anthropic_stub.requests) == 2
