"""Noticing source changes by polling modification times."""

from __future__ import annotations

import os
from pathlib import Path

import trio

from band_trio.devloop.watch import SourceWatch, discover_sources


def touch(path: Path, text: str) -> None:
    path.write_text(text)
    # Two writes within the file system's time resolution must still differ.
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_an_edit_a_deletion_and_a_creation_are_each_reported_once(tmp_path: Path) -> None:
    kept, edited, deleted, created = (tmp_path / n for n in ("k.py", "e.py", "d.py", "c.py"))
    for path in (kept, edited, deleted):
        path.write_text("x = 1\n")
    watch = SourceWatch(str(p) for p in (kept, edited, deleted, created))
    assert watch.changed() == []
    touch(edited, "x = 2\n")
    deleted.unlink()
    touch(created, "y = 1\n")
    assert sorted(watch.changed()) == sorted(str(p) for p in (edited, deleted, created))
    assert watch.changed() == []
    assert watch.files[str(deleted)] is None


def test_watching_a_file_again_keeps_its_first_stamp(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("a = 1\n")
    watch = SourceWatch([str(path)])
    touch(path, "a = 2\n")
    watch.watch([str(path)])
    assert watch.changed() == [str(path)]


async def test_wait_for_change_returns_the_changed_files(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    path = tmp_path / "a.py"
    path.write_text("a = 1\n")
    watch = SourceWatch([str(path)])
    async with trio.open_nursery() as nursery:

        async def edit_later() -> None:
            await trio.sleep(5)
            touch(path, "a = 2\n")

        nursery.start_soon(edit_later)
        with trio.fail_after(60):
            changed = await watch.wait_for_change(interval=0.5)
    assert changed == [str(path)]
    assert trio.current_time() >= 5


def test_discovery_skips_hidden_dirs_caches_and_virtual_environments(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("")
    (tmp_path / "top.py").write_text("")
    for skipped in (".git", "__pycache__", "venv"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "x.py").write_text("")
    (tmp_path / "venv" / "pyvenv.cfg").write_text("")
    assert discover_sources(tmp_path) == [
        str(tmp_path / "pkg" / "mod.py"),
        str(tmp_path / "top.py"),
    ]


async def test_a_change_is_pending_until_it_is_reported_and_while_it_settles(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    path = tmp_path / "a.py"
    path.write_text("a = 1\n")
    watch = SourceWatch([str(path)])
    assert not watch.pending()
    touch(path, "a = 2\n")
    assert watch.pending()
    assert watch.pending(), "looking does not consume the change"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch.wait_for_change, 0.5, 1.0)
        await trio.sleep(0.5)
        # Seen by the poll, not yet returned: still pending.
        assert watch.pending()
    assert not watch.pending()
