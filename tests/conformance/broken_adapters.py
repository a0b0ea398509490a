"""A gallery of deliberately broken adapters, one bug each, for the kit to catch."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import attrs
import trio

from band_trio import (
    AgentToolsProtocol,
    HistoryItem,
    HistoryProvider,
    PlatformMessage,
    SimpleAdapter,
)


class Echo(SimpleAdapter[HistoryProvider]):
    """A correct adapter: one reply per message, state kept per room."""

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
        await tools.send_message(f"echo: {msg.content[:50]}", [msg.sender_id])


class EchoInNursery(Echo):
    """A correct adapter that works in a nursery of its own: cancelled, it
    raises a group of ``Cancelled`` (one per task), which is still honouring it."""

    async def on_message(
        self, msg: PlatformMessage, tools: AgentToolsProtocol, *args: Any, **kw: Any
    ) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep_forever)
            await tools.send_message(f"echo: {msg.content[:50]}", [msg.sender_id])
            nursery.cancel_scope.cancel()


class SwallowsCancelled(Echo):
    """Catches trio.Cancelled around its work and returns normally."""

    async def on_message(
        self, msg: PlatformMessage, tools: AgentToolsProtocol, *args: Any, **kw: Any
    ) -> None:
        try:
            await tools.send_message(f"echo: {msg.content[:50]}", [msg.sender_id])
        except trio.Cancelled:
            return


class SharedConversation(Echo):
    """Keeps one conversation for every room: answers leak across rooms."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    async def on_message(
        self, msg: PlatformMessage, tools: AgentToolsProtocol, *args: Any, **kw: Any
    ) -> None:
        self.seen.append(msg.content[:10])
        await tools.send_message(f"I have heard {len(self.seen)} message(s)", [msg.sender_id])


class RepliesTwice(Echo):
    """Posts two replies for every message."""

    async def on_message(
        self, msg: PlatformMessage, tools: AgentToolsProtocol, *args: Any, **kw: Any
    ) -> None:
        await tools.send_message("first answer", [msg.sender_id])
        await tools.send_message("second answer", [msg.sender_id])


class ToolsAfterCancel(Echo):
    """Posts a shielded 'sorry' message after its turn was cancelled."""

    async def on_message(
        self, msg: PlatformMessage, tools: AgentToolsProtocol, *args: Any, **kw: Any
    ) -> None:
        try:
            await tools.send_message(f"echo: {msg.content[:50]}", [msg.sender_id])
        finally:
            with trio.CancelScope(shield=True):
                await tools.send_event("cleaning up after the turn", "thought")


class BlocksTheLoop(Echo):
    """Sleeps synchronously inside its turn."""

    async def on_message(
        self, msg: PlatformMessage, tools: AgentToolsProtocol, *args: Any, **kw: Any
    ) -> None:
        time.sleep(0.5)  # noqa: ASYNC251 - the bug on display
        await tools.send_message(f"echo: {msg.content[:50]}", [msg.sender_id])


@attrs.define
class Line:
    """A converted history line (LangChain-shaped, duck-typed)."""

    type: str
    content: str
    tool_calls: list[dict[str, Any]] = attrs.Factory(list)
    tool_call_id: str | None = None


class StrictToolConverter:
    """Raises on a tool result whose call it has not seen."""

    def convert(self, items: Sequence[HistoryItem]) -> list[Line]:
        calls: set[str] = set()
        out = [Line("system", "You are helpful.")]
        for item in items:
            call_id = item.metadata.get("tool_call_id")
            if item.message_type == "tool_call":
                calls.add(str(call_id))
                out.append(Line("ai", "", [{"id": str(call_id), "name": "tool", "args": {}}]))
            elif item.message_type == "tool_result":
                if str(call_id) not in calls:
                    raise KeyError(f"tool result for unknown call {call_id}")
                out.append(Line("tool", item.content, tool_call_id=str(call_id)))
            elif item.message_type == "text":
                out.append(Line("human" if item.role == "user" else "ai", item.content))
        return out


class TwoSystemPromptsConverter:
    """Emits a system prompt, then another one for every history."""

    def convert(self, items: Sequence[HistoryItem]) -> list[Line]:
        out = [Line("system", "You are helpful."), Line("system", "Be brief.")]
        out.extend(
            Line("human" if i.role == "user" else "ai", i.content or ".")
            for i in items
            if i.message_type == "text"
        )
        return out


class WithConverter(SimpleAdapter[list[Line]]):
    """Replies once; its history goes through the given converter."""

    async def on_message(
        self, msg: PlatformMessage, tools: AgentToolsProtocol, *args: Any, **kw: Any
    ) -> None:
        await tools.send_message("ok", [msg.sender_id])


class PostsItsErrors(Echo):
    """Tells the room what went wrong, exception text and all, then fails."""

    async def on_message(
        self, msg: PlatformMessage, tools: AgentToolsProtocol, *args: Any, **kw: Any
    ) -> None:
        try:
            raise RuntimeError("database password rejected for user admin")
        except RuntimeError as exc:
            await tools.send_message(f"Sorry, I failed: {exc}", [msg.sender_id])
            raise


class FailsToStart(Echo):
    """Raises in on_started."""

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        raise RuntimeError("no model configured")


class LingersAfterCancel(Echo):
    """Keeps its turn going, shielded, for seconds after it was cancelled."""

    async def on_message(
        self, msg: PlatformMessage, tools: AgentToolsProtocol, *args: Any, **kw: Any
    ) -> None:
        try:
            await tools.send_message(f"echo: {msg.content[:50]}", [msg.sender_id])
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await trio.sleep(5)
            raise


class NeverReplies(SimpleAdapter[HistoryProvider]):
    """Returns without replying and without choosing not to reply: every turn
    is a missing reply the runtime settles itself."""

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
        await trio.lowlevel.checkpoint()


class RepliesThenRaises(Echo):
    """Replies, then raises: the runtime's retry finds the reply and only acks,
    so the room looks right while every turn failed."""

    async def on_message(
        self, msg: PlatformMessage, tools: AgentToolsProtocol, *args: Any, **kw: Any
    ) -> None:
        await super().on_message(msg, tools, *args, **kw)
        raise RuntimeError("bookkeeping after the reply failed")


class SlowToStart(Echo):
    """Spends a minute in ``on_started``: the agent serves nothing meanwhile."""

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        await super().on_started(agent_name, agent_description)
        await trio.sleep(60)


class LeavesAThread(Echo):
    """Starts a thread at start-up and never joins it."""

    def __init__(self) -> None:
        super().__init__()
        self._stop = threading.Event()

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        await super().on_started(agent_name, agent_description)
        threading.Thread(
            target=self._stop.wait, args=(2.0,), name="forgotten-worker", daemon=True
        ).start()


class LeavesATask(Echo):
    """Starts a system task at start-up that outlives the agent."""

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        await super().on_started(agent_name, agent_description)
        trio.lowlevel.spawn_system_task(trio.sleep_forever, name="forgotten-task")
