"""A sans-io Phoenix Channels v2 client core.

Reference: docs/reference/protocol.rst (protocol, "Phoenix Channels v2 framing";
"Channel control frames"; "Heartbeat and liveness").

:class:`PhoenixProtocol` owns no socket and reads no clock. The caller hands it
received frame texts and the current time; it hands back the frame texts to
send and frozen :data:`PhoenixEvent` objects describing what happened. Thus the
whole channel protocol (refs, joins and leaves with reply matching, ``join_ref``
filtering, heartbeats and the dead-connection deadline) is testable without
I/O, and the Trio layer (:mod:`band_trio.wire.link`) only moves bytes and waits.

Frames are JSON arrays ``[join_ref, ref, topic, event, payload]``.

Per-topic states (:class:`TopicState`)::

    (absent) --send_join--> JOINING --ok reply--> JOINED --send_leave--> LEAVING --reply--> (absent)
                              |  error reply -> (absent)   | phx_close -> (absent)
                              |                            | phx_error -> NEEDS_REJOIN
    reset_connection: JOINING/JOINED -> NEEDS_REJOIN, LEAVING -> (absent)
    NEEDS_REJOIN --send_join--> JOINING (fresh join_ref)
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator, Mapping
from typing import Any, Final, TypeAlias

import attrs

from band_trio.errors import FrameError, LocalProtocolError

__all__ = [
    "HEARTBEAT_TOPIC",
    "ChannelClosed",
    "ChannelErrored",
    "ChannelMessage",
    "Frame",
    "HeartbeatAck",
    "JoinFailed",
    "JoinOk",
    "LeaveFailed",
    "LeaveOk",
    "PhoenixEvent",
    "PhoenixProtocol",
    "TopicState",
    "decode_frame",
    "encode_frame",
]

HEARTBEAT_TOPIC: Final = "phoenix"
DEFAULT_HEARTBEAT_INTERVAL: Final = 30.0
DEFAULT_DEAD_AFTER: Final = 60.0
DEFAULT_JOIN_ERROR_REASON: Final = "invalid topic"

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_loads = json.JSONDecoder().decode


# --------------------------------------------------------------------------- frames


@attrs.frozen
class Frame:
    """One Phoenix v2 frame. ``payload`` is always an object (non-objects become ``{}``)."""

    join_ref: str | None
    ref: str | None
    topic: str
    event: str
    payload: Mapping[str, Any]


def _ref(value: Any, what: str) -> str | None:
    if value is None or type(value) is str:
        return value
    # Numbers are tolerated and coerced to the decimal string form refs use.
    if type(value) is int:
        return str(value)
    if type(value) is float and value.is_integer():
        return str(int(value))
    raise FrameError(f"frame {what} must be a string or null, got {type(value).__name__}")


def decode_frame(text: str | bytes) -> Frame:
    """Parse one WebSocket message into a :class:`Frame`.

    Raises:
        FrameError: not JSON, not a 5-element array, a ref that is neither a
            string, a number nor null, or an empty/non-string topic or event
            (protocol, "Phoenix Channels v2 framing"). The link skips such a
            frame; only a burst of them closes the socket
            (``LinkConfig.malformed_frame_limit``).
    """
    try:
        data = _loads(text if isinstance(text, str) else text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise FrameError("frame is not valid JSON") from None
    if type(data) is not list or len(data) != 5:
        raise FrameError("frame is not a 5-element JSON array")
    join_ref, ref, topic, event, payload = data
    if type(topic) is not str or not topic:
        raise FrameError("frame topic must be a non-empty string")
    if type(event) is not str or not event:
        raise FrameError("frame event must be a non-empty string")
    return Frame(
        _ref(join_ref, "join_ref"),
        _ref(ref, "ref"),
        topic,
        event,
        payload if type(payload) is dict else {},
    )


def encode_frame(frame: Frame) -> str:
    """Serialise a :class:`Frame` to the v2 JSON array text."""
    return _dumps([frame.join_ref, frame.ref, frame.topic, frame.event, frame.payload])


def _encode(join_ref: str | None, ref: str | None, topic: str, event: str) -> str:
    return _dumps([join_ref, ref, topic, event, {}])


# --------------------------------------------------------------------------- events


@attrs.frozen
class JoinOk:
    """The platform accepted our ``phx_join``; pushes on ``topic`` flow from now on."""

    topic: str
    join_ref: str
    response: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class JoinFailed:
    """The platform refused our ``phx_join``; the topic is no longer registered."""

    topic: str
    join_ref: str
    reason: str


@attrs.frozen
class LeaveOk:
    """The platform confirmed our ``phx_leave``; the topic is no longer registered."""

    topic: str


@attrs.frozen
class LeaveFailed:
    """The leave reply was not ``ok``; the topic is unregistered locally all the same."""

    topic: str
    reason: str


@attrs.frozen
class ChannelMessage:
    """A push on a joined channel (an application event, still undecoded)."""

    topic: str
    event: str
    payload: Mapping[str, Any]


@attrs.frozen
class HeartbeatAck:
    """The platform answered one of our heartbeats; the dead deadline was pushed back."""

    ref: str


@attrs.frozen
class ChannelClosed:
    """``phx_close`` on a joined channel: the topic is lost for good (not rejoined)."""

    topic: str


@attrs.frozen
class ChannelErrored:
    """``phx_error``: the channel crashed server-side; the topic needs a rejoin."""

    topic: str


PhoenixEvent: TypeAlias = (
    JoinOk
    | JoinFailed
    | LeaveOk
    | LeaveFailed
    | ChannelMessage
    | HeartbeatAck
    | ChannelClosed
    | ChannelErrored
)


class TopicState(enum.Enum):
    """Where a registered topic stands on the current connection."""

    JOINING = "joining"
    """``phx_join`` sent; only its reply is consumed, pushes are dropped."""
    JOINED = "joined"
    """Join confirmed; pushes carrying the current ``join_ref`` are delivered."""
    LEAVING = "leaving"
    """``phx_leave`` sent; waiting for its reply."""
    NEEDS_REJOIN = "needs_rejoin"
    """Still wanted, but not joined on this connection (new socket or ``phx_error``)."""


@attrs.define
class _Topic:
    state: TopicState
    join_ref: str | None


# --------------------------------------------------------------------------- protocol


class PhoenixProtocol:
    """Client side of Phoenix Channels v2 for one logical session (many sockets).

    One ref counter serves joins, leaves and heartbeats and is never reset, not
    even by :meth:`reset_connection`, so a rejoin after a reconnect gets a ref no
    earlier frame used.

    Args:
        heartbeat_interval: seconds between heartbeats (first one one interval
            after the socket opens).
        dead_after: seconds without a heartbeat acknowledgement (counted from
            the socket opening or the last ack) after which the connection is dead.
        heartbeat_timeout: seconds a heartbeat may go unanswered before the
            connection is dead (None: only ``dead_after`` applies). Shorter
            than the interval, it notices a silent socket within
            ``heartbeat_interval + heartbeat_timeout`` of its last answer.
    """

    def __init__(
        self,
        *,
        heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL,
        dead_after: float = DEFAULT_DEAD_AFTER,
        heartbeat_timeout: float | None = None,
    ) -> None:
        if heartbeat_interval <= 0 or dead_after <= 0:
            raise LocalProtocolError("heartbeat_interval and dead_after must be positive")
        if heartbeat_timeout is not None and not heartbeat_timeout > 0:
            raise LocalProtocolError("heartbeat_timeout must be positive")
        self.heartbeat_interval = heartbeat_interval
        self.dead_after = dead_after
        self.heartbeat_timeout = heartbeat_timeout
        self._last_ref = 0
        self._topics: dict[str, _Topic] = {}
        self._connected = False
        self._next_heartbeat = 0.0
        self._last_ack = 0.0
        # Outstanding heartbeat refs -> when each was sent.
        self._pending_heartbeats: dict[str, float] = {}

    # ------------------------------------------------------------ introspection

    @property
    def connected(self) -> bool:
        """True after :meth:`reset_connection` (until :meth:`connection_lost`)."""
        return self._connected

    @property
    def last_ref(self) -> int:
        """The last ref handed out (0 before the first)."""
        return self._last_ref

    def state(self, topic: str) -> TopicState | None:
        """The topic's state, or ``None`` when it is not registered."""
        entry = self._topics.get(topic)
        return entry.state if entry is not None else None

    def join_ref(self, topic: str) -> str | None:
        """The topic's current ``join_ref`` (``None`` when not joined on this connection)."""
        entry = self._topics.get(topic)
        return entry.join_ref if entry is not None else None

    def topics(self) -> dict[str, TopicState]:
        """A snapshot of every registered topic and its state."""
        return {topic: entry.state for topic, entry in self._topics.items()}

    def topics_needing_rejoin(self) -> list[str]:
        """Registered topics in :attr:`TopicState.NEEDS_REJOIN`, in registration order."""
        return [t for t, e in self._topics.items() if e.state is TopicState.NEEDS_REJOIN]

    # ------------------------------------------------------------ connection

    def reset_connection(self, now: float) -> list[str]:
        """A new socket is open: restart heartbeat timing and demand rejoins.

        Every joined or joining topic goes to :attr:`TopicState.NEEDS_REJOIN`
        (its old ``join_ref`` is forgotten, so frames of the old channel instance
        are dropped); a topic that was being left is unregistered (a leave
        completes locally when its socket is gone). The ref counter is kept.

        Returns:
            The topics that need a rejoin, in registration order.
        """
        for topic in [t for t, e in self._topics.items() if e.state is TopicState.LEAVING]:
            del self._topics[topic]
        for entry in self._topics.values():
            entry.state = TopicState.NEEDS_REJOIN
            entry.join_ref = None
        self._connected = True
        self._pending_heartbeats.clear()
        self._next_heartbeat = now + self.heartbeat_interval
        self._last_ack = now
        return self.topics_needing_rejoin()

    def connection_lost(self) -> None:
        """The socket is gone; nothing may be sent until :meth:`reset_connection`."""
        self._connected = False

    def abandon_join(self, topic: str, join_ref: str) -> None:
        """Give up waiting for the reply to join ``join_ref`` (a timeout).

        The topic goes back to :attr:`TopicState.NEEDS_REJOIN`, so a late reply
        is dropped and a later :meth:`send_join` uses a fresh ``join_ref``.
        Nothing happens if the topic has moved on (another join, a leave).
        """
        entry = self._topics.get(topic)
        if entry is not None and entry.state is TopicState.JOINING and entry.join_ref == join_ref:
            entry.state = TopicState.NEEDS_REJOIN
            entry.join_ref = None

    def cancel_join(self, topic: str, join_ref: str) -> str | None:
        """Withdraw join ``join_ref`` whose caller stopped waiting (cancelled).

        If the topic is still joining with that ``join_ref``, it is unregistered
        (a late reply is dropped) and the ``phx_leave`` frame to send is
        returned, so the platform does not keep the channel either. Returns
        None, changing nothing, if the topic has moved on (joined, another
        join, a leave, a reconnect).
        """
        entry = self._topics.get(topic)
        if entry is None or entry.state is not TopicState.JOINING or entry.join_ref != join_ref:
            return None
        del self._topics[topic]
        return _encode(join_ref, self._next_ref(), topic, "phx_leave")

    def forget(self, topic: str) -> None:
        """Unregister a topic locally, whatever its state (for example after a timeout)."""
        self._topics.pop(topic, None)

    # ------------------------------------------------------------ sending

    def _next_ref(self) -> str:
        self._last_ref += 1
        return str(self._last_ref)

    def _require_connection(self) -> None:
        if not self._connected:
            raise LocalProtocolError("no connection: call reset_connection() first")

    def send_join(self, topic: str) -> tuple[str, str]:
        """Start joining ``topic`` (or rejoin it after a reconnect or ``phx_error``).

        Returns:
            ``(join_ref, frame_text)``; send the frame, then wait for
            :class:`JoinOk` / :class:`JoinFailed` carrying that ``join_ref``.

        Raises:
            LocalProtocolError: no connection, an empty or reserved topic, or the
                topic is already joining, joined or leaving.
        """
        self._require_connection()
        if not topic or topic == HEARTBEAT_TOPIC:
            raise LocalProtocolError(f"cannot join topic {topic!r}")
        entry = self._topics.get(topic)
        if entry is not None and entry.state is not TopicState.NEEDS_REJOIN:
            raise LocalProtocolError(f"topic {topic!r} is already {entry.state.value}")
        ref = self._next_ref()
        if entry is None:
            self._topics[topic] = _Topic(TopicState.JOINING, ref)
        else:
            entry.state = TopicState.JOINING
            entry.join_ref = ref
        return ref, _encode(ref, ref, topic, "phx_join")

    def send_leave(self, topic: str) -> str | None:
        """Leave ``topic``.

        A joined topic moves to :attr:`TopicState.LEAVING` and the returned frame
        must be sent; the leave completes with :class:`LeaveOk` /
        :class:`LeaveFailed` (or :meth:`forget` on timeout). A topic that is not
        joined on this connection is unregistered at once: a pending join is
        still cancelled on the wire (frame returned), a topic waiting for a
        rejoin needs no frame (``None``). Check :meth:`state` to see which case
        applied.

        Raises:
            LocalProtocolError: the topic is not registered or already leaving.
        """
        entry = self._topics.get(topic)
        if entry is None:
            raise LocalProtocolError(f"topic {topic!r} is not joined")
        if entry.state is TopicState.LEAVING:
            raise LocalProtocolError(f"topic {topic!r} is already leaving")
        if entry.state is TopicState.NEEDS_REJOIN or not self._connected:
            del self._topics[topic]
            return None
        ref = self._next_ref()
        frame = _encode(entry.join_ref, ref, topic, "phx_leave")
        if entry.state is TopicState.JOINING:
            del self._topics[topic]
        else:
            entry.state = TopicState.LEAVING
        return frame

    def heartbeat_due(self, now: float) -> bool:
        """True when a heartbeat should be sent now."""
        return self._connected and now >= self._next_heartbeat

    @property
    def next_heartbeat_at(self) -> float:
        """When the next heartbeat is due."""
        return self._next_heartbeat

    @property
    def dead_at(self) -> float:
        """When the connection counts as dead unless an ack arrives first:
        ``dead_after`` after the last ack, or ``heartbeat_timeout`` after the
        oldest heartbeat still unanswered, whichever comes first."""
        dead_at = self._last_ack + self.dead_after
        if self.heartbeat_timeout is not None and self._pending_heartbeats:
            oldest = min(self._pending_heartbeats.values())
            dead_at = min(dead_at, oldest + self.heartbeat_timeout)
        return dead_at

    def is_dead(self, now: float) -> bool:
        """True when ``dead_after`` seconds passed since the socket opened or the last ack."""
        return self._connected and now >= self.dead_at

    def extend_deadline(self, seconds: float) -> None:
        """Push the dead deadline back by ``seconds``.

        For time during which the caller could not read the socket through no
        fault of the peer (for example while its consumer applied back-pressure):
        acks that may be waiting unread must not count as missing.
        """
        if seconds > 0:
            self._last_ack += seconds
            self._pending_heartbeats = {
                ref: sent + seconds for ref, sent in self._pending_heartbeats.items()
            }

    def send_heartbeat(self, now: float) -> tuple[str, str]:
        """Emit a heartbeat and schedule the next one ``heartbeat_interval`` later.

        An earlier heartbeat that is still unanswered stays acceptable: an ack for
        any outstanding heartbeat proves the connection alive.

        Returns:
            ``(ref, frame_text)``.

        Raises:
            LocalProtocolError: no connection.
        """
        self._require_connection()
        ref = self._next_ref()
        self._pending_heartbeats[ref] = now
        self._next_heartbeat = now + self.heartbeat_interval
        return ref, _encode(None, ref, HEARTBEAT_TOPIC, "heartbeat")

    # ------------------------------------------------------------ receiving

    def receive_frame(self, text: str | bytes, now: float) -> list[PhoenixEvent]:
        """Feed one received message; return what it means (often nothing).

        Frames for unregistered topics, frames whose ``join_ref`` is not the
        topic's current one (stale or ``null``), pushes before a join reply and
        replies nobody waits for are dropped silently, (protocol, "Phoenix Channels v2 framing").

        Args:
            text: the WebSocket message.
            now: the current time (a heartbeat ack pushes the dead deadline back).

        Raises:
            FrameError: the message is not a valid v2 frame; nothing changed
                (the frame can be skipped).
        """
        return list(self._route(decode_frame(text), now))

    def receive(self, frame: Frame, now: float) -> list[PhoenixEvent]:
        """Like :meth:`receive_frame` for an already decoded :class:`Frame`."""
        return list(self._route(frame, now))

    def _route(self, frame: Frame, now: float) -> Iterator[PhoenixEvent]:
        topic = frame.topic
        if topic == HEARTBEAT_TOPIC:
            # Only the ref is matched (the event and status are not checked).
            if frame.ref is not None and frame.ref in self._pending_heartbeats:
                # An ack also answers every earlier heartbeat still outstanding.
                acked = int(frame.ref)
                self._pending_heartbeats = {
                    r: sent for r, sent in self._pending_heartbeats.items() if int(r) > acked
                }
                self._last_ack = max(self._last_ack, now)
                yield HeartbeatAck(frame.ref)
            return
        entry = self._topics.get(topic)
        if entry is None or entry.join_ref is None or frame.join_ref != entry.join_ref:
            return
        event = frame.event
        state = entry.state
        if state is TopicState.JOINING:
            if event != "phx_reply":
                return
            status, response = _reply(frame.payload)
            if status == "ok":
                entry.state = TopicState.JOINED
                yield JoinOk(topic, entry.join_ref, response)
            else:
                del self._topics[topic]
                yield JoinFailed(topic, entry.join_ref, _reason(response))
            return
        if event == "phx_reply":
            if state is TopicState.LEAVING:
                del self._topics[topic]
                status, response = _reply(frame.payload)
                if status == "ok":
                    yield LeaveOk(topic)
                else:
                    yield LeaveFailed(topic, _reason(response, "leave refused"))
            return
        if event == "phx_close":
            del self._topics[topic]
            yield LeaveOk(topic) if state is TopicState.LEAVING else ChannelClosed(topic)
            return
        if event == "phx_error":
            if state is TopicState.LEAVING:
                del self._topics[topic]
                yield LeaveFailed(topic, "channel errored")
                return
            entry.state = TopicState.NEEDS_REJOIN
            entry.join_ref = None
            yield ChannelErrored(topic)
            return
        yield ChannelMessage(topic, event, frame.payload)


def _reply(payload: Mapping[str, Any]) -> tuple[Any, Mapping[str, Any]]:
    response = payload.get("response")
    return payload.get("status"), response if isinstance(response, Mapping) else {}


def _reason(response: Mapping[str, Any], default: str = DEFAULT_JOIN_ERROR_REASON) -> str:
    reason = response.get("reason")
    return reason if isinstance(reason, str) and reason else default
