"""ResumableHistoryConverter: a room's history as text plus the newest
conversation id recorded under the converter's metadata key, and the ``task``
event that records one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from band_trio.adapter import (
    HistoryItem,
    NamedHistoryConverter,
    ResumableHistory,
    ResumableHistoryConverter,
)
from band_trio.testing import FakeAgentTools

KEY = "framework_conversation_id"
EVENT_TEXT = "Framework conversation"


def _item(role: str, content: str, kind: str = "text", **metadata: object) -> HistoryItem:
    return HistoryItem(
        role=role,  # type: ignore[arg-type]
        content=content,
        sender_name="Bot" if role == "assistant" else "Ann",
        sender_type="Agent" if role == "assistant" else "User",
        message_type=kind,
        metadata=metadata,
    )


def test_the_text_labels_senders_keeps_tool_events_and_drops_the_rest() -> None:
    history = ResumableHistoryConverter(KEY, EVENT_TEXT).convert(
        [
            _item("user", "hi"),
            _item("assistant", EVENT_TEXT, "task", **{KEY: "c1"}),
            _item("assistant", "hello Ann"),
            _item("assistant", '{"name": "band_no_reply"}', "tool_call"),
            _item("assistant", '{"output": "ok"}', "tool_result"),
            _item("assistant", "pondering", "thought"),
            _item("assistant", "boom", "error"),
            _item("user", "   "),
            _item("assistant", EVENT_TEXT, "task", **{KEY: "c2"}),
        ]
    )
    assert history == ResumableHistory(
        "[Ann]: hi\n[Bot (you)]: hello Ann\n"
        '[Bot] tool_call: {"name": "band_no_reply"}\n'
        '[Bot] tool_result: {"output": "ok"}',
        "c2",
    )


def test_only_a_non_empty_string_under_the_key_is_an_id() -> None:
    converter = ResumableHistoryConverter(KEY, EVENT_TEXT)
    items = [
        _item("assistant", EVENT_TEXT, "task", **{KEY: "c1"}),
        _item("assistant", EVENT_TEXT, "task", **{KEY: ""}),
        _item("assistant", EVENT_TEXT, "task", **{KEY: 7}),
        _item("assistant", EVENT_TEXT, "task", other_key="c9"),
        _item("assistant", "not a task", "text", **{KEY: "c8"}),
    ]
    assert converter.convert(items) == ResumableHistory("[Bot (you)]: not a task", "c1")
    assert converter.convert([]) == ResumableHistory("", None)


def test_it_is_a_named_history_converter() -> None:
    converter = ResumableHistoryConverter(KEY, EVENT_TEXT)
    assert isinstance(converter, NamedHistoryConverter)
    converter.set_agent_name("Bot")
    assert converter.agent_name == "Bot"
    assert KEY in repr(converter)


_KINDS = st.sampled_from(["text", "task", "tool_call", "tool_result", "thought", "error"])
_ITEMS = st.lists(
    st.builds(
        _item,
        st.sampled_from(["user", "assistant"]),
        st.text(st.characters(blacklist_characters="\n"), max_size=20),
        _KINDS,
        **{KEY: st.one_of(st.none(), st.text(max_size=5), st.integers())},
    ),
    max_size=15,
)


@given(_ITEMS)
def test_the_id_is_the_newest_non_empty_string_recorded(items: list[HistoryItem]) -> None:
    recorded = [
        item.metadata[KEY]
        for item in items
        if item.message_type == "task"
        and isinstance(item.metadata.get(KEY), str)
        and item.metadata[KEY]
    ]
    history = ResumableHistoryConverter(KEY, EVENT_TEXT).convert(items)
    assert history.resume_id == (recorded[-1] if recorded else None)


@given(_ITEMS)
def test_the_text_has_one_line_per_visible_message_or_tool_event(
    items: list[HistoryItem],
) -> None:
    shown = [
        item
        for item in items
        if item.message_type in ("tool_call", "tool_result")
        or (item.message_type == "text" and item.content.strip())
    ]
    text = ResumableHistoryConverter(KEY, EVENT_TEXT).convert(items).text
    lines = text.split("\n") if text else []
    assert len(lines) == len(shown)
    for line, item in zip(lines, shown, strict=True):
        assert line.startswith(f"[{item.sender_name}")
        assert line.endswith(item.content)


async def test_record_posts_the_task_event_the_converter_reads_back() -> None:
    tools = FakeAgentTools()
    converter = ResumableHistoryConverter(KEY, EVENT_TEXT)
    assert await converter.record(tools, "c1", {"room": "r1"})
    [event] = tools.events_sent
    assert (event.content, event.message_type) == (EVENT_TEXT, "task")
    assert event.metadata == {KEY: "c1", "room": "r1"}
    read_back = _item("assistant", event.content, event.message_type, **dict(event.metadata))
    assert converter.convert([read_back]).resume_id == "c1"


async def test_a_failed_record_is_logged_and_false(caplog: pytest.LogCaptureFixture) -> None:
    tools = FakeAgentTools(room_id="r1")
    tools.fail_next("band_send_event", RuntimeError("platform down"))
    converter = ResumableHistoryConverter(KEY, EVENT_TEXT)
    assert not await converter.record(tools, "c1")
    assert tools.events_sent == []
    assert "r1: could not record the Framework conversation" in caplog.text
    # Nothing was lost: the next record posts.
    assert await converter.record(tools, "c1")
    assert len(tools.events_sent) == 1
