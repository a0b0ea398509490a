"""Cancellation end to end: an interrupt, a turn timeout, the room being
removed and the agent shutting down while a graph runs. Each time the graph's
asyncio task is cancelled (or, if it ignores that, abandoned after the grace),
the room is free again, and nothing (thread, loop, task) outlives the agent."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import attrs
import trio
from band_trio_langgraph import LangGraphAdapter, LangGraphAdapterConfig
from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call
from band_trio_langgraph.tools import current_turn
from helpers import agent_in_rooms, bridge_threads, wait_until
from langchain_core.messages import AIMessage

from band_trio import LocalPlatform


@attrs.define
class HangingModel:
    """A model whose first answer hangs (until cancelled; with ``stubborn``,
    even then), and which replies normally afterwards."""

    user_id: str
    stubborn: bool = False
    entered: trio.Event = attrs.field(factory=trio.Event)
    cancelled: threading.Event = attrs.field(factory=threading.Event)
    calls: int = 0

    def model(self) -> ScriptedChatModel:
        return ScriptedChatModel(default=self.step)

    async def step(self, messages: list[Any], _tools: list[Any]) -> AIMessage:
        self.calls += 1
        if messages[-1].type == "tool":
            return ai(text="done")
        if self.calls > 1:
            args = {"content": "after", "mentions": [self.user_id]}
            return ai(tool_call("band_send_message", args))
        turn = current_turn()
        assert turn is not None

        async def mark() -> None:
            self.entered.set()

        # Not awaited here: the step is already waiting below when the test
        # hears of it, so a cancel never lands before the step is waiting.
        signal = asyncio.ensure_future(turn.portal.run(mark))
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                self.cancelled.set()
                if not self.stubborn:
                    signal.cancel()
                    raise


async def test_an_interrupt_cancels_the_graph_and_frees_the_room(
    band_platform: LocalPlatform,
) -> None:
    hanging = HangingModel(band_platform.user.id)
    adapter = LangGraphAdapter(model=hanging.model())
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            first = await room.post("take your time")
            await hanging.entered.wait()
            await band_platform.push_control(room.agent_id, "interrupt", room_id=room.room_id)
            await wait_until(hanging.cancelled.is_set)
            await band_platform.wait_for(lambda: room.is_settled(first))
            second = await room.post("and now?")
            await band_platform.wait_for(lambda: room.status(second) == "processed")
            assert adapter.statistics().bridge.abandoned == 0
            assert adapter.statistics().bridge.running == 0
    (reply,) = room.from_agent("text")
    assert reply.content.endswith("after")
    assert bridge_threads() == []


async def test_a_turn_timeout_cancels_the_graph(band_platform: LocalPlatform) -> None:
    hanging = HangingModel(band_platform.user.id)
    adapter = LangGraphAdapter(model=hanging.model())
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter, turn_timeout=3.0) as (room,):
            first = await room.post("take your time")
            await band_platform.wait_for(lambda: room.status(first) == "failed")
            assert hanging.cancelled.is_set()
            second = await room.post("and now?")
            await band_platform.wait_for(lambda: room.status(second) == "processed")
            assert adapter.statistics().bridge.abandoned == 0
    assert bridge_threads() == []


async def test_a_graph_ignoring_cancellation_is_abandoned_and_the_room_moves_on(
    band_platform: LocalPlatform,
) -> None:
    hanging = HangingModel(band_platform.user.id, stubborn=True)
    adapter = LangGraphAdapter(LangGraphAdapterConfig(cancel_grace=0.2), model=hanging.model())
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            first = await room.post("take your time")
            await hanging.entered.wait()
            await band_platform.push_control(room.agent_id, "interrupt", room_id=room.room_id)
            await band_platform.wait_for(lambda: room.is_settled(first))
            assert adapter.statistics().bridge.abandoned == 1
            second = await room.post("and now?")
            await band_platform.wait_for(lambda: room.status(second) == "processed")
    # The agent stopped: the abandoned task was cancelled once more, given the
    # grace, and the loop and its thread were stopped anyway.
    assert bridge_threads() == []
    stats = adapter.statistics().bridge
    assert (stats.thread_running, stats.abandoned, stats.stuck_threads) == (False, 1, 0)
    assert stats.left_at_close >= 1


async def test_removing_the_agent_from_the_room_cancels_the_graph(
    band_platform: LocalPlatform,
) -> None:
    hanging = HangingModel(band_platform.user.id)
    adapter = LangGraphAdapter(model=hanging.model())
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            await room.post("take your time")
            await hanging.entered.wait()
            assert adapter.statistics().rooms == 1
            await room.human.remove_participant(room.room_id, room.agent_id)
            await wait_until(hanging.cancelled.is_set)
            await wait_until(lambda: adapter.statistics().rooms == 0)
            assert adapter.statistics().bridge.running == 0
            assert adapter.statistics().bridge.abandoned == 0
    assert bridge_threads() == []


async def test_shutdown_while_a_graph_runs_is_bounded_and_leaves_nothing(
    band_platform: LocalPlatform,
) -> None:
    hanging = HangingModel(band_platform.user.id)
    adapter = LangGraphAdapter(model=hanging.model())
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter, shutdown_timeout=0.2) as (room,):
            await room.post("take your time")
            await hanging.entered.wait()
            stopping = trio.current_time()
        assert trio.current_time() - stopping < 5.0
    assert hanging.cancelled.is_set()
    assert bridge_threads() == []
    assert adapter.statistics().bridge.thread_running is False
    assert adapter.statistics().bridge.running == 0
