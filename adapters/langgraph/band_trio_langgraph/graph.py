"""The tool-calling agent graph of the simple pattern.

``model → tools → model → ...`` over a ``messages`` state, ending when the
model answers without tool calls, or right after a round of tool calls that
declined with ``band_no_reply`` (no call of the round failed): a decision not
to answer needs no further model call.

Before each model call the conversation is made valid for a tool-calling
model: a tool call left without its result (a turn cancelled between the
model's answer and the end of its tools) gets an error result saying it was
interrupted, so one cancelled turn never poisons the room's thread. The
system prompt is given to each model call, not stored in the thread, so the
thread holds exactly one leading system prompt: the current one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph

from band_trio_langgraph.converter import INTERRUPTED_TOOL_RESULT
from band_trio_langgraph.tools import NO_REPLY_TOOL, BandTool

__all__ = ["answered", "build_agent_graph", "declined"]

_MODEL: Final = "model"
_TOOLS: Final = "tools"


def answered(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with every tool call answered right after its ``AIMessage``.

    Results already there are kept (in call order); a missing one becomes an
    error ``ToolMessage`` (interrupted); results of no open call are dropped.
    """
    out: list[BaseMessage] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if isinstance(message, ToolMessage):
            continue  # a result with no call right before it
        out.append(message)
        if not (isinstance(message, AIMessage) and message.tool_calls):
            continue
        results: dict[str, ToolMessage] = {}
        while index < len(messages) and isinstance(messages[index], ToolMessage):
            result = messages[index]
            assert isinstance(result, ToolMessage)
            results.setdefault(result.tool_call_id, result)
            index += 1
        for call in message.tool_calls:
            call_id = str(call.get("id") or "")
            found = results.pop(call_id, None)
            out.append(
                found
                if found is not None
                else ToolMessage(
                    content=INTERRUPTED_TOOL_RESULT,
                    tool_call_id=call_id,
                    name=call.get("name"),
                    status="error",
                )
            )
    return out


def declined(messages: Sequence[BaseMessage]) -> bool:
    """True when the last round of tool calls declined: it answered every call
    of the ``AIMessage`` before it, none failed, and one was ``band_no_reply``."""
    tail: list[ToolMessage] = []
    index = len(messages) - 1
    while index >= 0 and isinstance(messages[index], ToolMessage):
        message = messages[index]
        assert isinstance(message, ToolMessage)
        tail.append(message)
        index -= 1
    if not tail or index < 0:
        return False
    caller = messages[index]
    if not isinstance(caller, AIMessage) or not caller.tool_calls:
        return False
    if {str(c.get("id")) for c in caller.tool_calls} != {m.tool_call_id for m in tail}:
        return False
    if any(m.status == "error" for m in tail):
        return False
    return any(c.get("name") == NO_REPLY_TOOL for c in caller.tool_calls)


def build_agent_graph(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    *,
    system_prompt: Callable[[], str] | str | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the simple pattern's graph.

    Args:
        model: the chat model; it must support ``bind_tools`` when tools are given.
        tools: the tools offered to the model.
        system_prompt: the system prompt (or a function giving it at each call).
        checkpointer: where the graph keeps each thread's state.
    """
    bound = model.bind_tools(list(tools)) if tools else model
    by_name = {t.name: t for t in tools}

    def prompt() -> str | None:
        return system_prompt() if callable(system_prompt) else system_prompt

    async def call_model(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        messages = answered(state["messages"])
        text = prompt()
        if text:
            messages = [SystemMessage(content=text), *messages]
        response = await bound.ainvoke(messages, config)
        return {"messages": [response]}

    async def run_tools(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        results: list[BaseMessage] = []
        # One after another, in the model's order: the room sees the calls in
        # the order the model made them.
        for call in last.tool_calls:
            name = str(call.get("name") or "")
            tool = by_name.get(name)
            if tool is None:
                # Dispatched anyway, so the model gets the platform's "Unknown
                # tool" answer and the room sees the call's events.
                tool = BandTool(
                    name=name or "unknown",
                    description="",
                    args_schema={"type": "object", "properties": {}},
                    handle_tool_error=True,
                )
            result = await tool.ainvoke({**call, "type": "tool_call"}, config)
            if not isinstance(result, ToolMessage):
                result = ToolMessage(
                    content=str(result), tool_call_id=str(call.get("id")), name=name
                )
            results.append(result)
        return {"messages": results}

    # Async on purpose: LangGraph runs a sync routing function in a worker
    # thread of the loop's executor, a thread hop per step for nothing.
    async def after_model(state: MessagesState) -> str:
        last = state["messages"][-1]
        return _TOOLS if isinstance(last, AIMessage) and last.tool_calls else END

    async def after_tools(state: MessagesState) -> str:
        return END if declined(state["messages"]) else _MODEL

    builder = StateGraph(MessagesState)
    builder.add_node(_MODEL, call_model)
    builder.add_node(_TOOLS, run_tools)
    builder.add_edge(START, _MODEL)
    builder.add_conditional_edges(_MODEL, after_model)
    builder.add_conditional_edges(_TOOLS, after_tools)
    return builder.compile(checkpointer=checkpointer)
