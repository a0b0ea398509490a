"""The public API is pinned: adding or removing a public name is a deliberate change
made here too. Every public class and function is documented, and the package
ships ``py.typed``."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import band_trio
import band_trio.testing
import band_trio.wire

PUBLIC = {
    # errors
    "BandError", "BandConfigError", "AgentAlreadyRunningError", "LocalProtocolError",
    "BandProtocolError", "FrameError", "InvalidEventError", "BandConnectionError",
    "BandTimeoutError", "JoinError", "UpgradeRefusedError", "SupersededError",
    "RoomExecutionStoppedError", "InputNotAccepted", "APIStatusError", "BadRequestError",
    "AuthenticationError", "PermissionDeniedError", "NotFoundError", "ConflictError",
    "ContentTooLargeError", "RangeNotSatisfiableError", "UnprocessableEntityError",
    "RateLimitError", "InternalServerError", "ServiceUnavailableError",
    "HistoryConversionError", "UnknownParticipantError", "BandToolError",
    "ToolArgumentsError", "MissingExtraError", "error_for_status",
    # running an agent
    "Agent", "AgentConfig", "AgentSettings", "AgentStatistics", "ConflictPolicy",
    "PlatformRuntime", "RoomStatistics", "open_agent",
    # writing an adapter
    "AgentInput", "AgentToolsProtocol", "DefaultPreprocessor", "FrameworkAdapter",
    "HistoryConverter", "HistoryItem", "HistoryProvider", "PlatformMessage",
    "Preprocessor", "SimpleAdapter", "ToolEffect", "TurnContext", "TurnHooks",
    # tools and contacts
    "AgentTools", "Capability", "ContactEventConfig", "ContactStrategy", "ContactTools",
    "CustomTools", "ToolErrorKind", "ToolResult", "get_anthropic_tool_schemas",
    "get_openai_tool_schemas", "get_tool_schemas",
    # REST models an adapter meets
    "AgentMe", "ChatMessage", "ChatParticipant", "ChatRoom", "EventCreated",
    "MentionRequest", "MessageSent", "MessageStatus", "Peer",
    # the embedded platform
    "HumanClient", "LocalPlatform", "open_local_platform",
    "__version__",
}  # fmt: skip

WIRE = {
    "AgentControl", "BandLink", "ContactAdded", "ContactEvent", "ContactRemoved",
    "ContactRequestReceived", "ContactRequestUpdated", "EventRejected", "LinkConfig",
    "LinkEvent", "LinkReconnected", "LinkStatistics", "Mention", "MessageCreated",
    "MessageMetadata", "MessageUpdated", "ParticipantAdded", "ParticipantRemoved",
    "PlatformEvent", "RestClient", "RestConfig", "RestStatistics", "RoomAdded",
    "RoomDeleted", "RoomEventCreated", "RoomRemoved", "RoomUpdated", "Supersede",
    "TaskCreated", "TaskUpdated", "TopicLost", "converter", "decode_event",
    "encode_event", "room_topics",
}  # fmt: skip


def test_top_level_names_are_pinned() -> None:
    assert set(band_trio.__all__) == PUBLIC | WIRE
    assert len(band_trio.__all__) == len(set(band_trio.__all__))


def test_wire_names_are_pinned() -> None:
    assert set(band_trio.wire.__all__) == WIRE


def test_testing_names_are_pinned() -> None:
    assert set(band_trio.testing.__all__) == {"FakeAgentTools"}
    assert band_trio.testing.FakeAgentTools.__doc__


@pytest.mark.parametrize("name", sorted(PUBLIC | WIRE))
def test_public_name_resolves_and_is_documented(name: str) -> None:
    obj = getattr(band_trio, name)
    if inspect.isclass(obj) or inspect.isfunction(obj):
        assert inspect.getdoc(obj), f"{name} has no docstring"


def test_package_is_typed() -> None:
    assert (Path(band_trio.__file__).parent / "py.typed").is_file()
