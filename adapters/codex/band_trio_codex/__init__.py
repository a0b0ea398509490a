"""band-trio-codex: a Band agent that is a Codex agent (``codex app-server``).

:class:`CodexAdapter` is a band-trio ``SimpleAdapter``: give it to
``band_trio.Agent.create(adapter=...)`` or ``band_trio.open_agent``. Each room
gets its own ``codex app-server`` child process, spoken to in JSON-RPC over
its stdin and stdout (no Python dependency beyond band-trio); the platform
tools are the thread's Codex dynamic tools. :class:`CodexConfig` holds the
settings, :class:`ApprovalSettings` who may answer approval requests,
:class:`CodexHistoryConverter` turns a room's history into the text a new
thread is given and finds the thread to resume.
"""

from band_trio_codex.adapter import (
    CLIENT_NAME,
    PROVIDER,
    CodexAdapter,
    CodexAdapterStatistics,
    CodexTurnError,
)
from band_trio_codex.config import (
    APPROVAL_POLICIES,
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_INTERRUPT_TIMEOUT,
    DEFAULT_MAX_LIVE_PROCESSES,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_TURN_TIMEOUT,
    SANDBOX_MODES,
    ApprovalSettings,
    CodexConfig,
)
from band_trio_codex.history import (
    HISTORY_HEADER,
    THREAD_EVENT_TEXT,
    THREAD_METADATA_KEY,
    CodexHistory,
    CodexHistoryConverter,
    turn_input,
)
from band_trio_codex.rpc import (
    CodexProcess,
    CodexRequestTimeout,
    CodexRpcError,
    CodexTransportClosed,
)

__version__ = "0.1.0"

__all__ = [
    "APPROVAL_POLICIES",
    "CLIENT_NAME",
    "DEFAULT_CLOSE_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_INTERRUPT_TIMEOUT",
    "DEFAULT_MAX_LIVE_PROCESSES",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_TURN_TIMEOUT",
    "HISTORY_HEADER",
    "PROVIDER",
    "SANDBOX_MODES",
    "THREAD_EVENT_TEXT",
    "THREAD_METADATA_KEY",
    "ApprovalSettings",
    "CodexAdapter",
    "CodexAdapterStatistics",
    "CodexConfig",
    "CodexHistory",
    "CodexHistoryConverter",
    "CodexProcess",
    "CodexRequestTimeout",
    "CodexRpcError",
    "CodexTransportClosed",
    "CodexTurnError",
    "__version__",
    "turn_input",
]
