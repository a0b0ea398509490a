"""The field checks adapters' settings share (``band_trio.adapter.config_checks``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from band_trio import BandConfigError
from band_trio.adapter import (
    FieldCheck,
    PromptSettings,
    as_dict,
    as_path,
    check_tool_names,
    config_or_default,
    flag,
    function,
    instance_of,
    one_of,
    optional,
    positive_int,
    seconds,
    string_map,
    text,
)

names = st.from_regex(r"[a-z][a-z_]{0,20}", fullmatch=True)
not_numbers = st.one_of(
    st.booleans(), st.text(), st.none(), st.lists(st.integers(), max_size=2), st.just(object())
)


def refused(check: FieldCheck, value: object) -> str:
    with pytest.raises(BandConfigError) as raised:
        check(None, None, value)
    return str(raised.value)


@given(names, st.integers(min_value=1))
def test_positive_int_takes_integers_from_one(name: str, value: int) -> None:
    positive_int(name)(None, None, value)


@given(names, st.one_of(st.integers(max_value=0), st.floats(), not_numbers))
def test_positive_int_refuses_the_rest_naming_the_field(name: str, value: object) -> None:
    assert refused(positive_int(name), value).startswith(f"{name} must be a positive integer; got ")


@given(names, st.floats(min_value=0, exclude_min=True, allow_infinity=False) | st.integers(1))
def test_seconds_take_positive_finite_numbers(name: str, value: float) -> None:
    seconds(name)(None, None, value)


@given(
    names,
    st.one_of(
        st.floats(max_value=0),
        st.integers(max_value=0),
        st.just(math.inf),
        st.just(math.nan),
        not_numbers,
    ),
)
def test_seconds_refuse_the_rest_naming_the_field(name: str, value: object) -> None:
    message = refused(seconds(name), value)
    assert message.startswith(f"{name} must be a positive, finite number of seconds; got ")


@given(names, st.floats(min_value=0, allow_infinity=False) | st.integers(0))
def test_seconds_with_zero_take_zero(name: str, value: float) -> None:
    seconds(name, zero=True)(None, None, value)


@given(names, st.one_of(st.floats(max_value=-1e-9), st.just(math.inf), st.integers(max_value=-1)))
def test_seconds_with_zero_refuse_negative_and_endless(name: str, value: float) -> None:
    message = refused(seconds(name, zero=True), value)
    assert message.startswith(f"{name} must be a non-negative, finite number of seconds; got ")


@given(names, st.text())
def test_text_takes_any_string_and_non_blank_text_a_visible_one(name: str, value: str) -> None:
    text(name)(None, None, value)
    if value.strip():
        text(name, blank=False)(None, None, value)
    else:
        assert refused(text(name, blank=False), value) == (
            f"{name} must be a non-empty string; got {value!r}"
        )


@given(names, st.one_of(st.integers(), st.binary(), st.none()))
def test_text_refuses_other_types(name: str, value: object) -> None:
    assert refused(text(name), value).startswith(f"{name} must be a string; got ")


def test_an_object_is_shown_by_its_type_only() -> None:
    class Secret:
        def __repr__(self) -> str:
            return "sk-very-secret"

    message = refused(text("api_key"), Secret())
    assert message == "api_key must be a string; got Secret"
    assert refused(text("api_key"), b"sk-1") == "api_key must be a string; got bytes"


@given(names, st.one_of(st.booleans(), st.integers(), st.none(), st.text()))
def test_flag_takes_only_bools(name: str, value: object) -> None:
    if isinstance(value, bool):
        flag(name)(None, None, value)
    else:
        assert refused(flag(name), value) == f"{name} must be True or False; got {value!r}"


@given(names, st.sets(st.text(min_size=1), min_size=1), st.text())
def test_one_of_takes_the_allowed_names(name: str, allowed: set[str], value: str) -> None:
    check = one_of(name, allowed)
    if value in allowed:
        check(None, None, value)
    else:
        assert refused(check, value) == f"{name} must be one of {sorted(allowed)}; got {value!r}"


def test_instance_of_names_the_class_with_its_article() -> None:
    assert refused(instance_of("cache", PromptSettings), 3) == (
        "cache must be a PromptSettings; got 3"
    )
    assert refused(instance_of("budget", int), "x") == "budget must be an int; got 'x'"
    instance_of("cache", PromptSettings)(None, None, PromptSettings())


@given(names, st.one_of(st.none(), st.integers()))
def test_optional_lets_none_through_and_says_so(name: str, value: int | None) -> None:
    check = optional(positive_int(name))
    if value is None or value >= 1:
        check(None, None, value)
    else:
        assert refused(check, value) == f"{name} must be a positive integer or None; got {value!r}"


def test_a_check_works_outside_attrs() -> None:
    positive_int("n").check(1)
    with pytest.raises(BandConfigError, match="n must be a positive integer; got 0"):
        positive_int("n").check(0)


@given(names, st.dictionaries(st.text(), st.text()))
def test_string_map_takes_a_mapping_of_strings_copied(name: str, value: dict[str, str]) -> None:
    converted = as_dict(value)
    string_map(name)(None, None, converted)
    assert converted == value
    assert converted is not value


@given(
    names,
    st.one_of(
        st.dictionaries(st.text(), st.integers(), min_size=1),
        st.lists(st.text()),
        st.text(),
        st.none(),
    ),
)
def test_string_map_refuses_the_rest(name: str, value: object) -> None:
    message = refused(string_map(name), as_dict(value))
    assert message.startswith(f"{name} must be a mapping of strings to strings; got ")


@given(names, st.one_of(st.none(), st.text(min_size=1, alphabet="abc/"), st.integers()))
def test_as_path_makes_paths_and_leaves_the_rest_to_the_check(name: str, value: object) -> None:
    check = optional(instance_of(name, Path))
    converted = as_path(value)
    if isinstance(value, str):
        assert converted == Path(value)
        assert as_path(Path(value)) == Path(value)
    else:
        assert converted is value
    if isinstance(value, int):
        assert refused(check, converted) == f"{name} must be a Path or None; got {value!r}"
    else:
        check(None, None, converted)


@attrs.frozen(kw_only=True)
class Settings:
    limit: int = attrs.field(default=3, validator=positive_int("limit"))
    timeout: float | None = attrs.field(default=None, validator=optional(seconds("timeout")))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"limit": 0}, "limit must be a positive integer; got 0"),
        ({"timeout": -1}, "timeout must be a positive, finite number of seconds or None; got -1"),
    ],
)
def test_checks_are_attrs_validators(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(BandConfigError) as raised:
        Settings(**kwargs)
    assert str(raised.value) == message
    assert Settings(limit=1, timeout=2.5).timeout == 2.5


def test_config_or_default() -> None:
    assert config_or_default(None, Settings) == Settings()
    given_settings = Settings(limit=7)
    assert config_or_default(given_settings, Settings) is given_settings
    with pytest.raises(BandConfigError) as raised:
        config_or_default({"limit": 7}, Settings)
    assert str(raised.value) == "config must be a Settings; got dict"


@given(st.lists(st.from_regex(r"[a-z]{1,3}(_[a-z]{1,3})?", fullmatch=True), max_size=6))
def test_tool_names_may_not_repeat_or_take_the_band_prefix(tool_names: list[str]) -> None:
    clashes = sorted({n for n in tool_names if tool_names.count(n) > 1 or n.startswith("band_")})
    if not clashes:
        check_tool_names(tool_names)
        return
    with pytest.raises(BandConfigError) as raised:
        check_tool_names(tool_names)
    assert str(raised.value) == (
        f"tool name(s) {', '.join(clashes)} clash with a Band tool or with each other"
    )


def test_tool_names_clash_examples() -> None:
    check_tool_names(["echo", "shout"])
    with pytest.raises(BandConfigError, match=r"tool name\(s\) band_send_message clash"):
        check_tool_names(["band_send_message"])
    with pytest.raises(BandConfigError, match=r"tool name\(s\) twin clash"):
        check_tool_names(["twin", "echo", "twin"])


def test_function_takes_callables() -> None:
    check = optional(function("workspace_for_room", of="the room id"))
    check(None, None, None)
    check(None, None, str)
    assert refused(check, "/tmp") == (
        "workspace_for_room must be a function of the room id or None; got '/tmp'"
    )
