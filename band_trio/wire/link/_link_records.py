"""What a :class:`~band_trio.wire.link.BandLink` tells its consumer besides platform events,
and the snapshot of its counters."""

from __future__ import annotations

from typing import TypeAlias

import attrs

from band_trio.wire.events import PlatformEvent

__all__ = ["EventRejected", "LinkEvent", "LinkReconnected", "LinkStatistics", "TopicLost"]


@attrs.frozen
class LinkReconnected:
    """The socket was replaced and every registered topic rejoined.

    Messages may have been missed while disconnected: consumers resync (for
    example, drain ``/messages/next`` in every room and re-list rooms).

    Attributes:
        reconnects: how many reconnects this link has made so far.
        rejoined: topics joined again on the new socket.
        lost: topics whose rejoin was refused (no longer joined).
    """

    reconnects: int
    rejoined: tuple[str, ...]
    lost: tuple[str, ...]


@attrs.frozen
class EventRejected:
    """A push that failed validation (or had an unknown event name); it was dropped.

    Attributes:
        topic: the channel it arrived on.
        event: the event name.
        reason: what was wrong (fields and types, never payload values).
    """

    topic: str
    event: str
    reason: str


@attrs.frozen
class TopicLost:
    """A joined topic ended without us leaving it (``phx_close``, or a refused rejoin).

    The link does not rejoin it; a consumer that still wants it calls
    :meth:`~band_trio.wire.link.BandLink.join` again.
    """

    topic: str
    reason: str


LinkEvent: TypeAlias = PlatformEvent | LinkReconnected | EventRejected | TopicLost


@attrs.frozen
class LinkStatistics:
    """A snapshot of a link's counters (see :meth:`~band_trio.wire.link.BandLink.statistics`).

    ``malformed_frames`` counts frames skipped because they were not Phoenix v2
    frames; ``malformed_closes`` the sockets closed because too many arrived
    within ``LinkConfig.malformed_frame_window``. ``disconnected_since`` is
    the Trio clock time the last socket was lost (None while connected and
    before the first connect).
    """

    connected: bool
    joined_topics: tuple[str, ...]
    frames_in: int
    frames_out: int
    malformed_frames: int
    oversize_frames: int
    events_delivered: int
    events_rejected: int
    events_buffered: int
    consumer_stalls: int
    heartbeats_sent: int
    heartbeat_acks: int
    dead_connections: int
    reconnects: int
    connect_failures: int
    malformed_closes: int = 0
    disconnected_since: float | None = None
