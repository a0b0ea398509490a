"""band-trio-anthropic: answer Band messages with Anthropic's Claude.

:class:`AnthropicAdapter` is a band-trio ``SimpleAdapter``: give it to
``band_trio.Agent.create(adapter=...)`` or ``band_trio.open_agent``. It talks to
the Messages API through the official ``anthropic`` client (async through anyio,
so it runs on Trio) and reaches the room only through band-trio's tools.
:class:`AnthropicHistoryConverter` turns a room's history into Messages API
``messages``.
"""

from band_trio_anthropic.adapter import (
    DEFAULT_MAX_HISTORY_MESSAGES,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_TOOL_ROUNDS,
    DEFAULT_MODEL,
    PROVIDER,
    AnthropicAdapter,
    AnthropicAdapterConfig,
)
from band_trio_anthropic.converter import (
    HISTORY_START,
    INTERRUPTED_TOOL_RESULT,
    AnthropicHistoryConverter,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MAX_HISTORY_MESSAGES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MAX_TOOL_ROUNDS",
    "DEFAULT_MODEL",
    "HISTORY_START",
    "INTERRUPTED_TOOL_RESULT",
    "PROVIDER",
    "AnthropicAdapter",
    "AnthropicAdapterConfig",
    "AnthropicHistoryConverter",
    "__version__",
]
