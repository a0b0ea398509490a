"""The optional adapter hooks are typed protocols with defaults on SimpleAdapter:
the runtime tests for them with isinstance, never by looking names up."""

from __future__ import annotations

from collections.abc import Sequence

from band_trio.adapter import (
    AdapterFeatures,
    AgentInput,
    AgentToolsProtocol,
    AllRoomsCleanup,
    FrameworkAdapter,
    HistoryConverter,
    HistoryItem,
    HistoryProvider,
    InterruptHandler,
    NamedHistoryConverter,
    PlatformMessage,
    SimpleAdapter,
    TurnJudging,
)


class BareAdapter:
    """Only the three required methods."""

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        return None

    async def on_event(self, inp: AgentInput) -> None:
        return None

    async def on_cleanup(self, room_id: str) -> None:
        return None


class Quiet(SimpleAdapter[HistoryProvider]):
    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        return None


class NoInit(Quiet):
    def __init__(self) -> None:  # skips SimpleAdapter.__init__ on purpose
        pass


class Plain:
    def convert(self, items: Sequence[HistoryItem]) -> list[str]:
        return [i.content for i in items]


class Named(Plain):
    def __init__(self) -> None:
        self.name = ""

    def set_agent_name(self, name: str) -> None:
        self.name = name


def test_simple_adapter_declares_every_optional_hook() -> None:
    adapter = Quiet()
    assert isinstance(adapter, FrameworkAdapter)
    assert isinstance(adapter, InterruptHandler)
    assert isinstance(adapter, AllRoomsCleanup)
    assert isinstance(adapter, TurnJudging)
    assert adapter.judges_turns is True


async def test_the_defaults_do_nothing() -> None:
    adapter = Quiet()
    assert await adapter.on_interrupt("room-1", "stop") is None
    assert await adapter.cleanup_all() is None


def test_a_bare_adapter_has_no_optional_hook() -> None:
    adapter = BareAdapter()
    assert isinstance(adapter, FrameworkAdapter)
    assert not isinstance(adapter, InterruptHandler)
    assert not isinstance(adapter, AllRoomsCleanup)
    assert not isinstance(adapter, TurnJudging)


def test_features_default_when_init_was_skipped() -> None:
    assert NoInit().features == AdapterFeatures()


async def test_only_a_named_converter_is_told_the_agent_name() -> None:
    named = Named()
    assert isinstance(named, NamedHistoryConverter)
    assert isinstance(Plain(), HistoryConverter)
    assert not isinstance(Plain(), NamedHistoryConverter)
    await SimpleAdapter[list[str]](history_converter=named).on_started("Ada", "helps")
    assert named.name == "Ada"
    plain_adapter = SimpleAdapter[list[str]](history_converter=Plain())
    await plain_adapter.on_started("Ada", "helps")
    assert plain_adapter.agent_name == "Ada"
