"""The kit's API: replaying, reading results, custom invariants, profiles; the
promise that a run opens no socket; the runtime's fixed jitter; loop-block timing."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import settings
from hypothesis import strategies as st

from band_trio import BandConfigError
from band_trio.runtime.core._reconcile_timer import ReconcileTimer
from band_trio.testing import conformance
from band_trio.testing.conformance import (
    CI_PROFILE,
    DEFAULT_INVARIANTS,
    AgentKeepsServing,
    ConformanceFailure,
    Interrupt,
    Invariant,
    LifecycleHooksOnce,
    NoDoubleAnswerAfterRestart,
    Post,
    Restart,
    RunOptions,
    Scenario,
    ScenarioResult,
    SerialTurns,
    SettledExactlyOnce,
    SlowTool,
    Stop,
    ToolFailure,
    Wait,
    check_adapter,
    check_history_converter,
    check_result,
    conformance_settings,
    replay,
    run_scenario,
    validate_langchain_messages,
)
from band_trio.testing.conformance.kit import INDEPENDENCE_NOT_JUDGED
from band_trio.testing.conformance.trace import LoopBlockDetector, Trace
from tests.conformance.broken_adapters import (
    Echo,
    FailsToStart,
    NeverReplies,
    PostsItsErrors,
    StrictToolConverter,
    TwoSystemPromptsConverter,
)

NAMESPACE = {name: getattr(conformance, name) for name in conformance.__all__}


def names(failures: list[tuple[str, str]]) -> set[str]:
    return {name for name, _ in failures}


def test_replay_returns_the_result_of_a_passing_run() -> None:
    result = replay(Echo, Scenario([Post(0, "hello"), Post(0, "again")]))
    assert isinstance(result, ScenarioResult)
    turns = result.trace.turns
    assert [t.outcome for t in turns] == ["returned", "returned"]
    assert [t.replies for t in turns] == [
        [f"echo: @{result.trace.names[result.agent_id]} hello"],
        [f"echo: @{result.trace.names[result.agent_id]} again"],
    ]
    posts = result.agent_posts(result.trace.room_ids[0])
    assert len(posts) == 2


def test_the_printed_scenario_rebuilds_the_failing_one() -> None:
    scenario = Scenario([Post(0, "x" * 300), Stop(None)], rooms=2)
    failure = ConformanceFailure(scenario, [("SomeInvariant", "what went wrong")])
    text = str(failure)
    assert "SomeInvariant: what went wrong" in text
    pasted = text.split("replay(make_adapter, ", 1)[1].rsplit(")", 1)[0]
    assert eval(pasted, NAMESPACE) == scenario


def test_a_custom_invariant_is_checked_like_the_built_in_ones() -> None:
    class ShortReplies(Invariant):
        name = "ShortReplies"
        description = "replies stay under 10 characters"

        def violations(self, result: ScenarioResult) -> Iterator[str]:
            for turn in result.trace.turns:
                for reply in turn.replies:
                    if len(reply) >= 10:
                        yield f"{result.trace.label(turn.room_id)}: reply {reply!r} is too long"

    with pytest.raises(ConformanceFailure) as caught:
        replay(Echo, Scenario([Post(0, "hi")]), invariants=[*DEFAULT_INVARIANTS, ShortReplies()])
    assert caught.value.invariants == {"ShortReplies"}


def test_exception_text_posted_in_the_room_breaks_no_error_text_in_room() -> None:
    with pytest.raises(ConformanceFailure) as caught:
        replay(PostsItsErrors, Scenario([Post(0, "hello")]), max_replies_per_message=3)
    failure = caught.value
    # It also replied (the error text) and then raised.
    assert failure.invariants == {"NoErrorTextInRoom", "NoHiddenErrors"}
    assert (
        "NoErrorTextInRoom",
        "room 0: the agent posted the text of an exception "
        "('database password rejected for user admin') in a text",
    ) in failure.failures


def test_an_adapter_failing_to_start_breaks_agent_keeps_serving() -> None:
    result = run_scenario(FailsToStart, Scenario([Post(0, "hello")]))
    assert check_result(result, [AgentKeepsServing()]) == [
        ("AgentKeepsServing", "the agent stopped serving with RuntimeError: no model configured")
    ]


def test_failed_turns_are_retried_to_the_limit_then_settled() -> None:
    # Every post of the room fails (4 refusals beat the REST client's 3 retries).
    scenario = Scenario([ToolFailure(0, status=400, times=3), Post(0, "hello")])
    result = replay(Echo, scenario)
    raised = [t for t in result.trace.turns if t.outcome == "raised"]
    assert len(raised) == 3  # max_attempts
    room = result.platform.state.rooms[result.trace.room_ids[0]]
    (delivery,) = [m.deliveries[result.agent_id] for m in room.inbox[result.agent_id]]
    assert delivery.status == "failed"


def test_a_restart_with_a_turn_in_flight_keeps_every_invariant() -> None:
    result = replay(Echo, Scenario([SlowTool(0, 3.0), Post(0, "slow"), Restart(), Interrupt(0)]))
    assert result.trace.runs == 2
    assert result.trace.started == [1, 1]


def test_invariants_report_what_a_trace_shows() -> None:
    # The runtime makes these hard to break from an adapter; the invariants
    # are checked here on a real trace edited to show the breakage.
    result = run_scenario(Echo, Scenario([Post(0, "hello"), Restart(), Post(0, "more")]))
    assert check_result(result) == []
    trace = result.trace
    room_id = trace.room_ids[0]
    first = trace.turns[0]

    trace.concurrent.append((room_id, first.message_id, trace.turns[1].message_id))
    assert check_result(result, [SerialTurns()]) == [
        (
            "SerialTurns",
            "room 0: the turn for message '@demo/subject hello' began while the turn for "
            "message '@demo/subject more' was still running",
        )
    ]

    trace.cleanups.append((0, room_id, trace.tick()))
    assert check_result(result, [LifecycleHooksOnce()]) == [
        ("LifecycleHooksOnce", "run 0, room 0: served 1 time(s) but on_cleanup ran 2 time(s)")
    ]

    trace.turns[1].replies.append("again")
    trace.turns[1].message_id = first.message_id
    assert check_result(result, [NoDoubleAnswerAfterRestart()]) == [
        (
            "NoDoubleAnswerAfterRestart",
            "room 0: message '@demo/subject hello', answered in run 0, was answered again "
            "after the restart (run 1)",
        )
    ]

    room = result.platform.state.rooms[room_id]
    delivery = room.inbox[result.agent_id][0].deliveries[result.agent_id]
    delivery.status = "processing"
    assert check_result(result, [SettledExactlyOnce()]) == [
        (
            "SettledExactlyOnce",
            "room 0: message '@demo/subject hello' was never settled (status 'processing')",
        )
    ]


def test_no_socket_is_bound_or_connected_during_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the kit opened a network connection")

    for method in ("bind", "connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, method, refuse)
    replay(Echo, Scenario([Post(0, "hello"), SlowTool(0, 3.0), Post(0, "x"), Restart()]))


def test_the_history_converter_check() -> None:
    with pytest.raises(ConformanceFailure) as caught:
        check_history_converter(StrictToolConverter())
    (failure,) = caught.value.failures
    assert failure[0] == "HistoryConversion"
    assert failure[1].startswith("the converter raised KeyError: 'tool result for unknown call")
    with pytest.raises(ConformanceFailure) as caught:
        check_history_converter(TwoSystemPromptsConverter(), validate_langchain_messages)
    assert "message 1 is a second system message" in str(caught.value)


def test_profiles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BAND_CONFORMANCE_PROFILE", raising=False)
    ci = conformance_settings()
    assert ci == conformance_settings(CI_PROFILE)
    assert ci.max_examples == 50
    assert ci.derandomize
    monkeypatch.setenv("BAND_CONFORMANCE_PROFILE", "long")
    long = conformance_settings()
    assert long.max_examples == 1000
    assert long.deadline is None


def test_the_base_class_works_without_pytest_trio(tmp_path: Path) -> None:
    test_file = tmp_path / "test_mine.py"
    test_file.write_text(
        textwrap.dedent(
            """
            from band_trio.demo import EchoAdapter
            from band_trio.testing.conformance import AdapterConformance
            from hypothesis import settings

            settings.register_profile("few", max_examples=5, deadline=None, database=None)

            class TestMine(AdapterConformance):
                profile = "few"

                def make_adapter(self):
                    return EchoAdapter()
            """
        )
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:trio",
            "-p",
            "no:cacheprovider",
            "-o",
            "trio_mode=false",
            "--rootdir",
            str(tmp_path),
            "-c",
            "/dev/null",
            str(test_file),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


@pytest.mark.parametrize("hidden", ["hypothesis", "hypercorn"])
def test_without_the_extra_the_import_names_the_fix(hidden: str) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        import importlib.abc

        class Hide(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == {hidden!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None

        sys.meta_path.insert(0, Hide())
        import band_trio
        try:
            import band_trio.testing.conformance
        except band_trio.MissingExtraError as exc:
            print(exc.extra, "|", exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    extra, message = done.stdout.strip().split(" | ")
    assert extra == "conformance"
    assert "pip install 'band-trio[conformance]'" in message


def test_a_slow_tool_succeeds_late_and_a_tool_failure_refuses() -> None:
    result = replay(Echo, Scenario([SlowTool(0, 3.0), Post(0, "slow"), Post(0, "fast")]))
    slow, fast = result.trace.turns
    assert (slow.started_at, slow.ended_at, slow.outcome) == (0.0, 3.0, "returned")
    assert [c.ok for c in slow.tool_calls] == [True]
    assert fast.started_at == 3.0
    assert fast.ended_at == 3.0
    result = replay(Echo, Scenario([ToolFailure(0, status=400, times=1), Post(0, "refused")]))
    first, retry = result.trace.turns
    assert first.outcome == "raised"
    assert type(first.error).__name__ == "BadRequestError"
    assert retry.outcome == "returned"


async def test_calling_the_kit_from_inside_trio_says_how_to_call_it() -> None:
    with pytest.raises(BandConfigError, match="call it from a synchronous test"):
        replay(Echo, Scenario([Post(0, "hello")]))


def detector_run(detector_now: Callable[[], float] | None, body: Callable[[], None]) -> Trace:
    trace = Trace(agent_id="agent", turn_timeout=None)
    detector = (
        LoopBlockDetector(trace, 0.25)
        if detector_now is None
        else LoopBlockDetector(trace, 0.25, now=detector_now)
    )

    async def main() -> None:
        task = trio.lowlevel.current_task()
        detector.enter(task, "room")
        body()
        detector.leave(task)

    trio.run(main)
    return trace


@pytest.mark.skipif(sys.platform != "linux", reason="preemption is told apart on Linux only")
def test_a_stretch_only_preempted_is_not_a_block() -> None:
    # A second of wall time without CPU use or a blocking call: the process
    # was preempted (a loaded machine), not blocked by the adapter.
    ticks = iter([0.0, 1.0])
    trace = detector_run(lambda: next(ticks), lambda: None)
    assert trace.blocks == []


@pytest.mark.skipif(sys.platform != "linux", reason="waits are told apart on Linux only")
def test_waiting_while_another_thread_of_the_process_works_is_not_a_block() -> None:
    # 0.3 s pass (by the detector's clock) while the stretch waits for a worker
    # thread that uses 0.4 s of CPU, as when an adapter's worker thread holds
    # the interpreter lock: the wait is the other thread's work, not a block.
    def worker() -> None:
        end = time.thread_time() + 0.4
        while time.thread_time() < end:
            pass

    def wait_for_worker() -> None:
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()

    ticks = iter([0.0, 0.3])
    assert detector_run(lambda: next(ticks), wait_for_worker).blocks == []


def test_a_busy_loop_and_a_sleep_are_blocks() -> None:
    def spin() -> None:
        end = time.thread_time() + 0.3
        while time.thread_time() < end:
            pass

    assert [b.room_id for b in detector_run(None, spin).blocks] == ["room"]
    sleep = detector_run(None, lambda: time.sleep(0.3))
    assert [b.room_id for b in sleep.blocks] == ["room"]


def test_rooms_draw_their_jitter_from_the_runs_fixed_value(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every room draws the same jitter, whatever the order the rooms start in:
    # a scenario replays the same way, alone or with other rooms busy.
    draws: list[float] = []
    original = ReconcileTimer.__init__

    def recording(self: ReconcileTimer, config: Any, rng: random.Random, now: float) -> None:
        draws.append(rng.random())
        original(self, config, rng, now)

    monkeypatch.setattr(ReconcileTimer, "__init__", recording)
    # (No contacts hub room: only the scenario's rooms draw.)
    run_scenario(
        Echo,
        Scenario([Post(0, "a"), Post(2, "b")], rooms=3),
        RunOptions(jitter=0.25, contact_config=None),
    )
    assert draws == [0.25, 0.25, 0.25]
    draws.clear()
    run_scenario(
        Echo, Scenario([Post(0, "a")], rooms=2), RunOptions(jitter=None, contact_config=None)
    )
    assert len(draws) == 2
    assert all(0.0 <= d < 1.0 for d in draws)


@pytest.mark.parametrize("jitter", [-0.1, 1.0, 2.5])
def test_the_jitter_option_is_a_fraction(jitter: float) -> None:
    with pytest.raises(BandConfigError, match="jitter must be in"):
        RunOptions(jitter=jitter)


def test_a_room_stopped_while_a_missing_reply_is_settled_settles_it_after_play() -> None:
    # The failed mark of the missing reply meets the stop: the message must
    # not stay processing once the room plays again.
    result = replay(
        NeverReplies,
        Scenario(rooms=1, steps=[SlowTool(0, 0.5), Post(0, ""), Stop(0), Wait(0.5)]),
    )
    (room_id,) = result.trace.room_ids
    statuses = [
        m.deliveries[result.agent_id].status
        for m in result.platform.state.rooms[room_id].messages
        if result.agent_id in m.deliveries
    ]
    assert statuses == ["failed"]


def test_a_pass_without_declared_determinism_says_independence_was_not_judged() -> None:
    two_rooms = Scenario([Post(0, "a"), Post(1, "b")], rooms=2)
    assert replay(Echo, two_rooms).notes == (INDEPENDENCE_NOT_JUDGED,)
    assert replay(Echo, two_rooms, deterministic=True).notes == ()
    assert replay(Echo, Scenario([Post(0, "a")])).notes == ()


def test_check_adapter_returns_what_it_could_not_judge() -> None:
    two_rooms = Scenario([Post(0, "a"), Post(1, "b")], rooms=2)
    once = settings(max_examples=1, database=None, deadline=None)
    notes = check_adapter(Echo, scenario_strategy=st.just(two_rooms), hypothesis_settings=once)
    assert notes == (INDEPENDENCE_NOT_JUDGED,)
    judged = check_adapter(
        Echo, scenario_strategy=st.just(two_rooms), hypothesis_settings=once, deterministic=True
    )
    assert judged == ()
