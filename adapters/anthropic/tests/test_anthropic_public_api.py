"""The public names of band_trio_anthropic, pinned; configuration errors.

Reference: docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

import attrs
import band_trio_anthropic
import pytest
from band_trio_anthropic import AnthropicAdapter, AnthropicAdapterConfig, AnthropicHistoryConverter

from band_trio import BandConfigError, Capability, Emit

PUBLIC = [
    "DEFAULT_HISTORY_TOKEN_BUDGET",
    "DEFAULT_MAX_HISTORY_MESSAGES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MAX_TOOL_ROUNDS",
    "DEFAULT_MODEL",
    "HISTORY_START",
    "INTERRUPTED_TOOL_RESULT",
    "MAX_CACHE_BREAKPOINTS",
    "MIN_THINKING_BUDGET",
    "PROVIDER",
    "AnthropicAdapter",
    "AnthropicAdapterConfig",
    "AnthropicHistoryConverter",
    "CachePolicy",
    "CachedRequest",
    "UnknownModelError",
    "__version__",
    "estimate_message_tokens",
    "estimate_tokens",
    "known_models",
    "trim_to_budget",
]


def test_public_names_are_pinned() -> None:
    assert sorted(band_trio_anthropic.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert getattr(band_trio_anthropic, name) is not None
        obj = getattr(band_trio_anthropic, name)
        if callable(obj):
            assert obj.__doc__, f"{name} needs a docstring"


def test_the_adapter_uses_no_asyncio_and_no_private_band_trio_module() -> None:
    """DESIGN rule 7: adapters build on band-trio's public API only."""
    import ast
    from pathlib import Path

    package = Path(band_trio_anthropic.__file__).parent
    public = {"band_trio", "band_trio.adapter", "band_trio.tools", "band_trio.testing"}
    for path in package.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name != "asyncio", f"{path.name} imports asyncio"
                if name.startswith("band_trio") and not name.startswith("band_trio_anthropic"):
                    assert name in public, f"{path.name} imports {name}"


def test_defaults_match_the_reference() -> None:
    """(tools and adapters, "Construction"; "Testable statements" 59, 61)."""
    adapter = AnthropicAdapter()
    assert adapter.features.emit == {Emit.TOOL_CALLS, Emit.USAGE}
    assert adapter.features.capabilities == frozenset()
    assert isinstance(adapter.history_converter, AnthropicHistoryConverter)
    config = adapter.config
    assert config.max_tokens == 4096
    assert config.api_key is None
    assert config.system_prompt is None
    assert config.include_base_instructions is True
    assert frozenset(Capability) == AnthropicAdapter.SUPPORTED_CAPABILITIES
    assert AnthropicAdapter(emit=()).features.emit == frozenset()


def test_unsupported_emit_kinds_are_refused() -> None:
    """(tools and adapters, "Testable statements" 60); thoughts are supported here
    (the text of thinking blocks)."""
    with pytest.raises(BandConfigError) as raised:
        AnthropicAdapter(emit=Emit.TASK_EVENTS)
    assert str(raised.value) == (
        "AnthropicAdapter does not support emit kind(s): task_events; "
        "supported: thoughts, tool_calls, usage"
    )


def test_the_config_is_immutable_and_refuses_unknown_fields() -> None:
    """(tools and adapters, "Testable statements" 93)."""
    config = AnthropicAdapterConfig(model="claude-x", allow_unknown_model=True)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        config.model = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        AnthropicAdapterConfig(modle="claude-x")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        AnthropicAdapterConfig("claude-x")  # type: ignore[misc]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_tokens": 0},
        {"max_tokens": -1},
        {"max_tokens": True},
        {"max_tokens": 1.5},
        {"max_tool_rounds": 0},
        {"max_history_messages": 0},
        {"model": ""},
        {"model": None},
        {"api_key": ""},
        {"custom_section": None},
        {"system_prompt": 3},
    ],
)
def test_bad_values_are_a_config_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(BandConfigError):
        AnthropicAdapterConfig(**kwargs)  # type: ignore[arg-type]


def test_the_api_key_never_shows() -> None:
    config = AnthropicAdapterConfig(api_key="sk-ant-very-secret")
    adapter = AnthropicAdapter(config)
    assert "very-secret" not in repr(config)
    assert "very-secret" not in repr(adapter)
    assert AnthropicAdapterConfig(max_history_messages=None).max_history_messages is None


def test_a_wrong_config_object_is_a_config_error() -> None:
    with pytest.raises(BandConfigError):
        AnthropicAdapter({"model": "x"})  # type: ignore[arg-type]
    with pytest.raises(BandConfigError):
        AnthropicAdapter(custom_tools=[])  # type: ignore[arg-type]


async def test_the_prompt_follows_the_config() -> None:
    """(tools and adapters, "Testable statements" 62: the converter learns the name;
    "System prompt": the options)."""
    adapter = AnthropicAdapter(
        AnthropicAdapterConfig(custom_section="Be brief.", include_base_instructions=False),
        capabilities=[Capability.CONTACTS],
    )
    await adapter.on_started("Claude", "a helpful agent")
    assert adapter.history_converter is not None
    assert adapter.history_converter.agent_name == "Claude"  # type: ignore[attr-defined]
    assert adapter.system_prompt.startswith("You are Claude, a helpful agent.")
    assert "## Environment" not in adapter.system_prompt
    assert "## Contact Management Tools" in adapter.system_prompt
    assert adapter.system_prompt.rstrip().endswith("Be brief.")

    fixed = AnthropicAdapter(AnthropicAdapterConfig(system_prompt="Only this."))
    await fixed.on_started("Claude", "a helpful agent")
    assert fixed.system_prompt == "Only this."


async def test_an_owned_client_is_created_lazily_and_closed() -> None:
    adapter = AnthropicAdapter(AnthropicAdapterConfig(api_key="sk-test"))
    client = adapter._get_client()
    assert not client.is_closed()
    await adapter.cleanup_all()
    assert client.is_closed()
    assert adapter._get_client() is not client
    await adapter.aclose()
