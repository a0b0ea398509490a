"""The agent runtime: rooms, the claims ledger, the engine, control and contacts.

Most of it is internal: :class:`band_trio.Agent` composes it. The names below are
the parts a user composes by hand: a :class:`PlatformRuntime` (the link and the
REST client an :class:`~band_trio.Agent` runs on) and the
:class:`DefaultPreprocessor` (which turns platform events into adapter input), and
``IN_MEMORY``, the ``AgentConfig.state_dir`` that keeps the claims ledger in memory.
:class:`TurnDurationStatistics` and :class:`GcFreezeStatistics` are the types of
two fields of :class:`~band_trio.AgentStatistics`, for code that reads them.
"""

from band_trio.runtime.config import IN_MEMORY
from band_trio.runtime.contact_events import ContactEventHandler, RoomSink
from band_trio.runtime.core.preprocessor import DefaultPreprocessor
from band_trio.runtime.core.turn_durations import TurnDurationStatistics
from band_trio.runtime.gc_policy import GcFreezeStatistics
from band_trio.runtime.platform_runtime import PlatformRuntime

__all__ = [
    "IN_MEMORY",
    "ContactEventHandler",
    "DefaultPreprocessor",
    "GcFreezeStatistics",
    "PlatformRuntime",
    "RoomSink",
    "TurnDurationStatistics",
]
