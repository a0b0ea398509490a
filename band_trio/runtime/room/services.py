"""What the rooms of one agent share, and what one room reports.

The engine builds one :class:`RoomServices` and hands it to every
:class:`~band_trio.runtime.room.Room`; :class:`RoomStatistics` is a room's
counters as :meth:`~band_trio.runtime.room.Room.statistics` returns them.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import attrs
import trio

from band_trio.adapter.protocols import FrameworkAdapter, Preprocessor
from band_trio.adapter.tool_protocol import AgentToolsProtocol
from band_trio.runtime.claims.ledger import ClaimsLedger
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core._participant_rows import ParticipantRows
from band_trio.runtime.core.turn_durations import TurnDurations
from band_trio.runtime.room._pacer import RoomPacer
from band_trio.runtime.room._rest import RuntimeRest
from band_trio.runtime.room._running_turn import RunningTurn
from band_trio.runtime.state_changes import StateChanges
from band_trio.wire.models import ChatParticipant

__all__ = [
    "ParticipantCallback",
    "RoomCounters",
    "RoomServices",
    "RoomStatistics",
    "ToolsFactory",
]

ParticipantCallback = Callable[[str, Any], Awaitable[None]]
"""``on_participant_added`` / ``on_participant_removed``: ``(room_id, event)``."""


class ToolsFactory(Protocol):
    """Builds the room-bound tools of one turn."""

    def __call__(
        self, room_id: str, participants: Sequence[ChatParticipant], hooks: RunningTurn
    ) -> AgentToolsProtocol: ...


@attrs.define(kw_only=True)
class RoomServices:
    """What every room of one agent shares (built once by the engine).

    Attributes:
        agent_id: the agent's id (own messages are ignored).
        rest: the REST endpoints the rooms (and the engine's room listing) use.
        ledger: the agent's claims ledger.
        adapter: the framework adapter.
        preprocessor: turns events into adapter inputs.
        config: the runtime knobs.
        make_tools: builds one turn's tools.
        rng: randomness for the jittered first reconcile (seedable in tests).
        hub_room_id: the contacts hub room, when there is one (no activity
            reports there).
        on_participant_added: awaited with ``(room_id, ParticipantAdded)``
            after the roster took the event, so the callback sees the new
            participant in the room's roster.
        on_participant_removed: awaited with ``(room_id, ParticipantRemoved)``
            after the roster dropped the participant.
        changes: notified whenever a room's observable state changed (a turn
            started or ended, a message settled, an inbox item or a reconcile
            pass was handled), so that waiters re-check their predicate.
        turn_durations: where every room records its turns' durations.
        pacer: the agent-wide pace of bulk reconciles and idle reconciles (the
            engine sets one); None lets each room reconcile on its own timer.
        participant_rows: shares identical roster rows across the rooms.
        history_loads: how many rooms read their history at once
            (``config.max_parallel_history_loads``).
    """

    agent_id: str
    rest: RuntimeRest
    ledger: ClaimsLedger
    adapter: FrameworkAdapter
    preprocessor: Preprocessor
    config: AgentConfig
    make_tools: ToolsFactory
    rng: random.Random = attrs.field(factory=random.Random)
    hub_room_id: Callable[[], str | None] = lambda: None
    on_participant_added: ParticipantCallback | None = None
    on_participant_removed: ParticipantCallback | None = None
    changes: StateChanges = attrs.field(factory=StateChanges)
    turn_durations: TurnDurations = attrs.field(factory=TurnDurations)
    pacer: RoomPacer | None = None
    participant_rows: ParticipantRows = attrs.field(factory=ParticipantRows)
    history_loads: trio.CapacityLimiter = attrs.field(
        default=attrs.Factory(
            lambda self: trio.CapacityLimiter(self.config.max_parallel_history_loads),
            takes_self=True,
        )
    )


@attrs.frozen
class RoomStatistics:
    """A snapshot of one room's counters.

    Attributes:
        room_id: the room.
        turns: turns started (the adapter was called or about to be).
        completed: turns whose message ended processed.
        failures: turns that failed (adapter raised, timed out).
        failed_for_good: messages marked failed after their last attempt.
        interrupted: turns cancelled by an interrupt.
        overflows: events the dispatcher could not queue (the room reconciled instead).
        resyncs: reconcile passes run.
        skipped: messages not run (own, duplicate, already processed, failed for good).
        inbox_depth: events waiting in the inbox now.
        inbox_capacity: the inbox bound.
        stopped: the room is paused by a ``stop`` control.
        turn_running: a turn is in progress now.
        replies_recovered: messages found already answered on the platform after
            a reply post with no known outcome (acked, not run again).
    """

    room_id: str
    turns: int
    completed: int
    failures: int
    failed_for_good: int
    interrupted: int
    overflows: int
    resyncs: int
    skipped: int
    inbox_depth: int
    inbox_capacity: int
    stopped: bool
    turn_running: bool
    replies_recovered: int = 0


@attrs.define
class RoomCounters:
    """A room's running counters (see :class:`RoomStatistics` for their meaning)."""

    turns: int = 0
    completed: int = 0
    failures: int = 0
    failed_for_good: int = 0
    interrupted: int = 0
    overflows: int = 0
    resyncs: int = 0
    skipped: int = 0
    replies_recovered: int = 0
