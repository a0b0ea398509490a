"""band-trio-pydantic-ai."""

from band_trio_pydantic_ai.converter import (
    DEFAULT_HISTORY_BUDGET,
    HISTORY_START,
    INTERRUPTED_TOOL_RESULT,
    HistoryBudget,
    PydanticAIHistoryConverter,
    estimate_tokens,
    trim_history,
)

__all__ = [
    "DEFAULT_HISTORY_BUDGET",
    "HISTORY_START",
    "INTERRUPTED_TOOL_RESULT",
    "HistoryBudget",
    "PydanticAIHistoryConverter",
    "estimate_tokens",
    "trim_history",
]
