"""The listener's parts on their own: the probes' verdicts, the REST route
classes, the HTTP shell's bounds, the metrics without their extra, and the
same metrics as OpenTelemetry instruments."""

from __future__ import annotations

import sys

import pytest
import trio
import trio.testing
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from band_trio import Agent, AgentSettings
from band_trio.adapter import HistoryProvider, ReportsStuckThreads, SimpleAdapter
from band_trio.cli import main
from band_trio.errors import (
    AgentAlreadyRunningError,
    AuthenticationError,
    BandConfigError,
    BandConnectionError,
    BandTimeoutError,
    MissingExtraError,
    NotFoundError,
    SupersededError,
)
from band_trio.observe import INSTRUMENTS, liveness, metrics_renderer, readiness
from band_trio.observe.listener import ProbeResponse, serve_http
from band_trio.observe.otel import AGENT_ATTRIBUTE, OtelMetrics, otel_name
from band_trio.observe.service import HealthState, health_handler
from band_trio.production import (
    EXIT_BAD_CONFIG,
    EXIT_CRASHED,
    EXIT_DRAINED,
    EXIT_SUPERSEDED,
    exit_status,
)
from band_trio.runtime.agent_statistics import AgentStatistics
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core.turn_durations import BUCKETS, TurnDurations
from band_trio.runtime.platform_runtime import PlatformRuntime
from band_trio.wire.link import LinkStatistics
from band_trio.wire.rest._routes import call_outcome, route_class

ZEROS = dict.fromkeys(
    [
        "rooms",
        "joining",
        "turns",
        "completed",
        "failures",
        "failed_for_good",
        "interrupted",
        "overflows",
        "resyncs",
        "inbox_depth",
        "reconnects",
        "events",
        "unrouted",
        "rejected",
        "control_signals",
    ],
    0,
)


def stats(**fields: object) -> AgentStatistics:
    values: dict[str, object] = {"serving": True, "per_room": (), **ZEROS}
    values.update(fields)
    return AgentStatistics(**values)  # type: ignore[arg-type]


def link(connected: bool, disconnected_since: float | None = None) -> LinkStatistics:
    counters = dict.fromkeys(
        [
            "frames_in",
            "frames_out",
            "malformed_frames",
            "oversize_frames",
            "events_delivered",
            "events_rejected",
            "events_buffered",
            "consumer_stalls",
            "heartbeats_sent",
            "heartbeat_acks",
            "dead_connections",
            "reconnects",
            "connect_failures",
        ],
        0,
    )
    return LinkStatistics(
        connected=connected,
        joined_topics=(),
        disconnected_since=disconnected_since,
        **counters,  # type: ignore[arg-type]
    )


def test_liveness_fails_only_once_the_link_is_down_longer_than_the_limit() -> None:
    up = stats(link=link(True))
    assert liveness(up, now=1000.0, started_at=0.0, link_down_limit=60.0).ok
    down = stats(link=link(False, disconnected_since=900.0))
    assert liveness(down, now=959.0, started_at=0.0, link_down_limit=60.0).ok
    verdict = liveness(down, now=961.0, started_at=0.0, link_down_limit=60.0)
    assert not verdict.ok
    assert verdict.reason == "link down for 61s (limit 60s)"
    # Never connected: counted from the start.
    starting = stats(serving=False)
    assert liveness(starting, now=59.0, started_at=0.0, link_down_limit=60.0).ok
    assert not liveness(starting, now=61.0, started_at=0.0, link_down_limit=60.0).ok


def test_readiness_needs_started_connected_joined_and_not_draining() -> None:
    ready = stats(link=link(True))
    assert readiness(ready, started=True).ok
    assert readiness(ready, started=False).reason == "starting"
    assert readiness(stats(link=link(False)), started=True).reason == "link down"
    assert readiness(stats(link=link(True), joining=2), started=True).reason == "2 room(s) joining"
    assert readiness(stats(link=link(True), draining=True), started=True).reason == "draining"


@pytest.mark.parametrize(
    ("path", "route"),
    [
        ("/api/v1/agent/me", "me"),
        ("/api/v1/agent/chats", "rooms"),
        ("/api/v1/agent/chats/r-1", "rooms"),
        ("/api/v1/agent/chats/r-1/messages", "messages"),
        ("/api/v1/agent/chats/r-1/messages/next", "next"),
        ("/api/v1/agent/chats/r-1/messages/m-9/processed", "marks"),
        ("/api/v1/agent/chats/r-1/messages/next/failed", "marks"),
        ("/api/v1/agent/chats/r-1/participants/p-2", "participants"),
        ("/api/v1/agent/chats/r-1/context", "context"),
        ("/api/v1/agent/memories/x/archive", "memories"),
        ("/api/v1/agent/contacts/requests/respond", "contacts"),
        ("/api/v1/agent/chats/r-1/unknown", "other"),
        ("/elsewhere", "other"),
    ],
)
def test_route_classes_carry_no_ids(path: str, route: str) -> None:
    assert route_class(path) == route


def test_call_outcomes() -> None:
    assert call_outcome(None) == "ok"
    assert call_outcome(NotFoundError(404)) == "4xx"
    assert call_outcome(BandTimeoutError("slow")) == "timeout"
    assert call_outcome(BandConnectionError("gone")) == "connection"
    assert call_outcome(ValueError("x")) == "error"


def test_without_prometheus_client_metrics_answer_501_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(MissingExtraError, match=r"band-trio\[metrics\]"):
        metrics_renderer(stats)
    handler = health_handler(AgentConfig(), stats, HealthState(0.0, started=True), "needs it")
    assert handler("/metrics") == ProbeResponse(501, b"needs it\n")


async def request(port: int, raw: bytes) -> bytes:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(raw)
        data = b""
        try:
            while chunk := await stream.receive_some(65536):
                data += chunk
        except trio.BrokenResourceError:
            # The server closed with our unread bytes in its buffer: the
            # kernel resets the connection, and may drop the answer with it.
            return data or b"reset"
    return data


async def test_the_http_shell_refuses_malformed_and_oversized_requests() -> None:
    def handler(path: str) -> ProbeResponse:
        if path == "/boom":
            raise RuntimeError("a bug")
        return ProbeResponse(200, path.encode())

    async with trio.open_nursery() as nursery:
        _host, port = await nursery.start(serve_http, handler, "127.0.0.1", 0)
        with trio.fail_after(10):
            assert (await request(port, b"NONSENSE\r\n\r\n")).startswith(b"HTTP/1.1 400 ")
            huge = b"GET /livez HTTP/1.1\r\nhost: x\r\nx: " + b"a" * 20_000 + b"\r\n\r\n"
            answer = await request(port, huge)
            assert answer.startswith(b"HTTP/1.1 431 ") or answer == b"reset"
            body = b"GET /x HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\n\r\nabc"
            assert (await request(port, body)).startswith(b"HTTP/1.1 413 ")
            crashed = await request(
                port, b"GET /boom HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
            )
            assert crashed.startswith(b"HTTP/1.1 500 ")
            ok = await request(port, b"GET /a?b HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            assert ok.startswith(b"HTTP/1.1 200 ")
            assert ok.endswith(b"\r\n\r\n/a")
        nursery.cancel_scope.cancel()


async def test_an_idle_connection_is_closed(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        _host, port = await nursery.start(
            serve_http, lambda path: ProbeResponse(200, b""), "127.0.0.1", 0
        )
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            await stream.send_all(b"GET /livez HTTP/1.1\r\n")  # and nothing more
            with trio.fail_after(60):
                assert await stream.receive_some(100) == b""
        nursery.cancel_scope.cancel()


def test_the_same_metrics_are_opentelemetry_instruments() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    metrics = OtelMetrics(provider)
    snapshot = stats(completed=3, rooms=2, link=link(True))
    metrics.add("agent-1", lambda: snapshot)
    data = reader.get_metrics_data()
    assert data is not None
    points: dict[str, list[tuple[dict[str, object], float]]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points[metric.name] = [
                    (dict(p.attributes or {}), p.value)  # type: ignore[union-attr]
                    for p in metric.data.data_points
                ]
    # Every instrument with something to report (no REST client nor ledger here).
    expected = {otel_name(i.name) for i in INSTRUMENTS if list(i.read(snapshot))}
    assert "band_trio.rest_calls" not in expected
    assert set(points) >= expected
    assert ({AGENT_ATTRIBUTE: "agent-1", "outcome": "completed"}, 3) in points["band_trio.turns"]
    assert points["band_trio.rooms"] == [({AGENT_ATTRIBUTE: "agent-1"}, 2)]
    assert "band_trio.turn_duration.count" in points
    metrics.discard("agent-1")
    provider.shutdown()


def test_the_turn_duration_histogram_is_cumulative_over_every_turn() -> None:
    durations = TurnDurations(window=2)
    for seconds in (0.05, 0.1, 0.3, 2000.0):
        durations.record(seconds)
    stats_now = durations.statistics()
    assert stats_now.total == pytest.approx(2000.45)
    assert stats_now.buckets[BUCKETS.index(0.1)] == 2  # a bound is inclusive
    assert stats_now.buckets[BUCKETS.index(0.5)] == 3
    assert stats_now.buckets[-1] == 3  # 2000 s is past the last bound: only in +Inf (count)
    assert stats_now.count == 4


class Threaded(SimpleAdapter[HistoryProvider]):
    def stuck_threads(self) -> int:
        return 2


def test_an_adapter_reporting_stuck_threads_shows_in_the_statistics() -> None:
    assert isinstance(Threaded(), ReportsStuckThreads)
    runtime = PlatformRuntime(AgentSettings(agent_id="a", api_key="k" * 40))
    assert Agent(runtime, Threaded()).statistics().stuck_threads == 2
    assert Agent(runtime, SimpleAdapter()).statistics().stuck_threads == 0


def test_run_help_lists_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    for status, meaning in (
        (EXIT_DRAINED, "drained"),
        (EXIT_CRASHED, "crashed"),
        (EXIT_BAD_CONFIG, "bad configuration"),
        (EXIT_SUPERSEDED, "superseded"),
    ):
        assert f"  {status}  {meaning}" in text


def test_exit_statuses_follow_the_error() -> None:
    assert exit_status(None) == EXIT_DRAINED
    assert exit_status(SupersededError(reason="newer", message="m")) == EXIT_SUPERSEDED
    assert exit_status(AgentAlreadyRunningError("locked")) == EXIT_SUPERSEDED
    assert exit_status(BandConfigError("bad")) == EXIT_BAD_CONFIG
    assert exit_status(AuthenticationError(401)) == EXIT_BAD_CONFIG
    assert exit_status(BandConnectionError("unreachable")) == EXIT_CRASHED
    assert exit_status(RuntimeError("bug")) == EXIT_CRASHED
