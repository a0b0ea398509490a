"""``BandLink``: the agent's WebSocket to Band, on trio-websocket.

The link is a thin Trio shell around the sans-io cores:

* :class:`~band_trio.wire.phoenix.PhoenixProtocol` (refs, joins, leaves,
  ``join_ref`` filtering, heartbeat deadlines),
* :mod:`band_trio.wire.backoff` (first-connect and reconnect policies),
* :func:`~band_trio.wire.events.decode_event` (typed, validated events).

While :meth:`BandLink.serve` runs, one session at a time owns a socket and runs
two tasks: the *reader* (frames in, replies matched, events decoded) and the
*heartbeat* (its own task, so it is never stuck behind a consumer). Events go
through a bounded internal buffer (``LinkConfig.event_buffer_size`` items) to
a forwarder task that sends them on the caller's channel. When the caller is
slow and that buffer is full, the reader waits (no event is ever dropped) and
the dead-connection deadline is paused meanwhile, because the acks may be
sitting unread behind the events; heartbeats keep being sent.

Memory bound: ``event_buffer_size`` decoded events, plus one frame held by
trio-websocket, plus frames of at most ``max_message_size`` (1 MiB) each;
bigger frames make the socket close with 1009 and the link reconnect. A frame
that is not a Phoenix v2 frame is counted, logged and skipped; only
``LinkConfig.malformed_frame_limit`` of them within
``malformed_frame_window`` seconds close the socket (1002), and that
reconnect is not held down like a flapping platform's.

The API key travels only in the ``x-api-key`` header; it never appears in a
URL, a log line, a repr or an exception.

Modules: ``_band_link`` (the Trio shell), ``_upgrade`` (the upgrade URL and
what a refusal means), ``_link_config``, ``_link_records`` (what the link
sends besides platform events, and its counters) and ``_topics``.
"""

from band_trio.wire.link._band_link import BandLink
from band_trio.wire.link._link_config import LinkConfig
from band_trio.wire.link._link_records import (
    EventRejected,
    LinkEvent,
    LinkReconnected,
    LinkStatistics,
    TopicLost,
)
from band_trio.wire.link._topics import agent_topics, room_topics
from band_trio.wire.link._upgrade import build_ws_url

__all__ = [
    "BandLink",
    "EventRejected",
    "LinkConfig",
    "LinkEvent",
    "LinkReconnected",
    "LinkStatistics",
    "TopicLost",
    "agent_topics",
    "build_ws_url",
    "room_topics",
]
