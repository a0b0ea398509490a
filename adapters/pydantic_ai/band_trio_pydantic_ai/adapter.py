"""``PydanticAIAdapter``: a band-trio agent whose turns run a pydantic-ai ``Agent``.

Give it your own ``pydantic_ai.Agent`` (any model, its own tools,
instructions and output type), or a model (a name such as
``"anthropic:claude-sonnet-5-5"`` or a ``Model`` instance) from which the
adapter makes one. Each turn runs the agent once with the platform tools (and
any custom tools) added as a toolset, the Band system prompt added as
instructions, the room's conversation as message history and the turn's
message as the user prompt.

pydantic-ai is asyncio-only (it starts asyncio tasks in every run), so the
agent runs on the asyncio loop of a :class:`~band_trio_asyncio.AsyncioBridge`
(one worker thread per agent, started in ``on_started``); the Band tools it
calls run on Trio, on the turn's tools object, in the same turn. Cancelling
the turn (interrupt, stop, a removed room, shutdown, the turn deadline)
cancels the run.

Nothing reaches the room except through tools: the run's final output is
never posted, unless the user opts in with ``reply_from_output``; a turn
that neither replied nor declined is judged by the runtime like every
adapter's.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import attrs
import trio
from band_trio_asyncio import DEFAULT_CANCEL_GRACE, AsyncioBridge, BridgeStatistics, TrioPortal
from pydantic_ai import Agent, Tool
from pydantic_ai.capabilities import UseThreadExecutor
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ThinkingPart,
    UserPromptPart,
)
from pydantic_ai.models import Model
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
from pydantic_ai.usage import UsageLimits
from pydantic_graph import End

from band_trio import (
    AgentToolsProtocol,
    BandConfigError,
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
    ToolCategory,
    ToolSchema,
    Usage,
    check_tool_names,
    config_or_default,
    instance_of,
    optional,
    positive_int,
    render_turn_lines,
    seconds,
)
from band_trio_pydantic_ai.converter import (
    DEFAULT_HISTORY_BUDGET,
    HistoryBudget,
    PydanticAIHistoryConverter,
    trim_history,
)
from band_trio_pydantic_ai.tools import AgentTurn, BandEvents, LoopExecutor, band_tool

__all__ = [
    "DEFAULT_REQUEST_LIMIT",
    "DEFAULT_TOOL_RETRIES",
    "DEFAULT_TURN_TIMEOUT",
    "PROVIDER",
    "PydanticAIAdapter",
    "PydanticAIAdapterConfig",
    "PydanticAIStatistics",
    "TurnTimeoutError",
]

logger = logging.getLogger("band_trio_pydantic_ai")

PROVIDER: Final = "pydantic_ai"
"""The adapter's provider name (``AgentFailure.provider``). The adapter posts no
failure report of its own: a failed run raises, and the runtime reports the
message's final failure once."""
DEFAULT_TURN_TIMEOUT: Final = 300.0
"""Seconds one turn may run before it is cancelled and reported as failed."""
DEFAULT_REQUEST_LIMIT: Final = 50
"""Model requests one turn may make (pydantic-ai's ``UsageLimits.request_limit``)."""
DEFAULT_TOOL_RETRIES: Final = 3
"""Retries a plain pydantic-ai tool gets for arguments that fail validation."""
_LOOP_EXECUTOR: Final = LoopExecutor()
_TOOLSETS_KEPT: Final = 8
"""Band toolsets kept for reuse (one per distinct tool set in use)."""


class TurnTimeoutError(BandError, TimeoutError):
    """A turn ran past ``PydanticAIAdapterConfig.turn_timeout``; the run was cancelled."""


@attrs.frozen(kw_only=True)
class PydanticAIAdapterConfig:
    """Settings of a :class:`PydanticAIAdapter` (immutable).

    Attributes:
        turn_timeout: seconds one turn may run (default 300); the run is then
            cancelled and the turn fails with :class:`TurnTimeoutError`. None:
            no deadline (the runtime's ``AgentConfig.turn_timeout`` still
            applies).
        request_limit: model requests one turn may make.
        tool_retries: retries each of the adapter's ``tools`` gets for
            arguments that fail validation (Band tools never spend any: their
            failures are final results the model reads). None: pydantic-ai's
            default.
        history_budget: bounds the conversation kept per room and sent to
            the model (see :class:`~band_trio_pydantic_ai.HistoryBudget`).
        cancel_grace: seconds a cancelled run gets to unwind before it is
            abandoned (only for the bridge the adapter creates itself).

    Raises:
        BandConfigError: a value of the wrong type or out of range.
    """

    turn_timeout: float | None = attrs.field(
        default=DEFAULT_TURN_TIMEOUT, validator=optional(seconds("turn_timeout"))
    )
    request_limit: int = attrs.field(
        default=DEFAULT_REQUEST_LIMIT, validator=positive_int("request_limit")
    )
    tool_retries: int | None = attrs.field(
        default=DEFAULT_TOOL_RETRIES, validator=optional(positive_int("tool_retries"))
    )
    history_budget: HistoryBudget = attrs.field(
        default=DEFAULT_HISTORY_BUDGET, validator=instance_of("history_budget", HistoryBudget)
    )
    cancel_grace: float = attrs.field(
        default=DEFAULT_CANCEL_GRACE, validator=seconds("cancel_grace", zero=True)
    )


@attrs.frozen
class PydanticAIStatistics:
    """Counters of a :class:`PydanticAIAdapter`.

    Attributes:
        runs: agent runs started.
        rooms: rooms with a kept conversation now.
        toolsets: Band toolsets built (one per distinct tool set).
        bridge: the bridge's counters (abandoned runs, the thread).
    """

    runs: int
    rooms: int
    toolsets: int
    bridge: BridgeStatistics


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _usage_of(response: ModelResponse) -> Usage:
    usage = response.usage
    return Usage(
        input_tokens=_count(getattr(usage, "input_tokens", 0)),
        output_tokens=_count(getattr(usage, "output_tokens", 0)),
        cache_read_tokens=_count(getattr(usage, "cache_read_tokens", 0)),
        cache_write_tokens=_count(getattr(usage, "cache_write_tokens", 0)),
    )


def _thoughts(response: ModelResponse) -> list[str]:
    return [
        p.content
        for p in response.parts
        if isinstance(p, ThinkingPart) and isinstance(p.content, str) and p.content.strip()
    ]


def _schema_key(schemas: list[ToolSchema]) -> str:
    return json.dumps([attrs.astuple(s) for s in schemas], sort_keys=True, default=str)


@attrs.define(eq=False)
class _Outcome:
    """What the asyncio side of a turn hands back to Trio."""

    messages: list[ModelMessage] = attrs.field(factory=list)
    output: Any = None
    has_output: bool = False


class PydanticAIAdapter(SimpleAdapter[list[ModelMessage]]):
    """Answers Band messages with a pydantic-ai agent (see the module docs).

    Exactly one of ``agent`` and ``model`` is given.

    Args:
        config: the settings (default :class:`PydanticAIAdapterConfig()`).
        agent: your ``pydantic_ai.Agent``, run as it is with the Band tools and
            instructions added to each run. Its ``deps`` come from ``deps``.
        model: a pydantic-ai model (an instance such as ``FunctionModel`` or
            ``TestModel``, or a name such as ``"openai:gpt-5.2"``, which needs
            that provider's extra); the adapter makes an ``Agent`` of it.
        tools: plain pydantic-ai tools (``Tool`` objects or functions, with or
            without a ``RunContext`` first argument) added to each run after
            the Band tools; their failures reach the model as failed tool
            returns.
        custom_tools: band-trio typed custom tools (dispatched on Trio, like
            the platform tools).
        prompt: how the Band system prompt (given to each run as
            instructions) is made; default: the rendered Band prompt with the
            adapter's capabilities. ``PromptSettings(system_prompt="")``
            gives none.
        deps: ``deps(room_id)`` gives the run's dependencies (default: none).
        reply_from_output: opt-in: ``reply_from_output(output)`` makes the
            reply text from the run's final output (structured with the
            agent's ``output_type``); a text it returns is posted mentioning
            the sender when the run did not reply or decline itself. Default:
            the output is never posted.
        bridge: the asyncio bridge to run on; default: one the adapter creates
            (its thread starts in ``on_started`` and stops in ``cleanup_all``).
        history_converter: converts a room's history on a session bootstrap
            (default :class:`PydanticAIHistoryConverter` with the config's
            budget).
        emit: posts of its own: ``tool_calls``, ``usage``, ``thoughts`` (all
            on by default; thoughts only where the model gives thinking parts).
        capabilities: tool families beyond the 8 chat tools (default none).
        include_tools: offer only these tools.
        exclude_tools: never offer these tools.
        include_categories: offer only tools of these categories.

    Raises:
        BandConfigError: not exactly one of ``agent`` and ``model``, a bad
            config, a tool whose name clashes with a Band tool or another, an
            unsupported emit kind or capability.
    """

    SUPPORTED_EMIT = frozenset({Emit.TOOL_CALLS, Emit.USAGE, Emit.THOUGHTS})
    SUPPORTED_CAPABILITIES = frozenset(
        {Capability.MEMORY, Capability.CONTACTS, Capability.TASKS, Capability.FILES}
    )

    def __init__(
        self,
        config: PydanticAIAdapterConfig | None = None,
        *,
        agent: Agent[Any, Any] | None = None,
        model: Model | str | None = None,
        tools: Sequence[Tool[Any] | Callable[..., Any]] = (),
        custom_tools: CustomTools | None = None,
        prompt: PromptSettings | None = None,
        deps: Callable[[str], Any] | None = None,
        reply_from_output: Callable[[Any], str | None] | None = None,
        bridge: AsyncioBridge | None = None,
        history_converter: HistoryConverter[list[ModelMessage]] | None = None,
        emit: Emit | str | Iterable[Emit | str] | None = None,
        capabilities: Capability | str | Iterable[Capability | str] | None = None,
        include_tools: Iterable[str] | str | None = None,
        exclude_tools: Iterable[str] | str | None = None,
        include_categories: ToolCategory | str | Iterable[ToolCategory | str] | None = None,
    ) -> None:
        config = config_or_default(config, PydanticAIAdapterConfig)
        if (agent is None) == (model is None):
            raise BandConfigError("give exactly one of agent and model")
        if agent is not None and not isinstance(agent, Agent):
            raise BandConfigError(f"agent must be a pydantic_ai.Agent; got {type(agent).__name__}")
        if model is not None and not isinstance(model, Model | str):
            raise BandConfigError(
                f"model must be a pydantic-ai Model or a model name; got {type(model).__name__}"
            )
        for callback, what in ((deps, "deps"), (reply_from_output, "reply_from_output")):
            if callback is not None and not callable(callback):
                raise BandConfigError(f"{what} must be callable; got {type(callback).__name__}")
        try:
            plain = FunctionToolset[Any](list(tools), max_retries=config.tool_retries)
        except Exception as exc:
            raise BandConfigError(f"tools must be pydantic-ai tools or functions: {exc}") from exc
        super().__init__(
            history_converter=history_converter
            or PydanticAIHistoryConverter(config.history_budget),
            emit=emit,
            capabilities=capabilities,
            include_tools=include_tools,
            exclude_tools=exclude_tools,
            include_categories=include_categories,
            custom_tools=custom_tools,
            prompt=prompt,
        )
        names = list(plain.tools)
        if self.custom_tools is not None:
            names += [d.name for d in self.custom_tools.definitions()]
        check_tool_names(names)
        self.config = config
        self.agent: Agent[Any, Any] = agent if agent is not None else Agent(model)
        self._plain_toolset = plain if plain.tools else None
        self._deps = deps
        self._reply_from_output = reply_from_output
        self._owns_bridge = bridge is None
        self.bridge = (
            bridge if bridge is not None else AsyncioBridge(cancel_grace=config.cancel_grace)
        )
        self._histories: dict[str, list[ModelMessage]] = {}
        # A failed turn keeps its user prompt; a retry of the same message
        # starts from here instead of adding it a second time.
        self._retry_points: dict[str, tuple[str, int]] = {}
        self._toolsets: dict[str, FunctionToolset[Any]] = {}
        self._toolsets_built = 0
        self._runs = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(agent={self.agent.name or self.agent.model!r})"

    # ------------------------------------------------------------------ lifecycle

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        """Store the identity and start the bridge's thread, so that no turn
        waits for it."""
        await super().on_started(agent_name, agent_description)
        await self.bridge.start()

    async def on_cleanup(self, room_id: str) -> None:
        """Forget the room's conversation (the platform history is converted
        again when the agent joins the room again)."""
        self._histories.pop(room_id, None)
        self._retry_points.pop(room_id, None)

    async def cleanup_all(self) -> None:
        """Forget every room's conversation and, when the adapter created it,
        close the bridge (its thread stops). The agent calls this once when it
        stops."""
        self._histories.clear()
        self._retry_points.clear()
        if self._owns_bridge:
            await self.bridge.aclose()

    async def aclose(self) -> None:
        """Same as :meth:`cleanup_all` (for use without an agent)."""
        await self.cleanup_all()

    def statistics(self) -> PydanticAIStatistics:
        """The adapter's counters now."""
        return PydanticAIStatistics(
            runs=self._runs,
            rooms=len(self._histories),
            toolsets=self._toolsets_built,
            bridge=self.bridge.statistics(),
        )

    def conversation(self, room_id: str) -> list[ModelMessage]:
        """The conversation kept for ``room_id`` (a copy; empty when none)."""
        return list(self._histories.get(room_id, ()))

    # ------------------------------------------------------------------ one turn

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: list[ModelMessage],
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        """Run the agent once for ``msg``.

        The room's conversation is kept when the run ends, and also when it
        fails (with this turn's user prompt, once); a cancelled turn leaves
        it as it was.

        Raises:
            TurnTimeoutError: the turn ran past ``turn_timeout`` (the run was
                cancelled).
            Exception: the run failed (model errors, the request limit, a
                plain tool's retries used up). Nothing is posted here: the
                runtime retries the message while attempts remain and posts
                one error event when it fails for the last time
                (``AgentConfig.report_turn_failures``).
            trio.Cancelled: the turn was cancelled; the run was cancelled and
                waited for (at most the bridge's grace, then abandoned).
        """
        base = self._base_history(msg, room_id, history, is_session_bootstrap)
        prompt = [line.text for line in render_turn_lines(msg, participants_msg, contacts_msg)]
        holder: list[AgentTurn] = []
        outcome = _Outcome()
        try:
            toolset = self._band_toolset(tools)
            deps = self._deps(room_id) if self._deps is not None else None

            async def body(portal: TrioPortal) -> None:
                turn = AgentTurn(tools, portal, self.features.emit, self.custom_tools)
                holder.append(turn)
                turn.enter()
                await self._run_agent(turn, outcome, base, prompt, toolset, deps)

            self._runs += 1
            timeout = self.config.turn_timeout
            with trio.move_on_after(math.inf if timeout is None else timeout) as deadline:
                await self.bridge.run(body)
            if deadline.cancelled_caught:
                raise TurnTimeoutError(f"the turn ran past its deadline of {timeout} s")
            await self._reply_from(msg, tools, outcome, holder)
        except Exception as exc:
            # Nothing is posted here: as for every adapter that raises, the
            # runtime retries the message while attempts remain and reports
            # its final failure once.
            self._keep_failed(room_id, msg, base, prompt)
            logger.error(
                "room %s: the agent run failed: %s: %s",
                room_id,
                type(exc).__name__,
                exc,
                exc_info=not isinstance(exc, TurnTimeoutError),
            )
            raise
        finally:
            await self.emit_usage(tools, holder[0].usage if holder else Usage())
        self._retry_points.pop(room_id, None)
        self._histories[room_id] = trim_history(outcome.messages, self.config.history_budget)

    def _base_history(
        self,
        msg: PlatformMessage,
        room_id: str,
        history: list[ModelMessage],
        is_session_bootstrap: bool,
    ) -> list[ModelMessage]:
        if is_session_bootstrap:
            return list(history)
        base = list(self._histories.get(room_id, ()))
        retry = self._retry_points.get(room_id)
        if retry is not None and retry[0] == msg.id and retry[1] <= len(base):
            base = base[: retry[1]]
        return base

    def _keep_failed(
        self, room_id: str, msg: PlatformMessage, base: list[ModelMessage], prompt: list[str]
    ) -> None:
        """Keep the conversation of a failed turn: what it had, and the turn's prompt."""
        request = ModelRequest(parts=[UserPromptPart(prompt if len(prompt) > 1 else prompt[0])])
        kept = trim_history([*base, request], self.config.history_budget)
        self._histories[room_id] = kept
        self._retry_points[room_id] = (msg.id, len(kept) - 1)

    def _band_toolset(self, tools: AgentToolsProtocol) -> FunctionToolset[Any]:
        # Asked of the turn's tools object every turn: it records what was
        # offered (and refuses anything else), and the room's tool set can
        # change (a hub room, capabilities the deployment stopped serving).
        schemas = self.neutral_tools(tools)
        key = _schema_key(schemas)
        toolset = self._toolsets.get(key)
        if toolset is None:
            toolset = FunctionToolset[Any](
                [band_tool(s.name, s.description, s.input_schema) for s in schemas]
            )
            if len(self._toolsets) >= _TOOLSETS_KEPT:
                self._toolsets.pop(next(iter(self._toolsets)))
            self._toolsets[key] = toolset
            self._toolsets_built += 1
        return toolset

    async def _reply_from(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        outcome: _Outcome,
        holder: list[AgentTurn],
    ) -> None:
        """Post the reply built from the output, when the user opted in."""
        if self._reply_from_output is None or not outcome.has_output:
            return
        if holder and (holder[0].declined or holder[0].replied):
            return
        text = self._reply_from_output(outcome.output)
        if text is not None and text.strip():
            await tools.send_message(text, [msg.sender_id])

    # -- on the bridge's loop

    async def _run_agent(
        self,
        turn: AgentTurn,
        outcome: _Outcome,
        base: list[ModelMessage],
        prompt: list[str],
        toolset: FunctionToolset[Any],
        deps: Any,
    ) -> None:
        toolsets: list[AbstractToolset[Any]] = [toolset]
        if self._plain_toolset is not None:
            toolsets.append(self._plain_toolset)
        instructions = self.system_prompt or None
        async with self.agent.iter(
            prompt if len(prompt) > 1 else prompt[0],
            message_history=base,
            deps=deps,
            toolsets=toolsets,
            instructions=instructions,
            capabilities=[BandEvents(turn), UseThreadExecutor(_LOOP_EXECUTOR)],
            usage_limits=UsageLimits(request_limit=self.config.request_limit),
            infer_name=False,
        ) as run:
            node: Any = run.next_node
            while not isinstance(node, End):
                if Agent.is_call_tools_node(node):
                    response = node.model_response
                    turn.usage += _usage_of(response)
                    if Emit.THOUGHTS in turn.emit:
                        for text in _thoughts(response):
                            await turn.portal.run(turn.post_thought, text)
                    turn.new_batch()
                node = await run.next(node)
                if turn.declined and not turn.failed and Agent.is_model_request_node(node):
                    # A batch that declined (and nothing failed): the turn is
                    # over without another model call. The answered calls are
                    # kept with their returns.
                    outcome.messages = [*run.all_messages(), node.request]
                    return
            outcome.messages = run.all_messages()
            result = run.result
            if result is not None:
                outcome.output = result.output
                outcome.has_output = True
