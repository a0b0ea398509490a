"""What the kit observes while a scenario runs: the trace the invariants read.

The adapter under test is wrapped in an :class:`ObservedAdapter` (every hook
call, every turn, its outcome and timing) and every turn's tools in
:class:`ObservedTools` (every call, and whether the turn was already cancelled
or over when it was made). A Trio instrument (:class:`LoopBlockDetector`)
measures, in real time, each step of the tasks running adapter code.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, cast

import attrs
import trio

from band_trio import (
    AgentToolsProtocol,
    FrameworkAdapter,
    HistoryConversionError,
)
from band_trio.adapter import (
    AgentInput,
    AllRoomsCleanup,
    BackgroundWork,
    CustomToolSet,
    InterruptHandler,
    TurnJudging,
)

try:
    import resource

    _RUSAGE_THREAD: int | None = resource.RUSAGE_THREAD
except (ImportError, AttributeError):  # not Linux
    _RUSAGE_THREAD = None

__all__ = [
    "Block",
    "LoopBlockDetector",
    "ObservedAdapter",
    "ObservedTools",
    "ToolCall",
    "Trace",
    "TurnRecord",
]

Outcome = Literal["returned", "raised", "cancelled"]


@attrs.define(eq=False)
class ToolCall:
    """One call an adapter made through its turn's tools.

    Attributes:
        name: ``send_message``, ``send_event`` or ``tool:<name>``.
        at: virtual time of the call.
        after_cancel: the turn had been cancelled when the call was made.
        after_end: the turn's ``on_event`` had already returned.
        ok: the call returned (False: it raised).
        content: the text sent, for posts.
    """

    name: str
    at: float
    after_cancel: bool
    after_end: bool
    ok: bool = False
    content: str | None = None


@attrs.define(eq=False)
class TurnRecord:
    """One ``on_event`` call.

    Attributes:
        run: which agent run (0, then one more per restart).
        room_id: the room.
        message_id: the message being answered.
        sender_id: who sent it.
        started_at: virtual time the call began.
        order: the trace's order number of the call (see :meth:`Trace.tick`).
        ended_at: virtual time it ended (None while running).
        outcome: how it ended.
        error: what it raised (not ``Cancelled``).
        cancel_at: virtual time its cancellation was requested, if it was.
        cancel_reason: why (``interrupt``, ``stop``, ``timeout``, ``removal``, ``shutdown``).
        swallowed: it returned (or raised something else) while cancelled.
        tool_calls: every tool call it made.
        replies: texts of the messages it posted successfully.
        history_len: items in its raw history.
    """

    run: int
    room_id: str
    message_id: str
    sender_id: str
    started_at: float
    order: int = 0
    history_len: int = 0
    ended_at: float | None = None
    outcome: Outcome | None = None
    error: BaseException | None = None
    cancel_at: float | None = None
    cancel_reason: str | None = None
    swallowed: bool = False
    tool_calls: list[ToolCall] = attrs.Factory(list)
    replies: list[str] = attrs.Factory(list)

    def request_cancel(self, at: float, reason: str) -> None:
        """Note that the turn's cancellation was requested at ``at`` (the earliest wins)."""
        if self.ended_at is not None:
            return
        if self.cancel_at is None or at < self.cancel_at:
            self.cancel_at = at
            self.cancel_reason = reason

    def cancelled_by(self, now: float) -> bool:
        """Whether the turn's cancellation was due at ``now``."""
        return self.cancel_at is not None and now >= self.cancel_at


@attrs.define(eq=False)
class Block:
    """A step of adapter code that held the event loop too long."""

    seconds: float
    task: str
    room_id: str | None


@attrs.define(eq=False)
class ConversionRecord:
    """One history conversion the kit checked during a turn."""

    room_id: str
    items: tuple[Any, ...]
    error: BaseException | None
    problems: tuple[str, ...]


@attrs.define(eq=False)
class Trace:
    """Everything observed during one scenario run.

    Attributes:
        agent_id: the agent under test.
        turn_timeout: the runtime's turn timeout (virtual seconds).
        runs: agent runs (1 + restarts).
        started: ``on_started`` calls per run.
        cleanups: ``(run, room_id, order)`` for every ``on_cleanup`` call.
        lives: ``(run, room_id, order)`` for every room the runtime started serving.
        turns: every turn, in start order.
        concurrent: ``(room_id, message_id, other_message_id)`` for every turn
            that began while another turn of the same room was running.
        blocks: adapter steps that held the loop too long.
        conversions: history conversions checked.
        room_ids: the platform room id of every room number.
        names: platform id -> handle of everyone in the scenario.
        agent_error: the error that ended ``Agent.serve``, if one did.
        texts: message id -> its text as the adapter received it.
        log: the runtime's last log lines (INFO and above) during the run.
        start_durations: virtual seconds each ``on_started`` call took (the
            agent cannot serve meanwhile).
        leftovers: ``(run, what)`` for every thread or Trio task the adapter
            started during a run that was still alive once ``serve`` returned
            (after ``on_cleanup`` and ``cleanup_all``).
    """

    agent_id: str
    turn_timeout: float | None
    runs: int = 0
    started: list[int] = attrs.Factory(list)
    cleanups: list[tuple[int, str, float]] = attrs.Factory(list)
    lives: list[tuple[int, str, float]] = attrs.Factory(list)
    turns: list[TurnRecord] = attrs.Factory(list)
    concurrent: list[tuple[str, str, str]] = attrs.Factory(list)
    blocks: list[Block] = attrs.Factory(list)
    conversions: list[ConversionRecord] = attrs.Factory(list)
    room_ids: list[str] = attrs.Factory(list)
    names: dict[str, str] = attrs.Factory(dict)
    agent_error: BaseException | None = None
    texts: dict[str, str] = attrs.Factory(dict)
    log: deque[str] = attrs.Factory(lambda: deque(maxlen=200))
    start_durations: list[float] = attrs.Factory(list)
    leftovers: list[tuple[int, str]] = attrs.Factory(list)
    _seq: int = 0

    def message(self, message_id: str, fallback: str | None = None) -> str:
        """``message 'hello'``: a message named by the text the adapter saw
        (else ``fallback``, else its id)."""
        text = self.texts.get(message_id, fallback)
        if text is None:
            return f"message {message_id}"
        short = text if len(text) <= 40 else text[:37] + "..."
        return f"message {short!r}"

    def tick(self) -> int:
        """A number that orders observations made at the same virtual time."""
        self._seq += 1
        return self._seq

    def active(self, room_id: str | None = None) -> list[TurnRecord]:
        """Turns running now (of ``room_id``, or of every room)."""
        return [
            t
            for t in self.turns
            if t.ended_at is None and (room_id is None or t.room_id == room_id)
        ]

    def room_number(self, room_id: str) -> int | None:
        """The scenario's number for a platform room id."""
        try:
            return self.room_ids.index(room_id)
        except ValueError:
            return None

    def label(self, room_id: str) -> str:
        """``room 2`` for a platform room id."""
        number = self.room_number(room_id)
        return f"room {number}" if number is not None else f"room {room_id}"


def _voluntary_switches() -> int:
    """Times this thread gave up the CPU in a blocking call (Linux), else 0."""
    if _RUSAGE_THREAD is None:
        return 0
    return int(resource.getrusage(_RUSAGE_THREAD).ru_nvcsw)


def _only_cancelled(group: BaseExceptionGroup[BaseException]) -> bool:
    """Whether every exception in ``group`` (nested groups too) is ``trio.Cancelled``."""
    _, rest = group.split(trio.Cancelled)
    return rest is None


class LoopBlockDetector(trio.abc.Instrument):
    """A Trio instrument timing (in real time) the adapter's own synchronous stretches.

    A stretch starts when a task enters adapter code (or resumes in it) and
    ends at the task's next checkpoint, when it calls one of its tools, or when
    it leaves adapter code. The time spent inside a tool call (the runtime and
    the in-process platform, which stand for network I/O here) is not counted.

    A stretch over the threshold counts when it used that much CPU, or when it
    blocked in a system call (a voluntary context switch: ``time.sleep``, a
    blocking socket). On a loaded machine a process can also be preempted for
    that long; a stretch that only lost the CPU that way is not the adapter's
    doing and is not counted (Linux; elsewhere every long stretch counts).
    Neither is the time other threads of the process ran meanwhile: a
    stretch waits for the interpreter lock while an adapter's worker thread
    works, which is not a blocking call of the adapter's own.

    Args:
        trace: where blocks are recorded.
        threshold: seconds a single stretch may take.
        now: the real-time clock.
    """

    def __init__(
        self,
        trace: Trace,
        threshold: float,
        now: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.trace = trace
        self.threshold = threshold
        self._now = now
        self.adapter_tasks: dict[trio.lowlevel.Task, str | None] = {}
        self._measuring: trio.lowlevel.Task | None = None
        self._since = 0.0
        self._cpu_since = 0.0
        self._process_cpu_since = 0.0
        self._switches_since = 0

    def _start(self, task: trio.lowlevel.Task) -> None:
        self._measuring = task
        self._since = self._now()
        self._cpu_since = time.thread_time()
        self._process_cpu_since = time.process_time()
        self._switches_since = _voluntary_switches()

    def _finish(self, task: trio.lowlevel.Task) -> None:
        if self._measuring is not task:
            return
        self._measuring = None
        took = self._now() - self._since
        if took <= self.threshold:
            return
        cpu = time.thread_time() - self._cpu_since
        # CPU the process's other threads used meanwhile: a stretch also waits
        # while they hold the interpreter lock (an adapter's worker thread at
        # work, a thread being started, as trio.to_thread does); that wait is
        # the threads sharing one interpreter, not the adapter blocking.
        others = max(0.0, time.process_time() - self._process_cpu_since - cpu)
        blocked = _voluntary_switches() > self._switches_since and took - others > self.threshold
        if cpu > self.threshold or blocked or _RUSAGE_THREAD is None:
            self.trace.blocks.append(Block(took, task.name, self.adapter_tasks.get(task)))

    def enter(self, task: trio.lowlevel.Task, room_id: str | None) -> None:
        """``task`` starts running adapter code."""
        self.adapter_tasks[task] = room_id
        self._start(task)

    def leave(self, task: trio.lowlevel.Task) -> str | None:
        """``task`` stops running adapter code (returns the room it ran for)."""
        self._finish(task)
        return self.adapter_tasks.pop(task, None)

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task in self.adapter_tasks:
            self._start(task)
        else:
            self._measuring = None

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        self._finish(task)


class ObservedTools:
    """A turn's tools, recording every call (see :class:`ToolCall`)."""

    def __init__(
        self,
        inner: AgentToolsProtocol,
        turn: TurnRecord,
        detector: LoopBlockDetector | None = None,
    ) -> None:
        self._inner = inner
        self._turn = turn
        self._detector = detector

    @contextlib.contextmanager
    def _outside_adapter(self) -> Iterator[None]:
        # A tool call runs the runtime and the platform: not the adapter's time.
        detector = self._detector
        if detector is None:
            yield
            return
        task = trio.lowlevel.current_task()
        room_id = detector.leave(task)
        try:
            yield
        finally:
            detector.enter(task, room_id)

    def _begin(self, name: str, content: str | None = None) -> ToolCall:
        now = trio.current_time()
        turn = self._turn
        call = ToolCall(
            name=name,
            at=now,
            after_cancel=turn.cancelled_by(now),
            after_end=turn.ended_at is not None,
            content=content,
        )
        turn.tool_calls.append(call)
        return call

    async def send_message(
        self,
        content: str,
        mentions: Sequence[str],
        *,
        attachment_ids: Sequence[str] | None = None,
    ) -> Any:
        call = self._begin("send_message", content)
        with self._outside_adapter():
            result = await self._inner.send_message(
                content, mentions, attachment_ids=attachment_ids
            )
        call.ok = True
        if result is not None:
            self._turn.replies.append(content)
        return result

    async def send_event(
        self, content: str, message_type: str, metadata: Mapping[str, Any] | None = None
    ) -> Any:
        call = self._begin("send_event", content)
        with self._outside_adapter():
            result = await self._inner.send_event(content, message_type, metadata)
        call.ok = True
        return result

    async def execute_tool_call(
        self,
        name: str,
        args: Mapping[str, Any] | None,
        *,
        custom_tools: CustomToolSet | None = None,
    ) -> Any:
        content = (args or {}).get("content") if name == "band_send_message" else None
        call = self._begin(f"tool:{name}", content if isinstance(content, str) else None)
        with self._outside_adapter():
            result = await self._inner.execute_tool_call(name, args, custom_tools=custom_tools)
        call.ok = True
        if isinstance(content, str) and not getattr(result, "is_error", False):
            self._turn.replies.append(content)
        return result

    def get_tool_schemas(self, fmt: Any, **filters: Any) -> list[dict[str, Any]]:
        return self._inner.get_tool_schemas(fmt, **filters)

    def __getattr__(self, name: str) -> Any:
        # Anything else the real tools offer (helpers, attributes) passes through.
        return getattr(self._inner, name)


class ObservedAdapter:
    """Wraps the adapter under test; the runtime drives this object.

    It forwards every hook, records it in the trace, hands each turn an
    :class:`ObservedTools`, and keeps what the runtime reads from an adapter
    (``judges_turns``, ``on_interrupt``, ``cleanup_all``,
    ``run_background``) as the inner one has it.

    Args:
        inner: the adapter under test.
        trace: where observations go.
        run: the agent run this adapter serves.
        detector: the loop-block instrument (told which tasks run adapter code).
        validator: checks converted histories (None: conversion is only
            checked for raising).
    """

    def __init__(
        self,
        inner: FrameworkAdapter,
        trace: Trace,
        run: int,
        detector: LoopBlockDetector | None,
        validator: Callable[[Any], Sequence[str]] | None,
    ) -> None:
        self.inner = inner
        self._trace = trace
        self._run = run
        self._detector = detector
        self._validator = validator
        self.judges_turns = isinstance(inner, TurnJudging) and inner.judges_turns
        if isinstance(inner, InterruptHandler):
            self.on_interrupt = inner.on_interrupt
        if isinstance(inner, AllRoomsCleanup):
            self.cleanup_all = inner.cleanup_all
        if isinstance(inner, BackgroundWork):
            self.run_background = inner.run_background

    def _enter(self, room_id: str | None) -> trio.lowlevel.Task:
        task = trio.lowlevel.current_task()
        if self._detector is not None:
            self._detector.enter(task, room_id)
        return task

    def _exit(self, task: trio.lowlevel.Task) -> None:
        if self._detector is not None:
            self._detector.leave(task)

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        self._trace.started[self._run] += 1
        task = self._enter(None)
        began = trio.current_time()
        try:
            await self.inner.on_started(agent_name, agent_description)
        finally:
            self._exit(task)
            self._trace.start_durations.append(trio.current_time() - began)

    async def on_cleanup(self, room_id: str) -> None:
        self._trace.cleanups.append((self._run, room_id, self._trace.tick()))
        task = self._enter(room_id)
        try:
            await self.inner.on_cleanup(room_id)
        finally:
            self._exit(task)

    def _check_conversion(self, inp: AgentInput) -> None:
        converter = getattr(self.inner, "history_converter", None)
        if converter is None or not inp.history:
            return
        try:
            converted = inp.history.convert(converter)
        except Exception as exc:
            self._trace.conversions.append(ConversionRecord(inp.room_id, inp.history.raw, exc, ()))
            return
        problems = tuple(self._validator(converted)) if self._validator is not None else ()
        self._trace.conversions.append(
            ConversionRecord(inp.room_id, inp.history.raw, None, problems)
        )

    async def on_event(self, inp: AgentInput) -> None:
        trace = self._trace
        msg = inp.msg
        trace.texts[msg.id] = msg.content
        for other in trace.active(inp.room_id):
            trace.concurrent.append((inp.room_id, msg.id, other.message_id))
        turn = TurnRecord(
            run=self._run,
            room_id=inp.room_id,
            message_id=msg.id,
            sender_id=msg.sender_id,
            started_at=trio.current_time(),
            order=trace.tick(),
            history_len=len(inp.history),
        )
        if trace.turn_timeout is not None:
            turn.request_cancel(turn.started_at + trace.turn_timeout, "timeout")
        trace.turns.append(turn)
        # ObservedTools declares the recorded calls and passes every other tool
        # through to the real one (__getattr__), which a protocol check cannot see.
        observed_tools = cast(AgentToolsProtocol, ObservedTools(inp.tools, turn, self._detector))
        observed = attrs.evolve(inp, tools=observed_tools)
        task = self._enter(inp.room_id)
        cancelled = False
        try:
            self._check_conversion(inp)
            try:
                await self.inner.on_event(observed)
            except trio.Cancelled:
                cancelled = True
                raise
            except BaseException as exc:
                if isinstance(exc, BaseExceptionGroup) and _only_cancelled(exc):
                    # A nursery the adapter opened (its own, or a library's)
                    # propagates the cancellation of its tasks as a group of
                    # Cancelled; the turn's cancel scope catches that group
                    # like a bare Cancelled: the cancellation was honoured.
                    cancelled = True
                    raise
                turn.error = exc
                # Cancellation is level-triggered: if the turn's scope is
                # cancelled, this checkpoint raises, so the adapter caught a
                # Cancelled and turned it into something else.
                try:
                    await trio.lowlevel.checkpoint_if_cancelled()
                except trio.Cancelled:
                    turn.swallowed = True
                    cancelled = True
                    raise
                raise
            try:
                await trio.lowlevel.checkpoint_if_cancelled()
            except trio.Cancelled:
                turn.swallowed = True
                cancelled = True
                raise
        finally:
            self._exit(task)
            turn.ended_at = trio.current_time()
            if cancelled:
                turn.outcome = "cancelled"
            elif turn.error is not None:
                turn.outcome = "raised"
            else:
                turn.outcome = "returned"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def is_conversion_error(exc: BaseException | None) -> bool:
    """Whether a turn failed because its history converter raised."""
    return isinstance(exc, HistoryConversionError)
