"""A post whose outcome is unknown is settled inside the tool call: looked up,
sent again only when it is not stored, and raised only after a bounded time."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pytest
import trio

from band_trio.errors import (
    BadRequestError,
    BandConnectionError,
    OutcomeUnknownServiceUnavailableError,
    PermissionDeniedError,
)
from band_trio.tools.unsure_posts import UnsurePostPolicy, settle_post


def _unknown() -> OutcomeUnknownServiceUnavailableError:
    return OutcomeUnknownServiceUnavailableError(503, message="lost", method="POST", path="/m")


class FakeRoom:
    """Stores posts; each planned outcome applies to one send in order:
    ``"ok"`` stores and answers, ``"lost"`` stores and raises, ``"refused"``
    raises without storing (a 503 before the call took effect)."""

    def __init__(self, plan: list[str], *, lookups_fail: int = 0) -> None:
        self.plan = plan
        self.stored: list[str] = []
        self.sends = 0
        self.lookups = 0
        self.lookups_fail = lookups_fail

    async def send(self) -> str:
        await trio.lowlevel.checkpoint()
        self.sends += 1
        outcome = self.plan.pop(0) if self.plan else "ok"
        if outcome in ("ok", "lost"):
            self.stored.append(f"post-{self.sends}")
        if outcome == "ok":
            return f"receipt:post-{self.sends}"
        raise _unknown()

    async def find_post(
        self, digest: str, message_type: str, exclude: Collection[str]
    ) -> str | None:
        await trio.lowlevel.checkpoint()
        self.lookups += 1
        if self.lookups <= self.lookups_fail:
            raise BandConnectionError("the platform is unreachable")
        found = [p for p in self.stored if p not in exclude]
        return found[-1] if found else None


async def _settle(room: FakeRoom, policy: UnsurePostPolicy | None = None, **kw: Any) -> object:
    return await settle_post(
        room.send,
        finder=kw.get("finder", room),
        digest="d",
        message_type="text",
        exclude=lambda: (),
        policy=policy or UnsurePostPolicy(),
    )


async def test_a_post_refused_before_it_took_effect_is_sent_again(autojump_clock: Any) -> None:
    room = FakeRoom(["refused", "refused", "ok"])
    result = await _settle(room)
    assert result == "receipt:post-3"
    assert room.stored == ["post-3"]
    assert room.lookups == 2


async def test_a_stored_post_whose_answer_was_lost_is_found_not_repeated(
    autojump_clock: Any,
) -> None:
    room = FakeRoom(["lost"])
    assert await _settle(room) == "post-1"
    assert room.sends == 1
    assert room.stored == ["post-1"]


async def test_failed_lookups_are_retried_within_the_bound(autojump_clock: Any) -> None:
    room = FakeRoom(["lost"], lookups_fail=3)
    assert await _settle(room) == "post-1"
    assert room.sends == 1


async def test_the_error_reaches_the_caller_once_the_bound_has_passed(
    autojump_clock: Any,
) -> None:
    room = FakeRoom(["refused"], lookups_fail=10**6)
    policy = UnsurePostPolicy(give_up_after=30.0)
    start = trio.current_time()
    with pytest.raises(OutcomeUnknownServiceUnavailableError):
        await _settle(room, policy)
    waited = trio.current_time() - start
    assert 30.0 - policy.max_check_interval <= waited <= 30.0
    assert room.sends == 1


async def test_without_a_finder_the_doubt_is_raised_at_once(autojump_clock: Any) -> None:
    room = FakeRoom(["refused"])
    with pytest.raises(OutcomeUnknownServiceUnavailableError):
        await _settle(room, finder=None)
    assert room.sends == 1


async def test_a_refusal_is_raised_at_once(autojump_clock: Any) -> None:
    async def refuse() -> str:
        await trio.lowlevel.checkpoint()
        raise BadRequestError(400, message="bad", method="POST", path="/m")

    room = FakeRoom([])
    with pytest.raises(BadRequestError):
        await settle_post(
            refuse,
            finder=room,
            digest="d",
            message_type="text",
            exclude=lambda: (),
            policy=UnsurePostPolicy(),
        )
    assert room.lookups == 0


async def test_a_lookup_that_cannot_be_made_raises_the_posts_error(autojump_clock: Any) -> None:
    class Unanchored:
        async def find_post(self, digest: str, message_type: str, exclude: Collection[str]) -> None:
            raise LookupError("no anchor")

    room = FakeRoom(["refused"])
    with pytest.raises(OutcomeUnknownServiceUnavailableError) as info:
        await _settle(room, finder=Unanchored())
    assert isinstance(info.value.__cause__, LookupError)


async def test_a_lookup_refused_for_good_raises_the_posts_error_at_once(
    autojump_clock: Any,
) -> None:
    class Forbidden:
        async def find_post(self, digest: str, message_type: str, exclude: Collection[str]) -> None:
            await trio.lowlevel.checkpoint()
            raise PermissionDeniedError(403, message="not yours", method="GET", path="/c")

    room = FakeRoom(["refused"])
    start = trio.current_time()
    with pytest.raises(OutcomeUnknownServiceUnavailableError) as info:
        await _settle(room, finder=Forbidden())
    assert isinstance(info.value.__cause__, PermissionDeniedError)
    assert trio.current_time() - start < 1.0
    assert room.sends == 1


def test_the_policy_waits_double_up_to_the_cap() -> None:
    policy = UnsurePostPolicy(first_check=0.25, max_check_interval=1.0)
    assert [policy.wait(n) for n in range(5)] == [0.25, 0.5, 1.0, 1.0, 1.0]
