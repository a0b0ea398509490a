"""Cancellation against the fake app-server: an interrupt and a turn timeout
send ``turn/interrupt`` and keep a server that complies; a server that
ignores it is killed and the room is free at once; leaving the room and
stopping the agent close the processes in bounded steps, leaving no process,
reader task or file descriptor behind."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from band_trio_codex import CodexAdapter
from codex_support import FakeCodex, gone, open_pipes, reply, until

from band_trio.local import LocalPlatform
from band_trio.testing.rooms import agent_in_rooms

TIMEOUT = 30


@pytest.fixture
def fake(tmp_path: Path) -> FakeCodex:
    return FakeCodex(tmp_path)


async def test_an_interrupt_sends_turn_interrupt_and_keeps_the_process(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    fake.script([{"wait_interrupt": True}], [reply("here", [user_id])])
    adapter = CodexAdapter(fake.config())
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            await room.post("take your time")
            await until(lambda: bool(fake.received("turn/start")))
            pid = adapter.process_pid(room.room_id)
            await room.human.control(room.room_id, "interrupt")
            await until(lambda: bool(fake.received("turn/interrupt")))
            posted = await room.post("are you there?")
            assert await room.settled(posted) == "processed"
            assert adapter.process_pid(room.room_id) == pid
    (interrupt,) = fake.received("turn/interrupt")
    assert interrupt["params"]["turnId"] == "turn-0"
    assert adapter.statistics().killed == 0


async def test_a_turn_timeout_interrupts_and_fails_once(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    fake.script([{"wait_interrupt": True}], [reply("back", [user_id])])
    adapter = CodexAdapter(fake.config(turn_timeout=0.5))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            stuck = await room.post("think forever")
            assert await room.settled(stuck) == "failed"
            pid = adapter.process_pid(room.room_id)
            posted = await room.post("and now?")
            assert await room.settled(posted) == "processed"
            assert adapter.process_pid(room.room_id) == pid
    (error,) = room.from_agent("error")
    assert error.metadata["failure"]["code"] == "timeout"
    assert len(fake.received("turn/interrupt")) == 1
    assert adapter.statistics().killed == 0


async def test_a_server_that_ignores_the_interrupt_is_killed_and_the_room_is_free(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    fake.script([{"hang": True}], [reply("fresh start", [user_id])])
    adapter = CodexAdapter(fake.config(interrupt_timeout=0.5))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            await room.post("hang")
            await until(lambda: any(m.get("hang") for m in fake.log()))
            pid = adapter.process_pid(room.room_id)
            thread = adapter.thread_id(room.room_id)
            await room.human.control(room.room_id, "interrupt")
            await until(lambda: gone(pid))
            posted = await room.post("hello?")
            assert await room.settled(posted) == "processed"
            assert adapter.process_pid(room.room_id) != pid
    assert adapter.statistics().killed == 1
    (resume,) = fake.received("thread/resume")
    assert resume["params"]["threadId"] == thread
    (sent,) = room.from_agent("text")
    assert sent.content.endswith("fresh start")


async def test_leaving_the_room_closes_its_process(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    fake.script(default=[reply("hi", [user_id])])
    adapter = CodexAdapter(fake.config())
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("hi")
            assert await room.settled(posted) == "processed"
            pid = adapter.process_pid(room.room_id)
            await room.human.remove_participant(room.room_id, room.agent_id)
            await until(lambda: gone(pid))
            assert adapter.live_rooms() == []


async def test_shutdown_mid_turn_leaves_no_process_task_or_descriptor(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    # The server ignores the interrupt, its closed input and SIGTERM: only
    # the group's SIGKILL ends it, within the bounded steps.
    fake.script(default=[{"hang": True}], ignore_term=True, ignore_eof=True)
    adapter = CodexAdapter(fake.config(interrupt_timeout=0.3, close_timeout=0.3))
    before = open_pipes()
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter, rooms=2, shutdown_timeout=0.5) as [
            first,
            second,
        ]:
            await first.post("hang")
            await second.post("hang")
            await until(lambda: sum(1 for m in fake.log() if m.get("hang")) == 2)
            pids = [adapter.process_pid(first.room_id), adapter.process_pid(second.room_id)]
            assert open_pipes() >= before + 4  # each process's stdin and stdout
    assert all(gone(pid) for pid in pids)
    assert adapter.live_rooms() == []
    assert adapter.statistics().live_readers == 0
    assert open_pipes() <= before


@pytest.mark.parametrize("stubborn", [False, True])
async def test_closing_goes_stdin_then_sigterm_then_sigkill(
    band_platform: LocalPlatform, fake: FakeCodex, stubborn: bool
) -> None:
    user_id = band_platform.user.id
    fake.script(default=[reply("hi", [user_id])], ignore_term=stubborn, ignore_eof=stubborn)
    adapter = CodexAdapter(fake.config(close_timeout=0.3))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("hi")
            assert await room.settled(posted) == "processed"
            pid = adapter.process_pid(room.room_id)
    assert gone(pid)
    steps = [
        next(k for k in ("eof", "term") if k in m) for m in fake.log() if "eof" in m or "term" in m
    ]
    # A server that exits when its input ends is never signalled; one that
    # ignores it gets SIGTERM, and one that ignores that too is killed.
    assert steps == (["eof", "term"] if stubborn else ["eof"])
    assert adapter.statistics().live_readers == 0


async def test_stop_and_room_removal_mid_turn_interrupt_codex(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    fake.script(default=[{"wait_interrupt": True}])
    adapter = CodexAdapter(fake.config())
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter, rooms=2) as [stopped, removed]:
            await stopped.post("work")
            await removed.post("work")
            await until(lambda: len(fake.received("turn/start")) == 2)
            pid = adapter.process_pid(removed.room_id)
            await stopped.human.control(stopped.room_id, "stop")
            await until(lambda: len(fake.received("turn/interrupt")) == 1)
            await removed.human.remove_participant(removed.room_id, removed.agent_id)
            await until(lambda: len(fake.received("turn/interrupt")) == 2)
            await until(lambda: gone(pid))
            assert removed.room_id not in adapter.live_rooms()
    interrupted = {m["params"]["threadId"] for m in fake.received("turn/interrupt")}
    assert len(interrupted) == 2
    assert adapter.statistics().killed == 0


async def test_an_idle_process_is_closed_on_time_and_the_room_resumes_later(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    fake.script(default=[reply("hi", [user_id])])
    adapter = CodexAdapter(fake.config(idle_timeout=0.3))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter) as [room]:
            posted = await room.post("hi")
            assert await room.settled(posted) == "processed"
            pid = adapter.process_pid(room.room_id)
            # No other turn comes: the adapter's background work closes it.
            await until(lambda: gone(pid))
            assert adapter.live_rooms() == []
            posted = await room.post("again")
            assert await room.settled(posted) == "processed"
    assert adapter.statistics().processes.closed_idle >= 1
    assert len(fake.received("thread/resume")) == 1


async def test_over_the_bound_the_least_recently_used_process_is_closed(
    band_platform: LocalPlatform, fake: FakeCodex
) -> None:
    user_id = band_platform.user.id
    fake.script(default=[reply("ok", [user_id])])
    adapter = CodexAdapter(fake.config(max_live_processes=1))
    with trio.fail_after(TIMEOUT):
        async with agent_in_rooms(band_platform, adapter, rooms=2) as [first, second]:
            posted = await first.post("one")
            assert await first.settled(posted) == "processed"
            first_pid = adapter.process_pid(first.room_id)
            thread = adapter.thread_id(first.room_id)
            posted = await second.post("two")
            assert await second.settled(posted) == "processed"
            assert adapter.live_rooms() == [second.room_id]
            await until(lambda: gone(first_pid))
            posted = await first.post("three")
            assert await first.settled(posted) == "processed"
            assert adapter.live_rooms() == [first.room_id]
    assert adapter.statistics().processes.closed_over_limit == 2
    (resume,) = fake.received("thread/resume")
    assert resume["params"]["threadId"] == thread
