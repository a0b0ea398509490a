"""``BandLink``: the Trio shell of the agent's WebSocket to Band, on trio-websocket.

The protocol decisions are made by the sans-io pieces it drives (see
:mod:`band_trio.wire.link`); this module owns the socket, the session's
tasks (reader, heartbeat, forwarder, channel recovery) and the waits.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Final, NoReturn, cast

import attrs
import trio
import trio_websocket

from band_trio._logging import get_logger
from band_trio.errors import (
    AgentAlreadyRunningError,
    BandConfigError,
    BandConnectionError,
    BandTimeoutError,
    FrameError,
    InvalidEventError,
    JoinError,
    SupersededError,
    UpgradeRefusedError,
)
from band_trio.wire._key_guard import refuse_plaintext_key
from band_trio.wire._tls import client_tls_context
from band_trio.wire.backoff import RetryDecision
from band_trio.wire.events import Supersede, decode_event
from band_trio.wire.link._link_config import LinkConfig
from band_trio.wire.link._link_records import (
    EventRejected,
    LinkEvent,
    LinkReconnected,
    LinkStatistics,
    TopicLost,
)
from band_trio.wire.link._socket_support import (
    MalformedWindow,
    ShieldedStarter,
    SocketEnd,
    SocketGone,
    one_error,
)
from band_trio.wire.link._upgrade import (
    UpgradeTarget,
    build_ws_url,
    upgrade_refusal,
    upgrade_target,
)
from band_trio.wire.phoenix import (
    ChannelClosed,
    ChannelErrored,
    ChannelMessage,
    HeartbeatAck,
    JoinFailed,
    JoinOk,
    LeaveFailed,
    LeaveOk,
    PhoenixEvent,
    PhoenixProtocol,
    TopicState,
)

__all__ = ["BandLink"]

# The logger keeps the name of the public module.
logger = get_logger("band_trio.wire.link")

DEAD_CLOSE_CODE: Final = 4000
DEAD_CLOSE_REASON: Final = "Heartbeat dead-threshold exceeded"
MALFORMED_CLOSE_CODE: Final = 1002
_ON_CONFLICT_VALUES: Final = frozenset({"supersede", "reject"})
_REJOIN_WINDOW: Final = 32
"""Rejoins in flight at once after a reconnect (each waits for its own reply)."""


@attrs.define
class _Waiter:
    join_ref: str | None
    done: trio.Event = attrs.field(factory=trio.Event)
    result: PhoenixEvent | None = None


class BandLink:
    """The agent's WebSocket connection to Band (Phoenix Channels v2).

    Args:
        agent_id: the agent's id (sent as the ``agent_id`` query parameter).
        api_key: the agent's API key (sent only in the ``x-api-key`` header).
        ws_url: the platform's WebSocket URL.
        config: timeouts, limits and backoff policies.
        on_conflict: ``"reject"`` refuses to take over a live connection of the
            same agent on the first connect (HTTP 409 becomes
            :class:`~band_trio.errors.AgentAlreadyRunningError`); ``None`` or
            ``"supersede"`` (the platform default) sends nothing.

    Raises:
        BandConfigError: an empty id or key, a bad URL or ``on_conflict``
            value, or a ``ws://`` URL to another machine without
            ``config.allow_insecure_transport``.
    """

    def __init__(
        self,
        *,
        agent_id: str,
        api_key: str,
        ws_url: str,
        config: LinkConfig | None = None,
        on_conflict: str | None = None,
    ) -> None:
        if not isinstance(agent_id, str) or not agent_id:
            raise BandConfigError("agent_id must be a non-empty string")
        if not isinstance(api_key, str) or not api_key:
            raise BandConfigError("api_key must be a non-empty string")
        if on_conflict is not None and on_conflict not in _ON_CONFLICT_VALUES:
            raise BandConfigError("on_conflict must be 'supersede', 'reject' or None")
        self.agent_id = agent_id
        self.config = config if config is not None else LinkConfig()
        self.on_conflict = on_conflict
        self._api_key = api_key
        self._url_first = build_ws_url(ws_url, agent_id, on_conflict_reject=on_conflict == "reject")
        self._url_again = build_ws_url(ws_url, agent_id)
        target = upgrade_target(self._url_again)
        refuse_plaintext_key(
            "wss" if target.use_ssl else "ws",
            target.host,
            allowed=self.config.allow_insecure_transport,
            setting="LinkConfig.allow_insecure_transport",
        )
        self._tls_context = (
            client_tls_context(self.config.tls_verify, where=f"wss://{target.host}:{target.port}")
            if target.use_ssl
            else None
        )
        self._proto = PhoenixProtocol(
            heartbeat_interval=self.config.heartbeat_interval,
            dead_after=self.config.dead_after,
            heartbeat_timeout=self.config.heartbeat_timeout,
        )
        self._serving = False
        self._ws: trio_websocket.WebSocketConnection | None = None
        self._disconnected_since: float | None = None
        self._session_nursery: trio.Nursery | None = None
        self._out: trio.MemorySendChannel[LinkEvent] | None = None
        self._events: trio.MemorySendChannel[LinkEvent] | None = None
        self._backlog = 0
        self._join_waiters: dict[str, _Waiter] = {}
        self._leave_waiters: dict[str, _Waiter] = {}
        self._stalled = False
        self._started = False
        self._forced: tuple[int, str, bool] | None = None
        self._reconnect_floor = 0.0
        self._frames_in = 0
        self._frames_out = 0
        self._malformed = 0
        self._malformed_closes = 0
        self._oversize = 0
        self._delivered = 0
        self._rejected = 0
        self._stalls = 0
        self._heartbeats = 0
        self._acks = 0
        self._dead = 0
        self._reconnects = 0
        self._connect_failures = 0

    def __repr__(self) -> str:
        return f"BandLink(agent_id={self.agent_id!r}, url={self._url_again!r})"

    @property
    def control_topic(self) -> str:
        """``agent_control:<agent_id>`` (joined at start-up; mandatory)."""
        return f"agent_control:{self.agent_id}"

    @property
    def rooms_topic(self) -> str:
        """``agent_rooms:<agent_id>``."""
        return f"agent_rooms:{self.agent_id}"

    def url(self, *, first: bool = True) -> str:
        """The upgrade URL of the first connect (``first=True``) or of reconnects."""
        return self._url_first if first else self._url_again

    def statistics(self) -> LinkStatistics:
        """A frozen snapshot of the link's counters."""
        buffered = 0
        if self._out is not None:
            buffered = self._out.statistics().current_buffer_used
        return LinkStatistics(
            connected=self._ws is not None,
            joined_topics=tuple(
                t for t, s in self._proto.topics().items() if s is TopicState.JOINED
            ),
            frames_in=self._frames_in,
            frames_out=self._frames_out,
            malformed_frames=self._malformed,
            oversize_frames=self._oversize,
            events_delivered=self._delivered,
            events_rejected=self._rejected,
            events_buffered=buffered,
            consumer_stalls=self._stalls,
            heartbeats_sent=self._heartbeats,
            heartbeat_acks=self._acks,
            dead_connections=self._dead,
            reconnects=self._reconnects,
            connect_failures=self._connect_failures,
            malformed_closes=self._malformed_closes,
            disconnected_since=self._disconnected_since,
        )

    # ------------------------------------------------------------------ serve

    async def serve(
        self,
        events: trio.MemorySendChannel[LinkEvent],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Connect, join the agent topics, then keep the link alive until cancelled.

        Calls ``task_status.started()`` once connected with
        ``agent_control:<id>`` joined (and ``agent_rooms:<id>`` attempted).
        Afterwards dropped sockets are replaced with the backoff of
        the reconnect policy (:mod:`band_trio.wire.backoff`), every registered topic is rejoined with a fresh
        ``join_ref`` and :class:`LinkReconnected` is sent on ``events``.

        Args:
            events: where decoded events go, in arrival order; the link waits
                for room (never dropping anything) but keeps heartbeating.

        Raises:
            SupersededError: a newer connection took over (``retryable=False``).
            AgentAlreadyRunningError: ``on_conflict="reject"`` and the agent is
                already connected (HTTP 409 on the first connect).
            UpgradeRefusedError: the platform refused the upgrade terminally
                (400/403/409 on the first connect, 403 later) or the backoff
                policy gave up.
            JoinError: ``agent_control:<id>`` could not be joined at start-up.
            BandConnectionError: the platform stayed unreachable until the
                policy gave up, or closed with 1008.
            BandConfigError: ``serve`` is already running.
            trio.BrokenResourceError: the caller closed the receiving end of
                ``events`` (the link cannot deliver, so it stops).

        Cancellation:
            Cancelling ``serve`` closes the socket with code 1000 (the closing
            handshake is shielded, bounded by ``close_timeout``).
        """
        if self._serving:
            raise BandConfigError("this BandLink is already serving")
        self._serving = True
        self._started = False
        self._proto = PhoenixProtocol(
            heartbeat_interval=self.config.heartbeat_interval,
            dead_after=self.config.dead_after,
            heartbeat_timeout=self.config.heartbeat_timeout,
        )
        send, receive = trio.open_memory_channel[LinkEvent](self.config.event_buffer_size)
        self._out = send
        self._events = events
        self._backlog = 0
        try:
            with one_error():
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._forward, receive, events)
                    await self._connection_loop(task_status)
        finally:
            self._serving = False
            self._out = None
            self._events = None
            send.close()

    async def _forward(
        self,
        receive: trio.MemoryReceiveChannel[LinkEvent],
        events: trio.MemorySendChannel[LinkEvent],
    ) -> None:
        async with receive:
            async for item in receive:
                await events.send(item)
                self._backlog -= 1
                self._delivered += 1

    async def _connection_loop(self, task_status: trio.TaskStatus[None]) -> NoReturn:
        first_policy = self.config.first_connect_policy()
        again_policy = self.config.reconnect_policy()
        while True:
            decision: RetryDecision
            error: BaseException
            started = self._started
            try:
                end = await self._run_socket(first=not started, task_status=task_status)
            except SupersededError:
                raise
            except UpgradeRefusedError as err:
                self._connect_failures += 1
                now = trio.current_time()
                if not started and err.status_code == 409 and self.on_conflict == "reject":
                    raise AgentAlreadyRunningError(
                        "another connection for this agent is active "
                        "(on_conflict=reject; HTTP 409 connection_conflict)"
                    ) from err
                if not err.retryable:
                    raise
                if started:
                    decision = again_policy.connect_failed(
                        now, status=err.status_code, retry_after=err.retry_after
                    )
                else:
                    decision = first_policy.failure(
                        now, status=err.status_code, retry_after=err.retry_after
                    )
                error = err
            except BandConnectionError as err:
                self._connect_failures += 1
                now = trio.current_time()
                if started:
                    decision = again_policy.connect_failed(now)
                else:
                    decision = first_policy.failure(now)
                error = err
            else:
                now = trio.current_time()
                code = end.code
                if not self._started:
                    # Dropped before start-up completed: still the first connect.
                    decision = first_policy.failure(now, uptime=end.uptime)
                    error = BandConnectionError("connection lost during start-up")
                elif end.alive:
                    # We closed a connection the platform kept talking on: not
                    # a sign of a flapping platform, so no hold-down.
                    decision = again_policy.closed_locally(now, uptime=end.uptime)
                    error = BandConnectionError(f"connection closed by the client (code {code})")
                else:
                    decision = again_policy.connection_lost(now, uptime=end.uptime, close_code=code)
                    error = BandConnectionError(f"connection closed (code {code})")
                    if decision.give_up and decision.reason.startswith("close_"):
                        error.retryable = False
            if decision.give_up:
                logger.error("WebSocket link giving up: %s", decision.reason)
                raise error
            delay = max(decision.delay, self._reconnect_floor)
            self._reconnect_floor = 0.0
            logger.info("WebSocket reconnect in %.2f s (%s)", delay, type(error).__name__)
            await trio.sleep(delay)

    async def _run_socket(self, *, first: bool, task_status: trio.TaskStatus[None]) -> SocketEnd:
        """One socket's life, until it ends."""
        target = upgrade_target(self._url_first if first else self._url_again)
        headers = [(b"x-api-key", self._api_key.encode("utf-8"))]
        opened_at = trio.current_time()
        try:
            with one_error():
                async with trio.open_nursery() as conn_nursery:
                    starter = ShieldedStarter(conn_nursery)
                    ws: trio_websocket.WebSocketConnection | None = None
                    try:
                        ws = await self._handshake(starter, target, headers)
                        opened_at = trio.current_time()
                        try:
                            await self._session(ws, task_status=task_status)
                        except SocketGone as gone:
                            uptime = trio.current_time() - opened_at
                            return SocketEnd(uptime, gone.code, gone.alive)
                        raise AssertionError("a session ends only when its socket does")
                    finally:
                        self._end_session()
                        with trio.CancelScope(shield=True):
                            if ws is not None:
                                with trio.move_on_after(self.config.close_timeout):
                                    await ws.aclose(1000)
                            # trio-websocket leaves the TCP stream open after a
                            # refused upgrade or an oversized message: close it.
                            for connection in starter.connections:
                                stream = getattr(connection, "_stream", None)
                                if stream is not None:
                                    await trio.aclose_forcefully(stream)
                        starter.cancel()
        except trio_websocket.ConnectionRejected as exc:
            # Raised by trio-websocket's reader task, hence outside the handshake call.
            raise upgrade_refusal(exc, first=first) from None

    async def _handshake(
        self,
        starter: ShieldedStarter,
        target: UpgradeTarget,
        headers: list[tuple[bytes, bytes]],
    ) -> trio_websocket.WebSocketConnection:
        where = f"{target.host}:{target.port}"
        try:
            with trio.fail_after(self.config.connect_timeout):
                return await trio_websocket.connect_websocket(
                    cast(trio.Nursery, starter),
                    target.host,
                    target.port,
                    target.resource,
                    use_ssl=self._tls_context or target.use_ssl,
                    extra_headers=headers,
                    max_message_size=self.config.max_message_size,
                    receive_buffer_size=self.config.receive_buffer_size,
                )
        except trio.TooSlowError:
            raise BandTimeoutError(f"WebSocket handshake with {where} timed out") from None
        except OSError as exc:
            raise BandConnectionError(
                f"could not connect to {where}: {type(exc).__name__}"
            ) from None
        except trio_websocket.ConnectionRejected:
            raise
        except trio_websocket.HandshakeError as exc:
            raise BandConnectionError(
                f"WebSocket handshake with {where} failed: {type(exc).__name__}"
            ) from None

    async def _session(
        self,
        ws: trio_websocket.WebSocketConnection,
        *,
        task_status: trio.TaskStatus[None],
    ) -> None:
        now = trio.current_time()
        rejoin = self._proto.reset_connection(now)
        self._ws = ws
        self._disconnected_since = None
        self._forced = None
        with one_error():
            async with trio.open_nursery() as nursery:
                await self._session_body(ws, nursery, rejoin, task_status)

    async def _session_body(
        self,
        ws: trio_websocket.WebSocketConnection,
        nursery: trio.Nursery,
        rejoin: list[str],
        task_status: trio.TaskStatus[None],
    ) -> NoReturn:
        self._session_nursery = nursery
        nursery.start_soon(self._reader, ws)
        nursery.start_soon(self._heartbeat, ws)
        if not self._started:
            await self._start_up(ws, task_status)
        else:
            rejoined, lost = await self._rejoin(ws, nursery, rejoin)
            self._reconnects += 1
            logger.info("WebSocket reconnected; %d topic(s) rejoined", len(rejoined))
            await self._deliver(LinkReconnected(self._reconnects, tuple(rejoined), tuple(lost)))
        await trio.sleep_forever()

    async def _rejoin(
        self, ws: trio_websocket.WebSocketConnection, nursery: trio.Nursery, topics: list[str]
    ) -> tuple[list[str], list[str]]:
        """Rejoin ``topics`` on a new socket; return those rejoined and those refused.

        Up to ``_REJOIN_WINDOW`` joins are in flight at once: one at a time,
        an agent in thousands of rooms would wait for thousands of round
        trips (and pay the event loop's cost of each wait) before its rooms
        hear pushes again. Both lists keep the order of ``topics``.
        """
        results: list[JoinOk | JoinFailed | None] = [None] * len(topics)
        pending = iter(enumerate(topics))

        async def worker() -> None:
            for index, topic in pending:
                if self._proto.state(topic) is not TopicState.NEEDS_REJOIN:
                    continue
                result = await self._join_once(ws, topic)
                results[index] = result
                if result is None:
                    # Timed out: keep trying on this socket in the background.
                    nursery.start_soon(self._recover, ws, topic)

        async with trio.open_nursery() as workers:
            for _ in range(min(_REJOIN_WINDOW, len(topics))):
                workers.start_soon(worker)
        rejoined = [t for t, r in zip(topics, results, strict=True) if isinstance(r, JoinOk)]
        lost = [t for t, r in zip(topics, results, strict=True) if isinstance(r, JoinFailed)]
        return rejoined, lost

    async def _start_up(
        self, ws: trio_websocket.WebSocketConnection, task_status: trio.TaskStatus[None]
    ) -> None:
        result = await self._join_once(ws, self.control_topic)
        if not isinstance(result, JoinOk):
            reason = result.reason if isinstance(result, JoinFailed) else "timeout"
            raise JoinError(
                self.control_topic, reason, retryable=not isinstance(result, JoinFailed)
            )
        if self.config.join_agent_rooms:
            result = await self._join_once(ws, self.rooms_topic)
            if isinstance(result, JoinFailed):
                logger.warning("could not join %s: %s", self.rooms_topic, result.reason)
            elif result is None and self._session_nursery is not None:
                logger.warning("joining %s timed out; retrying in the background", self.rooms_topic)
                self._session_nursery.start_soon(self._recover, ws, self.rooms_topic)
        self._started = True
        task_status.started()

    def _end_session(self) -> None:
        self._ws = None
        self._disconnected_since = trio.current_time()
        self._session_nursery = None
        self._proto.connection_lost()
        for waiters in (self._join_waiters, self._leave_waiters):
            for waiter in waiters.values():
                waiter.done.set()
            waiters.clear()

    # ------------------------------------------------------------------ tasks

    async def _send(self, ws: trio_websocket.WebSocketConnection, text: str) -> None:
        await ws.send_message(text)
        self._frames_out += 1

    async def _force_close(
        self, ws: trio_websocket.WebSocketConnection, code: int, why: str, *, alive: bool = False
    ) -> NoReturn:
        self._forced = (code, why, alive)
        with trio.move_on_after(self.config.close_timeout):
            await ws.aclose(code, why)
        raise SocketGone(code, why, alive=alive)

    async def _heartbeat(self, ws: trio_websocket.WebSocketConnection) -> NoReturn:
        proto = self._proto
        while True:
            now = trio.current_time()
            if not self._stalled and proto.is_dead(now):
                self._dead += 1
                logger.warning(
                    "no heartbeat ack in time (timeout %s s, dead after %.0f s); reconnecting",
                    proto.heartbeat_timeout,
                    proto.dead_after,
                )
                await self._force_close(ws, DEAD_CLOSE_CODE, DEAD_CLOSE_REASON)
            if proto.heartbeat_due(now):
                _, frame = proto.send_heartbeat(now)
                try:
                    # A send that cannot complete for that long means a dead peer.
                    with trio.fail_after(proto.dead_after):
                        await self._send(ws, frame)
                except trio_websocket.ConnectionClosed:
                    raise SocketGone(None, "closed while sending a heartbeat") from None
                except trio.TooSlowError:
                    self._dead += 1
                    logger.warning("heartbeat could not be sent; reconnecting")
                    await self._force_close(ws, DEAD_CLOSE_CODE, DEAD_CLOSE_REASON)
                self._heartbeats += 1
            wake = proto.next_heartbeat_at
            if self._stalled:
                # While the consumer blocks the reader, re-check every second.
                wake = min(wake, trio.current_time() + 1.0)
            else:
                wake = min(wake, proto.dead_at)
            await trio.sleep_until(wake)

    async def _reader(self, ws: trio_websocket.WebSocketConnection) -> NoReturn:
        proto = self._proto
        garbage = MalformedWindow(
            self.config.malformed_frame_limit, self.config.malformed_frame_window
        )
        while True:
            try:
                message = await ws.get_message()
            except trio_websocket.ConnectionClosed as exc:
                if self._forced is not None:
                    forced_code, why, alive = self._forced
                    raise SocketGone(forced_code, why, alive=alive) from None
                code = exc.reason.code if exc.reason is not None else None
                if code == 1009:
                    self._oversize += 1
                    logger.warning(
                        "refused an incoming frame above %d bytes", self.config.max_message_size
                    )
                raise SocketGone(code, "socket closed") from None
            self._frames_in += 1
            now = trio.current_time()
            try:
                happened = proto.receive_frame(message, now)
            except FrameError as exc:
                # One bad frame costs that frame, not the connection: the
                # state of every channel is unchanged by it. Only a burst
                # means the stream is beyond repair.
                self._malformed += 1
                if garbage.note(now):
                    self._malformed_closes += 1
                    logger.warning(
                        "%d malformed frames within %.0f s (last: %s); reconnecting",
                        self.config.malformed_frame_limit,
                        self.config.malformed_frame_window,
                        exc,
                    )
                    await self._force_close(
                        ws, MALFORMED_CLOSE_CODE, "malformed frames", alive=True
                    )
                logger.warning("skipped a malformed frame (%s)", exc)
                continue
            for item in happened:
                await self._handle(ws, item)

    async def _handle(self, ws: trio_websocket.WebSocketConnection, item: PhoenixEvent) -> None:
        if isinstance(item, ChannelMessage):
            await self._on_push(item)
        elif isinstance(item, HeartbeatAck):
            self._acks += 1
        elif isinstance(item, JoinOk | JoinFailed):
            waiter = self._join_waiters.get(item.topic)
            if waiter is not None and waiter.join_ref == item.join_ref:
                waiter.result = item
                waiter.done.set()
        elif isinstance(item, LeaveOk | LeaveFailed):
            waiter = self._leave_waiters.get(item.topic)
            if waiter is not None:
                waiter.result = item
                waiter.done.set()
        elif isinstance(item, ChannelClosed):
            logger.warning("the platform closed channel %s", item.topic)
            await self._deliver(TopicLost(item.topic, "closed by the platform"))
        elif isinstance(item, ChannelErrored):
            logger.warning("channel %s crashed; rejoining", item.topic)
            if self._session_nursery is not None:
                self._session_nursery.start_soon(self._recover, ws, item.topic)

    async def _on_push(self, item: ChannelMessage) -> None:
        try:
            event = decode_event(item.topic, item.event, item.payload)
        except InvalidEventError as err:
            self._rejected += 1
            logger.warning("rejected %r event on %s: %s", err.event, err.topic, err.reason)
            await self._deliver(EventRejected(err.topic, err.event, err.reason))
            return
        if isinstance(event, Supersede):
            if not event.retryable:
                raise SupersededError(
                    reason=event.reason,
                    message=event.message,
                    retryable=False,
                    retry_after=event.retry_after,
                    correlation_id=event.correlation_id,
                )
            # Retryable: normal reconnection follows; honour the suggested wait.
            if event.retry_after is not None:
                self._reconnect_floor = float(event.retry_after)
        await self._deliver(event)

    async def _deliver(self, item: LinkEvent) -> None:
        out, events = self._out, self._events
        assert out is not None
        assert events is not None
        if self._backlog == 0:
            # Nothing queued ahead of it: hand it straight to the caller.
            try:
                events.send_nowait(item)
            except trio.WouldBlock:
                pass
            else:
                # No checkpoint needed here: the reader's next receive is one.
                self._delivered += 1
                return
        self._backlog += 1
        try:
            out.send_nowait(item)
        except trio.WouldBlock:
            # The consumer is behind: wait (never drop), and do not count the
            # wait against the heartbeat deadline since acks may be queued unread.
            self._stalls += 1
            self._stalled = True
            started = trio.current_time()
            try:
                await out.send(item)
            finally:
                self._stalled = False
                self._proto.extend_deadline(trio.current_time() - started)

    async def _join_once(
        self, ws: trio_websocket.WebSocketConnection, topic: str, *, withdraw: bool = False
    ) -> JoinOk | JoinFailed | None:
        """Send one join and wait for its reply; ``None`` on timeout or a lost socket.

        With ``withdraw``, a caller cancelled before the reply takes the join
        back (see :meth:`_withdraw_join`); otherwise the topic is left for a
        rejoin, as after a timeout.
        """
        join_ref, frame = self._proto.send_join(topic)
        waiter = _Waiter(join_ref)
        self._join_waiters[topic] = waiter
        try:
            await self._send(ws, frame)
            with trio.move_on_after(self.config.join_timeout):
                await waiter.done.wait()
        except trio_websocket.ConnectionClosed:
            pass
        except BaseException:
            if withdraw:
                await self._withdraw_join(ws, topic, join_ref)
            else:
                self._proto.abandon_join(topic, join_ref)
            waiter.done.set()  # a caller sharing this join stops waiting (no result)
            raise
        finally:
            if self._join_waiters.get(topic) is waiter:
                del self._join_waiters[topic]
        result = waiter.result
        if isinstance(result, JoinOk | JoinFailed):
            return result
        # Timed out or the socket went: a late reply must not count any more.
        self._proto.abandon_join(topic, join_ref)
        return None

    async def _withdraw_join(
        self, ws: trio_websocket.WebSocketConnection, topic: str, join_ref: str
    ) -> None:
        """The caller of :meth:`join` is gone before the reply (a room removed
        while joining): the topic is unregistered at once, so it is neither
        joined by a late reply nor left "joining" for the next caller, and a
        ``phx_leave`` tells the platform (best effort, bounded)."""
        frame = self._proto.cancel_join(topic, join_ref)
        if frame is None:
            return
        with (
            trio.CancelScope(shield=True),
            trio.move_on_after(self.config.leave_timeout),
            suppress(trio_websocket.ConnectionClosed, trio.BrokenResourceError, OSError),
        ):
            await self._send(ws, frame)

    async def _recover(self, ws: trio_websocket.WebSocketConnection, topic: str) -> None:
        """Rejoin a crashed or timed-out channel on the same socket.

        A ``phx_error`` means the channel process on the server died while the
        socket lives on: the channel is joined again with exponential backoff
        (0.5 s doubling up to 30 s, with jitter), as the Phoenix client does.
        """
        attempt = 0
        while True:
            d = min(30.0, 0.5 * 2**attempt)
            await trio.sleep(d * (0.5 + 0.5 * self.config.random()))
            if self._proto.state(topic) is not TopicState.NEEDS_REJOIN:
                return  # left, lost, or already being joined by someone else
            result = await self._join_once(ws, topic)
            if isinstance(result, JoinOk):
                return
            if isinstance(result, JoinFailed):
                await self._deliver(TopicLost(topic, f"rejoin refused: {result.reason}"))
                return
            attempt += 1

    # ------------------------------------------------------------------ join / leave

    async def join(self, topic: str) -> None:
        """Join ``topic`` on the current socket (and rejoin it after reconnects).

        Returns at once if the topic is already joined; concurrent joins of one
        topic share a single ``phx_join``.

        Raises:
            JoinError: the platform refused (``retryable=False``), or the reply
                did not come within ``join_timeout``, or the link is not
                connected (``retryable=True``). The topic is then not registered.
        """
        await trio.lowlevel.checkpoint()
        ws = self._ws
        if ws is None:
            raise JoinError(topic, "not connected", retryable=True)
        state = self._proto.state(topic)
        if state is TopicState.JOINED:
            return
        if state is TopicState.LEAVING:
            raise JoinError(topic, "a leave is in progress", retryable=True)
        pending = self._join_waiters.get(topic)
        if pending is not None:
            with trio.move_on_after(self.config.join_timeout):
                await pending.done.wait()
            if isinstance(pending.result, JoinOk):
                return
            if isinstance(pending.result, JoinFailed):
                raise JoinError(topic, pending.result.reason)
            if pending.done.is_set():
                raise JoinError(topic, "the join it shared was cancelled", retryable=True)
            raise JoinError(topic, "timeout", retryable=True)
        result = await self._join_once(ws, topic, withdraw=True)
        if isinstance(result, JoinOk):
            return
        if isinstance(result, JoinFailed):
            raise JoinError(topic, result.reason)
        if self._proto.state(topic) is TopicState.NEEDS_REJOIN:
            # A failed join unregisters the topic (unless a rejoin already took it over).
            self._proto.forget(topic)
        reason = "timeout" if self._ws is ws else "disconnected"
        raise JoinError(topic, reason, retryable=True)

    async def leave(self, topic: str) -> None:
        """Leave ``topic`` (it is no longer rejoined after reconnects).

        Waits up to ``leave_timeout`` for the platform's reply; a missing or
        negative reply is logged, and the topic is forgotten either way. Leaving
        a topic that is not joined does nothing.
        """
        await trio.lowlevel.checkpoint()
        if self._proto.state(topic) is None:
            return
        if self._proto.state(topic) is TopicState.LEAVING:
            waiter = self._leave_waiters.get(topic)
            if waiter is not None:
                with trio.move_on_after(self.config.leave_timeout):
                    await waiter.done.wait()
            return
        ws = self._ws
        frame = self._proto.send_leave(topic)
        if frame is None or ws is None:
            return
        leaving = self._proto.state(topic) is TopicState.LEAVING
        waiter = _Waiter(None)
        if leaving:
            self._leave_waiters[topic] = waiter
        try:
            await self._send(ws, frame)
            if leaving:
                with trio.move_on_after(self.config.leave_timeout):
                    await waiter.done.wait()
        except trio_websocket.ConnectionClosed:
            pass
        finally:
            if self._leave_waiters.get(topic) is waiter:
                del self._leave_waiters[topic]
            if self._proto.state(topic) is TopicState.LEAVING:
                self._proto.forget(topic)
        if isinstance(waiter.result, LeaveFailed):
            logger.info("leave of %s refused: %s", topic, waiter.result.reason)
