"""The adapters shipped in the core pass the conformance kit.

The demo's :class:`~band_trio.demo.EchoAdapter` keeps its count of messages
per room, so what it says in a room depends only on that room: it is declared
deterministic and passes the room-independence check, like the gallery's
per-room echo.
"""

from __future__ import annotations

import pytest

from band_trio.demo import EchoAdapter
from band_trio.testing.conformance import (
    AdapterConformance,
    ContactChange,
    Post,
    RestFault,
    RunOptions,
    Scenario,
    SocketDrop,
    Wait,
    replay,
)
from tests.conformance.broken_adapters import Echo

NO_THREADS = RunOptions(autojump_threshold=0.0)
"""Neither adapter waits on a worker thread: virtual time may jump at once."""


class TestDemoEchoAdapter(AdapterConformance):
    deterministic = True

    def make_adapter(self) -> EchoAdapter:
        return EchoAdapter()

    def make_options(self) -> RunOptions:
        return NO_THREADS


class TestPerRoomEcho(AdapterConformance):
    deterministic = True

    def make_adapter(self) -> Echo:
        return Echo()

    def make_options(self) -> RunOptions:
        return NO_THREADS


@pytest.mark.parametrize(("status", "after"), [(503, False), (503, True), (502, True), (504, True)])
@pytest.mark.parametrize("factory", [EchoAdapter, Echo], ids=["demo-echo", "per-room-echo"])
@pytest.mark.parametrize("times", [1, 4])
def test_every_invariant_holds_when_rest_calls_fail(
    factory: type, status: int, after: bool, times: int
) -> None:
    # Faults on whatever calls come next (claims, posts, marks, reads), in
    # two busy rooms, before and while the turns run.
    scenario = Scenario(
        rooms=2,
        steps=[
            RestFault(None, status=status, after=after, times=times),
            Post(0, "first"),
            Post(1, "second"),
            RestFault(0, status=status, after=after, times=times),
            Post(0, "third"),
        ],
    )
    replay(factory, scenario, deterministic=True, options=NO_THREADS)


@pytest.mark.parametrize("down_for", [0.0, 3.0, 45.0])
def test_every_invariant_holds_across_a_dropped_socket(down_for: float) -> None:
    # The second message is posted while the socket is down: its push is
    # lost and only the resync after the reconnect (or the idle reconcile)
    # finds it.
    scenario = Scenario(
        rooms=2,
        steps=[Post(0, "before"), SocketDrop(down_for), Post(1, "while down"), Wait(1.0)],
    )
    result = replay(Echo, scenario, deterministic=True, options=NO_THREADS)
    replies = [m.content for m in result.agent_posts(result.trace.room_ids[1])]
    assert len(replies) == 1
    assert replies[0].endswith("echo: @demo/subject while down")


def test_every_invariant_holds_through_contact_events() -> None:
    scenario = Scenario(
        rooms=1,
        steps=[
            ContactChange("peer", "request"),
            Post(0, "hello"),
            ContactChange("helper", "request"),
            ContactChange("peer", "remove"),
            Post(0, "again"),
        ],
    )
    result = replay(Echo, scenario, deterministic=True, options=NO_THREADS)
    to_agent = [
        r
        for r in result.platform.state.contact_requests.values()
        if r.recipient_id == result.agent_id
    ]
    assert len(to_agent) == 2
    # The requests reached the adapter: turns in the contacts hub room.
    hub_turns = [t for t in result.trace.turns if t.room_id not in result.trace.room_ids]
    assert hub_turns
