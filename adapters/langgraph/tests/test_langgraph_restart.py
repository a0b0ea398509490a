"""History bootstrap and restarts: platform history is injected only into a
thread that has no state, so a restart with a persistent checkpointer (SQLite)
continues the thread without duplicating the conversation, while a fresh
in-memory thread gets the room's history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from band_trio_langgraph import LangGraphAdapter
from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call
from helpers import agent_in_rooms, bridge_threads
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from band_trio import LocalPlatform


def replying_model(user_id: str, text: str, call_id: str) -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            ai(tool_call("band_send_message", {"content": text, "mentions": [user_id]}, call_id)),
            ai(text="done"),
        ]
    )


def tool_call_ids(messages: Any) -> list[str]:
    return [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]


def humans_saying(messages: Any, fragment: str) -> list[Any]:
    return [m for m in messages if isinstance(m, HumanMessage) and fragment in str(m.content)]


async def two_sessions(
    platform: LocalPlatform, tmp_path: Path, checkpointer: Any
) -> tuple[ScriptedChatModel, ScriptedChatModel]:
    user_id = platform.user.id
    first_model = replying_model(user_id, "first answer", "c1")
    second_model = replying_model(user_id, "second answer", "c2")
    state = tmp_path / "state"
    with trio.fail_after(60):
        first = LangGraphAdapter(model=first_model, checkpointer=checkpointer)
        async with agent_in_rooms(platform, first, state_dir=state) as (room,):
            posted = await room.post("question one")
            await platform.wait_for(lambda: room.status(posted) == "processed")
        assert bridge_threads() == []
        # A new process would build a new adapter; the room and thread stay.
        second = LangGraphAdapter(model=second_model, checkpointer=checkpointer)
        async with agent_in_rooms(platform, second, state_dir=state, rooms=0) as _:
            sent = platform.post_message(
                room.room_id, f"@{room.agent_handle} question two", [room.agent_handle]
            )
            await platform.wait_for(lambda: room.status(str(sent["id"])) == "processed")
    assert bridge_threads() == []
    return first_model, second_model


async def test_a_fresh_thread_gets_the_room_history_once(
    band_platform: LocalPlatform, tmp_path: Path
) -> None:
    _, second = await two_sessions(band_platform, tmp_path, checkpointer=None)
    shown = second.calls[0].messages
    # The history converter rebuilt the first turn from the platform.
    assert len(humans_saying(shown, "question one")) == 1
    assert tool_call_ids(shown) == ["c1"]
    (result,) = [m for m in shown if isinstance(m, ToolMessage)]
    assert result.tool_call_id == "c1"
    assert result.status == "success"
    assert str(shown[-1].content).endswith("question two")


async def test_a_restart_with_a_persistent_checkpointer_does_not_duplicate_the_thread(
    band_platform: LocalPlatform, tmp_path: Path
) -> None:
    path = str(tmp_path / "threads.sqlite")
    first, second = await two_sessions(
        band_platform, tmp_path, checkpointer=lambda: AsyncSqliteSaver.from_conn_string(path)
    )
    shown = second.calls[0].messages
    assert len(humans_saying(shown, "question one")) == 1
    assert tool_call_ids(shown) == ["c1"]  # from the checkpointer, not injected again
    # The whole first turn is there as the first session left it, final text included.
    assert any(isinstance(m, AIMessage) and m.content == "done" for m in shown)
    assert str(shown[-1].content).endswith("question two")
    assert len(first.calls) == len(second.calls) == 2
