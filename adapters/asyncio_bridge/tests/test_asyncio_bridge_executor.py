"""The bridge's own executor: where the loop's synchronous work runs.

Synchronous jobs (``run_in_executor(None, ...)``, ``asyncio.to_thread``) run
on bounded daemon threads that ``aclose`` joins; a job that never returns is
reported as stuck and never holds the close or process exit; one run's
blocked jobs never starve another run's.

The threads run in real time: these tests use the real clock, short bounds
and ``trio.fail_after``; they wait on ``threading.Event`` objects from a Trio
worker thread, never with a fixed sleep."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import trio
from band_trio_asyncio import AsyncioBridge, TrioPortal

from band_trio import BandConfigError


def bridge_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("band-trio-asyncio")]


async def wait_thread_event(event: threading.Event) -> None:
    await trio.to_thread.run_sync(event.wait, abandon_on_cancel=True)


async def test_sync_work_runs_on_daemon_threads_joined_at_close() -> None:
    seen: list[tuple[str, bool]] = []

    def job() -> None:
        thread = threading.current_thread()
        seen.append((thread.name, thread.daemon))

    async def body(_portal: TrioPortal) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, job)
        await asyncio.to_thread(job)

    with trio.fail_after(10):
        async with AsyncioBridge() as bridge:
            await bridge.run(body)
            assert bridge.statistics().executor_threads >= 1
    assert [name.startswith("band-trio-asyncio-sync") for name, _ in seen] == [True, True]
    assert all(daemon for _, daemon in seen)
    assert bridge_threads() == []
    stats = bridge.statistics()
    assert (stats.executor_threads, stats.executor_busy, stats.stuck_threads) == (0, 0, 0)


async def test_a_job_that_never_returns_is_reported_and_does_not_hold_the_close() -> None:
    release, started = threading.Event(), threading.Event()

    def block() -> None:
        started.set()
        release.wait()

    async def body(_portal: TrioPortal) -> None:
        await asyncio.to_thread(block)

    bridge = AsyncioBridge(cancel_grace=0.2, stuck_after=0.1)
    try:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(bridge.run, body)
                await wait_thread_event(started)
                nursery.cancel_scope.cancel()  # the turn ends; the job goes on
            await bridge.aclose()
        # Closed within the bound; the blocked thread is left and reported.
        stats = bridge.statistics()
        assert not stats.thread_running
        assert stats.stuck_threads == 1
        assert stats.executor_threads == 1
        (left,) = bridge_threads()
        assert left.daemon
    finally:
        release.set()
    with trio.fail_after(10):
        await trio.to_thread.run_sync(left.join)
    assert bridge.statistics().stuck_threads == 0
    assert bridge.statistics().executor_threads == 0


async def test_other_runs_blocked_jobs_do_not_starve_a_quiet_runs_step() -> None:
    """Eight runs each block a thread for good; a ninth run's quick step still
    gets a thread (once the blocked ones count as stuck)."""
    release = threading.Event()
    blocked = [threading.Event() for _ in range(8)]

    def block(n: int) -> None:
        blocked[n].set()
        release.wait()

    def blocker(n: int) -> Callable[[TrioPortal], Coroutine[Any, Any, None]]:
        async def body(_portal: TrioPortal) -> None:
            await asyncio.to_thread(block, n)

        return body

    async def quiet(_portal: TrioPortal) -> str:
        return await asyncio.to_thread(lambda: "routed")

    bridge = AsyncioBridge(cancel_grace=0.2, max_workers=2, max_threads=16, stuck_after=0.1)
    try:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                for n in range(8):
                    nursery.start_soon(bridge.run, blocker(n))
                for event in blocked:
                    await wait_thread_event(event)
                assert bridge.statistics().executor_busy == 8
                assert await bridge.run(quiet) == "routed"
                assert bridge.statistics().stuck_threads == 8
                nursery.cancel_scope.cancel()
    finally:
        release.set()
        with trio.fail_after(10):
            await bridge.aclose()
    assert bridge.statistics().executor_threads == 0


async def test_one_run_holds_at_most_max_workers_threads() -> None:
    """A run that blocks many jobs at once gets ``max_workers`` threads; the
    others wait for them, and a second run still gets a thread."""
    release = threading.Event()
    running = 0
    most = 0
    count_lock = threading.Lock()
    two_in = threading.Event()

    def block() -> None:
        nonlocal running, most
        with count_lock:
            running += 1
            most = max(most, running)
            if running == 2:
                two_in.set()
        release.wait()
        with count_lock:
            running -= 1

    async def greedy(_portal: TrioPortal) -> None:
        await asyncio.gather(*(asyncio.to_thread(block) for _ in range(10)))

    async def quiet(_portal: TrioPortal) -> int:
        return await asyncio.to_thread(lambda: 7)

    bridge = AsyncioBridge(cancel_grace=0.2, max_workers=2, max_threads=16, stuck_after=0.05)
    try:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(bridge.run, greedy)
                await wait_thread_event(two_in)
                assert await bridge.run(quiet) == 7
                stats = bridge.statistics()
                assert (stats.executor_busy, stats.executor_queued) == (2, 8)
                release.set()  # the greedy run finishes, two jobs at a time
    finally:
        release.set()
        with trio.fail_after(10):
            await bridge.aclose()
    assert most == 2


async def test_threads_beyond_max_threads_are_never_started() -> None:
    release = threading.Event()
    blocked = [threading.Event() for _ in range(3)]

    def block(n: int) -> None:
        blocked[n].set()
        release.wait()

    def blocker(n: int) -> Callable[[TrioPortal], Coroutine[Any, Any, None]]:
        async def body(_portal: TrioPortal) -> None:
            await asyncio.to_thread(block, n)

        return body

    bridge = AsyncioBridge(cancel_grace=0.2, max_workers=1, max_threads=3, stuck_after=0.05)
    try:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                for n in range(3):
                    nursery.start_soon(bridge.run, blocker(n))
                for event in blocked:
                    await wait_thread_event(event)
                nursery.start_soon(bridge.run, blocker(0))  # a fourth job: no thread
                while bridge.statistics().executor_queued != 1:
                    await trio.to_thread.run_sync(time.sleep, 0.01)
                stats = bridge.statistics()
                assert (stats.executor_threads, stats.executor_busy) == (3, 3)
                nursery.cancel_scope.cancel()
    finally:
        release.set()
        with trio.fail_after(10):
            await bridge.aclose()


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"max_workers": 0}, "max_workers"),
        ({"max_workers": True}, "max_workers"),
        ({"max_workers": 4, "max_threads": 3}, "max_threads"),
        ({"stuck_after": 0}, "stuck_after"),
        ({"cancel_grace": -1}, "cancel_grace"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, object], name: str) -> None:
    with pytest.raises(BandConfigError, match=name):
        AsyncioBridge(**kwargs)  # type: ignore[arg-type]


BLOCKED_PROGRAM = """
import asyncio, sys, threading
import trio
from band_trio_asyncio import AsyncioBridge

async def body(_portal):
    def block():
        print("blocked", flush=True)
        threading.Event().wait()
    await asyncio.to_thread(block)

async def main():
    async with AsyncioBridge(cancel_grace=0.2) as bridge:
        await bridge.run(body)

trio.run(main)
"""


@pytest.mark.slow
async def test_a_process_with_a_blocked_job_exits_on_sigint() -> None:
    """A real process: Ctrl+C while a synchronous job blocks for good ends the
    process (no executor thread holds interpreter exit)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", BLOCKED_PROGRAM],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        assert process.stdout is not None
        with trio.fail_after(30):
            out = b""
            while b"blocked" not in out:
                chunk = await process.stdout.receive_some()
                assert chunk, "the program ended before blocking"
                out += chunk
            process.send_signal(signal.SIGINT)
            code = await process.wait()
        assert code != 0  # KeyboardInterrupt
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
