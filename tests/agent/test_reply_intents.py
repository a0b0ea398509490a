"""A reply post whose outcome was never learned is never posted twice.

The tools journal a digest of each reply before posting it; when the message
comes up again with that intent still open, the room looks for the reply on
the platform (the room's context) and, if it landed, only acks the message; a
recovered reply is never taken for a later message's lost one. (The tool call
settles such a post itself first; the room's lookup is for a post the tool
gave up on, or one a killed process never learned. Here the tools give up at
once, so the room's path is what runs.) Each test runs
a real agent over loopback against the local platform and checks the
platform's own state.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import trio

from band_trio.adapter import AgentToolsProtocol, PlatformMessage
from band_trio.errors import InternalServerError
from band_trio.runtime.config import AgentConfig

from .harness import (
    RecordingAdapter,
    echo,
    fast_config,
    scene,
    serving,
    token,
)

REPLY = r"/api/v1/agent/chats/[^/]+/messages$"
CONTEXT = r"/api/v1/agent/chats/[^/]+/context$"


def _config(**overrides: object) -> AgentConfig:
    """The tools give up on a post with unknown outcome at once."""
    return fast_config(unsure_post_timeout=0.01, **overrides)


def _runs(adapter: RecordingAdapter, word: str) -> int:
    return sum(1 for c in adapter.calls if word in c.msg.content)


async def test_a_reply_stored_but_answered_500_is_not_posted_again(band_platform) -> None:  # type: ignore[no-untyped-def]
    """The platform stored the reply and answered 500: the turn fails, and
    when the message comes up again the room finds the reply and only acks."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter, _config())
            async with serving(agent):
                lost = band_platform.faults.add("POST", REPLY, 500, 1, perform=True)
                word = token("stored")
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
                assert lost.hits == 1
                stats = agent.room_statistics(room_id)
                assert stats is not None
                assert stats.replies_recovered == 1
                assert agent.statistics().replies_recovered == 1
                # The room goes on normally afterwards.
                later = token("later")
                later_id = await s.post(room_id, later)
                await s.wait_for(lambda: s.processed(room_id, later_id))
            assert _runs(adapter, word) == 1
            assert s.replies_to(room_id, word) == 1
            # No error event: the message was answered.
            assert s.agent_events(room_id, "error") == []
            s.assert_exactly_once(room_id, {later_id: later})


async def test_a_reply_that_did_not_land_is_posted_on_the_next_attempt(band_platform) -> None:  # type: ignore[no-untyped-def]
    """A 500 without the write: the lookup finds nothing, the turn runs again
    and answers once."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter, _config())
            async with serving(agent):
                failing = band_platform.faults.add("POST", REPLY, 500, 1)
                word = token("unstored")
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
                assert failing.hits == 1
                stats = agent.room_statistics(room_id)
                assert stats is not None
                assert stats.replies_recovered == 0
            assert _runs(adapter, word) == 2
            assert s.replies_to(room_id, word) == 1


async def test_a_failed_lookup_is_retried_before_the_message_runs(band_platform) -> None:  # type: ignore[no-untyped-def]
    """The context read fails twice: the message waits (it is not run again
    blindly), the third lookup finds the stored reply."""
    hit = trio.Event()

    async def behaviour(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        try:
            await echo(adapter, msg, tools)
        except InternalServerError:
            # The reply's 500 was answered: from now on the context reads fail.
            band_platform.faults.add("GET", CONTEXT, 502, 2)
            hit.set()
            raise

    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter(behaviour)
            agent = s.make_agent(adapter, _config())
            async with serving(agent):
                band_platform.faults.add("POST", REPLY, 500, 1, perform=True)
                word = token("lookup")
                mid = await s.post(room_id, word)
                await hit.wait()
                await s.wait_for(lambda: s.processed(room_id, mid))
                stats = agent.room_statistics(room_id)
                assert stats is not None
                assert stats.replies_recovered == 1
            assert _runs(adapter, word) == 1
            assert s.replies_to(room_id, word) == 1


async def test_lookups_that_keep_failing_are_given_up_and_the_message_runs_again(
    band_platform,
) -> None:  # type: ignore[no-untyped-def]
    """The context read keeps failing (beyond the REST client's own retries):
    the room counts the failed lookups across its retries (it is idle between
    them), gives up after the last and runs the message again, since answering
    twice is better than never answering."""
    hit = trio.Event()

    async def behaviour(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        try:
            await echo(adapter, msg, tools)
        except InternalServerError:
            if not hit.is_set():
                band_platform.faults.add("GET", CONTEXT, 502, 1000)
                hit.set()
            raise

    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter(behaviour)
            agent = s.make_agent(adapter, _config())
            async with serving(agent):
                band_platform.faults.add("POST", REPLY, 500, 1, perform=True)
                word = token("given-up")
                mid = await s.post(room_id, word)
                await hit.wait()
                await s.wait_for(lambda: s.processed(room_id, mid))
                stats = agent.room_statistics(room_id)
                assert stats is not None
                assert stats.replies_recovered == 0
            assert _runs(adapter, word) == 2
            assert s.replies_to(room_id, word) == 2


async def test_killed_after_a_stored_reply_with_a_lost_answer_only_acks_after_restart(
    band_platform,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """The process dies after the reply was stored but before its answer was
    read (here: the answer is a 500 and the agent is killed right then). The
    intent is durable: after a restart the message is acked, not answered
    again."""
    config = _config(state_dir=tmp_path, shutdown_timeout=0.0)
    died = trio.Event()

    async def reply_then_die(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        try:
            await echo(adapter, msg, tools)
        except InternalServerError:
            died.set()
            await trio.sleep_forever()  # killed before anything else happens

    with trio.fail_after(40):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            band_platform.faults.add("POST", REPLY, 500, 1, perform=True)
            word = token("killed")
            mid = await s.post(room_id, word)
            first = RecordingAdapter(reply_then_die)
            async with trio.open_nursery() as nursery:
                await nursery.start(s.make_agent(first, config).serve)
                await died.wait()
                nursery.cancel_scope.cancel()  # no grace: the turn is cancelled
            assert s.status(room_id, mid) == "processing"
            assert s.replies_to(room_id, word) == 1
            second = RecordingAdapter()
            agent = s.make_agent(second, config)
            async with serving(agent):
                await s.wait_for(lambda: s.processed(room_id, mid))
                stats = agent.room_statistics(room_id)
                assert stats is not None
                assert stats.replies_recovered == 1
            assert not any(word in c.msg.content for c in second.calls)
            assert s.replies_to(room_id, word) == 1


async def test_an_earlier_identical_reply_does_not_count(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Only a reply posted after the message counts: the same text answering
    an earlier message is not taken for the lost one."""

    async def constant(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        await tools.send_message("noted", [msg.sender_id])

    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter(constant)
            async with serving(s.make_agent(adapter, _config())):
                first = await s.post(room_id, token("first"))
                await s.wait_for(lambda: s.processed(room_id, first))
                # The second reply is refused without being stored (500).
                band_platform.faults.add("POST", REPLY, 500, 1)
                second = await s.post(room_id, token("second"))
                await s.wait_for(lambda: s.processed(room_id, second))
            # The second message ran again and was answered: two "noted" in all.
            assert sum(1 for t in s.agent_texts(room_id) if t.endswith("noted")) == 2
            assert len(adapter.calls) == 3


async def test_a_last_attempt_whose_reply_landed_is_acked_not_failed(band_platform) -> None:  # type: ignore[no-untyped-def]
    """With one attempt allowed, a turn that fails around a stored reply
    (answered 500) would be failed for good with an error event telling the
    room nothing reached it. The reply is looked up at once: the message is
    acked, no error event."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter, _config(max_attempts=1))
            async with serving(agent):
                band_platform.faults.add("POST", REPLY, 500, 1, perform=True)
                word = token("last")
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
                stats = agent.room_statistics(room_id)
                assert stats is not None
                assert (stats.replies_recovered, stats.failed_for_good) == (1, 0)
            assert _runs(adapter, word) == 1
            assert s.replies_to(room_id, word) == 1
            assert s.agent_events(room_id, "error") == []


async def test_a_swallowed_post_error_is_not_judged_a_missing_reply(band_platform) -> None:  # type: ignore[no-untyped-def]
    """The adapter catches the post's 500 and returns: judged alone, the turn
    "ended without a reply" (error event, failed). The stored reply is found
    first, so the message is acked instead."""

    async def swallow(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        with contextlib.suppress(InternalServerError):
            await echo(adapter, msg, tools)

    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter(swallow)
            agent = s.make_agent(adapter, _config())
            async with serving(agent):
                band_platform.faults.add("POST", REPLY, 500, 1, perform=True)
                word = token("swallowed")
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
            assert _runs(adapter, word) == 1
            assert s.replies_to(room_id, word) == 1
            assert s.agent_events(room_id, "error") == []


async def test_after_a_restart_a_reply_to_another_message_is_not_taken_for_the_lost_one(  # type: ignore[no-untyped-def]
    band_platform,
    tmp_path: Path,
) -> None:
    """Two messages wait; the same text answers both. The first is answered
    (after the second was posted), the second's post fails unstored and the
    process dies with its intent open. After the restart the first reply is
    still known as accounted for (durably): the second message is answered,
    not acked unanswered."""
    config = _config(state_dir=tmp_path, shutdown_timeout=0.0)
    died = trio.Event()

    async def constant_then_die(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        try:
            await tools.send_message("noted", [msg.sender_id])
        except InternalServerError:
            died.set()
            await trio.sleep_forever()

    with trio.fail_after(40):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            first = await s.post(room_id, token("first"))
            second = await s.post(room_id, token("second"))
            answered_first = trio.Event()

            async def behaviour(
                adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
            ) -> None:
                if msg.id == second:
                    # The second reply is refused without being stored.
                    band_platform.faults.add("POST", REPLY, 500, 1)
                await constant_then_die(adapter, msg, tools)
                answered_first.set()

            async with trio.open_nursery() as nursery:
                await nursery.start(s.make_agent(RecordingAdapter(behaviour), config).serve)
                await died.wait()
                nursery.cancel_scope.cancel()
            assert answered_first.is_set()
            assert s.processed(room_id, first)
            assert s.status(room_id, second) == "processing"
            assert sum(1 for t in s.agent_texts(room_id) if t.endswith("noted")) == 1
            second_adapter = RecordingAdapter(constant_then_die)
            agent = s.make_agent(second_adapter, config)
            async with serving(agent):
                await s.wait_for(lambda: s.processed(room_id, second))
                assert agent.statistics().replies_recovered == 0
            assert [c.msg.id for c in second_adapter.calls] == [second]
            assert sum(1 for t in s.agent_texts(room_id) if t.endswith("noted")) == 2


# ------------------------------------------------------------------ recovered replies and later
# messages


async def test_a_recovered_reply_is_not_taken_for_a_later_messages_lost_reply(  # type: ignore[no-untyped-def]
    band_platform,
) -> None:
    """Two messages wait in the room; the same text answers both. The first
    reply is stored but answered 500 (recovered by the lookup); the second is
    refused with a 500 without being stored. The first reply, posted after the
    second message, must not be taken for the second one's: it was already
    accounted for, so the second message runs again and is answered."""

    async def constant(
        adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        await tools.send_message("noted", [msg.sender_id])

    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            first = await s.post(room_id, token("first"))
            second = await s.post(room_id, token("second"))
            stored = band_platform.faults.add("POST", REPLY, 500, 1, perform=True)
            lost = band_platform.faults.add("POST", REPLY, 500, 1)
            adapter = RecordingAdapter(constant)
            agent = s.make_agent(adapter, _config())
            async with serving(agent):
                await s.wait_for(lambda: s.processed(room_id, first))
                await s.wait_for(lambda: s.processed(room_id, second))
                stats = agent.room_statistics(room_id)
                assert stats is not None
                assert stats.replies_recovered == 1
            assert (stored.hits, lost.hits) == (1, 1)
            # One "noted" per message: the first landed once, the second was
            # posted again after its refused post.
            assert sum(1 for t in s.agent_texts(room_id) if t.endswith("noted")) == 2
            assert [c.msg.id for c in adapter.calls] == [first, second, second]


async def test_a_stored_reply_whose_2xx_answer_is_malformed_is_not_posted_again(  # type: ignore[no-untyped-def]
    band_platform,
) -> None:
    """The platform stores the reply and answers 201 with a body that is not
    a receipt (the tool raises BandProtocolError). A 2xx means the reply is
    stored: the message is only acked when it comes up again, never answered
    twice."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter, _config())
            async with serving(agent):
                garbled = band_platform.faults.add("POST", REPLY, 201, 1, perform=True)
                word = token("garbled")
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
                stats = agent.room_statistics(room_id)
                assert stats is not None
                assert stats.replies_recovered == 1
            assert garbled.hits == 1
            assert s.replies_to(room_id, word) == 1
            assert len(adapter.calls) == 1


async def test_with_the_defaults_the_tool_call_settles_a_lost_answer_itself(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Stored and answered 500, then refused before storing (503): the adapter
    sees neither; its send_message returns once the reply is known stored."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter)
            async with serving(agent):
                lost = band_platform.faults.add("POST", REPLY, 500, 1, perform=True)
                word = token("stored")
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
                refused = band_platform.faults.add("POST", REPLY, 503, 1)
                again = token("refused")
                again_id = await s.post(room_id, again)
                await s.wait_for(lambda: s.processed(room_id, again_id))
                assert (lost.hits, refused.hits) == (1, 1)
                stats = agent.statistics()
            assert stats.failures == 0
            assert [c.finished for c in adapter.calls] == [True, True]
            s.assert_exactly_once(room_id, {mid: word, again_id: again})
