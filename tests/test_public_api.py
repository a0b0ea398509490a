"""The public API is pinned: adding or removing a public name is a deliberate change
made here too. Every public class and function is documented, and the package
ships ``py.typed``."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import band_trio
import band_trio.llm
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
    # shared pieces of LLM adapters (band_trio.llm)
    "AdapterFeatures", "AgentFailure", "Emit", "Usage", "emit_usage", "is_usage_event",
    "post_tool_call", "post_tool_result", "render_system_prompt", "report_failure",
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


LLM = {
    "CAPABILITY_SECTIONS", "FAILURE_METADATA_KEY", "GENERIC_FAILURE_MESSAGE",
    "MISSING_REPLY_MESSAGE", "USAGE_EVENT_TYPE", "USAGE_METADATA_KEY", "AdapterFeatures",
    "AgentFailure", "Emit", "Usage", "emit_usage", "image_blocks_placeholder",
    "is_usage_event", "post_tool_call", "post_tool_result", "render_system_prompt",
    "report_failure", "resolve_features", "tool_call_content", "tool_result_content",
}  # fmt: skip


def test_llm_names_are_pinned() -> None:
    assert set(band_trio.llm.__all__) == LLM
    for name in LLM:
        obj = getattr(band_trio.llm, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"{name} has no docstring"


def test_llm_module_imports_no_llm_framework() -> None:
    """DESIGN.md rule 7: the core never imports an LLM framework."""
    import subprocess
    import sys

    code = (
        "import sys, band_trio, band_trio.llm; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'anthropic', 'langchain', 'langchain_core', 'langgraph', 'openai'}); "
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""


def test_testing_names_are_pinned() -> None:
    assert set(band_trio.testing.__all__) == {"FakeAgentTools", "reported_failures"}
    assert band_trio.testing.FakeAgentTools.__doc__


@pytest.mark.parametrize("name", sorted(PUBLIC | WIRE))
def test_public_name_resolves_and_is_documented(name: str) -> None:
    obj = getattr(band_trio, name)
    if inspect.isclass(obj) or inspect.isfunction(obj):
        assert inspect.getdoc(obj), f"{name} has no docstring"


def test_package_is_typed() -> None:
    assert (Path(band_trio.__file__).parent / "py.typed").is_file()


def test_conformance_kit_names_are_pinned() -> None:
    import band_trio.testing.conformance as kit

    assert set(kit.__all__) == {
        "CI_PROFILE",
        "DEFAULT_INVARIANTS",
        "LONG_PROFILE",
        "PROFILE_ENV_VAR",
        "AdapterConformance",
        "AdapterFactory",
        "AddRoom",
        "AgentKeepsServing",
        "AtMostOneReply",
        "CancellationHonoured",
        "ConformanceFailure",
        "DeleteRoom",
        "Entry",
        "HistoryConversion",
        "HistoryConverterConformance",
        "HistoryValidator",
        "Interrupt",
        "Invariant",
        "Join",
        "Leave",
        "LifecycleHooksOnce",
        "NoDoubleAnswerAfterRestart",
        "NoErrorTextInRoom",
        "NoLoopBlocking",
        "Play",
        "Post",
        "ReAddAgent",
        "RemoveAgent",
        "Restart",
        "RoomIndependence",
        "RunOptions",
        "Scenario",
        "ScenarioResult",
        "Seed",
        "SerialTurns",
        "SettledExactlyOnce",
        "SlowTool",
        "Step",
        "Stop",
        "ToolFailure",
        "Trace",
        "TurnRecord",
        "Wait",
        "check_adapter",
        "check_history_converter",
        "check_result",
        "conformance_settings",
        "history_entries",
        "history_items",
        "message_texts",
        "replay",
        "run_scenario",
        "scenarios",
        "steps",
        "validate_anthropic_messages",
        "validate_langchain_messages",
    }
    assert band_trio.testing.conformance is kit
    for name in kit.__all__:
        obj = getattr(kit, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"band_trio.testing.conformance.{name} has no docstring"
    for invariant in kit.DEFAULT_INVARIANTS:
        assert invariant.name
        assert invariant.description
