"""One real error, never an ExceptionGroup of one (issue 3 item 2): the shared
helper ``band_trio._util.one_error`` used by ``Agent.serve``, ``open_agent``
and ``band_trio.local.open_local_platform``."""

from __future__ import annotations

import socket

import pytest
import trio

from band_trio._util import collapse_group, one_error
from band_trio.local import open_local_platform
from band_trio.local.server import open_local_platform as platform_module_open


class Boom(Exception):
    pass


async def test_error_inside_the_local_platform_block_is_the_real_error() -> None:
    seen: list[str] = []

    async def run() -> None:
        async with open_local_platform() as platform:
            seen.append(platform.rest_url)
            raise Boom("from the block")

    with trio.fail_after(10), pytest.raises(Boom) as info:
        await run()
    assert seen[0].startswith("http://127.0.0.1:")
    assert str(info.value) == "from the block"
    assert info.value.__cause__ is None


async def test_bind_failure_of_the_local_platform_is_a_plain_oserror() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with trio.fail_after(10), pytest.raises(OSError, match="in use"):
            async with platform_module_open(port=port):
                pytest.fail("the block must not run")  # pragma: no cover


async def test_cancelling_the_block_stays_a_cancellation() -> None:
    with trio.fail_after(10):
        with trio.CancelScope() as scope:
            async with open_local_platform():
                scope.cancel()
                await trio.sleep_forever()
        assert scope.cancelled_caught


def _group(*errors: BaseException) -> BaseExceptionGroup[BaseException]:
    return BaseExceptionGroup("nursery", list(errors))


def test_collapse_flattens_nested_groups_and_ignores_cancellations() -> None:
    real = Boom("deep")
    cancelled = trio.Cancelled._create()  # type: ignore[attr-defined]
    group = _group(cancelled, _group(_group(real)))
    assert collapse_group(group) is real


def test_several_real_errors_stay_a_group() -> None:
    group = _group(Boom("a"), ValueError("b"))
    assert collapse_group(group) is group
    with pytest.raises(BaseExceptionGroup) as info, one_error():
        raise group
    assert info.value is group


def test_one_error_leaves_plain_errors_alone() -> None:
    with pytest.raises(Boom), one_error():
        raise Boom("plain")
