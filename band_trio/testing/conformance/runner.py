"""Run one scenario through the real runtime, in-process, in virtual time.

:func:`run_scenario` builds a fresh embedded platform, registers the agent
under test (plus two other agents of the same owner, ``peer`` and ``helper``),
creates the starting rooms, serves an :class:`~band_trio.Agent` around the
adapter (wrapped for observation) and plays the steps. After the last step it
settles: stopped rooms are played again, virtual time runs on long enough for
every retry, timeout and resync to happen, and the agent shuts down
gracefully. The result holds the trace and the platform's final state.

Everything happens inside one ``trio.run`` under
``MockClock(autojump_threshold=0)``: no socket is opened and no real time is
spent waiting, so examples are fast and their outcome depends only on the
scenario.
"""

from __future__ import annotations

import contextlib
import logging
import random
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio
import trio.testing

from band_trio import (
    Agent,
    AgentConfig,
    BandConfigError,
    BandError,
    ContactEventConfig,
    ContactStrategy,
    FrameworkAdapter,
)
from band_trio.testing.conformance._inprocess import InProcessRuntime, RequestDelays
from band_trio.testing.conformance._runtime_access import (
    IN_MEMORY,
    LocalPlatform,
    Obj,
    add_contact,
    remove_contact,
    upload,
)
from band_trio.testing.conformance.steps import (
    AddRoom,
    ContactChange,
    DeleteRoom,
    Interrupt,
    Join,
    Leave,
    Play,
    Post,
    ReAddAgent,
    RemoveAgent,
    Restart,
    RestFault,
    Scenario,
    Seed,
    SlowTool,
    SocketDrop,
    Step,
    Stop,
    ToolFailure,
    Wait,
)
from band_trio.testing.conformance.survivors import Census
from band_trio.testing.conformance.trace import LoopBlockDetector, ObservedAdapter, Trace
from band_trio.wire import room_topics

__all__ = ["AdapterFactory", "RunOptions", "ScenarioResult", "run_scenario"]

AdapterFactory = Callable[[], FrameworkAdapter]
"""Builds a fresh adapter (called once per agent run: at start and after each restart)."""

AGENT_NAME = "Subject"
AGENT_DESCRIPTION = "The adapter under test."


def _default_config() -> AgentConfig:
    return AgentConfig(
        turn_timeout=20.0,
        max_attempts=3,
        shutdown_timeout=5.0,
        cleanup_timeout=5.0,
        retry_delay=1.0,
    )


class _FixedDraws(random.Random):
    """A random source whose every draw is the same value."""

    def __init__(self, value: float) -> None:
        super().__init__(0)
        self._value = value

    def random(self) -> float:
        return self._value


@attrs.frozen
class RunOptions:
    """How scenarios are run and judged.

    Attributes:
        config: the runtime configuration (``state_dir`` is set by the kit:
            in memory, or a temporary directory kept across restarts). Its
            ``turn_timeout`` must be set: the kit checks turns against it.
        cancel_grace: virtual seconds a cancelled turn may take to end.
        block_threshold: real seconds one step of adapter code may hold the loop.
        settle_time: virtual seconds the agent runs after the last step.
        max_replies_per_message: replies an adapter may post for one message.
        history_validator: checks a converted history; returns problems
            (see :mod:`band_trio.testing.conformance.validators`).
        autojump_threshold: real seconds every task must have been blocked
            before virtual time jumps to the next deadline. While an adapter
            waits on a worker thread (an SDK computing headers, a DNS lookup,
            ``trio.to_thread``) every task is blocked: a wait longer than this
            lets virtual time run ahead, up to a spurious turn timeout. 0 is
            fastest and right for adapters that never use threads.
        jitter: the runtime's random draws (each room spreads its first idle
            reconcile over the resync interval) all give this value in
            ``[0, 1)``, so a scenario replays the same way and a room's timing
            never depends on how many rooms drew before it (which the
            room-independence check relies on). None: random, as in production.
        start_bound: virtual seconds ``on_started`` may take (the agent serves
            no room until it returned).
        contact_config: how the agent handles the contact events of
            ``ContactChange`` steps (default: in a contacts hub room, whose
            turns the adapter answers); None ignores them.
    """

    config: AgentConfig = attrs.field(factory=_default_config)
    cancel_grace: float = 1.0
    block_threshold: float = 0.25
    settle_time: float = 300.0
    max_replies_per_message: int = 1
    history_validator: Callable[[Any], Sequence[str]] | None = None
    autojump_threshold: float = 0.01
    jitter: float | None = attrs.field(default=0.5)
    start_bound: float = 10.0
    contact_config: ContactEventConfig | None = attrs.field(
        factory=lambda: ContactEventConfig(strategy=ContactStrategy.HUB_ROOM)
    )

    @jitter.validator
    def _check_jitter(self, _attribute: object, value: float | None) -> None:
        if value is not None and not 0.0 <= value < 1.0:
            raise BandConfigError(f"jitter must be in [0, 1) or None; got {value!r}")


@attrs.define(eq=False)
class ScenarioResult:
    """A finished run: the scenario, the trace and the platform's final state.

    Attributes:
        scenario: what was played.
        options: how.
        trace: what the kit observed.
        platform: the embedded platform, as the run left it (read its
            ``state``; the run is over, nothing serves it any more).
        error: an error the run itself raised (the agent failed to serve), if any.
        notes: what the checks could not judge in this run (see
            :func:`~band_trio.testing.conformance.check_adapter`).
    """

    scenario: Scenario
    options: RunOptions
    trace: Trace
    platform: LocalPlatform
    error: BaseException | None = None
    notes: tuple[str, ...] = ()

    @property
    def agent_id(self) -> str:
        """The agent under test."""
        return self.trace.agent_id

    def agent_posts(self, room_id: str) -> list[Any]:
        """Every message and event the agent posted in a room still on the platform."""
        room = self.platform.state.rooms.get(room_id)
        if room is None:
            return []
        return [m for m in room.messages if m.sender_id == self.agent_id]


class _World:
    """The platform side of a run: accounts, rooms and the step actions."""

    def __init__(self, trace: Trace) -> None:
        self.platform = LocalPlatform(seed_demo=False)
        self.trace = trace
        platform = self.platform
        self.agent = platform.register_agent(AGENT_NAME, AGENT_DESCRIPTION)
        self.peer = platform.register_agent("Peer", "Another agent in the room.")
        self.helper = platform.register_agent("Helper", "A third agent.")
        state = platform.state
        self.user = state.users[platform.user.id]
        trace.agent_id = self.agent.id
        trace.names.update(
            {
                platform.user.id: platform.user.handle,
                self.agent.id: self.agent.handle,
                self.peer.id: self.peer.handle,
                self.helper.id: self.helper.handle,
            }
        )
        self._files = 0
        self.delays = RequestDelays(platform.app)

    def flush(self) -> None:
        self.platform._flush()

    def principal(self, who: str) -> Any:
        ident = {"peer": self.peer.id, "helper": self.helper.id, "self": self.agent.id}[who]
        return self.platform.state.agents[ident]

    def add_room(self) -> None:
        state = self.platform.state
        room = state.create_room(
            self.user, Obj({"chat": {"title": f"room {len(self.trace.room_ids)}"}})
        )
        self.trace.room_ids.append(room.id)
        self.add_member(room.id, self.agent.id)

    def room_id(self, number: int) -> str | None:
        ids = self.trace.room_ids
        return ids[number] if 0 <= number < len(ids) else None

    def live_room(self, number: int) -> Any:
        room_id = self.room_id(number)
        return self.platform.state.rooms.get(room_id) if room_id is not None else None

    def add_member(self, room_id: str, member_id: str) -> None:
        room = self.platform.state.rooms.get(room_id)
        if room is None or member_id in room.members:
            return
        self.platform.state.add_participant(
            self.user, room_id, Obj({"participant": {"participant_id": member_id}})
        )
        self.flush()

    def remove_member(self, room_id: str, member_id: str) -> None:
        room = self.platform.state.rooms.get(room_id)
        if room is None or member_id not in room.members:
            return
        self.platform.state.remove_participant(self.user, room_id, member_id)
        self.flush()

    def post(self, step: Post) -> None:
        room = self.live_room(step.room)
        if room is None:
            return
        text = step.text if step.text.strip() else "."
        state = self.platform.state
        if step.sender == "human":
            actor: Any = self.user
        else:
            actor = self.principal(step.sender)
            if actor.id not in room.members:
                if step.sender == "self":
                    return  # the agent is not in the room: it cannot post there
                self.add_member(room.id, actor.id)
        if step.sender != "self" and self.agent.id not in room.members:
            mentions: list[dict[str, str]] = []
        elif step.sender != "self" and step.mention:
            mentions = [{"id": self.agent.id}]
        else:
            mentions = []
        if not mentions:
            # The platform requires a mention: mention the owner (or, for the
            # owner, another member) instead of the agent.
            other = next((m for m in room.members if m not in (actor.id, self.agent.id)), None)
            if other is None:
                return
            mentions = [{"id": other}]
        attachments = [self._upload(room, actor, n) for n in range(step.attachments)]
        body: dict[str, Any] = {"content": text, "mentions": mentions}
        if attachments:
            body["attachment_ids"] = attachments
        try:
            state.post_message(actor, room.id, Obj({"message": body}))
        except BandError:
            # What the platform refuses (the agent posting in a room where it
            # is stopped) is simply not posted.
            pass
        finally:
            self.flush()

    def _upload(self, room: Any, actor: Any, n: int) -> str:
        self._files += 1
        data = f"attachment {self._files} of {n}".encode()
        stored = upload(
            self.platform.state,
            actor,
            room.id,
            data,
            {"x-file-name": f"file{self._files}.txt", "content-type": "text/plain"},
            max_bytes=1 << 20,
        )
        return str(stored["id"])

    def seed(self, step: Seed) -> None:
        room = self.live_room(step.room)
        if room is None:
            return
        state = self.platform.state
        for entry in step.entries:
            sender: Any = self.user if entry.sender == "human" else self.principal(entry.sender)
            metadata: dict[str, Any] = {}
            if entry.call_id is not None:
                metadata = {"tool_call_id": entry.call_id, "tool_name": "band_lookup"}
                if entry.message_type == "tool_call":
                    metadata["arguments"] = {"query": entry.content}
            message = state._append_message(
                room,
                sender,
                content=entry.content if entry.content.strip() else ".",
                message_type=entry.message_type,
                mentions=[],
                metadata=metadata,
                attachment_ids=[],
            )
            context = room.context.setdefault(self.agent.id, [])
            if message not in context:
                context.append(message)

    async def control(self, mode: str, number: int | None) -> None:
        room_id = None
        if number is not None:
            room = self.live_room(number)
            if room is None or self.agent.id not in room.members:
                return
            room_id = room.id
        if mode in ("interrupt", "stop"):
            reason = mode
            for turn in self.trace.active(room_id):
                turn.request_cancel(trio.current_time(), reason)
        await self.platform.push_control(self.agent.id, mode, room_id=room_id)

    def _posts(self, number: int) -> str | None:
        room_id = self.room_id(number)
        return None if room_id is None else rf"^/api/v1/agent/chats/{room_id}/(messages|events)/?$"

    def fail_posts(self, number: int, status: int, times: int) -> None:
        path = self._posts(number)
        if path is not None:
            self.platform.faults.add("POST", path, status, times)

    def contact(self, step: ContactChange) -> None:
        actor = self.principal(step.who)
        act = add_contact if step.action == "request" else remove_contact
        try:
            act(self.platform.state, actor, Obj({"handle": self.agent.handle}))
        except BandError:
            pass  # refused (already asked, no contact to remove): nothing happens
        finally:
            self.flush()

    def fail_calls(self, step: RestFault) -> None:
        if step.room is None:
            path = r"^/api/v1/agent/"
        else:
            room_id = self.room_id(step.room)
            if room_id is None:
                return
            path = rf"^/api/v1/agent/chats/{room_id}/"
        self.platform.faults.add("*", path, step.status, step.times, perform=step.after)

    def slow_post(self, number: int, seconds: float) -> None:
        path = self._posts(number)
        if path is not None:
            self.delays.add("POST", path, seconds)

    def stopped_rooms(self) -> list[str]:
        return [
            room.id
            for room in self.platform.state.rooms.values()
            if self.agent.id in room.stopped and self.agent.id in room.members
        ]


class _AgentRunner:
    """Serves the agent, one run at a time (a restart is a new run)."""

    def __init__(
        self,
        world: _World,
        factory: Callable[[], FrameworkAdapter],
        options: RunOptions,
        state_dir: Path | None,
        detector: LoopBlockDetector,
    ) -> None:
        self.world = world
        self.factory = factory
        self.options = options
        self.detector = detector
        self.config = attrs.evolve(
            options.config, state_dir=state_dir if state_dir is not None else IN_MEMORY
        )
        self.agent: Agent | None = None
        self.done: trio.Event | None = None
        self.error: BaseException | None = None
        self._joined: set[str] = set()
        self._census: Census | None = None
        self.runtime: InProcessRuntime | None = None

    def _on_joined(self, topic: str) -> None:
        trace = self.world.trace
        _, participants = room_topics(topic.partition(":")[2])
        if topic == participants and topic not in self._joined:
            self._joined.add(topic)
            trace.lives.append((trace.runs - 1, topic.partition(":")[2], trace.tick()))

    def _on_left(self, topic: str) -> None:
        self._joined.discard(topic)

    async def start(self, nursery: trio.Nursery) -> None:
        trace = self.world.trace
        run = trace.runs
        trace.runs += 1
        trace.started.append(0)
        self._joined = set()
        self._census = Census.take()
        try:
            inner = self.factory()
        except Exception as exc:
            self.error = exc
            return
        adapter = ObservedAdapter(inner, trace, run, self.detector, self.options.history_validator)
        world = self.world
        runtime = InProcessRuntime(
            world.platform,
            world.agent.id,
            world.agent.api_key,
            self.config,
            on_joined=self._on_joined,
            on_left=self._on_left,
            delays=world.delays,
        )
        jitter = self.options.jitter
        rng = random.Random() if jitter is None else _FixedDraws(jitter)
        agent = Agent(
            runtime,
            adapter,
            handle_signals=False,
            rng=rng,
            contact_config=self.options.contact_config,
        )
        self.agent = agent
        self.runtime = runtime
        done = trio.Event()
        self.done = done

        async def serve(task_status: trio.TaskStatus[None]) -> None:
            try:
                await agent.serve(task_status=task_status)
            except Exception as exc:
                self.error = exc
                task_status.started()
            finally:
                done.set()

        await nursery.start(serve)

    def drop_socket(self, seconds: float) -> None:
        """Lose the agent's connection for ``seconds`` (virtual)."""
        link = self.runtime.link if self.runtime is not None else None
        if link is not None and self.agent is not None:
            link.drop(seconds)

    async def stop(self) -> None:
        agent, done = self.agent, self.done
        if agent is None or done is None:
            return
        now = trio.current_time()
        for turn in self.world.trace.active():
            turn.request_cancel(now + self.config.shutdown_timeout, "shutdown")
        agent.request_shutdown()
        await done.wait()
        self.agent = None
        self.done = None
        census = self._census
        if census is not None:
            await trio.testing.wait_all_tasks_blocked()
            trace = self.world.trace
            trace.leftovers.extend((trace.runs - 1, what) for what in census.newcomers())


async def _play(
    scenario: Scenario,
    factory: Callable[[], FrameworkAdapter],
    options: RunOptions,
    trace: Trace,
    detector: LoopBlockDetector,
    state_dir: Path | None,
    holder: list[_World],
) -> None:
    world = _World(trace)
    holder.append(world)
    for _ in range(scenario.rooms):
        world.add_room()
    runner = _AgentRunner(world, factory, options, state_dir, detector)
    settle = trio.testing.wait_all_tasks_blocked
    async with trio.open_nursery() as nursery:
        await runner.start(nursery)
        await settle()
        for step in scenario.steps:
            if runner.error is not None:
                break
            await _apply(step, world, runner, nursery)
            await settle()
        if runner.error is None:
            stopped = world.stopped_rooms()
            if stopped:
                await world.control("play", None)
                await settle()
            await trio.sleep(options.settle_time)
            await runner.stop()
    trace.agent_error = runner.error


async def _apply(step: Step, world: _World, runner: _AgentRunner, nursery: trio.Nursery) -> None:
    trace = world.trace
    if isinstance(step, Post):
        world.post(step)
    elif isinstance(step, Seed):
        world.seed(step)
    elif isinstance(step, Join | Leave):
        room_id = world.room_id(step.room)
        if room_id is not None:
            who = world.principal(step.who).id
            if isinstance(step, Join):
                world.add_member(room_id, who)
            else:
                world.remove_member(room_id, who)
    elif isinstance(step, AddRoom):
        world.add_room()
    elif isinstance(step, RemoveAgent | DeleteRoom):
        room_id = world.room_id(step.room)
        if room_id is None or room_id not in world.platform.state.rooms:
            return
        if world.agent.id in world.platform.state.rooms[room_id].members:
            for turn in trace.active(room_id):
                turn.request_cancel(trio.current_time(), "removal")
        if isinstance(step, RemoveAgent):
            world.remove_member(room_id, world.agent.id)
        else:
            world.platform.state.delete_room(room_id)
            world.flush()
    elif isinstance(step, ReAddAgent):
        room_id = world.room_id(step.room)
        if room_id is not None:
            world.add_member(room_id, world.agent.id)
    elif isinstance(step, Interrupt):
        await world.control("interrupt", step.room)
    elif isinstance(step, Stop):
        await world.control("stop", step.room)
    elif isinstance(step, Play):
        await world.control("play", step.room)
    elif isinstance(step, ToolFailure):
        world.fail_posts(step.room, step.status, step.times)
    elif isinstance(step, RestFault):
        world.fail_calls(step)
    elif isinstance(step, SocketDrop):
        runner.drop_socket(step.seconds)
    elif isinstance(step, ContactChange):
        world.contact(step)
    elif isinstance(step, SlowTool):
        world.slow_post(step.room, step.seconds)
    elif isinstance(step, Wait):
        await trio.sleep(step.seconds)
    elif isinstance(step, Restart):
        await runner.stop()
        await trio.testing.wait_all_tasks_blocked()
        await runner.start(nursery)
    else:  # pragma: no cover - every step type is handled above
        raise TypeError(f"unknown step {step!r}")


_LOG_LINES = 200
"""Log records of the runtime kept per run (the last ones)."""


class _Keep(logging.Handler):
    def __init__(self, lines: deque[str]) -> None:
        super().__init__(logging.DEBUG)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")


@contextlib.contextmanager
def _captured_logs(lines: deque[str]) -> Iterator[None]:
    # Scenarios fail turns on purpose: keep the runtime's log lines in the
    # result instead of printing hundreds of expected tracebacks.
    logger = logging.getLogger("band_trio")
    handler = _Keep(lines)
    propagate, level = logger.propagate, logger.level
    logger.addHandler(handler)
    logger.propagate = False
    if level == logging.NOTSET or level > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        logger.setLevel(level)


def run_scenario(
    factory: Callable[[], FrameworkAdapter],
    scenario: Scenario,
    options: RunOptions | None = None,
) -> ScenarioResult:
    """Play ``scenario`` against adapters from ``factory``; check nothing.

    Call it from synchronous code (it runs its own ``trio.run``).

    Args:
        factory: builds the adapter (again after each restart).
        scenario: the steps.
        options: configuration and thresholds.

    Returns:
        The result, to check with invariants (see :func:`check_result`).

    Raises:
        BandConfigError: called from inside a Trio run (an async test).
    """
    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        pass  # not inside Trio: good
    else:
        raise BandConfigError(
            "the conformance kit starts its own trio.run for every scenario: "
            "call it from a synchronous test, not from inside Trio"
        )
    options = options if options is not None else RunOptions()
    trace = Trace(agent_id="", turn_timeout=options.config.turn_timeout)
    detector = LoopBlockDetector(trace, options.block_threshold)
    state_dir = Path(tempfile.mkdtemp(prefix="band-conformance-")) if scenario.restarts else None
    holder: list[_World] = []
    error: BaseException | None = None

    async def main() -> None:
        await _play(scenario, factory, options, trace, detector, state_dir, holder)

    try:
        with _captured_logs(trace.log):
            trio.run(
                main,
                clock=trio.testing.MockClock(autojump_threshold=options.autojump_threshold),
                instruments=[detector],
            )
    except Exception as exc:
        error = exc
    finally:
        if state_dir is not None:
            shutil.rmtree(state_dir, ignore_errors=True)
    if not holder:
        # The platform itself could not be set up: nothing to judge.
        raise error if error is not None else RuntimeError("the scenario did not run")
    return ScenarioResult(scenario, options, trace, holder[0].platform, error or trace.agent_error)
