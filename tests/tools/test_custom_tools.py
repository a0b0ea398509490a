"""Custom tools: registration rules, schemas in both formats, dispatch through
AgentTools with validation, effects and contained errors."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
import trio

from band_trio.adapter import ToolEffect
from band_trio.errors import BandConfigError
from band_trio.tools import AgentTools, CustomTools, ToolErrorKind
from band_trio.tools._schema import ArgMeta
from tests.scripted_platform import RecordingHooks


def make_tools() -> CustomTools:
    custom = CustomTools()

    @custom.tool
    async def weather(city: str, days: int = 1, unit: Literal["C", "F"] = "C") -> dict[str, object]:
        """Forecast for a city.

        Looks the city up in the
        forecast service.

        Args:
            city: The city name, for example 'Lisbon'.
            days: How many days ahead,
                counting today.
            unit: Temperature unit.

        Returns:
            The forecast.
        """
        await trio.lowlevel.checkpoint()
        return {"city": city, "days": days, "unit": unit}

    @custom.tool(effect=ToolEffect.ACT, name="file-ticket")
    def file_ticket(
        title: Annotated[str, "Short title of the ticket."],
        tags: Annotated[list[str] | None, "Labels for the ticket."] = None,
        priority: Annotated[int, ArgMeta("Priority from 1 to 5.", minimum=1, maximum=5)] = 3,
    ) -> str:
        """Open a ticket in the tracker."""
        return f"ticket {title} p{priority} {list(tags or [])}"

    return custom


def test_schemas_in_both_formats_come_after_platform_tools() -> None:
    custom = make_tools()
    from band_trio.tools import get_tool_schemas

    anthropic = get_tool_schemas("anthropic", capabilities=frozenset(), custom_tools=custom)
    openai = get_tool_schemas("openai", capabilities=frozenset(), custom_tools=custom)
    assert [s["name"] for s in anthropic[-2:]] == ["weather", "file-ticket"]
    weather = anthropic[-2]
    assert weather["description"] == (
        "Forecast for a city.\n\nLooks the city up in the forecast service."
    )
    props = weather["input_schema"]["properties"]
    assert props["city"] == {
        "type": "string",
        "description": "The city name, for example 'Lisbon'.",
    }
    assert props["days"]["description"] == "How many days ahead, counting today."
    assert props["days"]["default"] == 1
    assert props["unit"]["enum"] == ["C", "F"]
    assert weather["input_schema"]["required"] == ["city"]
    ticket = anthropic[-1]["input_schema"]["properties"]
    assert ticket["tags"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}
    assert "at least 1 and at most 5" in ticket["priority"]["description"]
    assert "minimum" not in ticket["priority"]
    for a, o in zip(anthropic[-2:], openai[-2:], strict=True):
        assert o["function"]["parameters"] == a["input_schema"]
        assert o["function"]["description"] == a["description"]


async def test_dispatch_validates_runs_and_records(rest: object) -> None:
    hooks = RecordingHooks()
    tools = AgentTools(
        rest=rest,  # type: ignore[arg-type]
        room_id="r",
        agent_id="a",
        participants=(),
        hooks=hooks,
        custom_tools=make_tools(),
    )
    with trio.fail_after(5):
        ok = await tools.execute_tool_call("weather", {"city": "Lisbon", "days": "2"})
        bad = await tools.execute_tool_call("weather", {"days": 2})
        wrong_enum = await tools.execute_tool_call("weather", {"city": "x", "unit": "K"})
        ticket = await tools.execute_tool_call("file-ticket", {"title": "Fix", "priority": 9})
        ticket_ok = await tools.execute_tool_call("file-ticket", {"title": "Fix", "tags": ["bug"]})
    assert ok.value == {"city": "Lisbon", "days": 2, "unit": "C"}
    assert bad.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert bad.text == "Invalid arguments for weather: city: required argument is missing"
    assert wrong_enum.error_kind is ToolErrorKind.INVALID_ARGUMENTS
    assert "priority: must be at most 5" in ticket.text
    assert ticket_ok.value == "ticket Fix p3 ['bug']"
    assert hooks.effects == [ToolEffect.OBSERVE, ToolEffect.ACT]
    names = [s["function"]["name"] for s in tools.get_tool_schemas("openai")]
    assert names[-2:] == ["weather", "file-ticket"]


async def test_a_raising_custom_tool_is_an_error_result(rest: object) -> None:
    custom = CustomTools()

    @custom.tool
    async def explode(why: str) -> None:
        """Always fails.

        Args:
            why: Reason.
        """
        raise RuntimeError(f"boom: {why}")

    tools = AgentTools(rest=rest, room_id="r", agent_id="a", participants=())  # type: ignore[arg-type]
    with trio.fail_after(5):
        result = await tools.execute_tool_call("explode", {"why": "test"}, custom_tools=custom)
    assert result.is_error
    assert result.error_kind is ToolErrorKind.TOOL_ERROR
    assert result.text == "Error executing explode: RuntimeError: boom: test"
    assert tools.effects == ()


async def test_sync_tool_in_a_worker_thread(rest: object) -> None:
    custom = CustomTools()

    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: First.
            b: Second.
        """
        return a + b

    custom.add(add, run_in_thread=True)
    tools = AgentTools(
        rest=rest,
        room_id="r",
        agent_id="a",
        participants=(),
        custom_tools=custom,  # type: ignore[arg-type]
    )
    with trio.fail_after(5):
        result = await tools.execute_tool_call("add", {"a": 2, "b": 3})
    assert result.value == 5


def test_registration_rules() -> None:
    custom = CustomTools()

    def no_doc(x: str) -> None:
        pass

    def no_arg_doc(x: str) -> None:
        """Has a description but not for x."""

    def no_hint(x) -> None:  # type: ignore[no-untyped-def]
        """Doc.

        Args:
            x: something.
        """

    def varargs(*xs: str) -> None:
        """Doc.

        Args:
            xs: things.
        """

    def bad_type(x: set[str]) -> None:
        """Doc.

        Args:
            x: a set.
        """

    def band_send_message(x: str) -> None:
        """Doc.

        Args:
            x: text.
        """

    for fn, fragment in [
        (no_doc, "needs a description"),
        (no_arg_doc, "parameter 'x' needs a description"),
        (no_hint, "needs a type hint"),
        (varargs, "plain named parameter"),
        (bad_type, "unsupported argument type"),
        (band_send_message, "clashes with a platform tool"),
    ]:
        with pytest.raises(BandConfigError, match=fragment):
            custom.add(fn)
    with pytest.raises(BandConfigError, match="1-64 letters"):
        custom.add(no_arg_doc, name="has space", description="d")

    def fine() -> str:
        """A tool without arguments."""
        return "ok"

    custom.add(fine)
    with pytest.raises(BandConfigError, match="already registered"):
        custom.add(fine)
    assert "fine" in custom
    assert len(custom) == 1
    assert [d.name for d in custom] == ["fine"]


async def test_custom_tool_never_shadows_a_platform_tool(rest: object) -> None:
    custom = CustomTools()

    def helper() -> str:
        """Help."""
        return "x"

    custom.add(helper)
    tools = AgentTools(rest=rest, room_id="r", agent_id="a", participants=(), custom_tools=custom)  # type: ignore[arg-type]
    with trio.fail_after(5):
        result = await tools.execute_tool_call("band_no_reply", {})
    assert result.value == {"status": "no_reply"}
