"""``agent.control`` signals: interrupt, stop and play (protocol,
"agent.control"; "Stopped executions").

Signals are applied by the dispatcher the moment they arrive, in arrival order,
outside every room's inbox, so they pre-empt a turn in flight. Applying one never
blocks: it cancels a turn's cancel scope or flips a room's flag, and the room's
worker does the rest.

* ``interrupt`` cancels the running turn; its message is then marked
  ``processed`` (consumed) and nothing is posted. Between turns it is a no-op.
* ``stop`` cancels the running turn, leaves its message ``processing`` (so
  ``/next`` replays it) and pauses the room: nothing new is claimed.
* ``play`` resumes a stopped room and reconciles at once.

Routing: a ``room_id`` targets that room (whatever the scope); no ``room_id``
with scope ``agent`` targets every room the agent serves; no ``room_id`` with
scope ``room`` is ignored. Signals are de-duplicated by ``correlation_id`` (a
bounded LRU); an id is remembered only once the signal reached a room, so a copy
re-sent after the room is served still applies.

An ``interrupt`` or ``stop`` that reaches a room also calls ``notify(room_id,
mode)`` once for that room (the engine queues the adapter's optional
``on_interrupt`` hook there; it never runs here).

Reference: docs/reference/protocol.rst.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from band_trio._logging import get_logger
from band_trio.runtime.core._schedule import ControlDeduplicator
from band_trio.runtime.room import Room
from band_trio.wire.events import AgentControl

__all__ = ["ControlHandler"]

logger = get_logger("band_trio.runtime.control")


class ControlHandler:
    """Applies ``agent.control`` signals to the rooms an agent serves.

    Args:
        agent_id: the agent's id (signals for another agent are ignored).
        dedupe_size: how many correlation ids are remembered.
        notify: called with ``(room_id, mode)`` for each room an ``interrupt``
            or ``stop`` reached; it must not block.
    """

    def __init__(
        self,
        *,
        agent_id: str,
        dedupe_size: int = 256,
        notify: Callable[[str, str], None] | None = None,
    ) -> None:
        self._agent_id = agent_id
        self._notify = notify
        self._dedupe = ControlDeduplicator(dedupe_size)
        self.applied = 0
        self.duplicates = 0
        self.ignored = 0

    def apply(self, signal: AgentControl, rooms: Mapping[str, Room]) -> int:
        """Apply one signal now; returns how many rooms it reached."""
        if signal.agent_id != self._agent_id:
            logger.warning("ignoring agent.control for another agent")
            self.ignored += 1
            return 0
        correlation_id = signal.correlation_id
        if correlation_id and self._dedupe.seen(correlation_id):
            self.duplicates += 1
            logger.debug("ignoring duplicate agent.control %s", correlation_id)
            return 0
        if signal.room_id is not None:
            room = rooms.get(signal.room_id)
            targets = [room] if room is not None else []
        elif signal.scope == "agent":
            targets = list(rooms.values())
        else:
            logger.warning("ignoring agent.control %s with scope=room and no room_id", signal.mode)
            self.ignored += 1
            return 0
        if not targets:
            self.ignored += 1
            logger.info("agent.control %s reached no served room", signal.mode)
            return 0
        for room in targets:
            _apply_one(signal.mode, room)
        if self._notify is not None and signal.mode in ("interrupt", "stop"):
            for room in targets:
                try:
                    self._notify(room.room_id, signal.mode)
                except Exception:
                    logger.exception("could not queue on_interrupt for room %s", room.room_id)
        if correlation_id:
            self._dedupe.record(correlation_id)
        self.applied += 1
        logger.info(
            "agent.control %s applied to %d room(s) (reason=%s)",
            signal.mode,
            len(targets),
            signal.reason,
        )
        return len(targets)


def _apply_one(mode: str, room: Room) -> None:
    if mode == "interrupt":
        room.interrupt()
    elif mode == "stop":
        room.stop()
    elif mode == "play":
        room.play()
    else:  # pragma: no cover - the event decoder only lets the three modes through
        logger.warning("unknown agent.control mode %r", mode)
