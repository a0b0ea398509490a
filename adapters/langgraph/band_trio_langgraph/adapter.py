"""``LangGraphAdapter``: a band-trio agent whose turns run a LangGraph graph.

Two patterns:

* **simple**: give a chat model; the adapter builds the tool-calling agent
  graph of :mod:`band_trio_langgraph.graph` with the platform tools (and any
  custom tools), compiled once per room and reused while the room's tool set
  is unchanged;
* **advanced**: give ``graph_factory(tools) -> compiled graph`` (called once
  per room and tool set, with the Band tools as LangChain tools), or a static
  compiled ``graph``.

The graph runs on the asyncio loop of a ``band_trio_asyncio.AsyncioBridge``
(a worker thread); the Band tools it calls run on Trio, on the
turn's tools object. The thread id of a room is the room id; the checkpointer
defaults to an in-memory saver. Nothing reaches the room except through
tools: the graph's final text is never posted, and a turn that neither
replied nor declined is judged by the runtime like every adapter's.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Final, Protocol, cast

import attrs
from band_trio_asyncio import (
    DEFAULT_CANCEL_GRACE,
    AsyncioBridge,
    BridgeStatistics,
    TrioPortal,
)
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import LLMResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.errors import GraphRecursionError

from band_trio import (
    AgentToolsProtocol,
    BandConfigError,
    Capability,
    CustomTools,
    Emit,
    HistoryConverter,
    PlatformMessage,
    SimpleAdapter,
    get_tool_schemas,
)
from band_trio.adapter import (
    PromptSettings,
    ToolCategory,
    Usage,
    check_tool_names,
    config_or_default,
    flag,
    optional,
    positive_int,
    render_turn_lines,
    seconds,
    text,
)
from band_trio_langgraph.converter import LangChainHistoryConverter
from band_trio_langgraph.graph import build_agent_graph
from band_trio_langgraph.thread_memory import LatestCheckpointSaver, trim_plan, trims_messages
from band_trio_langgraph.tools import BandTool, TurnState, wrap_tools

__all__ = [
    "DEFAULT_MAX_THREAD_MESSAGES",
    "DEFAULT_RECURSION_LIMIT",
    "PROVIDER",
    "CheckpointerFactory",
    "CompiledGraph",
    "LangGraphAdapter",
    "LangGraphAdapterConfig",
    "LangGraphStatistics",
    "band_tools",
]

logger = logging.getLogger("band_trio_langgraph")

PROVIDER: Final = "langgraph"
"""The adapter's provider name (``AgentFailure.provider``). The adapter posts no
failure report of its own: a failed graph raises, and the runtime reports the
message's final failure once."""
DEFAULT_RECURSION_LIMIT: Final = 50
"""LangGraph super-steps one turn may take (each model call and each tool round is one)."""
DEFAULT_MAX_THREAD_MESSAGES: Final = 200
"""Messages a room's thread keeps (and the model is sent) before the oldest go."""


class CompiledGraph(Protocol):
    """What the adapter needs of a compiled LangGraph graph (``CompiledStateGraph``)."""

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None) -> Any:
        """Run the graph to its end."""
        ...


CheckpointerFactory = Callable[[], AbstractAsyncContextManager[BaseCheckpointSaver[Any]]]
"""Opens a checkpointer on the bridge's asyncio loop (for savers bound to a loop,
e.g. ``lambda: AsyncSqliteSaver.from_conn_string(path)``); closed at cleanup."""


@attrs.frozen(kw_only=True)
class LangGraphAdapterConfig:
    """Settings of a :class:`LangGraphAdapter` (immutable).

    Attributes:
        system_prompt: a complete system prompt; when set, ``custom_section``,
            ``include_base_instructions`` and the capability sections are not used.
        custom_section: text added to the rendered prompt.
        include_base_instructions: include the Band environment, security,
            activation, delegation and relaying sections.
        recursion_limit: LangGraph super-steps one turn may take; reaching it
            fails the turn (a generic failure report with code
            ``"recursion_limit"``).
        inject_system_prompt: None (default): the simple pattern gives the
            prompt to every model call and advanced graphs get none; True: the
            prompt is the first message of a new thread (both patterns);
            False: no prompt at all.
        cancel_grace: seconds a cancelled graph gets to unwind before it is
            abandoned (only for the bridge the adapter creates itself).
        max_thread_messages: the messages a room's thread keeps: once a turn
            leaves more, the next turn removes the oldest, cutting before a
            human message so that tool calls keep their results (a leading
            system message stays). Bounds the model's context, the room's
            memory and the CPU of a turn. Applies to graphs whose
            ``messages`` merge with ``add_messages`` (the simple pattern's
            and ``MessagesState``). None: keep every message.

    Raises:
        BandConfigError: a value of the wrong type or out of range.
    """

    system_prompt: str | None = attrs.field(default=None, validator=optional(text("system_prompt")))
    custom_section: str = attrs.field(default="", validator=text("custom_section"))
    include_base_instructions: bool = attrs.field(
        default=True, validator=flag("include_base_instructions")
    )
    recursion_limit: int = attrs.field(
        default=DEFAULT_RECURSION_LIMIT, validator=positive_int("recursion_limit")
    )
    inject_system_prompt: bool | None = attrs.field(
        default=None, validator=optional(flag("inject_system_prompt"))
    )
    cancel_grace: float = attrs.field(
        default=DEFAULT_CANCEL_GRACE, validator=seconds("cancel_grace", zero=True)
    )
    max_thread_messages: int | None = attrs.field(
        default=DEFAULT_MAX_THREAD_MESSAGES,
        validator=optional(positive_int("max_thread_messages")),
    )


@attrs.frozen
class LangGraphStatistics:
    """Counters of a :class:`LangGraphAdapter`.

    Attributes:
        compilations: graphs built (once per room and tool set).
        rooms: rooms with a compiled graph now.
        bridge: the bridge's counters (abandoned tasks, the thread).
    """

    compilations: int
    rooms: int
    bridge: BridgeStatistics


def band_tools(
    *,
    capabilities: Iterable[Capability | str] | None = (),
    include_tools: Iterable[str] | None = None,
    exclude_tools: Iterable[str] | None = None,
    include_categories: Iterable[ToolCategory | str] | None = None,
    custom_tools: CustomTools | None = None,
) -> list[BaseTool]:
    """The Band tools as LangChain tools, for a static graph.

    They act on the turn they are called in (a static graph run by a
    :class:`LangGraphAdapter`); outside a turn they return an error. The turn's
    tools object refuses tools the adapter's own features do not offer.
    """
    schemas = get_tool_schemas(
        "openai",
        capabilities=capabilities,
        include_tools=include_tools,
        exclude_tools=exclude_tools,
        include_categories=include_categories,
        custom_tools=custom_tools,
    )
    return [BandTool.from_schema(s) for s in schemas]


def _usage_of(message: AIMessage) -> Usage:
    metadata = message.usage_metadata
    if not metadata:
        return Usage()
    details = metadata.get("input_token_details") or {}
    return Usage.reported(
        input_tokens=metadata.get("input_tokens"),
        output_tokens=metadata.get("output_tokens"),
        cache_read_tokens=details.get("cache_read"),
        cache_write_tokens=details.get("cache_creation"),
    )


def _reasoning_of(message: AIMessage) -> list[str]:
    """The reasoning texts a model gave (standard ``reasoning`` blocks, Anthropic
    ``thinking`` blocks, or ``reasoning_content``)."""
    texts: list[str] = []
    if isinstance(message.content, list):
        for block in message.content:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "reasoning" and isinstance(block.get("reasoning"), str):
                texts.append(block["reasoning"])
            elif block.get("type") == "thinking" and isinstance(block.get("thinking"), str):
                texts.append(block["thinking"])
    extra = message.additional_kwargs.get("reasoning_content")
    if isinstance(extra, str):
        texts.append(extra)
    return [t for t in texts if t.strip()]


_CALLBACK_EMITS: Final = frozenset({Emit.USAGE, Emit.THOUGHTS})
"""The posts :class:`_TurnCallbacks` serves."""


class _TurnCallbacks(AsyncCallbackHandler):
    """Sums usage over every model call of the turn and posts thoughts."""

    # Only the end of a model call is read: LangChain skips the handler for
    # every other event (each node and runnable of the graph starts and ends
    # a chain) instead of awaiting a no-op for each.
    ignore_chain = True
    ignore_agent = True
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True
    ignore_chat_model = True

    def __init__(self, turn: TurnState) -> None:
        self.turn = turn

    async def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                if not isinstance(message, AIMessage):
                    continue
                self.turn.usage += _usage_of(message)
                if Emit.THOUGHTS in self.turn.emit:
                    for text in _reasoning_of(message):
                        await self.turn.portal.run(self.turn.post_thought, text)


class LangGraphAdapter(SimpleAdapter[list[BaseMessage]]):
    """Answers Band messages with a LangGraph graph (see the module docs).

    Exactly one of ``model``, ``graph_factory`` and ``graph`` is given.

    Args:
        config: the settings (default :class:`LangGraphAdapterConfig()`).
        model: a LangChain chat model with ``bind_tools``: the simple pattern.
        graph_factory: ``graph_factory(tools) -> compiled graph``, called with
            the room's tools (Band tools, then ``tools``) once per room and
            tool set. The graph's state must have a ``messages`` key.
        graph: a static compiled graph (``messages`` state), shared by every
            room; it receives no tools (see :func:`band_tools`).
        checkpointer: a LangGraph checkpointer, or a factory opening one on the
            bridge's loop (:data:`CheckpointerFactory`). Default: in memory,
            the latest checkpoint of each room only
            (:class:`~band_trio_langgraph.LatestCheckpointSaver`).
            Given to the simple graph and to advanced graphs compiled without one.
        tools: plain LangChain tools offered after the Band tools; their
            failures reach the model as error tool messages.
        custom_tools: band-trio typed custom tools (dispatched on Trio).
        bridge: the asyncio bridge to run graphs on; default: one the adapter
            creates and closes in :meth:`cleanup_all`.
        history_converter: converts a room's history on a session bootstrap
            (default :class:`LangChainHistoryConverter`).
        emit: posts of its own: ``tool_calls``, ``usage``, ``thoughts`` (all
            on by default; thoughts only where the model gives reasoning).
        capabilities: tool families beyond the 8 chat tools (default none).
        include_tools: offer only these tools.
        exclude_tools: never offer these tools.
        include_categories: offer only tools of these categories.

    Raises:
        BandConfigError: not exactly one pattern, a bad config, a tool whose
            name clashes with another, an unsupported emit kind or capability.
    """

    SUPPORTED_EMIT = frozenset({Emit.TOOL_CALLS, Emit.USAGE, Emit.THOUGHTS})
    SUPPORTED_CAPABILITIES = frozenset(
        {Capability.MEMORY, Capability.CONTACTS, Capability.TASKS, Capability.FILES}
    )

    def __init__(
        self,
        config: LangGraphAdapterConfig | None = None,
        *,
        model: BaseChatModel | None = None,
        graph_factory: Callable[[list[BaseTool]], CompiledGraph] | None = None,
        graph: CompiledGraph | None = None,
        checkpointer: BaseCheckpointSaver[Any] | CheckpointerFactory | None = None,
        tools: Sequence[BaseTool] = (),
        custom_tools: CustomTools | None = None,
        bridge: AsyncioBridge | None = None,
        history_converter: HistoryConverter[list[BaseMessage]] | None = None,
        emit: Emit | str | Iterable[Emit | str] | None = None,
        capabilities: Capability | str | Iterable[Capability | str] | None = None,
        include_tools: Iterable[str] | str | None = None,
        exclude_tools: Iterable[str] | str | None = None,
        include_categories: ToolCategory | str | Iterable[ToolCategory | str] | None = None,
    ) -> None:
        config = config_or_default(config, LangGraphAdapterConfig)
        given = [
            n
            for n, v in (("model", model), ("graph_factory", graph_factory), ("graph", graph))
            if v is not None
        ]
        if len(given) != 1:
            raise BandConfigError(
                "give exactly one of model (simple pattern), graph_factory or graph "
                f"(advanced pattern); got {', '.join(given) or 'none'}"
            )
        super().__init__(
            history_converter=history_converter or LangChainHistoryConverter(),
            emit=emit,
            capabilities=capabilities,
            include_tools=include_tools,
            exclude_tools=exclude_tools,
            include_categories=include_categories,
            custom_tools=custom_tools,
            prompt=PromptSettings.of(config),
        )
        plain = list(tools)
        for tool in plain:
            if not isinstance(tool, BaseTool):
                raise BandConfigError(f"tools must be LangChain tools; got {type(tool).__name__}")
        custom = [] if custom_tools is None else custom_tools.definitions()
        names = [t.name for t in plain] + [d.name for d in custom]
        check_tool_names(names)
        self.config = config
        self.model = model
        self.graph_factory = graph_factory
        self.static_graph = graph
        self._plain_tools = wrap_tools(plain)
        self._checkpointer_arg = checkpointer
        self._owns_bridge = bridge is None
        self.bridge = (
            bridge if bridge is not None else AsyncioBridge(cancel_grace=config.cancel_grace)
        )
        # Touched only on the bridge's loop thread (inside runs).
        # Room -> (the tool schemas it was compiled for, the graph).
        self._graphs: dict[str, tuple[list[dict[str, Any]], CompiledGraph]] = {}
        self._saver: BaseCheckpointSaver[Any] | None = None
        self._saver_stack: contextlib.AsyncExitStack | None = None
        self._compilations = 0
        # Room -> the removals the next turn applies (max_thread_messages).
        self._trims: dict[str, list[BaseMessage]] = {}

    def __repr__(self) -> str:
        pattern = "model" if self.model is not None else "graph"
        return f"{type(self).__name__}({pattern})"

    # ------------------------------------------------------------------ lifecycle

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        """Store the identity (the system prompt is rendered with it) and start
        the bridge's thread, so that no turn waits for it."""
        await super().on_started(agent_name, agent_description)
        await self.bridge.start()

    async def on_cleanup(self, room_id: str) -> None:
        """Forget the room's compiled graph. Its checkpointer thread is kept:
        when the agent joins the room again, the thread is continued and the
        platform history is not injected a second time."""
        self._graphs.pop(room_id, None)

    async def cleanup_all(self) -> None:
        """Forget every room's graph, close a checkpointer the adapter opened
        and, when the adapter created it, the bridge (its thread stops). The
        agent calls this once when it stops."""
        self._graphs.clear()
        stack, self._saver_stack = self._saver_stack, None
        self._saver = None
        if stack is not None:

            async def close(_portal: TrioPortal) -> None:
                await stack.aclose()

            try:
                await self.bridge.run(close)
            except Exception:
                logger.exception("closing the checkpointer failed")
        if self._owns_bridge:
            await self.bridge.aclose()

    async def aclose(self) -> None:
        """Same as :meth:`cleanup_all` (for use without an agent)."""
        await self.cleanup_all()

    @property
    def checkpointer(self) -> BaseCheckpointSaver[Any] | None:
        """The checkpointer the rooms' threads live in (None before the first
        turn opened it)."""
        return self._saver

    def statistics(self) -> LangGraphStatistics:
        """The adapter's counters now."""
        return LangGraphStatistics(
            compilations=self._compilations,
            rooms=len(self._graphs),
            bridge=self.bridge.statistics(),
        )

    def stuck_threads(self) -> int:
        """The bridge's worker threads that did not stop when it closed
        (:class:`band_trio.adapter.ReportsStuckThreads`: the agent's metrics
        show them)."""
        return self.bridge.statistics().stuck_threads

    # ------------------------------------------------------------------ one turn

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: list[BaseMessage],
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        """Run the room's graph once for ``msg``.

        Raises:
            Exception: the graph failed (including ``GraphRecursionError`` when
                the recursion limit is reached). Nothing is posted here: as for
                every adapter that raises, the runtime retries the message
                while attempts remain and posts one generic error event when
                it fails for the last time (``AgentConfig.report_turn_failures``).
            trio.Cancelled: the turn was cancelled; the graph was cancelled and
                waited for (at most the bridge's grace, then abandoned).
        """
        holder: list[TurnState] = []
        try:
            # Asked of the turn's tools object every turn: it records what was
            # offered, and the room's tool set can change.
            schemas = self.tool_schemas(tools, "openai")
            inputs = self._turn_messages(msg, participants_msg, contacts_msg)
            bootstrap = list(history) if is_session_bootstrap else []

            async def body(portal: TrioPortal) -> None:
                turn = TurnState(tools, portal, self.features.emit, self.custom_tools)
                holder.append(turn)
                turn.enter()
                await self._run_graph(turn, room_id, schemas, bootstrap, inputs)

            await self.bridge.run(body)
        except Exception as exc:
            logger.error(
                "room %s: the graph failed: %s: %s",
                room_id,
                type(exc).__name__,
                exc,
                exc_info=not isinstance(exc, GraphRecursionError),
            )
            raise
        finally:
            await self.emit_usage(tools, holder[0].usage if holder else Usage())

    @staticmethod
    def _turn_messages(
        msg: PlatformMessage, participants_msg: str | None, contacts_msg: str | None
    ) -> list[BaseMessage]:
        # Stable ids: a retried message replaces its lines in the thread
        # instead of adding them again.
        return [
            HumanMessage(
                content=line.text,
                id=f"band-{msg.id}" if line.kind == "message" else f"band-{msg.id}-{line.kind}",
            )
            for line in render_turn_lines(msg, participants_msg, contacts_msg)
        ]

    # -- on the bridge's loop

    async def _run_graph(
        self,
        turn: TurnState,
        room_id: str,
        schemas: list[dict[str, Any]],
        bootstrap: list[BaseMessage],
        inputs: list[BaseMessage],
    ) -> None:
        graph = await self._graph_for(room_id, schemas)
        thread: RunnableConfig = {"configurable": {"thread_id": room_id}}
        inject_prompt = self.config.inject_system_prompt is True and bool(self.system_prompt)
        messages = inputs
        if (bootstrap or inject_prompt) and await self._thread_is_new(graph, thread):
            head: list[BaseMessage] = []
            if inject_prompt:
                head.append(SystemMessage(content=self.system_prompt, id="band-system-prompt"))
            messages = [*head, *bootstrap, *inputs]
        config: RunnableConfig = {
            "configurable": {"thread_id": room_id},
            "recursion_limit": self.config.recursion_limit,
        }
        if _CALLBACK_EMITS & turn.emit:
            # Only when someone reads them: with a handler attached, LangChain
            # runs its callback machinery for every runnable of the graph.
            config["callbacks"] = [_TurnCallbacks(turn)]
        budget = self.config.max_thread_messages
        trimming = budget is not None and trims_messages(graph)
        if trimming:
            messages = [*self._trims.pop(room_id, ()), *messages]
        if isinstance(getattr(graph, "checkpointer", None), LatestCheckpointSaver):
            # It keeps only a thread's latest checkpoint: storing one at every
            # super-step (each a full copy of the thread's messages) only to
            # drop it at the next is wasted work. "exit" stores the one it
            # keeps, with the pending writes, when the run ends (returns,
            # fails or is cancelled).
            # (A LangGraph graph: a checkpointer is a LangGraph notion.)
            pregel = cast(Any, graph)
            result = await pregel.ainvoke({"messages": messages}, config, durability="exit")
        else:
            result = await graph.ainvoke({"messages": messages}, config)
        if trimming and isinstance(result, Mapping):
            kept = result.get("messages")
            assert budget is not None
            if isinstance(kept, list) and (plan := trim_plan(kept, budget)):
                self._trims[room_id] = list(plan)

    @staticmethod
    async def _thread_is_new(graph: CompiledGraph, config: RunnableConfig) -> bool:
        aget_state = getattr(graph, "aget_state", None)
        if aget_state is None:
            return True
        try:
            snapshot = await aget_state(config)
        except Exception:
            return True  # no checkpointer: the graph keeps no thread
        values = getattr(snapshot, "values", None)
        return not (isinstance(values, Mapping) and values.get("messages"))

    async def _graph_for(self, room_id: str, schemas: list[dict[str, Any]]) -> CompiledGraph:
        entry = self._graphs.get(room_id)
        if entry is not None and entry[0] == schemas:  # compared, not serialised, each turn
            return entry[1]
        saver = await self._checkpointer()
        graph: CompiledGraph
        if self.static_graph is not None:
            graph = self._with_checkpointer(self.static_graph, saver)
        else:
            tools: list[BaseTool] = [BandTool.from_schema(s) for s in schemas]
            tools.extend(self._plain_tools)
            if self.model is not None:
                graph = cast(
                    CompiledGraph,
                    build_agent_graph(
                        self.model,
                        tools,
                        system_prompt=self._prompt_per_call(),
                        checkpointer=saver,
                    ),
                )
            else:
                assert self.graph_factory is not None
                graph = self._with_checkpointer(self.graph_factory(tools), saver)
            self._compilations += 1
        self._graphs[room_id] = (copy.deepcopy(schemas), graph)
        return graph

    def _prompt_per_call(self) -> Callable[[], str] | None:
        if self.config.inject_system_prompt is not None:
            return None
        return lambda: self.system_prompt

    @staticmethod
    def _with_checkpointer(graph: CompiledGraph, saver: BaseCheckpointSaver[Any]) -> CompiledGraph:
        if getattr(graph, "checkpointer", False) is None and callable(getattr(graph, "copy", None)):
            return cast(CompiledGraph, graph.copy(update={"checkpointer": saver}))  # type: ignore[attr-defined]
        return graph

    async def _checkpointer(self) -> BaseCheckpointSaver[Any]:
        if self._saver is not None:
            return self._saver
        given = self._checkpointer_arg
        if given is None:
            saver: BaseCheckpointSaver[Any] = LatestCheckpointSaver()
        elif isinstance(given, BaseCheckpointSaver):
            saver = given
        else:
            stack = contextlib.AsyncExitStack()
            saver = await stack.enter_async_context(given())
            if self._saver is not None:  # another room opened one meanwhile
                await stack.aclose()
                return self._saver
            self._saver_stack = stack
        self._saver = saver
        return saver
