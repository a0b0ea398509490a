"""``/livez``, ``/readyz`` and ``/metrics`` of a real agent on the local
platform, through start-up, serving, a dropped socket and draining."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from band_trio import Agent, AgentConfig
from band_trio.adapter import AgentToolsProtocol, HistoryProvider, PlatformMessage, SimpleAdapter
from band_trio.errors import BandConfigError
from band_trio.local import HumanClient, LocalPlatform
from band_trio.runtime.config import WS_PATH
from band_trio.runtime.platform_runtime import PlatformRuntime

from ..agent.harness import fast_config

WITHIN = 20.0
POLL = 0.02


class Gated(SimpleAdapter[HistoryProvider]):
    """Starts when ``start`` is set; each turn waits for ``turn`` (set by
    default), then echoes."""

    def __init__(self) -> None:
        super().__init__()
        self.start = trio.Event()
        self.turn = trio.Event()
        self.turn.set()
        self.in_turn = trio.Event()

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        await super().on_started(agent_name, agent_description)
        await self.start.wait()

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        self.in_turn.set()
        await self.turn.wait()
        await tools.send_message(f"echo: {msg.content}", [msg.sender_id])


def make_agent(platform: LocalPlatform, adapter: Gated, **config: object) -> Agent:
    creds = platform.agents[0]
    settings = {
        "agent_id": creds.id,
        "api_key": creds.api_key,
        "rest_url": platform.rest_url,
        "ws_url": platform.ws_url,
    }
    from band_trio.runtime.config import AgentSettings

    runtime = PlatformRuntime(AgentSettings(**settings), fast_config(health_port=0, **config))
    return Agent(runtime, adapter)


async def get(client: httpx.AsyncClient, agent: Agent, path: str) -> httpx.Response:
    address = agent.health_address
    assert address is not None
    return await client.get(f"http://{address[0]}:{address[1]}{path}")


async def answers(client: httpx.AsyncClient, agent: Agent, path: str, status: int) -> str:
    """Poll ``path`` until it answers ``status``; returns the body."""
    with trio.fail_after(WITHIN):
        # The state is read over HTTP, as an orchestrator reads it.
        while (response := await get(client, agent, path)).status_code != status:  # noqa: ASYNC110
            await trio.sleep(POLL)
    return response.text


@asynccontextmanager
async def started(agent: Agent) -> AsyncIterator[trio.Nursery]:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.serve)
        with trio.fail_after(WITHIN):
            await agent.wait_for(lambda: agent.health_address is not None)
        yield nursery
        nursery.cancel_scope.cancel()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, parsed by prometheus_client's own parser."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


async def test_probes_through_start_up_serving_a_dropped_socket_and_draining(
    band_platform: LocalPlatform,
) -> None:
    adapter = Gated()
    agent = make_agent(band_platform, adapter, health_link_down_limit=1.0)
    creds = band_platform.agents[0]
    async with (
        HumanClient(base_url=band_platform.rest_url, api_key=band_platform.user.api_key) as human,
        httpx.AsyncClient() as client,
    ):
        room = (await human.create_room(title="probed"))["id"]
        await human.add_participant(room, creds.id)
        async with started(agent) as nursery:
            assert agent.health_address is not None
            assert agent.health_address[0] == "127.0.0.1"
            # Start-up: the adapter's on_started has not returned.
            assert (await get(client, agent, "/livez")).status_code == 200
            not_ready = await get(client, agent, "/readyz")
            assert (not_ready.status_code, not_ready.text) == (503, "starting\n")

            adapter.start.set()
            assert await answers(client, agent, "/readyz", 200) == "ok\n"

            # A dropped socket that cannot come back: not ready at once, not
            # live once it has been down longer than the limit.
            band_platform.faults.add("GET", WS_PATH + "$", 503, 10_000)
            await band_platform.drop_agent_sockets(creds.id)
            assert await answers(client, agent, "/readyz", 503) == "link down\n"
            assert "limit 1s" in await answers(client, agent, "/livez", 503)
            band_platform.faults.clear()
            await answers(client, agent, "/readyz", 200)
            assert (await get(client, agent, "/livez")).status_code == 200

            # Draining: a turn holds the shutdown; live, not ready.
            adapter.turn = trio.Event()
            await human.post_message(room, f"@{creds.handle} hold", mentions=[creds.handle])
            with trio.fail_after(WITHIN):
                await adapter.in_turn.wait()
            agent.request_shutdown()
            assert await answers(client, agent, "/readyz", 503) == "draining\n"
            assert (await get(client, agent, "/livez")).status_code == 200
            assert (
                samples((await get(client, agent, "/metrics")).text)[("band_trio_draining", ())]
                == 1.0
            )
            address = agent.health_address
            adapter.turn.set()
            with trio.fail_after(WITHIN):
                await agent.wait_for(lambda: agent.health_address is None)
            nursery.cancel_scope.deadline = trio.current_time() + WITHIN
    # The listener stopped with the agent.
    with pytest.raises(httpx.ConnectError):
        async with httpx.AsyncClient() as client:
            await client.get(f"http://{address[0]}:{address[1]}/livez")


async def test_metrics_parse_and_their_counters_move_as_messages_are_answered(
    band_platform: LocalPlatform,
) -> None:
    adapter = Gated()
    adapter.start.set()
    agent = make_agent(band_platform, adapter)
    creds = band_platform.agents[0]
    async with (
        HumanClient(base_url=band_platform.rest_url, api_key=band_platform.user.api_key) as human,
        httpx.AsyncClient() as client,
    ):
        room = (await human.create_room(title="metered"))["id"]
        await human.add_participant(room, creds.id)
        async with started(agent):
            await answers(client, agent, "/readyz", 200)
            first = await get(client, agent, "/metrics")
            assert first.headers["content-type"].startswith("text/plain; version=0.0.4")
            before = samples(first.text)
            for word in ("one", "two"):
                await human.post_message(room, f"@{creds.handle} {word}", mentions=[creds.handle])
            with trio.fail_after(WITHIN):
                await agent.wait_for(lambda: agent.statistics().completed >= 2)
            after = samples((await get(client, agent, "/metrics")).text)
    completed = ("band_trio_turns_total", (("outcome", "completed"),))
    assert before[completed] == 0.0
    assert after[completed] == 2.0
    assert after[("band_trio_turns_started_total", ())] == 2.0
    assert after[("band_trio_turn_duration_seconds_count", ())] == 2.0
    assert after[("band_trio_turn_duration_seconds_bucket", (("le", "+Inf"),))] == 2.0
    assert after[("band_trio_rooms", ())] == 1.0
    assert after[("band_trio_link_connected", ())] == 1.0
    assert after[("band_trio_messages_waiting", ())] == 0.0
    assert after[("band_trio_adapter_stuck_threads", ())] == 0.0
    assert after[("band_trio_ledger_entries", (("state", "completed"),))] == 2.0
    marks = ("band_trio_rest_calls_total", (("outcome", "ok"), ("route", "marks")))
    assert after[marks] >= before.get(marks, 0.0) + 4  # processing and processed, twice
    assert after[("band_trio_rest_calls_total", (("outcome", "ok"), ("route", "me")))] == 1.0
    # No series is labelled with a room or message id.
    labels = {value for _, pairs in after for _, value in pairs}
    assert str(room) not in labels
    assert all(len(value) < 20 for value in labels)


async def test_paths_methods_and_keep_alive(band_platform: LocalPlatform) -> None:
    adapter = Gated()
    adapter.start.set()
    agent = make_agent(band_platform, adapter)
    async with started(agent), httpx.AsyncClient() as client:
        assert (await get(client, agent, "/nope")).status_code == 404
        address = agent.health_address
        assert address is not None
        base = f"http://{address[0]}:{address[1]}"
        refused = await client.post(f"{base}/livez", content=b"")
        assert (refused.status_code, refused.headers["allow"]) == (405, "GET, HEAD")
        head = await client.head(f"{base}/livez")
        assert (head.status_code, head.content) == (200, b"")
        # Many requests on one kept-alive connection.
        for _ in range(5):
            assert (await client.get(f"{base}/livez?verbose=1")).status_code == 200


async def test_a_port_in_use_is_a_configuration_error(band_platform: LocalPlatform) -> None:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    try:
        adapter = Gated()
        adapter.start.set()
        agent = make_agent(band_platform, adapter)
        agent.runtime.config = fast_config(health_port=port)
        with trio.fail_after(WITHIN), pytest.raises(BandConfigError, match=f":{port}"):
            await agent.serve()
    finally:
        for listener in listeners:
            await listener.aclose()


def test_health_settings_come_from_the_environment() -> None:
    config = AgentConfig.from_env({"BAND_HEALTH_PORT": "9100", "BAND_HEALTH_HOST": "0.0.0.0"})
    assert (config.health_port, config.health_host) == (9100, "0.0.0.0")
    assert AgentConfig.from_env({"BAND_HEALTH_PORT": "none"}).health_port is None
    assert AgentConfig().health_port is None
    assert AgentConfig().health_host == "127.0.0.1"
    with pytest.raises(BandConfigError, match="BAND_HEALTH_PORT"):
        AgentConfig.from_env({"BAND_HEALTH_PORT": "70000"})
    with pytest.raises(BandConfigError, match="BAND_HEALTH_PORT"):
        AgentConfig.from_env({"BAND_HEALTH_PORT": "http"})


async def test_with_a_meter_provider_the_agent_reports_opentelemetry_metrics(
    band_platform: LocalPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    monkeypatch.setattr(metrics, "get_meter_provider", lambda: provider)
    adapter = Gated()
    adapter.start.set()
    agent = make_agent(band_platform, adapter)
    creds = band_platform.agents[0]

    def completed() -> list[tuple[dict[str, object], object]]:
        data = reader.get_metrics_data()
        if data is None:  # no instrument had a point to report
            return []
        return [
            (dict(point.attributes or {}), point.value)  # type: ignore[union-attr]
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == "band_trio.turns"
            for point in metric.data.data_points
            if (point.attributes or {}).get("outcome") == "completed"
        ]

    async with HumanClient(
        base_url=band_platform.rest_url, api_key=band_platform.user.api_key
    ) as human:
        room = (await human.create_room(title="otel"))["id"]
        await human.add_participant(room, creds.id)
        async with started(agent):
            with trio.fail_after(WITHIN):
                await agent.wait_for(lambda: agent.statistics().serving)
            await human.post_message(room, f"@{creds.handle} hi", mentions=[creds.handle])
            with trio.fail_after(WITHIN):
                await agent.wait_for(lambda: agent.statistics().completed >= 1)
            assert completed() == [({"band_trio.agent_id": creds.id, "outcome": "completed"}, 1)]
    # Once the agent stopped, it reports nothing.
    assert completed() == []
    provider.shutdown()
