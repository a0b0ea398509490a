"""Room-level rules on the autojump clock (in-memory fake platform):
a raising adapter still commits the turn's context (official runtime, "Testable
behaviours" 67); keep-alives stop after ``max_working_state``, ``working: false``
only when the turn ends ("Testable behaviours" 94).

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from band_trio.testing._memory_rest import MemoryRest

from .fakes import Adapter, make_room


async def test_a_raising_turn_commits_its_context(autojump_clock: trio.testing.MockClock) -> None:
    """After a turn that raised, the next turn is not a bootstrap and gets no participants_msg
    (the first turn's context was delivered) (official runtime, "Testable behaviours" 67)."""
    rest = MemoryRest()
    adapter = Adapter()
    seen: list[tuple[str, bool, bool]] = []

    async def on_message(*args: Any, **kwargs: Any) -> None:
        msg, tools, _history, participants_msg = args[:4]
        seen.append((msg.id, kwargs["is_session_bootstrap"], participants_msg is not None))
        if msg.content == "boom":
            raise RuntimeError("adapter bug")
        await tools.send_message("ok", [msg.sender_id])

    adapter.on_message = on_message  # type: ignore[method-assign]
    first = rest.add("boom")
    second = rest.add("fine")
    room = make_room(rest, adapter, max_attempts=1)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(30)
        assert seen == [(first, True, True), (second, False, False)]
        assert rest.status == {first: "failed", second: "processed"}
        nursery.cancel_scope.cancel()


class ActivityLog(MemoryRest):
    def __init__(self) -> None:
        super().__init__()
        self.reports: list[tuple[float, bool]] = []

    async def report_activity(self, chat_id: str, working: bool, activity: Any = None) -> bool:
        await trio.lowlevel.checkpoint()
        self.reports.append((trio.current_time(), working))
        return working


async def test_keep_alives_stop_after_max_working_state(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Keep-alives every 3 s until ``max_working_state`` (7 s); the turn goes on (20 s) and
    ``working: false`` is sent only when it ends (official runtime, "Testable behaviours" 94)."""
    rest = ActivityLog()
    adapter = Adapter()
    original = adapter.on_message

    async def on_message(*args: Any, **kwargs: Any) -> None:
        await trio.sleep(20)
        await original(*args, **kwargs)

    adapter.on_message = on_message  # type: ignore[method-assign]
    mid = rest.add("long turn")
    room = make_room(rest, adapter, working_keep_alive=3.0, max_working_state=7.0, working_grace=0)
    async with trio.open_nursery() as nursery:
        await nursery.start(room.serve)
        await trio.sleep(60)
        (claimed_at,) = rest.times("processing")
        offsets = [(round(t - claimed_at, 3), w) for t, w in rest.reports]
        assert offsets == [(0.0, True), (3.0, True), (6.0, True), (20.0, False)]
        assert rest.status[mid] == "processed"
        nursery.cancel_scope.cancel()
