"""Cancellation end to end: an interrupt, the turn deadline, a tool that
ignores cancellation, the room being removed and the agent shutting down
while a pydantic-ai run is in flight. Each time the run's asyncio task is
cancelled (or, if it ignores that, abandoned after the grace), the room is
free again, and nothing (thread, loop, task) outlives the agent."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import attrs
import trio
from band_trio_pydantic_ai import PydanticAIAdapter, PydanticAIAdapterConfig
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo
from pydantic_ai_rooms import Script, agent_in_rooms, bridge_threads, call, respond, wait_until

from band_trio import LocalPlatform


@attrs.define
class Hanging:
    """A model whose first answer hangs until cancelled (or, through the
    ``wait`` tool, a tool that hangs, even past cancellation when
    ``stubborn``); it replies normally afterwards."""

    user_id: str
    in_tool: bool = False
    stubborn: bool = False
    entered: threading.Event = attrs.field(factory=threading.Event)
    cancelled: threading.Event = attrs.field(factory=threading.Event)
    calls: int = 0

    def script(self) -> Script:
        return Script(default=self.step)

    async def step(self, messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        self.calls += 1
        last = messages[-1].parts[-1]
        if getattr(last, "part_kind", None) == "tool-return":
            return respond("done")
        if self.calls > 1:
            args = {"content": "after", "mentions": [self.user_id]}
            return respond(call("band_send_message", args, f"after{self.calls}"))
        if self.in_tool:
            return respond(call("wait", {}, "w1"))
        await self.hang()
        raise AssertionError("unreachable")

    async def hang(self) -> None:
        self.entered.set()
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                self.cancelled.set()
                if not self.stubborn:
                    raise

    async def wait(self) -> str:
        """Wait for something."""
        await self.hang()
        return "never"


async def test_an_interrupt_cancels_the_run_and_frees_the_room(
    band_platform: LocalPlatform,
) -> None:
    hanging = Hanging(band_platform.user.id)
    adapter = PydanticAIAdapter(model=hanging.script().model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            first = await room.post("take your time")
            await wait_until(hanging.entered.is_set)
            await band_platform.push_control(room.agent_id, "interrupt", room_id=room.room_id)
            await wait_until(hanging.cancelled.is_set)
            await band_platform.wait_for(lambda: room.is_settled(first))
            second = await room.post("and now?")
            await band_platform.wait_for(lambda: room.status(second) == "processed")
            stats = adapter.statistics().bridge
            assert (stats.abandoned, stats.running) == (0, 0)
    (reply,) = room.from_agent("text")
    assert reply.content.endswith("after")
    assert bridge_threads() == []


async def test_the_turn_deadline_cancels_the_run_and_fails_the_turn(
    band_platform: LocalPlatform,
) -> None:
    hanging = Hanging(band_platform.user.id)
    config = PydanticAIAdapterConfig(turn_timeout=0.5)
    adapter = PydanticAIAdapter(config, model=hanging.script().model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            first = await room.post("take your time")
            await band_platform.wait_for(lambda: room.status(first) == "failed")
            assert hanging.cancelled.is_set()
            second = await room.post("and now?")
            await band_platform.wait_for(lambda: room.status(second) == "processed")
            assert adapter.statistics().bridge.abandoned == 0
    (report,) = room.from_agent("error")  # one, by the runtime
    assert report.metadata["failure"]["provider"] == "band-runtime"
    assert bridge_threads() == []


def test_the_turn_deadline_is_finite_by_default() -> None:
    timeout = PydanticAIAdapterConfig().turn_timeout
    assert timeout is not None
    assert 0 < timeout < float("inf")


async def test_a_tool_ignoring_cancellation_is_abandoned_and_the_room_moves_on(
    band_platform: LocalPlatform,
) -> None:
    hanging = Hanging(band_platform.user.id, in_tool=True, stubborn=True)
    config = PydanticAIAdapterConfig(cancel_grace=0.2)
    adapter = PydanticAIAdapter(config, model=hanging.script().model, tools=[hanging.wait])
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            first = await room.post("take your time")
            await wait_until(hanging.entered.is_set)
            await band_platform.push_control(room.agent_id, "interrupt", room_id=room.room_id)
            await band_platform.wait_for(lambda: room.is_settled(first))
            assert hanging.cancelled.is_set()
            assert adapter.statistics().bridge.abandoned == 1
            second = await room.post("and now?")
            await band_platform.wait_for(lambda: room.status(second) == "processed")
    # The agent stopped: the abandoned task was cancelled once more, given the
    # grace, and the loop and its thread were stopped anyway.
    assert bridge_threads() == []
    stats = adapter.statistics().bridge
    assert (stats.thread_running, stats.abandoned, stats.stuck_threads) == (False, 1, 0)
    assert stats.left_at_close >= 1
    (reply,) = room.from_agent("text")
    assert reply.content.endswith("after")


async def test_removing_the_agent_from_the_room_cancels_the_run(
    band_platform: LocalPlatform,
) -> None:
    hanging = Hanging(band_platform.user.id, in_tool=True)
    adapter = PydanticAIAdapter(model=hanging.script().model, tools=[hanging.wait])
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter) as (room,):
            await room.post("take your time")
            await wait_until(hanging.entered.is_set)
            await room.human.remove_participant(room.room_id, room.agent_id)
            await wait_until(hanging.cancelled.is_set)
            await wait_until(lambda: adapter.statistics().bridge.running == 0)
            assert adapter.statistics().bridge.abandoned == 0
    assert bridge_threads() == []


async def test_shutdown_while_a_run_is_in_flight_is_bounded_and_leaves_nothing(
    band_platform: LocalPlatform,
) -> None:
    hanging = Hanging(band_platform.user.id)
    adapter = PydanticAIAdapter(model=hanging.script().model)
    with trio.fail_after(30):
        async with agent_in_rooms(band_platform, adapter, shutdown_timeout=0.2) as (room,):
            await room.post("take your time")
            await wait_until(hanging.entered.is_set)
            stopping = trio.current_time()
        assert trio.current_time() - stopping < 5.0
    assert hanging.cancelled.is_set()
    assert bridge_threads() == []
    stats: Any = adapter.statistics().bridge
    assert (stats.thread_running, stats.running) == (False, 0)
