"""A failing graph: the message is retried, and the room sees one error event,
posted when the message fails for the last time (as for any adapter that
raises)."""

from __future__ import annotations

from typing import Any

import trio
from band_trio_langgraph import LangGraphAdapter
from band_trio_langgraph.testing import ScriptedChatModel
from helpers import agent_in_rooms

from band_trio import LocalPlatform
from band_trio.adapter import GENERIC_FAILURE_MESSAGE


class ModelDown(Exception):
    """The chat model fails every time."""


async def test_a_poison_message_posts_one_error_event_after_its_last_attempt(
    band_platform: LocalPlatform,
) -> None:
    calls: list[int] = []

    def fail(_messages: list[Any], _tools: list[Any]) -> Any:
        calls.append(1)
        raise ModelDown("the provider is down")

    adapter = LangGraphAdapter(model=ScriptedChatModel(default=fail))
    with trio.fail_after(60):
        async with agent_in_rooms(band_platform, adapter, max_attempts=3, retry_delay=0.05) as (
            room,
        ):
            posted = await room.post("poison")
            # Each failed attempt marks the message failed; the last one adds
            # the error event.
            await band_platform.wait_for(lambda: bool(room.from_agent("error")))
            assert room.status(posted) == "failed"

    assert len(calls) == 3  # the error came after every attempt ran the graph
    (report,) = room.from_agent("error")
    assert report.content == GENERIC_FAILURE_MESSAGE
    assert room.from_agent("text") == []


async def test_no_error_event_when_the_agent_reports_no_turn_failures(
    band_platform: LocalPlatform,
) -> None:
    def fail(_messages: list[Any], _tools: list[Any]) -> Any:
        raise ModelDown("the provider is down")

    adapter = LangGraphAdapter(model=ScriptedChatModel(default=fail))
    with trio.fail_after(60):
        async with agent_in_rooms(band_platform, adapter, report_turn_failures=False) as (room,):
            posted = await room.post("poison")
            await band_platform.wait_for(lambda: room.status(posted) == "failed")
    assert room.from_agent("error") == []
