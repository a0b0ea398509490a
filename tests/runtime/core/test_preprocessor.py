"""DefaultPreprocessor (official runtime, "Default preprocessor").

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from band_trio.adapter import (
    AgentToolsProtocol,
    HistoryItem,
    HistoryProvider,
    PlatformMessage,
    TurnContext,
)
from band_trio.adapter.roster import Roster
from band_trio.runtime.core.preprocessor import DefaultPreprocessor
from band_trio.wire.events import (
    MessageCreated,
    MessageMetadata,
    ParticipantAdded,
    decode_event,
)
from band_trio.wire.models import ChatMessage, ChatParticipant

AGENT = "agent-1"
ROOM = "room-1"

ROSTER = Roster(
    [
        ChatParticipant(
            id="u-ann", role="member", status="active", type="User", name="Ann", handle="ann"
        ),
        ChatParticipant(id="u-bo", role="member", status="active", type="User", name="Bo Li"),
        ChatParticipant(
            id=AGENT, role="member", status="active", type="Agent", name="Me", handle="o/me"
        ),
    ]
)


class Tools:
    async def send_message(self, content: str, mentions: Any) -> None:
        return None

    async def send_event(self, content: str, message_type: str, metadata: Any = None) -> None:
        return None

    async def execute_tool_call(self, name: str, args: Any) -> Any:
        return None

    def get_tool_schemas(self, fmt: Any, *, capabilities: Any = None) -> list[dict[str, Any]]:
        return []


class Ctx:
    """Builds TurnContexts and counts how often tools were made."""

    def __init__(self) -> None:
        self.made = 0
        self.tools = Tools()

    def make_tools(self) -> AgentToolsProtocol:
        self.made += 1
        return self.tools

    def context(self, **kw: Any) -> TurnContext:
        fields: dict[str, Any] = {"room_id": ROOM, "roster": ROSTER, "make_tools": self.make_tools}
        fields.update(kw)
        return TurnContext(**fields)


def created(**kw: Any) -> MessageCreated:
    fields: dict[str, Any] = {
        "room_id": ROOM,
        "id": "m-1",
        "content": "@[[o-unknown]] hi @[[u-bo]]",
        "message_type": "text",
        "sender_id": "u-ann",
        "sender_type": "User",
        "sender_name": "Ann (platform)",
        "inserted_at": "2026-01-02T03:04:05.000000Z",
        "updated_at": "2026-01-02T03:04:05.000000Z",
    }
    fields.update(kw)
    return MessageCreated(**fields)


def test_builds_agent_input() -> None:
    # Content rewritten, sender_name from the roster (official runtime, "Testable behaviours" 69).
    c = Ctx()
    history = HistoryProvider(
        [HistoryItem(role="user", content="x", sender_name="Ann", sender_type="User")]
    )
    ctx = c.context(
        history=history,
        participants_msg="P",
        contacts_msg="C",
        is_session_bootstrap=True,
    )
    inp = DefaultPreprocessor().process(ctx, created(), AGENT)
    assert inp is not None
    m = inp.msg
    assert m.content == "@[[o-unknown]] hi @Bo-Li"
    assert m.sender_name == "Ann"
    assert m.sender_handle == "ann"  # the roster's unique handle, for attribution
    assert (m.id, m.room_id, m.sender_id, m.sender_type, m.message_type) == (
        "m-1",
        ROOM,
        "u-ann",
        "User",
        "text",
    )
    assert m.created_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert inp.tools is c.tools
    assert inp.history is history
    assert (inp.participants_msg, inp.contacts_msg, inp.is_session_bootstrap, inp.room_id) == (
        "P",
        "C",
        True,
        ROOM,
    )
    assert c.made == 1


def test_metadata_without_none_values() -> None:
    payload = {
        "id": "m-2",
        "content": "x",
        "message_type": "text",
        "sender_id": "u-ann",
        "sender_type": "User",
        "inserted_at": "2026-01-02T03:04:05Z",
        "updated_at": "2026-01-02T03:04:05Z",
        "metadata": {"mentions": [{"id": AGENT, "handle": "o/me"}], "status": "sent", "k": None},
    }
    ev = decode_event(f"chat_room:{ROOM}", "message_created", payload)
    inp = DefaultPreprocessor().process(Ctx().context(), ev, AGENT)
    assert inp is not None
    md = inp.msg.metadata
    assert md["status"] == "sent"
    assert "k" not in md
    assert "delivery_status" not in md
    assert md["mentions"][0]["id"] == AGENT


def test_unknown_sender_keeps_platform_name_and_bad_timestamp_is_none() -> None:
    ev = created(sender_id="u-zz", inserted_at="garbage")
    inp = DefaultPreprocessor().process(Ctx().context(), ev, AGENT)
    assert inp is not None
    assert inp.msg.sender_name == "Ann (platform)"
    assert inp.msg.created_at is None


def test_own_messages_dropped_without_building_tools() -> None:
    # Pins (official runtime, "Testable behaviours" 39).
    c = Ctx()
    ev = created(sender_id=AGENT, sender_type="Agent")
    assert DefaultPreprocessor().process(c.context(), ev, AGENT) is None
    assert c.made == 0


def test_other_agents_and_case_mismatch_pass() -> None:
    c = Ctx()
    pre = DefaultPreprocessor()
    assert pre.process(c.context(), created(sender_id="agent-2", sender_type="Agent"), AGENT)
    # own-message match is exact: "agent" is not "Agent"
    assert pre.process(c.context(), created(sender_id=AGENT, sender_type="agent"), AGENT)


@pytest.mark.parametrize(
    "event",
    [
        ParticipantAdded(room_id=ROOM, id="u-x", name="X", type="User"),
        object(),
        None,
        {"id": "m", "content": "dict payloads are not events"},
    ],
)
def test_non_message_events_dropped(event: object) -> None:
    # Pins (official runtime, "Testable behaviours" 70).
    c = Ctx()
    assert DefaultPreprocessor().process(c.context(), event, AGENT) is None
    assert c.made == 0


def test_rest_message_backlog_path() -> None:
    row = ChatMessage(
        id="m-9",
        content="@[[u-ann]] hello",
        message_type="text",
        sender_id="u-bo",
        sender_type="User",
        chat_room_id=ROOM,
        inserted_at="2026-01-02T03:04:05Z",
        metadata={"status": None, "mentions": []},
    )
    inp = DefaultPreprocessor().process(Ctx().context(), row, AGENT)
    assert inp is not None
    assert inp.msg.content == "@ann hello"
    assert inp.msg.sender_name == "Bo Li"
    assert inp.msg.room_id == ROOM
    assert inp.msg.metadata == {"mentions": []}


def test_message_without_room_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    row = ChatMessage(id="m-9", content="x", message_type="text", sender_id="u", sender_type="User")
    assert DefaultPreprocessor().process(Ctx().context(room_id=""), row, AGENT) is None
    assert "no room id" in caplog.text


def test_metadata_object_default() -> None:
    ev = created(metadata=MessageMetadata())
    inp = DefaultPreprocessor().process(Ctx().context(), ev, AGENT)
    assert inp is not None
    assert inp.msg.metadata == {"mentions": []}


@given(
    content=st.text(max_size=80).filter(lambda t: "@[[" not in t),
    sender_type=st.sampled_from(["User", "Agent", "System", ""]),
    sender_id=st.sampled_from(["u-ann", "u-bo", AGENT, "x"]),
    inserted_at=st.text(max_size=30),
    extra_meta=st.dictionaries(st.text(max_size=5), st.none() | st.integers(), max_size=4),
)
def test_any_valid_message_is_built_or_dropped_never_raises(
    content: str, sender_type: str, sender_id: str, inserted_at: str, extra_meta: dict[str, Any]
) -> None:
    payload = {
        "id": "m-x",
        "content": content,
        "message_type": "text",
        "sender_id": sender_id,
        "sender_type": sender_type,
        "inserted_at": inserted_at,
        "updated_at": inserted_at,
        "metadata": {
            k: v
            for k, v in extra_meta.items()
            if k not in ("mentions", "status", "delivery_status")
        },
    }
    ev = decode_event(f"chat_room:{ROOM}", "message_created", payload)
    inp = DefaultPreprocessor().process(Ctx().context(), ev, AGENT)
    if sender_type == "Agent" and sender_id == AGENT:
        assert inp is None
        return
    assert inp is not None
    assert None not in inp.msg.metadata.values()
    assert inp.msg.content == content  # no tokens of known ids in this text


def test_ready_platform_message_passes_through() -> None:
    # Synthetic hub messages (RoomSink.enqueue_synthetic of runtime.contact_events) are
    # PlatformMessages.
    synthetic = PlatformMessage(
        id="s-1",
        room_id=ROOM,
        content="[Contact Added] X (@x) is now a contact.",
        sender_id="contact-events",
        sender_type="System",
        sender_name="Contact Events",
    )
    c = Ctx()
    inp = DefaultPreprocessor().process(c.context(contacts_msg="hub prompt"), synthetic, AGENT)
    assert inp is not None
    assert inp.msg is synthetic
    assert inp.contacts_msg == "hub prompt"
    own = PlatformMessage("o", ROOM, "x", AGENT, "Agent", None)
    assert DefaultPreprocessor().process(c.context(), own, AGENT) is None
