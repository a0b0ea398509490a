"""The garbage-collector freeze policy, with the ``gc`` functions replaced by a
model of the generations: the threshold, churn, exit, the survivors of full
collections frozen, the renewal when the frozen objects grew, and two agents
sharing one process."""

from __future__ import annotations

import logging
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from band_trio.errors import BandConfigError
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.gc_policy import (
    GROWTH_FACTOR,
    GcCallback,
    GcFreezePolicy,
    GcFreezeStatistics,
    GcFunctions,
    ProcessFreeze,
    serve_gc_policy,
)
from band_trio.runtime.state_changes import StateChanges


@attrs.define
class FakeGc:
    """Tracked objects split into collectable and frozen (some of the frozen
    ones garbage, freed only after an unfreeze), the collector's callbacks, and
    every call made."""

    tracked: int = 0
    garbage: int = 0
    frozen: int = 0
    frozen_garbage: int = 0
    counts: int = 0
    """Exact counts of the frozen objects (each walks all of them)."""
    calls: list[str] = attrs.Factory(list)
    callbacks: list[GcCallback] = attrs.Factory(list)

    def collect(self) -> int:
        self.calls.append("collect")
        return self._full_collection()

    def automatic_collection(self, generation: int = 2) -> None:
        """A collection the interpreter starts by itself (callbacks run)."""
        self.calls.append(f"automatic collection {generation}")
        if generation == 2:
            self._full_collection()
        else:
            self._run_callbacks("start", generation, 0)
            self._run_callbacks("stop", generation, 0)

    def _full_collection(self) -> int:
        # As gc.collect() does: the callbacks run around every collection.
        self._run_callbacks("start", 2, 0)
        collected, self.garbage = self.garbage, 0
        self.tracked -= collected
        self._run_callbacks("stop", 2, collected)
        return collected

    def _run_callbacks(self, phase: Any, generation: int, collected: int) -> None:
        info = {"generation": generation, "collected": collected, "uncollectable": 0}
        for callback in list(self.callbacks):
            callback(phase, info)

    def freeze(self) -> None:
        self.calls.append("freeze")
        self.frozen += self.tracked
        self.frozen_garbage += self.garbage
        self.tracked = self.garbage = 0

    def unfreeze(self) -> None:
        self.calls.append("unfreeze")
        self.tracked += self.frozen
        self.garbage += self.frozen_garbage
        self.frozen = self.frozen_garbage = 0

    def freeze_count(self) -> int:
        self.counts += 1
        return self.frozen

    def unfrozen(self) -> int:
        return self.tracked

    def allocate(self, live: int, garbage: int = 0) -> None:
        self.tracked += live + garbage
        self.garbage += garbage

    def abandon(self, frozen: int) -> None:
        """Frozen objects become cyclic garbage: only an unfreeze lets them go."""
        self.frozen_garbage += frozen

    def release(self, frozen: int) -> None:
        """Frozen objects freed by reference counting."""
        self.frozen -= frozen

    def functions(self) -> GcFunctions:
        return GcFunctions(
            collect=self.collect,
            freeze=self.freeze,
            unfreeze=self.unfreeze,
            freeze_count=self.freeze_count,
            clock=lambda: 0.0,
            callbacks=self.callbacks,
            unfrozen=self.unfrozen,
        )


def make(min_rooms: int = 10) -> tuple[FakeGc, ProcessFreeze, GcFreezePolicy]:
    fake = FakeGc()
    process = ProcessFreeze(fake.functions())
    return fake, process, GcFreezePolicy(min_rooms, process)


def test_below_the_threshold_nothing_is_frozen() -> None:
    fake, _, policy = make(min_rooms=10)
    fake.allocate(500)
    assert not policy.on_settled(rooms=9, removed=0)
    assert fake.calls == []
    assert policy.statistics() == GcFreezeStatistics()


def test_at_the_threshold_it_collects_then_freezes_once() -> None:
    fake, _, policy = make(min_rooms=10)
    fake.allocate(1000, garbage=200)
    assert policy.on_settled(rooms=10, removed=0)
    # The start-up garbage is collected, not frozen.
    assert fake.calls == ["collect", "freeze"]
    assert (fake.frozen, fake.garbage) == (1000, 0)
    assert policy.statistics() == GcFreezeStatistics(
        frozen=True, frozen_objects=1000, freezes=1, unfreezes=0
    )
    # Settling again (a reconnect's reconciles) freezes nothing more.
    assert not policy.on_settled(rooms=10, removed=0)
    assert fake.calls == ["collect", "freeze"]


def test_zero_turns_it_off() -> None:
    fake, _, policy = make(min_rooms=0)
    assert not policy.enabled
    assert not policy.wants_freeze()
    assert not policy.on_settled(rooms=100_000, removed=0)
    assert fake.calls == []


def test_a_negative_threshold_is_refused() -> None:
    with pytest.raises(ValueError, match="min_rooms"):
        GcFreezePolicy(-1, ProcessFreeze(FakeGc().functions()))


def test_churn_beyond_a_quarter_unfreezes_and_the_next_settle_freezes_again() -> None:
    fake, _, policy = make(min_rooms=10)
    fake.allocate(1000)
    policy.on_settled(rooms=100, removed=3)
    # 25 removed since the freeze: a quarter, not more.
    assert not policy.churned(28)
    assert not policy.on_removed(28)
    assert policy.frozen
    # One more: the removed rooms' objects must become collectable.
    assert policy.churned(29)
    assert policy.on_removed(29)
    assert fake.calls == ["collect", "freeze", "unfreeze"]
    assert (fake.frozen, policy.frozen, policy.wants_freeze()) == (0, False, True)
    assert not policy.on_removed(40)  # already unfrozen
    # The removed rooms' state is garbage now; the next settle collects it.
    fake.garbage = 300
    assert policy.on_settled(rooms=75, removed=29)
    assert fake.calls == ["collect", "freeze", "unfreeze", "collect", "freeze"]
    assert fake.frozen == 700
    stats = policy.statistics()
    assert (stats.frozen, stats.freezes, stats.unfreezes) == (True, 2, 1)
    # The churn count starts again from the new freeze (a quarter of 75 rooms).
    assert not policy.churned(29 + 18)
    assert policy.churned(29 + 19)


def test_the_first_settle_after_a_reconnect_renews_the_freeze() -> None:
    fake, _, policy = make(min_rooms=10)
    fake.allocate(1000)
    policy.on_settled(rooms=10, removed=0, epoch=0)
    assert not policy.wants_renewal(0)
    # The reconnect's reconciles replaced part of the rooms' state: new objects
    # to freeze, and replaced ones (garbage, but frozen) to let go.
    fake.allocate(300)
    fake.garbage = 300  # as many frozen ones were replaced
    assert policy.wants_renewal(1)
    assert policy.on_settled(rooms=10, removed=0, epoch=1)
    assert fake.calls == ["collect", "freeze", "unfreeze", "collect", "freeze"]
    assert (fake.frozen, fake.tracked, fake.garbage) == (1000, 0, 0)
    assert not policy.wants_renewal(1)
    stats = policy.statistics()
    assert (stats.frozen, stats.freezes, stats.unfreezes) == (True, 2, 1)
    # Renewing with too few rooms left only unfreezes.
    assert not policy.on_settled(rooms=9, removed=0, epoch=2)
    assert fake.calls[-1] == "unfreeze"
    assert not policy.frozen


def test_exit_unfreezes_once_and_only_if_it_froze() -> None:
    fake, _, policy = make(min_rooms=10)
    policy.close()
    assert fake.calls == []
    fake.allocate(1000)
    policy.on_settled(rooms=10, removed=0)
    policy.close()
    policy.close()
    assert fake.calls == ["collect", "freeze", "unfreeze"]
    assert (fake.frozen, fake.tracked) == (0, 1000)
    assert policy.statistics() == GcFreezeStatistics(
        frozen=False, frozen_objects=0, freezes=1, unfreezes=1
    )


def test_two_agents_the_one_leaving_unfreezes_and_the_other_freezes_again() -> None:
    fake = FakeGc()
    process = ProcessFreeze(fake.functions())
    first = GcFreezePolicy(10, process)
    second = GcFreezePolicy(10, process)
    fake.allocate(1000)
    first.on_settled(rooms=10, removed=0)
    fake.allocate(500)
    second.on_settled(rooms=20, removed=0)
    assert (first.frozen, second.frozen, process.holders) == (True, True, 2)
    assert fake.frozen == 1500

    # The first leaves: its rooms must not stay frozen for as long as the
    # second runs, so everything is unfrozen ...
    first.close()
    assert fake.calls[-1] == "unfreeze"
    assert (first.frozen, second.frozen, process.holders) == (False, False, 1)
    # ... and the second freezes again at its next settle, collecting the
    # first agent's garbage before it does.
    fake.garbage = 1000
    assert second.wants_freeze()
    assert second.on_settled(rooms=20, removed=0)
    assert (second.frozen, fake.frozen) == (True, 500)
    # A policy that never froze leaves nobody's freeze.
    bystander = GcFreezePolicy(10, process)
    bystander.close()
    assert second.frozen
    second.close()
    assert (fake.frozen, process.holders) == (0, 0)
    assert fake.calls.count("unfreeze") == 2


def test_another_agents_churn_unfreezes_this_one_too() -> None:
    fake = FakeGc()
    process = ProcessFreeze(fake.functions())
    first = GcFreezePolicy(10, process)
    second = GcFreezePolicy(10, process)
    first.on_settled(rooms=100, removed=0)
    second.on_settled(rooms=100, removed=0)
    assert first.on_removed(26)
    assert not second.frozen
    assert not second.churned(1000)  # nothing of its own to unfreeze
    assert second.on_settled(rooms=100, removed=0)
    assert first.on_settled(rooms=74, removed=26)
    assert first.frozen
    assert second.frozen


def test_while_frozen_the_survivors_of_each_full_collection_are_frozen_too() -> None:
    fake, process, policy = make(min_rooms=10)
    fake.allocate(1000)
    # Not frozen: no callback, a full collection freezes nothing.
    fake.automatic_collection()
    assert (fake.callbacks, fake.frozen, fake.tracked) == ([], 0, 1000)
    policy.on_settled(rooms=10, removed=0)
    assert len(fake.callbacks) == 1
    # The freeze's own collection is not one to freeze after: the callback
    # skipped it, so exactly one freeze was made.
    assert fake.calls == ["automatic collection 2", "collect", "freeze"]
    assert process.refreezes == 0

    # Objects created since: young collections leave them alone ...
    fake.allocate(200, garbage=50)
    fake.automatic_collection(generation=0)
    fake.automatic_collection(generation=1)
    assert (fake.frozen, fake.tracked) == (1000, 250)
    # ... a full collection frees their garbage, and its survivors are frozen,
    # so the next full collection walks none of them.
    fake.automatic_collection()
    assert fake.calls[3:] == [
        "automatic collection 0",
        "automatic collection 1",
        "automatic collection 2",
        "freeze",
    ]
    assert (fake.frozen, fake.tracked, fake.garbage) == (1200, 0, 0)
    fake.allocate(30)
    fake.automatic_collection()
    assert (fake.frozen, fake.tracked) == (1230, 0)
    assert policy.statistics() == GcFreezeStatistics(
        frozen=True, frozen_objects=1230, freezes=1, unfreezes=0, refreezes=2, renewals=0
    )
    # Neither a renewal (1230 is under 1000 x 1.25) nor a new unfreeze.
    assert not policy.wants_growth_renewal()
    assert not process.renewal_due


def test_frozen_objects_grown_past_the_factor_are_renewed_and_the_garbage_freed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="band_trio.runtime.gc_policy")
    fake, process, policy = make(min_rooms=10)
    fake.allocate(1000)
    policy.on_settled(rooms=10, removed=0)
    assert process.frozen_at_freeze == 1000
    counts = fake.counts
    # Frozen objects turning into cycles: no collection can free them.
    fake.abandon(150)
    fake.allocate(250)
    fake.automatic_collection()
    # Exactly the factor: not beyond it, and not even counted exactly.
    assert fake.frozen == 1000 * GROWTH_FACTOR
    assert not policy.wants_growth_renewal()
    assert fake.counts == counts
    fake.allocate(1)
    fake.automatic_collection()
    assert fake.frozen == 1251
    assert fake.counts == counts + 1
    assert policy.wants_growth_renewal()
    assert process.renewal_due
    # Noticed once: no count again until the renewal.
    fake.allocate(10)
    fake.automatic_collection()
    assert fake.counts == counts + 1
    calls = len(fake.calls)

    assert policy.on_grown()
    # One full collection, the callback skipping it; the garbage goes.
    assert fake.calls[calls:] == ["unfreeze", "collect", "freeze"]
    assert (fake.frozen, fake.frozen_garbage, fake.tracked) == (1261 - 150, 0, 0)
    assert process.frozen_at_freeze == 1111
    assert not policy.wants_growth_renewal()
    assert not policy.on_grown()
    # Frozen all along: neither an unfreeze nor a new freeze for the agent.
    assert policy.statistics() == GcFreezeStatistics(
        frozen=True, frozen_objects=1111, freezes=1, unfreezes=0, refreezes=3, renewals=1
    )
    assert len(fake.callbacks) == 1
    grown = [r.getMessage() for r in caplog.records if "grown" in r.getMessage()]
    assert grown == [
        "garbage collector frozen again, the objects frozen having grown from 1000 to 1251: "
        "1111 objects frozen, 150 collected first in 0 ms"
    ]
    # The factor applies to the count after the renewal from now on.
    fake.allocate(277)
    fake.automatic_collection()
    assert not policy.wants_growth_renewal()  # 1388 <= 1111 x 1.25
    fake.allocate(1)
    fake.automatic_collection()
    assert policy.wants_growth_renewal()


def test_frozen_objects_freed_since_keep_the_exact_count_under_the_factor() -> None:
    fake, process, policy = make(min_rooms=10)
    fake.allocate(1000)
    policy.on_settled(rooms=10, removed=0)
    counts = fake.counts
    # 300 survivors frozen, but 100 frozen objects went by reference
    # counting: the bound (1300) passes the limit, the exact count (1200) not.
    fake.release(100)
    fake.allocate(300)
    fake.automatic_collection()
    assert fake.counts == counts + 1
    assert not policy.wants_growth_renewal()
    # The bound starts again from the exact count.
    fake.allocate(50)
    fake.automatic_collection()
    assert fake.counts == counts + 1
    assert not process.renewal_due
    fake.allocate(1)
    fake.automatic_collection()
    assert fake.counts == counts + 2
    assert policy.wants_growth_renewal()


def test_an_unfreeze_cancels_a_due_renewal() -> None:
    fake, process, policy = make(min_rooms=10)
    fake.allocate(100)
    policy.on_settled(rooms=100, removed=0)
    fake.allocate(100)
    fake.automatic_collection()
    assert policy.wants_growth_renewal()
    # Churn unfreezes: the next settle collects and freezes anyway.
    assert policy.on_removed(26)
    assert not process.renewal_due
    assert not policy.wants_growth_renewal()
    assert not policy.on_grown()
    assert fake.calls[-1] == "unfreeze"


def test_the_callback_never_raises_and_leaves_the_lock_free() -> None:
    fake = FakeGc()

    def broken_count() -> int:
        raise RuntimeError("cannot count")

    process = ProcessFreeze(attrs.evolve(fake.functions(), unfrozen=broken_count))
    policy = GcFreezePolicy(10, process)
    fake.allocate(100)
    policy.on_settled(rooms=10, removed=0)
    fake.allocate(100)
    fake.automatic_collection()  # the callback's count raises inside
    # Nothing frozen this time; the next full collection tries again.
    assert (fake.frozen, fake.tracked, process.refreezes) == (100, 100, 0)
    assert not process.renewal_due
    policy.close()  # takes the lock
    assert fake.calls[-1] == "unfreeze"
    assert fake.callbacks == []


def test_the_callback_is_there_only_while_frozen() -> None:
    fake, _, policy = make(min_rooms=10)
    fake.allocate(1000)
    policy.on_settled(rooms=100, removed=0, epoch=0)
    assert len(fake.callbacks) == 1
    # Churn: unfrozen, the callback goes; a full collection freezes nothing.
    policy.on_removed(26)
    assert fake.callbacks == []
    fake.allocate(10)
    fake.automatic_collection()
    assert fake.calls[-1] == "automatic collection 2"
    assert fake.frozen == 0
    # Frozen again, then renewed after a reconnect: one callback each time.
    policy.on_settled(rooms=74, removed=26, epoch=0)
    assert len(fake.callbacks) == 1
    policy.on_settled(rooms=74, removed=26, epoch=1)
    assert len(fake.callbacks) == 1
    # Exit removes it.
    policy.close()
    assert fake.callbacks == []
    calls = len(fake.calls)
    fake.automatic_collection()
    assert fake.calls[calls:] == ["automatic collection 2"]
    assert fake.frozen == 0


def test_two_agents_share_one_callback_and_one_renewal() -> None:
    fake = FakeGc()
    process = ProcessFreeze(fake.functions())
    first = GcFreezePolicy(10, process)
    second = GcFreezePolicy(10, process)
    fake.allocate(1000)
    first.on_settled(rooms=10, removed=0)
    fake.allocate(200)
    second.on_settled(rooms=10, removed=0)
    assert len(fake.callbacks) == 1
    # One full collection, one freeze of its survivors, seen by both.
    fake.allocate(100)
    fake.automatic_collection()
    assert fake.calls.count("freeze") == 3
    assert first.statistics().refreezes == second.statistics().refreezes == 1
    # Grown past the factor (1200 frozen when the second froze): the first
    # to settle renews, for both, and both stay frozen.
    fake.allocate(201)
    fake.automatic_collection()
    assert first.wants_growth_renewal()
    assert second.wants_growth_renewal()
    assert second.on_grown()
    assert not first.wants_growth_renewal()
    assert not first.on_grown()
    assert (first.frozen, second.frozen) == (True, True)
    assert fake.calls.count("unfreeze") == 1
    assert (first.statistics().renewals, second.statistics().renewals) == (0, 1)
    assert (first.statistics().unfreezes, second.statistics().unfreezes) == (0, 0)
    # The first leaves: unfrozen for both, callback gone until the second
    # freezes again; its exit removes it for good.
    first.close()
    assert fake.callbacks == []
    assert second.wants_freeze()
    second.on_settled(rooms=10, removed=0)
    assert len(fake.callbacks) == 1
    second.close()
    assert fake.callbacks == []
    assert process.holders == 0


class _EngineState:
    """What ``serve_gc_policy`` reads of the engine, as one table a test
    changes; every change notifies, as the engine's changes do."""

    def __init__(self, **state: int | bool) -> None:
        self.state: dict[str, int | bool] = {
            "settled": False,
            "rooms": 0,
            "removed": 0,
            "epoch": 0,
            **state,
        }
        self.changes = StateChanges()

    def change(self, **values: int | bool) -> None:
        self.state.update(values)
        self.changes.notify()

    async def serve(self, policy: GcFreezePolicy) -> None:
        state = self.state
        await serve_gc_policy(
            policy,
            self.changes,
            settled=lambda: bool(state["settled"]),
            rooms=lambda: int(state["rooms"]),
            removed=lambda: int(state["removed"]),
            epoch=lambda: int(state["epoch"]),
        )


async def test_the_shell_freezes_when_settled_unfreezes_on_churn_and_on_exit() -> None:
    fake = FakeGc()
    policy = GcFreezePolicy(3, ProcessFreeze(fake.functions()))
    engine = _EngineState(rooms=2)
    change = engine.change

    async with trio.open_nursery() as nursery:
        nursery.start_soon(engine.serve, policy)
        await trio.testing.wait_all_tasks_blocked()
        # Settled with too few rooms: nothing; a third room joining is not
        # enough either until its reconcile has run and settled.
        change(settled=True)
        await trio.testing.wait_all_tasks_blocked()
        change(rooms=3)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls == []
        change(settled=False)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls == []
        change(settled=True)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls == ["collect", "freeze"]
        assert policy.frozen

        # A reconnect's reconciles come and go: no second freeze.
        change(settled=False)
        await trio.testing.wait_all_tasks_blocked()
        change(settled=True)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls == ["collect", "freeze"]

        # One of three rooms removed is more than a quarter: unfrozen; two
        # rooms are too few to freeze again.
        change(removed=1, rooms=2)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls == ["collect", "freeze", "unfreeze"]
        assert not policy.frozen
        # Two rooms added: frozen again once their reconciles settled.
        change(settled=False, rooms=4)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls == ["collect", "freeze", "unfreeze"]
        change(settled=True)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls == ["collect", "freeze", "unfreeze", "collect", "freeze"]

        # Churn again (two of four) with enough rooms left and no reconcile
        # running: unfrozen, then collected and frozen again at once.
        change(removed=3, rooms=3)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls[5:] == ["unfreeze", "collect", "freeze"]
        assert policy.frozen
        assert policy.statistics().freezes == 3

        # A reconnect: nothing while its reconciles run, renewed once they settled.
        change(epoch=1, settled=False)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls[8:] == []
        change(settled=True)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls[8:] == ["unfreeze", "collect", "freeze"]
        assert policy.statistics().freezes == 4

        nursery.cancel_scope.cancel()
    assert fake.calls[-1] == "unfreeze"
    assert not policy.frozen


async def test_the_shell_renews_a_grown_freeze_at_the_next_settle_once() -> None:
    fake = FakeGc()
    policy = GcFreezePolicy(3, ProcessFreeze(fake.functions()))
    engine = _EngineState(settled=True, rooms=10)
    change = engine.change

    async with trio.open_nursery() as nursery:
        nursery.start_soon(engine.serve, policy)
        fake.allocate(1000)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls == ["collect", "freeze"]
        # Grown past the factor; a reconcile is running: nothing yet.
        fake.allocate(300)
        fake.automatic_collection()
        change(settled=False)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls[2:] == ["automatic collection 2", "freeze"]
        # Settled: renewed once.
        change(settled=True)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls[4:] == ["unfreeze", "collect", "freeze"]
        assert policy.statistics().renewals == 1
        change()
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls[7:] == []

        # Grown again during a reconnect: the reconnect's renewal is the only
        # full collection.
        fake.allocate(400)
        fake.automatic_collection()
        assert policy.wants_growth_renewal()
        change(epoch=1, settled=False)
        await trio.testing.wait_all_tasks_blocked()
        change(settled=True)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls[7:] == [
            "automatic collection 2",
            "freeze",
            "unfreeze",
            "collect",
            "freeze",
        ]
        assert not policy.wants_growth_renewal()
        stats = policy.statistics()
        assert (stats.freezes, stats.unfreezes, stats.renewals) == (2, 1, 1)
        nursery.cancel_scope.cancel()
    assert fake.calls[-1] == "unfreeze"
    assert fake.callbacks == []


async def test_the_shell_does_nothing_when_off() -> None:
    fake = FakeGc()
    policy = GcFreezePolicy(0, ProcessFreeze(fake.functions()))
    with trio.fail_after(1):
        await serve_gc_policy(
            policy, StateChanges(), settled=lambda: True, rooms=lambda: 10**6, removed=lambda: 0
        )
    assert fake.calls == []


def test_the_threshold_is_a_config_field_with_an_environment_override() -> None:
    assert AgentConfig().gc_freeze_min_rooms == 1000
    assert AgentConfig.from_env({"BAND_GC_FREEZE_MIN_ROOMS": "0"}).gc_freeze_min_rooms == 0
    assert AgentConfig.from_env({"BAND_GC_FREEZE_MIN_ROOMS": "250"}).gc_freeze_min_rooms == 250
    with pytest.raises(BandConfigError, match="BAND_GC_FREEZE_MIN_ROOMS"):
        AgentConfig.from_env({"BAND_GC_FREEZE_MIN_ROOMS": "-1"})
    with pytest.raises(BandConfigError, match="BAND_GC_FREEZE_MIN_ROOMS"):
        AgentConfig.from_env({"BAND_GC_FREEZE_MIN_ROOMS": "many"})
