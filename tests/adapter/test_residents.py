"""``Residents``: which rooms hold a child process, and which to close (idle,
over the limit, least recently used first, never a room in a turn); and
``kill_process_group``; ``room_workdir``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from band_trio import BandConfigError
from band_trio.adapter import Residents, ResidentsStatistics, kill_process_group, room_workdir


def test_a_room_reuses_its_resource_and_the_limit_closes_the_least_recently_used() -> None:
    residents: Residents[str] = Residents(limit=2)
    assert residents.acquire("a", 0.0) is None
    assert residents.add("a", "cli-a", 0.0) == []
    residents.release("a", 1.0)
    assert residents.add("b", "cli-b", 2.0) == []
    residents.release("b", 3.0)
    assert residents.acquire("a", 4.0) == "cli-a"  # a is now the most recently used
    residents.release("a", 5.0)
    assert residents.add("c", "cli-c", 6.0) == [("b", "cli-b")]
    assert list(residents) == ["a", "c"]
    assert residents.statistics() == ResidentsStatistics(
        live=2, busy=1, opened=3, closed_idle=0, closed_over_limit=1
    )


def test_a_room_in_a_turn_is_never_closed_and_the_excess_goes_when_turns_end() -> None:
    residents: Residents[str] = Residents(limit=1)
    residents.add("a", "cli-a", 0.0)
    assert residents.add("b", "cli-b", 1.0) == []  # a is busy: over the limit for now
    assert len(residents) == 2
    assert residents.release("b", 2.0) == [("b", "cli-b")]  # a is still busy
    assert residents.release("a", 3.0) == []
    assert list(residents) == ["a"]


def test_idle_rooms_expire_after_the_idle_timeout() -> None:
    residents: Residents[str] = Residents(idle_timeout=10.0)
    residents.add("a", "cli-a", 0.0)
    residents.release("a", 0.0)
    residents.add("b", "cli-b", 5.0)  # busy: never expires
    assert residents.next_expiry() == 10.0
    assert residents.expired(9.9) == []
    assert residents.expired(10.0) == [("a", "cli-a")]
    assert residents.expired(100.0) == []
    assert residents.next_expiry() is None
    assert residents.statistics().closed_idle == 1


def test_remove_and_remove_all_hand_back_what_to_close() -> None:
    residents: Residents[str] = Residents()
    residents.add("a", "cli-a", 0.0)
    residents.add("b", "cli-b", 0.0)
    assert residents.remove("a") == "cli-a"
    assert residents.remove("a") is None
    assert residents.remove_all() == [("b", "cli-b")]
    assert len(residents) == 0
    with pytest.raises(BandConfigError):
        residents.add("c", "x", 0.0) or residents.add("c", "y", 0.0)


@pytest.mark.parametrize("kwargs", [{"limit": 0}, {"limit": True}, {"idle_timeout": 0}])
def test_bad_bounds_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(BandConfigError):
        Residents(**kwargs)  # type: ignore[arg-type]


@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.booleans()), max_size=60))
def test_idle_rooms_never_exceed_the_limit(steps: list[tuple[str, bool]]) -> None:
    residents: Residents[str] = Residents(limit=3)
    now = 0.0
    for room, start in steps:
        now += 1.0
        if start:
            if residents.acquire(room, now) is None:
                residents.add(room, room, now)
        else:
            residents.release(room, now)
        stats = residents.statistics()
        assert stats.live - stats.busy <= 3 or stats.busy > 0
        if stats.busy == 0:
            assert stats.live <= 3


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")
def test_kill_process_group_kills_a_group_leader_with_its_children() -> None:
    script = (
        "import subprocess, sys, time; "
        "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print(c.pid, flush=True); time.sleep(60)"
    )
    leader = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert leader.stdout is not None
        grandchild = int(leader.stdout.readline())
        assert kill_process_group(leader.pid) is True
        assert leader.wait(timeout=10) < 0
        deadline = time.monotonic() + 10
        while not _dead(grandchild) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _dead(grandchild)  # killed with its group, not orphaned
    finally:
        if leader.poll() is None:
            leader.kill()
            leader.wait()
        if leader.stdout is not None:
            leader.stdout.close()
    assert kill_process_group(leader.pid) is False


def _dead(pid: int) -> bool:
    """Gone, or a zombie waiting for its new parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")
def test_kill_process_group_kills_a_child_of_our_own_group_alone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert os.getpgid(child.pid) == os.getpgrp()
        assert kill_process_group(child.pid) is True
        assert child.wait(timeout=10) < 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_a_rooms_workdir_is_its_workspace_made_on_demand_else_cwd(tmp_path: Path) -> None:
    assert room_workdir("r1", cwd=None, workspace_for_room=None) is None
    assert room_workdir("r1", cwd=tmp_path, workspace_for_room=None) == tmp_path
    made = room_workdir(
        "r1", cwd=None, workspace_for_room=lambda room: str(tmp_path / "rooms" / room)
    )
    assert made == tmp_path / "rooms" / "r1"
    assert made.is_dir()
