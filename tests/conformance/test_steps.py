"""Scenarios print as the Python that rebuilds them, and filter per room."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from band_trio.testing import conformance
from band_trio.testing.conformance import (
    AddRoom,
    ContactChange,
    DeleteRoom,
    Entry,
    Interrupt,
    Join,
    Leave,
    Play,
    Post,
    ReAddAgent,
    RemoveAgent,
    Restart,
    RestFault,
    Scenario,
    Seed,
    SlowTool,
    SocketDrop,
    Step,
    Stop,
    ToolFailure,
    Wait,
    scenarios,
    steps,
)

NAMESPACE = {name: getattr(conformance, name) for name in conformance.__all__}


@settings(max_examples=200, deadline=None)
@given(scenarios(max_rooms=3, max_steps=16))
def test_a_scenario_repr_rebuilds_it(scenario: Scenario) -> None:
    assert eval(repr(scenario), NAMESPACE) == scenario


@given(
    st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=20),
    st.integers(min_value=100, max_value=4000),
)
def test_long_repeated_texts_print_short_and_rebuild(unit: str, count: int) -> None:
    post = Post(0, unit * count + unit[: len(unit) // 2])
    text = repr(post)
    assert eval(text, NAMESPACE) == post
    assert len(text) < 80


def test_every_step_prints_as_its_constructor() -> None:
    steps = [
        Post(0, "hi", sender="peer", mention=False, attachments=2),
        Seed(1, (Entry("self", "tool_call", "band_lookup", call_id="c"),)),
        Join(0, "helper"),
        Leave(0),
        AddRoom(),
        RemoveAgent(1),
        ReAddAgent(1),
        DeleteRoom(2),
        Interrupt(None),
        Stop(0),
        Play(),
        ToolFailure(0, status=400, times=1),
        RestFault(None, status=502, after=True, times=2),
        RestFault(1),
        SocketDrop(3.0),
        ContactChange("helper", "remove"),
        SlowTool(0, 7.5),
        Wait(3.0),
        Restart(),
    ]
    for step in steps:
        assert eval(repr(step), NAMESPACE) == step
    assert repr(Scenario(steps[:2], rooms=2)) == (
        "Scenario(rooms=2, steps=[\n"
        "    Post(0, 'hi', sender='peer', mention=False, attachments=2),\n"
        "    Seed(1, (Entry('self', 'tool_call', 'band_lookup', call_id='c'),)),\n"
        "])"
    )


def test_only_room_keeps_one_rooms_traffic_and_every_rooms_lifecycle() -> None:
    scenario = Scenario(
        [Post(0, "a"), Post(1, "b"), Interrupt(1), Stop(None), RemoveAgent(1), Wait(1.0)],
        rooms=2,
    )
    assert scenario.only_room(0) == Scenario(
        [Post(0, "a"), Stop(None), RemoveAgent(1), Wait(1.0)], rooms=2
    )
    assert scenario.room_count == 2
    assert not scenario.restarts
    assert Scenario([Restart()]).restarts


@pytest.mark.parametrize(
    "wanted",
    [
        lambda s: isinstance(s, RestFault) and (s.status, s.after) == (503, False),
        lambda s: isinstance(s, RestFault) and (s.status, s.after) == (503, True),
        lambda s: isinstance(s, RestFault) and (s.status, s.after) == (502, True),
        lambda s: isinstance(s, RestFault) and (s.status, s.after) == (504, True),
        lambda s: isinstance(s, RestFault) and s.room is None,
        lambda s: isinstance(s, SocketDrop) and s.seconds > 0,
        lambda s: isinstance(s, ContactChange) and s.action == "request",
        lambda s: isinstance(s, ContactChange) and s.action == "remove",
    ],
    ids=[
        "503-before",
        "503-after",
        "502-after",
        "504-after",
        "any-call",
        "socket-drop",
        "contact-request",
        "contact-removed",
    ],
)
def test_generated_steps_include_every_fault_form(wanted: Callable[[Step], bool]) -> None:
    # find() raises when no step of the form is generated.
    found = find(steps(2), wanted, settings=settings(max_examples=5000, database=None))
    assert wanted(found)
