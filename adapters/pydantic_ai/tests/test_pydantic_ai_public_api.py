"""The package's public surface and its construction errors."""

from __future__ import annotations

from typing import Any

import band_trio_asyncio.testing
import band_trio_pydantic_ai
import pytest
from band_trio_pydantic_ai import (
    DEFAULT_TURN_TIMEOUT,
    HistoryBudget,
    PydanticAIAdapter,
    PydanticAIAdapterConfig,
    PydanticAIHistoryConverter,
    TurnTimeoutError,
)
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from band_trio import BandConfigError, BandError, CustomTools, Emit, SimpleAdapter


def test_public_names() -> None:
    assert sorted(band_trio_pydantic_ai.__all__) == [
        "DEFAULT_HISTORY_BUDGET",
        "DEFAULT_REQUEST_LIMIT",
        "DEFAULT_TOOL_RETRIES",
        "DEFAULT_TURN_TIMEOUT",
        "HISTORY_START",
        "HistoryBudget",
        "INTERRUPTED_TOOL_RESULT",
        "PROVIDER",
        "PydanticAIAdapter",
        "PydanticAIAdapterConfig",
        "PydanticAIHistoryConverter",
        "PydanticAIStatistics",
        "TurnTimeoutError",
        "__version__",
        "estimate_tokens",
        "trim_history",
    ]
    for name in band_trio_pydantic_ai.__all__:
        assert getattr(band_trio_pydantic_ai, name) is not None
    assert band_trio_asyncio.testing.__all__ == ["MAX_HOLD", "ClockHoldingBridge"]
    assert issubclass(TurnTimeoutError, BandError)
    assert issubclass(TurnTimeoutError, TimeoutError)


def test_the_adapter_is_a_simple_adapter_with_its_defaults() -> None:
    adapter = PydanticAIAdapter(model=TestModel())
    assert isinstance(adapter, SimpleAdapter)
    assert adapter.features.emit == {Emit.TOOL_CALLS, Emit.USAGE, Emit.THOUGHTS}
    assert adapter.features.capabilities == frozenset()
    assert adapter.config.turn_timeout == DEFAULT_TURN_TIMEOUT
    assert isinstance(adapter.agent, Agent)
    assert isinstance(adapter.history_converter, PydanticAIHistoryConverter)
    assert adapter.history_converter.budget == adapter.config.history_budget
    stats = adapter.statistics()
    assert (stats.runs, stats.rooms, stats.bridge.thread_running) == (0, 0, False)


def test_a_model_name_makes_an_agent_without_a_provider_call() -> None:
    # The provider is resolved on the first run, not here: no key is needed
    # to build the adapter.
    adapter = PydanticAIAdapter(model="test")
    assert isinstance(adapter.agent, Agent)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "exactly one of agent and model"),
        ({"model": TestModel(), "agent": Agent(TestModel())}, "exactly one of agent and model"),
        ({"agent": object()}, "pydantic_ai.Agent"),
        ({"model": 42}, "Model or a model name"),
        ({"model": TestModel(), "config": {"turn_timeout": 1}}, "PydanticAIAdapterConfig"),
        ({"model": TestModel(), "deps": 3}, "deps must be callable"),
        ({"model": TestModel(), "custom_tools": [1]}, "CustomTools"),
        ({"model": TestModel(), "prompt": "be nice"}, "PromptSettings"),
    ],
)
def test_bad_arguments_are_config_errors(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(BandConfigError, match=match):
        PydanticAIAdapter(**kwargs)


def test_tool_names_may_not_clash() -> None:
    def band_send_message(text: str) -> str:
        return text

    def echo(text: str) -> str:
        return text

    custom = CustomTools()

    @custom.tool
    def shout(text: str) -> str:
        """Shout.

        Args:
            text: what to shout.
        """
        return text.upper()

    def plain_shout(text: str) -> str:
        return text

    plain_shout.__name__ = "shout"
    with pytest.raises(BandConfigError, match="band_send_message"):
        PydanticAIAdapter(model=TestModel(), tools=[band_send_message])
    with pytest.raises(BandConfigError, match="shout"):
        PydanticAIAdapter(model=TestModel(), tools=[plain_shout], custom_tools=custom)
    assert PydanticAIAdapter(model=TestModel(), tools=[echo], custom_tools=custom)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"turn_timeout": 0},
        {"turn_timeout": float("inf")},
        {"turn_timeout": "5"},
        {"request_limit": 0},
        {"tool_retries": -1},
        {"cancel_grace": -1},
        {"history_budget": 100},
    ],
)
def test_bad_config_values_are_config_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(BandConfigError):
        PydanticAIAdapterConfig(**kwargs)


def test_no_turn_deadline_is_a_choice() -> None:
    assert PydanticAIAdapterConfig(turn_timeout=None).turn_timeout is None
    assert PydanticAIAdapterConfig(history_budget=HistoryBudget(max_messages=None)) is not None
