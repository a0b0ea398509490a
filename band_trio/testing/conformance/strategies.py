"""Hypothesis strategies for scenarios and histories (use them in your own tests).

* :func:`message_texts`: what people type: unicode, mentions, empty, very long.
* :func:`steps` / :func:`scenarios`: sequences of steps over several rooms.
* :func:`history_entries`: seeded platform histories (text, tool call/result
  pairs complete, orphaned or reordered, other agents' events, unknown types).
* :func:`history_items`: the same as raw :class:`~band_trio.HistoryItem` lists,
  to test a history converter without the runtime.

Strategies shrink towards few, short, simple steps, so a failure reads well.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from band_trio import HistoryItem
from band_trio.testing.conformance.steps import (
    AddRoom,
    ContactChange,
    DeleteRoom,
    Entry,
    Interrupt,
    Join,
    Leave,
    Play,
    Post,
    ReAddAgent,
    RemoveAgent,
    Restart,
    RestFault,
    Scenario,
    Seed,
    SlowTool,
    SocketDrop,
    Step,
    Stop,
    ToolFailure,
    Wait,
)

__all__ = [
    "history_entries",
    "history_items",
    "message_texts",
    "scenarios",
    "steps",
]

_WORDS = ("hello", "can you help", "@Subject", "@peer", "thanks", "?", "日本語", "🙂", "ok")


def message_texts() -> st.SearchStrategy[str]:
    """Message texts: plain words, mentions, unicode (emoji, RTL, combining
    marks), empty and blank strings, and very long texts."""
    plain = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4).map(" ".join)
    return st.one_of(
        plain,
        st.text(min_size=0, max_size=40),
        st.sampled_from(["", " ", "\n", "\u200b", "مرحبا", "e\u0301", "x" * 5000]),
        st.integers(min_value=1000, max_value=12000).map(lambda n: "long " * (n // 5)),
    )


def _seconds() -> st.SearchStrategy[float]:
    # Short waits, a few seconds (inside the grace and the working keep-alive),
    # and long ones past the default 20 s turn timeout; never exactly on it.
    return st.sampled_from([0.5, 3.0, 7.5, 45.0])


def history_entries(max_size: int = 8) -> st.SearchStrategy[tuple[Entry, ...]]:
    """Seeded history entries: text from people and agents, tool call/result
    pairs (complete, orphaned, reordered, from other agents), thoughts and
    events of unknown types."""
    call_ids = st.sampled_from(["call_1", "call_2", "call_3"])
    senders = st.sampled_from(["human", "peer", "self"])
    text = st.builds(Entry, senders, st.just("text"), st.sampled_from(["earlier", "hi", "🙂", "."]))
    calls = st.builds(
        Entry,
        st.sampled_from(["self", "peer"]),
        st.just("tool_call"),
        st.just("band_lookup"),
        call_ids,
    )
    results = st.builds(
        Entry,
        st.sampled_from(["self", "peer"]),
        st.just("tool_result"),
        st.sampled_from(["ok", '{"found": 1}', "error: boom"]),
        call_ids,
    )
    pairs = call_ids.flatmap(
        lambda cid: st.tuples(
            st.just(Entry("self", "tool_call", "band_lookup", cid)),
            st.just(Entry("self", "tool_result", "ok", cid)),
        )
    )
    other = st.builds(
        Entry,
        senders,
        st.sampled_from(["thought", "error", "task", "attention", "reaction", "x-custom"]),
        st.sampled_from(["thinking", "?", "unknown"]),
    )
    single = st.one_of(text, calls, results, other)
    chunks = st.lists(st.one_of(single.map(lambda e: (e,)), pairs), min_size=1, max_size=max_size)
    return chunks.map(lambda parts: tuple(e for part in parts for e in part))


_KINDS = (
    # Posts first and most often: a scenario without messages tests little,
    # and Hypothesis shrinks towards the first kind.
    "post",
    "post",
    "post",
    "post",
    "post",
    "post",
    "slow",
    "slow",
    "interrupt",
    "stop",
    "play",
    "wait",
    "failure",
    "rest_fault",
    "drop",
    "contact",
    "seed",
    "join",
    "leave",
    "remove",
    "readd",
    "delete",
    "add",
    "restart",
)


@st.composite
def steps(draw: Any, rooms: int) -> Step:
    """One step over rooms ``0 .. rooms - 1`` (control steps may be agent-wide)."""
    kind = draw(st.sampled_from(_KINDS))
    room = draw(st.integers(min_value=0, max_value=max(rooms - 1, 0)))
    if kind == "post":
        return Post(
            room,
            draw(message_texts()),
            sender=draw(st.sampled_from(["human", "human", "human", "peer", "self"])),
            mention=draw(st.sampled_from([True] * 7 + [False])),
            attachments=draw(st.sampled_from([0, 0, 0, 1, 2])),
        )
    if kind == "slow":
        return SlowTool(room, draw(_seconds()))
    if kind in ("interrupt", "stop", "play"):
        target = draw(st.one_of(st.just(room), st.none()))
        if kind == "interrupt":
            return Interrupt(target)
        return Stop(target) if kind == "stop" else Play(target)
    if kind == "wait":
        return Wait(draw(_seconds()))
    if kind == "failure":
        status = draw(st.sampled_from([500, 503, 429, 400]))
        return ToolFailure(room, status=status, times=draw(st.sampled_from([1, 4])))
    if kind == "rest_fault":
        return RestFault(
            draw(st.one_of(st.none(), st.just(room))),
            status=draw(st.sampled_from([503, 502, 504])),
            after=draw(st.booleans()),
            times=draw(st.sampled_from([1, 2, 4])),
        )
    if kind == "contact":
        return ContactChange(
            draw(st.sampled_from(["peer", "helper"])),
            draw(st.sampled_from(["request", "request", "remove"])),
        )
    if kind == "drop":
        return SocketDrop(draw(st.sampled_from([0.0, 3.0, 45.0])))
    if kind == "seed":
        return Seed(room, draw(history_entries()))
    if kind in ("join", "leave"):
        who = draw(st.sampled_from(["peer", "helper"]))
        return Join(room, who) if kind == "join" else Leave(room, who)
    if kind == "remove":
        return RemoveAgent(room)
    if kind == "readd":
        return ReAddAgent(room)
    if kind == "delete":
        return DeleteRoom(room)
    if kind == "add":
        return AddRoom()
    return Restart()


@st.composite
def _groups(draw: Any, rooms: int) -> tuple[Step, ...]:
    # Pairs that matter together are drawn together, so that the generated
    # scenarios often have a turn in flight when the next step comes, or a
    # history to convert on a session bootstrap.
    kind = draw(st.sampled_from(["single", "single", "single", "in_flight", "seeded"]))
    if kind == "single":
        return (draw(steps(rooms)),)
    room = draw(st.integers(min_value=0, max_value=max(rooms - 1, 0)))
    post = Post(room, draw(message_texts()))
    if kind == "in_flight":
        return (SlowTool(room, draw(_seconds())), post)
    return (Seed(room, draw(history_entries())), post)


@st.composite
def scenarios(
    draw: Any,
    *,
    max_rooms: int = 3,
    max_steps: int = 16,
    restarts: bool = True,
) -> Scenario:
    """Scenarios over up to ``max_rooms`` starting rooms and ``max_steps`` steps.

    Args:
        max_rooms: rooms existing at start (at least 1).
        max_steps: steps at most.
        restarts: include agent restarts.
    """
    rooms = draw(st.integers(min_value=1, max_value=max_rooms))
    # Room numbers reach rooms added later too (steps naming a room that does
    # not exist yet do nothing).
    group: st.SearchStrategy[tuple[Step, ...]] = _groups(rooms + 1)
    if not restarts:
        group = group.filter(lambda g: not any(isinstance(s, Restart) for s in g))
    drawn = draw(st.lists(group, min_size=1, max_size=max(1, max_steps // 2)))
    flat = [s for g in drawn for s in g][:max_steps]
    return Scenario(flat, rooms=rooms)


def history_items(max_size: int = 12) -> st.SearchStrategy[list[HistoryItem]]:
    """Raw history lists as the runtime hands them to a converter.

    Covers text from people and other agents, the agent's own messages, tool
    call/result pairs (complete, orphaned, reordered, duplicated ids, odd
    metadata), thoughts, errors and event types nobody knows.
    """
    call_id = st.sampled_from(["call_1", "call_2", "call_3", "", "x y"])
    metadata = st.one_of(
        st.builds(lambda cid: {"tool_call_id": cid, "tool_name": "band_lookup"}, call_id),
        st.builds(
            lambda cid: {"tool_call_id": cid, "tool_name": "band_lookup", "arguments": {"q": 1}},
            call_id,
        ),
        st.just({}),
        st.just({"tool_call_id": None}),
        st.dictionaries(st.sampled_from(["a", "tool_call_id", "arguments"]), st.integers()),
    )
    content = st.one_of(
        st.sampled_from(["hello", "", " ", "ok", '{"a": 1}', "[1, 2]", "null", "🙂", "x" * 3000]),
        st.text(max_size=20),
    )
    role = st.sampled_from(["user", "assistant"])
    message_type = st.sampled_from(
        ["text", "text", "tool_call", "tool_result", "thought", "error", "x-unknown"]
    )
    sender_type = st.sampled_from(["User", "Agent", "System"])
    item = st.builds(
        HistoryItem,
        role=role,
        content=content,
        sender_name=st.sampled_from(["Alice", "Peer", "Subject", ""]),
        sender_type=sender_type,
        message_type=message_type,
        metadata=metadata,
    )
    return st.lists(item, max_size=max_size)
