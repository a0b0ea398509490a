"""Lost responses end to end: the platform applies an agent's call, then
answers 502, 503 (without ``Retry-After``) or 504, as a gateway does when the
platform committed the write but its answer did not make it back.

A real agent serves 20 rooms while 200 messages arrive and a seeded fifth of
all its REST calls (claims, replies, marks, reads, activity reports) lose
their answer this way. Replies are never re-sent blindly: the REST client
raises ``OutcomeUnknownError``, the reply intent stays open, and the tool call
finds the reply in the room's context before anything is posted again. Every message ends
processed with exactly one reply, none is failed, and no error event is
posted. Real sockets: the test waits on the platform's own state under a
deadline.
"""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest
import trio

from band_trio.local import Fault, LocalPlatform

from .harness import RecordingAdapter, Scene, scene, serving, token

ROOMS = 20
MESSAGES = 200
LOST_SHARE = 0.2
AGENT_API = "/api/v1/agent/"


class LostAnswers:
    """Answers a seeded share of the agent's REST calls with a 5xx after
    applying them (the platform's fault rules, drawn per request)."""

    def __init__(self, platform: LocalPlatform, share: float, seed: int) -> None:
        self._rng = random.Random(seed)
        self._share = share
        self._take_rule = platform.faults.take
        self.enabled = True
        self.statuses: Counter[int] = Counter()
        self.by_route: Counter[str] = Counter()

    def take(self, method: str, path: str) -> Fault | None:
        rule = self._take_rule(method, path)
        if rule is not None or not self.enabled or not path.startswith(AGENT_API):
            return rule
        if self._rng.random() >= self._share:
            return None
        status = self._rng.choice((502, 503, 504))
        self.statuses[status] += 1
        route = re.sub(r"/[0-9a-f-]{36}", "/{id}", path)
        self.by_route[f"{method} {route}"] += 1
        return Fault(method, re.compile(""), status, 1, perform=True, hits=1)


async def _post_everywhere(s: Scene, rooms: list[str]) -> dict[str, tuple[str, str]]:
    posted: dict[str, tuple[str, str]] = {}
    for n in range(MESSAGES):
        room_id = rooms[n % len(rooms)]
        word = token("lost")
        posted[await s.post(room_id, word)] = (room_id, word)
    return posted


async def test_a_fifth_of_all_answers_lost_costs_no_reply(
    band_platform: LocalPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    lost = LostAnswers(band_platform, LOST_SHARE, seed=1313)
    monkeypatch.setattr(band_platform.faults, "take", lost.take)
    lost.enabled = False
    with trio.fail_after(120):
        async with scene(band_platform) as s:
            rooms = [await s.new_room(title=f"room {n}") for n in range(ROOMS)]
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter)
            async with serving(agent):
                lost.enabled = True
                posted = await _post_everywhere(s, rooms)

                def settled() -> bool:
                    return all(s.processed(room, mid) for mid, (room, _) in posted.items())

                await s.wait_for(settled, within=90)
                lost.enabled = False
                stats = agent.statistics()

    # The faults really hit the calls that matter.
    assert sum(lost.statuses.values()) >= 100
    assert set(lost.statuses) == {502, 503, 504}
    reply_route = "POST /api/v1/agent/chats/{id}/messages"
    assert lost.by_route[reply_route] >= 10
    assert lost.by_route["POST /api/v1/agent/chats/{id}/messages/{id}/processed"] >= 10

    duplicates = unanswered = 0
    for message_id, (room_id, word) in posted.items():
        replies = s.replies_to(room_id, word)
        duplicates += max(0, replies - 1)
        unanswered += replies == 0
        assert s.processed(room_id, message_id)
    assert (duplicates, unanswered) == (0, 0)
    assert stats.failed_for_good == 0
    assert all(s.agent_events(room, "error") == [] for room in rooms)
    # Lost reply answers were settled inside the tool call, by looking, not
    # by posting again: no turn failed and every message ran once.
    assert stats.failures == 0
    assert len(adapter.calls) == len(posted)
    assert all(c.finished for c in adapter.calls)
    # No turn completed twice for one message.
    words = {word for _, word in posted.values()}
    finished = Counter(w for c in adapter.calls if c.finished for w in words if w in c.msg.content)
    assert max(finished.values(), default=0) <= 1
