"""The settings of a :class:`~band_trio.wire.link.BandLink`."""

from __future__ import annotations

import random as _random
import ssl
from collections.abc import Callable
from typing import Final

import attrs

from band_trio.errors import BandConfigError
from band_trio.wire._tls import check_tls_verify
from band_trio.wire.backoff import FirstConnectPolicy, ReconnectPolicy

__all__ = ["MIB", "LinkConfig"]

MIB: Final = 1024 * 1024


@attrs.frozen
class LinkConfig:
    """Knobs of a :class:`~band_trio.wire.link.BandLink`; the defaults are the
    official client's, except the heartbeat's (see ``heartbeat_timeout``).

    Attributes:
        join_timeout: seconds to wait for a join reply.
        leave_timeout: seconds to wait for a leave reply.
        heartbeat_interval: seconds between Phoenix heartbeats (25; the
            official client's 30).
        heartbeat_timeout: seconds one heartbeat may go unanswered before the
            socket is force-closed (code 4000) and the link reconnects (10).
            With the defaults a socket that goes silent without closing is
            replaced within 35 s of its last answer (the official client
            waits 60 s). None leaves only ``dead_after``.
        dead_after: seconds without any heartbeat ack before the socket is
            force-closed and the link reconnects.
        connect_timeout: seconds for the TCP connect plus the upgrade handshake.
        close_timeout: seconds to wait for the closing handshake.
        max_message_size: largest incoming message accepted (bigger: close 1009).
        malformed_frame_limit: a frame that is not a Phoenix v2 frame (not
            JSON, not a 5-element array, a bad topic, event or ref) is counted,
            logged and skipped; when this many arrive on one socket within
            ``malformed_frame_window`` seconds the socket is closed (1002) and
            the link reconnects. Once the link has started, that reconnect
            is not held down as a flapping platform's would be (see
            :meth:`~band_trio.wire.backoff.ReconnectPolicy.closed_locally`).
            1 closes on the first malformed frame.
        malformed_frame_window: the window of ``malformed_frame_limit``, in seconds.
        receive_buffer_size: bytes read from the socket at a time.
        event_buffer_size: events decoded but not yet taken by the caller.
        join_agent_rooms: also join ``agent_rooms:<agent_id>`` at start-up
            (failure is logged, not fatal).
        first_connect_policy: builds the backoff policy of the first connect.
        reconnect_policy: builds the backoff policy of later reconnects.
        random: jitter source for channel rejoins after ``phx_error``.
        allow_insecure_transport: send the API key over plain ``ws://`` to a
            host that is not this machine (a private network you trust). Off by
            default: the link refuses such a URL, since anyone on the path
            could read the key.
        tls_verify: check the platform's certificate and host name on
            ``wss://`` (``True``, against the system's trust store), with your
            own trust (an :class:`ssl.SSLContext` that verifies; one that does
            not is refused), or not at all (``False``, which logs a warning
            whenever a link is created: anyone on the path could pose as the
            platform).
    """

    join_timeout: float = 10.0
    leave_timeout: float = 5.0
    heartbeat_interval: float = 25.0
    heartbeat_timeout: float | None = 10.0
    dead_after: float = 60.0
    connect_timeout: float = 10.0
    close_timeout: float = 5.0
    max_message_size: int = MIB
    malformed_frame_limit: int = 5
    malformed_frame_window: float = 10.0
    receive_buffer_size: int = 64 * 1024
    event_buffer_size: int = 1000
    join_agent_rooms: bool = True
    first_connect_policy: Callable[[], FirstConnectPolicy] = FirstConnectPolicy
    reconnect_policy: Callable[[], ReconnectPolicy] = ReconnectPolicy
    random: Callable[[], float] = _random.random
    allow_insecure_transport: bool = False
    tls_verify: bool | ssl.SSLContext = True

    def __attrs_post_init__(self) -> None:
        check_tls_verify(self.tls_verify, setting="LinkConfig.tls_verify")
        timeout = self.heartbeat_timeout
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
        ):
            raise BandConfigError("LinkConfig.heartbeat_timeout must be None or positive seconds")
        for name in (
            "join_timeout",
            "leave_timeout",
            "heartbeat_interval",
            "dead_after",
            "connect_timeout",
            "close_timeout",
            "malformed_frame_window",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise BandConfigError(f"LinkConfig.{name} must be a positive number of seconds")
        for name in (
            "max_message_size",
            "receive_buffer_size",
            "event_buffer_size",
            "malformed_frame_limit",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise BandConfigError(f"LinkConfig.{name} must be a positive integer")
