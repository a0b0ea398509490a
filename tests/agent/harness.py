"""Helpers of the end-to-end agent tests (lifecycle, rooms, control, contacts,
shutdown, faults): a scriptable recording adapter, a human in a room, and
exactly-once checks against the local platform's state.

Everything waits on observable state under a deadline; nothing sleeps and hopes,
and nothing polls: :meth:`Scene.wait_for` re-checks its predicate whenever the
platform, one of the scene's agents or one of their adapters announces a change.
Inside ``async with scene(...)``, every :class:`RecordingAdapter` created and
every agent run with :func:`serving` (or made by :meth:`Scene.make_agent`) is
watched by that scene, so a test only writes ``await s.wait_for(...)``.
"""

from __future__ import annotations

import contextvars
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

import attrs
import trio

from band_trio.adapter import AgentToolsProtocol, HistoryProvider, PlatformMessage, SimpleAdapter
from band_trio.agent import Agent
from band_trio.local import HumanClient, LocalPlatform
from band_trio.runtime.config import AgentConfig, AgentSettings
from band_trio.runtime.platform_runtime import PlatformRuntime
from band_trio.wire.rest import RestConfig
from band_trio.wire.retry import RetryPolicy

FAST_REST = RestConfig(retry=RetryPolicy(backoff_base=0.02, server_delay_cap=0.05))
"""REST retries in milliseconds instead of seconds (the policy itself is tested in tests/wire)."""

WITHIN = 10.0
"""The default deadline of :meth:`Scene.wait_for`, in seconds (real time: the
tests run over loopback sockets)."""


class Observable(Protocol):
    """Something that wakes its waiters when its state changed: the local
    platform, an :class:`~band_trio.agent.Agent`, a :class:`RecordingAdapter`."""

    async def wait_for(self, predicate: Callable[[], bool]) -> None: ...


async def wait_for(
    predicate: Callable[[], bool], *sources: Observable, within: float = WITHIN
) -> None:
    """Wait until ``predicate()`` is true; it is re-checked whenever any of
    ``sources`` changed (the predicate may read the state of all of them).

    Raises:
        trio.TooSlowError: it did not become true within ``within`` seconds.
        ValueError: no source to wake on (the wait could never end early).
    """
    if not sources:
        raise ValueError("wait_for needs at least one source of changes")
    with trio.fail_after(within):
        await trio.lowlevel.checkpoint()
        if predicate():
            return
        async with trio.open_nursery() as nursery:

            async def watch(source: Observable) -> None:
                await source.wait_for(predicate)
                nursery.cancel_scope.cancel()

            for source in sources:
                nursery.start_soon(watch, source)


@attrs.define
class Call:
    """One ``on_message`` call as the adapter saw it."""

    msg: PlatformMessage
    room_id: str
    history: HistoryProvider
    participants_msg: str | None
    contacts_msg: str | None
    is_session_bootstrap: bool
    finished: bool = False
    cancelled: bool = False


Behaviour = Callable[["RecordingAdapter", PlatformMessage, AgentToolsProtocol], Awaitable[None]]


async def echo(adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol) -> None:
    """Reply ``echo: <content>`` to the sender (the default behaviour)."""
    await tools.send_message(f"echo: {msg.content}", [msg.sender_id])


class RecordingAdapter(SimpleAdapter[HistoryProvider]):
    """Records every call and runs a scriptable behaviour (``echo`` by default).

    ``behaviour`` may be replaced at any time; ``cleanups`` lists ``on_cleanup``
    room ids; ``running`` counts turns in progress (for concurrency checks).
    """

    def __init__(self, behaviour: Behaviour = echo) -> None:
        super().__init__()
        self.behaviour = behaviour
        _watch_in_scene(self)
        self.calls: list[Call] = []
        self.cleanups: list[str] = []
        self.started_with: tuple[str, str] | None = None
        self.running = 0
        self.max_running = 0
        self.changed = trio.Event()

    def _bump(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` is true, re-checked after every call,
        turn end and cleanup the adapter records."""
        while not predicate():
            await self.changed.wait()

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        await super().on_started(agent_name, agent_description)
        self.started_with = (agent_name, agent_description)

    async def on_cleanup(self, room_id: str) -> None:
        self.cleanups.append(room_id)
        self._bump()

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        call = Call(msg, room_id, history, participants_msg, contacts_msg, is_session_bootstrap)
        self.calls.append(call)
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self._bump()
        try:
            await self.behaviour(self, msg, tools)
            call.finished = True
        except trio.Cancelled:
            call.cancelled = True
            raise
        finally:
            self.running -= 1
            self._bump()

    def calls_for(self, room_id: str) -> list[Call]:
        return [c for c in self.calls if c.room_id == room_id]

    def contents(self, room_id: str | None = None) -> list[str]:
        return [c.msg.content for c in self.calls if room_id is None or c.room_id == room_id]


_tokens = itertools.count(1)


def token(prefix: str = "m") -> str:
    """A unique word to put in a message, so replies can be matched to it."""
    return f"{prefix}{next(_tokens)}x"


@attrs.define
class Scene:
    """A platform, its demo agent's credentials and a human client."""

    platform: LocalPlatform
    human: HumanClient
    agent_id: str
    agent_key: str
    agent_handle: str
    watched: list[Observable] = attrs.Factory(list)
    """What :meth:`wait_for` wakes on besides the platform (agents and adapters
    made by :meth:`make_agent`, and whatever :meth:`watch` added)."""

    def watch(self, *sources: Any) -> None:
        """Also wake :meth:`wait_for` on changes of ``sources`` (agents, recording
        adapters); anything without a ``wait_for`` is ignored."""
        for source in sources:
            if callable(getattr(source, "wait_for", None)) and source not in self.watched:
                self.watched.append(source)

    async def wait_for(self, predicate: Callable[[], bool], *, within: float = WITHIN) -> None:
        """Wait until ``predicate()`` is true, re-checked on every change of the
        platform and of every watched agent and adapter.

        Raises:
            trio.TooSlowError: it did not become true within ``within`` seconds.
        """
        await wait_for(predicate, self.platform, *self.watched, within=within)

    def make_agent(
        self,
        adapter: Any,
        config: AgentConfig | None = None,
        *,
        rest_options: dict[str, Any] | None = None,
        contact_config: Any = None,
    ) -> Agent:
        """An agent for the scene's demo agent; REST retries are fast (tests)."""
        settings = AgentSettings(
            agent_id=self.agent_id,
            api_key=self.agent_key,
            rest_url=self.platform.rest_url,
            ws_url=self.platform.ws_url,
        )
        options: dict[str, Any] = {"config": FAST_REST}
        options.update(rest_options or {})
        runtime = PlatformRuntime(
            settings, config if config is not None else fast_config(), rest_options=options
        )
        agent = Agent(runtime, adapter, contact_config=contact_config, handle_signals=False)
        self.watch(agent, adapter)
        return agent

    async def new_room(self, *, with_agent: bool = True, title: str = "test room") -> str:
        room = await self.human.create_room(title=title)
        if with_agent:
            await self.human.add_participant(room["id"], self.agent_id)
        return str(room["id"])

    async def post(self, room_id: str, text: str) -> str:
        """Post ``text`` mentioning the agent; returns the message id."""
        sent = await self.human.post_message(
            room_id, f"@{self.agent_handle} {text}", mentions=[self.agent_handle]
        )
        return str(sent["id"])

    # ------------------------------------------------------------ platform state

    def room_state(self, room_id: str) -> Any:
        return self.platform.state.rooms[room_id]

    def delivery(self, room_id: str, message_id: str) -> Any:
        return self.room_state(room_id).by_id[message_id].deliveries.get(self.agent_id)

    def status(self, room_id: str, message_id: str) -> str | None:
        d = self.delivery(room_id, message_id)
        return None if d is None else str(d.status)

    def processed(self, room_id: str, message_id: str) -> bool:
        return self.status(room_id, message_id) == "processed"

    def agent_texts(self, room_id: str) -> list[str]:
        """Every text message the agent posted in the room, oldest first."""
        return [
            m.content
            for m in self.room_state(room_id).messages
            if m.sender_id == self.agent_id and m.message_type == "text"
        ]

    def agent_events(self, room_id: str, message_type: str) -> list[Any]:
        return [
            m
            for m in self.room_state(room_id).messages
            if m.sender_id == self.agent_id and m.message_type == message_type
        ]

    def replies_to(self, room_id: str, word: str) -> int:
        return sum(1 for t in self.agent_texts(room_id) if word in t)

    def successes(self, room_id: str, message_id: str) -> int:
        d = self.delivery(room_id, message_id)
        return 0 if d is None else sum(1 for a in d.attempts if a.status == "success")

    def assert_exactly_once(self, room_id: str, posted: dict[str, str]) -> None:
        """Every posted message (id -> unique word) is processed, by one
        successful attempt, with exactly one reply containing its word."""
        for message_id, word in posted.items():
            assert self.processed(room_id, message_id), (word, self.status(room_id, message_id))
            assert self.successes(room_id, message_id) == 1, word
            assert self.replies_to(room_id, word) == 1, (word, self.agent_texts(room_id))


def fast_config(**overrides: Any) -> AgentConfig:
    """An in-memory agent config with short timeouts suited to tests."""
    values: dict[str, Any] = {
        "state_dir": None,
        "shutdown_timeout": 5.0,
        "cleanup_timeout": 2.0,
        "join_retry_delays": (0.05, 0.1, 0.2),
        "retry_delay": 0.05,
        # Freezing the garbage collector is per process: a test turns it on.
        "gc_freeze_min_rooms": 0,
    }
    values.update(overrides)
    return AgentConfig(**values)


_current_scene: contextvars.ContextVar[Scene | None] = contextvars.ContextVar(
    "current_scene", default=None
)
"""The scene of the enclosing ``async with scene(...)`` block (tasks started
inside it inherit it)."""


def _watch_in_scene(source: Any) -> None:
    current = _current_scene.get()
    if current is not None:
        current.watch(source)


@asynccontextmanager
async def scene(platform: LocalPlatform) -> AsyncIterator[Scene]:
    """A human client on ``platform`` and the credentials of its demo agent.

    Inside the block, recording adapters created and agents run with
    :func:`serving` are watched by the scene's :meth:`Scene.wait_for`.
    """
    creds = platform.agents[0]
    async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
        current = Scene(platform, human, creds.id, creds.api_key, creds.handle)
        token = _current_scene.set(current)
        try:
            yield current
        finally:
            _current_scene.reset(token)


@asynccontextmanager
async def serving(agent: Agent) -> AsyncIterator[Agent]:
    """Run ``agent`` for the block (started = connected and rooms joined)."""
    _watch_in_scene(agent)
    _watch_in_scene(agent.adapter)
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.serve)
        yield agent
        nursery.cancel_scope.cancel()
