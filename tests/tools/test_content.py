"""Sans-io text helpers: visibility and event truncation (properties)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from band_trio.tools import EVENT_CONTENT_LIMIT, TRUNCATION_MARKER, is_visible
from band_trio.tools import truncate_event_content as truncate


@pytest.mark.parametrize("text", ["a", " x ", "1", "?", "€", "日本", "🙂", "é"])
def test_visible(text: str) -> None:
    assert is_visible(text)


@pytest.mark.parametrize(
    "text", ["", " ", "\n\t\r", "\u200b", "\u200d\u200c", "\u200e\u200f", "\u00a0"]
)
def test_blank(text: str) -> None:
    assert not is_visible(text)


@given(st.text(max_size=EVENT_CONTENT_LIMIT))
def test_short_text_is_unchanged(text: str) -> None:
    assert truncate(text) == text


@given(
    st.text(min_size=1, max_size=300),
    st.integers(min_value=len(TRUNCATION_MARKER) + 1, max_value=200),
)
def test_truncation_keeps_head_and_tail_at_exact_length(text: str, limit: int) -> None:
    out = truncate(text, limit)
    if len(text) <= limit:
        assert out == text
        return
    assert len(out) == limit
    keep = limit - len(TRUNCATION_MARKER)
    head, tail = (keep + 1) // 2, keep // 2
    assert out == text[:head] + TRUNCATION_MARKER + (text[len(text) - tail :] if tail else "")


def test_default_limit_on_a_long_event() -> None:
    text = "a" * 9000 + "MIDDLE" + "z" * 9000
    out = truncate(text)
    assert len(out) == 16384
    assert "MIDDLE" not in out
    assert out == "a" * 8183 + TRUNCATION_MARKER + "z" * 8182


def test_limit_too_small() -> None:
    with pytest.raises(ValueError, match="limit"):
        truncate("x" * 100, len(TRUNCATION_MARKER))
