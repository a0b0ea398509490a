"""send_message / send_event: mention resolution, blank refusal, truncation,
reply journaling (the digest of each reply is journaled as an intent before the
post, settled after it), effects, and the stopped-room path.
"""

from __future__ import annotations

import httpx
import pytest
import trio

from band_trio.adapter import ToolEffect
from band_trio.errors import (
    BandConnectionError,
    BandProtocolError,
    BandToolError,
    InternalServerError,
    RoomExecutionStoppedError,
    UnprocessableEntityError,
)
from band_trio.tools import TRUNCATION_MARKER, AgentTools, ToolErrorKind
from band_trio.tools.reply_digest import reply_digest
from band_trio.wire.rest import RestClient
from tests.scripted_platform import (
    AGENT_ID,
    ROOM,
    ROSTER,
    RecordingHooks,
    ScriptedPlatform,
    error,
    ok,
    participant,
)

MESSAGES = rf"/chats/{ROOM}/messages"
EVENTS = rf"/chats/{ROOM}/events"
PARTICIPANTS = rf"/chats/{ROOM}/participants"


def sent(mid: str = "m-1") -> object:
    return ok({"id": mid, "success": True, "recipients": [{"id": "user-alice", "handle": "alice"}]})


async def test_send_message_resolves_handles_names_and_ids(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    platform.on("POST", MESSAGES, sent("m-9"))
    with trio.fail_after(5):
        receipt = await tools.send_message("hi", ["@alice", "Bob Bot", "user-alice"])
    assert receipt is not None
    assert receipt.id == "m-9"
    [call] = platform.requests_to("POST", MESSAGES)
    assert call.body == {
        "message": {
            "content": "hi",
            "mentions": [
                {"id": "user-alice", "handle": "alice"},
                {"id": "agent-bob", "handle": "carol/bob"},
            ],
        }
    }
    assert hooks.replies == ["m-9"]
    assert hooks.effects == [ToolEffect.REPLY]
    assert tools.effects == (ToolEffect.REPLY,)


@pytest.mark.parametrize("content", ["", "   ", "\u200b\u200d", "\n\t", "\u200e"])
async def test_blank_content_is_refused_locally(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks, content: str
) -> None:
    with trio.fail_after(5):
        assert await tools.send_message(content, ["alice"]) is None
        assert await tools.send_event(content, "thought") is None
    assert platform.calls == []
    assert hooks.effects == []
    assert hooks.replies == []


async def test_no_mentions_is_an_error_listing_handles_without_self(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    with trio.fail_after(5), pytest.raises(BandToolError) as info:
        await tools.send_message("hello", [])
    text = str(info.value)
    assert text.startswith("At least one mention is required.")
    assert "@alice" in text
    assert "@carol/bob" in text
    assert "carol/me" not in text
    assert platform.calls == []


async def test_unknown_mention_refreshes_roster_once_then_fails(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    platform.on("GET", PARTICIPANTS, ok([]))
    with trio.fail_after(5), pytest.raises(BandToolError) as info:
        await tools.send_message("hello", ["@nobody"])
    assert "Unknown participant '@nobody'" in str(info.value)
    assert len(platform.requests_to("GET", PARTICIPANTS)) == 1
    assert platform.requests_to("POST", MESSAGES) == []
    assert hooks.effects == []


async def test_mention_of_someone_who_joined_after_the_snapshot(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    newcomer = {
        "id": "user-dave",
        "role": "member",
        "status": "active",
        "type": "User",
        "name": "Dave",
        "handle": "dave",
    }
    platform.on("GET", PARTICIPANTS, ok([newcomer]))
    platform.on("POST", MESSAGES, sent())
    with trio.fail_after(5):
        assert await tools.send_message("hi", ["@dave"]) is not None
    [call] = platform.requests_to("POST", MESSAGES)
    assert call.body["message"]["mentions"] == [{"id": "user-dave", "handle": "dave"}]


async def test_self_mention_is_refused(tools: AgentTools, platform: ScriptedPlatform) -> None:
    with trio.fail_after(5), pytest.raises(BandToolError, match="is you"):
        await tools.send_message("hi", ["@carol/me"])
    assert platform.requests_to("POST", MESSAGES) == []


async def test_mention_not_in_room_is_a_tool_error(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    platform.on(
        "POST", MESSAGES, error(422, "validation_error", "mentioned_participant_not_in_room")
    )
    with trio.fail_after(5), pytest.raises(BandToolError, match="not in the room"):
        await tools.send_message("hi", ["alice"])
    assert hooks.replies == []
    assert hooks.effects == []


@pytest.mark.parametrize("method", ["message", "event"])
async def test_stopped_room_tells_the_engine_and_reraises(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks, method: str
) -> None:
    refusal = error(403, "forbidden", "Agent execution is stopped for this room")
    platform.on("POST", MESSAGES, refusal)
    platform.on("POST", EVENTS, refusal)
    with trio.fail_after(5), pytest.raises(RoomExecutionStoppedError):
        await (
            tools.send_message("hi", ["alice"])
            if method == "message"
            else tools.send_event("thinking", "thought")
        )
    assert hooks.stopped == 1
    assert hooks.effects == []
    assert hooks.replies == []


async def test_stopped_room_in_a_tool_call_cancels_the_turn(
    rest: RestClient, platform: ScriptedPlatform
) -> None:
    platform.on("POST", MESSAGES, error(403, "forbidden", "execution is stopped"))
    reached_after = False
    with trio.fail_after(5):
        with trio.CancelScope() as turn:
            hooks = RecordingHooks(on_stopped=turn.cancel)
            tools = AgentTools(
                rest=rest, room_id=ROOM, agent_id=AGENT_ID, participants=ROSTER, hooks=hooks
            )
            await tools.execute_tool_call(
                "band_send_message", {"content": "hi", "mentions": ["alice"]}
            )
            reached_after = True
    assert turn.cancelled_caught
    assert not reached_after
    assert hooks.stopped == 1


async def test_stopped_room_without_hooks_is_an_error_result(
    rest: RestClient, platform: ScriptedPlatform
) -> None:
    platform.on("POST", MESSAGES, error(403, "forbidden", "execution is stopped"))
    tools = AgentTools(rest=rest, room_id=ROOM, agent_id=AGENT_ID, participants=ROSTER)
    with trio.fail_after(5):
        result = await tools.execute_tool_call(
            "band_send_message", {"content": "hi", "mentions": ["alice"]}
        )
    assert result.is_error
    assert result.error_kind is ToolErrorKind.EXECUTION_STOPPED


async def test_send_event_truncates_long_content_keeping_both_ends(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    platform.on("POST", EVENTS, ok({"id": "e-1", "message_type": "thought", "success": True}))
    content = "H" * 10 + "x" * 20_000 + "T" * 10
    with trio.fail_after(5):
        receipt = await tools.send_event(content, "thought", {"k": 1})
    assert receipt is not None
    [call] = platform.requests_to("POST", EVENTS)
    posted = call.body["event"]["content"]
    assert len(posted) == 16384
    assert TRUNCATION_MARKER in posted
    assert posted.startswith("H" * 10)
    assert posted.endswith("T" * 10)
    assert call.body["event"]["message_type"] == "thought"
    assert call.body["event"]["metadata"] == {"k": 1}
    assert hooks.effects == [ToolEffect.OBSERVE]
    assert hooks.replies == []


async def test_send_event_short_content_is_unchanged_and_metadata_omitted(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    platform.on("POST", EVENTS, ok({"id": "e-1", "message_type": "tool_call", "success": True}))
    with trio.fail_after(5):
        await tools.send_event('{"name": "x"}', "tool_call")
    [call] = platform.requests_to("POST", EVENTS)
    assert call.body == {"event": {"content": '{"name": "x"}', "message_type": "tool_call"}}


async def test_send_event_rejects_unknown_types_locally(
    tools: AgentTools, platform: ScriptedPlatform
) -> None:
    with trio.fail_after(5), pytest.raises(BandToolError, match="message_type"):
        await tools.send_event("hello", "usage")
    assert platform.calls == []


async def test_send_notice_is_not_a_reply(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    platform.on("POST", MESSAGES, sent())
    with trio.fail_after(5):
        assert await tools.send_notice("working on it", ["alice"]) is not None
    assert hooks.replies == []
    assert hooks.effects == []


async def test_recipient_without_handle_still_counts_as_delivered(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    platform.on("POST", MESSAGES, ok({"id": "m-2", "success": True, "recipients": [{"id": "x"}]}))
    with trio.fail_after(5):
        receipt = await tools.send_message("hi", ["alice"])
    assert receipt is not None
    assert hooks.replies == ["m-2"]


async def test_participants_snapshot_is_copied(rest: RestClient) -> None:
    roster = [participant("user-alice", "Alice", "alice")]
    tools = AgentTools(rest=rest, room_id=ROOM, agent_id=AGENT_ID, participants=roster)
    roster.clear()
    assert [p.id for p in tools.participants] == ["user-alice"]
    assert tools.available_mention_handles() == ["alice"]


# ------------------------------------------------------------------ reply intents
async def test_the_intent_is_journaled_before_the_post_and_settled_after(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    seen_at_post: list[list[str]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen_at_post.append(list(hooks.intents))
        return sent("m-1")  # type: ignore[return-value]

    platform.on("POST", MESSAGES, answer)
    with trio.fail_after(5):
        await tools.send_message("hello there", ["alice"])
    digest = reply_digest("hello there")
    assert seen_at_post == [[digest]]
    assert hooks.replies == ["m-1"]
    assert hooks.settled == [digest]


@pytest.mark.parametrize(
    ("response", "raised"),
    [
        (error(422, "validation_error", "content is invalid"), UnprocessableEntityError),
        (
            error(422, "mentioned_participant_not_in_room", "mentioned_participant_not_in_room"),
            BandToolError,
        ),
        (
            error(403, "forbidden", "agent execution is stopped in this room"),
            RoomExecutionStoppedError,
        ),
    ],
)
async def test_a_refused_post_settles_the_intent(
    tools: AgentTools,
    platform: ScriptedPlatform,
    hooks: RecordingHooks,
    response: httpx.Response,
    raised: type[Exception],
) -> None:
    platform.on("POST", MESSAGES, response)
    with trio.fail_after(5), pytest.raises(raised):
        await tools.send_message("hello", ["alice"])
    assert hooks.intents == [reply_digest("hello")]
    assert hooks.settled == hooks.intents
    assert hooks.replies == []


async def test_a_5xx_leaves_the_intent_open(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    platform.on("POST", MESSAGES, error(500, "internal_error", "boom"))
    with trio.fail_after(5), pytest.raises(InternalServerError):
        await tools.send_message("hello", ["alice"])
    assert hooks.intents == [reply_digest("hello")]
    assert hooks.settled == []


async def test_a_transport_failure_leaves_the_intent_open(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError("connection reset", request=request)

    platform.on("POST", MESSAGES, broken)
    with trio.fail_after(5), pytest.raises(BandConnectionError):
        await tools.send_message("hello", ["alice"])
    assert hooks.intents == [reply_digest("hello")]
    assert hooks.settled == []


async def test_a_cancelled_post_leaves_the_intent_open(
    tools: AgentTools,
    platform: ScriptedPlatform,
    hooks: RecordingHooks,
    autojump_clock: trio.abc.Clock,
) -> None:
    async def hangs(request: httpx.Request) -> httpx.Response:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    platform.on("POST", MESSAGES, hangs)  # type: ignore[arg-type]
    with trio.move_on_after(1) as scope:
        await tools.send_message("hello", ["alice"])
    assert scope.cancelled_caught
    assert hooks.intents == [reply_digest("hello")]
    assert hooks.settled == []


async def test_a_blank_reply_journals_nothing(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    platform.on("POST", MESSAGES, ok({}))
    assert await tools.send_message("   ", ["alice"]) is None
    assert hooks.intents == []


async def test_a_2xx_without_a_receipt_leaves_the_intent_open(
    tools: AgentTools, platform: ScriptedPlatform, hooks: RecordingHooks
) -> None:
    # A 2xx means the platform stored the reply; only its receipt is unreadable.
    platform.on("POST", MESSAGES, httpx.Response(201, json={"unexpected": True}))
    with trio.fail_after(5), pytest.raises(BandProtocolError):
        await tools.send_message("hello", ["alice"])
    assert hooks.intents == [reply_digest("hello")]
    assert hooks.settled == []
