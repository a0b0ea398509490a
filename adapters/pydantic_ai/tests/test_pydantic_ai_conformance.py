"""PydanticAIAdapter passes the conformance kit, with a real pydantic-ai
``Agent`` on a scripted ``FunctionModel``.

The model is a function of the conversation it is shown, so it answers the
same message the same way in every room and every run: for the latest user
prompt it either replies through ``band_send_message`` (mentioning the
sender by the name in the prompt), first looks at the room with
``band_get_participants`` and then replies, or declines with
``band_no_reply``; once its reply's tool return is back it ends the run with
a text (which the adapter never posts).

The agent runs on the bridge's asyncio loop in a worker thread, the Band
tools on Trio; ``ClockHoldingBridge`` makes the asyncio side's work take no
virtual time in the kit's scenarios.
"""

from __future__ import annotations

import re
from typing import Any

import trio
from band_trio_asyncio.testing import ClockHoldingBridge
from band_trio_pydantic_ai import PydanticAIAdapter, PydanticAIHistoryConverter
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from band_trio.testing.conformance import (
    AdapterConformance,
    HistoryConverterConformance,
    RunOptions,
)

_SENDER = re.compile(r"^\[([^\]]+)\]: ")


def validate_model_messages(messages: Any) -> list[str]:
    """Problems of a pydantic-ai message list (empty when it is valid for a model).

    Checked: a list of ``ModelRequest``/``ModelResponse`` that alternate and
    start with a request; no system prompt part; tool call ids unique; every
    call of a response answered once, in order, at the start of the next
    request; no return without its call.
    """
    if not isinstance(messages, list):
        return [f"expected a list of messages, got {type(messages).__name__}"]
    problems: list[str] = []
    seen: set[str] = set()
    open_calls: list[str] = []
    for index, message in enumerate(messages):
        where = f"message {index}"
        if not isinstance(message, ModelRequest | ModelResponse):
            problems.append(f"{where} is a {type(message).__name__}")
            continue
        if index == 0 and not isinstance(message, ModelRequest):
            problems.append("the first message is not a request")
        if index and type(message) is type(messages[index - 1]):
            problems.append(f"{where} follows a message of its own kind")
        if any(isinstance(p, SystemPromptPart) for p in message.parts):
            problems.append(f"{where} has a system prompt part")
        if isinstance(message, ModelRequest):
            returns = [p.tool_call_id for p in message.parts if isinstance(p, ToolReturnPart)]
            head = [getattr(p, "tool_call_id", None) for p in message.parts[: len(open_calls)]]
            if head != open_calls or len(returns) != len(open_calls):
                problems.append(f"{where} answers {returns}, not the calls {open_calls}")
            open_calls = []
        else:
            if open_calls:
                problems.append(f"{where} comes before the returns of {open_calls}")
            open_calls = [p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)]
            for call_id in open_calls:
                if call_id in seen:
                    problems.append(f"{where} repeats the tool call id {call_id!r}")
                seen.add(call_id)
    if open_calls:
        problems.append(f"the calls {open_calls} are not answered")
    return problems


def _latest_prompt(messages: list[ModelMessage]) -> tuple[str | None, int, list[Any]]:
    """The latest user prompt line, its message index, and the parts since."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        prompts = [p for p in message.parts if isinstance(p, UserPromptPart)]
        if isinstance(message, ModelRequest) and prompts:
            content = prompts[-1].content
            line = content if isinstance(content, str) else str(list(content)[-1])
            since = [p for m in messages[index + 1 :] for p in m.parts]
            return line, index, since
    return None, 0, []


def answer(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
    """The scripted model: one deterministic decision per conversation."""
    line, index, since = _latest_prompt(messages)
    if line is None:
        return ModelResponse(parts=[TextPart("Nothing to answer.")])
    # Tool call ids are unique within a room's conversation and the same in every run.
    ids = f"call_{index}_{len(since)}"
    returns = [p for p in since if isinstance(p, ToolReturnPart)]
    last = returns[-1] if returns else None
    if last is not None and last.tool_name != "band_get_participants":
        return ModelResponse(parts=[TextPart("Done.")])
    sender = _SENDER.match(line)
    reply = ToolCallPart(
        "band_send_message",
        {
            "content": f"You said {len(line)} characters.",
            "mentions": [sender.group(1)] if sender else [],
        },
        ids,
    )
    if last is not None:
        return ModelResponse(parts=[reply])  # it looked at the room: now it replies
    choice = len(line) % 3
    if choice == 0:
        return ModelResponse(parts=[ToolCallPart("band_no_reply", {"reason": "nothing"}, ids)])
    if choice == 1:
        return ModelResponse(parts=[ToolCallPart("band_get_participants", {}, ids)])
    return ModelResponse(parts=[reply])


class ConformancePydanticAIAdapter(PydanticAIAdapter):
    """Closes its bridge when the agent stops, as with the bridge it creates itself."""

    async def cleanup_all(self) -> None:
        try:
            await super().cleanup_all()
        finally:
            with trio.CancelScope(shield=True):
                await self.bridge.aclose()


def make_adapter() -> PydanticAIAdapter:
    # No thread is started here: the adapter starts it in on_started.
    return ConformancePydanticAIAdapter(
        agent=Agent(FunctionModel(answer)), bridge=ClockHoldingBridge()
    )


class TestPydanticAIAdapterConformance(AdapterConformance):
    # One loop thread per agent and a model that depends only on the
    # conversation: a room's output must not depend on the other rooms.
    deterministic = True
    history_validator = validate_model_messages

    def make_adapter(self) -> PydanticAIAdapter:
        return make_adapter()

    def make_options(self) -> RunOptions:
        # A Trio step of the adapter waits for the interpreter lock while the
        # agent's thread holds it; on a loaded 2-core machine the OS can
        # preempt that thread for a while with the lock held. One second
        # still catches an adapter that sleeps or does blocking I/O on the loop.
        return RunOptions(block_threshold=1.0)


class TestPydanticAIHistoryConverterConformance(HistoryConverterConformance):
    history_validator = validate_model_messages

    def make_converter(self) -> PydanticAIHistoryConverter:
        return PydanticAIHistoryConverter()


def test_the_validator_finds_an_unanswered_call() -> None:
    messages = [
        ModelRequest(parts=[UserPromptPart("hi")]),
        ModelResponse(parts=[ToolCallPart("band_get_participants", {}, "c1")]),
        ModelRequest(parts=[UserPromptPart("again")]),
    ]
    assert validate_model_messages(messages) == ["message 2 answers [], not the calls ['c1']"]
