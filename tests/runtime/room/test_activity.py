"""Activity reports of one Room, on the autojump clock with the in-memory fake
REST client of ``fakes``.

The grace period (``AgentConfig.working_grace``): a turn that ends within it
reports no activity at all; a longer turn reports ``working: true`` once the
grace period is over, keeps it alive every ``working_keep_alive`` seconds and
clears it with ``working: false`` after the handler (a deliberate difference
from official runtime, "Testable behaviours" 92, see docs/differences.rst).
Activity reports never delay a turn (beats "Weak spots" 13).

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from band_trio.errors import BandConfigError, InternalServerError
from band_trio.runtime.config import AgentConfig
from band_trio.testing._memory_rest import MemoryRest

from .fakes import Adapter, make_room


class ActivityLog(MemoryRest):
    """Records every activity report as (time, working)."""

    def __init__(self, report_seconds: float = 0.0) -> None:
        super().__init__()
        self.reports: list[tuple[float, bool]] = []
        self.report_seconds = report_seconds
        self.reports_finished = 0

    async def report_activity(self, chat_id: str, working: bool, activity: Any = None) -> bool:
        self.reports.append((trio.current_time(), working))
        if self.report_seconds:
            await trio.sleep(self.report_seconds)
        else:
            await trio.lowlevel.checkpoint()
        self.reports_finished += 1
        return working


def handler_taking(adapter: Adapter, seconds: float, started: list[float]) -> None:
    original = adapter.on_message

    async def on_message(*args: Any, **kwargs: Any) -> None:
        started.append(trio.current_time())
        await trio.sleep(seconds)
        await original(*args, **kwargs)

    adapter.on_message = on_message  # type: ignore[method-assign]


def test_default_grace_is_one_second() -> None:
    assert AgentConfig().working_grace == 1.0
    assert AgentConfig(working_grace=0).working_grace == 0
    with pytest.raises(BandConfigError):
        AgentConfig(working_grace=-1)
    assert AgentConfig.from_env({"BAND_WORKING_GRACE": "2.5"}).working_grace == 2.5


async def test_fast_turn_sends_no_activity(autojump_clock: trio.testing.MockClock) -> None:
    rest = ActivityLog()
    adapter = Adapter()
    started: list[float] = []
    handler_taking(adapter, 0.5, started)  # within the 1 s default grace
    mids = [rest.add("quick one"), rest.add("quick two")]
    room = make_room(rest, adapter)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(10)
        assert [rest.status[m] for m in mids] == ["processed", "processed"]
        assert rest.chat == ["ok", "ok"]
        assert rest.reports == []  # neither true nor a false to clear it
        nursery.cancel_scope.cancel()


async def test_slow_turn_reports_true_keep_alives_then_false(
    autojump_clock: trio.testing.MockClock,
) -> None:
    rest = ActivityLog()
    adapter = Adapter()
    started: list[float] = []
    handler_taking(adapter, 8.0, started)
    mid = rest.add("slow one")
    room = make_room(rest, adapter)  # grace 1 s, keep-alive 3 s
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(20)
        (t0,) = started
        (processed_at,) = rest.times("processed")
        assert rest.status[mid] == "processed"
        # true after the grace, kept alive every 3 s, false once the handler ends
        # (t0 + 8) and before the message is marked processed.
        assert [(round(t - t0, 6), w) for t, w in rest.reports] == [
            (1.0, True),
            (4.0, True),
            (7.0, True),
            (8.0, False),
        ]
        assert rest.reports[-1][0] <= processed_at
        nursery.cancel_scope.cancel()


async def test_zero_grace_reports_at_once(autojump_clock: trio.testing.MockClock) -> None:
    rest = ActivityLog()
    adapter = Adapter()
    started: list[float] = []
    handler_taking(adapter, 0.5, started)
    rest.add("quick one")
    room = make_room(rest, adapter, working_grace=0)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(10)
        (t0,) = started
        assert [(round(t - t0, 6), w) for t, w in rest.reports] == [(0.0, True), (0.5, False)]
        nursery.cancel_scope.cancel()


async def test_report_in_flight_finishes_when_the_room_is_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A ``working: true`` POST in flight is not torn down by cancelling the room
    (that would drop its pooled connection); it completes, shielded and bounded."""
    rest = ActivityLog(report_seconds=0.5)
    adapter = Adapter(hang=True)
    rest.add("hangs")
    room = make_room(rest, adapter)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(1.2)  # the first true report (sent at +1 s) is in flight
        assert [w for _, w in rest.reports] == [True]
        assert rest.reports_finished == 0
        nursery.cancel_scope.cancel()
    assert rest.reports_finished >= 1
    # The shielded false report clears the indicator after the cancelled turn.
    assert [w for _, w in rest.reports] == [True, False]


# ------------------------------------------------------------------ activity reports never
# delay a turn
SLOW_REPORT = 1.5
"""Seconds a ``working: true`` report takes (below the REST activity timeout)."""


class SlowActivity(MemoryRest):
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
        assert rest.chat == ["ok"]
        # ``working: false`` comes last, after the true report.
        assert [w for _, w in rest.reports] == [True, False]
        nursery.cancel_scope.cancel()


class FailingActivity(MemoryRest):
    """Every activity report fails."""

    async def report_activity(self, chat_id: str, working: bool, activity: Any = None) -> bool:
        await trio.lowlevel.checkpoint()
        raise InternalServerError(502, message="activity is down")


async def test_a_failing_activity_endpoint_is_warned_about_once_across_turns(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The failure streak outlives the turn: the second turn's failed reports
    are not warned about again (the room idles between the turns)."""
    rest = FailingActivity()
    adapter = Adapter()
    started: list[float] = []
    handler_taking(adapter, 3.0, started)  # beyond the 1 s grace: reports are sent
    room = make_room(rest, adapter)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        first = rest.add("first")
        await trio.sleep(30)
        second = rest.add("second")
        room.request_reconcile()
        await trio.sleep(30)
        assert [rest.status[first], rest.status[second]] == ["processed", "processed"]
        assert len(started) == 2
        nursery.cancel_scope.cancel()
    warnings = [
        r
        for r in caplog.records
        if r.levelname == "WARNING" and "activity report failed" in r.getMessage()
    ]
    assert len(warnings) == 1
