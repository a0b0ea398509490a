"""band-trio-pydantic-ai: answer Band messages with a pydantic-ai agent, on Trio.

:class:`PydanticAIAdapter` is a band-trio ``SimpleAdapter``: give it your
``pydantic_ai.Agent`` (any model, including ``FunctionModel`` and
``TestModel``) or a model, then to ``band_trio.Agent.create(adapter=...)`` or
``band_trio.open_agent``. pydantic-ai is asyncio-only: the agent runs on one
asyncio loop in a worker thread (``band_trio_asyncio.AsyncioBridge``), while
the Band tools it calls run on Trio, in the same turn.
:class:`PydanticAIHistoryConverter` turns a room's history into pydantic-ai
messages, bounded by a :class:`HistoryBudget`.
"""

from band_trio_pydantic_ai.adapter import (
    DEFAULT_REQUEST_LIMIT,
    DEFAULT_TOOL_RETRIES,
    DEFAULT_TURN_TIMEOUT,
    PROVIDER,
    PydanticAIAdapter,
    PydanticAIAdapterConfig,
    PydanticAIStatistics,
    TurnTimeoutError,
)
from band_trio_pydantic_ai.converter import (
    DEFAULT_HISTORY_BUDGET,
    HISTORY_START,
    INTERRUPTED_TOOL_RESULT,
    HistoryBudget,
    PydanticAIHistoryConverter,
    estimate_tokens,
    trim_history,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_HISTORY_BUDGET",
    "DEFAULT_REQUEST_LIMIT",
    "DEFAULT_TOOL_RETRIES",
    "DEFAULT_TURN_TIMEOUT",
    "HISTORY_START",
    "INTERRUPTED_TOOL_RESULT",
    "PROVIDER",
    "HistoryBudget",
    "PydanticAIAdapter",
    "PydanticAIAdapterConfig",
    "PydanticAIHistoryConverter",
    "PydanticAIStatistics",
    "TurnTimeoutError",
    "__version__",
    "estimate_tokens",
    "trim_history",
]
