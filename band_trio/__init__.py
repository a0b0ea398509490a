"""band-trio: a Trio-native SDK connecting LLM agents to the Band platform.

Run an agent with ``trio.run(agent.serve)``, ``await nursery.start(agent.serve)``
or ``async with band_trio.open_agent(...)``. Implement an adapter by subclassing
:class:`SimpleAdapter` and writing ``on_message``; reply through the room-bound
:class:`AgentTools` it receives. :class:`LocalPlatform` is an embedded Band
platform for offline development and tests; it comes with the optional extra
``pip install 'band-trio[local]'`` (without it, using it raises
:class:`MissingExtraError` naming that command).
"""

from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

from band_trio._version import __version__
from band_trio.adapter import (
    AdapterFeatures,
    AgentFailure,
    AgentInput,
    AgentToolsProtocol,
    Emit,
    FrameworkAdapter,
    HistoryConverter,
    HistoryItem,
    HistoryProvider,
    PlatformMessage,
    Preprocessor,
    SimpleAdapter,
    ToolEffect,
    TurnContext,
    TurnHooks,
    Usage,
    emit_usage,
    is_usage_event,
    post_tool_call,
    post_tool_result,
    render_system_prompt,
    report_failure,
)
from band_trio.agent import Agent, AgentStatistics, open_agent
from band_trio.errors import *  # noqa: F403
from band_trio.errors import __all__ as _errors_all
from band_trio.runtime.config import AgentConfig, AgentSettings, ConflictPolicy
from band_trio.runtime.contact_events import ContactEventConfig, ContactStrategy
from band_trio.runtime.platform_runtime import PlatformRuntime
from band_trio.runtime.preprocessor import DefaultPreprocessor
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
from band_trio.wire import *  # noqa: F403
from band_trio.wire import __all__ as _wire_all
from band_trio.wire.models import (
    AgentMe,
    ChatMessage,
    ChatParticipant,
    ChatRoom,
    EventCreated,
    MentionRequest,
    MessageSent,
    MessageStatus,
    Peer,
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


__all__ = [
    *_errors_all,
    *_wire_all,
    "AdapterFeatures",
    "Agent",
    "AgentConfig",
    "AgentFailure",
    "AgentInput",
    "AgentMe",
    "AgentSettings",
    "AgentStatistics",
    "AgentTools",
    "AgentToolsProtocol",
    "Capability",
    "ChatMessage",
    "ChatParticipant",
    "ChatRoom",
    "ConflictPolicy",
    "ContactEventConfig",
    "ContactStrategy",
    "ContactTools",
    "CustomTools",
    "DefaultPreprocessor",
    "Emit",
    "EventCreated",
    "FrameworkAdapter",
    "HistoryConverter",
    "HistoryItem",
    "HistoryProvider",
    "HumanClient",
    "LocalPlatform",
    "MentionRequest",
    "MessageSent",
    "MessageStatus",
    "Peer",
    "PlatformMessage",
    "PlatformRuntime",
    "Preprocessor",
    "RoomStatistics",
    "SimpleAdapter",
    "ToolEffect",
    "ToolErrorKind",
    "ToolResult",
    "TurnContext",
    "TurnHooks",
    "Usage",
    "__version__",
    "emit_usage",
    "get_anthropic_tool_schemas",
    "get_openai_tool_schemas",
    "get_tool_schemas",
    "is_usage_event",
    "open_agent",
    "open_local_platform",
    "post_tool_call",
    "post_tool_result",
    "render_system_prompt",
    "report_failure",
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
