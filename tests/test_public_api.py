"""The public API is pinned: adding or removing a public name is a deliberate change
made here too. Every public class and function is documented, and the package
ships ``py.typed``."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import band_trio
import band_trio.adapter
import band_trio.testing
import band_trio.wire

PUBLIC = {
    # running an agent
    "Agent", "AgentConfig", "AgentSettings", "AgentStatistics", "ConflictPolicy",
    "RoomStatistics", "__version__", "configure_logging", "open_agent",
    # writing an adapter
    "AdapterFeatures", "AgentFailure", "AgentToolsProtocol", "Emit", "FrameworkAdapter",
    "HistoryConverter", "HistoryItem", "HistoryProvider", "PlatformMessage", "SimpleAdapter",
    # platform tools and contacts
    "AgentTools", "Capability", "ContactEventConfig", "ContactStrategy", "ContactTools",
    "CustomTools", "ToolEffect", "ToolErrorKind", "ToolResult", "get_anthropic_tool_schemas",
    "get_openai_tool_schemas", "get_tool_schemas",
    # errors an agent author catches or raises
    "APIStatusError", "AgentAlreadyRunningError", "AuthenticationError", "BandConfigError",
    "BandConnectionError", "BandError", "BandTimeoutError", "BandToolError",
    "HistoryConversionError", "InputNotAccepted", "MissingExtraError", "OutcomeUnknownError", "RateLimitError",
    "RoomExecutionStoppedError", "SupersededError", "ToolArgumentsError",
    "UnknownParticipantError",
    # the embedded platform
    "HumanClient", "LocalPlatform", "open_local_platform",
}  # fmt: skip

RUNTIME = {
    "IN_MEMORY", "ContactEventHandler", "DefaultPreprocessor", "PlatformRuntime", "RoomSink",
    # the types of AgentStatistics.turn_durations and .gc
    "GcFreezeStatistics", "TurnDurationStatistics",
}  # fmt: skip

WIRE = {
    # the link
    "BandLink", "EventRejected", "FirstConnectPolicy", "LinkConfig", "LinkEvent",
    "LinkReconnected", "LinkStatistics", "ReconnectPolicy", "TopicLost", "room_topics",
    # the REST client
    "RestClient", "RestConfig", "RestStatistics", "RetryPolicy",
    # platform events
    "AgentControl", "ContactAdded", "ContactEvent", "ContactRemoved",
    "ContactRequestReceived", "ContactRequestUpdated", "Mention", "MessageCreated",
    "MessageMetadata", "MessageUpdated", "ParticipantAdded", "ParticipantRemoved",
    "PlatformEvent", "RoomAdded", "RoomDeleted", "RoomEventCreated", "RoomRemoved",
    "RoomUpdated", "Supersede", "TaskCreated", "TaskUpdated",
    # wire objects from and to their JSON-like form
    "decode_event", "encode_event", "structure", "unstructure",
}  # fmt: skip


def test_top_level_names_are_pinned() -> None:
    assert set(band_trio.__all__) == PUBLIC
    assert len(band_trio.__all__) == len(set(band_trio.__all__))
    # The root is what an agent author needs; the link and the wire layer's
    # names stay in band_trio.wire.
    assert len(PUBLIC) <= 51
    assert not set(band_trio.__all__) & WIRE


def test_runtime_names_are_pinned() -> None:
    import band_trio.runtime

    assert set(band_trio.runtime.__all__) == RUNTIME
    for name in RUNTIME:
        obj = getattr(band_trio.runtime, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"{name} has no docstring"


def test_every_error_class_is_reachable_from_band_trio_errors() -> None:
    import band_trio.errors

    for name in band_trio.errors.__all__:
        assert getattr(band_trio.errors, name) is not None


def test_wire_names_are_pinned() -> None:
    assert set(band_trio.wire.__all__) == WIRE
    assert len(band_trio.wire.__all__) == len(WIRE)
    # The cattrs converter is mutable: it stays private to the wire layer.
    assert not hasattr(band_trio.wire, "converter")


@pytest.mark.parametrize("name", sorted(WIRE))
def test_wire_name_resolves_and_is_documented(name: str) -> None:
    obj = getattr(band_trio.wire, name)
    if inspect.isclass(obj) or inspect.isfunction(obj):
        assert inspect.getdoc(obj), f"{name} has no docstring"


ADAPTER = {
    "CAPABILITY_SECTIONS", "ERROR_EVENT_TEXT", "EVENT_CONTENT_LIMIT", "FAILURE_METADATA_KEY",
    "GENERIC_FAILURE_MESSAGE", "MISSING_REPLY_MESSAGE", "MISSING_REPLY_LABEL", "MISSING_REPLY_TEXT",
    "TRUNCATION_MARKER", "USAGE_EVENT_TYPE", "USAGE_METADATA_KEY", "AdapterFeatures",
    "AgentFailure", "AgentInput", "AgentToolsProtocol", "AllRoomsCleanup", "BackgroundWork",
    "Capability",
    "CustomToolSet", "Emit", "FailureReporter", "FrameworkAdapter", "HistoryConverter",
    "HistoryItem", "HistoryProvider", "HistoryRole", "InterruptHandler",
    "NamedHistoryConverter", "PlatformMessage", "Preprocessor", "ReportsStuckThreads", "Roster", "SchemaFormat",
    "SimpleAdapter", "ToolCategory", "ToolEffect", "ToolErrorKind", "ToolResult", "ToolSpec",
    "TurnContext", "TurnHooks", "TurnJudging", "Usage", "emit_usage",
    "available_handles", "image_blocks_placeholder", "resolve_mention", "is_usage_event", "is_visible", "post_tool_call",
    "post_tool_result", "render_system_prompt", "report_failure", "resolve_features",
    "to_jsonable", "tool_call_content", "tool_result_content", "truncate_event_content",
    # shared plumbing of LLM adapters
    "HISTORY_START", "ImageBlock", "PromptSettings", "ToolOutput", "ToolSchema", "TurnLine",
    "offered_neutral_tools", "offered_tool_schemas", "post_thought", "render_turn_lines",
    "run_tool_call", "system_line", "tool_exception_result",
    "INTERRUPTED_TOOL_RESULT", "HistoryRecord", "HistoryText", "HistoryToolCall",
    "HistoryToolResult", "read_history", "sender_label",
    "ResumableHistory", "ResumableHistoryConverter",
    # settings of adapters
    "FieldCheck", "PromptFields", "check_tool_names", "config_or_default", "flag", "function",
    "instance_of", "one_of",
    "optional", "as_dict", "as_path", "positive_int", "seconds", "string_map", "text",
    # per-room child processes
    "Residents", "ResidentsStatistics", "kill_process_group", "room_workdir",
}  # fmt: skip


def test_adapter_contract_names_are_pinned() -> None:
    assert set(band_trio.adapter.__all__) == ADAPTER
    for name in ADAPTER:
        obj = getattr(band_trio.adapter, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"{name} has no docstring"


def test_adapter_contract_imports_no_llm_framework() -> None:
    """The core never imports an LLM framework."""
    import subprocess
    import sys

    code = (
        "import sys, band_trio, band_trio.adapter; "
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


@pytest.mark.parametrize("name", sorted(PUBLIC))
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
        "ContactChange",
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
        "NoHiddenErrors",
        "NoLoopBlocking",
        "NothingOutlivesServe",
        "Play",
        "Post",
        "ReAddAgent",
        "RemoveAgent",
        "RestFault",
        "Restart",
        "RoomIndependence",
        "RunOptions",
        "Scenario",
        "ScenarioResult",
        "Seed",
        "SerialTurns",
        "SettledExactlyOnce",
        "SlowTool",
        "SocketDrop",
        "StartsPromptly",
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


def test_the_observe_surface_is_pinned_and_documented() -> None:
    import band_trio.observe as observe

    assert set(observe.__all__) == {
        "INSTRUMENTS", "LIVEZ_PATH", "METRICS_PATH", "READYZ_PATH", "TURN_DURATION",
        "HealthState", "Instrument", "ProbeResult", "liveness", "metrics_renderer",
        "readiness", "serve_health",
    }  # fmt: skip
    for name in observe.__all__:
        obj = getattr(observe, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"band_trio.observe.{name} has no docstring"


def test_room_helpers_names_are_pinned() -> None:
    import band_trio.testing.rooms as rooms

    assert set(rooms.__all__) == {
        "AgentRoom",
        "agent_in_rooms",
        "latest_sender_mention",
        "wait_until",
    }
    for name in rooms.__all__:
        assert inspect.getdoc(getattr(rooms, name)), (
            f"band_trio.testing.rooms.{name} has no docstring"
        )


@pytest.mark.parametrize("module", [band_trio, band_trio.testing], ids=lambda m: m.__name__)
def test_a_package_with_lazy_names_lists_them_in_dir(module: object) -> None:
    # Autodoc (the API reference) and completion find members through dir(); a
    # name loaded on first use would otherwise have no reference entry.
    missing = set(module.__all__) - set(dir(module))  # type: ignore[attr-defined]
    assert not missing
