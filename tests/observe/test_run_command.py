"""``band-trio run`` as a real process against the local platform: it answers,
drains on SIGTERM with status 0, ends with its own status when superseded,
and refuses bad settings before touching the network."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from band_trio.local import HumanClient, LocalPlatform
from band_trio.production import EXIT_BAD_CONFIG, EXIT_DRAINED, EXIT_SUPERSEDED

from ..devloop.helpers import (
    STARTUP,
    STEP,
    Output,
    echo_source,
    replies,
    running,
    wait_for_messages,
)

pytestmark = pytest.mark.slow


def environment(platform: LocalPlatform, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BAND_")}
    env.update(platform.agent_env(platform.agents[0]))
    env.update({"BAND_SHUTDOWN_TIMEOUT": "5", "BAND_CLEANUP_TIMEOUT": "2"})
    env.update(extra)
    return env


async def health_url(output: Output) -> str:
    """The listener's address, from the agent's JSON log line."""
    line = await output.wait_for("health listener on", within=STARTUP)
    return str(json.loads(line)["message"].rsplit(" ", 1)[-1])


async def exited(process: object, within: float = STEP) -> int:
    assert hasattr(process, "wait")
    with trio.fail_after(within):
        return int(await process.wait())


@asynccontextmanager
async def agent_room(platform: LocalPlatform) -> AsyncIterator[tuple[HumanClient, str]]:
    creds = platform.agents[0]
    async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
        room = (await human.create_room(title="production"))["id"]
        await human.add_participant(room, creds.id)
        yield human, room


def metric(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    raise AssertionError(f"{name}{labels} not scraped")


async def test_run_answers_serves_metrics_and_drains_on_sigterm(
    band_platform: LocalPlatform, tmp_path: Path
) -> None:
    (tmp_path / "echo.py").write_text(echo_source("prod"))
    creds = band_platform.agents[0]
    env = environment(band_platform, BAND_STATE_DIR=str(tmp_path / "state"))
    async with (
        agent_room(band_platform) as (human, room),
        running(["run", "echo.py", "--health-port", "0"], tmp_path, env=env) as (process, output),
        httpx.AsyncClient() as client,
    ):
        base = await health_url(output)
        await output.wait_for("serving 1 room(s)", within=STARTUP)
        assert (await client.get(base + "/readyz")).status_code == 200
        before = metric(
            (await client.get(base + "/metrics")).text, "band_trio_turns_total", outcome="completed"
        )
        await human.post_message(room, f"@{creds.handle} hello", [creds.handle])
        await wait_for_messages(human, room, lambda m: bool(replies(m, creds.id, "prod: ")))
        with trio.fail_after(STEP):
            while True:
                text = (await client.get(base + "/metrics")).text
                if metric(text, "band_trio_turns_total", outcome="completed") == before + 1:
                    break
                await trio.sleep(0.05)
        os.kill(process.pid, signal.SIGTERM)
        assert await exited(process) == EXIT_DRAINED
    # JSON logs when the output is not a terminal; never the key.
    logged = [json.loads(line) for line in output.lines if line.startswith("{")]
    assert any("stopped" in entry["message"] for entry in logged)
    assert creds.api_key not in output.text()


async def test_a_superseding_instance_ends_the_first_with_its_status(
    band_platform: LocalPlatform, tmp_path: Path
) -> None:
    (tmp_path / "echo.py").write_text(echo_source("one"))
    env = environment(band_platform)
    first_env = {**env, "BAND_STATE_DIR": str(tmp_path / "first")}
    second_env = {**env, "BAND_STATE_DIR": str(tmp_path / "second")}
    async with running(["run", "echo.py"], tmp_path, env=first_env) as (first, first_out):
        await first_out.wait_for("serving", within=STARTUP)
        async with running(["run", "echo.py"], tmp_path, env=second_env) as (second, second_out):
            await second_out.wait_for("serving", within=STARTUP)
            assert await exited(first) == EXIT_SUPERSEDED
            os.kill(second.pid, signal.SIGTERM)
            assert await exited(second) == EXIT_DRAINED
    assert "superseded" in first_out.text()


async def test_bad_settings_exit_2_before_touching_the_network(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(echo_source("x"))
    accepted: list[object] = []
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]

    async def record(stream: trio.SocketStream) -> None:
        accepted.append(stream)
        await stream.aclose()

    env = {k: v for k, v in os.environ.items() if not k.startswith("BAND_")}
    env.update(
        {
            "BAND_AGENT_ID": "agent-1",
            "BAND_API_KEY": "k" * 40,
            "BAND_REST_URL": f"http://127.0.0.1:{port}",
            "BAND_WS_URL": f"ws://127.0.0.1:{port}/api/v1/socket/websocket",
            "BAND_MAX_ATTEMPTS": "zero",
        }
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, record, listeners)
        for args, expected in (
            (["run", "echo.py"], "BAND_MAX_ATTEMPTS"),
            (["run", "echo.py", "--check"], "BAND_MAX_ATTEMPTS"),
            (["run", "missing.py"], "no such file"),
            (["run", "echo.py:nothing"], "has no attribute 'nothing'"),
        ):
            async with running(args, tmp_path, env=env) as (process, output):
                assert await exited(process, STARTUP) == EXIT_BAD_CONFIG
            assert expected in output.text()
        nursery.cancel_scope.cancel()
    assert accepted == []


async def test_check_reaches_the_platform_once_and_prints_no_key(
    band_platform: LocalPlatform, tmp_path: Path
) -> None:
    (tmp_path / "echo.py").write_text(echo_source("x"))
    creds = band_platform.agents[0]
    env = environment(band_platform, BAND_HEALTH_PORT="9464")
    async with running(["run", "echo.py", "--check", "--json"], tmp_path, env=env) as (
        process,
        output,
    ):
        assert await exited(process, STARTUP) == EXIT_DRAINED
    found = json.loads(next(line for line in output.lines if line.startswith('{"target"')))
    assert (found["agent_id"], found["handle"]) == (creds.id, creds.handle)
    assert found["health"] == "127.0.0.1:9464"
    assert found["object"] == "Echo (adapter class)"
    assert creds.api_key not in output.text()
    assert not band_platform.connected(creds.id)
