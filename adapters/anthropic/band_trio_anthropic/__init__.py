"""band-trio-anthropic: answer Band messages with Anthropic's Claude.

:class:`AnthropicAdapter` is a band-trio ``SimpleAdapter``: give it to
``band_trio.Agent.create(adapter=...)`` or ``band_trio.open_agent``. It talks to
the Messages API through the official ``anthropic`` client (async through anyio,
so it runs on Trio) and reaches the room only through band-trio's tools.
:class:`AnthropicHistoryConverter` turns a room's history into Messages API
``messages``; :class:`CachePolicy` says where prompt-cache breakpoints go.
"""

from band_trio_anthropic.adapter import (
    DEFAULT_HISTORY_TOKEN_BUDGET,
    DEFAULT_MAX_HISTORY_MESSAGES,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_TOOL_ROUNDS,
    DEFAULT_MODEL,
    PROVIDER,
    AnthropicAdapter,
    AnthropicAdapterConfig,
)
from band_trio_anthropic.caching import MAX_CACHE_BREAKPOINTS, CachedRequest, CachePolicy
from band_trio_anthropic.converter import (
    HISTORY_START,
    INTERRUPTED_TOOL_RESULT,
    AnthropicHistoryConverter,
)
from band_trio_anthropic.history_budget import (
    estimate_message_tokens,
    estimate_tokens,
    trim_to_budget,
)
from band_trio_anthropic.models import UnknownModelError, known_models
from band_trio_anthropic.thinking import MIN_THINKING_BUDGET

__version__ = "0.1.0"

__all__ = [
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
