"""History mapping and the newest-window selection (sans-io).

Reference: docs/reference/official-runtime.rst, docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from band_trio.adapter.roster import Roster
from band_trio.errors import BandConfigError
from band_trio.runtime.core._history import (
    HistoryWindow,
    clean_metadata,
    history_item,
    parse_timestamp,
    to_history_items,
)
from band_trio.wire.models import ChatMessage, ChatParticipant

AGENT = "agent-1"


def msg(mid: str, **kw: Any) -> ChatMessage:
    fields: dict[str, Any] = {
        "content": f"text {mid}",
        "message_type": "text",
        "sender_id": "u-1",
        "sender_type": "User",
    }
    fields.update(kw)
    return ChatMessage(id=mid, **fields)


ROSTER = Roster(
    [
        ChatParticipant(id="u-1", role="member", status="active", type="User", name="Ann"),
        ChatParticipant(
            id="u-2", role="member", status="active", type="User", name="Bo", handle="bo"
        ),
    ]
)


def test_roles_own_agent_only_is_assistant() -> None:
    # Other agents are "user" (official runtime, "Testable behaviours" 61, and the
    # deliberate difference of "Weak spots" 19).
    own = history_item(msg("1", sender_id=AGENT, sender_type="Agent"), ROSTER, agent_id=AGENT)
    other_agent = history_item(
        msg("2", sender_id="agent-2", sender_type="Agent", sender_name="Bot2"),
        ROSTER,
        agent_id=AGENT,
    )
    human = history_item(msg("3"), ROSTER, agent_id=AGENT)
    assert (own.role, other_agent.role, human.role) == ("assistant", "user", "user")
    assert other_agent.sender_name == "Bot2"
    assert other_agent.sender_type == "Agent"


def test_item_fields() -> None:
    item = history_item(
        msg(
            "m",
            content="@[[u-2]] hello @[[u-1]]",
            message_type="",
            metadata={"a": 1, "b": None},
        ),
        ROSTER,
        agent_id=AGENT,
    )
    assert item.content == "@bo hello @Ann"
    assert item.message_type == "text"
    assert item.metadata == {"a": 1}
    assert item.sender_name == "Ann"  # from the roster
    assert (item.message_id, item.sender_id) == ("m", "u-1")
    assert item.to_dict() == {
        "role": "user",
        "content": "@bo hello @Ann",
        "sender_name": "Ann",
        "sender_type": "User",
        "message_type": "text",
        "metadata": {"a": 1},
    }


def test_senders_carry_the_rosters_handle() -> None:
    # Two display names may be equal; the handle tells the senders apart.
    known = history_item(msg("1", sender_id="u-2"), ROSTER, agent_id=AGENT)
    without_handle = history_item(msg("2"), ROSTER, agent_id=AGENT)
    unknown = history_item(msg("3", sender_id="u-zz", sender_name="Bo"), ROSTER, agent_id=AGENT)
    assert [known.sender_handle, without_handle.sender_handle, unknown.sender_handle] == [
        "bo",
        None,
        None,
    ]
    assert known.sender_label == "Bo (@bo)"


def test_sender_name_fallbacks() -> None:
    with_name = msg("1", sender_name="Given")
    legacy = msg("2", sender_id="u-zz", extra={"name": "Legacy"})
    unknown = msg("3", sender_id="u-zz")
    names = [
        history_item(m, ROSTER, agent_id=AGENT).sender_name for m in (with_name, legacy, unknown)
    ]
    assert names == ["Given", "Legacy", "User"]


def test_to_history_items_keeps_order() -> None:
    items = to_history_items([msg("1"), msg("2")], ROSTER, agent_id=AGENT)
    assert [i.message_id for i in items] == ["1", "2"]


# --------------------------------------------------------------------------- window


def page(*ids: str) -> list[ChatMessage]:
    return [msg(i) for i in ids]


def test_forward_keeps_newest_before_trigger() -> None:
    # Strictly before the trigger (official runtime, "Testable behaviours" 58; tools and
    # adapters, "Testable statements" 75).
    w = HistoryWindow(trigger_id="t", limit=3)
    w.feed_forward(page("1", "2", "3"))
    assert not w.trigger_seen
    w.feed_forward(page("4", "5", "t", "6"))
    assert w.trigger_seen
    assert w.satisfied
    w.feed_forward(page("7"))
    assert [m.id for m in w.messages()] == ["3", "4", "5"]


def test_trigger_missing_keeps_everything_but_the_trigger() -> None:
    w = HistoryWindow(trigger_id="t", limit=10)
    w.feed_forward(page("1", "2"))
    assert [m.id for m in w.messages()] == ["1", "2"]
    assert not w.satisfied


def test_duplicates_across_pages_are_ignored() -> None:
    w = HistoryWindow(trigger_id="t", limit=10)
    w.feed_forward(page("1", "2"))
    w.feed_forward(page("2", "3", "t"))
    assert [m.id for m in w.messages()] == ["1", "2", "3"]


def test_zero_limit_keeps_nothing() -> None:
    w = HistoryWindow(trigger_id="t", limit=0)
    w.feed_forward(page("1", "t"))
    assert w.messages() == []
    b = HistoryWindow(trigger_id="t", limit=0)
    b.feed_backward(page("1", "t"))
    assert b.messages() == []


def test_backward_reads_only_needed_pages() -> None:
    w = HistoryWindow(trigger_id="t", limit=3)
    w.feed_backward(page("7", "t", "8"))  # newest page
    assert w.trigger_seen
    assert not w.satisfied
    w.feed_backward(page("4", "5", "6"))
    assert w.satisfied
    assert [m.id for m in w.messages()] == ["5", "6", "7"]


def test_backward_drops_messages_after_trigger_found_later() -> None:
    w = HistoryWindow(trigger_id="t", limit=5)
    w.feed_backward(page("9", "10"))  # after the trigger: not known yet
    w.feed_backward(page("2", "t", "8"))
    w.feed_backward(page("1"))
    assert [m.id for m in w.messages()] == ["1", "2"]


def test_backward_without_trigger_keeps_newest() -> None:
    w = HistoryWindow(trigger_id="t", limit=3)
    w.feed_backward(page("5", "6"))
    w.feed_backward(page("3", "4"))
    w.feed_backward(page("1", "2"))
    assert [m.id for m in w.messages()] == ["4", "5", "6"]


def test_one_direction_only() -> None:
    w = HistoryWindow(trigger_id="t", limit=3)
    w.feed_forward(page("1"))
    with pytest.raises(ValueError, match="one direction"):
        w.feed_backward(page("0"))


def test_bad_limit() -> None:
    with pytest.raises(BandConfigError):
        HistoryWindow(trigger_id="t", limit=-1)


ids_lists = st.lists(st.integers(0, 60), unique=True, max_size=60)


@given(ids_lists, st.integers(0, 70), st.integers(1, 15), st.integers(0, 20))
def test_forward_and_backward_agree_with_a_plain_slice(
    numbers: list[int], trigger_pos: int, page_size: int, limit: int
) -> None:
    ids = [str(n) for n in numbers]
    trigger = ids[trigger_pos] if trigger_pos < len(ids) else "absent"
    before = ids[: ids.index(trigger)] if trigger in ids else ids
    expected = before[-limit:] if limit else []
    pages = [ids[i : i + page_size] for i in range(0, len(ids), page_size)]

    fw = HistoryWindow(trigger_id=trigger, limit=limit)
    for p in pages:
        fw.feed_forward(page(*p))
        if fw.satisfied:
            break
    assert [m.id for m in fw.messages()] == expected

    bw = HistoryWindow(trigger_id=trigger, limit=limit)
    for p in reversed(pages):
        bw.feed_backward(page(*p))
        if bw.satisfied:
            break
    assert [m.id for m in bw.messages()] == expected


# --------------------------------------------------------------------------- helpers


def test_clean_metadata() -> None:
    assert clean_metadata(None) == {}
    assert clean_metadata({"a": None, "b": 0, "c": {"d": None}}) == {"b": 0, "c": {"d": None}}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-02T03:04:05Z", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-02T03:04:05.123456789Z", datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)),
        ("2026-01-02T03:04:05.5", datetime(2026, 1, 2, 3, 4, 5, 500000, tzinfo=UTC)),
        (
            "2026-01-02T03:04:05+02:00",
            datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2))),
        ),
        ("not a date", None),
        ("", None),
        (None, None),
        (12, None),
    ],
)
def test_parse_timestamp(text: object, expected: datetime | None) -> None:
    assert parse_timestamp(text) == expected


@given(st.text())
def test_parse_timestamp_never_raises(text: str) -> None:
    result = parse_timestamp(text)
    assert result is None or result.tzinfo is not None
