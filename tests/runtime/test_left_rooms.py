"""A room the agent leaves leaves nothing behind in the claims ledger that
only that room needed (its completed ids and known replies)."""

from __future__ import annotations

from typing import Any

import trio

from .agent_harness import RecordingAdapter, scene, serving, token, wait_until


def _ledger(agent: Any) -> Any:
    return agent._engine._svc.ledger


async def test_leaving_a_room_forgets_its_completed_ids_and_known_replies(band_platform) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            left = await s.new_room()
            kept = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter)
            async with serving(agent):
                posted = {room: await s.post(room, token()) for room in (left, kept)}
                await wait_until(lambda: all(s.processed(r, m) for r, m in posted.items()))
                await wait_until(lambda: _ledger(agent).statistics().completed == 2)
                ledger = _ledger(agent)
                assert len(ledger.known_replies(left)) == 1
                await s.human.remove_participant(left, s.agent_id)
                await wait_until(lambda: left not in agent.room_ids)
                await wait_until(lambda: adapter.cleanups == [left])
                await wait_until(lambda: ledger.statistics().completed == 1)
                assert ledger.state(kept, posted[kept]).value == "completed"
                assert ledger.known_replies(left) == frozenset()
                assert len(ledger.known_replies(kept)) == 1
