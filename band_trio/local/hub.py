"""The WebSocket side of the local platform: connections, topics, pushes.

:class:`Hub` is the Phoenix Channels v2 *server* logic. It is synchronous: a
connection's frames are handled in :meth:`Hub.handle_frame`, and every frame
for a socket (replies and pushes alike) goes through that socket's bounded
outbound queue, so a join reply is always written before any push on that
topic. The ASGI layer owns the tasks that move the queued frames to the wire.

Memory bound: each socket queues at most ``queue_size`` frames; a socket that
falls that far behind is disconnected (counted as ``slow_consumers``) rather
than slowing the platform down. Frames larger than ``max_frame_bytes`` are
never sent (counted as ``oversize_dropped``); the message stays available
through REST ``/messages/next``.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import socket
from collections.abc import Iterable
from typing import Any

import attrs
import trio

from band_trio.local.model import JSON, AgentRecord, Principal, Push, new_id
from band_trio.local.store import PlatformState

__all__ = ["CloseRequest", "Connection", "Hub", "HubStatistics"]

log = logging.getLogger("band_trio.local")

MAX_FRAME_BYTES = 1024 * 1024 - 1024  # stay safely under the clients' 1 MiB limit


@attrs.frozen
class CloseRequest:
    """Queued after the last frame a socket should get: close it with ``code``."""

    code: int = 1000


OutItem = str | CloseRequest


@attrs.define(eq=False)
class Connection:
    """One live WebSocket.

    Attributes:
        principal: the authenticated user or agent.
        topics: joined topic -> its current ``join_ref``.
        client: the peer's (host, port), when known.
        server: our (host, port), when known.
    """

    id: int
    principal: Principal
    outbox: trio.MemorySendChannel[OutItem]
    inbox: trio.MemoryReceiveChannel[OutItem]
    cancel_scope: trio.CancelScope
    client: tuple[str, int] | None = None
    server: tuple[str, int] | None = None
    topics: dict[str, str | None] = attrs.Factory(dict)
    closed: trio.Event = attrs.Factory(trio.Event)
    open: bool = True

    @property
    def is_agent(self) -> bool:
        """Whether this is an agent connection."""
        return isinstance(self.principal, AgentRecord)


@attrs.frozen
class HubStatistics:
    """Counters of the WebSocket hub (``idle_closes``: sockets closed after
    a minute without a whole frame)."""

    connections: int
    frames_in: int
    frames_out: int
    bad_frames: int
    supersedes: int
    slow_consumers: int
    oversize_dropped: int
    idle_closes: int = 0


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Hub:
    """Phoenix v2 server state for every live socket of the platform."""

    def __init__(
        self,
        state: PlatformState,
        *,
        queue_size: int = 1000,
        max_frame_bytes: int = MAX_FRAME_BYTES,
    ) -> None:
        self.state = state
        self.queue_size = queue_size
        self.max_frame_bytes = max_frame_bytes
        self._by_principal: dict[str, list[Connection]] = {}
        self._ids = itertools.count(1)
        self.frames_in = 0
        self.frames_out = 0
        self.bad_frames = 0
        self.supersedes = 0
        self.slow_consumers = 0
        self.oversize_dropped = 0
        self.idle_closes = 0

    def statistics(self) -> HubStatistics:
        """A frozen snapshot of the counters."""
        return HubStatistics(
            connections=sum(len(c) for c in self._by_principal.values()),
            frames_in=self.frames_in,
            frames_out=self.frames_out,
            bad_frames=self.bad_frames,
            supersedes=self.supersedes,
            slow_consumers=self.slow_consumers,
            oversize_dropped=self.oversize_dropped,
            idle_closes=self.idle_closes,
        )

    def connections(self, principal_id: str) -> list[Connection]:
        """The live sockets of a user or agent."""
        return list(self._by_principal.get(principal_id, ()))

    def joined_topics(self, principal_id: str) -> set[str]:
        """Every topic some live socket of the principal has joined."""
        return {topic for conn in self._by_principal.get(principal_id, ()) for topic in conn.topics}

    # ------------------------------------------------------------------ lifecycle

    def open(
        self,
        principal: Principal,
        cancel_scope: trio.CancelScope,
        *,
        client: tuple[str, int] | None = None,
        server: tuple[str, int] | None = None,
    ) -> Connection:
        """Register a new socket. An agent's older sockets are superseded: each
        gets a ``supersede`` push on ``agent_control`` and is then closed."""
        if isinstance(principal, AgentRecord):
            for old in self.connections(principal.id):
                self._supersede(old)
        send, receive = trio.open_memory_channel[OutItem](self.queue_size)
        conn = Connection(
            id=next(self._ids),
            principal=principal,
            outbox=send,
            inbox=receive,
            cancel_scope=cancel_scope,
            client=client,
            server=server,
        )
        self._by_principal.setdefault(principal.id, []).append(conn)
        self.state.set_online(principal.id, +1)
        return conn

    def close(self, conn: Connection) -> None:
        """Forget a socket: it leaves every topic. Idempotent."""
        if conn.open:
            conn.open = False
            conns = self._by_principal.get(conn.principal.id, [])
            if conn in conns:
                conns.remove(conn)
            if not conns:
                self._by_principal.pop(conn.principal.id, None)
            self.state.set_online(conn.principal.id, -1)
        conn.topics.clear()
        conn.outbox.close()
        conn.closed.set()

    def _supersede(self, old: Connection) -> None:
        self.supersedes += 1
        topic = f"agent_control:{old.principal.id}"
        payload: JSON = {
            "reason": "session.already_connected",
            "message": "This connection has been superseded by a newer session for this agent.",
            "retryable": False,
            "retry_after": None,
            "target_socket_id": f"agent_socket:{old.principal.id}",
            "correlation_id": f"evict-{new_id()}",
        }
        frame = _dumps([old.topics.get(topic), None, topic, "supersede", payload])
        self._enqueue(old, frame)
        self._enqueue(old, CloseRequest(1000))
        # It gets nothing else: unregister now, the socket task closes it.
        self.close(old)

    def drop(self, principal_id: str, *, abnormal: bool) -> list[Connection]:
        """Drop every live socket of a principal; returns them.

        With ``abnormal`` the TCP connection is shut down without a WebSocket
        close frame (the client sees code 1006) where the OS allows it;
        otherwise the socket task is cancelled and the server closes with 1011.
        Wait on each connection's ``closed`` event to know it is gone.
        """
        conns = self.connections(principal_id)
        for conn in conns:
            if abnormal and conn.client and conn.server and _shutdown_tcp(conn.client, conn.server):
                continue
            conn.cancel_scope.cancel()
        return conns

    def disconnect(self, conn: Connection, code: int = 1000) -> None:
        """Close a socket from the server side with a close frame."""
        self._enqueue(conn, CloseRequest(code))
        self.close(conn)

    # ------------------------------------------------------------------ frames

    def _enqueue(self, conn: Connection, item: OutItem) -> None:
        try:
            conn.outbox.send_nowait(item)
        except trio.WouldBlock:
            self.slow_consumers += 1
            log.warning(
                "socket %d of %s fell %d frames behind; disconnecting it",
                conn.id,
                conn.principal.id,
                self.queue_size,
            )
            conn.cancel_scope.cancel()
            self.close(conn)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass
        else:
            if isinstance(item, str):
                self.frames_out += 1

    def _reply(
        self,
        conn: Connection,
        join_ref: str | None,
        ref: str | None,
        topic: str,
        status: str,
        response: JSON,
    ) -> None:
        self._enqueue(
            conn,
            _dumps([join_ref, ref, topic, "phx_reply", {"status": status, "response": response}]),
        )

    def handle_frame(self, conn: Connection, text: str) -> None:
        """Handle one text frame from a client: join, leave, heartbeat.

        Malformed frames are counted and ignored; they never end the socket.
        """
        self.frames_in += 1
        try:
            frame = json.loads(text)
        except (ValueError, RecursionError):
            self.bad_frames += 1
            return
        if not isinstance(frame, list) or len(frame) != 5:
            self.bad_frames += 1
            return
        raw_join_ref, raw_ref, topic, event, payload = frame
        if not isinstance(topic, str) or not topic or not isinstance(event, str) or not event:
            self.bad_frames += 1
            return
        join_ref = _ref(raw_join_ref)
        ref = _ref(raw_ref)
        del payload  # joins carry {}; nothing is authenticated per channel
        if topic == "phoenix":
            if event == "heartbeat":
                self._reply(conn, None, ref, "phoenix", "ok", {})
            else:
                self._reply(conn, join_ref, ref, topic, "error", {"reason": "unmatched event"})
            return
        if event == "phx_join":
            reason = self.state.may_join(conn.principal, topic)
            if reason is not None:
                self._reply(conn, join_ref, ref, topic, "error", {"reason": reason})
                return
            # Register and reply in one step: the reply is queued before any push.
            conn.topics[topic] = join_ref
            self._reply(conn, join_ref, ref, topic, "ok", {})
            return
        if event == "phx_leave":
            current = conn.topics.pop(topic, join_ref)
            self._reply(conn, current, ref, topic, "ok", {})
            self._enqueue(conn, _dumps([current, current, topic, "phx_close", {}]))
            return
        self._reply(conn, join_ref, ref, topic, "error", {"reason": "unmatched event"})

    def deliver(self, pushes: Iterable[Push]) -> None:
        """Send each push to the sockets of its principals that joined its topic."""
        for push in pushes:
            targets = [
                conn
                for principal_id in push.principals
                for conn in self._by_principal.get(principal_id, ())
                if push.topic in conn.topics
            ]
            if not targets:
                continue
            tail = f",null,{_dumps(push.topic)},{_dumps(push.event)},{_dumps(push.payload)}]"
            if len(tail.encode()) > self.max_frame_bytes:
                self.oversize_dropped += len(targets)
                log.warning(
                    "dropped a %s push on %s: frame above %d bytes",
                    push.event,
                    push.topic,
                    self.max_frame_bytes,
                )
                continue
            for conn in targets:
                self._enqueue(conn, f"[{_dumps(conn.topics.get(push.topic))}{tail}")


def _ref(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _shutdown_tcp(client: tuple[str, int], server: tuple[str, int]) -> bool:
    """Shut down the server-side TCP socket of one connection without a
    WebSocket close frame (Linux: found through ``/proc/self/fd``)."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return False
    family = socket.AF_INET6 if ":" in client[0] else socket.AF_INET
    for name in fds:
        try:
            sock = socket.fromfd(int(name), family, socket.SOCK_STREAM)
        except (OSError, ValueError):
            continue
        try:
            if tuple(sock.getpeername()[:2]) == client and tuple(sock.getsockname()[:2]) == server:
                sock.shutdown(socket.SHUT_RDWR)
                return True
        except OSError:
            continue
        finally:
            sock.close()
    return False
