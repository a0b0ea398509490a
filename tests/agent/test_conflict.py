"""``AgentConfig.conflict_policy`` on the public path (``Agent.create``)
(official runtime, "Testable behaviours" 29).

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import pytest
import trio

from band_trio.agent import Agent
from band_trio.errors import AgentAlreadyRunningError

from .harness import RecordingAdapter, fast_config, scene, serving, token


def _create(s, policy: str, adapter: RecordingAdapter) -> Agent:  # type: ignore[no-untyped-def]
    return Agent.create(
        adapter=adapter,
        agent_id=s.agent_id,
        api_key=s.agent_key,
        rest_url=s.platform.rest_url,
        ws_url=s.platform.ws_url,
        config=fast_config(conflict_policy=policy),  # in memory: no ledger lock
        handle_signals=False,
    )


async def test_create_with_reject_refuses_while_another_is_connected(band_platform) -> None:  # type: ignore[no-untyped-def]
    """A second agent built by Agent.create with conflict_policy="reject" fails with
    AgentAlreadyRunningError; the first keeps serving (official runtime, "Testable behaviours"
    29)."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            first_adapter = RecordingAdapter()
            second_adapter = RecordingAdapter()
            async with serving(_create(s, "supersede", first_adapter)) as first:
                second = _create(s, "reject", second_adapter)
                with pytest.raises(AgentAlreadyRunningError):
                    await second.serve()
                assert second.statistics().serving is False
                assert second_adapter.calls == []
                word = token()
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
                assert first.statistics().serving
                assert first.statistics().reconnects == 0
                assert s.replies_to(room_id, word) == 1
            assert [c.msg.id for c in first_adapter.calls] == [mid]


async def test_create_with_reject_connects_when_alone(band_platform) -> None:  # type: ignore[no-untyped-def]
    """The "reject" policy only refuses when another connection exists (official runtime,
    "Testable behaviours" 29)."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            async with serving(_create(s, "reject", adapter)):
                mid = await s.post(room_id, token())
                await s.wait_for(lambda: s.processed(room_id, mid))
