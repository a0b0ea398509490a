"""Keeping the long-lived state of many rooms out of the garbage collector's way.

CPython's cyclic garbage collector examines every tracked object of the oldest
generation on a full (generation 2) collection. An agent serving ten thousand
rooms holds several hundred thousand long-lived objects (rooms, their tasks,
schedules, rosters, cancel scopes), so one full collection stops the event loop
for hundreds of milliseconds, and a message that arrives meanwhile waits as
long. ``gc.freeze()`` moves every object tracked at that moment into a
permanent generation that no collection examines; later collections then only
look at what was allocated since, and a full pause shrinks with it.

The policy, for one agent (:class:`GcFreezePolicy`, synchronous, the ``gc``
functions injected so that it can be tested without touching the process):

* **Freeze once settled.** When start-up has settled (every room listed at
  start joined and its start-up reconcile done) and the agent serves at least
  ``AgentConfig.gc_freeze_min_rooms`` rooms, run one ``gc.collect()`` (so the
  garbage of start-up is not frozen with the rooms), then ``gc.freeze()``.
  0 turns the policy off.
* **Renew after a reconnect.** A reconnect reconciles every room again, which
  replaces much of each room's long-lived state (its loop's cancel scope, its
  roster from the new listing): the replaced objects go by reference
  counting, but the new ones are not frozen and full collections grow back.
  So at the first settle after a reconnect the agent unfreezes (what sits in
  cycles can go), collects (one full pause, inside a reconnect that already
  takes seconds at this scale) and freezes again.
* **Churn.** Reference counting still frees frozen objects, but cycles among
  them are never collected, and a removed room leaves some behind until an
  unfreeze. When more rooms have been removed since the freeze than a quarter
  of the rooms frozen, ``gc.unfreeze()`` makes them collectable again, and the
  next settle (at once when no reconcile is running) collects and freezes anew.
* **Freeze what survives each full collection.** Objects created after the
  freeze (a room's history, the cancel scope of its next wait) are not
  frozen, so every later full collection walks them all again, and after a
  freeze CPython starts a full collection easily: it runs one once the objects
  promoted since the last exceed a quarter of those that survived it, and the
  unfrozen survivors are few. So while frozen, a callback on ``gc.callbacks``
  freezes the survivors of every full collection at its end: the next one
  walks only what survived since. ``gc.freeze()`` only splices the collector's
  lists (constant time), so the callback costs next to nothing.
* **Bounded growth.** Frozen objects that later end up in reference cycles
  are freed only by an unfreeze. So when the frozen objects are more than
  :data:`GROWTH_FACTOR` times as many as right after the last full freeze
  (the one after a full ``gc.collect()``, when none of them was garbage), a
  renewal is due: at the next settle the agent unfreezes, collects and
  freezes again (the same full pause as a freeze, every holder of the process
  staying frozen). The frozen garbage therefore stays under a quarter of the
  objects frozen at the last full freeze, as long as the live objects do not
  shrink (removed rooms, the way they shrink, fall under the churn rule); live
  state that really grows costs one renewal per quarter of growth. Counting
  the frozen objects (``gc.get_freeze_count()``) walks all of them, tens of
  milliseconds at this scale, so the callback keeps an upper bound instead:
  the last exact count plus the survivors it froze since (counted as it
  freezes them, a walk of what the collection just walked); only when that
  bound passes the limit does it count exactly, and a renewal is due if the
  exact count passes it too. The callback is in ``gc.callbacks`` only while
  the process is frozen.
* **Exit.** When the agent stops serving (any way), it unfreezes if it froze.

``gc.freeze()`` acts on the whole process, not on one agent. The agents of one
process share a :class:`ProcessFreeze`, which records which of them froze
(the holders) and counts every unfreeze. The rule: an agent that unfreezes
(churn, exit) unfreezes for everybody, since a frozen object cannot be
released alone; every other holder sees the unfreeze count move and freezes
again at its next settle, which collects first and so frees the garbage of the
agent that left. A holder never keeps another agent's rooms frozen after that
agent left, so several agents in one process neither leak nor break each
other; the price is one extra full collection in each remaining holder. The
callback and the growth check are the process's too: one callback whatever
the number of agents, and a renewal, done by the first holder to settle,
keeps every holder frozen.

:func:`serve_gc_policy` is the Trio shell: it waits on the agent's state
changes for the settle signal, the churn threshold and a due renewal (the
agent's state changes with every event it handles, which is also what makes
the frozen objects grow), and applies the policy.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

import attrs

from band_trio._logging import get_logger
from band_trio.runtime.state_changes import StateChanges

__all__ = [
    "GROWTH_FACTOR",
    "GcFreezePolicy",
    "GcFreezeStatistics",
    "GcFunctions",
    "ProcessFreeze",
    "serve_gc_policy",
]

logger = get_logger("band_trio.runtime.gc_policy")

CHURN_FRACTION = 0.25
"""Rooms removed since the freeze, as a fraction of the rooms frozen, beyond
which the agent unfreezes (so the removed rooms' objects can be collected)."""

GROWTH_FACTOR = 1.25
"""Objects frozen, as a multiple of those frozen by the last full freeze,
beyond which the freeze is renewed (unfreeze, collect, freeze), so that
frozen garbage stays under a quarter of them."""

GcCallback = Callable[[Literal["start", "stop"], dict[str, int]], object]
"""A ``gc.callbacks`` entry: called with the phase and the collection's info."""


@attrs.frozen
class GcFunctions:
    """The ``gc`` functions the policy calls (the real ones by default)."""

    collect: Callable[[], int] = gc.collect
    freeze: Callable[[], None] = gc.freeze
    unfreeze: Callable[[], None] = gc.unfreeze
    freeze_count: Callable[[], int] = gc.get_freeze_count
    clock: Callable[[], float] = time.perf_counter
    """Measures how long the collection before a freeze took (for the log)."""
    callbacks: list[GcCallback] = gc.callbacks
    """Where the callback that freezes the survivors of full collections goes."""
    unfrozen: Callable[[], int] = lambda: len(gc.get_objects())
    """Objects tracked outside the permanent generation (right after a full
    collection: its survivors)."""


@attrs.frozen
class GcFreezeStatistics:
    """The garbage-collector freeze of one agent.

    Attributes:
        frozen: the agent's rooms are frozen now (out of every collection).
        frozen_objects: objects in the process's permanent generation now
            (``gc.get_freeze_count()``; the whole process, not one agent).
        freezes: times this agent froze so far.
        unfreezes: times this agent unfroze so far (churn, exit).
        refreezes: full collections whose survivors were frozen at their end,
            in the process, while it was frozen.
        renewals: times this agent renewed the freeze because the frozen
            objects grew (see ``GROWTH_FACTOR``; neither an unfreeze nor a
            freeze above).
    """

    frozen: bool = False
    frozen_objects: int = 0
    freezes: int = 0
    unfreezes: int = 0
    refreezes: int = 0
    renewals: int = 0


@attrs.frozen
class _Frozen:
    """What the process freeze reports after freezing."""

    collected: int
    objects: int
    seconds: float
    unfreezes: int
    grown: int = 0
    """The frozen count that made a renewal due (0 for a freeze)."""


class ProcessFreeze:
    """The process's one permanent generation, shared by every agent in it.

    Thread-safe: agents may run in separate ``trio.run`` calls in threads. The
    callback on ``gc.callbacks`` never waits for the lock: a collection that
    starts while the lock is held (inside a freeze, or in another thread) is
    left unfrozen, and the next one freezes what survives.

    Args:
        functions: the ``gc`` functions (the real ones when None).
    """

    def __init__(self, functions: GcFunctions | None = None) -> None:
        self.functions = functions if functions is not None else GcFunctions()
        self._lock = threading.Lock()
        self._holders: set[object] = set()
        self._unfreezes = 0
        self._frozen = False
        """Frozen now (the callback is in ``functions.callbacks``)."""
        self._frozen_at_freeze = 0
        """Objects frozen by the last full freeze."""
        self._frozen_bound = 0
        """At least the objects frozen now: the last exact count plus the
        survivors frozen since."""
        self._grown = 0
        """The frozen count that made a renewal due (0: none due)."""
        self._refreezes = 0
        self._callback: GcCallback = self._after_collection

    @property
    def unfreezes(self) -> int:
        """Unfreezes so far, by any agent (a holder compares it with its own)."""
        return self._unfreezes

    @property
    def holders(self) -> int:
        """Agents that froze and have not unfrozen or left since."""
        return len(self._holders)

    @property
    def refreezes(self) -> int:
        """Full collections whose survivors the callback froze, so far."""
        return self._refreezes

    @property
    def frozen_at_freeze(self) -> int:
        """Objects frozen by the last full freeze (collect, then freeze)."""
        return self._frozen_at_freeze

    @property
    def renewal_due(self) -> bool:
        """Frozen, and the objects frozen passed ``GROWTH_FACTOR`` times
        those of the last full freeze (cheap: read on every state change)."""
        return self._grown > 0

    def holds(self, holder: object) -> bool:
        """True when ``holder`` froze and has not unfrozen or left since."""
        return holder in self._holders

    def freeze(self, holder: object) -> _Frozen:
        """Collect, then freeze everything tracked, on behalf of ``holder``."""
        with self._lock:
            done = self._collect_and_freeze()
            self._holders.add(holder)
            return done

    def renew(self, holder: object) -> _Frozen | None:
        """Unfreeze, collect and freeze again when a renewal is due and
        ``holder`` holds the freeze; every holder stays frozen.

        Returns:
            What was frozen, or None when there was nothing to do (another
            holder renewed first).
        """
        with self._lock:
            grown = self._grown
            if not grown or not self._frozen or holder not in self._holders:
                return None
            self.functions.unfreeze()
            done = self._collect_and_freeze()
            return attrs.evolve(done, grown=grown)

    def unfreeze(self, holder: object) -> bool:
        """Unfreeze everything if ``holder`` holds a freeze; every other holder
        then freezes again at its next settle.

        Returns:
            True when it unfroze.
        """
        with self._lock:
            if holder not in self._holders:
                return False
            self._holders.discard(holder)
            self.functions.unfreeze()
            self._unfreezes += 1
            self._frozen = False
            self._grown = 0
            self._remove_callback()
            return True

    def _collect_and_freeze(self) -> _Frozen:
        # Under the lock: the callback skips the collection made here.
        fn = self.functions
        started = fn.clock()
        collected = fn.collect()
        seconds = fn.clock() - started
        fn.freeze()
        frozen = fn.freeze_count()
        self._frozen_at_freeze = self._frozen_bound = frozen
        self._grown = 0
        if not self._frozen:
            self._frozen = True
            fn.callbacks.append(self._callback)
        return _Frozen(collected, frozen, seconds, self._unfreezes)

    def _remove_callback(self) -> None:
        callbacks = self.functions.callbacks
        if self._callback in callbacks:
            callbacks.remove(self._callback)

    def _after_collection(self, phase: str, info: dict[str, Any]) -> None:
        """At the end of a full collection while frozen: freeze its survivors
        and check the growth of the frozen objects. Runs inside the collector,
        in whatever thread allocated: never blocks, never raises."""
        if phase != "stop" or info.get("generation") != 2:
            return
        if not self._lock.acquire(blocking=False):
            return
        try:
            if not self._frozen:
                return
            fn = self.functions
            survivors = fn.unfrozen()
            fn.freeze()
            self._refreezes += 1
            self._frozen_bound += survivors
            limit = self._frozen_at_freeze * GROWTH_FACTOR
            if self._frozen_bound > limit and not self._grown:
                # Some frozen objects may have gone since: count exactly.
                self._frozen_bound = fn.freeze_count()
                if self._frozen_bound > limit:
                    self._grown = self._frozen_bound
        except Exception:
            # Raised from a collector callback it would only reach
            # sys.unraisablehook; the next full collection tries again.
            pass
        finally:
            self._lock.release()


_PROCESS = ProcessFreeze()
"""The freeze of this process, shared by the agents that do not bring their own."""


class GcFreezePolicy:
    """When one agent freezes and unfreezes the garbage collector (sans-io).

    Args:
        min_rooms: freeze only with at least this many rooms served; 0 never
            freezes.
        process: the process-wide freeze (shared by all agents of the process
            when None).

    Raises:
        ValueError: ``min_rooms`` is negative.
    """

    def __init__(self, min_rooms: int, process: ProcessFreeze | None = None) -> None:
        if min_rooms < 0:
            raise ValueError(f"min_rooms must be >= 0, got {min_rooms}")
        self.min_rooms = min_rooms
        self._process = process if process is not None else _PROCESS
        self._unfreezes_seen: int | None = None
        """The process's unfreeze count when this agent froze (None: not frozen)."""
        self._frozen_rooms = 0
        self._removed_at_freeze = 0
        self._epoch_at_freeze = 0
        self._freezes = 0
        self._unfreezes = 0
        self._renewals = 0

    @property
    def enabled(self) -> bool:
        """The policy may freeze at all (``min_rooms`` > 0)."""
        return self.min_rooms > 0

    @property
    def frozen(self) -> bool:
        """The objects frozen by this agent are still frozen (nobody unfroze since)."""
        return (
            self._unfreezes_seen is not None
            and self._unfreezes_seen == self._process.unfreezes
            and self._process.holds(self)
        )

    def wants_freeze(self) -> bool:
        """Freezing at the next settle may be due (enabled and not frozen)."""
        return self.enabled and not self.frozen

    def churned(self, removed: int) -> bool:
        """More rooms were removed since the freeze than a quarter of those frozen.

        Args:
            removed: rooms removed so far (a running count of the agent's).
        """
        return (
            self.frozen and removed - self._removed_at_freeze > self._frozen_rooms * CHURN_FRACTION
        )

    def wants_renewal(self, epoch: int) -> bool:
        """Frozen, and a reconnect happened since (``epoch`` moved).

        Args:
            epoch: the agent's reconnect count (any counter bumped by every
                reconnect that reconciles the rooms again).
        """
        return self.frozen and epoch != self._epoch_at_freeze

    def wants_growth_renewal(self) -> bool:
        """Frozen, and the objects frozen passed ``GROWTH_FACTOR`` times those
        of the last full freeze (cheap, as :meth:`wants_freeze`)."""
        return self._process.renewal_due and self.frozen

    def on_grown(self) -> bool:
        """At a settle, with the frozen objects grown: unfreeze, collect and
        freeze again (the frozen garbage goes; every holder of the process
        stays frozen).

        Returns:
            True when it renewed (False when not due, or another agent of the
            process renewed first).
        """
        if not self.wants_growth_renewal():
            return False
        base = self._process.frozen_at_freeze
        done = self._process.renew(self)
        if done is None:
            return False
        self._renewals += 1
        logger.info(
            "garbage collector frozen again, the objects frozen having grown from %d to %d: "
            "%d objects frozen, %d collected first in %.0f ms",
            base,
            done.grown,
            done.objects,
            done.collected,
            done.seconds * 1000,
        )
        return True

    def on_settled(self, rooms: int, removed: int, epoch: int = 0) -> bool:
        """Start-up (or the reconciles after a reconnect or an added room) settled:
        collect and freeze when due, or renew the freeze after a reconnect.

        Args:
            rooms: rooms served now.
            removed: rooms removed so far (the churn count starts from it).
            epoch: the reconnect count now (see :meth:`wants_renewal`).

        Returns:
            True when it froze.
        """
        renewing = self.wants_renewal(epoch)
        if renewing:
            self._unfreeze()
        if not self.wants_freeze() or rooms < self.min_rooms:
            return False
        done = self._process.freeze(self)
        self._unfreezes_seen = done.unfreezes
        self._frozen_rooms = rooms
        self._removed_at_freeze = removed
        self._epoch_at_freeze = epoch
        self._freezes += 1
        logger.info(
            "garbage collector %s with %d rooms: %d objects frozen, %d collected first in %.0f ms",
            "frozen again after a reconnect" if renewing else "frozen",
            rooms,
            done.objects,
            done.collected,
            done.seconds * 1000,
        )
        return True

    def on_removed(self, removed: int) -> bool:
        """Rooms were removed: unfreeze when the churn threshold is passed.

        Args:
            removed: rooms removed so far.

        Returns:
            True when it unfroze.
        """
        if not self.churned(removed):
            return False
        count = removed - self._removed_at_freeze
        self._unfreeze()
        logger.info(
            "garbage collector unfrozen: %d of the %d rooms frozen were removed",
            count,
            self._frozen_rooms,
        )
        return True

    def close(self) -> None:
        """The agent stops serving: unfreeze if it holds a freeze (idempotent)."""
        if self._unfreeze():
            logger.info("garbage collector unfrozen: the agent stopped serving")

    def _unfreeze(self) -> bool:
        self._unfreezes_seen = None
        if not self._process.unfreeze(self):
            return False
        self._unfreezes += 1
        return True

    def statistics(self) -> GcFreezeStatistics:
        """The policy's counters now."""
        return GcFreezeStatistics(
            frozen=self.frozen,
            frozen_objects=self._process.functions.freeze_count(),
            freezes=self._freezes,
            unfreezes=self._unfreezes,
            refreezes=self._process.refreezes,
            renewals=self._renewals,
        )


async def serve_gc_policy(
    policy: GcFreezePolicy,
    changes: StateChanges,
    *,
    settled: Callable[[], bool],
    rooms: Callable[[], int],
    removed: Callable[[], int],
    epoch: Callable[[], int] = lambda: 0,
) -> None:
    """Apply ``policy`` until cancelled, then unfreeze if it froze.

    Start it once the agent's start-up rooms are joined: from then on
    ``settled()`` turning true means their reconciles are done.

    Args:
        policy: the agent's policy.
        changes: the agent's state changes (re-checked on each).
        settled: no start-up or reconnect reconcile is waiting or running (cheap:
            it is checked on every state change).
        rooms: rooms served now (called only when settled).
        removed: rooms removed so far (cheap, as ``settled``).
        epoch: bumped by every reconnect (cheap, as ``settled``).

    Cancellation: the way it ends; the unfreeze runs on the way out.
    """
    try:
        if not policy.enabled:
            return
        while True:
            await changes.wait_for(
                lambda: (
                    (
                        (
                            policy.wants_freeze()
                            or policy.wants_renewal(epoch())
                            or policy.wants_growth_renewal()
                        )
                        and settled()
                    )
                    or policy.churned(removed())
                )
            )
            if policy.on_removed(removed()):
                changes.notify()
            if (policy.wants_freeze() or policy.wants_renewal(epoch())) and settled():
                if policy.on_settled(rooms(), removed(), epoch()):
                    changes.notify()
                else:
                    # Too few rooms: the count can only grow by a room being
                    # added, which reconciles, so look again after the next reconcile.
                    await changes.wait_for(lambda: not settled())
            elif policy.wants_growth_renewal() and settled() and policy.on_grown():
                changes.notify()
    finally:
        policy.close()
