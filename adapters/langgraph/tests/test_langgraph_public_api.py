"""The package's public surface and its construction errors."""

from __future__ import annotations

import asyncio

import band_trio_langgraph
import pytest
from band_trio_langgraph import LangGraphAdapter, LangGraphAdapterConfig, band_tools
from band_trio_langgraph.testing import ScriptedChatModel
from langchain_core.messages import BaseMessage, ToolMessage

from band_trio import (
    BandConfigError,
    CustomTools,
    Emit,
    SimpleAdapter,
)


def test_public_names() -> None:
    assert sorted(band_trio_langgraph.__all__) == [
        "CheckpointerFactory",
        "CompiledGraph",
        "DEFAULT_MAX_THREAD_MESSAGES",
        "DEFAULT_RECURSION_LIMIT",
        "HISTORY_START",
        "INTERRUPTED_TOOL_RESULT",
        "LangChainHistoryConverter",
        "LangGraphAdapter",
        "LangGraphAdapterConfig",
        "LangGraphStatistics",
        "LatestCheckpointSaver",
        "PROVIDER",
        "__version__",
        "band_tools",
        "build_agent_graph",
    ]
    for name in band_trio_langgraph.__all__:
        assert getattr(band_trio_langgraph, name) is not None


def test_the_adapter_is_a_simple_adapter_with_its_defaults() -> None:
    adapter = LangGraphAdapter(model=ScriptedChatModel())
    assert isinstance(adapter, SimpleAdapter)
    assert adapter.features.emit == {Emit.TOOL_CALLS, Emit.USAGE, Emit.THOUGHTS}
    assert adapter.features.capabilities == frozenset()
    assert adapter.config.recursion_limit == 50
    assert adapter.history_converter is not None
    assert isinstance(adapter.history_converter.convert([]), list)
    _: list[BaseMessage] = adapter.history_converter.convert([])


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"model": ScriptedChatModel(), "graph": object()}],
)
def test_exactly_one_pattern(kwargs: dict[str, object]) -> None:
    with pytest.raises(BandConfigError, match="exactly one of model"):
        LangGraphAdapter(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("recursion_limit", 0),
        ("recursion_limit", True),
        ("cancel_grace", -1),
        ("max_thread_messages", 0),
        ("custom_section", 3),
    ],
)
def test_config_values_are_checked(field: str, value: object) -> None:
    with pytest.raises(BandConfigError, match=field):
        LangGraphAdapterConfig(**{field: value})  # type: ignore[arg-type]


def test_tool_names_may_not_clash() -> None:
    from langchain_core.tools import tool

    @tool
    def band_secret() -> str:
        """Pretends to be a Band tool."""
        return ""

    with pytest.raises(BandConfigError, match="band_secret"):
        LangGraphAdapter(model=ScriptedChatModel(), tools=[band_secret])

    custom = CustomTools()

    @custom.tool
    def twin() -> str:
        """A custom tool."""
        return ""

    @tool("twin")
    def other_twin() -> str:
        """A LangChain tool with the same name."""
        return ""

    with pytest.raises(BandConfigError, match="twin"):
        LangGraphAdapter(model=ScriptedChatModel(), tools=[other_twin], custom_tools=custom)


def test_unsupported_emit_kinds_are_refused() -> None:
    with pytest.raises(BandConfigError, match="task_events"):
        LangGraphAdapter(model=ScriptedChatModel(), emit=Emit.TASK_EVENTS)


def test_band_tools_outside_a_turn_answer_with_an_error() -> None:
    (send, *_) = band_tools()
    call = {
        "name": send.name,
        "args": {"content": "x", "mentions": ["a"]},
        "id": "c1",
        "type": "tool_call",
    }
    message = asyncio.run(send.ainvoke(call))
    assert isinstance(message, ToolMessage)
    assert message.status == "error"
    assert "no Band turn is running" in str(message.content)


async def test_an_adapter_used_without_an_agent_closes_its_bridge() -> None:
    adapter = LangGraphAdapter(model=ScriptedChatModel())

    async def answer(_portal: object) -> int:
        return 7

    assert await adapter.bridge.run(answer) == 7
    assert adapter.statistics().bridge.thread_running
    await adapter.aclose()
    assert not adapter.statistics().bridge.thread_running
