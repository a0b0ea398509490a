"""What an agent run leaves alive: threads and Trio tasks started during a run
that still live once ``serve`` returned.

An adapter that starts a thread or a task must end it by ``on_cleanup`` or
``cleanup_all``: nothing outlives ``serve``. The kit takes a
:class:`Census` before each run and compares it with what lives after.
Trio's own idle worker threads (kept by its thread cache for reuse) are
not the adapter's and are never counted.
"""

from __future__ import annotations

import threading

import attrs
import trio

__all__ = ["Census"]

_TRIO_IDLE_WORKER = "Trio thread "


def _threads() -> dict[int, str]:
    return {
        id(thread): thread.name
        for thread in threading.enumerate()
        if thread.is_alive() and not thread.name.startswith(_TRIO_IDLE_WORKER)
    }


def _tasks() -> dict[int, str]:
    found: dict[int, str] = {}
    pending = [trio.lowlevel.current_root_task()]
    while pending:
        task = pending.pop()
        if task is None:
            continue
        found[id(task)] = task.name
        for nursery in task.child_nurseries:
            pending.extend(nursery.child_tasks)
    return found


@attrs.frozen
class Census:
    """The threads and Trio tasks alive at one moment (inside a Trio run)."""

    threads: dict[int, str]
    tasks: dict[int, str]

    @classmethod
    def take(cls) -> Census:
        """Count what lives now."""
        return cls(_threads(), _tasks())

    def newcomers(self) -> list[str]:
        """What lives now and did not when this census was taken."""
        now = Census.take()
        out = [f"thread {name!r}" for key, name in now.threads.items() if key not in self.threads]
        out += [f"task {name!r}" for key, name in now.tasks.items() if key not in self.tasks]
        return out
