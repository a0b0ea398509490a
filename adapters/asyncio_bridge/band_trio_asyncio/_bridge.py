"""Run asyncio code from Trio: one asyncio loop in a worker thread.

Frameworks such as LangGraph and PydanticAI are asyncio-only.
:class:`AsyncioBridge` owns one
asyncio event loop running in one worker thread, shared by every room of an
agent; a Trio task hands it a coroutine with :meth:`AsyncioBridge.run` and
waits for the outcome without blocking Trio. The coroutine receives a
:class:`TrioPortal`, through which asyncio code calls back into Trio (the
platform tools run there, on the agent's own HTTP client, inside the turn's
cancel scope).

Why a thread and not ``trio-asyncio``: measured on the same scripted graph the
thread costs no more per turn (see the package README), and a graph node that
blocks its loop (a synchronous HTTP call, CPU work) then stalls only other
graphs, never the Trio side: heartbeats, intake, other rooms' I/O and the
agent's shutdown keep running.

Guarantees:

* Exceptions keep their type in both directions: what the coroutine raises is
  re-raised in Trio as the same object; what a Trio function called through
  the portal raises is raised in asyncio as the same object. The nursery the
  portal's calls run in never shows: a cancelled run raises ``trio.Cancelled``
  and a failure raises the one error, never an ``ExceptionGroup``.
* Cancelling the Trio caller cancels the asyncio task and waits for it to end,
  at most ``cancel_grace`` seconds. A task that ignores cancellation is then
  abandoned: logged, counted (:meth:`AsyncioBridge.statistics`), its portal
  closed, and the caller's cancellation proceeds.
* Synchronous work the loop hands to its default executor
  (``run_in_executor(None, ...)``, ``asyncio.to_thread``) runs on the bridge's
  own bounded executor (:mod:`band_trio_asyncio._executor`): fair between
  runs, with a bound on how long one run's blocked threads can make another
  run's work wait, and daemon threads only.
* :meth:`AsyncioBridge.aclose` cancels every task, gives them the grace, stops
  the loop and joins the thread and the executor's threads. Only code that
  blocks a thread without ever returning (a task that never yields to the
  loop, a synchronous call that never ends) can keep a thread alive; that is
  logged and reported in :meth:`AsyncioBridge.statistics` (``stuck_threads``)
  while it lives, and the thread is a daemon, so it never holds process exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from types import TracebackType
from typing import Any, Final, NoReturn, TypeVar, cast

import attrs
import outcome
import trio

from band_trio import BandConfigError, BandError
from band_trio_asyncio._executor import BridgeExecutor

__all__ = [
    "DEFAULT_CANCEL_GRACE",
    "DEFAULT_STUCK_AFTER",
    "AsyncioBridge",
    "AsyncioTaskCancelledError",
    "BridgeClosedError",
    "BridgeStatistics",
    "TrioPortal",
]

logger = logging.getLogger("band_trio_asyncio")

T = TypeVar("T")

_LOOP_FACTORY: Callable[[], asyncio.AbstractEventLoop]
if sys.platform == "win32":
    _LOOP_FACTORY = asyncio.ProactorEventLoop
else:
    _LOOP_FACTORY = asyncio.SelectorEventLoop

DEFAULT_CANCEL_GRACE: Final = 2.0
"""Seconds a cancelled asyncio task gets to unwind before it is abandoned."""
DEFAULT_STUCK_AFTER: Final = 1.0
"""Seconds after which a synchronous job on the bridge's executor counts as
stuck: its thread stops counting against ``max_workers``."""
_CLOSE_JOIN: Final = 3.0
"""Real seconds ``aclose`` waits for the threads beyond the grace."""


class BridgeClosedError(BandError):
    """The bridge (or a run's portal) is closed: no new work is accepted.

    Raised in Trio by :meth:`AsyncioBridge.run` while the bridge is closing,
    and in asyncio by :meth:`TrioPortal.run` once the run that owns the portal
    has ended (an abandoned task calling back into a finished turn).
    """


class AsyncioTaskCancelledError(BandError):
    """The asyncio task was cancelled by asyncio code, not by the Trio caller."""


@attrs.frozen
class BridgeStatistics:
    """Counters of an :class:`AsyncioBridge`.

    Attributes:
        thread_running: the worker thread is alive.
        runs: coroutines started by :meth:`AsyncioBridge.run`.
        running: runs not finished yet.
        portal_calls: Trio calls made through portals.
        abandoned: runs whose task (or a task it started) did not end within
            the grace after a cancel.
        left_at_close: tasks still running when the bridge closed (after the
            grace): the loop was stopped with them unfinished.
        stuck_threads: threads stuck now: executor threads running one job
            for ``stuck_after`` seconds or more (those a close left behind
            included), and a loop thread that did not stop at close, while
            they live.
        executor_threads: the executor's threads now (busy or idle).
        executor_busy: executor threads running a job now.
        executor_queued: jobs waiting for an executor thread now.
    """

    thread_running: bool
    runs: int
    running: int
    portal_calls: int
    abandoned: int
    left_at_close: int
    stuck_threads: int
    executor_threads: int = 0
    executor_busy: int = 0
    executor_queued: int = 0


_UNFINISHED: list[asyncio.Task[Any]] = []
"""Tasks that ignored cancellation when their bridge closed (never resumed)."""

_CURRENT_RUN: contextvars.ContextVar[_Run] = contextvars.ContextVar("band_trio_asyncio_run")


def _task_factory(
    loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **kwargs: Any
) -> asyncio.Task[Any]:
    """The loop's task factory: a plain task, remembered by the run it belongs to."""
    task: asyncio.Task[Any] = asyncio.Task(coro, loop=loop, **kwargs)
    context = kwargs.get("context")
    run = context.get(_CURRENT_RUN) if context is not None else _CURRENT_RUN.get(None)
    if run is not None:
        run.children.add(task)
    return task


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _raise_one(group: BaseExceptionGroup[BaseException]) -> NoReturn:
    """Raise the one error of a nursery's group, else the group itself.

    Cancellations do not count when there is another error (the cancel scope
    that fired stays cancelled); a group of nothing but cancellations is
    raised as its first ``trio.Cancelled``, which the scope that fired
    catches. The error is raised as the same object, its ``__cause__`` and
    ``__context__`` as they were.
    """
    leaves = _leaves(group)
    real = [e for e in leaves if not isinstance(e, trio.Cancelled)]
    if len(real) > 1:
        raise group
    error = real[0] if real else leaves[0]
    context = error.__context__
    try:
        raise error
    finally:
        error.__context__ = context
        del error


def _notify(token: trio.lowlevel.TrioToken, fn: Callable[[], object]) -> None:
    """Run ``fn`` on the Trio thread; nothing when the Trio run has ended."""
    with contextlib.suppress(trio.RunFinishedError):
        token.run_sync_soon(fn)


def _call_in_loop(loop: asyncio.AbstractEventLoop, fn: Callable[..., object], *args: Any) -> None:
    """Run ``fn(*args)`` on the loop thread; nothing when the loop is closed."""
    with contextlib.suppress(RuntimeError):  # the loop is closed
        loop.call_soon_threadsafe(fn, *args)


def _set_result(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


def _cancel(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.cancel()


@attrs.define(eq=False)
class _PortalCall:
    afn: Callable[..., Awaitable[Any]]
    args: tuple[Any, ...]
    future: asyncio.Future[Any]
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)


class TrioPortal:
    """Calls into Trio from the asyncio side of one :meth:`AsyncioBridge.run`.

    The Trio functions run as tasks of the run's nursery: inside the caller's
    cancel scope, on the caller's Trio objects (for example the turn's tools).
    """

    def __init__(
        self,
        token: trio.lowlevel.TrioToken,
        nursery: trio.Nursery,
        loop: asyncio.AbstractEventLoop,
        on_call: Callable[[], None],
    ) -> None:
        self._token = token
        self._nursery = nursery
        self._loop = loop
        self._on_call = on_call
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once the owning run has ended."""
        return self._closed

    def close(self) -> None:
        """Refuse new calls (called on the Trio thread when the run ends)."""
        self._closed = True

    async def run(self, afn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``await afn(*args)`` on Trio and return its result (call from asyncio).

        Raises:
            BridgeClosedError: the run that owns this portal has ended.
            Exception: whatever ``afn`` raised, the same object.

        Cancellation:
            Cancelling the awaiting asyncio task cancels the Trio call. When the
            Trio side is cancelled (the turn), this raises
            ``asyncio.CancelledError``.
        """
        if self._closed:
            raise BridgeClosedError("the run that owns this portal has ended")
        future: asyncio.Future[T] = self._loop.create_future()
        call = _PortalCall(afn, args, future)
        try:
            self._token.run_sync_soon(self._start, call)
        except trio.RunFinishedError:
            raise BridgeClosedError("the Trio run has ended") from None
        try:
            return await future
        finally:
            if future.cancelled():
                # Stop the Trio side too (a no-op when it already ended).
                _notify(self._token, call.scope.cancel)

    def _start(self, call: _PortalCall) -> None:
        # On the Trio thread.
        if self._closed:
            _call_in_loop(
                self._loop,
                _set_exception,
                call.future,
                BridgeClosedError("the run that owns this portal has ended"),
            )
            return
        try:
            self._nursery.start_soon(self._call, call)
        except RuntimeError:  # the nursery is closed
            _call_in_loop(
                self._loop,
                _set_exception,
                call.future,
                BridgeClosedError("the run that owns this portal has ended"),
            )
            return
        self._on_call()

    async def _call(self, call: _PortalCall) -> None:
        settled = False
        try:
            with call.scope:
                value = await call.afn(*call.args)
                _call_in_loop(self._loop, _set_result, call.future, value)
                settled = True
        except Exception as exc:
            _call_in_loop(self._loop, _set_exception, call.future, exc)
            settled = True
        finally:
            if not settled:
                # Cancelled (by the asyncio side, or with the turn).
                _call_in_loop(self._loop, _cancel, call.future)


@attrs.define(eq=False)
class _Run:
    """One coroutine handed to the loop, with its outcome for the Trio side."""

    token: trio.lowlevel.TrioToken
    finished: trio.Event = attrs.field(factory=trio.Event)
    result: outcome.Outcome[Any] | None = None
    task: asyncio.Task[Any] | None = None
    cancel_requested: bool = False
    # Every task started in the run's context (LangGraph's node tasks too).
    children: weakref.WeakSet[asyncio.Task[Any]] = attrs.field(factory=weakref.WeakSet)

    def finish(self, result: outcome.Outcome[Any]) -> None:
        # On the Trio thread.
        self.result = result
        self.finished.set()


class AsyncioBridge:
    """One asyncio event loop in a worker thread, shared by an agent's rooms.

    The thread starts in :meth:`start` (or the first :meth:`run`, if it was
    not called), without blocking Trio, and stops in :meth:`aclose`; use the
    bridge as an async context manager, or let the adapter that owns it start
    and close it (an adapter starts it in ``on_started`` and closes it in
    ``cleanup_all``). After :meth:`aclose` the next :meth:`start` or
    :meth:`run` starts a new thread.

    The loop's default executor (``run_in_executor(None, ...)``,
    ``asyncio.to_thread``) is the bridge's own: at most ``max_workers``
    threads run jobs that are not stuck; a job running ``stuck_after`` seconds
    is stuck and its thread stops counting, so another may start, up to
    ``max_threads`` in all. Jobs are taken round-robin between runs, and one
    run runs at most ``max_workers`` jobs at once. So a synchronous step of
    one room waits for a thread at most about ``stuck_after`` seconds however
    long another room's steps block, unless ``max_threads`` threads are all
    busy. Its threads are daemons, joined by :meth:`aclose`.

    Args:
        cancel_grace: seconds a cancelled task gets to unwind before it is
            abandoned (and, at :meth:`aclose`, before the loop is stopped).
        thread_name: the worker thread's name (the executor's threads add a
            suffix).
        max_workers: executor threads running jobs that are not stuck (default
            ``min(32, CPUs + 4)``, as asyncio's own default executor).
        max_threads: executor threads in all (default ``4 * max_workers``).
        stuck_after: seconds after which a running job counts as stuck.

    Raises:
        BandConfigError: a value out of range.
    """

    def __init__(
        self,
        *,
        cancel_grace: float = DEFAULT_CANCEL_GRACE,
        thread_name: str = "band-trio-asyncio",
        max_workers: int | None = None,
        max_threads: int | None = None,
        stuck_after: float = DEFAULT_STUCK_AFTER,
    ) -> None:
        if not cancel_grace >= 0:
            raise BandConfigError(f"cancel_grace must be >= 0; got {cancel_grace!r}")
        if max_workers is None:
            max_workers = min(32, (os.cpu_count() or 1) + 4)
        if max_threads is None:
            max_threads = 4 * max_workers
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise BandConfigError(f"max_workers must be an integer >= 1; got {max_workers!r}")
        if (
            isinstance(max_threads, bool)
            or not isinstance(max_threads, int)
            or max_threads < max_workers
        ):
            raise BandConfigError(
                f"max_threads must be an integer >= max_workers ({max_workers}); "
                f"got {max_threads!r}"
            )
        if not stuck_after > 0:
            raise BandConfigError(f"stuck_after must be > 0; got {stuck_after!r}")
        self.cancel_grace = float(cancel_grace)
        self.max_workers = max_workers
        self.max_threads = max_threads
        self.stuck_after = float(stuck_after)
        self._thread_name = thread_name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._executor: BridgeExecutor | None = None
        # Executors of earlier loops whose threads a close left running.
        self._old_executors: list[BridgeExecutor] = []
        self._stuck_loops: list[threading.Thread] = []
        self._closing = False
        self._runs = 0
        self._running = 0
        self._portal_calls = 0
        self._abandoned = 0
        self._left_at_close = 0
        self._lock = threading.Lock()
        # Set while a task starts the thread (see _running_loop).
        self._starting: trio.Event | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(thread_running={self._thread_alive()})"

    async def __aenter__(self) -> AsyncioBridge:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with trio.CancelScope(shield=True):
            await self.aclose()

    def statistics(self) -> BridgeStatistics:
        """The bridge's counters now."""
        with self._lock:
            abandoned = self._abandoned
        executors = [e.statistics() for e in self._old_executors]
        if self._executor is not None:
            executors.append(self._executor.statistics())
        loops = sum(1 for t in self._stuck_loops if t.is_alive())
        return BridgeStatistics(
            thread_running=self._thread_alive(),
            runs=self._runs,
            running=self._running,
            portal_calls=self._portal_calls,
            abandoned=abandoned,
            left_at_close=self._left_at_close,
            stuck_threads=loops + sum(e.stuck for e in executors),
            executor_threads=sum(e.threads for e in executors),
            executor_busy=sum(e.busy for e in executors),
            executor_queued=sum(e.queued for e in executors),
        )

    def _thread_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _count_call(self) -> None:
        self._portal_calls += 1

    def _count_abandoned(self, n: int) -> None:
        with self._lock:
            self._abandoned += n

    # ------------------------------------------------------------------ the loop

    async def start(self) -> None:
        """Start the worker thread and its loop now, if not running already.

        The thread is started from a Trio worker thread: ``Thread.start``
        waits until the OS has scheduled the new thread, which would block the
        Trio loop for that long. :meth:`run` starts it when needed; calling
        this first (from an adapter's ``on_started``) keeps that wait out
        of the first turn. Idempotent.

        Raises:
            BridgeClosedError: the bridge is closing.
            RuntimeError: the OS refused a new thread.

        Cancellation:
            Once the thread is being started, this waits for it (a fraction of
            a millisecond normally) even when cancelled.
        """
        await self._running_loop()

    async def _running_loop(self) -> asyncio.AbstractEventLoop:
        while True:
            if self._closing:
                raise BridgeClosedError("the asyncio bridge is closing")
            starting = self._starting
            if starting is not None:
                # Another task is starting the thread: its outcome decides.
                await starting.wait()
                continue
            if self._loop is not None:
                return self._loop
            # Not asyncio.new_event_loop(): a library (trio-asyncio) may
            # replace the policy so that it refuses to run inside Trio.
            loop = _LOOP_FACTORY()
            loop.set_task_factory(cast(Any, _task_factory))
            executor = BridgeExecutor(
                max_workers=self.max_workers,
                max_threads=self.max_threads,
                stuck_after=self.stuck_after,
                name=f"{self._thread_name}-sync",
                owner_of=lambda: _CURRENT_RUN.get(None),
            )
            loop.set_default_executor(executor)
            thread = threading.Thread(
                target=self._thread_main, args=(loop,), name=self._thread_name, daemon=True
            )
            self._starting = starting = trio.Event()
            try:
                await trio.to_thread.run_sync(thread.start)
            except BaseException:
                loop.close()
                executor.close(0)
                raise
            else:
                self._loop, self._thread, self._executor = loop, thread, executor
            finally:
                self._starting = None
                starting.set()

    def _thread_main(self, loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            # With tasks left running, their async generators are theirs too:
            # closing those would resume code in the middle of its await.
            if not any(not t.done() for t in asyncio.all_tasks(loop)):
                try:
                    loop.run_until_complete(
                        asyncio.wait_for(loop.shutdown_asyncgens(), timeout=1.0)
                    )
                except Exception:
                    logger.warning("asyncio bridge: async generators did not close", exc_info=True)
            loop.close()

    # ------------------------------------------------------------------ runs

    async def run(self, fn: Callable[[TrioPortal], Coroutine[Any, Any, T]]) -> T:
        """Run the coroutine ``fn(portal)`` on the asyncio loop and return its result.

        ``fn`` is called on the loop thread, so the coroutine (and the context
        variables it sets) belongs to that loop.

        Raises:
            BridgeClosedError: the bridge is closing.
            AsyncioTaskCancelledError: the task was cancelled by asyncio code.
            RuntimeError: the thread was not running and the OS refused a new one.
            Exception: whatever the coroutine raised, the same object.

        Cancellation:
            Cancelling the caller cancels the asyncio task and waits for it to
            end, at most ``cancel_grace`` seconds (shielded); a task still
            running then is abandoned (logged, counted) and its portal closed.
            Trio calls it made through the portal are cancelled with the caller.
            The caller then sees ``trio.Cancelled`` itself, not in a group.
        """
        loop = await self._running_loop()
        run = _Run(trio.lowlevel.current_trio_token())
        self._runs += 1
        self._running += 1
        try:
            async with trio.open_nursery() as nursery:
                portal = TrioPortal(run.token, nursery, loop, self._count_call)
                try:
                    _call_in_loop(loop, self._start_task, loop, run, fn, portal)
                    await run.finished.wait()
                finally:
                    if not run.finished.is_set():
                        # Cancelled: the task may not call into Trio any more.
                        portal.close()
                        _call_in_loop(loop, self._cancel_task, run)
                        with trio.CancelScope(shield=True):
                            with trio.move_on_after(self.cancel_grace):
                                await run.finished.wait()
                        if not run.finished.is_set():
                            self._count_abandoned(1)
                            logger.warning(
                                "an asyncio task ignored cancellation for %.1fs; abandoned it",
                                self.cancel_grace,
                            )
                    portal.close()
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # The nursery is this method's own business: its caller sees the
            # one error (or Cancelled), never a group.
            _raise_one(group)
        finally:
            self._running -= 1
        assert run.result is not None
        return run.result.unwrap()  # type: ignore[no-any-return]

    def _start_task(
        self,
        loop: asyncio.AbstractEventLoop,
        run: _Run,
        fn: Callable[[TrioPortal], Coroutine[Any, Any, Any]],
        portal: TrioPortal,
    ) -> None:
        # On the loop thread.
        if run.cancel_requested:
            _notify(run.token, lambda: run.finish(outcome.Error(AsyncioTaskCancelledError())))
            return
        # A fresh context per run: context variables set by one turn are never
        # seen by another. It carries the run, so the task factory can tell
        # which run each task LangGraph starts belongs to.
        context = contextvars.Context()
        context.run(_CURRENT_RUN.set, run)
        try:
            task = loop.create_task(fn(portal), context=context)
        except Exception as exc:
            error = exc
            _notify(run.token, lambda: run.finish(outcome.Error(error)))
            return
        run.task = task

        def done(t: asyncio.Task[Any]) -> None:
            result: outcome.Outcome[Any]
            if t.cancelled():
                result = outcome.Error(AsyncioTaskCancelledError("the asyncio task was cancelled"))
            elif (exc := t.exception()) is not None:
                result = outcome.Error(exc)
            else:
                result = outcome.Value(t.result())
            leftovers = [c for c in run.children if c is not t and not c.done()]
            if not (run.cancel_requested and leftovers):
                _notify(run.token, lambda: run.finish(result))
                return
            # A cancelled graph may return while tasks it started (LangGraph
            # runs nodes in tasks of their own) still unwind, or ignore the
            # cancellation: the run ends when they do; the Trio side bounds
            # the wait with the grace.
            for child in leftovers:
                child.cancel()

            async def reap() -> None:
                await asyncio.wait(leftovers)
                _notify(run.token, lambda: run.finish(result))

            loop.create_task(reap(), context=contextvars.Context())

        task.add_done_callback(done)

    @staticmethod
    def _cancel_task(run: _Run) -> None:
        # On the loop thread.
        run.cancel_requested = True
        if run.task is not None:
            run.task.cancel()
        for child in list(run.children):
            child.cancel()

    # ------------------------------------------------------------------ closing

    async def aclose(self) -> None:
        """Cancel every task, stop the loop, join the thread and the executor's.

        Waits at most ``cancel_grace`` seconds for tasks to end (those still
        running are abandoned), then a few more seconds for the loop thread,
        then for synchronous jobs still running on the executor until they
        end or count as stuck, at most ``cancel_grace`` seconds (a job already
        stuck is not waited for; threads left are reported in
        ``stuck_threads`` while they live); real seconds, even under a virtual
        test clock. Idempotent; the bridge can be used again afterwards (new
        threads).

        Cancellation:
            Waiting is cancellable; the threads then stop on their own.
        """
        starting = self._starting
        if starting is not None:
            await starting.wait()  # a thread being started is stopped too
        loop, thread, executor = self._loop, self._thread, self._executor
        if loop is None or thread is None or executor is None:
            return
        self._closing = True
        try:
            _call_in_loop(loop, self._begin_shutdown, loop)
            # A real-time join in a worker thread: the thread works in real
            # time, so a Trio timeout (virtual under a test clock, which jumps
            # while Trio waits) would misjudge a thread still draining as
            # stuck. The drain takes at most the grace, closing the loop's
            # async generators at most one more second.
            await trio.to_thread.run_sync(
                thread.join, self.cancel_grace + _CLOSE_JOIN, abandon_on_cancel=True
            )
            if thread.is_alive():
                self._stuck_loops.append(thread)
                logger.error(
                    "the asyncio bridge thread did not stop: a task blocks its loop "
                    "without yielding; leaving it (daemon thread)"
                )
            left = await trio.to_thread.run_sync(
                executor.close, self.cancel_grace, abandon_on_cancel=True
            )
            if left:
                logger.error(
                    "closing the asyncio bridge: %d synchronous job(s) still running; "
                    "leaving their threads (daemon threads)",
                    left,
                )
        finally:
            executor.close(0)  # when cancelled above: no new jobs, none queued
            if executor.statistics().threads:
                self._old_executors.append(executor)
            self._loop = self._thread = self._executor = None
            self._closing = False

    def _begin_shutdown(self, loop: asyncio.AbstractEventLoop) -> None:
        # On the loop thread.
        grace = self.cancel_grace

        async def drain() -> None:
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            for task in tasks:
                task.cancel()
            if tasks:
                _, pending = await asyncio.wait(tasks, timeout=grace)
                if pending:
                    self._left_at_close += len(pending)
                    # Kept referenced for the life of the process: destroying
                    # a suspended task would resume its code (GeneratorExit)
                    # on a closed loop, where it can only fail in new ways.
                    _UNFINISHED.extend(pending)
                    logger.warning(
                        "closing the asyncio bridge: %d task(s) ignored cancellation; "
                        "stopping the loop with them unfinished",
                        len(pending),
                    )
            loop.stop()

        loop.create_task(drain())
