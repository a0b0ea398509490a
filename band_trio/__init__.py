"""band-trio: a Trio-native SDK connecting LLM agents to the Band platform.

Run an agent with ``trio.run(agent.serve)``, ``await nursery.start(agent.serve)``
or ``async with band_trio.open_agent(...)``. Implement an adapter by subclassing
:class:`SimpleAdapter` and writing ``on_message``; reply through the room-bound
:class:`AgentTools` it receives. :class:`LocalPlatform` is an embedded Band
platform for offline development and tests; it comes with the optional extra
``pip install 'band-trio[local]'`` (without it, using it raises
:class:`MissingExtraError` naming that command).

The root holds what an agent author needs. Everything else is reached through
its subpackage, each with a pinned surface of its own:

* :mod:`band_trio.adapter` — the whole adapter contract (preprocessor and turn
  types, tool-event and usage helpers, failure reports, system prompts);
* :mod:`band_trio.tools` — the platform tools, their schemas and categories;
* :mod:`band_trio.runtime` — the runtime's composable parts (``PlatformRuntime``,
  ``DefaultPreprocessor``);
* :mod:`band_trio.wire` — the WebSocket link, the REST client, the platform's
  events; :mod:`band_trio.wire.models` the REST models;
* :mod:`band_trio.errors` — every error class;
* :mod:`band_trio.local` and :mod:`band_trio.testing` — the embedded platform
  and the test kit.
"""

from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

from band_trio._logging import configure_logging
from band_trio._version import __version__
from band_trio.adapter import (
    AdapterFeatures,
    AgentFailure,
    AgentToolsProtocol,
    Emit,
    FrameworkAdapter,
    HistoryConverter,
    HistoryItem,
    HistoryProvider,
    PlatformMessage,
    SimpleAdapter,
    ToolEffect,
)
from band_trio.agent import Agent, AgentStatistics, open_agent
from band_trio.errors import (
    AgentAlreadyRunningError,
    APIStatusError,
    AuthenticationError,
    BandConfigError,
    BandConnectionError,
    BandError,
    BandTimeoutError,
    BandToolError,
    HistoryConversionError,
    InputNotAccepted,
    MissingExtraError,
    OutcomeUnknownError,
    RateLimitError,
    RoomExecutionStoppedError,
    SupersededError,
    ToolArgumentsError,
    UnknownParticipantError,
)
from band_trio.runtime.config import AgentConfig, AgentSettings, ConflictPolicy
from band_trio.runtime.contact_events import ContactEventConfig, ContactStrategy
from band_trio.runtime.room import RoomStatistics
from band_trio.tools import (
    AgentTools,
    Capability,
    ContactTools,
    CustomTools,
    ToolErrorKind,
    ToolResult,
    get_anthropic_tool_schemas,
    get_openai_tool_schemas,
    get_tool_schemas,
)

if TYPE_CHECKING:
    from band_trio.local import HumanClient, LocalPlatform, open_local_platform


_LOCAL_NAMES = frozenset({"HumanClient", "LocalPlatform", "open_local_platform"})


def __getattr__(name: str) -> Any:
    # The local platform (Hypercorn, h2, ...) is imported on first use only: an
    # agent process never needs it, and importing it costs ~17 MiB of RSS. It is
    # the optional extra `band-trio[local]`: without it, the import below raises
    # MissingExtraError, which names the install command.
    if name in _LOCAL_NAMES:
        # Lazy: the optional `local` extra, loaded on first use (see above).
        import band_trio.local

        value = getattr(band_trio.local, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    # The lazy names are listed too: completion and autodoc (which walks dir())
    # see every name of __all__.
    return sorted(set(globals()) | set(__all__))


__all__ = [  # noqa: RUF022 - grouped by what an author does with them
    # running an agent
    "Agent",
    "AgentConfig",
    "AgentSettings",
    "AgentStatistics",
    "ConflictPolicy",
    "RoomStatistics",
    "__version__",
    "configure_logging",
    "open_agent",
    # writing an adapter
    "AdapterFeatures",
    "AgentFailure",
    "AgentToolsProtocol",
    "Emit",
    "FrameworkAdapter",
    "HistoryConverter",
    "HistoryItem",
    "HistoryProvider",
    "PlatformMessage",
    "SimpleAdapter",
    # platform tools and contacts
    "AgentTools",
    "Capability",
    "ContactEventConfig",
    "ContactStrategy",
    "ContactTools",
    "CustomTools",
    "ToolEffect",
    "ToolErrorKind",
    "ToolResult",
    "get_anthropic_tool_schemas",
    "get_openai_tool_schemas",
    "get_tool_schemas",
    # errors an agent author catches or raises
    "APIStatusError",
    "AgentAlreadyRunningError",
    "AuthenticationError",
    "BandConfigError",
    "BandConnectionError",
    "BandError",
    "BandTimeoutError",
    "BandToolError",
    "HistoryConversionError",
    "InputNotAccepted",
    "MissingExtraError",
    "OutcomeUnknownError",
    "RateLimitError",
    "RoomExecutionStoppedError",
    "SupersededError",
    "ToolArgumentsError",
    "UnknownParticipantError",
    # the embedded platform (optional extra `local`)
    "HumanClient",
    "LocalPlatform",
    "open_local_platform",
]


def _local_extra_installed() -> bool:
    try:
        return find_spec("hypercorn") is not None
    except (ImportError, ValueError):  # hidden by a finder, or None in sys.modules
        return False


if not _local_extra_installed():
    # Without the `local` extra, `from band_trio import *` leaves the local names
    # out instead of failing; naming one of them still raises MissingExtraError.
    __all__ = [name for name in __all__ if name not in _LOCAL_NAMES]
