"""Identical participant rows are shared across rooms, within a bound."""

from __future__ import annotations

from band_trio.runtime.core._participant_rows import ParticipantRows
from band_trio.wire.models import ChatParticipant


def _row(pid: str = "u1", name: str = "Ann", **extra: object) -> ChatParticipant:
    return ChatParticipant(
        id=pid, role="member", status="active", type="User", name=name, extra=extra
    )


def test_equal_rows_share_the_first_object() -> None:
    rows = ParticipantRows()
    first = _row()
    assert rows.share(first) is first
    again = _row()
    assert again is not first
    assert rows.share(again) is first


def test_rows_differing_in_any_field_are_not_merged() -> None:
    rows = ParticipantRows()
    first = rows.share(_row())
    assert rows.share(_row(name="Bob")) is not first
    assert rows.share(_row(joined="x")) is not first
    assert rows.share(_row(joined="x")).extra == {"joined": "x"}


def test_a_row_with_an_unhashable_extra_is_kept_as_given() -> None:
    rows = ParticipantRows()
    nested = _row(meta={"a": 1})
    assert rows.share(nested) is nested
    assert rows.share(_row(meta={"a": 1})) is not nested
    assert len(rows) == 0


def test_the_table_is_bounded_and_forgets_the_oldest() -> None:
    rows = ParticipantRows(limit=2)
    a, b, c = _row("a"), _row("b"), _row("c")
    for row in (a, b, c):
        rows.share(row)
    assert len(rows) == 2
    assert rows.share(_row("c")) is c
    assert rows.share(_row("a")) is not a
