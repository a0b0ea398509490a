"""``AgentStatistics``: the snapshot ``Agent.statistics()`` returns.

It lives below the agent so that what reads it (the health and metrics
listener of :mod:`band_trio.observe`, which the agent starts) needs nothing of
the agent itself.
"""

from __future__ import annotations

import attrs

from band_trio.runtime.claims.ledger import LedgerStatistics
from band_trio.runtime.core.turn_durations import TurnDurationStatistics
from band_trio.runtime.gc_policy import GcFreezeStatistics
from band_trio.runtime.room.services import RoomStatistics
from band_trio.wire.link import LinkStatistics
from band_trio.wire.rest import RestStatistics

__all__ = ["AgentStatistics"]


@attrs.frozen
class AgentStatistics:
    """A snapshot of a running agent's counters.

    Attributes:
        serving: the agent is connected and serving rooms.
        rooms: rooms being served.
        joining: rooms whose join is in progress or being retried.
        turns: turns started, all rooms.
        completed: messages completed (marked processed), all rooms.
        failures: failed turns (adapter raised or timed out).
        failed_for_good: messages failed after their last attempt.
        interrupted: turns cancelled by an interrupt.
        overflows: room events not queued because an inbox was full (recovered
            from ``/next``).
        resyncs: ``/next`` reconcile passes.
        inbox_depth: events waiting in all inboxes now.
        reconnects: times the WebSocket came back after a drop.
        events: link events routed.
        unrouted: room events for rooms the agent does not serve (dropped).
        rejected: pushes the link rejected as invalid.
        control_signals: ``agent.control`` signals applied.
        per_room: each served room's statistics.
        replies_recovered: messages found already answered on the platform
            after a reply post with no known outcome (acked, not run again).
        turn_durations: how long message turns take: percentiles over the
            most recent turns (a fixed-size window), the count and the
            longest since the agent started
            (:class:`~band_trio.runtime.TurnDurationStatistics`).
        link: the WebSocket link's counters (connects, reconnects, frames,
            heartbeats...), or None when not serving.
        rest: the REST client's counters (calls, retries, errors, requests in
            flight and queued), or None when not serving.
        gc: the garbage-collector freeze (``AgentConfig.gc_freeze_min_rooms``):
            whether the agent's rooms are frozen now, the objects frozen in
            the process, freezes and unfreezes so far
            (:class:`~band_trio.runtime.GcFreezeStatistics`).
        ledger: the claims ledger's size (messages in flight, replies and
            acks pending, completed and failed ids kept), or None when not
            serving.
        stuck_threads: threads the adapter started that did not stop when
            asked (0 unless the adapter reports them, see
            :class:`~band_trio.adapter.ReportsStuckThreads`).
        draining: a graceful shutdown is under way (intake fenced, running
            turns finishing).
    """

    serving: bool
    rooms: int
    joining: int
    turns: int
    completed: int
    failures: int
    failed_for_good: int
    interrupted: int
    overflows: int
    resyncs: int
    inbox_depth: int
    reconnects: int
    events: int
    unrouted: int
    rejected: int
    control_signals: int
    per_room: tuple[RoomStatistics, ...]
    replies_recovered: int = 0
    turn_durations: TurnDurationStatistics = attrs.field(factory=TurnDurationStatistics)
    link: LinkStatistics | None = None
    rest: RestStatistics | None = None
    gc: GcFreezeStatistics = attrs.field(factory=GcFreezeStatistics)
    ledger: LedgerStatistics | None = None
    stuck_threads: int = 0
    draining: bool = False
