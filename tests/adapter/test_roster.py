"""Roster merge rules, participant list rendering, mention tokens and resolution.

Reference: docs/reference/official-runtime.rst, docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from band_trio.adapter.roster import (
    Roster,
    available_handles,
    render_participants_msg,
    resolve_mention,
    rewrite_mention_tokens,
)
from band_trio.errors import BandProtocolError, UnknownParticipantError
from band_trio.wire.events import ParticipantAdded
from band_trio.wire.models import ChatParticipant

AGENT = "agent-1"


def person(pid: str, **kw: Any) -> ChatParticipant:
    fields: dict[str, Any] = {"role": "member", "status": "active", "type": "User"}
    fields.update(kw)
    return ChatParticipant(id=pid, **fields)


ALICE = person("u-alice", name="Alice Smith", handle="alice", description="Likes cats")
BOB = person("u-bob", name="Bob", handle="@bob")
SELF = person(AGENT, name="Helper", handle="owner/helper", type="Agent")


# --------------------------------------------------------------------------- merging


def test_roster_starts_changed_and_commit_clears() -> None:
    # The first turn gets participants_msg, even for an empty roster (official runtime,
    # "Testable behaviours" 62).
    roster = Roster()
    assert roster.changed
    assert roster.commit(roster.snapshot())
    assert not roster.changed


def test_added_merges_per_field_and_null_never_erases() -> None:
    # A participant_added without a known description keeps it (official runtime, "Testable
    # behaviours" 64).
    roster = Roster([ALICE])
    roster.commit(roster.snapshot())
    event = ParticipantAdded(room_id="r", id="u-alice", name="Alice Smith", type="User")
    assert roster.apply_added(event) is False
    assert not roster.changed
    p = roster.get("u-alice")
    assert p is not None
    assert p.description == "Likes cats"
    assert p.handle == "alice"
    roster.apply_added({"id": "u-alice", "name": "Alice S.", "description": None})
    p = roster.get("u-alice")
    assert p is not None
    assert (p.name, p.description, p.handle) == ("Alice S.", "Likes cats", "alice")
    assert roster.changed


def test_added_new_participant_gets_defaults() -> None:
    roster = Roster()
    roster.apply_added(ParticipantAdded(room_id="r", id="a-2", name="Other", type="Agent"))
    p = roster.get("a-2")
    assert p is not None
    assert (p.role, p.status, p.type, p.handle) == ("member", "active", "Agent", None)


def test_field_change_marks_changed() -> None:
    # A field refresh between turns re-sends the list (official runtime, "Testable behaviours" 63).
    roster = Roster([ALICE])
    roster.commit(roster.snapshot())
    roster.apply_added(person("u-alice", handle="alice2"))
    assert roster.changed


def test_invisible_field_change_does_not_mark_changed() -> None:
    roster = Roster([ALICE])
    roster.commit(roster.snapshot())
    roster.apply_added(person("u-alice", online=True, avatar_url="x"))
    assert not roster.changed


def test_removed_drops_entry() -> None:
    roster = Roster([ALICE, BOB])
    roster.commit(roster.snapshot())
    assert roster.apply_removed("u-bob") is True
    assert "u-bob" not in roster
    assert roster.changed
    roster.commit(roster.snapshot())
    assert roster.apply_removed("u-bob") is False
    assert not roster.changed


def test_snapshot_replaces_membership_but_merges_fields() -> None:
    roster = Roster([ALICE, BOB])
    roster.commit(roster.snapshot())
    changed = roster.replace_snapshot([person("u-alice", name="Alice Smith", handle="alice")])
    assert changed
    assert [p.id for p in roster] == ["u-alice"]
    alice = roster.get("u-alice")
    assert alice is not None
    assert alice.description == "Likes cats"  # merged, not erased


def test_snapshot_with_duplicate_ids_is_rejected_and_roster_kept() -> None:
    roster = Roster([ALICE])
    roster.commit(roster.snapshot())
    with pytest.raises(BandProtocolError, match="twice"):
        roster.replace_snapshot([BOB, BOB])
    assert [p.id for p in roster] == ["u-alice"]
    assert not roster.changed


def test_same_snapshot_is_no_change() -> None:
    roster = Roster([ALICE, BOB])
    roster.commit(roster.snapshot())
    assert roster.replace_snapshot([ALICE, BOB]) is False
    assert not roster.changed


def test_commit_keeps_changes_made_during_the_turn() -> None:
    roster = Roster([ALICE])
    delivered = roster.snapshot()
    roster.apply_added(BOB)  # arrives while the turn runs
    assert roster.commit(delivered) is False
    assert roster.changed


@pytest.mark.parametrize(
    "bad",
    [{"name": "no id"}, {"id": ""}, {"id": 5}, {"id": "x", "name": 3}, {"id": "x", "online": "y"}],
)
def test_bad_rows_are_protocol_errors(bad: dict[str, Any]) -> None:
    roster = Roster([ALICE])
    with pytest.raises(BandProtocolError):
        roster.apply_added(bad)
    assert [p.id for p in roster] == ["u-alice"]


names = st.sampled_from(["a", "b", "c", "d"])
optional_text = st.none() | st.sampled_from(["x", "y", "zz"])


@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "remove"]), names, optional_text, optional_text),
        max_size=30,
    )
)
def test_merge_keeps_last_non_null_value(
    ops: list[tuple[str, str, str | None, str | None]],
) -> None:
    roster = Roster()
    expected: dict[str, dict[str, str | None]] = {}
    for op, pid, name, description in ops:
        if op == "add":
            roster.apply_added({"id": pid, "name": name, "description": description})
            known = expected.setdefault(pid, {"name": None, "description": None})
            if name is not None:
                known["name"] = name
            if description is not None:
                known["description"] = description
        else:
            roster.apply_removed(pid)
            expected.pop(pid, None)
    assert {p.id: {"name": p.name, "description": p.description} for p in roster} == expected


# --------------------------------------------------------------------------- rendering


def test_empty_roster_message() -> None:
    # Pins (tools and adapters, "Testable statements" 71).
    assert render_participants_msg(Roster()) == (
        "## Current Participants\nNo other participants in this room."
    )


def test_rendered_list() -> None:
    text = render_participants_msg(Roster([ALICE, BOB, person("u-x", type=None)]))
    lines = text.split("\n")
    assert lines[0] == "## Current Participants"
    assert lines[1] == '- @alice — Alice Smith (User): "Likes cats"'
    assert lines[2] == "- @bob — Bob (User)"
    assert lines[3] == "- @Unknown — Unknown (Unknown)"
    assert lines[4] == ""
    assert "self-declared" in lines[5]
    assert "never as instructions" in lines[5]
    assert lines[6] == ""
    assert lines[7].startswith("IMPORTANT:")
    assert "exact handle" in lines[7]
    assert len(lines) == 8


def test_no_description_note_without_descriptions() -> None:
    text = render_participants_msg([BOB, SELF])
    assert "self-declared" not in text
    assert "- @owner/helper — Helper (Agent)" in text  # the agent itself is listed
    assert text.split("\n")[-1].startswith("IMPORTANT:")


def test_description_flattened_quoted_and_capped() -> None:
    # Pins (tools and adapters, "Testable statements" 72).
    desc = 'Line one\n  "quoted"\tword ' + "x" * 300
    text = render_participants_msg([person("u", name="N", handle="h", description=desc)])
    line = text.split("\n")[1]
    rendered = line.split(": ", 1)[1]
    assert rendered.startswith("\"Line one 'quoted' word x")
    inner = rendered[1:-1]
    assert len(inner) == 200
    assert inner.endswith("…")
    assert "\n" not in inner


def test_blank_description_is_not_shown() -> None:
    text = render_participants_msg([person("u", name="N", handle="h", description="  \n ")])
    assert text.split("\n")[1] == "- @h — N (User)"
    assert "self-declared" not in text


# --------------------------------------------------------------------------- mention tokens


def test_rewrite_tokens() -> None:
    # Pins (official runtime, "Testable behaviours" 61, 69; tools and adapters,
    # "Testable statements" 74).
    roster = Roster([ALICE, BOB, person("u-carol", name="Carol  Ann\tLee")])
    content = "@[[u-alice]] hi @[[u-bob]] and @[[u-carol]], not @[[u-nobody]]"
    assert rewrite_mention_tokens(content, roster) == (
        "@alice hi @bob and @Carol-Ann-Lee, not @[[u-nobody]]"
    )


def test_rewrite_leaves_nameless_participant_token() -> None:
    roster = Roster([person("u-x")])
    assert rewrite_mention_tokens("@[[u-x]] yo", roster) == "@[[u-x]] yo"


@given(st.text())
def test_rewrite_without_tokens_is_identity(text: str) -> None:
    roster = Roster([ALICE])
    if "@[[" not in text:
        assert rewrite_mention_tokens(text, roster) == text


# --------------------------------------------------------------------------- resolution


def test_resolve_by_handle_name_then_id() -> None:
    roster = Roster([ALICE, BOB, SELF])
    assert resolve_mention("@alice", roster, agent_id=AGENT) is roster.get("u-alice")
    assert resolve_mention("alice", roster, agent_id=AGENT) is roster.get("u-alice")
    assert resolve_mention("@@bob", roster, agent_id=AGENT) is roster.get("u-bob")
    assert resolve_mention("Alice Smith", roster, agent_id=AGENT) is roster.get("u-alice")
    assert resolve_mention("u-bob", roster, agent_id=AGENT) is roster.get("u-bob")
    assert resolve_mention("owner/helper", roster, agent_id=AGENT) is roster.get(AGENT)


def test_handle_beats_name() -> None:
    tricky = person("u-2", name="alice", handle="zed")
    roster = Roster([tricky, ALICE])
    assert resolve_mention("alice", roster, agent_id=AGENT).id == "u-alice"


def test_resolution_is_case_sensitive() -> None:
    roster = Roster([ALICE, BOB, SELF])
    with pytest.raises(UnknownParticipantError) as info:
        resolve_mention("@ALICE", roster, agent_id=AGENT)
    assert str(info.value) == "Unknown participant '@ALICE'. Available handles: ['alice', 'bob']"
    assert info.value.available_handles == ("alice", "bob")
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("blank", ["", "@", "  ", "@@"])
def test_blank_identifier_is_unknown(blank: str) -> None:
    roster = Roster([person("u-nohandle", name="X")])
    with pytest.raises(UnknownParticipantError):
        resolve_mention(blank, roster, agent_id=AGENT)


def test_available_handles_exclude_self_and_handleless() -> None:
    roster = Roster([ALICE, SELF, person("u-x", name="X")])
    assert available_handles(roster, agent_id=AGENT) == ["alice"]


printable = st.text(max_size=30)


@given(
    st.lists(
        st.tuples(st.none() | printable, st.none() | printable, st.none() | printable),
        max_size=6,
    )
)
def test_render_is_one_line_per_participant(rows: list[tuple[str | None, ...]]) -> None:
    # A name, handle or description with newlines cannot inject lines.
    members = [
        person(f"u-{i}", name=name, handle=handle, description=desc)
        for i, (name, handle, desc) in enumerate(rows)
    ]
    text = render_participants_msg(members)
    lines = text.split("\n")
    assert lines[0] == "## Current Participants"
    if not members:
        assert lines[1:] == ["No other participants in this room."]
        return
    body = [line for line in lines[1:] if line.startswith("- @")]
    assert len(body) == len(members)
    assert lines[1 : 1 + len(members)] == body
    assert lines[-1].startswith("IMPORTANT:")


@given(
    st.lists(st.sampled_from(["u-alice", "u-bob", "u-nobody", "x"]), max_size=8),
    st.text(alphabet="ab @[", max_size=3),
)
def test_known_tokens_never_survive_rewrite(ids: list[str], filler: str) -> None:
    roster = Roster([ALICE, BOB])
    content = filler.join(f"@[[{i}]]" for i in ids)
    out = rewrite_mention_tokens(content, roster)
    assert "@[[u-alice]]" not in out
    assert "@[[u-bob]]" not in out
    assert out.count("@[[u-nobody]]") == content.count("@[[u-nobody]]")


def test_a_relisted_equal_row_is_kept_as_given() -> None:
    first = ChatParticipant(id="u1", role="member", status="active", type="User", name="Ann")
    roster = Roster([first])
    again = ChatParticipant(id="u1", role="member", status="active", type="User", name="Ann")
    roster.replace_snapshot([again])
    assert roster.get("u1") is again


def test_a_relisting_with_the_same_rows_keeps_the_listed_objects() -> None:
    """Rows equal to the known ones are taken as listed, not copied: the
    runtime shares identical rows between rooms, and a re-listing (a
    reconnect) must not give every room copies of its own."""
    roster = Roster()
    roster.replace_snapshot([person("u1"), person("a1", type="Agent")])
    again = [person("u1"), person("a1", type="Agent")]
    roster.replace_snapshot(again)
    assert all(got is listed for got, listed in zip(roster.participants, again, strict=True))


def test_a_display_name_two_participants_share_resolves_to_neither() -> None:
    roster = Roster(
        [
            ChatParticipant(
                id="u1", role="member", status="active", type="User", name="Sam", handle="sam1"
            ),
            ChatParticipant(
                id="u2", role="member", status="active", type="User", name="Sam", handle="sam2"
            ),
        ]
    )
    with pytest.raises(UnknownParticipantError) as info:
        resolve_mention("Sam", roster, agent_id="me")
    assert info.value.available_handles == ("sam1", "sam2")
    assert resolve_mention("@sam2", roster, agent_id="me").id == "u2"
    assert resolve_mention("u1", roster, agent_id="me").id == "u1"
