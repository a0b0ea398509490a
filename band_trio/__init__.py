"""band-trio: a Trio-native SDK connecting LLM agents to the Band platform."""

from band_trio.agent import Agent, AgentStatistics, open_agent
from band_trio.errors import *  # noqa: F403
from band_trio.errors import __all__ as _errors_all
from band_trio.runtime.config import AgentConfig, AgentSettings
from band_trio.runtime.platform import PlatformRuntime
from band_trio.runtime.room import RoomStatistics

__version__ = "0.1.0"

__all__ = [
    *_errors_all,
    "Agent",
    "AgentConfig",
    "AgentSettings",
    "AgentStatistics",
    "PlatformRuntime",
    "RoomStatistics",
    "__version__",
    "open_agent",
]
