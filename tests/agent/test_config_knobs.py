"""AgentConfig knobs and small lifecycle rules, end to end (official runtime, "Testable
behaviours" 5, 35, 43, 59, 60, 93).

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import httpx
import pytest
import trio

from band_trio.wire.events import MessageCreated, MessageMetadata

from .harness import RecordingAdapter, fast_config, scene, serving, token


class Counting(httpx.AsyncHTTPTransport):
    """Counts requests per path suffix (``context``, ``activity``, ...)."""

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []
        self.queries: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        self.queries.append(str(request.url.query, "ascii"))
        return await super().handle_async_request(request)

    def count(self, suffix: str) -> int:
        return sum(1 for p in self.paths if p.endswith(suffix))

    def roster_listings(self) -> int:
        """Room listings that carried the rosters (``include=participants``)."""
        return sum(
            1
            for p, q in zip(self.paths, self.queries, strict=True)
            if p.endswith("/agent/chats") and "include=participants" in q
        )


async def test_me_rate_limits_are_waited_out(band_platform) -> None:  # type: ignore[no-untyped-def]
    """GET /agent/me answered 429 is retried (beyond the REST client's own
    retries) before the agent starts (official runtime, "Testable behaviours" 5)."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            fault = band_platform.faults.add("GET", r"/api/v1/agent/me$", 429, 6, retry_after=0.01)
            agent = s.make_agent(RecordingAdapter(), fast_config(me_retry_delays=(0.01,) * 5))
            async with serving(agent):
                assert agent.agent_name is not None
            assert fault.hits == 6


async def test_hydration_off_and_no_activity_reports(band_platform) -> None:  # type: ignore[no-untyped-def]
    """No context call, empty history, participants still loaded (official runtime,
    "Testable behaviours" 59); enable_working_state=False sends no activity reports
    ("Testable behaviours" 93)."""
    transport = Counting()
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            config = fast_config(enable_context_hydration=False, enable_working_state=False)
            agent = s.make_agent(adapter, config, rest_options={"transport": transport})
            async with serving(agent):
                mid = await s.post(room_id, token())
                await s.wait_for(lambda: s.processed(room_id, mid))
            (call,) = adapter.calls
            assert call.is_session_bootstrap
            assert len(call.history) == 0
            assert call.participants_msg is not None
            assert transport.count("/context") == 0
            assert transport.count("/activity") == 0
            # The roster came with the room listing, or from its own endpoint.
            assert transport.count("/participants") + transport.roster_listings() >= 1


async def test_history_failure_gives_an_empty_history(band_platform) -> None:  # type: ignore[no-untyped-def]
    """The turn proceeds with an empty history when the context call fails (official runtime,
    "Testable behaviours" 60)."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            band_platform.faults.add("GET", r"/context$", 404, 1)
            adapter = RecordingAdapter()
            async with serving(s.make_agent(adapter)):
                word = token()
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
            (call,) = adapter.calls
            assert call.is_session_bootstrap
            assert len(call.history) == 0
            s.assert_exactly_once(room_id, {mid: word})


async def test_no_error_event_when_failures_are_not_reported(band_platform) -> None:  # type: ignore[no-untyped-def]
    """report_turn_failures=False marks the message failed, posts nothing (official runtime,
    "Testable behaviours" 43)."""

    async def boom(adapter: RecordingAdapter, msg: object, tools: object) -> None:
        raise RuntimeError("boom")

    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            agent = s.make_agent(
                RecordingAdapter(boom), fast_config(max_attempts=1, report_turn_failures=False)
            )
            async with serving(agent):
                mid = await s.post(room_id, "fails")
                await s.wait_for(lambda: s.status(room_id, mid) == "failed")
                await s.wait_for(lambda: agent.statistics().failed_for_good == 1)
            assert s.agent_events(room_id, "error") == []
            assert [a.error for a in s.delivery(room_id, mid).attempts] == ["RuntimeError"]


async def test_platform_processed_status_is_trusted(band_platform) -> None:  # type: ignore[no-untyped-def]
    """A message whose delivery status says processed (here: handled by an earlier process whose
    ledger is gone) is skipped without a claim (official runtime, "Testable behaviours" 35)."""
    transport = Counting()
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            async with serving(s.make_agent(RecordingAdapter())):
                mid = await s.post(room_id, token())
                await s.wait_for(lambda: s.processed(room_id, mid))
            stored = s.room_state(room_id).by_id[mid]
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter, rest_options={"transport": transport})
            async with serving(agent):
                room = agent._engine.room(room_id)  # type: ignore[union-attr]
                assert room is not None
                replay = MessageCreated(
                    room_id=room_id,
                    id=mid,
                    content=stored.content,
                    message_type="text",
                    sender_id=stored.sender_id,
                    sender_type="User",
                    inserted_at=stored.inserted_at,
                    updated_at=stored.updated_at,
                    metadata=MessageMetadata(delivery_status={s.agent_id: {"status": "processed"}}),
                )
                assert room.deliver(replay)
                await s.wait_for(lambda: room.statistics().skipped == 1)
            assert adapter.calls == []
            assert transport.count("/processing") == 0


async def test_on_started_runs_before_the_socket_connects(band_platform) -> None:  # type: ignore[no-untyped-def]
    """The adapter is started (with the /me name) before any socket (official runtime, "Testable
    behaviours" 7)."""
    connected_at_start: list[bool] = []

    class Adapter(RecordingAdapter):
        async def on_started(self, agent_name: str, agent_description: str) -> None:
            connected_at_start.append(band_platform.connected(self_id))
            await super().on_started(agent_name, agent_description)

    with trio.fail_after(30):
        async with scene(band_platform) as s:
            self_id = s.agent_id
            adapter = Adapter()
            async with serving(s.make_agent(adapter)):
                assert band_platform.connected(s.agent_id)
            assert connected_at_start == [False]
            assert adapter.started_with is not None
            assert adapter.started_with[0] == band_platform.agents[0].name


async def test_cancelled_during_startup_returns_promptly(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Cancelling serve() before it started aborts the startup at once (no
    graceful phase for an agent that never ran)."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            band_platform.faults.add("GET", r"/api/v1/agent/me$", 200, 1, delay=float("inf"))
            agent = s.make_agent(RecordingAdapter())
            with trio.move_on_after(0.5) as scope:
                async with trio.open_nursery() as nursery:
                    await nursery.start(agent.serve)
            assert scope.cancelled_caught
            assert not agent.statistics().serving


async def test_agent_without_a_description_is_refused(band_platform) -> None:  # type: ignore[no-untyped-def]
    """The platform reports an empty description: serve() fails with a clear BandConfigError
    (one error, not a group) and the adapter never starts (official runtime, "Testable
    behaviours" 6)."""
    from band_trio.errors import BandConfigError

    blank = band_platform.register_agent("Blank", " ")
    adapter = RecordingAdapter()
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            s.agent_id, s.agent_key = blank.id, blank.api_key
            with pytest.raises(BandConfigError, match="description"):
                await s.make_agent(adapter).serve()
    assert adapter.started_with is None


async def test_a_second_agent_on_the_same_state_is_refused(band_platform, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The durable state is locked before any adapter hook or I/O
    (an in-memory ledger takes no lock) (official runtime, "Testable behaviours" 2-4)."""
    from band_trio.errors import AgentAlreadyRunningError

    config = fast_config(state_dir=tmp_path)
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            async with serving(s.make_agent(RecordingAdapter(), config)):
                second = RecordingAdapter()
                with pytest.raises(AgentAlreadyRunningError):
                    await s.make_agent(second, config).serve()
                assert second.started_with is None
            # Released on exit: a later run on the same state starts.
            async with serving(s.make_agent(RecordingAdapter(), config)):
                pass
