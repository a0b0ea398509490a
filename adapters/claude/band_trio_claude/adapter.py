"""``ClaudeAgentAdapter``: a band-trio agent that is a Claude Agent SDK agent.

Each room gets its own ``claude`` CLI (through claude-agent-sdk's
``ClaudeSDKClient``), opened on the room's first turn, reused across turns,
and closed when the room is left, when the agent stops, after
``idle_timeout`` without a turn (on time: the agent's background work
watches the clock), or when the agent holds more than
``max_live_clients`` of them (the least recently used idle room first). The
room's Claude conversation id is recorded in the room (a ``task`` event with
``claude_sdk_session_id`` metadata, where the official adapter keeps it), so a
closed CLI or a restarted agent resumes the conversation; the platform
history is given to Claude only when there is nothing to resume.

Nothing reaches the room except through the Band tools: Claude's final text
is never posted, and a turn that neither replied nor declined is judged like
every adapter's. claude-agent-sdk is built on anyio and runs under Trio as it
is: no bridge, no asyncio.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs
import trio
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    Message,
    ResultMessage,
    SystemMessage,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from band_trio import (
    AgentFailure,
    AgentToolsProtocol,
    BandError,
    Capability,
    CustomTools,
    Emit,
    HistoryConverter,
    PlatformMessage,
    SimpleAdapter,
)
from band_trio.adapter import (
    PromptSettings,
    Residents,
    ResidentsStatistics,
    ToolCategory,
    ToolOutput,
    Usage,
    config_or_default,
    image_blocks_placeholder,
    post_tool_call,
    post_tool_result,
    report_failure,
    run_tool_call,
)
from band_trio_claude.config import ClaudeAgentConfig
from band_trio_claude.history import (
    ClaudeHistory,
    ClaudeHistoryConverter,
    compose_prompt,
)
from band_trio_claude.room import MCP_PREFIX, RoomClient, strip_prefix

__all__ = ["PROVIDER", "ClaudeAdapterStatistics", "ClaudeAgentAdapter", "ClaudeTurnError"]

logger = logging.getLogger("band_trio_claude")

PROVIDER: Final = "claude_sdk"
"""The ``provider`` of the adapter's failure reports."""


_EXPIRY_MARGIN: Final = 0.001
_SESSIONS: Final = ClaudeHistoryConverter()  # records a room's conversation id


class ClaudeTurnError(BandError):
    """A Claude turn failed: the CLI could not start, ended the turn with an
    error, timed out, or its output ended before the turn's result. The room
    was shown the generic failure text; the details are in the message and
    the logs."""


@attrs.frozen
class ClaudeAdapterStatistics:
    """What :meth:`ClaudeAgentAdapter.statistics` reports.

    Attributes:
        clients: the rooms' CLI processes (live, busy, opened, closed idle or
            over the limit).
        killed: CLIs killed because they did not end a turn or exit in time.
        turns: turns that reached Claude's result.
        cost_usd: the cost the CLI reported for those turns, added up.
    """

    clients: ResidentsStatistics
    killed: int
    turns: int
    cost_usd: float


def _usage_of(result: ResultMessage) -> Usage:
    usage = result.usage if isinstance(result.usage, Mapping) else {}
    return Usage.reported(
        input_tokens=usage.get("input_tokens"),
        output_tokens=usage.get("output_tokens"),
        cache_read_tokens=usage.get("cache_read_input_tokens"),
        cache_write_tokens=usage.get("cache_creation_input_tokens"),
        cost_usd=result.total_cost_usd,
    )


def _result_output(block: ToolResultBlock) -> str:
    content = block.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    images = 0
    for item in content:
        if isinstance(item, Mapping) and item.get("type") == "text":
            texts.append(str(item.get("text", "")))
        elif isinstance(item, Mapping) and item.get("type") == "image":
            images += 1
    if images and not texts:
        return image_blocks_placeholder(images)
    return "\n".join(texts)


class ClaudeAgentAdapter(SimpleAdapter[ClaudeHistory]):
    """Answers Band messages with a Claude Agent SDK agent, one CLI per room.

    Args:
        config: the settings (default :class:`ClaudeAgentConfig()`).
        custom_tools: typed Python tools served next to the platform tools
            (Claude sees them as ``mcp__band__<name>``).
        emit: posts of its own; supported ``tool_calls`` (with Claude's tool
            use ids), ``thoughts`` (Claude's thinking blocks) and ``usage``
            (from the turn's result); all on by default.
        capabilities: tool families beyond the chat tools: ``memory``,
            ``contacts``, ``tasks``, ``files`` (default none).
        include_tools: offer only these tools.
        exclude_tools: never offer these tools.
        include_categories: offer only tools of these categories.

    Raises:
        BandConfigError: an unsupported emit kind or capability, or a bad config.
    """

    SUPPORTED_EMIT = frozenset({Emit.TOOL_CALLS, Emit.THOUGHTS, Emit.USAGE})
    SUPPORTED_CAPABILITIES = frozenset(
        {Capability.MEMORY, Capability.CONTACTS, Capability.TASKS, Capability.FILES}
    )

    def __init__(
        self,
        config: ClaudeAgentConfig | None = None,
        *,
        custom_tools: CustomTools | None = None,
        history_converter: HistoryConverter[ClaudeHistory] | None = None,
        emit: Emit | str | Iterable[Emit | str] | None = None,
        capabilities: Capability | str | Iterable[Capability | str] | None = None,
        include_tools: Iterable[str] | str | None = None,
        exclude_tools: Iterable[str] | str | None = None,
        include_categories: ToolCategory | str | Iterable[ToolCategory | str] | None = None,
    ) -> None:
        config = config_or_default(config, ClaudeAgentConfig)
        super().__init__(
            history_converter=history_converter or ClaudeHistoryConverter(),
            emit=emit,
            capabilities=capabilities,
            include_tools=include_tools,
            exclude_tools=exclude_tools,
            include_categories=include_categories,
            custom_tools=custom_tools,
            prompt=PromptSettings.of(config),
        )
        self.config = config
        self._clients: Residents[RoomClient] = Residents(
            limit=config.max_live_clients, idle_timeout=config.idle_timeout
        )
        self._sessions: dict[str, str] = {}  # room -> Claude conversation id
        self._recorded: dict[str, str] = {}  # room -> id last recorded in the room
        self._killed = 0
        self._turns = 0
        self._cost = 0.0
        self._idle_changed = trio.Event()  # a room's CLI became idle

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.config.model!r})"

    # ------------------------------------------------------------------ lifecycle

    def session_id(self, room_id: str) -> str | None:
        """The Claude conversation id of ``room_id``, when one is known."""
        return self._sessions.get(room_id)

    def live_rooms(self) -> list[str]:
        """The rooms holding a live CLI, least recently used first."""
        return list(self._clients)

    def client_pid(self, room_id: str) -> int | None:
        """The process id of ``room_id``'s CLI, or None."""
        client = self._clients.get(room_id)
        return None if client is None else client.pid

    def statistics(self) -> ClaudeAdapterStatistics:
        """Counts of the CLIs and turns so far."""
        return ClaudeAdapterStatistics(
            clients=self._clients.statistics(),
            killed=self._killed,
            turns=self._turns,
            cost_usd=self._cost,
        )

    async def on_cleanup(self, room_id: str) -> None:
        """The room was left: close its CLI (bounded) and forget it."""
        client = self._clients.remove(room_id)
        self._sessions.pop(room_id, None)
        self._recorded.pop(room_id, None)
        if client is not None:
            await self._close(client)

    async def cleanup_all(self) -> None:
        """The agent stops: close every CLI at once (each bounded)."""
        await self._close_all([client for _room, client in self._clients.remove_all()])

    async def run_background(self) -> None:
        """While the agent serves: close each room's CLI once it has been
        idle for ``idle_timeout``, whether or not another turn comes."""
        while True:
            self._idle_changed = trio.Event()
            expiry = self._clients.next_expiry()
            # A hair past the expiry: the idle time added to and taken from a
            # clock reading need not give the reading back to the last bit.
            with trio.move_on_at(math.inf if expiry is None else expiry + _EXPIRY_MARGIN):
                await self._idle_changed.wait()
            await self.close_idle()

    async def close_idle(self) -> int:
        """Close the CLIs of rooms idle for ``idle_timeout`` (the agent's
        background work does this on time, every turn first); how many were
        closed."""
        expired = self._clients.expired(trio.current_time())
        await self._close_all([client for _room, client in expired])
        return len(expired)

    async def _close(self, client: RoomClient) -> None:
        if client.pid is not None and client.broken:
            self._killed += 1
        await client.close(self.config.close_timeout)

    async def _close_all(self, clients: list[RoomClient]) -> None:
        if not clients:
            return
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for client in clients:
                    nursery.start_soon(self._close, client)

    # ------------------------------------------------------------------ one turn

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: ClaudeHistory,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        """Run one turn on the room's CLI.

        Raises:
            ClaudeTurnError: the CLI could not start, the turn failed or timed
                out, or the CLI's output ended before the result (the generic
                failure text was posted first).
            trio.Cancelled: the turn was cancelled; Claude was interrupted
                (or its CLI killed) before this returned.
        """
        await self.close_idle()
        session = self._sessions.get(room_id)
        if session is None and is_session_bootstrap and history.session_id is not None:
            session = self._sessions[room_id] = history.session_id
            self._recorded[room_id] = history.session_id
        replay = is_session_bootstrap and session is None
        prompt = compose_prompt(
            msg,
            history=history.text if replay else "",
            participants_msg=participants_msg,
            contacts_msg=contacts_msg,
        )
        client = await self._lease(room_id, tools, session)
        turn = _Turn(self, tools, client)
        ended = False
        try:
            with trio.move_on_after(self.config.turn_timeout or float("inf")) as deadline:
                result = await client.converse(prompt, turn.on_message, turn.run_tool)
            if deadline.cancelled_caught:
                await self._stop(client)
                ended = True
                logger.warning("room %s: Claude turn timed out", room_id)
                await report_failure(tools, AgentFailure.generic(PROVIDER, code="timeout"))
                raise ClaudeTurnError(f"Claude turn timed out after {self.config.turn_timeout}s")
            ended = True
            await self._finish(client, tools, room_id, result)
        except Exception as exc:
            if not ended:
                await self._stop(client)
                ended = True
            if not isinstance(exc, ClaudeTurnError):
                logger.error("room %s: Claude turn failed: %r", room_id, exc)
                await report_failure(tools, AgentFailure.generic(PROVIDER))
                raise ClaudeTurnError(f"Claude turn failed: {exc!r}") from exc
            raise
        finally:
            if not ended:  # cancelled: interrupt Claude before the room moves on
                with trio.CancelScope(shield=True):
                    await self._stop(client)
            await self._release(room_id, client)
            await self.emit_usage(tools, turn.usage)

    async def _lease(
        self, room_id: str, tools: AgentToolsProtocol, session: str | None
    ) -> RoomClient:
        """The room's CLI, started when it has none."""
        client = self._clients.acquire(room_id, trio.current_time())
        if client is not None and not client.broken:
            return client
        if client is not None:
            self._clients.remove(room_id)
            await self._close(client)
        schemas = self.neutral_tools(tools)
        names = [schema.name for schema in schemas]
        client = RoomClient(room_id, schemas, self._options(room_id, names), session)
        try:
            await client.open()
        except BaseException as exc:
            with trio.CancelScope(shield=True):
                await client.close(self.config.close_timeout)
            if isinstance(exc, Exception):
                logger.error("room %s: the Claude CLI did not start: %r", room_id, exc)
                await report_failure(tools, AgentFailure.generic(PROVIDER))
                raise ClaudeTurnError(f"the Claude CLI did not start: {exc!r}") from exc
            raise
        evicted = self._clients.add(room_id, client, trio.current_time())
        await self._close_all([c for _room, c in evicted])
        return client

    async def _release(self, room_id: str, client: RoomClient) -> None:
        if client.session_id is not None:
            self._sessions[room_id] = client.session_id
        if client.broken:
            if self._clients.get(room_id) is client:
                self._clients.remove(room_id)
            await self._close_all([client])
        over = self._clients.release(room_id, trio.current_time())
        self._idle_changed.set()
        await self._close_all([c for _room, c in over])

    async def _stop(self, client: RoomClient) -> None:
        """End the turn in flight: interrupt and read to its result within
        ``interrupt_timeout``; a CLI that does not comply is killed (the
        conversation id is kept)."""
        if not client.broken:
            with trio.move_on_after(self.config.interrupt_timeout):
                try:
                    await client.client.interrupt()
                    if await client.drain() is not None:
                        return
                except Exception as exc:
                    logger.warning("room %s: interrupting Claude failed: %r", client.room_id, exc)
        logger.warning("room %s: the Claude CLI did not end its turn; killed", client.room_id)
        client.kill()

    async def _finish(
        self,
        client: RoomClient,
        tools: AgentToolsProtocol,
        room_id: str,
        result: ResultMessage | None,
    ) -> None:
        if result is None:
            client.broken = True
            logger.error("room %s: the Claude CLI's output ended before the result", room_id)
            await report_failure(tools, AgentFailure.generic(PROVIDER))
            raise ClaudeTurnError("the Claude CLI's output ended before the turn's result")
        self._turns += 1
        if isinstance(result.total_cost_usd, int | float):
            self._cost += float(result.total_cost_usd)
            logger.info("room %s: Claude turn cost %.6f USD", room_id, result.total_cost_usd)
        session = client.session_id
        if (
            session is not None
            and self._recorded.get(room_id) != session
            and await _SESSIONS.record(tools, session)
        ):
            self._recorded[room_id] = session
        if result.is_error:
            logger.error(
                "room %s: Claude turn failed: %s (API status %s) %s",
                room_id,
                result.result,
                result.api_error_status,
                result.errors,
            )
            code = result.api_error_status
            await report_failure(tools, AgentFailure.generic(PROVIDER, code=code))
            raise ClaudeTurnError(f"Claude turn failed ({result.subtype})")

    # ------------------------------------------------------------------ options

    def _options(self, room_id: str, band_tools: list[str]) -> ClaudeAgentOptions:
        config = self.config
        # MCP tools are offered directly rather than behind a search tool
        # (one model call fewer per turn); the user's env may say otherwise.
        env = {"ENABLE_TOOL_SEARCH": "false", **config.env}
        system_prompt: Any = self.system_prompt
        if config.claude_tools:
            system_prompt = {"type": "preset", "preset": "claude_code", "append": system_prompt}
        return ClaudeAgentOptions(
            tools=list(config.claude_tools),
            allowed_tools=[*(MCP_PREFIX + name for name in band_tools), *config.allowed_tools],
            disallowed_tools=list(config.disallowed_tools),
            system_prompt=system_prompt,
            model=config.model,
            permission_mode=config.permission_mode,  # type: ignore[arg-type]
            cwd=config.workdir(room_id),
            cli_path=config.cli_path,
            env=env,
            setting_sources=[],
            max_buffer_size=config.max_buffer_size,
            max_thinking_tokens=config.max_thinking_tokens,
            stderr=lambda line: logger.debug("room %s: claude: %s", room_id, line),
        )


class _Turn:
    """What one turn posts, and how its tool calls run."""

    def __init__(self, adapter: ClaudeAgentAdapter, tools: AgentToolsProtocol, client: RoomClient):
        self.adapter = adapter
        self.tools = tools
        self.client = client
        self.usage = Usage()
        self.names: dict[str, str] = {}  # tool use id -> name

    async def run_tool(self, name: str, args: Mapping[str, Any]) -> ToolOutput:
        # The events come from Claude's messages (they cover Claude's own
        # tools too), not from here.
        return await run_tool_call(
            self.tools, name, args, "", custom_tools=self.adapter.custom_tools, post_events=False
        )

    async def on_message(self, message: Message) -> None:
        features = self.adapter.features
        if isinstance(message, SystemMessage):
            session = message.data.get("session_id")
            if message.subtype == "init" and isinstance(session, str) and session:
                self.client.session_id = session
        elif isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, ThinkingBlock) and block.thinking.strip():
                    await self.adapter.post_thought(self.tools, block.thinking)
                elif isinstance(block, ToolUseBlock):
                    name = strip_prefix(block.name)
                    self.names[block.id] = name
                    if features.emits(Emit.TOOL_CALLS):
                        await post_tool_call(self.tools, name, block.input, block.id)
        elif isinstance(message, UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, ToolResultBlock) and features.emits(Emit.TOOL_CALLS):
                    name = self.names.pop(block.tool_use_id, "unknown")
                    await post_tool_result(
                        self.tools,
                        name,
                        _result_output(block),
                        block.tool_use_id,
                        is_error=bool(block.is_error),
                    )
        elif isinstance(message, ResultMessage):
            self.usage = _usage_of(message)
