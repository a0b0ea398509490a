"""Settlement outcomes end to end (protocol, "Per-room worker algorithm"): what the
agent does when the ``processed`` write of a completed turn is answered 404
(message gone), 422 (no active attempt: done if the message left the work
list, else re-claim, then ack), 5xx or a
transport error (unconfirmed: the ack is retried later, the turn never re-run).

Each test runs a real agent over loopback against the local platform, makes
the ``processed`` POST fail with a fault rule, and checks on the platform's
own state and on the adapter that the handler ran exactly once with exactly
one reply.
"""

from __future__ import annotations

import trio

from band_trio.agent import Agent
from band_trio.wire.rest import RestConfig

from .harness import FAST_REST, RecordingAdapter, scene, serving, token

PROCESSED = r"/api/v1/agent/chats/[^/]+/messages/[^/]+/processed$"


def _completed(agent: Agent, room_id: str) -> int:
    stats = agent.room_statistics(room_id)
    assert stats is not None
    return stats.completed


def _runs(adapter: RecordingAdapter, word: str) -> int:
    return sum(1 for c in adapter.calls if word in c.msg.content)


async def test_processed_answered_404_counts_the_message_done(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Not found: the message is gone, so it is settled (completed) at once:
    the ack is not retried and the turn is not re-run, even when ``/next``
    keeps offering the (still ``processing``) message afterwards."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter)
            async with serving(agent):
                gone = band_platform.faults.add(
                    "POST", PROCESSED, 404, 1, code="not_found", message="message not found"
                )
                word = token("gone")
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: gone.hits == 1 and adapter.running == 0)
                await s.wait_for(lambda: agent.statistics().completed == 1)
                # A later message makes the room drain /next again; the first
                # message is still actionable there, and must be stepped past.
                later = token("later")
                later_id = await s.post(room_id, later)
                await s.wait_for(lambda: s.processed(room_id, later_id))
                # The agent counts the message once the platform's answer to
                # its processed mark arrives, a moment after the platform's
                # state changed.
                await s.wait_for(lambda: _completed(agent, room_id) == 2)
            assert _runs(adapter, word) == 1
            assert s.replies_to(room_id, word) == 1
            # The 404 was taken as final: no second processed write was sent.
            assert s.status(room_id, mid) == "processing"
            assert [a.status for a in s.delivery(room_id, mid).attempts] == ["processing"]
            s.assert_exactly_once(room_id, {later_id: later})


async def test_processed_answered_422_after_the_attempt_closed_counts_it_done(
    band_platform,
) -> None:  # type: ignore[no-untyped-def]
    """Rejected (422 ``/processing_attempt``) because the write did land: the
    message has left the work list, so it is settled as it is. Claiming it
    again would re-open a processed message and record a second attempt.

    The fault is *performed* (the attempt really closed, then 422 answered).
    """
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            async with serving(s.make_agent(adapter)):
                rejected = band_platform.faults.add(
                    "POST",
                    PROCESSED,
                    422,
                    1,
                    code="invalid",
                    message="the message has no active processing attempt",
                    perform=True,
                )
                word = token("rejected")
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: rejected.hits == 1 and s.processed(room_id, mid))
                after = token("after")
                after_id = await s.post(room_id, after)
                await s.wait_for(lambda: s.processed(room_id, after_id))
            assert _runs(adapter, word) == 1
            assert s.replies_to(room_id, word) == 1
            assert [a.status for a in s.delivery(room_id, mid).attempts] == ["success"]
            s.assert_exactly_once(room_id, {after_id: after})


async def test_processed_answered_422_while_still_in_the_work_list_reclaims_then_acks(
    band_platform,
) -> None:  # type: ignore[no-untyped-def]
    """Rejected (422) while the message is still in the work list: the agent
    claims it again and marks it processed, without re-running the turn."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            async with serving(s.make_agent(adapter)):
                rejected = band_platform.faults.add(
                    "POST",
                    PROCESSED,
                    422,
                    1,
                    code="invalid",
                    message="the message has no active processing attempt",
                )
                word = token("rejected")
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: rejected.hits == 1 and s.processed(room_id, mid))
            assert _runs(adapter, word) == 1
            assert s.replies_to(room_id, word) == 1
            assert [a.status for a in s.delivery(room_id, mid).attempts] == ["success"]


async def test_processed_performed_but_answered_500_is_acked_without_rerun(band_platform) -> None:  # type: ignore[no-untyped-def]
    """A lost response: the platform marked the message processed but answered
    500. The ack stays pending and is retried; the retry meets the real 422 (no
    active attempt) and the message has left the work list, so it is settled
    without a second attempt. The handler never re-runs."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter)
            async with serving(agent):
                lost = band_platform.faults.add("POST", PROCESSED, 500, 1, perform=True)
                word = token("lost")
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: lost.hits == 1)
                await s.wait_for(lambda: s.processed(room_id, mid))
                after = token("after")
                after_id = await s.post(room_id, after)
                await s.wait_for(lambda: s.processed(room_id, after_id))
                await s.wait_for(lambda: agent.statistics().completed == 2)
            assert _runs(adapter, word) == 1
            assert s.replies_to(room_id, word) == 1
            assert [a.status for a in s.delivery(room_id, mid).attempts] == ["success"]
            s.assert_exactly_once(room_id, {after_id: after})


async def test_processed_5xx_is_retried_later_and_never_reruns(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Unconfirmed (5xx, not performed): the message stays ack-pending; later
    reconciles retry only the ``processed`` write until it lands."""
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            async with serving(s.make_agent(adapter)):
                failing = band_platform.faults.add("POST", PROCESSED, 502, 3)
                word = token("unconfirmed")
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
                assert failing.hits == 3
            assert _runs(adapter, word) == 1
            # One claim, one success: the retries were acks of the same attempt.
            s.assert_exactly_once(room_id, {mid: word})


async def test_processed_transport_error_is_retried_later_and_never_reruns(band_platform) -> None:  # type: ignore[no-untyped-def]
    """Unconfirmed (a transport error: the platform never answers in time): the
    write is not repeated by the REST client (not idempotent), the message stays
    ack-pending and the next reconcile's ack lands."""
    rest = RestConfig(timeout=0.5, retry=FAST_REST.retry)
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room_id = await s.new_room()
            adapter = RecordingAdapter()
            agent = s.make_agent(adapter, rest_options={"config": rest})
            async with serving(agent):
                hung = band_platform.faults.add("POST", PROCESSED, 500, 1, delay=float("inf"))
                word = token("hung")
                mid = await s.post(room_id, word)
                await s.wait_for(lambda: s.processed(room_id, mid))
                assert hung.hits == 1
            assert _runs(adapter, word) == 1
            s.assert_exactly_once(room_id, {mid: word})
