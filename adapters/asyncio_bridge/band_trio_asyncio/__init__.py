"""band-trio-asyncio: run an asyncio LLM framework under band-trio, on Trio.

band-trio is Trio-native; frameworks such as LangGraph and PydanticAI are
asyncio-only. :class:`AsyncioBridge` runs one asyncio event loop in one worker
thread per agent: a Trio task hands it a coroutine with
:meth:`AsyncioBridge.run` and waits for the outcome without blocking Trio,
and the coroutine calls back into Trio (the platform tools, in the same turn)
through its :class:`TrioPortal`. Both band-trio's LangGraph and PydanticAI
adapters run on it; an adapter for another asyncio framework uses it the same
way (see the package README). It imports no LLM framework.
"""

from band_trio_asyncio._bridge import (
    DEFAULT_CANCEL_GRACE,
    DEFAULT_STUCK_AFTER,
    AsyncioBridge,
    AsyncioTaskCancelledError,
    BridgeClosedError,
    BridgeStatistics,
    TrioPortal,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_CANCEL_GRACE",
    "DEFAULT_STUCK_AFTER",
    "AsyncioBridge",
    "AsyncioTaskCancelledError",
    "BridgeClosedError",
    "BridgeStatistics",
    "TrioPortal",
    "__version__",
]
