"""The events LLM adapters post (tools and adapters, "Event shapes the two adapters post";
"Testable statements" 66, 67, 85, 87, 88 and 89 as far as they concern the shared pieces).

Reference: docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from band_trio import (
    AgentFailure,
    Emit,
    HistoryProvider,
    SimpleAdapter,
)
from band_trio.adapter import (
    GENERIC_FAILURE_MESSAGE,
    MISSING_REPLY_MESSAGE,
    Usage,
    emit_usage,
    image_blocks_placeholder,
    is_usage_event,
    post_tool_call,
    post_tool_result,
    report_failure,
    tool_call_content,
    tool_result_content,
)
from band_trio.errors import RoomExecutionStoppedError
from band_trio.testing import FakeAgentTools


class UsageAdapter(SimpleAdapter[HistoryProvider]):
    SUPPORTED_EMIT = frozenset({Emit.TOOL_CALLS, Emit.USAGE})

    async def on_message(self, *args: Any, **kwargs: Any) -> None:
        """Never called here."""


# --------------------------------------------------------------------------- failures


def test_failure_metadata_shape() -> None:
    failure = AgentFailure("anthropic", "rate limited", code=429, detail={"type": "error"})
    assert failure.code == "429"
    assert failure.content == "rate limited"
    assert failure.metadata() == {
        "failure": {
            "provider": "anthropic",
            "code": "429",
            "message": "rate limited",
            "detail": {"type": "error"},
        }
    }
    assert list(failure.metadata()["failure"]) == ["provider", "code", "message", "detail"]


@pytest.mark.parametrize("blank", ["", "   ", "\n\t", "\u200b\u200b", "\u200e"])
def test_blank_failure_message_falls_back(blank: str) -> None:
    failure = AgentFailure("langgraph", blank)
    assert failure.content == "langgraph failed without an error message."
    assert failure.metadata()["failure"]["message"] == failure.content


def test_generic_failure_and_runtime_texts() -> None:
    failure = AgentFailure.generic("langgraph")
    assert failure.content == "Internal error while processing message; see agent logs."
    assert failure.code is None
    assert failure.detail is None
    assert failure.content == GENERIC_FAILURE_MESSAGE
    assert MISSING_REPLY_MESSAGE == (
        "The agent ended its turn without replying or calling band_no_reply, "
        "so nothing reached the room."
    )


def test_failure_detail_is_made_json_compatible() -> None:
    failure = AgentFailure("x", "m", detail={"when": ("a", 1), "raw": b"body"})
    detail = failure.metadata()["failure"]["detail"]
    assert detail == {"when": ["a", 1], "raw": "body"}
    json.dumps(failure.metadata())


async def test_report_failure_on_a_fake_posts_one_error_event() -> None:
    fake = FakeAgentTools()
    with trio.fail_after(5):
        receipt = await report_failure(fake, AgentFailure("anthropic", " ", code="500"))
    assert receipt is not None
    [event] = fake.events_sent
    assert event.message_type == "error"
    assert event.content == "anthropic failed without an error message."
    assert event.metadata == {
        "failure": {
            "provider": "anthropic",
            "code": "500",
            "message": "anthropic failed without an error message.",
            "detail": None,
        }
    }


async def test_report_failure_is_best_effort(caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeAgentTools()
    fake.fail_next("band_send_event", RuntimeError("platform down"))
    with trio.fail_after(5):
        assert await report_failure(fake, AgentFailure("anthropic", "boom")) is None
    assert "could not post the anthropic failure report" in caplog.text
    fake.fail_next("band_send_event", RoomExecutionStoppedError("room-fake"))
    with trio.fail_after(5), pytest.raises(RoomExecutionStoppedError):
        await report_failure(fake, AgentFailure("anthropic", "boom"))


# --------------------------------------------------------------------------- usage


def test_usage_content_and_metadata() -> None:
    usage = Usage(100, 20, cache_read_tokens=5, cache_write_tokens=7)
    assert usage.content == "Token usage: input=100 output=20"
    assert usage.metadata() == {
        "band_usage": {
            "input_tokens": 100,
            "output_tokens": 20,
            "cache_read_tokens": 5,
            "cache_write_tokens": 7,
        }
    }
    assert is_usage_event(usage.metadata())
    assert not is_usage_event({"task": {"id": "t1"}})
    assert not is_usage_event(None)
    assert not is_usage_event({"band_usage": 3})


def test_usage_sums_over_calls() -> None:
    """100/20 + 130/8 -> 230/28 (tools and adapters, "Testable statements" 89)."""
    total = Usage(100, 20) + Usage(130, 8)
    assert total == Usage(230, 28)
    assert sum([Usage(100, 20), Usage(130, 8)], Usage()) == total
    assert sum([Usage(100, 20), Usage(130, 8)]) == total
    assert Usage().is_zero
    assert not total.is_zero


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3", None])
def test_usage_counts_are_non_negative_integers(bad: Any) -> None:
    with pytest.raises(ValueError, match="non-negative integers"):
        Usage(input_tokens=bad)


def test_usage_with_a_cost_shows_and_records_it() -> None:
    usage = Usage(100, 20, cost_usd=0.0125)
    assert usage.content == "Token usage: input=100 output=20 cost=$0.012500"
    assert usage.metadata()["band_usage"]["cost_usd"] == 0.0125
    assert "cost_usd" not in Usage(100, 20).metadata()["band_usage"]
    assert not Usage(cost_usd=0.5).is_zero
    assert Usage(cost_usd=0).is_zero


def test_usage_costs_add_up_when_any_part_has_one() -> None:
    assert (Usage(1, 1, cost_usd=0.25) + Usage(2, 2, cost_usd=0.5)).cost_usd == 0.75
    assert (Usage(1, 1, cost_usd=0.25) + Usage(2, 2)).cost_usd == 0.25
    assert (Usage(1, 1) + Usage(2, 2)).cost_usd is None


@pytest.mark.parametrize("bad", [-0.01, float("nan"), float("inf"), True, "0.1"])
def test_usage_cost_is_a_non_negative_number(bad: Any) -> None:
    with pytest.raises(ValueError, match="non-negative number of US dollars"):
        Usage(cost_usd=bad)
    assert Usage.reported(input_tokens=3, cost_usd=bad) == Usage(3)
    assert Usage.reported(cost_usd=2).cost_usd == 2.0


counts = st.integers(min_value=0, max_value=10**9)
usages = st.builds(Usage, counts, counts, counts, counts)


@given(st.lists(usages, max_size=8))
def test_usage_sum_is_fieldwise(items: list[Usage]) -> None:
    total = sum(items, Usage())
    assert total.input_tokens == sum(u.input_tokens for u in items)
    assert total.output_tokens == sum(u.output_tokens for u in items)
    assert total.cache_read_tokens == sum(u.cache_read_tokens for u in items)
    assert total.cache_write_tokens == sum(u.cache_write_tokens for u in items)
    assert sum(items) == total if items else True
    assert total.is_zero == all(u.is_zero for u in items)


@given(usages, usages, usages)
def test_usage_addition_is_associative_and_commutative(a: Usage, b: Usage, c: Usage) -> None:
    assert (a + b) + c == a + (b + c)
    assert a + b == b + a
    assert a + Usage() == a


async def test_emit_usage_posts_one_task_event() -> None:
    """Pins (tools and adapters, "Testable statements" 66)."""
    fake = FakeAgentTools()
    with trio.fail_after(5):
        receipt = await emit_usage(fake, Usage(100, 20))
    assert receipt is not None
    [event] = fake.events_sent
    assert event.message_type == "task"
    assert event.content == "Token usage: input=100 output=20"
    assert event.metadata == {
        "band_usage": {
            "input_tokens": 100,
            "output_tokens": 20,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
        }
    }


async def test_emit_usage_skips_all_zero() -> None:
    """Zero usage posts nothing (tools and adapters, "Testable statements" 67)."""
    fake = FakeAgentTools()
    with trio.fail_after(5):
        assert await emit_usage(fake, Usage()) is None
    assert fake.events_sent == []
    assert fake.calls == []


async def test_emit_usage_skips_while_the_turn_is_cancelled() -> None:
    """A cancelled turn (the enclosing scope's cancellation, see "Notes for a Trio port") (tools
    and adapters, "Testable statements" 67), without raising Cancelled from the skip."""
    fake = FakeAgentTools()
    with trio.fail_after(5):
        with trio.CancelScope() as scope:
            scope.cancel()
            assert await emit_usage(fake, Usage(1, 1)) is None
            reached = True
        assert reached
        with trio.move_on_at(trio.current_time() - 1):  # deadline already passed
            assert await emit_usage(fake, Usage(1, 1)) is None
    assert fake.calls == []


async def test_emit_usage_from_a_finally_of_a_cancelled_turn() -> None:
    fake = FakeAgentTools()
    with trio.fail_after(5):
        with trio.CancelScope() as scope:
            try:
                scope.cancel()
                await trio.sleep_forever()
            finally:
                await emit_usage(fake, Usage(3, 4))
        assert scope.cancelled_caught
    assert fake.calls == []


async def test_emit_usage_in_a_shielded_scope_still_posts() -> None:
    fake = FakeAgentTools()
    with trio.fail_after(5):
        with trio.CancelScope() as outer:
            outer.cancel()
            with trio.CancelScope(shield=True):
                await emit_usage(fake, Usage(3, 4))
    assert [e.content for e in fake.events_sent] == ["Token usage: input=3 output=4"]


async def test_emit_usage_swallows_a_failed_post(caplog: pytest.LogCaptureFixture) -> None:
    """A failed usage post is swallowed (tools and adapters, "Testable statements" 67)."""
    fake = FakeAgentTools()
    fake.fail_next("band_send_event", RuntimeError("HTTP 500"))
    with trio.fail_after(5):
        assert await emit_usage(fake, Usage(5, 6)) is None
    assert fake.events_sent == []
    assert "could not post the usage event" in caplog.text


async def test_adapter_emit_usage_follows_the_emit_flag() -> None:
    """Nothing is posted with Emit.USAGE off (tools and adapters, "Testable statements" 67)."""
    fake = FakeAgentTools()
    with trio.fail_after(5):
        assert await UsageAdapter(emit=Emit.TOOL_CALLS).emit_usage(fake, Usage(5, 6)) is None
        assert fake.calls == []
        assert await UsageAdapter().emit_usage(fake, Usage(5, 6)) is not None
    assert [e.message_type for e in fake.events_sent] == ["task"]


# --------------------------------------------------------------------------- tool events


def test_tool_call_content_is_exact_with_keys_in_order() -> None:
    text = tool_call_content("band_send_message", {"content": "hi", "mentions": ["@a"]}, "tu_1")
    assert text == (
        '{"name": "band_send_message", "args": {"content": "hi", "mentions": ["@a"]}, '
        '"tool_call_id": "tu_1"}'
    )
    assert list(json.loads(text)) == ["name", "args", "tool_call_id"]


def test_room_file_content_is_replaced_by_its_size() -> None:
    """The UTF-8 size, other arguments untouched, the caller's dict unchanged (tools and
    adapters, "Testable statements" 87)."""
    args = {"content": "h\u00e9llo", "filename": "a.txt", "mentions": ["@a"]}
    parsed = json.loads(tool_call_content("band_send_room_file", args, "tu_2"))
    assert parsed["args"] == {
        "content": "<6 byte file content>",
        "filename": "a.txt",
        "mentions": ["@a"],
    }
    assert args["content"] == "h\u00e9llo"
    other = json.loads(tool_call_content("band_send_message", {"content": "x" * 10}, "t"))
    assert other["args"]["content"] == "x" * 10


def test_tool_call_content_tolerates_odd_arguments() -> None:
    assert json.loads(tool_call_content("t", None, "id"))["args"] == {}
    assert json.loads(tool_call_content("t", {"when": ("a",)}, "id"))["args"] == {"when": ["a"]}


def test_tool_result_content_is_exact_with_keys_in_order() -> None:
    text = tool_result_content("band_no_reply", '{"status": "no_reply"}', "tu_3", is_error=False)
    assert text == (
        '{"name": "band_no_reply", "output": "{\\"status\\": \\"no_reply\\"}", '
        '"tool_call_id": "tu_3", "is_error": false}'
    )
    parsed = json.loads(
        tool_result_content("band_read_room_file", image_blocks_placeholder(2), "t", is_error=True)
    )
    assert list(parsed) == ["name", "output", "tool_call_id", "is_error"]
    assert parsed["output"] == "<2 image content block(s)>"
    assert parsed["is_error"] is True
    assert json.loads(tool_result_content("x", {"a": [1]}, "t", is_error=False))["output"] == {
        "a": [1]
    }


async def test_tool_events_are_posted_around_a_call() -> None:
    """The shared part: tool_call then tool_result with the same id (tools and adapters,
    "Testable statements" 85)."""
    fake = FakeAgentTools()
    with trio.fail_after(5):
        await post_tool_call(fake, "band_get_participants", {}, "tu_9")
        await post_tool_result(fake, "band_get_participants", "[]", "tu_9")
    call, result = fake.events_sent
    assert (call.message_type, result.message_type) == ("tool_call", "tool_result")
    assert call.metadata is None
    assert result.metadata is None
    assert json.loads(call.content)["tool_call_id"] == json.loads(result.content)["tool_call_id"]
    assert json.loads(result.content)["is_error"] is False


async def test_tool_events_are_best_effort(caplog: pytest.LogCaptureFixture) -> None:
    """A failing send_event does not affect the tool call (tools and adapters, "Testable
    statements" 85)."""
    caplog.set_level(logging.WARNING, logger="band_trio.adapter")
    fake = FakeAgentTools()
    fake.fail_next("band_send_event", RuntimeError("down"), times=2)
    with trio.fail_after(5):
        assert await post_tool_call(fake, "band_no_reply", {}, "t") is None
        assert await post_tool_result(fake, "band_no_reply", "ok", "t") is None
    assert fake.events_sent == []
    assert "could not post a tool_call event" in caplog.text
    assert "could not post a tool_result event" in caplog.text
