"""band-trio-langgraph: answer Band messages with a LangGraph graph, on Trio.

:class:`LangGraphAdapter` is a band-trio ``SimpleAdapter``: give it a chat
model (the simple pattern) or a graph (``graph_factory`` or a static graph),
then to ``band_trio.Agent.create(adapter=...)`` or ``band_trio.open_agent``.
LangGraph is asyncio-only: the graphs run on one asyncio loop in a worker
thread (``band_trio_asyncio.AsyncioBridge``), while the Band tools they call
run on Trio.
:class:`LangChainHistoryConverter` turns a room's history into LangChain
messages. :mod:`band_trio_langgraph.testing` has a scripted chat model.
"""

from band_trio_langgraph.adapter import (
    DEFAULT_MAX_THREAD_MESSAGES,
    DEFAULT_RECURSION_LIMIT,
    PROVIDER,
    CheckpointerFactory,
    CompiledGraph,
    LangGraphAdapter,
    LangGraphAdapterConfig,
    LangGraphStatistics,
    band_tools,
)
from band_trio_langgraph.converter import (
    HISTORY_START,
    INTERRUPTED_TOOL_RESULT,
    LangChainHistoryConverter,
)
from band_trio_langgraph.graph import build_agent_graph
from band_trio_langgraph.thread_memory import LatestCheckpointSaver

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MAX_THREAD_MESSAGES",
    "DEFAULT_RECURSION_LIMIT",
    "HISTORY_START",
    "INTERRUPTED_TOOL_RESULT",
    "PROVIDER",
    "CheckpointerFactory",
    "CompiledGraph",
    "LangChainHistoryConverter",
    "LangGraphAdapter",
    "LangGraphAdapterConfig",
    "LangGraphStatistics",
    "LatestCheckpointSaver",
    "__version__",
    "band_tools",
    "build_agent_graph",
]
