"""The adapter contract types: PlatformMessage, HistoryProvider, AgentInput, the
runtime-checkable protocols and SimpleAdapter.

Reference: docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pytest

from band_trio.adapter import (
    AgentInput,
    AgentToolsProtocol,
    FrameworkAdapter,
    HistoryConverter,
    HistoryItem,
    HistoryProvider,
    PlatformMessage,
    Preprocessor,
    SimpleAdapter,
    ToolEffect,
    TurnHooks,
)
from band_trio.errors import HistoryConversionError
from band_trio.testing import FakeAgentTools


class PartialTools:
    """Only the four methods the protocol once declared."""

    async def send_message(self, content: str, mentions: Sequence[str]) -> None:
        return None

    async def send_event(
        self, content: str, message_type: str, metadata: Mapping[str, Any] | None = None
    ) -> None:
        return None

    async def execute_tool_call(self, name: str, args: Mapping[str, Any]) -> Any:
        return None

    def get_tool_schemas(
        self, fmt: Literal["anthropic", "openai"], *, capabilities: Any = None
    ) -> list[dict[str, Any]]:
        return []


def message(**kw: Any) -> PlatformMessage:
    fields: dict[str, Any] = {
        "id": "m1",
        "room_id": "r1",
        "content": "hello",
        "sender_id": "u1",
        "sender_type": "User",
        "sender_name": "Ann",
    }
    fields.update(kw)
    return PlatformMessage(**fields)


def test_format_for_llm_fallbacks() -> None:
    assert message().format_for_llm() == "[Ann]: hello"
    assert message(sender_name=None).format_for_llm() == "[User]: hello"
    assert message(sender_name=None, sender_type="").format_for_llm() == "[Unknown]: hello"


def test_platform_message_positional_order_matches_the_reference() -> None:
    m = PlatformMessage("m", "r", "c", "s", "User", None, "text", {"a": 1}, None)
    assert (m.id, m.room_id, m.content, m.sender_id, m.metadata) == ("m", "r", "c", "s", {"a": 1})


class CountingConverter:
    def __init__(self) -> None:
        self.calls = 0
        self.name: str | None = None

    def convert(self, items: Sequence[HistoryItem]) -> list[str]:
        self.calls += 1
        return [i.content for i in items]

    def set_agent_name(self, name: str) -> None:
        self.name = name


class FailingConverter:
    def convert(self, items: Sequence[HistoryItem]) -> list[str]:
        raise KeyError("boom")


ITEMS = (
    HistoryItem(role="user", content="a", sender_name="Ann", sender_type="User"),
    HistoryItem(role="assistant", content="b", sender_name="Me", sender_type="Agent"),
)


def test_history_provider_converts_lazily_once_per_converter() -> None:
    conv = CountingConverter()
    other = CountingConverter()
    provider = HistoryProvider(ITEMS)
    assert conv.calls == 0
    first = provider.convert(conv)
    assert provider.convert(conv) is first
    assert conv.calls == 1
    assert provider.convert(other) == ["a", "b"]
    assert other.calls == 1
    assert len(provider) == 2
    assert list(provider) == list(ITEMS)
    assert bool(HistoryProvider()) is False


def test_history_provider_does_not_cache_failures() -> None:
    provider = HistoryProvider(ITEMS)
    with pytest.raises(KeyError):
        provider.convert(FailingConverter())
    assert provider.convert(CountingConverter()) == ["a", "b"]


def test_runtime_checkable_protocols() -> None:
    assert isinstance(FakeAgentTools(), AgentToolsProtocol)
    assert not isinstance(PartialTools(), AgentToolsProtocol)
    assert isinstance(CountingConverter(), HistoryConverter)
    assert isinstance(EchoAdapter(), FrameworkAdapter)
    assert not isinstance(object(), FrameworkAdapter)

    class Pre:
        def process(self, ctx: Any, event: object, agent_id: str) -> None:
            return None

    assert isinstance(Pre(), Preprocessor)

    class Hooks:
        message_id = "m"

        def reply_sent(self, reply_id: str) -> None: ...

        def reply_intent(self, digest: str) -> None: ...

        def reply_settled(self, digest: str) -> None: ...

        def failure_reported(self) -> None: ...

        def execution_stopped(self) -> None: ...

        def record_effect(self, effect: ToolEffect) -> None: ...

    assert isinstance(Hooks(), TurnHooks)


def test_agent_input_room_defaults_to_message_room() -> None:
    inp = AgentInput(msg=message(room_id="room-9"), tools=FakeAgentTools())
    assert inp.room_id == "room-9"
    assert len(inp.history) == 0
    assert inp.is_session_bootstrap is False


# --------------------------------------------------------------------------- SimpleAdapter


class EchoAdapter(SimpleAdapter[Any]):
    def __init__(self, converter: HistoryConverter[Any] | None = None) -> None:
        super().__init__(history_converter=converter)
        self.calls: list[tuple[Any, ...]] = []

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: Any,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        self.calls.append(
            (msg, tools, history, participants_msg, contacts_msg, is_session_bootstrap, room_id)
        )


def make_input(history: HistoryProvider) -> AgentInput:
    return AgentInput(
        msg=message(),
        tools=FakeAgentTools(),
        history=history,
        participants_msg="## Current Participants",
        contacts_msg="[Contacts]: x",
        is_session_bootstrap=True,
        room_id="r1",
    )


async def test_on_started_stores_identity_and_names_the_converter() -> None:
    # Pins (tools and adapters, "Testable statements" 62).
    conv = CountingConverter()
    adapter = EchoAdapter(conv)
    await adapter.on_started("Helper", "helps")
    assert (adapter.agent_name, adapter.agent_description) == ("Helper", "helps")
    assert conv.name == "Helper"
    await EchoAdapter().on_started("No converter", "fine")


async def test_on_event_passes_converted_history() -> None:
    # With a converter set (tools and adapters, "Testable statements" 63).
    adapter = EchoAdapter(CountingConverter())
    inp = make_input(HistoryProvider(ITEMS))
    await adapter.on_event(inp)
    (call,) = adapter.calls
    assert call[2] == ["a", "b"]
    assert call[3:] == ("## Current Participants", "[Contacts]: x", True, "r1")
    assert call[0] is inp.msg
    assert call[1] is inp.tools


async def test_on_event_passes_raw_provider_without_converter() -> None:
    # Without a converter (tools and adapters, "Testable statements" 63).
    adapter = EchoAdapter()
    provider = HistoryProvider(ITEMS)
    await adapter.on_event(make_input(provider))
    assert adapter.calls[0][2] is provider


async def test_conversion_failure_is_typed() -> None:
    adapter = EchoAdapter(FailingConverter())
    with pytest.raises(HistoryConversionError) as info:
        await adapter.on_event(make_input(HistoryProvider(ITEMS)))
    assert isinstance(info.value.__cause__, KeyError)
    assert adapter.calls == []


async def test_on_message_must_be_implemented_and_cleanup_is_a_noop() -> None:
    adapter: SimpleAdapter[HistoryProvider] = SimpleAdapter()
    await adapter.on_cleanup("r1")
    with pytest.raises(NotImplementedError):
        await adapter.on_event(make_input(HistoryProvider()))


def test_simple_adapter_is_judged_by_default() -> None:
    assert SimpleAdapter.judges_turns is True
    assert EchoAdapter.judges_turns is True
