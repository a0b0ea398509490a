"""The adapter conformance kit: hold a custom adapter to what the runtime relies on.

Generated scenarios (Hypothesis) run through the real runtime against the
embedded platform reached in-process, in virtual time; named invariants check
every run; a failure shrinks to a minimal scenario printed as Python you can
paste back into :func:`replay`. See ``docs/adapter-conformance.rst``.

It needs the optional extra ``pip install 'band-trio[conformance]'``
(Hypothesis and the embedded platform); without it, importing this package
raises :class:`~band_trio.errors.MissingExtraError` naming that command.

Quick start (a synchronous test; pytest-trio optional)::

    from band_trio.testing.conformance import AdapterConformance

    class TestMyAdapter(AdapterConformance):
        def make_adapter(self):
            return MyAdapter()
"""

from band_trio.testing.conformance.invariants import (
    DEFAULT_INVARIANTS,
    AgentKeepsServing,
    AtMostOneReply,
    CancellationHonoured,
    HistoryConversion,
    Invariant,
    LifecycleHooksOnce,
    NoDoubleAnswerAfterRestart,
    NoErrorTextInRoom,
    NoHiddenErrors,
    NoLoopBlocking,
    NothingOutlivesServe,
    RoomIndependence,
    SerialTurns,
    SettledExactlyOnce,
    StartsPromptly,
)
from band_trio.testing.conformance.kit import (
    CI_PROFILE,
    LONG_PROFILE,
    PROFILE_ENV_VAR,
    AdapterConformance,
    ConformanceFailure,
    HistoryConverterConformance,
    check_adapter,
    check_history_converter,
    check_result,
    conformance_settings,
    replay,
)
from band_trio.testing.conformance.runner import (
    AdapterFactory,
    RunOptions,
    ScenarioResult,
    run_scenario,
)
from band_trio.testing.conformance.steps import (
    AddRoom,
    ContactChange,
    DeleteRoom,
    Entry,
    Interrupt,
    Join,
    Leave,
    Play,
    Post,
    ReAddAgent,
    RemoveAgent,
    Restart,
    RestFault,
    Scenario,
    Seed,
    SlowTool,
    SocketDrop,
    Step,
    Stop,
    ToolFailure,
    Wait,
)
from band_trio.testing.conformance.strategies import (
    history_entries,
    history_items,
    message_texts,
    scenarios,
    steps,
)
from band_trio.testing.conformance.trace import Trace, TurnRecord
from band_trio.testing.conformance.validators import (
    HistoryValidator,
    validate_anthropic_messages,
    validate_langchain_messages,
)

__all__ = [
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
]
