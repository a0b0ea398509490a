"""Each way of running an agent surfaces a failure as ONE typed error, never an
``ExceptionGroup`` of one (``pytest.raises(T)`` does not match a group, so each
check could fail).

Entry points: ``trio.run(agent.serve)`` (literally, in a worker thread with its
own Trio run), ``await agent.serve()``, ``await nursery.start(agent.serve)``
and ``async with open_agent(...)`` (that one in test_lifecycle's
test_bad_key_surfaces_one_typed_error); failures before the agent is started (a
refused key) and after (a superseding connection). Also the shared helper
``band_trio._util.one_error`` they use (as does
``band_trio.local.open_local_platform``).
"""

from __future__ import annotations

import socket

import pytest
import trio

from band_trio._util import collapse_group, one_error
from band_trio.agent import Agent
from band_trio.errors import AuthenticationError, SupersededError
from band_trio.local import open_local_platform
from band_trio.local.server import open_local_platform as platform_module_open
from band_trio.runtime.config import AgentConfig, AgentSettings
from band_trio.runtime.platform_runtime import PlatformRuntime

from .harness import RecordingAdapter, scene, serving


def _bad_key_agent(platform) -> Agent:  # type: ignore[no-untyped-def]
    creds = platform.agents[0]
    settings = AgentSettings(
        agent_id=creds.id,
        api_key="wrong-key",
        rest_url=platform.rest_url,
        ws_url=platform.ws_url,
    )
    runtime = PlatformRuntime(settings, AgentConfig(state_dir=None))
    return Agent(runtime, RecordingAdapter(), handle_signals=False)


async def test_trio_run_serve_raises_the_typed_error(band_platform) -> None:  # type: ignore[no-untyped-def]
    agent = _bad_key_agent(band_platform)
    with trio.fail_after(20), pytest.raises(AuthenticationError):
        await trio.to_thread.run_sync(trio.run, agent.serve)


async def test_awaited_serve_raises_the_typed_error(band_platform) -> None:  # type: ignore[no-untyped-def]
    agent = _bad_key_agent(band_platform)
    with trio.fail_after(20), pytest.raises(AuthenticationError):
        await agent.serve()


async def test_nursery_start_raises_the_typed_error(band_platform) -> None:  # type: ignore[no-untyped-def]
    agent = _bad_key_agent(band_platform)
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            with pytest.raises(AuthenticationError):
                await nursery.start(agent.serve)


async def test_a_failure_while_serving_is_one_typed_error_from_awaited_serve(band_platform) -> None:  # type: ignore[no-untyped-def]
    """After startup (rooms joined, turns possible), a superseding connection
    ends ``await agent.serve()`` with SupersededError itself."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            await s.new_room()
            old = s.make_agent(RecordingAdapter())
            errors: list[BaseException] = []

            async def run_old() -> None:
                try:
                    await old.serve()
                except Exception as exc:  # the one typed error, whatever it is
                    errors.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_old)
                await s.wait_for(lambda: old.statistics().serving)
                async with serving(s.make_agent(RecordingAdapter())):
                    await s.wait_for(lambda: bool(errors))
            assert len(errors) == 1
            assert type(errors[0]) is SupersededError


# ------------------------------------------------------------------ the one_error helper
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
