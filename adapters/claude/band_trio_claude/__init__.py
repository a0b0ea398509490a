"""band-trio-claude: a Band agent that is a Claude Agent SDK agent.

:class:`ClaudeAgentAdapter` is a band-trio ``SimpleAdapter``: give it to
``band_trio.Agent.create(adapter=...)`` or ``band_trio.open_agent``. Each room
gets its own ``claude`` CLI through claude-agent-sdk (built on anyio, so it
runs on Trio as it is); the platform tools reach Claude through an in-process
MCP server of the room's own. :class:`ClaudeAgentConfig` holds the settings,
:class:`ClaudeHistoryConverter` turns a room's history into the text a first
turn is given and finds the conversation to resume.
"""

from band_trio_claude.adapter import (
    PROVIDER,
    ClaudeAdapterStatistics,
    ClaudeAgentAdapter,
    ClaudeTurnError,
)
from band_trio_claude.config import (
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_INTERRUPT_TIMEOUT,
    DEFAULT_MAX_BUFFER_SIZE,
    DEFAULT_MAX_LIVE_CLIENTS,
    DEFAULT_MODEL,
    DEFAULT_TURN_TIMEOUT,
    PERMISSION_MODES,
    ClaudeAgentConfig,
)
from band_trio_claude.history import (
    HISTORY_HEADER,
    SESSION_EVENT_TEXT,
    SESSION_METADATA_KEY,
    ClaudeHistory,
    ClaudeHistoryConverter,
    compose_prompt,
)
from band_trio_claude.room import MCP_PREFIX, MCP_SERVER

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_CLOSE_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_INTERRUPT_TIMEOUT",
    "DEFAULT_MAX_BUFFER_SIZE",
    "DEFAULT_MAX_LIVE_CLIENTS",
    "DEFAULT_MODEL",
    "DEFAULT_TURN_TIMEOUT",
    "HISTORY_HEADER",
    "MCP_PREFIX",
    "MCP_SERVER",
    "PERMISSION_MODES",
    "PROVIDER",
    "SESSION_EVENT_TEXT",
    "SESSION_METADATA_KEY",
    "ClaudeAdapterStatistics",
    "ClaudeAgentAdapter",
    "ClaudeAgentConfig",
    "ClaudeHistory",
    "ClaudeHistoryConverter",
    "ClaudeTurnError",
    "__version__",
    "compose_prompt",
]
