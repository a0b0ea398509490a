"""The bridge loop's default executor: bounded, fair between runs, never holding exit.

Synchronous work on the loop (``loop.run_in_executor(None, ...)``,
``asyncio.to_thread``; LangGraph runs every synchronous node and edge function
that way) runs on :class:`BridgeExecutor` threads instead of asyncio's own
``ThreadPoolExecutor``, whose threads are never joined by the loop and hold
process exit until their work returns.

The rules:

* At most ``max_workers`` threads run jobs that are not stuck. A job is
  *stuck* once it has run ``stuck_after`` seconds; its thread then stops
  counting, and another thread may start, up to ``max_threads`` in all. So a
  job waits for a thread at most about ``stuck_after`` seconds, unless
  ``max_threads`` threads are busy.
* Jobs are grouped by their owner (the bridge passes the run that submitted
  them) and taken round-robin between owners; one owner runs at most
  ``max_workers`` jobs at once. One room's blocking nodes therefore never take
  every thread, and never make another room's jobs wait beyond the bound
  above.
* Threads are daemon threads: a thread blocked for good never holds process
  exit. :meth:`BridgeExecutor.shutdown` refuses new jobs, cancels queued ones
  and, with ``wait``, joins the threads up to a timeout; threads still busy
  then are left (and counted).
* Threads beyond ``max_workers`` end as soon as they find no job.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from typing import Any, ParamSpec, TypeVar

import attrs

__all__ = ["BridgeExecutor", "ExecutorStatistics"]

P = ParamSpec("P")
T = TypeVar("T")

_NO_OWNER: object = object()


@attrs.frozen
class ExecutorStatistics:
    """Counters of a :class:`BridgeExecutor` now."""

    threads: int
    busy: int
    queued: int
    stuck: int
    left: int


@attrs.define(eq=False)
class _Job:
    future: concurrent.futures.Future[Any]
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    owner: Hashable


@attrs.define(eq=False)
class _Worker:
    wakeup: threading.Condition
    signalled: bool = False
    thread: threading.Thread | None = None
    started: float | None = None  # monotonic time the current job started
    owner: Hashable = None


class BridgeExecutor(concurrent.futures.ThreadPoolExecutor):
    """A bounded, owner-fair thread pool of daemon threads (see the module docs).

    A ``ThreadPoolExecutor`` only by type (asyncio's ``set_default_executor``
    accepts nothing else): it schedules its own threads, and none of the base
    class's, which process exit would wait for, is ever started.

    Args:
        max_workers: threads running jobs that are not stuck, at most; also
            the most jobs one owner runs at once.
        max_threads: threads in all, stuck ones included.
        stuck_after: seconds after which a running job counts as stuck.
        name: the threads' name prefix.
        owner_of: called in :meth:`submit` (on the submitting thread) to name
            the job's owner; ``None`` groups the job with other unowned jobs.
    """

    def __init__(
        self,
        *,
        max_workers: int,
        max_threads: int,
        stuck_after: float,
        name: str,
        owner_of: Callable[[], Hashable | None] = lambda: None,
    ) -> None:
        if max_workers < 1 or max_threads < max_workers:
            raise ValueError(
                f"need 1 <= max_workers <= max_threads; got {max_workers}, {max_threads}"
            )
        if not stuck_after > 0:
            raise ValueError(f"stuck_after must be > 0; got {stuck_after!r}")
        super().__init__(max_workers=max_threads, thread_name_prefix=name)
        self.max_workers = max_workers
        self.max_threads = max_threads
        self.stuck_after = float(stuck_after)
        self._name = name
        self._owner_of = owner_of
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queues: OrderedDict[Hashable, deque[_Job]] = OrderedDict()
        self._queued = 0
        self._running: dict[Hashable, int] = {}
        self._workers: set[_Worker] = set()
        self._idle: list[_Worker] = []
        # Workers told to take a job (or just started) that have not taken one yet.
        self._waking = 0
        self._timer: threading.Timer | None = None
        self._shutdown = False
        self._left: set[threading.Thread] = set()
        self._counter = 0

    # ------------------------------------------------------------------ jobs

    def submit(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> concurrent.futures.Future[T]:
        """Queue ``fn(*args, **kwargs)``; its future is returned at once.

        Raises:
            RuntimeError: the executor is shut down.
        """
        owner = self._owner_of()
        key: Hashable = _NO_OWNER if owner is None else owner
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._cond:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._queues.setdefault(key, deque()).append(_Job(future, fn, args, kwargs, key))
            self._queued += 1
            self._dispatch_locked()
        return future

    def _runnable_locked(self) -> int:
        """Queued jobs that may start now (their owner is below its share)."""
        return sum(
            max(0, min(len(queue), self.max_workers - self._running.get(key, 0)))
            for key, queue in self._queues.items()
        )

    def _take_locked(self) -> _Job | None:
        for key, queue in self._queues.items():
            if self._running.get(key, 0) < self.max_workers:
                job = queue.popleft()
                self._queued -= 1
                if queue:
                    self._queues.move_to_end(key)  # round-robin between owners
                else:
                    del self._queues[key]
                self._running[key] = self._running.get(key, 0) + 1
                return job
        return None

    def _stuck_locked(self, now: float) -> int:
        return sum(
            1
            for w in self._workers
            if w.started is not None and now - w.started >= self.stuck_after
        )

    def _dispatch_locked(self) -> None:
        """Wake idle threads for the runnable jobs; start threads for the rest
        while the threads that are not stuck are fewer than ``max_workers``;
        else look again when the oldest running job turns stuck."""
        jobs = self._runnable_locked() - self._waking
        while jobs > 0 and self._idle:
            worker = self._idle.pop()
            worker.signalled = True
            self._waking += 1
            worker.wakeup.notify()
            jobs -= 1
        if jobs <= 0:
            return
        now = time.monotonic()
        stuck = self._stuck_locked(now)
        while (
            jobs > 0
            and len(self._workers) - stuck < self.max_workers
            and len(self._workers) < self.max_threads
        ):
            self._start_thread_locked()
            jobs -= 1
        if jobs <= 0 or len(self._workers) >= self.max_threads or self._timer is not None:
            return
        healthy = [
            w.started
            for w in self._workers
            if w.started is not None and now - w.started < self.stuck_after
        ]
        if healthy:
            timer = threading.Timer(min(healthy) + self.stuck_after - now, self._recheck)
            timer.daemon = True
            self._timer = timer
            timer.start()

    def _recheck(self) -> None:
        with self._cond:
            self._timer = None
            if not self._shutdown:
                self._dispatch_locked()

    def _start_thread_locked(self) -> None:
        self._counter += 1
        worker = _Worker(wakeup=threading.Condition(self._lock))
        thread = threading.Thread(
            target=self._work, args=(worker,), name=f"{self._name}_{self._counter}", daemon=True
        )
        worker.thread = thread
        self._workers.add(worker)
        # Counted as waking: it takes a job as soon as it runs.
        self._waking += 1
        worker.signalled = True
        thread.start()

    def _next_job(self, worker: _Worker) -> _Job | None:
        """The worker's next job, waiting while idle; None when it should end."""
        with self._cond:
            while True:
                if worker.signalled:
                    worker.signalled = False
                    self._waking -= 1
                job = self._take_locked()
                if job is not None:
                    worker.started, worker.owner = time.monotonic(), job.owner
                    if self._queued:
                        self._dispatch_locked()  # the timer, now that this one runs
                    return job
                now = time.monotonic()
                if (
                    self._shutdown
                    or len(self._workers) - self._stuck_locked(now) > self.max_workers
                ):
                    self._workers.discard(worker)
                    return None
                self._idle.append(worker)
                while not worker.signalled and not self._shutdown:
                    worker.wakeup.wait()
                if worker in self._idle:
                    self._idle.remove(worker)

    def _work(self, worker: _Worker) -> None:
        while (job := self._next_job(worker)) is not None:
            try:
                if job.future.set_running_or_notify_cancel():
                    try:
                        result = job.fn(*job.args, **job.kwargs)
                    except BaseException as exc:
                        job.future.set_exception(exc)
                    else:
                        job.future.set_result(result)
            finally:
                owner = job.owner
                del job
                with self._cond:
                    worker.started = worker.owner = None
                    left = self._running[owner] - 1
                    if left:
                        self._running[owner] = left
                    else:
                        del self._running[owner]
                    # A job of this owner may have waited for its share.
                    self._dispatch_locked()

    # ------------------------------------------------------------------ closing

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Refuse new jobs; ``cancel_futures`` cancels queued ones; ``wait``
        joins the threads (without a bound; see :meth:`close`)."""
        self._stop(cancel_futures)
        if wait:
            self.join(None)

    def _stop(self, cancel_futures: bool) -> None:
        with self._cond:
            self._shutdown = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if cancel_futures:
                for queue in self._queues.values():
                    for job in queue:
                        job.future.cancel()
                self._queues.clear()
                self._queued = 0
            for worker in self._idle:
                worker.wakeup.notify()

    def close(self, timeout: float) -> int:
        """Shut down, cancel the queued jobs and join the threads (real time).

        A running job is waited for until it ends or counts as stuck, and at
        most ``timeout`` seconds in all: a job already stuck is not waited
        for. Returns the threads still running (left behind: they are
        daemons, and :meth:`statistics` counts them while they live)."""
        self._stop(cancel_futures=True)
        return self.join(timeout, stuck_too=False)

    def join(self, timeout: float | None, *, stuck_too: bool = True) -> int:
        """Join the threads, for at most ``timeout`` seconds in all; with
        ``stuck_too`` false, a running job only until it counts as stuck."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            workers = [(w.thread, w) for w in self._workers if w.thread is not None]
        for thread, worker in workers:
            until = deadline
            started = worker.started
            if not stuck_too and started is not None:
                stuck_at = started + self.stuck_after
                until = stuck_at if until is None else min(until, stuck_at)
            thread.join(None if until is None else max(0.0, until - time.monotonic()))
        alive = [t for t, _ in workers if t.is_alive()]
        with self._cond:
            self._left.update(alive)
        return len(alive)

    # ------------------------------------------------------------------ counters

    def statistics(self) -> ExecutorStatistics:
        """Threads now, busy ones, queued jobs, stuck ones (busy for
        ``stuck_after`` or more), and threads left running by a shutdown."""
        now = time.monotonic()
        with self._cond:
            busy = [w.started for w in self._workers if w.started is not None]
            left = sum(1 for t in self._left if t.is_alive())
            return ExecutorStatistics(
                threads=len(self._workers),
                busy=len(busy),
                queued=self._queued,
                stuck=sum(1 for s in busy if now - s >= self.stuck_after),
                left=left,
            )
