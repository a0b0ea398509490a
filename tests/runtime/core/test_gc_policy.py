"""The garbage-collector freeze policy, with the ``gc`` functions replaced by a
model of the generations: the threshold, churn, exit, and two agents sharing
one process."""

from __future__ import annotations

import attrs
import pytest
import trio
import trio.testing

from band_trio.errors import BandConfigError
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.gc_policy import (
    GcFreezePolicy,
    GcFreezeStatistics,
    GcFunctions,
    ProcessFreeze,
    serve_gc_policy,
)
from band_trio.runtime.state_changes import StateChanges


@attrs.define
class FakeGc:
    """Tracked objects split into collectable and frozen, and every call made."""

    tracked: int = 0
    garbage: int = 0
    frozen: int = 0
    calls: list[str] = attrs.Factory(list)

    def collect(self) -> int:
        self.calls.append("collect")
        collected, self.garbage = self.garbage, 0
        self.tracked -= collected
        return collected

    def freeze(self) -> None:
        self.calls.append("freeze")
        self.frozen += self.tracked
        self.tracked = 0

    def unfreeze(self) -> None:
        self.calls.append("unfreeze")
        self.tracked += self.frozen
        self.frozen = 0

    def freeze_count(self) -> int:
        return self.frozen

    def allocate(self, live: int, garbage: int = 0) -> None:
        self.tracked += live + garbage
        self.garbage += garbage

    def functions(self) -> GcFunctions:
        return GcFunctions(
            collect=self.collect,
            freeze=self.freeze,
            unfreeze=self.unfreeze,
            freeze_count=self.freeze_count,
            clock=lambda: 0.0,
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
    # Settling again (a reconnect's drains) freezes nothing more.
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
    # The reconnect's drains replaced part of the rooms' state: new objects
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


async def test_the_shell_freezes_when_settled_unfreezes_on_churn_and_on_exit() -> None:
    fake = FakeGc()
    policy = GcFreezePolicy(3, ProcessFreeze(fake.functions()))
    changes = StateChanges()
    state = {"settled": False, "rooms": 2, "removed": 0, "epoch": 0}

    def change(**values: int | bool) -> None:
        state.update(values)
        changes.notify()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            lambda: serve_gc_policy(
                policy,
                changes,
                settled=lambda: bool(state["settled"]),
                rooms=lambda: int(state["rooms"]),
                removed=lambda: int(state["removed"]),
                epoch=lambda: int(state["epoch"]),
            )
        )
        await trio.testing.wait_all_tasks_blocked()
        # Settled with too few rooms: nothing; a third room joining is not
        # enough either until its drain has run and settled.
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

        # A reconnect's drains come and go: no second freeze.
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
        # Two rooms added: frozen again once their drains settled.
        change(settled=False, rooms=4)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls == ["collect", "freeze", "unfreeze"]
        change(settled=True)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls == ["collect", "freeze", "unfreeze", "collect", "freeze"]

        # Churn again (two of four) with enough rooms left and no drain
        # running: unfrozen, then collected and frozen again at once.
        change(removed=3, rooms=3)
        await trio.testing.wait_all_tasks_blocked()
        assert fake.calls[5:] == ["unfreeze", "collect", "freeze"]
        assert policy.frozen
        assert policy.statistics().freezes == 3

        # A reconnect: nothing while its drains run, renewed once they settled.
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
