"""RestClient admits at most ``max_connections`` requests into httpx at once.

The rest wait in a FIFO Trio queue (never inside httpcore's pool), and that
wait is not part of an attempt's timeout.
"""

from __future__ import annotations

import httpx
import trio

from band_trio.errors import BandTimeoutError
from band_trio.wire.rest import RestClient

from .rest_mock import ME, ROOM, Recorder, make_client, ok


async def _get_me_into(rest: RestClient, done: list[int], index: int) -> None:
    await rest.get_me()
    done.append(index)


async def test_requests_beyond_the_pool_wait_outside_httpx_in_fifo_order(
    autojump_clock: trio.abc.Clock,
) -> None:
    inside = 0
    most_inside = 0
    admitted: list[str] = []
    gates: list[trio.Event] = []

    async def gated(request: httpx.Request) -> httpx.Response:
        nonlocal inside, most_inside
        inside += 1
        most_inside = max(most_inside, inside)
        admitted.append(request.url.path.rsplit("/", 1)[-1])
        gate = trio.Event()
        gates.append(gate)
        try:
            await gate.wait()
        finally:
            inside -= 1
        return ok({**ROOM, "id": admitted[-1]})

    recorder = Recorder([gated])
    async with make_client(recorder, max_connections=2) as rest:
        async with trio.open_nursery() as nursery:
            for index in range(5):
                nursery.start_soon(rest.get_chat, f"room-{index}")
                # Start them in a known order: each one reaches the queue first.
                await trio.testing.wait_all_tasks_blocked()
            stats = rest.statistics()
            assert (stats.in_flight, stats.queued) == (2, 3)
            assert admitted == ["room-0", "room-1"]
            # Each finished request admits exactly the oldest waiter.
            for released, expected in ((1, "room-2"), (0, "room-3"), (2, "room-4")):
                gates[released].set()
                await trio.testing.wait_all_tasks_blocked()
                assert admitted[-1] == expected
                assert inside == 2
            for gate in gates:
                gate.set()
        stats = rest.statistics()
        assert (stats.in_flight, stats.queued) == (0, 0)
    assert most_inside == 2
    assert recorder.count == 5


async def test_waiting_for_a_connection_is_not_part_of_the_attempt_timeout(
    autojump_clock: trio.abc.Clock,
) -> None:
    # One connection, attempts of 0.8 s each, a 1 s attempt timeout: the third
    # call waits 1.6 s for the connection and must still succeed.
    async def takes_800ms(request: httpx.Request) -> httpx.Response:
        await trio.sleep(0.8)
        return ok(ME)

    recorder = Recorder([takes_800ms])
    done: list[int] = []
    async with make_client(recorder, max_connections=1, timeout=1.0) as rest:
        async with trio.open_nursery() as nursery:
            for index in range(3):
                nursery.start_soon(_get_me_into, rest, done, index)
                await trio.testing.wait_all_tasks_blocked()
        assert rest.statistics().errors == 0
    assert done == [0, 1, 2]
    assert trio.current_time() >= 2.4


async def test_an_attempt_on_the_wire_still_times_out(autojump_clock: trio.abc.Clock) -> None:
    async def hangs(request: httpx.Request) -> httpx.Response:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    recorder = Recorder([hangs])
    async with make_client(recorder, max_connections=1, timeout=1.0) as rest:
        with trio.fail_after(60):
            try:
                await rest.get_me()
            except BandTimeoutError:
                pass
            else:
                raise AssertionError("the hung attempt did not time out")
        # The slot was given back: the pool is free again.
        stats = rest.statistics()
        assert (stats.in_flight, stats.queued) == (0, 0)


async def test_a_cancelled_waiter_leaves_the_queue(autojump_clock: trio.abc.Clock) -> None:
    release = trio.Event()

    async def blocked(request: httpx.Request) -> httpx.Response:
        await release.wait()
        return ok(ME)

    recorder = Recorder([blocked])
    async with make_client(recorder, max_connections=1) as rest, trio.open_nursery() as nursery:
        nursery.start_soon(rest.get_me)
        await trio.testing.wait_all_tasks_blocked()
        with trio.move_on_after(5) as scope:
            await rest.get_me()
        assert scope.cancelled_caught
        stats = rest.statistics()
        assert (stats.in_flight, stats.queued) == (1, 0)
        release.set()
    # Only the first call ever reached the transport.
    assert recorder.count == 1
