"""Activity reports never delay a turn (issue 3 item 5, beats runtime.md §9
item 13), on the autojump clock with an in-memory fake platform."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from .test_room_timing import Adapter, FakeRest, make_room

SLOW_REPORT = 1.5
"""Seconds a ``working: true`` report takes (below the REST activity timeout)."""


class SlowActivity(FakeRest):
    def __init__(self) -> None:
        super().__init__()
        self.reports: list[tuple[float, bool]] = []

    async def report_activity(self, chat_id: str, working: bool, activity: Any = None) -> bool:
        self.reports.append((trio.current_time(), working))
        if working:
            await trio.sleep(SLOW_REPORT)
        else:
            await trio.lowlevel.checkpoint()
        return working


async def test_slow_activity_report_does_not_delay_the_handler(
    autojump_clock: trio.testing.MockClock,
) -> None:
    rest = SlowActivity()
    handler_at: list[float] = []
    adapter = Adapter()
    original = adapter.on_message

    async def on_message(*args: Any, **kwargs: Any) -> None:
        handler_at.append(trio.current_time())
        await trio.sleep(1.0)  # long enough for the keep-alive task to report
        await original(*args, **kwargs)

    adapter.on_message = on_message  # type: ignore[method-assign]
    mid = rest.add("answer me")
    room = make_room(rest, adapter, working_grace=0)  # report at once, no grace period
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(10)
        (claimed_at,) = rest.times("processing")
        (started_at,) = handler_at
        # The handler starts at the claim's instant, while the first
        # ``working: true`` report is still in flight.
        assert started_at == claimed_at
        first_report_at = rest.reports[0][0]
        assert first_report_at == claimed_at
        assert handler_at[0] < first_report_at + SLOW_REPORT
        assert rest.status[mid] == "processed"
        assert rest.replies == ["ok"]
        # ``working: false`` comes last, after the true report.
        assert [w for _, w in rest.reports] == [True, False]
        nursery.cancel_scope.cancel()
