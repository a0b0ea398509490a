"""Noticing that source files changed, by polling their modification times.

Polling needs no dependency and works on every file system (network mounts and
containers included, where change notifications often do not arrive); a few
stat calls per interval for a handful of files cost nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import trio

__all__ = ["FileStamp", "SourceWatch", "discover_sources", "stamp"]

FileStamp = tuple[int, int] | None
"""``(mtime_ns, size)`` of a file, None when it does not exist."""

_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})
_DISCOVERY_LIMIT = 2000


def stamp(path: str) -> FileStamp:
    """The file's ``(mtime_ns, size)``, or None when it is missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def discover_sources(root: Path) -> list[str]:
    """The ``.py`` files under ``root`` (hidden directories, virtual environments
    and caches skipped; at most 2,000), for a target whose own files are not
    known yet (it failed before importing anything)."""
    found: list[str] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".")
            and d not in _SKIPPED_DIRS
            and not os.path.exists(os.path.join(directory, d, "pyvenv.cfg"))
        ]
        found += [os.path.join(directory, f) for f in files if f.endswith(".py")]
        if len(found) >= _DISCOVERY_LIMIT:
            break
    return sorted(found[:_DISCOVERY_LIMIT])


class SourceWatch:
    """The stamps of a set of files; :meth:`changed` says which differ now.

    Files are added with :meth:`watch` (their current stamp is taken then); a
    file created, modified, replaced or deleted since counts as changed.
    """

    def __init__(self, files: Iterable[str] = ()) -> None:
        self._stamps: dict[str, FileStamp] = {}
        self._settling = False
        self.watch(files)

    @property
    def files(self) -> Mapping[str, FileStamp]:
        """The watched files and their last seen stamps."""
        return self._stamps

    def watch(self, files: Iterable[str]) -> None:
        """Start watching ``files`` (those already watched keep their stamp)."""
        for name in files:
            self._stamps.setdefault(name, stamp(name))

    def changed(self) -> list[str]:
        """Files whose stamp differs from the one last seen; their new stamps are
        remembered, so each change is reported once."""
        changed = []
        for name, old in self._stamps.items():
            new = stamp(name)
            if new != old:
                self._stamps[name] = new
                changed.append(name)
        return changed

    def pending(self) -> bool:
        """Whether a change is on its way: :meth:`wait_for_change` saw one and
        waits for the writes to settle, or some file differs from its last seen
        stamp (nothing is remembered: :meth:`changed` still reports it)."""
        return self._settling or any(stamp(name) != old for name, old in self._stamps.items())

    async def wait_for_change(self, interval: float = 0.3, settle: float = 0.1) -> list[str]:
        """Poll every ``interval`` seconds until some file changed; then wait
        ``settle`` seconds (an editor may write a file in several steps) and
        return every file changed by then."""
        while True:
            changed = self.changed()
            if changed:
                self._settling = True
                try:
                    await trio.sleep(settle)
                    return sorted({*changed, *self.changed()})
                finally:
                    self._settling = False
            await trio.sleep(interval)
