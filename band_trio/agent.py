"""``Agent``: connect an adapter to Band and serve its rooms.

Three ways to run one, all structured (no background work outlives them)::

    trio.run(agent.serve)                       # until SIGINT/SIGTERM

    async with trio.open_nursery() as nursery:  # returns once connected and
        await nursery.start(agent.serve)        # the rooms are joined

    async with band_trio.open_agent(adapter=..., ...) as agent:
        ...                                     # the agent runs for the block

Two ways to stop, as everywhere in Trio:

* **Graceful** (:meth:`Agent.request_shutdown`, SIGTERM or a first SIGINT when
  the agent handles signals): intake is fenced in every room at once, running
  turns get ONE global deadline (``AgentConfig.shutdown_timeout``) to finish,
  the rest are cancelled, every room's ``on_cleanup`` and then the adapter's
  ``cleanup_all`` (when it has one) run shielded, each under
  ``AgentConfig.cleanup_timeout``; ``serve`` returns normally.
* **Cancellation means now** (cancelling the scope that runs ``serve``,
  leaving the ``open_agent`` block, or a second SIGINT during a graceful
  drain): running turns are cancelled at once, their messages stay
  ``processing`` on the platform and run again at the next start (a cancelled
  turn is never settled, so never settled twice, and its attempt is not
  charged); the rooms' ``on_cleanup`` calls share one deadline,
  ``cleanup_timeout`` from the cancellation, then ``cleanup_all`` gets its own
  ``cleanup_timeout``. With cleanup hooks that return promptly, ``serve``
  returns (re-raising the cancellation) without waiting for anything else.

A failure surfaces as one typed error, never an ``ExceptionGroup`` of one.
"""

from __future__ import annotations

import contextlib
import enum
import random
import signal
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from band_trio._logging import get_logger, log_context
from band_trio._util import one_error
from band_trio.adapter.protocols import (
    AllRoomsCleanup,
    BackgroundWork,
    FrameworkAdapter,
    Preprocessor,
    ReportsStuckThreads,
)
from band_trio.adapter.simple import SimpleAdapter
from band_trio.adapter.tool_protocol import AgentToolsProtocol
from band_trio.adapter.turns import TurnHooks
from band_trio.errors import BandConfigError, BandError, RateLimitError
from band_trio.observe.otel import registered as otel_registered
from band_trio.observe.service import HealthState, serve_health
from band_trio.runtime.agent_statistics import AgentStatistics
from band_trio.runtime.claims.ledger import ClaimsLedger
from band_trio.runtime.config import AgentConfig, AgentSettings
from band_trio.runtime.contact_events import ContactEventConfig, ContactEventHandler
from band_trio.runtime.core.preprocessor import DefaultPreprocessor
from band_trio.runtime.core.turn_durations import TurnDurations
from band_trio.runtime.engine import AgentEngine
from band_trio.runtime.gc_policy import GcFreezePolicy, GcFreezeStatistics, serve_gc_policy
from band_trio.runtime.platform_runtime import PlatformRuntime
from band_trio.runtime.room import ParticipantCallback, RoomServices, RoomStatistics
from band_trio.runtime.state_changes import StateChanges
from band_trio.tools.agent_tools import AgentTools
from band_trio.tools.definitions import Capability
from band_trio.tools.settled_writes import WriteLocks
from band_trio.tools.unsure_posts import UnsurePostPolicy
from band_trio.wire.link import BandLink
from band_trio.wire.models import AgentMe, ChatParticipant
from band_trio.wire.rest import RestClient

__all__ = ["Agent", "AgentStatistics", "open_agent"]

logger = get_logger("band_trio.agent")

_LINK_BUFFER = 256
"""Events the link may queue for the dispatcher (which never blocks, so this
only absorbs bursts; the link applies back-pressure beyond it)."""


_ROOMS_LOGGED = 10
"""How many room ids the start-up line names (the rest are counted)."""


def _rooms_served(rooms: list[str]) -> str:
    """``serving 2 room(s): id1, id2`` for the start-up line."""
    if not rooms:
        return "serving no room yet"
    named = ", ".join(rooms[:_ROOMS_LOGGED])
    more = len(rooms) - _ROOMS_LOGGED
    return f"serving {len(rooms)} room(s): {named}" + (f" and {more} more" if more > 0 else "")


def _unserved_capabilities(feature_flags: Mapping[str, Any] | None) -> frozenset[Capability]:
    """The capabilities the deployment does not serve, from ``/me`` feature flags
    at start-up.

    FILES needs ``ff_file_transfer`` to be exactly ``True``; false or a missing
    key leaves it unserved. Flags of None (an old platform) prune nothing.
    """
    if feature_flags is None:
        return frozenset()
    if feature_flags.get("ff_file_transfer") is True:
        return frozenset()
    return frozenset({Capability.FILES})


def _prune_adapter_features(adapter: object, unserved: frozenset[Capability]) -> None:
    """Remove unserved capabilities from a :class:`SimpleAdapter`'s features
    before ``on_started``, so the adapter never asks for them."""
    if not unserved or not isinstance(adapter, SimpleAdapter):
        return
    # A subclass that skipped SimpleAdapter.__init__ has the class default
    # (no capabilities), so there is nothing to prune.
    features = adapter.features
    if features.capabilities & unserved:
        adapter.apply_effective_features(features.without_capabilities(unserved))


class _Cause(enum.Enum):
    """Why serve is shutting down."""

    REQUESTED = "requested"  # request_shutdown() or a first signal: drain gracefully
    CANCELLED = "cancelled"  # the caller cancelled serve: cancel the turns now


_Signals = AsyncIterator[int]


@attrs.define
class _RunState:
    started: bool = False


class Agent:
    """A Band agent: a platform runtime, an adapter and a preprocessor.

    Building one does no I/O. Use :meth:`create` to build it from arguments or
    the environment.

    Args:
        runtime: identity, URLs and configuration.
        adapter: the framework adapter that answers messages.
        preprocessor: turns events into adapter inputs
            (:class:`~band_trio.runtime.core.preprocessor.DefaultPreprocessor` when None).
        contact_config: how contact events are handled (callback, hub room,
            broadcasts to rooms); None or DISABLED without broadcasts means the
            agent does not subscribe to them.
        handle_signals: whether ``serve`` handles SIGINT and SIGTERM (main
            thread only): the first starts a graceful shutdown (``serve`` then
            returns normally), a second one cancels the running turns at once.
            None (the default, the same for :meth:`create` and
            :func:`open_agent`) handles them only when ``serve`` is the
            program's main task, as in ``trio.run(agent.serve)``; an agent
            started with ``nursery.start(agent.serve)`` or ``open_agent``
            leaves them to the application that embeds it (Ctrl+C then raises
            ``KeyboardInterrupt`` there, as in any Trio program, and the
            application decides). True or False forces the choice.
        on_participant_added: ``async (room_id, ParticipantAdded)`` awaited
            in the room after its roster took the event; errors are logged and
            swallowed, a call is cancelled after 10 s.
        on_participant_removed: the same for ``ParticipantRemoved``.
        rng: where the runtime draws its jitter (each room's first idle
            reconcile is spread over ``idle_resync_interval`` so rooms do not
            all check at once). None: a fresh unseeded ``random.Random``. Pass
            a seeded one in tests for runs that replay exactly.

    Raises:
        BandConfigError: a bad runtime, an adapter without the required hooks
            or a callback that is not callable.
    """

    def __init__(
        self,
        runtime: PlatformRuntime,
        adapter: FrameworkAdapter,
        preprocessor: Preprocessor | None = None,
        *,
        contact_config: ContactEventConfig | None = None,
        handle_signals: bool | None = None,
        on_participant_added: ParticipantCallback | None = None,
        on_participant_removed: ParticipantCallback | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not isinstance(runtime, PlatformRuntime):
            raise BandConfigError("runtime must be a PlatformRuntime")
        for name, callback in (
            ("on_participant_added", on_participant_added),
            ("on_participant_removed", on_participant_removed),
        ):
            if callback is not None and not callable(callback):
                raise BandConfigError(f"{name} must be an async callable")
        for hook in ("on_started", "on_event", "on_cleanup"):
            if not callable(getattr(adapter, hook, None)):
                raise BandConfigError(f"adapter {type(adapter).__name__} has no {hook}()")
        self.runtime = runtime
        self.adapter = adapter
        self.preprocessor: Preprocessor = (
            preprocessor if preprocessor is not None else DefaultPreprocessor()
        )
        self.handle_signals = handle_signals
        self.contact_config = contact_config
        self.on_participant_added = on_participant_added
        self.on_participant_removed = on_participant_removed
        self.rng = rng if rng is not None else random.Random()
        self.agent_name: str | None = None
        self.agent_description: str | None = None
        self._engine: AgentEngine | None = None
        self._link: BandLink | None = None
        self._rest: RestClient | None = None
        self._gc_policy: GcFreezePolicy | None = None
        self._ledger: ClaimsLedger | None = None
        self._health = HealthState(started_at=0.0)
        self._health_address: tuple[str, int] | None = None
        self._draining = False
        self._turn_durations = TurnDurations()
        self._serving = False
        self._shutdown_requested = trio.Event()
        self._changes = StateChanges()

    @classmethod
    def create(
        cls,
        *,
        adapter: FrameworkAdapter,
        agent_id: str | None = None,
        api_key: str | None = None,
        rest_url: str | None = None,
        ws_url: str | None = None,
        preprocessor: Preprocessor | None = None,
        config: AgentConfig | None = None,
        contact_config: ContactEventConfig | None = None,
        handle_signals: bool | None = None,
        on_participant_added: ParticipantCallback | None = None,
        on_participant_removed: ParticipantCallback | None = None,
    ) -> Agent:
        """Build an agent; each setting not given is read from the environment.

        Explicit arguments first, then the environment, then the defaults:

        * ``agent_id``, ``api_key``, ``rest_url``, ``ws_url``: else
          ``BAND_AGENT_ID``, ``BAND_API_KEY``, ``BAND_REST_URL``,
          ``BAND_WS_URL`` (see
          :meth:`~band_trio.runtime.config.AgentSettings.from_env`);
        * ``config``: when None, :meth:`AgentConfig.from_env` builds it, so any
          ``BAND_<FIELD>`` (``BAND_TURN_TIMEOUT=120``,
          ``BAND_STATE_DIR=/var/lib/agent``...) overrides the default. A
          ``config`` given is used as it is (the environment is not read for
          it); to combine both, pass ``AgentConfig.from_env(max_attempts=5)``,
          where the keyword arguments win.

        The other arguments are those of :class:`Agent`;
        ``config.conflict_policy`` chooses what happens when another
        connection for the agent is live.

        Raises:
            BandConfigError: a setting is missing or invalid, in an argument
                or a variable (the message names it and never contains the key).
        """
        settings = AgentSettings.from_env(
            agent_id=agent_id, api_key=api_key, rest_url=rest_url, ws_url=ws_url
        )
        if config is None:
            config = AgentConfig.from_env()
        runtime = PlatformRuntime(settings, config)
        return cls(
            runtime,
            adapter,
            preprocessor,
            contact_config=contact_config,
            handle_signals=handle_signals,
            on_participant_added=on_participant_added,
            on_participant_removed=on_participant_removed,
        )

    def __repr__(self) -> str:
        return f"Agent(agent_id={self.runtime.agent_id!r}, adapter={type(self.adapter).__name__})"

    # ------------------------------------------------------------------ running

    def request_shutdown(self) -> None:
        """Ask a serving agent to shut down gracefully (``serve`` then returns).

        Never blocks. Running turns get ``AgentConfig.shutdown_timeout`` to
        finish; cancel ``serve`` to stop waiting for them.
        """
        self._shutdown_requested.set()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Connect, join the agent's rooms and answer messages until shut down.

        ``task_status.started()`` is called once the socket is connected and the
        existing rooms are joined (their ``/next`` backlog drains after that).

        Returns normally after a graceful shutdown requested by a signal or
        :meth:`request_shutdown` (running turns get ``shutdown_timeout`` to
        finish).

        Cancellation:
            Cancelling ``serve`` cancels the running turns at once (their
            messages are left ``processing`` for the next start, never settled
            twice), runs the cleanup hooks shielded under short deadlines
            (every room's ``on_cleanup`` by ``cleanup_timeout`` after the
            cancellation, then ``cleanup_all`` under its own
            ``cleanup_timeout``) and re-raises the cancellation. A cancellation
            during a graceful drain turns it into this at once; so does a
            second SIGINT or SIGTERM when the agent handles signals.

        Raises:
            AgentAlreadyRunningError: another agent holds this agent's state
                directory (a durable ledger is locked while in use).
            BandConfigError: bad settings, the agent is already serving, or the
                platform reports an agent with no description.
            AuthenticationError: the API key was refused.
            SupersededError: another connection for this agent took over.
            BandConnectionError: the platform could not be reached (terminal).
        """
        if self._serving:
            raise BandConfigError("this agent is already serving")
        self._serving = True
        self._shutdown_requested = trio.Event()
        self._turn_durations = TurnDurations()
        try:
            with one_error(), log_context(agent_id=self.runtime.agent_id):
                await self._serve_guarded(task_status)
        finally:
            self._serving = False
            self._engine = None
            self._link = None
            self._rest = None
            self._gc_policy = None
            self._ledger = None
            self._draining = False
            self._changes.notify()

    async def _serve_guarded(self, task_status: trio.TaskStatus[None]) -> None:
        # The body runs shielded so that cancelling serve() becomes a graceful
        # shutdown (bounded below) instead of an abrupt one. A watcher outside
        # the shield turns the outer cancellation into a shutdown request.
        state = _RunState()
        body = trio.CancelScope(shield=True)
        outer_cancelled = trio.Event()

        async def watch_outer() -> None:
            try:
                await trio.sleep_forever()
            finally:
                outer_cancelled.set()
                if not state.started:
                    body.cancel()  # cancelled during startup: abort it at once

        async with trio.open_nursery() as guard:
            guard.start_soon(watch_outer)
            with body:
                async with self._observed():
                    await self._run(task_status, state, body, outer_cancelled)
            guard.cancel_scope.cancel()

    @asynccontextmanager
    async def _observed(self) -> AsyncIterator[None]:
        """The health listener (when ``health_port`` is set) and the
        OpenTelemetry instruments (when a meter provider is) for the block."""
        cfg = self.runtime.config
        self._health = HealthState(started_at=trio.current_time())
        with otel_registered(self.runtime.agent_id, self.statistics):
            async with trio.open_nursery() as nursery:
                if cfg.health_port is not None:
                    host, port = self._health_address = await nursery.start(
                        serve_health, cfg, self.statistics, self._health
                    )
                    logger.info("health listener on http://%s:%d", host, port)
                    self._changes.notify()
                try:
                    yield
                finally:
                    self._health_address = None
                    nursery.cancel_scope.cancel()

    async def _run(
        self,
        task_status: trio.TaskStatus[None],
        state: _RunState,
        body: trio.CancelScope,
        outer_cancelled: trio.Event,
    ) -> None:
        runtime = self.runtime
        cfg = runtime.config
        # Taken before any adapter hook or network I/O: a second process (or
        # agent object) on the same state directory is refused here.
        ledger = ClaimsLedger.for_config(cfg, runtime.agent_id, exclusive=True)
        self._ledger = ledger
        try:
            async with runtime.open_rest() as rest:
                me = await self._fetch_me(rest)
                if not (me.description or "").strip():
                    raise BandConfigError(
                        "the platform reports no description for this agent; set one first"
                    )
                self.agent_name, self.agent_description = me.name, me.description
                unserved = _unserved_capabilities(me.feature_flags)
                if Capability.FILES in unserved:
                    logger.info(
                        "the platform does not serve file transfer; file tools are not offered"
                    )
                _prune_adapter_features(self.adapter, unserved)
                await self.adapter.on_started(me.name, me.description or "")
                # From here on the adapter has started: cleanup_all runs whatever
                # fails next (building the link or the engine included).
                try:
                    link = runtime.make_link()
                    self._link = link
                    agent_id = runtime.agent_id
                    contacts: ContactEventHandler | None = None
                    unsure_posts = UnsurePostPolicy(give_up_after=cfg.unsure_post_timeout)
                    write_locks = WriteLocks()

                    def hub_room_id() -> str | None:
                        return contacts.hub_room_id if contacts is not None else None

                    def make_tools(
                        room_id: str, participants: Sequence[ChatParticipant], hooks: TurnHooks
                    ) -> AgentToolsProtocol:
                        return AgentTools(
                            rest=rest,
                            room_id=room_id,
                            agent_id=agent_id,
                            participants=participants,
                            hooks=hooks,
                            hub_room_id=hub_room_id(),
                            unserved=unserved,
                            unsure_posts=unsure_posts,
                            write_locks=write_locks,
                        )

                    self._rest = rest
                    services = RoomServices(
                        turn_durations=self._turn_durations,
                        agent_id=agent_id,
                        rest=rest,
                        ledger=ledger,
                        adapter=self.adapter,
                        preprocessor=self.preprocessor,
                        config=cfg,
                        make_tools=make_tools,
                        hub_room_id=hub_room_id,
                        on_participant_added=self.on_participant_added,
                        on_participant_removed=self.on_participant_removed,
                        changes=self._changes,
                        rng=self.rng,
                    )
                    engine = AgentEngine(services, link)
                    self._engine = engine
                    send, recv = trio.open_memory_channel[Any](_LINK_BUFFER)
                    async with trio.open_nursery() as root:
                        await root.start(link.serve, send)
                        await root.start(engine.serve, recv)
                        if self.contact_config is not None and self.contact_config.subscribes:
                            contacts = ContactEventHandler(
                                config=self.contact_config,
                                rest=rest,
                                sink=engine,
                                state_dir=cfg.resolve_state_dir(agent_id),
                            )
                            await self._subscribe_contacts(link, agent_id)
                            engine.start_contacts(contacts)
                        state.started = self._health.started = True
                        logger.info(
                            "agent %s (%s) connected to %s; %s",
                            me.name,
                            agent_id,
                            runtime.ws_url,
                            _rooms_served(sorted(engine.serving_rooms())),
                        )
                        task_status.started()
                        self._changes.notify()
                        root.start_soon(self._serve_gc_policy, engine)
                        root.start_soon(self._adapter_background)
                        with self._signal_receiver() as signals:
                            cause = await self._wait_for_shutdown(outer_cancelled, signals)
                            graceful = await self._shut_down(
                                engine, body, cause, outer_cancelled, signals
                            )
                        logger.info(
                            "agent %s stopped (%s)",
                            agent_id,
                            "all turns finished" if graceful else "turns cancelled",
                        )
                        root.cancel_scope.cancel()
                finally:
                    await self._adapter_cleanup()
        finally:
            ledger.close()

    async def _shut_down(
        self,
        engine: AgentEngine,
        body: trio.CancelScope,
        cause: _Cause,
        outer_cancelled: trio.Event,
        signals: _Signals | None,
    ) -> bool:
        """Drain gracefully, or cancel the turns at once; the drain turns into
        the forced path as soon as the caller cancels or a second signal comes.

        Returns:
            True when every running turn finished by itself.
        """
        cfg = self.runtime.config
        now = trio.current_time()
        self._draining = True
        self._changes.notify()

        def force() -> None:
            engine.force()
            forced = engine.forced_deadline
            assert forced is not None
            # Turns and room cleanups end by ``forced``; cleanup_all gets one
            # more cleanup_timeout; the second is margin for closing the client.
            body.deadline = min(body.deadline, forced + cfg.cleanup_timeout + 1)

        # The hard bound of a graceful shutdown: the drain, the rooms' cleanups
        # (concurrent), then the adapter's cleanup_all.
        body.deadline = now + cfg.graceful_shutdown_bound
        if cause is _Cause.CANCELLED:
            force()
            return await engine.shutdown(now)
        async with trio.open_nursery() as watch:

            async def force_when_cancelled() -> None:
                await outer_cancelled.wait()
                force()

            async def force_on_second_signal(receiver: _Signals) -> None:
                async for signum in receiver:
                    logger.warning(
                        "received %s again; cancelling the running turns now",
                        signal.Signals(signum).name,
                    )
                    force()
                    return

            watch.start_soon(force_when_cancelled)
            if signals is not None:
                watch.start_soon(force_on_second_signal, signals)
            graceful = await engine.shutdown(now + cfg.shutdown_timeout)
            watch.cancel_scope.cancel()
        return graceful

    async def _serve_gc_policy(self, engine: AgentEngine) -> None:
        # Started once the start-up rooms are joined: from then on the engine's
        # drains settling means start-up has settled (see gc_policy).
        policy = GcFreezePolicy(self.runtime.config.gc_freeze_min_rooms)
        self._gc_policy = policy
        await serve_gc_policy(
            policy,
            self._changes,
            settled=engine.bulk_reconciles_settled,
            rooms=lambda: len(engine.serving_rooms()),
            removed=lambda: engine.rooms_removed,
            epoch=lambda: engine.reconcile_epoch,
        )

    async def _subscribe_contacts(self, link: BandLink, agent_id: str) -> None:
        topic = f"agent_contacts:{agent_id}"
        try:
            await link.join(topic)
        except BandError as exc:
            logger.warning("could not join %s: %s; contact events will be missed", topic, exc)

    async def _fetch_me(self, rest: RestClient) -> AgentMe:
        delays = self.runtime.config.me_retry_delays
        for attempt in range(len(delays) + 1):
            try:
                return await rest.get_me()
            except RateLimitError:
                if attempt == len(delays):
                    raise
                logger.warning("GET /agent/me rate limited; retrying in %ss", delays[attempt])
                await trio.sleep(delays[attempt])
        raise AssertionError("unreachable")  # pragma: no cover

    def _signal_receiver(self) -> contextlib.AbstractContextManager[_Signals | None]:
        """SIGINT and SIGTERM for the whole shutdown (a second one forces), when
        this agent handles signals; else nothing."""
        if self._handles_signals():
            return trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM)
        return contextlib.nullcontext()

    def _handles_signals(self) -> bool:
        if threading.current_thread() is not threading.main_thread():
            return False
        if self.handle_signals is not None:
            return self.handle_signals
        # The default: only when serve is the program's main task, as in
        # ``trio.run(agent.serve)``. An agent started in a nursery (or by
        # open_agent) leaves the signals to the application that embeds it.
        task = trio.lowlevel.current_task()
        return task.parent_nursery is not None and (
            task.parent_nursery.parent_task is trio.lowlevel.current_root_task()
        )

    async def _wait_for_shutdown(
        self, outer_cancelled: trio.Event, signals: _Signals | None
    ) -> _Cause:
        causes: list[_Cause] = []
        async with trio.open_nursery() as nursery:

            def stop(cause: _Cause) -> None:
                causes.append(cause)
                nursery.cancel_scope.cancel()

            async def wait_event(event: trio.Event, cause: _Cause) -> None:
                await event.wait()
                stop(cause)

            async def wait_signal(receiver: _Signals) -> None:
                async for signum in receiver:
                    logger.info(
                        "received %s; shutting down (send it again to cancel running turns)",
                        signal.Signals(signum).name,
                    )
                    stop(_Cause.REQUESTED)
                    return

            nursery.start_soon(wait_event, outer_cancelled, _Cause.CANCELLED)
            nursery.start_soon(wait_event, self._shutdown_requested, _Cause.REQUESTED)
            if signals is not None:
                nursery.start_soon(wait_signal, signals)
        # Cancellation wins over a request that came at the same moment.
        return _Cause.CANCELLED if _Cause.CANCELLED in causes else causes[0]

    async def _adapter_background(self) -> None:
        # Cancelled with the root nursery: after the rooms' cleanups, before
        # cleanup_all.
        adapter = self.adapter
        if not isinstance(adapter, BackgroundWork):
            return
        try:
            await adapter.run_background()
        except Exception:
            logger.exception("adapter run_background failed")

    async def _adapter_cleanup(self) -> None:
        adapter = self.adapter
        if not isinstance(adapter, AllRoomsCleanup):
            return
        with trio.CancelScope(shield=True):
            with trio.move_on_after(self.runtime.config.cleanup_timeout):
                try:
                    await adapter.cleanup_all()
                except Exception:
                    logger.exception("adapter cleanup_all failed")

    # ------------------------------------------------------------------ observing

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` is true, without polling.

        The predicate is re-checked whenever the agent's observable state may
        have changed: it started or stopped serving, a room was added, joined,
        removed or left, an event was routed, a turn started or ended, a
        message settled, a reconcile pass or a contact event was handled. It
        typically reads :meth:`statistics`, :meth:`room_statistics` or
        :attr:`room_ids`; it must not block.

        Cancellation: a plain Trio wait; put a deadline around it, e.g.
        ``with trio.fail_after(5): await agent.wait_for(lambda:
        agent.statistics().completed >= 3)``.
        """
        await self._changes.wait_for(predicate)

    def statistics(self) -> AgentStatistics:
        """The agent's counters now (zeros when not serving).

        Besides the rooms' counters it reaches the link's and the REST
        client's statistics, and reports turn duration percentiles (over a
        fixed-size window of recent turns, so memory stays bounded).
        """
        engine = self._engine
        if engine is None:
            return AgentStatistics(
                serving=False,
                rooms=0,
                joining=0,
                turns=0,
                completed=0,
                failures=0,
                failed_for_good=0,
                interrupted=0,
                overflows=0,
                resyncs=0,
                inbox_depth=0,
                reconnects=0,
                events=0,
                unrouted=0,
                rejected=0,
                control_signals=0,
                per_room=(),
                stuck_threads=self._stuck_threads(),
            )
        es = engine.statistics()
        rooms = es.rooms
        return AgentStatistics(
            serving=True,
            rooms=len(rooms),
            joining=es.joining,
            turns=sum(r.turns for r in rooms),
            completed=sum(r.completed for r in rooms),
            failures=sum(r.failures for r in rooms),
            failed_for_good=sum(r.failed_for_good for r in rooms),
            interrupted=sum(r.interrupted for r in rooms),
            overflows=sum(r.overflows for r in rooms),
            resyncs=sum(r.resyncs for r in rooms),
            inbox_depth=sum(r.inbox_depth for r in rooms),
            reconnects=es.reconnects,
            events=es.events,
            unrouted=es.unrouted,
            rejected=es.rejected,
            control_signals=es.control_applied,
            per_room=rooms,
            replies_recovered=sum(r.replies_recovered for r in rooms),
            turn_durations=self._turn_durations.statistics(),
            link=self._link.statistics() if self._link is not None else None,
            rest=self._rest.statistics() if self._rest is not None else None,
            gc=self._gc_policy.statistics()
            if self._gc_policy is not None
            else GcFreezeStatistics(),
            ledger=self._ledger.statistics() if self._ledger is not None else None,
            stuck_threads=self._stuck_threads(),
            draining=self._draining,
        )

    def _stuck_threads(self) -> int:
        adapter = self.adapter
        return adapter.stuck_threads() if isinstance(adapter, ReportsStuckThreads) else 0

    def room_statistics(self, room_id: str) -> RoomStatistics | None:
        """One served room's statistics, or None when the agent does not serve it."""
        engine = self._engine
        room = engine.serving_rooms().get(room_id) if engine is not None else None
        return room.statistics() if room is not None else None

    @property
    def health_address(self) -> tuple[str, int] | None:
        """``(host, port)`` of the health, readiness and metrics listener while
        it serves (``AgentConfig.health_port``; the port chosen when it is 0),
        else None. See :mod:`band_trio.observe`."""
        return self._health_address

    @property
    def room_ids(self) -> frozenset[str]:
        """The rooms being served now."""
        engine = self._engine
        return frozenset(engine.serving_rooms()) if engine is not None else frozenset()


@asynccontextmanager
async def open_agent(
    *,
    adapter: FrameworkAdapter,
    agent_id: str | None = None,
    api_key: str | None = None,
    rest_url: str | None = None,
    ws_url: str | None = None,
    preprocessor: Preprocessor | None = None,
    config: AgentConfig | None = None,
    contact_config: ContactEventConfig | None = None,
    handle_signals: bool | None = None,
    on_participant_added: ParticipantCallback | None = None,
    on_participant_removed: ParticipantCallback | None = None,
) -> AsyncIterator[Agent]:
    """Run an agent for the duration of the block.

    The block starts once the agent is connected and its rooms are joined.
    Leaving the block normally shuts the agent down gracefully (running turns
    get ``shutdown_timeout`` to finish, as with :meth:`Agent.request_shutdown`);
    leaving it by an exception or a cancellation cancels the running turns at
    once (see :meth:`Agent.serve`). Arguments are those of
    :meth:`Agent.create`; signals are left to the application by default.

    An error of the agent or of the block is raised as itself (never as an
    ``ExceptionGroup`` of one).
    """
    agent = Agent.create(
        adapter=adapter,
        agent_id=agent_id,
        api_key=api_key,
        rest_url=rest_url,
        ws_url=ws_url,
        preprocessor=preprocessor,
        config=config,
        contact_config=contact_config,
        handle_signals=handle_signals,
        on_participant_added=on_participant_added,
        on_participant_removed=on_participant_removed,
    )
    with one_error():
        async with trio.open_nursery() as nursery:
            await nursery.start(agent.serve)
            try:
                yield agent
            except BaseException:
                nursery.cancel_scope.cancel()
                raise
            agent.request_shutdown()
