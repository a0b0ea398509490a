"""`LocalPlatform`: the embedded Band platform as a Trio service."""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import socket
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import trio

from band_trio._util import one_error
from band_trio.errors import BandConfigError, MissingExtraError

try:
    from hypercorn.config import Config
except ModuleNotFoundError as exc:  # installed without the `local` extra
    raise MissingExtraError("local", "the embedded local Band platform") from exc

from band_trio.local._input import Obj
from band_trio.local.accounts import (
    Accounts,
    AgentCredentials,
    UserCredentials,
    user_credentials,
)
from band_trio.local.app import BandApp
from band_trio.local.asgi import Services
from band_trio.local.changes import ChangeFeed
from band_trio.local.connections import (
    DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
    ConnectionGuard,
    ConnectionStatistics,
    default_max_connections,
    raise_file_limit,
)
from band_trio.local.faults import FaultInjector
from band_trio.local.hub import Hub, HubStatistics
from band_trio.local.human import mention_item
from band_trio.local.model import JSON, UserRecord, new_key
from band_trio.local.persistence import StateFile
from band_trio.local.routes.websocket import WS_PATH
from band_trio.local.store import PlatformState

__all__ = [
    "AgentCredentials",
    "LocalPlatform",
    "UserCredentials",
    "connect_host",
    "exposure_warning",
    "is_loopback",
    "open_local_platform",
]

log = logging.getLogger("band_trio.local")

DEFAULT_MAX_UPLOAD = 25 * 1024 * 1024
DEMO_AGENT_NAME = "Echo"
DEMO_AGENT_DESCRIPTION = "A demo agent: mention it and it answers in the room."
LAST_PORT_SETTING = "last_port"
WEBSOCKET_MAX_MESSAGE = 1024 * 1024
"""Bytes of one WebSocket message (all its frames); a bigger one closes the socket with 1009."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an interface to bind) reaches this machine only."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 is loopback too
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1", "[::]": "::1"}


def connect_host(host: str) -> str:
    """The address a client on this machine connects to for an interface to
    bind: loopback for the wildcard ``0.0.0.0`` (``::``), else ``host``."""
    return _WILDCARDS.get(host, host.strip("[]"))


def exposure_warning(host: str, rest_url: str) -> str:
    """The one warning for a platform bound to ``host`` beyond loopback and
    serving at ``rest_url``: who can reach it, at which URL from another
    machine, and that keys are not printed."""
    port = urlsplit(rest_url).port
    public = socket.gethostname() if host in _WILDCARDS else host.strip("[]")
    public = f"[{public}]" if ":" in public else public
    return (
        f"warning: listening on {host}, not loopback: anyone who can reach "
        f"http://{public}:{port} and holds a key acts as that user or agent, over plain "
        "HTTP (keys travel in clear); keys are printed only with --json"
    )


class _SavingChangeFeed(ChangeFeed):
    """A change feed that saves the state before publishing, so that no client
    is told of a change a restart would lose."""

    def __init__(self, state: PlatformState, hub: Hub, state_file: StateFile) -> None:
        super().__init__(state, hub)
        self._saved_state = state
        self._state_file = state_file

    def publish(self) -> None:
        self._state_file.save(self._saved_state)
        super().publish()


_MENTION_TOKEN = re.compile(r"@\[\[([^\[\]\s]+)\]\]")
"""The platform's form of a mention in a message's content."""


class LocalPlatform:
    """A protocol-faithful Band platform on one loopback port (REST + WebSocket).

    Construction creates a user (``user``) and, with ``seed_demo``, one demo
    agent owned by it (``agents[0]``). Start it with
    ``await nursery.start(platform.serve)`` or :func:`open_local_platform`.

    With ``state_dir``, the platform remembers: users, agents and their keys,
    rooms and participants, messages with each agent's delivery status,
    files, memories and contacts are kept in SQLite in that directory (one
    small synchronous write after each request) and read back by the next
    platform built on it. Construction then reuses what is stored: the user
    with ``user_handle`` if there is one, and no demo agent is seeded unless
    the directory was empty. Only one platform may use a directory at a time;
    call :meth:`close` (or use :func:`open_local_platform`) to release it.
    Without ``state_dir`` everything lives in memory and is gone with the
    object.

    Args:
        host: interface to bind (loopback by default).
        port: TCP port; 0 picks a free one (read :attr:`rest_url` once
            started), or, with ``state_dir``, the port of the previous run
            when it is free, so that URLs handed out stay valid.
        seed_demo: pre-register the demo agent (on an empty state only).
        admin: serve the operator's HTTP API ``/_local/admin`` (state snapshot,
            ``agent.control``, socket drops, fault injection, users, agents,
            room deletion). Off by default: its routes then answer 404. The
            Python methods (:meth:`post_message`, :meth:`push_control`,
            :attr:`faults`, ...) work either way; only HTTP is gated.
        admin_key: the ``x-admin-key`` for ``/_local/admin`` (a key of its own,
            never a user's or an agent's); random by default.
        max_upload_bytes: file uploads above this answer 413.
        agent_message_updates: also push ``message_updated`` to agents.
        user_name: display name of the pre-created user.
        user_handle: handle of the pre-created user.
        state_dir: the directory to keep the state in; None keeps it in memory.
        max_connections_per_client: connections one user or agent (by the key
            of a connection's first request), or one keyless client address,
            may hold at once; one more is answered 429 and closed.
        max_connections: connections open at once in all (keyless ones: half
            of them); one more is answered 503 and closed. None: three
            quarters of the process's soft limit of open files, which
            :meth:`serve` first raises as far as the hard limit allows.
        warn_if_exposed: log a warning when bound beyond loopback (a program
            that prints its own, as ``band-trio dev`` and ``platform`` do,
            turns it off).

    Binding another interface than loopback (``host="0.0.0.0"``) makes every
    key a network secret: the platform logs a warning when it starts. Its
    :attr:`rest_url` is one a client connects to: on loopback
    (``127.0.0.1``) for the wildcard ``0.0.0.0``.

    Raises:
        BandConfigError: ``state_dir`` is in use by another platform, or holds
            a state that cannot be read.

    Attributes:
        state: the in-memory model (read it in tests; never mutate it directly).
        faults: fault injection rules applied to every request.
        hub: the WebSocket hub (live sockets and joined topics).
        user: the pre-created user's credentials.
        admin: whether ``/_local/admin`` is served.
        admin_key: the admin key.
        state_dir: where the state is kept (None: in memory).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        seed_demo: bool = True,
        admin: bool = False,
        admin_key: str | None = None,
        max_upload_bytes: int = DEFAULT_MAX_UPLOAD,
        agent_message_updates: bool = False,
        user_name: str = "Demo User",
        user_handle: str = "demo",
        state_dir: str | os.PathLike[str] | None = None,
        max_connections_per_client: int = DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
        max_connections: int | None = None,
        warn_if_exposed: bool = True,
    ) -> None:
        self.host = host
        self.warn_if_exposed = warn_if_exposed
        self.admin = admin
        self.max_connections_per_client = max_connections_per_client
        self.max_connections = max_connections
        self.port = port
        self.max_upload_bytes = max_upload_bytes
        self.state = PlatformState(agent_message_updates=agent_message_updates)
        self.hub = Hub(self.state)
        self.faults = FaultInjector()
        self.admin_key = admin_key or new_key("band_admin")
        self.state_dir = None if state_dir is None else Path(state_dir)
        self._accounts = Accounts(self.state, self.hub)
        self._state_file: StateFile | None = None
        self._changes = ChangeFeed(self.state, self.hub)
        if self.state_dir is not None:
            self._state_file = StateFile.open(self.state_dir)
            try:
                self._state_file.load(self.state)
                self._accounts.restore()
                self._changes = _SavingChangeFeed(self.state, self.hub, self._state_file)
                stored = self.state.by_handle(user_handle)
                if isinstance(stored, UserRecord):
                    self.user = user_credentials(stored)
                else:
                    self.user = self.create_user(user_name, user_handle, organization=True)
                if seed_demo and self._state_file.fresh:
                    self.register_agent(DEMO_AGENT_NAME, DEMO_AGENT_DESCRIPTION)
            except BaseException:
                self._state_file.close()
                raise
        else:
            self.user = self.create_user(user_name, user_handle, organization=True)
            if seed_demo:
                self.register_agent(DEMO_AGENT_NAME, DEMO_AGENT_DESCRIPTION)
        self._app = BandApp(
            Services(
                state=self.state,
                hub=self.hub,
                faults=self.faults,
                accounts=self._accounts,
                changes=self._changes,
                admin_key=self.admin_key,
                max_upload_bytes=max_upload_bytes,
                owner_id=self.user.id,
                admin_enabled=admin,
            )
        )
        self._guard: ConnectionGuard | None = None
        self._rest_url: str | None = None

    def __repr__(self) -> str:
        return f"<LocalPlatform {self._rest_url or 'not started'}>"

    @property
    def agents(self) -> list[AgentCredentials]:
        """Credentials of every agent registered through :meth:`register_agent` or
        the admin API and not deleted since, oldest first (``[0]`` is the demo agent).

        A platform built on a stored state starts the list with every stored
        agent, also those registered through the human API: their credentials
        are what a restarted platform has to hand out again."""
        return self._accounts.agents

    # ------------------------------------------------------------------ addresses

    @property
    def rest_url(self) -> str:
        """Base URL for REST (``http://host:port``), once serving.

        Raises:
            BandConfigError: the platform is not serving yet.
        """
        if self._rest_url is None:
            raise BandConfigError("the local platform is not serving yet")
        return self._rest_url

    @property
    def ws_url(self) -> str:
        """The WebSocket URL (``ws://host:port/api/v1/socket/websocket``), once serving."""
        return "ws" + self.rest_url[len("http") :] + WS_PATH

    @property
    def app(self) -> BandApp:
        """The ASGI application (to mount it elsewhere)."""
        return self._app

    # ------------------------------------------------------------------ serving

    async def serve(
        self, *, task_status: trio.TaskStatus[LocalPlatform] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve until cancelled; ``task_status.started(self)`` once listening.

        Raises:
            OSError: the address could not be bound.
        """
        # Bind the listening socket ourselves so a bind failure is a plain OSError
        # (not an ExceptionGroup from inside the server).
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._bind(listener)
            port = listener.getsockname()[1]
            if self._state_file is not None:
                self._state_file.remember(LAST_PORT_SETTING, str(port))
            config = Config()
            config.websocket_max_message_size = WEBSOCKET_MAX_MESSAGE
            # Hypercorn buffers at most this many body chunks per request
            # before it stops reading the socket (backpressure, bounded memory).
            config.max_app_queue_size = 10
            config.graceful_timeout = 1.0
            config.accesslog = None
            config.errorlog = logging.getLogger("band_trio.local.server")
            config.keep_alive_timeout = 30.0
            # Hypercorn closes a keep-alive connection after 1,000 requests by
            # default, which makes a busy client's pool reconnect for no reason.
            config.keep_alive_max_requests = 2**31
            max_connections = self.max_connections
            if max_connections is None:
                max_connections = default_max_connections(raise_file_limit())
            guard = ConnectionGuard(
                self._app,
                config,
                max_per_client=self.max_connections_per_client,
                max_connections=max_connections,
                identify=self._principal_of_key,
                on_change=self._changes.wake,
            )
            async with trio.open_nursery() as nursery:
                await nursery.start(partial(guard.serve, listener))
                self._guard = guard
                # A URL a client can connect to: loopback for a wildcard bind.
                host = connect_host(self.host)
                host = f"[{host}]" if ":" in host else host
                self._rest_url = f"http://{host}:{port}"
                log.info("local Band platform listening on %s", self._rest_url)
                if self.warn_if_exposed and not is_loopback(self.host):
                    log.warning(
                        "the local Band platform is bound to %s, not loopback: anyone who "
                        "can reach this address and holds a key can act as that user or "
                        "agent, over plain HTTP",
                        self.host,
                    )
                task_status.started(self)
        finally:
            listener.close()

    def _principal_of_key(self, key: str) -> str | None:
        principal = self.state.authenticate(key)
        return None if principal is None else principal.id

    def _bind(self, listener: socket.socket) -> None:
        last = self._state_file.setting(LAST_PORT_SETTING) if self._state_file else None
        if self.port == 0 and last is not None and last.isdigit():
            try:
                listener.bind((self.host, int(last)))
                return
            except OSError:  # taken since: any free port will do
                log.info("the previous port %s is taken; picking a free one", last)
        listener.bind((self.host, self.port))

    def close(self) -> None:
        """Release the state directory (nothing to do without ``state_dir``).

        Everything was saved as it happened; changes made after closing are
        kept in memory only. Idempotent.
        """
        if self._state_file is not None:
            self._state_file.save(self.state)
            self._state_file.close()

    # ------------------------------------------------------------------ notifications

    def _flush(self) -> None:
        """Deliver queued pushes and wake :meth:`wait_for` callers."""
        self._changes.publish()

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` is true; it is re-checked after every request,
        WebSocket frame and connection change. Put a deadline around it."""
        await self._changes.wait_for(predicate)

    def statistics(self) -> HubStatistics:
        """WebSocket counters (connections, frames, supersedes, drops)."""
        return self.hub.statistics()

    def connection_statistics(self) -> ConnectionStatistics:
        """TCP connection counters (open, accepted, refused, failed); zeros
        before serving."""
        if self._guard is None:
            return ConnectionStatistics(0, 0, 0, 0, 0)
        return self._guard.statistics()

    # ------------------------------------------------------------------ accounts

    def create_user(self, name: str, handle: str, *, organization: bool = False) -> UserCredentials:
        """Create a user and return its credentials.

        Raises:
            ValueError: the handle is malformed or already taken, or the name
                holds a control or bidi character.
        """
        creds = self._accounts.create_user(name, handle, organization=organization)
        self._save()
        return creds

    def register_agent(
        self,
        name: str,
        description: str,
        *,
        owner: str | UserCredentials | None = None,
        feature_flags: Mapping[str, bool] | None = None,
    ) -> AgentCredentials:
        """Register an agent owned by ``owner`` (the pre-created user by default).

        Args:
            name: display name.
            description: the agent's description.
            owner: the owning user (id or credentials).
            feature_flags: what the agent's ``GET /agent/me`` reports as
                ``feature_flags``; None = every feature served
                (``{"ff_file_transfer": True, "ff_room_tasks": True}``). Pass
                ``{"ff_file_transfer": False, ...}`` to play a deployment that
                does not serve file transfer.

        Raises:
            KeyError: ``owner`` is not a user of this platform.
            ValueError: ``name`` holds a control or bidi character.
        """
        owner_id = owner.id if isinstance(owner, UserCredentials) else (owner or self.user.id)
        creds = self._accounts.register_agent(
            name, description, owner_id=owner_id, feature_flags=feature_flags
        )
        self._save()
        return creds

    def ensure_agent(
        self,
        name: str,
        description: str = "",
        *,
        owner: str | UserCredentials | None = None,
    ) -> AgentCredentials:
        """The agent called ``name`` of ``owner`` (the pre-created user by
        default), registered now if it has none.

        With ``state_dir`` this is how an agent keeps its id and key across
        restarts: the second run finds the agent the first one registered.

        Raises:
            KeyError: ``owner`` is not a user of this platform.
        """
        owner_id = owner.id if isinstance(owner, UserCredentials) else (owner or self.user.id)
        for creds in self.agents:
            record = self.state.agents.get(creds.id)
            if record is not None and record.owner_id == owner_id and record.name == name:
                return creds
        return self.register_agent(name, description, owner=owner_id)

    def agent_env(self, agent: AgentCredentials) -> dict[str, str]:
        """The ``BAND_*`` settings an agent process needs to reach this platform
        as ``agent``: ``BAND_AGENT_ID``, ``BAND_API_KEY``, ``BAND_REST_URL`` and
        ``BAND_WS_URL``.

        Raises:
            BandConfigError: the platform is not serving yet.
        """
        return {
            "BAND_AGENT_ID": agent.id,
            "BAND_API_KEY": agent.api_key,
            "BAND_REST_URL": self.rest_url,
            "BAND_WS_URL": self.ws_url,
        }

    def _save(self) -> None:
        # Calls from Python do not go through the change feed; save them here.
        if self._state_file is not None:
            self._state_file.save(self.state)

    def connected(self, principal_id: str) -> bool:
        """Whether the user or agent has a live WebSocket."""
        return bool(self.hub.connections(principal_id))

    def joined(self, principal_id: str, topic: str) -> bool:
        """Whether some live socket of the principal joined ``topic``."""
        return topic in self.hub.joined_topics(principal_id)

    # ------------------------------------------------------------------ messages

    def post_message(
        self,
        room_id: str,
        content: str,
        mentions: Sequence[str | Mapping[str, Any]],
        *,
        sender: str | UserCredentials | None = None,
    ) -> dict[str, Any]:
        """Post a text message as a user, in this process, without HTTP.

        It runs exactly what ``POST /api/v1/me/chats/{id}/messages`` runs (same
        validation, same stored message, same pushes to every socket), so a test
        or a load generator can post many messages at once without paying for a
        client. Call it from the Trio run that serves the platform; the pushes go
        out as soon as that run's socket writers get to run.

        Args:
            room_id: the room.
            content: the text (``@[[id]]`` tokens allowed).
            mentions: handles (``alice/echo``), ids, or full mention objects (the
                platform requires at least one).
            sender: the posting user (credentials or id); the pre-created user
                by default.

        Returns:
            ``{id, success, recipients}``, as the REST answer's ``data``.

        Raises:
            KeyError: ``sender`` is not a user of this platform.
            RequestRefusedError: what the REST call would answer, e.g. status 404 for an
                unknown room or one the sender is not in, or 422 for blank
                content or no mention.
        """
        sender_id = sender.id if isinstance(sender, UserCredentials) else (sender or self.user.id)
        user = self.state.users[sender_id]
        body = {"message": {"content": content, "mentions": [mention_item(m) for m in mentions]}}
        try:
            return self.state.post_message(user, room_id, Obj(body))
        finally:
            self._flush()

    def transcript(self, room_id: str) -> list[str]:
        """The room's text messages as a person reads them: ``"<sender>: <text>"``
        lines, oldest first, each ``@[[id]]`` mention token shown as ``@handle``.

        Raises:
            KeyError: no such room.
        """
        lines = []
        for message in self.state.rooms[room_id].messages:
            if message.message_type != "text":
                continue
            content = _MENTION_TOKEN.sub(self._mention_label, message.content)
            lines.append(f"{message.sender_name}: {content}")
        return lines

    def _mention_label(self, token: re.Match[str]) -> str:
        principal = self.state.principal(token.group(1))
        return "@" + principal.handle if principal is not None else token.group(0)

    # ------------------------------------------------------------------ controls

    async def push_control(
        self,
        agent_id: str,
        mode: str,
        *,
        room_id: str | None = None,
        scope: str | None = None,
        reason: str | None = "user_requested",
        execution_id: str | None = None,
        correlation_id: str | None = None,
    ) -> JSON:
        """Push ``agent.control`` to an agent (stop/play also flip the room gate).

        Returns:
            The pushed payload.

        Raises:
            RequestRefusedError: 404 for an unknown agent or a room the agent is not in,
                422 for a bad mode or scope.
        """
        try:
            return self.state.control(
                agent_id,
                mode,
                room_id=room_id,
                scope=scope,
                reason=reason,
                execution_id=execution_id,
                correlation_id=correlation_id,
            )
        finally:
            self._flush()
            await trio.lowlevel.checkpoint()

    async def drop_agent_sockets(self, agent_id: str, *, abnormal: bool = True) -> int:
        """Drop every live socket of an agent and wait until they are gone.

        With ``abnormal`` the TCP connection is shut down without a WebSocket
        close frame (the client sees code 1006), where the OS allows it;
        otherwise the server closes with 1011.

        Returns:
            How many sockets were dropped.
        """
        conns = self.hub.drop(agent_id, abnormal=abnormal)
        for conn in conns:
            await conn.closed.wait()
        return len(conns)


@asynccontextmanager
async def open_local_platform(**kwargs: Any) -> AsyncIterator[LocalPlatform]:
    """Run a :class:`LocalPlatform` for the duration of the ``async with`` block.

    Keyword arguments go to :class:`LocalPlatform` (``state_dir=`` included:
    the directory is released when the block exits). Errors surface as
    themselves, never as an ExceptionGroup of one.
    """
    platform = LocalPlatform(**kwargs)
    try:
        with one_error():
            async with trio.open_nursery() as nursery:
                await nursery.start(platform.serve)
                try:
                    yield platform
                finally:
                    nursery.cancel_scope.cancel()
    finally:
        platform.close()
