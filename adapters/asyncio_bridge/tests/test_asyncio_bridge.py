"""The asyncio bridge on its own: outcomes, exception types both ways, Trio
calls from asyncio, cancellation (prompt, and abandonment after the grace),
and that no thread survives ``aclose``.

The bridge waits on another thread, whose time is real: these tests use the
real clock with short graces and a ``fail_after`` bound, never a sleep on the
Trio side."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

import pytest
import trio
from band_trio_asyncio import (
    AsyncioBridge,
    AsyncioTaskCancelledError,
    BridgeClosedError,
    TrioPortal,
)


class GraphError(Exception):
    """Raised by asyncio code; must reach Trio as itself."""


class ToolError(Exception):
    """Raised by Trio code; must reach asyncio as itself."""


def bridge_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("band-trio-asyncio")]


async def test_a_result_comes_back_and_the_thread_stops_at_close() -> None:
    async def body(_portal: TrioPortal) -> tuple[str, bool]:
        await asyncio.sleep(0)
        return "done", threading.current_thread() is threading.main_thread()

    with trio.fail_after(10):
        async with AsyncioBridge() as bridge:
            assert await bridge.run(body) == ("done", False)
            assert bridge.statistics().thread_running
            assert len(bridge_threads()) == 1
    assert bridge_threads() == []
    stats = bridge.statistics()
    assert (stats.thread_running, stats.runs, stats.running, stats.abandoned) == (False, 1, 0, 0)


async def test_exceptions_keep_their_type_in_both_directions() -> None:
    raised = ToolError("from trio")
    seen: list[BaseException] = []

    async def trio_side() -> None:
        await trio.lowlevel.checkpoint()
        raise raised

    async def body(portal: TrioPortal) -> None:
        try:
            await portal.run(trio_side)
        except ToolError as exc:
            seen.append(exc)
        raise GraphError("from asyncio")

    with trio.fail_after(10):
        async with AsyncioBridge() as bridge:
            with pytest.raises(GraphError, match="from asyncio"):
                await bridge.run(body)
    assert seen == [raised]  # the same object, not a copy or a wrapper


async def test_portal_calls_run_on_the_trio_thread_with_the_callers_objects() -> None:
    box: list[int] = []

    async def trio_side(n: int) -> int:
        await trio.lowlevel.checkpoint()
        assert threading.current_thread() is threading.main_thread()
        box.append(n)
        return n * 2

    async def body(portal: TrioPortal) -> list[int]:
        return list(await asyncio.gather(*(portal.run(trio_side, n) for n in range(5))))

    with trio.fail_after(10):
        async with AsyncioBridge() as bridge:
            assert await bridge.run(body) == [0, 2, 4, 6, 8]
            assert bridge.statistics().portal_calls == 5
    assert sorted(box) == [0, 1, 2, 3, 4]


async def test_cancelling_the_caller_cancels_the_task_promptly() -> None:
    started, unwound = trio.Event(), threading.Event()

    async def mark() -> None:
        started.set()

    async def body(portal: TrioPortal) -> None:
        # Signalled without waiting for it: the task is already sleeping when
        # the Trio side hears of it.
        signal = asyncio.ensure_future(portal.run(mark))
        try:
            await asyncio.sleep(3600)
        finally:
            signal.cancel()
            unwound.set()

    with trio.fail_after(10):
        async with AsyncioBridge(cancel_grace=5.0) as bridge:
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(bridge.run, body)
                    await started.wait()
                    before = trio.current_time()
                    scope.cancel()
            # Returned as soon as the task unwound, far below the grace.
            assert trio.current_time() - before < 2.0
            assert unwound.is_set()
            assert bridge.statistics().abandoned == 0
            assert bridge.statistics().running == 0


async def test_cancelling_the_caller_cancels_the_trio_calls_of_the_task() -> None:
    trio_cancelled = trio.Event()
    entered = trio.Event()
    asyncio_saw: list[str] = []

    async def trio_side() -> None:
        entered.set()
        try:
            await trio.sleep_forever()
        finally:
            trio_cancelled.set()

    async def body(portal: TrioPortal) -> None:
        try:
            await portal.run(trio_side)
        except asyncio.CancelledError:
            asyncio_saw.append("cancelled")
            raise

    with trio.fail_after(10):
        async with AsyncioBridge() as bridge, trio.open_nursery() as nursery:
            nursery.start_soon(bridge.run, body)
            await entered.wait()
            nursery.cancel_scope.cancel()
    assert trio_cancelled.is_set()
    assert asyncio_saw == ["cancelled"]


async def test_a_task_ignoring_cancellation_is_abandoned_after_the_grace() -> None:
    started = threading.Event()
    late_calls: list[BaseException] = []

    async def trio_side() -> None:
        await trio.lowlevel.checkpoint()

    async def stubborn(portal: TrioPortal) -> None:
        started.set()
        for _ in range(50):
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                # Calling back into the finished turn is refused.
                try:
                    await portal.run(trio_side)
                except (BridgeClosedError, asyncio.CancelledError) as exc:
                    late_calls.append(exc)

    with trio.fail_after(10):
        async with AsyncioBridge(cancel_grace=0.05) as bridge:
            with trio.move_on_after(0.05):
                await bridge.run(stubborn)
            assert started.is_set()
            assert bridge.statistics().abandoned == 1
            assert bridge.statistics().running == 0
            # The loop still serves other work.
            assert await bridge.run(_answer) == 42
        # Closing cancels it again, gives it the grace, then stops the loop.
    assert bridge_threads() == []
    stats = bridge.statistics()
    assert (stats.abandoned, stats.left_at_close, stats.stuck_threads) == (1, 1, 0)
    assert late_calls
    assert all(isinstance(e, BridgeClosedError) for e in late_calls)


async def _answer(_portal: TrioPortal) -> int:
    await asyncio.sleep(0)
    return 42


async def test_rooms_share_one_loop_and_run_concurrently() -> None:
    both = asyncio.Event()
    arrived: list[int] = []
    threads: set[int] = set()

    async def body(_portal: TrioPortal) -> None:
        threads.add(threading.get_ident())
        arrived.append(1)
        if len(arrived) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), timeout=5)

    with trio.fail_after(10):
        async with AsyncioBridge() as bridge, trio.open_nursery() as nursery:
            nursery.start_soon(bridge.run, body)
            nursery.start_soon(bridge.run, body)
    assert len(threads) == 1
    assert len(arrived) == 2


async def test_a_task_cancelled_by_asyncio_code_is_an_error_not_a_cancel() -> None:
    async def body(_portal: TrioPortal) -> None:
        current = asyncio.current_task()
        assert current is not None
        current.cancel()
        await asyncio.sleep(1)

    with trio.fail_after(10):
        async with AsyncioBridge() as bridge:
            with pytest.raises(AsyncioTaskCancelledError):
                await bridge.run(body)


async def test_context_variables_do_not_leak_between_runs() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    async def first(_portal: TrioPortal) -> str:
        var.set("first")
        return var.get()

    async def second(_portal: TrioPortal) -> str:
        return var.get()

    with trio.fail_after(10):
        async with AsyncioBridge() as bridge:
            assert await bridge.run(first) == "first"
            assert await bridge.run(second) == "unset"


async def test_the_bridge_can_be_used_again_after_close() -> None:
    bridge = AsyncioBridge()
    with trio.fail_after(10):
        assert await bridge.run(_answer) == 42
        await bridge.aclose()
        await bridge.aclose()  # idempotent
        assert bridge_threads() == []
        assert await bridge.run(_answer) == 42
        await bridge.aclose()
    assert bridge_threads() == []
    assert bridge.statistics().runs == 2


def test_cancel_grace_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="cancel_grace"):
        AsyncioBridge(cancel_grace=-1)


async def test_cancelled_before_the_task_starts() -> None:
    ran: list[Any] = []

    async def body(_portal: TrioPortal) -> None:
        ran.append(1)

    with trio.fail_after(10):
        async with AsyncioBridge() as bridge:
            with trio.CancelScope() as scope:
                scope.cancel()
                await bridge.run(body)
            assert bridge.statistics().abandoned == 0
    # Either never started or started and ended: nothing is left running.
    assert bridge_threads() == []


class Abort(BaseException):
    """Not an ``Exception``: the portal passes it through to Trio's nursery."""


async def test_a_cancelled_run_raises_cancelled_not_a_group() -> None:
    caught: list[BaseException] = []

    with trio.fail_after(10):
        async with AsyncioBridge() as bridge:
            with trio.CancelScope() as scope:

                async def trio_side() -> None:
                    # The turn is cancelled while this Trio call is in flight:
                    # the run's wait and the call are both cancelled.
                    scope.cancel()
                    await trio.sleep_forever()

                async def body(portal: TrioPortal) -> None:
                    await portal.run(trio_side)

                try:
                    await bridge.run(body)
                except BaseException as exc:
                    caught.append(exc)
                    raise
    assert scope.cancelled_caught
    assert [type(e) for e in caught] == [trio.Cancelled]


async def test_a_run_cut_by_a_deadline_raises_cancelled_not_a_group() -> None:
    caught: list[BaseException] = []

    async def body(_portal: TrioPortal) -> None:
        await asyncio.sleep(3600)

    with trio.fail_after(10):
        async with AsyncioBridge() as bridge:
            with trio.move_on_after(0.05) as scope:
                try:
                    await bridge.run(body)
                except BaseException as exc:
                    caught.append(exc)
                    raise
    assert scope.cancelled_caught
    assert [type(e) for e in caught] == [trio.Cancelled]


async def test_an_error_of_the_graph_with_trio_calls_in_flight_arrives_as_itself() -> None:
    entered = trio.Event()
    cause = KeyError("the graph's own cause")
    raised = GraphError("while a Trio call runs")

    async def trio_side() -> None:
        entered.set()
        await trio.sleep_forever()

    async def mark_and_wait() -> None:
        await entered.wait()

    async def body(portal: TrioPortal) -> None:
        pending = asyncio.ensure_future(portal.run(trio_side))
        await portal.run(mark_and_wait)
        pending.cancel()
        raise raised from cause

    with trio.fail_after(10):
        async with AsyncioBridge() as bridge:
            with pytest.raises(GraphError) as info:
                await bridge.run(body)
    assert info.value is raised
    assert info.value.__cause__ is cause


async def test_a_base_exception_of_a_trio_call_arrives_as_itself_not_a_group() -> None:
    raised = Abort("from a Trio call")
    asyncio_saw: list[str] = []

    async def trio_side() -> None:
        await trio.lowlevel.checkpoint()
        raise raised

    async def body(portal: TrioPortal) -> None:
        try:
            await portal.run(trio_side)
        except asyncio.CancelledError:
            asyncio_saw.append("cancelled")
            raise

    with trio.fail_after(10):
        async with AsyncioBridge() as bridge:
            with pytest.raises(Abort) as info:
                await bridge.run(body)
            assert bridge.statistics().abandoned == 0
    assert info.value is raised
    assert asyncio_saw == ["cancelled"]


@pytest.fixture
def thread_starts(monkeypatch: pytest.MonkeyPatch) -> list[threading.Thread]:
    """The threads that called ``Thread.start`` for a bridge thread, in order."""
    callers: list[threading.Thread] = []
    original = threading.Thread.start

    def start(self: threading.Thread) -> None:
        if self.name.startswith("band-trio-asyncio"):
            callers.append(threading.current_thread())
        original(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    return callers


async def test_start_runs_the_thread_before_any_run_without_blocking_trio(
    thread_starts: list[threading.Thread],
) -> None:
    trio_thread = threading.current_thread()
    bridge = AsyncioBridge()
    with trio.fail_after(10):
        async with bridge:
            assert bridge_threads() == []
            await bridge.start()
            (thread,) = bridge_threads()
            assert bridge.statistics().thread_running
            await bridge.start()  # idempotent
            assert await bridge.run(_answer) == 42
            assert bridge_threads() == [thread]
    assert bridge_threads() == []
    assert len(thread_starts) == 1
    assert thread_starts[0] is not trio_thread


async def test_concurrent_first_runs_start_one_thread_off_the_trio_thread(
    thread_starts: list[threading.Thread],
) -> None:
    trio_thread = threading.current_thread()
    results: list[int] = []

    async def answer(bridge: AsyncioBridge) -> None:
        results.append(await bridge.run(_answer))

    with trio.fail_after(10):
        async with AsyncioBridge() as bridge:
            async with trio.open_nursery() as nursery:
                for _ in range(3):
                    nursery.start_soon(answer, bridge)
            assert len(bridge_threads()) == 1
    assert results == [42, 42, 42]
    assert len(thread_starts) == 1
    assert thread_starts[0] is not trio_thread


async def test_closing_under_a_virtual_clock_waits_for_the_thread_in_real_time(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    # A task on the loop takes real time to unwind at close. The virtual
    # clock jumps whenever Trio waits; the wait for the thread must not.
    unwinding = threading.Event()
    tasks: list[asyncio.Task[None]] = []

    async def slow_to_unwind() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            unwinding.set()
            await asyncio.sleep(0.3)
            raise

    async def body(_portal: TrioPortal) -> None:
        # Not the run's task: it outlives the run, until the bridge closes.
        loop = asyncio.get_running_loop()
        tasks.append(loop.create_task(slow_to_unwind(), context=contextvars.Context()))
        await asyncio.sleep(0)

    bridge = AsyncioBridge()
    await bridge.run(body)
    await bridge.aclose()
    assert unwinding.is_set()
    assert tasks[0].cancelled()
    assert bridge_threads() == []
    stats = bridge.statistics()
    assert (stats.stuck_threads, stats.left_at_close) == (0, 0)
    assert "did not stop" not in caplog.text
