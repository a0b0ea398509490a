"""The gallery: each deliberately broken adapter is caught by the invariant
named for its bug, with a message that says what went wrong."""

from __future__ import annotations

import re

import pytest
from hypothesis import Phase, settings

from band_trio.testing.conformance import (
    DEFAULT_INVARIANTS,
    ConformanceFailure,
    Entry,
    Interrupt,
    Post,
    RoomIndependence,
    RunOptions,
    Scenario,
    Seed,
    SlowTool,
    check_adapter,
    conformance_settings,
    replay,
    validate_langchain_messages,
)
from tests.conformance.broken_adapters import (
    BlocksTheLoop,
    Echo,
    EchoInNursery,
    LeavesATask,
    LeavesAThread,
    LingersAfterCancel,
    RepliesThenRaises,
    RepliesTwice,
    SharedConversation,
    SlowToStart,
    StrictToolConverter,
    SwallowsCancelled,
    ToolsAfterCancel,
    TwoSystemPromptsConverter,
    WithConverter,
)

IN_FLIGHT_INTERRUPTED = Scenario([SlowTool(0, 7.5), Post(0, "work"), Interrupt(0)])
"""A turn blocked in a slow post, then interrupted."""


def failure_of(factory: object, scenario: Scenario, **kwargs: object) -> ConformanceFailure:
    with pytest.raises(ConformanceFailure) as caught:
        replay(factory, scenario, **kwargs)  # type: ignore[arg-type]
    return caught.value


def messages(failure: ConformanceFailure, invariant: str) -> list[str]:
    return [message for name, message in failure.failures if name == invariant]


def test_the_correct_adapter_passes_the_same_scenarios() -> None:
    for scenario in (
        IN_FLIGHT_INTERRUPTED,
        Scenario([Post(0, "a"), Post(1, "b")], rooms=2),
        Scenario([Seed(0, (Entry("peer", "tool_result", "ok", "call_1"),)), Post(0, "a")]),
    ):
        replay(Echo, scenario, deterministic=True)


def test_swallowing_cancelled_breaks_cancellation_honoured() -> None:
    failure = failure_of(SwallowsCancelled, IN_FLIGHT_INTERRUPTED)
    assert failure.invariants == {"CancellationHonoured"}
    assert messages(failure, "CancellationHonoured") == [
        "room 0: the turn for message '@demo/subject work' returned normally after it was "
        "cancelled (interrupt); it swallowed trio.Cancelled"
    ]


def test_a_timed_out_turn_that_swallows_cancelled_is_caught_too() -> None:
    failure = failure_of(SwallowsCancelled, Scenario([SlowTool(0, 45.0), Post(0, "work")]))
    assert any(
        "returned normally after it was cancelled (timeout)" in m
        for m in messages(failure, "CancellationHonoured")
    )


def test_a_group_of_cancelled_from_the_adapters_own_nursery_honours_cancellation() -> None:
    for scenario in (IN_FLIGHT_INTERRUPTED, Scenario([SlowTool(0, 45.0), Post(0, "work")])):
        result = replay(EchoInNursery, scenario)
        (cancelled, *_) = result.trace.turns
        assert (cancelled.outcome, cancelled.swallowed) == ("cancelled", False)


def test_lingering_after_cancellation_breaks_cancellation_honoured() -> None:
    failure = failure_of(LingersAfterCancel, IN_FLIGHT_INTERRUPTED)
    assert failure.invariants == {"CancellationHonoured"}
    assert messages(failure, "CancellationHonoured") == [
        "room 0: the turn for message '@demo/subject work' kept running 5s after it was "
        "cancelled (interrupt); the grace is 1s"
    ]


def test_sharing_state_across_rooms_breaks_room_independence() -> None:
    scenario = Scenario([Post(0, "a"), Post(1, "b")], rooms=2)
    replay(SharedConversation, scenario)  # not checked unless declared deterministic
    failure = failure_of(SharedConversation, scenario, deterministic=True)
    assert failure.invariants == {"RoomIndependence"}
    (message,) = messages(failure, "RoomIndependence")
    assert message.startswith("room 1: the agent's output differs when the other rooms are busy")
    assert "with other rooms busy: ['text: @[[demo]] I have heard 2 message(s)']" in message
    assert "room alone:            ['text: @[[demo]] I have heard 1 message(s)']" in message
    listed = failure_of(
        SharedConversation, scenario, invariants=[*DEFAULT_INVARIANTS, RoomIndependence()]
    )
    assert listed.failures == failure.failures


def test_replying_twice_breaks_at_most_one_reply() -> None:
    failure = failure_of(RepliesTwice, Scenario([Post(0, "hello")]))
    assert failure.invariants == {"AtMostOneReply"}
    assert messages(failure, "AtMostOneReply") == [
        "room 0: message '@demo/subject hello' got 2 replies (at most 1 allowed)"
    ]


def test_declared_multiple_replies_are_allowed() -> None:
    replay(RepliesTwice, Scenario([Post(0, "hello")]), max_replies_per_message=2)


def test_calling_tools_after_cancellation_breaks_cancellation_honoured() -> None:
    failure = failure_of(ToolsAfterCancel, IN_FLIGHT_INTERRUPTED)
    assert failure.invariants == {"CancellationHonoured"}
    assert messages(failure, "CancellationHonoured") == [
        "room 0: the turn for message '@demo/subject work' called send_event at t=0s, after "
        "its turn was cancelled (interrupt)"
    ]


def test_a_synchronous_sleep_breaks_no_loop_blocking() -> None:
    failure = failure_of(BlocksTheLoop, Scenario([Post(0, "hello")]))
    assert failure.invariants == {"NoLoopBlocking"}
    (message,) = messages(failure, "NoLoopBlocking")
    assert re.fullmatch(
        r"room 0: adapter code held the event loop for 0\.\d{3}s in one step "
        r"\(threshold 0\.25s\)",
        message,
    )


def test_the_loop_block_threshold_is_an_option() -> None:
    replay(BlocksTheLoop, Scenario([Post(0, "hello")]), options=RunOptions(block_threshold=5.0))


def test_a_converter_raising_on_an_orphan_tool_result_breaks_history_conversion() -> None:
    scenario = Scenario([Seed(0, (Entry("peer", "tool_result", "ok", "call_1"),)), Post(0, "a")])
    failure = failure_of(lambda: WithConverter(history_converter=StrictToolConverter()), scenario)
    assert "HistoryConversion" in failure.invariants
    assert messages(failure, "HistoryConversion") == [
        "room 0: the history converter raised KeyError: 'tool result for unknown call call_1' "
        "on a history of 1 item(s) [user/tool_result]"
    ]


def test_a_converter_emitting_two_system_prompts_breaks_history_conversion() -> None:
    scenario = Scenario([Seed(0, (Entry("human", "text", "earlier"),)), Post(0, "a")])
    factory = lambda: WithConverter(history_converter=TwoSystemPromptsConverter())  # noqa: E731
    replay(factory, scenario)  # structure is judged only against a validator
    failure = failure_of(factory, scenario, history_validator=validate_langchain_messages)
    assert failure.invariants == {"HistoryConversion"}
    assert messages(failure, "HistoryConversion") == [
        "room 0: the converted history is invalid: message 1 is a second system message "
        "(history [user/text])"
    ]


def test_the_generated_scenarios_find_a_double_reply_and_shrink_it() -> None:
    with pytest.raises(ConformanceFailure) as caught:
        check_adapter(RepliesTwice)
    failure = caught.value
    assert failure.invariants == {"AtMostOneReply"}
    assert failure.scenario is not None
    # Shrunk to one message, and printed as Python that rebuilds it.
    posts = [s for s in failure.scenario.steps if isinstance(s, Post)]
    assert len(posts) == 1
    assert "replay(make_adapter, Scenario(" in str(failure)


def test_the_generated_scenarios_find_a_swallowed_cancellation() -> None:
    # Without shrinking: the point is that the search reaches a cancelled turn.
    quick = settings(conformance_settings(), phases=[Phase.explicit, Phase.generate])
    with pytest.raises(ConformanceFailure) as caught:
        check_adapter(SwallowsCancelled, hypothesis_settings=quick)
    assert "CancellationHonoured" in caught.value.invariants


ONE_MESSAGE = Scenario([Post(0, "hello")])


def test_replying_then_raising_breaks_no_hidden_errors() -> None:
    # The room looks right (the retry only acks): the kit still reports it.
    failure = failure_of(RepliesThenRaises, ONE_MESSAGE)
    assert failure.invariants == {"NoHiddenErrors"}
    assert messages(failure, "NoHiddenErrors")[0] == (
        "room 0: the adapter replied to message '@demo/subject hello' and then raised "
        "RuntimeError: bookkeeping after the reply failed"
    )


def test_a_slow_on_started_breaks_starts_promptly() -> None:
    failure = failure_of(SlowToStart, ONE_MESSAGE)
    assert failure.invariants == {"StartsPromptly"}
    assert messages(failure, "StartsPromptly") == [
        "run 0: on_started took 60.0 s (bound 10.0 s); the agent could not serve meanwhile"
    ]


@pytest.mark.parametrize(
    ("factory", "leftover"),
    [(LeavesAThread, "thread 'forgotten-worker'"), (LeavesATask, "task 'forgotten-task'")],
)
def test_a_thread_or_task_left_running_breaks_nothing_outlives_serve(
    factory: object, leftover: str
) -> None:
    failure = failure_of(factory, ONE_MESSAGE)
    assert failure.invariants == {"NothingOutlivesServe"}
    assert messages(failure, "NothingOutlivesServe") == [
        f"run 0: {leftover} was still alive after serve returned"
    ]
