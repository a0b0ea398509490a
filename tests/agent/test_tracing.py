"""Optional OpenTelemetry tracing: a span per turn, child spans per REST call
and per tool call, the ids as attributes and never a key; nothing at all when
no tracer provider is configured."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import trio
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from band_trio import AgentConfig, SimpleAdapter, open_agent
from band_trio._tracing import span, tracing_enabled
from band_trio.adapter import AgentToolsProtocol, HistoryProvider, PlatformMessage
from band_trio.local import HumanClient, LocalPlatform


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """A tracer provider exporting to memory, set as the global one for the test
    only (the API allows setting it once per process, so the global is swapped
    and restored instead)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    yield memory
    provider.shutdown()


def test_no_provider_means_no_spans() -> None:
    assert not tracing_enabled()
    first, second = span("band.turn"), span("band.rest GET")
    assert first is second  # one shared no-op: nothing is built per call
    with first as current:
        assert current is None


class Echo(SimpleAdapter[HistoryProvider]):
    def __init__(self) -> None:
        super().__init__()
        self.replied = trio.Event()

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
        await tools.send_message(f"echo: {msg.content}", [msg.sender_id])
        self.replied.set()


def _parent(item: ReadableSpan) -> int | None:
    return item.parent.span_id if item.parent is not None else None


async def test_a_turn_is_a_span_with_its_rest_and_tool_calls_as_children(
    band_platform: LocalPlatform, exporter: InMemorySpanExporter
) -> None:
    assert tracing_enabled()
    creds = band_platform.agents[0]
    adapter = Echo()
    with trio.fail_after(30):
        async with HumanClient(
            base_url=band_platform.rest_url, api_key=band_platform.user.api_key
        ) as human:
            room = await human.create_room(title="traced")
            room_id = str(room["id"])
            await human.add_participant(room_id, creds.id)
            async with open_agent(
                adapter=adapter,
                agent_id=creds.id,
                api_key=creds.api_key,
                rest_url=band_platform.rest_url,
                ws_url=band_platform.ws_url,
                config=AgentConfig(state_dir=None, shutdown_timeout=1.0),
            ) as agent:
                sent = await human.post_message(
                    room_id, f"@{creds.handle} hi", mentions=[creds.handle]
                )
                await adapter.replied.wait()
                while agent.statistics().completed < 1:  # noqa: ASYNC110 - counters
                    await trio.sleep(0.01)
    spans = exporter.get_finished_spans()
    (turn,) = [s for s in spans if s.name == "band.turn"]
    assert turn.attributes is not None
    assert turn.attributes["band.agent_id"] == creds.id
    assert turn.attributes["band.room_id"] == room_id
    assert turn.attributes["band.message_id"] == str(sent["id"])
    turn_id = turn.context.span_id
    (tool,) = [s for s in spans if s.name == "band.tool band_send_message"]
    assert _parent(tool) == turn_id
    # The reply's POST is a child of the tool call; the lifecycle marks are
    # children of the turn.
    posts = [s for s in spans if s.name == "band.rest POST" and _parent(s) == tool.context.span_id]
    assert posts
    assert posts[0].attributes is not None
    assert posts[0].attributes["http.response.status_code"] in (200, 201)
    marks = [
        s
        for s in spans
        if s.name.startswith("band.rest")
        and _parent(s) == turn_id
        and str((s.attributes or {}).get("url.path", "")).endswith("/processing")
    ]
    assert marks
    # REST calls outside any turn (listing rooms) are spans of their own.
    assert any(s.name == "band.rest GET" and s.parent is None for s in spans)
    # Never a key, in any attribute of any span.
    for item in spans:
        for value in (item.attributes or {}).values():
            assert creds.api_key not in str(value)
            assert band_platform.user.api_key not in str(value)
