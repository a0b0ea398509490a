"""End-to-end tests of the agent runtime against the local platform (loopback).

Reference: docs/reference/official-runtime.rst. The test docstrings cite the
"Testable behaviours" they cover.
"""

# Coverage of the official runtime's "Testable behaviours" by the tests (paths
# under tests/), statement: file (``differs`` = band-trio deliberately differs,
# see docs/differences.rst; wire/..., tools = covered by that layer's own tests).
#   1 agent/test_lifecycle (env), runtime/core/test_config
#   2-4 agent/test_config_knobs (state lock; differs)
#   5 agent/test_config_knobs
#   6 agent/test_config_knobs (BandConfigError)
#   7 agent/test_config_knobs (before the socket)
#   8 agent/test_capabilities (at the tools)
#   9 agent/test_lifecycle (start returns once joined), differs in part
#   10, 11 runtime/room/test_joins
#   12 agent/test_room_recovery
#   13-15, 17, 19-25 differs (no start/stop; cancellation is the lifecycle)
#   16, 18 agent/test_shutdown, runtime/room/test_shutdown (differs: one global deadline,
#       concurrent cleanup, time independent of the room count)
#   26 agent/test_faults_process (SIGTERM)
#   27 differs
#   28 agent/test_lifecycle (differs)
#   29 agent/test_conflict
#   30 wire/test_link (heartbeats)
#   31 agent/test_lifecycle (call order)
#   32 runtime/claims/test_ledger, agent/test_faults (processed 500s)
#   33 differs (retryable acks never given up)
#   34, 39 agent/test_lifecycle, runtime/claims/test_ledger
#   35 agent/test_config_knobs
#   36 runtime/claims/test_ledger
#   37 runtime/room/test_timing (refused claims)
#   38 runtime/room/test_timing (gated claims)
#   40 agent/test_lifecycle (serial)
#   41 agent/test_lifecycle
#   42 agent/test_faults (differs: class-name label)
#   43 agent/test_config_knobs
#   44, 45 agent/test_faults (poison; restart), runtime/claims/test_ledger
#   46 runtime/claims/test_ledger, agent/test_control (stopped message re-run after play)
#   47 runtime/room/test_timing, agent/test_faults (hang)
#   48 agent/test_faults (fifty rooms)
#   49 agent/test_room_recovery
#   50 agent/test_room_recovery (overflow order)
#   51, 52 agent/test_lifecycle (backlog before live)
#   53 differs, agent/test_faults
#   54, 55 runtime/room/test_timing, runtime/core/test_schedule
#   56 runtime/core/test_schedule, agent/test_room_recovery
#   57 runtime/room/test_timing (acks retried before /next; /next not read while an ack fails),
#       agent/test_faults (bursts)
#   58 agent/test_lifecycle
#   59, 60 agent/test_config_knobs
#   61 runtime/core/test_history
#   62, 63 agent/test_lifecycle, adapter/test_roster
#   64 adapter/test_roster
#   65 agent/test_participants
#   66 agent/test_room_recovery
#   67 runtime/room/test_commit
#   68 agent/test_contacts
#   69 runtime/core/test_preprocessor
#   70 runtime/core/test_preprocessor
#   71 agent/test_room_recovery
#   72, 74, 77 agent/test_room_membership
#   73 agent/test_room_membership
#   75 differs (the engine keeps the completed cache), agent/test_room_membership
#   76 differs
#   78 agent/test_room_recovery
#   79 agent/test_control
#   80, 81 runtime/core/test_schedule (80 also agent/test_control)
#   82 structural (applied synchronously in arrival order)
#   83, 85, 86, 87 agent/test_control
#   84 agent/test_interrupt
#   88 runtime/room/test_timing
#   89 agent/test_room_recovery (403)
#   90 runtime/room/test_timing (activity echo)
#   91 differs
#   92 agent/test_lifecycle, runtime/room/test_activity (differs: concurrent)
#   93 agent/test_config_knobs
#   94 runtime/room/test_commit
#   95 agent/test_faults (activity 500s)
#   96 runtime/core/test_config
#   97-102 agent/test_contacts, tools
#   103, 104, 107, 108 tools
#   105 differs (overflow -> resync), agent/test_room_recovery
#   106 wire/test_link
#   109-111 differs
#   112 differs, runtime/core/test_config

from __future__ import annotations

import logging

import httpx
import pytest
import trio

import band_trio
import band_trio.runtime
from band_trio.adapter import AgentToolsProtocol, PlatformMessage
from band_trio.agent import Agent, open_agent
from band_trio.errors import AuthenticationError, BandConfigError, SupersededError
from band_trio.runtime.config import AgentConfig, AgentSettings
from band_trio.runtime.platform_runtime import PlatformRuntime
from band_trio.wire.events import MessageCreated

from .harness import (
    RecordingAdapter,
    fast_config,
    scene,
    serving,
    token,
)


def test_public_names_are_exported() -> None:
    for name in ("Agent", "open_agent", "AgentStatistics", "AgentConfig"):
        assert hasattr(band_trio, name), name
    assert band_trio.runtime.PlatformRuntime is PlatformRuntime


def test_create_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAND_AGENT_ID", "agent-1")
    monkeypatch.setenv("BAND_API_KEY", "sekret-key")
    monkeypatch.setenv("BAND_REST_URL", "http://127.0.0.1:9")
    monkeypatch.delenv("BAND_WS_URL", raising=False)
    agent = Agent.create(adapter=RecordingAdapter())
    assert agent.runtime.agent_id == "agent-1"
    assert agent.runtime.ws_url == "ws://127.0.0.1:9/api/v1/socket/websocket"
    assert "sekret" not in repr(agent)
    assert "sekret" not in repr(agent.runtime)


def test_create_without_settings_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("BAND_AGENT_ID", "BAND_API_KEY", "BAND_REST_URL", "BAND_WS_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(BandConfigError, match="BAND_AGENT_ID"):
        Agent.create(adapter=RecordingAdapter())


def test_agent_refuses_an_object_that_is_not_an_adapter() -> None:
    runtime = PlatformRuntime(AgentSettings(agent_id="a", api_key="k"))
    with pytest.raises(BandConfigError, match="has no on_"):
        Agent(runtime, object())  # type: ignore[arg-type]


async def test_start_returns_once_rooms_are_joined(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Existing rooms are joined before serve() reports started (official runtime, "Testable
    behaviours" 9)."""
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            rooms = {await s.new_room() for _ in range(3)}
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter)
            async with serving(agent):
                assert rooms <= agent.room_ids
                assert adapter.started_with is not None
                stats = agent.statistics()
                assert stats.serving
                assert stats.rooms >= 3


async def test_first_turn_call_order(band_platform) -> None:  # type: ignore[no-untyped-def]
    """/next (startup), participants, context, processing, handler, processed.

    band-trio reports activity concurrently with the turn (never delaying it),
    so ``working: true`` is only required to come after the claim and
    ``working: false`` after the handler (official runtime, "Testable behaviours" 31).
    """
    calls: list[str] = []

    class Recording(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            path = request.url.path
            if path.endswith("/agent/chats") and b"include=participants" in request.url.query:
                # The rosters come with the room listing.
                calls.append("GET participants")
            if "/chats/" in path:
                tail = path.split("/chats/", 1)[1].split("/", 1)
                what = tail[1] if len(tail) > 1 else ""
                if what == "activity":
                    what += (b"true" in request.content and ":true") or ":false"
                elif what.startswith("messages/") and what.count("/") == 2:
                    what = "mark:" + what.rsplit("/", 1)[1]
                calls.append(f"{request.method} {what}")
            return await super().handle_async_request(request)

    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            order: list[str] = []

            async def behaviour(adapter, msg, tools):  # type: ignore[no-untyped-def]
                calls.append("handler")
                await tools.send_message(f"echo {msg.content}", [msg.sender_id])

            settings = AgentSettings(
                agent_id=s.agent_id,
                api_key=s.agent_key,
                rest_url=band_platform.rest_url,
                ws_url=band_platform.ws_url,
            )
            runtime = PlatformRuntime(
                settings, fast_config(working_grace=0), rest_options={"transport": Recording()}
            )
            agent = Agent(runtime, RecordingAdapter(behaviour), handle_signals=False)
            async with serving(agent):
                await s.wait_for(lambda: "GET messages/next" in calls)
                mid = await s.post(room_id, "hello")
                await s.wait_for(lambda: s.processed(room_id, mid))
                await s.wait_for(lambda: "POST activity:false" in calls)
            order = [c for c in calls if c != "GET messages/next"]
            first = [
                c
                for c in order
                if c
                in (
                    "GET participants",
                    "GET context",
                    "POST mark:processing",
                    "handler",
                    "POST mark:processed",
                )
            ]
            assert first == [
                "GET participants",
                "GET context",
                "POST mark:processing",
                "handler",
                "POST mark:processed",
            ]
            assert order.index("POST activity:true") > order.index("POST mark:processing")
            assert order.index("POST activity:false") > order.index("handler")


async def test_backlog_runs_oldest_first_before_live(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Backlog from /next first, oldest first; live messages after, once (official runtime,
    "Testable behaviours" 51, 52)."""
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            words = [token("b") for _ in range(4)]
            posted = {await s.post(room_id, w): w for w in words}
            adapter = RecordingAdapter()
            async with serving(s.make_agent(adapter)):
                live = token("live")
                posted[await s.post(room_id, live)] = live
                await s.wait_for(lambda: all(s.processed(room_id, m) for m in posted))
            seen = [next(w for w in [*words, live] if w in c) for c in adapter.contents(room_id)]
            assert seen == [*words, live]
            s.assert_exactly_once(room_id, posted)


async def test_turns_are_serial_in_a_room_and_concurrent_across_rooms(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Pins (official runtime, "Testable behaviours" 40, 41)."""
    both_running = trio.Event()

    async def behaviour(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        if "pair" in msg.content:
            # Only returns once both rooms' turns have overlapped.
            await s.wait_for(lambda: adapter.max_running >= 2, within=5)
            both_running.set()
        else:
            await trio.sleep(0.02)
        await tools.send_message(f"echo: {msg.content}", [msg.sender_id])

    with trio.fail_after(30):
        async with scene(band_platform) as s:
            a, b = await s.new_room(), await s.new_room()
            adapter = RecordingAdapter(behaviour)
            async with serving(s.make_agent(adapter)):
                pa = await s.post(a, "pair A")
                pb = await s.post(b, "pair B")
                await s.wait_for(lambda: s.processed(a, pa) and s.processed(b, pb))
                assert both_running.is_set()
                adapter.max_running = 0
                serial = [await s.post(a, token("s")) for _ in range(4)]
                await s.wait_for(lambda: all(s.processed(a, m) for m in serial))
                assert adapter.max_running == 1


async def test_own_messages_and_duplicates_are_not_run(band_platform) -> None:  # type: ignore[no-untyped-def]
    """A redelivered message and an own echo cause no turn (official runtime, "Testable
    behaviours" 34, 39)."""
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter)
            async with serving(agent):
                word = token()
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
                stored = s.room_state(room_id).by_id[mid]
                engine = agent._engine
                assert engine is not None
                room = engine.room(room_id)
                assert room is not None
                base = dict(
                    room_id=room_id,
                    content=stored.content,
                    message_type="text",
                    inserted_at=stored.inserted_at,
                    updated_at=stored.updated_at,
                )
                duplicate = MessageCreated(
                    id=mid, sender_id=stored.sender_id, sender_type="User", **base
                )
                own = MessageCreated(
                    id="own-" + mid, sender_id=s.agent_id, sender_type="Agent", **base
                )
                assert room.deliver(duplicate)
                assert room.deliver(own)
                await s.wait_for(lambda: room.statistics().inbox_depth == 0)
                await s.wait_for(lambda: not room.busy)
                assert len(adapter.calls) == 1
                assert s.replies_to(room_id, word) == 1
                assert room.statistics().skipped >= 2


async def test_participants_msg_and_bootstrap(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Participants on the first turn and after a change; bootstrap history only on the first
    turn, strictly before the trigger (official runtime, "Testable behaviours" 58, 62, 63)."""
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            early = await s.post(room_id, "early words")
            adapter = RecordingAdapter()
            async with serving(s.make_agent(adapter)):
                await s.wait_for(lambda: s.processed(room_id, early))
                second = await s.post(room_id, "second")
                await s.wait_for(lambda: s.processed(room_id, second))
                other = band_platform.register_agent("Zed Helper", "Helps with tests.")
                await s.human.add_participant(room_id, other.id)
                third = await s.post(room_id, "third")
                await s.wait_for(lambda: s.processed(room_id, third))
            first, two, three = adapter.calls_for(room_id)
            assert first.is_session_bootstrap
            assert not two.is_session_bootstrap
            assert first.participants_msg is not None
            assert "## Current Participants" in first.participants_msg
            assert two.participants_msg is None
            assert three.participants_msg is not None
            assert f"@{other.handle}" in three.participants_msg
            assert len(two.history) == 0


async def test_history_is_the_newest_before_the_trigger(band_platform) -> None:  # type: ignore[no-untyped-def]
    """The newest messages, cut before the trigger (beats official runtime, "Weak spots" 3)."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            # Build context while no agent runs: each mention is a context message.
            words = [token("h") for _ in range(6)]
            ids = [await s.post(room_id, w) for w in words]
            config = fast_config(max_history_messages=3, history_page_size=2)
            adapter = RecordingAdapter()
            async with serving(s.make_agent(adapter, config)):
                await s.wait_for(lambda: all(s.processed(room_id, m) for m in ids))
            first = adapter.calls_for(room_id)[0]
            assert first.is_session_bootstrap
            # The first turn answers the oldest message: nothing before it.
            assert len(first.history) == 0
            assert words[0] in first.msg.content


async def test_bootstrap_history_is_cut_before_the_trigger(band_platform) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            words = [token("h") for _ in range(6)]
            ids = [await s.post(room_id, w) for w in words]
            # Mark the first five processed by running an agent, then restart a
            # fresh one (new worker = new bootstrap) for the sixth.
            config = fast_config(max_history_messages=3, history_page_size=2)
            first_adapter = RecordingAdapter()
            async with serving(s.make_agent(first_adapter, config)):
                await s.wait_for(lambda: all(s.processed(room_id, m) for m in ids))
            last = token("h")
            adapter = RecordingAdapter()
            async with serving(s.make_agent(adapter, config)):
                mid = await s.post(room_id, last)
                await s.wait_for(lambda: s.processed(room_id, mid))
            call = adapter.calls_for(room_id)[0]
            assert call.is_session_bootstrap
            texts = [item.content for item in call.history.raw]
            assert len(texts) == 3
            assert all(last not in t for t in texts)
            # Newest first-class: the last context items are the agent's replies
            # and the newest human messages, never the oldest ones.
            assert not any(words[0] in t for t in texts)


async def test_bad_key_surfaces_one_typed_error(band_platform) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(20):
        creds = band_platform.agents[0]
        with pytest.raises(AuthenticationError):
            async with open_agent(
                adapter=RecordingAdapter(),
                agent_id=creds.id,
                api_key="wrong-key",
                rest_url=band_platform.rest_url,
                ws_url=band_platform.ws_url,
                config=AgentConfig(state_dir=None),
            ):
                pytest.fail("the block must not run")


async def test_open_agent_runs_for_the_block_and_reraises_the_block_error(band_platform) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            with pytest.raises(KeyError):  # noqa: PT012 - the block is the subject
                async with open_agent(
                    adapter=adapter,
                    agent_id=s.agent_id,
                    api_key=s.agent_key,
                    rest_url=band_platform.rest_url,
                    ws_url=band_platform.ws_url,
                    config=fast_config(),
                ) as agent:
                    s.watch(agent)
                    mid = await s.post(room_id, "hi")
                    await s.wait_for(lambda: s.processed(room_id, mid))
                    await s.wait_for(lambda: agent.statistics().completed >= 1)
                    raise KeyError("boom")
            assert adapter.cleanups == [room_id]


async def test_statistics_snapshot_is_frozen(band_platform) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            agent = s.make_agent(RecordingAdapter())
            async with serving(agent):
                mid = await s.post(room_id, "count me")
                await s.wait_for(lambda: s.processed(room_id, mid))
                await s.wait_for(lambda: agent.statistics().completed == 1)
                stats = agent.room_statistics(room_id)
                assert stats is not None
                assert stats.turns == 1
                assert stats.completed == 1
                assert stats.failures == 0
                with pytest.raises(AttributeError):
                    stats.turns = 5  # type: ignore[misc]
            assert not agent.statistics().serving


async def test_wait_for_wakes_on_the_agents_own_state(band_platform) -> None:  # type: ignore[no-untyped-def]
    """``Agent.wait_for`` needs no other wake-up source: serving starts and stops,
    a room is joined, a message settles, each wakes the waiter."""
    with trio.fail_after(20):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            agent = s.make_agent(RecordingAdapter())
            woke = trio.Event()

            async def until_serving() -> None:
                await agent.wait_for(lambda: agent.statistics().serving)
                woke.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(until_serving)
                await trio.lowlevel.checkpoint()
                await nursery.start(agent.serve)
                await woke.wait()  # woken by the start, nothing else
                await s.post(room_id, "count me")
                await agent.wait_for(lambda: agent.statistics().completed == 1)
                later = await s.new_room()
                await agent.wait_for(lambda: later in agent.room_ids)
                agent.request_shutdown()
                await agent.wait_for(lambda: not agent.statistics().serving)
            assert agent.statistics().completed == 0  # zeros once stopped


async def test_api_key_never_reaches_the_logs(
    band_platform, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    """Keys never logged: a full run at DEBUG, a failing turn and a dropped socket."""

    async def fail_once(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        if len(adapter.calls) == 1:
            raise RuntimeError("boom")
        await tools.send_message(f"echo: {msg.content}", [msg.sender_id])

    caplog.set_level(logging.DEBUG)
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            agent = s.make_agent(RecordingAdapter(fail_once))
            async with serving(agent):
                mid = await s.post(room_id, "log me")
                await s.wait_for(lambda: s.processed(room_id, mid))
                await band_platform.drop_agent_sockets(s.agent_id)
                await s.wait_for(lambda: agent.statistics().reconnects >= 1)
            assert s.agent_key not in caplog.text
            assert "room " in caplog.text  # room ids are logged
            assert s.agent_key not in repr(agent.runtime.settings)


async def test_superseded_agent_stops_with_one_typed_error(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Deliberately different from (official runtime, "Testable behaviours" 28), see
    docs/differences.rst: a newer connection
    evicts ours; serve() shuts down and raises SupersededError, not a group."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            old_adapter = RecordingAdapter()
            old = s.make_agent(old_adapter)
            errors: list[BaseException] = []

            async def run_old(
                task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
            ) -> None:
                try:
                    await old.serve(task_status=task_status)
                except SupersededError as exc:
                    errors.append(exc)

            async with trio.open_nursery() as nursery:
                await nursery.start(run_old)
                new_adapter = RecordingAdapter()
                async with serving(s.make_agent(new_adapter)):
                    await s.wait_for(lambda: bool(errors))
                    mid = await s.post(room_id, "for the new one")
                    await s.wait_for(lambda: s.processed(room_id, mid))
            assert isinstance(errors[0], SupersededError)
            assert old_adapter.cleanups == [room_id]
            assert [c.msg.id for c in new_adapter.calls] == [mid]
