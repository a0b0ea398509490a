"""The argument validator on its own: a property over random inputs, and the
coercion rules."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from band_trio.errors import ToolArgumentsError
from band_trio.tools import TOOL_DEFINITIONS
from band_trio.tools._schema import validate_params

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


@given(
    definition=st.sampled_from(TOOL_DEFINITIONS),
    args=st.dictionaries(st.text(max_size=15), values, max_size=6)
    | st.dictionaries(st.sampled_from(["content", "id", "page", "mentions", "scope"]), values),
)
def test_validation_either_returns_every_param_or_explains(definition: Any, args: Any) -> None:
    failure: ToolArgumentsError | None = None
    try:
        out = validate_params(definition.name, definition.params, args)
    except ToolArgumentsError as exc:
        failure = exc
    if failure is not None:
        assert failure.tool_name == definition.name
        assert failure.problems
        assert str(failure).startswith(f"Invalid arguments for {definition.name}: ")
        return
    assert set(out) == {p.name for p in definition.params}
    for p in definition.params:
        if p.required:
            assert out[p.name] is not None


def params_of(name: str) -> Any:
    return next(d for d in TOOL_DEFINITIONS if d.name == name).params


def test_defaults_and_null_optionals() -> None:
    out = validate_params("band_lookup_peers", params_of("band_lookup_peers"), {"page": None})
    assert out == {"page": 1, "page_size": 50}


def test_list_items_are_checked_with_their_index() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        validate_params(
            "band_send_message",
            params_of("band_send_message"),
            {"content": "x", "mentions": ["ok", 3]},
        )
    assert info.value.problems == ("mentions.1: must be a string, got an integer",)


def test_task_ref_is_normalised() -> None:
    out = validate_params("band_get_task", params_of("band_get_task"), {"id": " #7 "})
    assert out["id"] == "7"


@pytest.mark.parametrize("value", [1.5, "1.5", "one", [], {}])
def test_integers_are_not_guessed(value: Any) -> None:
    with pytest.raises(ToolArgumentsError, match="page: must be an integer"):
        validate_params("band_lookup_peers", params_of("band_lookup_peers"), {"page": value})
