"""SimpleAdapter's feature knobs and ``Emit`` parsing (tools and adapters, "Emit flags";
"Constructor knobs"; "Testable statements" 59-61).

Reference: docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from band_trio import BandConfigError, Capability, Emit, HistoryProvider, SimpleAdapter
from band_trio.adapter import AdapterFeatures, resolve_features
from band_trio.tools.definitions import ToolCategory


class Plain(SimpleAdapter[HistoryProvider]):
    async def on_message(self, *args: Any, **kwargs: Any) -> None:
        """Never called here."""


class AnthropicAdapter(Plain):
    """Named like the official adapter so the messages of its "Testable statements" can be
    pinned verbatim."""

    SUPPORTED_EMIT = frozenset({Emit.TOOL_CALLS, Emit.USAGE})
    SUPPORTED_CAPABILITIES = frozenset(Capability)


class MemoryOnly(Plain):
    SUPPORTED_CAPABILITIES = frozenset({Capability.MEMORY})


def test_defaults_keep_plain_adapters_unchanged() -> None:
    adapter = Plain()
    assert adapter.features == AdapterFeatures()
    assert adapter.features.emit == frozenset()
    assert adapter.features.capabilities == frozenset()
    assert adapter.features.include_tools is None
    assert adapter.features.exclude_tools is None
    assert adapter.features.include_categories is None
    assert Plain.SUPPORTED_EMIT == frozenset() == Plain.SUPPORTED_CAPABILITIES


def test_omitted_emit_is_every_supported_kind_and_empty_is_silence() -> None:
    """Pins (tools and adapters, "Testable statements" 59)."""
    assert AnthropicAdapter().features.emit == AnthropicAdapter.SUPPORTED_EMIT
    assert AnthropicAdapter(emit=()).features.emit == frozenset()
    assert AnthropicAdapter(emit=[]).features.emit == frozenset()


@pytest.mark.parametrize(
    "emit",
    [Emit.USAGE, "usage", [Emit.USAGE], ("usage",), {Emit.USAGE}],
)
def test_emit_accepts_a_member_a_string_or_an_iterable(emit: Any) -> None:
    assert AnthropicAdapter(emit=emit).features.emit == {Emit.USAGE}


def test_unsupported_emit_kind_message_is_exact() -> None:
    """Pins (tools and adapters, "Testable statements" 60)."""
    with pytest.raises(BandConfigError) as info:
        AnthropicAdapter(emit=Emit.THOUGHTS)
    assert str(info.value) == (
        "AnthropicAdapter does not support emit kind(s): thoughts; supported: tool_calls, usage"
    )


def test_unsupported_emit_kinds_are_sorted() -> None:
    with pytest.raises(BandConfigError) as info:
        AnthropicAdapter(emit=[Emit.THOUGHTS, Emit.USAGE, Emit.TASK_EVENTS])
    assert str(info.value) == (
        "AnthropicAdapter does not support emit kind(s): task_events, thoughts; "
        "supported: tool_calls, usage"
    )


def test_a_class_that_supports_nothing_says_so() -> None:
    with pytest.raises(BandConfigError) as info:
        Plain(emit="usage")
    assert str(info.value) == "Plain does not support emit kind(s): usage; supported: none"


@pytest.mark.parametrize("bad", ["bogus", ["usage", "bogus"], Capability.MEMORY, 3])
def test_invalid_emit_value(bad: Any) -> None:
    with pytest.raises(BandConfigError, match=r"^invalid Emit value: "):
        AnthropicAdapter(emit=bad)


def test_invalid_emit_value_names_the_value_and_the_choices() -> None:
    with pytest.raises(BandConfigError) as info:
        AnthropicAdapter(emit="bogus")
    assert str(info.value) == (
        "invalid Emit value: 'bogus'; expected one of: task_events, thoughts, tool_calls, usage"
    )


def test_omitted_capabilities_resolve_to_an_empty_set() -> None:
    """Capabilities are opt-in (tools and adapters, "Testable statements" 61)."""
    assert AnthropicAdapter().features.capabilities == frozenset()


@pytest.mark.parametrize(
    "caps", [Capability.MEMORY, "memory", ["memory"], [Capability.MEMORY, "memory"]]
)
def test_capabilities_accept_members_strings_and_iterables(caps: Any) -> None:
    assert MemoryOnly(capabilities=caps).features.capabilities == {Capability.MEMORY}


def test_unsupported_capability_message_is_exact() -> None:
    with pytest.raises(BandConfigError) as info:
        MemoryOnly(capabilities=[Capability.TASKS, Capability.FILES, Capability.MEMORY])
    assert str(info.value) == (
        "MemoryOnly does not support capability/-ies: files, tasks; supported: memory"
    )
    with pytest.raises(BandConfigError) as info:
        Plain(capabilities="files")
    assert str(info.value) == ("Plain does not support capability/-ies: files; supported: none")


def test_invalid_capability_value() -> None:
    with pytest.raises(BandConfigError, match=r"^invalid Capability value: 'telepathy'"):
        AnthropicAdapter(capabilities="telepathy")


def test_tool_filters_are_kept_as_given() -> None:
    adapter = AnthropicAdapter(
        capabilities=[Capability.MEMORY],
        include_tools=["band_send_message", "band_store_memory"],
        exclude_tools="band_create_chatroom",
        include_categories=["memory", ToolCategory.CHAT],
    )
    f = adapter.features
    assert f.include_tools == ("band_send_message", "band_store_memory")
    assert f.exclude_tools == ("band_create_chatroom",)  # one string is one name
    assert f.include_categories == (ToolCategory.CHAT, ToolCategory.MEMORY)
    assert f.tool_schema_options() == {
        "capabilities": frozenset({Capability.MEMORY}),
        "include_tools": ("band_send_message", "band_store_memory"),
        "exclude_tools": ("band_create_chatroom",),
        "include_categories": (ToolCategory.CHAT, ToolCategory.MEMORY),
    }


@pytest.mark.parametrize(
    "kwargs",
    [
        {"include_tools": [""]},
        {"exclude_tools": [3]},
        {"include_categories": ["nope"]},
        {"include_categories": "nope"},
    ],
)
def test_invalid_tool_filters(kwargs: dict[str, Any]) -> None:
    with pytest.raises(BandConfigError):
        AnthropicAdapter(**kwargs)


def test_emit_members_combine_with_or() -> None:
    assert frozenset({Emit.TOOL_CALLS, Emit.USAGE}) == Emit.TOOL_CALLS | Emit.USAGE
    assert (
        frozenset({Emit.TOOL_CALLS, Emit.USAGE, Emit.THOUGHTS})
        == (Emit.TOOL_CALLS | Emit.USAGE) | Emit.THOUGHTS
    )
    assert AnthropicAdapter(emit=Emit.TOOL_CALLS | Emit.USAGE).features.emit == (
        AnthropicAdapter.SUPPORTED_EMIT
    )
    with pytest.raises(TypeError):
        Emit.USAGE | Capability.MEMORY  # type: ignore[operator]


def test_pruning_and_apply_effective_features() -> None:
    adapter = AnthropicAdapter(capabilities=[Capability.FILES, Capability.MEMORY])
    pruned = adapter.features.without_capabilities({Capability.FILES})
    adapter.apply_effective_features(pruned)
    assert adapter.features.capabilities == {Capability.MEMORY}
    assert adapter.features.emit == AnthropicAdapter.SUPPORTED_EMIT
    assert adapter.features.emits(Emit.USAGE)
    assert not adapter.features.emits(Emit.THOUGHTS)


@given(
    supported=st.frozensets(st.sampled_from(list(Emit))),
    wanted=st.frozensets(st.sampled_from(list(Emit))),
)
def test_emit_resolution_property(supported: frozenset[Emit], wanted: frozenset[Emit]) -> None:
    """A wanted set is accepted exactly when it is a subset of the supported one,
    and the error lists exactly the unsupported kinds, sorted."""
    try:
        features = resolve_features(
            "X", supported_emit=supported, supported_capabilities=frozenset(), emit=wanted
        )
    except BandConfigError as exc:
        assert not wanted <= supported
        listed = str(exc).split("emit kind(s): ")[1].split(";")[0]
        assert listed == ", ".join(sorted(e.value for e in wanted - supported))
    else:
        assert wanted <= supported
        assert features.emit == wanted


def test_existing_adapters_keep_working_with_default_features() -> None:
    from band_trio.demo import EchoAdapter

    from ..agent.harness import RecordingAdapter

    for adapter in (EchoAdapter(), RecordingAdapter()):
        assert adapter.features == AdapterFeatures()
        assert adapter.history_converter is None
