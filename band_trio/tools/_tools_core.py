"""The state of a turn's tools object, below :class:`~band_trio.tools.AgentTools`.

``ToolsCore`` holds what every part of the tools object reads: the REST
client, the room and agent, the roster snapshot, the turn hooks and the
effects recorded, the offered-tools gate's inputs, and the REST helpers of the
delegated families. :func:`platform_tool` marks a method as the implementation
of a platform tool. The tools themselves live in
:mod:`~band_trio.tools.agent_tools` (posts, participants), in
``_family_tools`` (contacts, memories, room files, tasks) and the model-facing
schemas and dispatch in ``_tool_dispatch``; ``AgentTools`` joins them.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Concatenate, ParamSpec, TypeVar

from band_trio._tracing import span
from band_trio.adapter.capabilities import ToolEffect
from band_trio.adapter.roster import available_handles
from band_trio.adapter.tool_protocol import CustomToolSet
from band_trio.adapter.turns import TurnHooks
from band_trio.tools.contact_tools import ContactTools
from band_trio.tools.definitions import (
    DEFAULT_CAPABILITIES,
    Capability,
    get_tool_definition,
    select_tool_definitions,
)
from band_trio.tools.memory_tools import MemoryTools
from band_trio.tools.room_file_tools import RoomFileTools
from band_trio.tools.settled_writes import WriteLocks
from band_trio.tools.task_tools import TaskTools
from band_trio.tools.unsure_posts import (
    DEFAULT_UNSURE_POST_POLICY,
    PostFinder,
    UnsurePostPolicy,
)
from band_trio.wire.models import ChatParticipant
from band_trio.wire.rest import RestClient

__all__ = ["ToolsCore", "platform_tool"]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound="ToolsCore")


def platform_tool(
    name: str,
) -> Callable[
    [Callable[Concatenate[S, P], Awaitable[R]]],
    Callable[Concatenate[S, P], Awaitable[R]],
]:
    """Mark a method as the implementation of tool ``name``.

    After the method returns a non-None result, the tool's effect is recorded on
    the turn; a failed call (or a refused blank post returning None) records
    nothing.
    """
    definition = get_tool_definition(name)
    if definition is None:  # pragma: no cover - import-time guard
        raise RuntimeError(f"unknown tool {name}")
    effect = definition.effect

    def decorate(
        fn: Callable[Concatenate[S, P], Awaitable[R]],
    ) -> Callable[Concatenate[S, P], Awaitable[R]]:
        @functools.wraps(fn)
        async def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
            with span(f"band.tool {name}", {"band.tool.name": name}):
                result = await fn(self, *args, **kwargs)
            if result is not None:
                self._record(effect)
            return result

        wrapper.__band_tool__ = name  # type: ignore[attr-defined]
        return wrapper

    return decorate


class ToolsCore:
    """The turn's tools object without its tools; the arguments are
    :class:`~band_trio.tools.AgentTools`' own."""

    def __init__(
        self,
        *,
        rest: RestClient,
        room_id: str,
        agent_id: str,
        participants: Sequence[ChatParticipant],
        hooks: TurnHooks | None = None,
        hub_room_id: str | None = None,
        capabilities: frozenset[Capability] | None = None,
        custom_tools: CustomToolSet | None = None,
        unserved: frozenset[Capability] = frozenset(),
        find_post: PostFinder | None = None,
        unsure_posts: UnsurePostPolicy = DEFAULT_UNSURE_POST_POLICY,
        write_locks: WriteLocks | None = None,
    ) -> None:
        self._rest = rest
        if find_post is None and isinstance(hooks, PostFinder):
            find_post = hooks
        self._finder = find_post
        self._unsure = unsure_posts
        # Posts of this turn the platform is known to hold: never taken for
        # a later post whose outcome is unknown.
        self._own_posts: list[str] = []
        self._unserved = frozenset(unserved)
        # The contact operations shared with CALLBACK handlers (one implementation).
        self._locks = write_locks if write_locks is not None else WriteLocks()
        self._contacts = ContactTools(rest, policy=unsure_posts)
        self._memories = MemoryTools(rest, policy=unsure_posts, locks=self._locks)
        self._files = RoomFileTools(rest, room_id)
        self._tasks = TaskTools(
            rest, room_id, agent_id=agent_id, policy=unsure_posts, locks=self._locks
        )
        self._room_id = room_id
        self._agent_id = agent_id
        self._participants: list[ChatParticipant] = list(participants)
        self._hooks = hooks
        self._hub_room_id = hub_room_id
        self._capabilities = capabilities
        self._offered: frozenset[str] | None = (
            None
            if capabilities is None
            else frozenset(
                d.name
                for d in select_tool_definitions(
                    capabilities=self._effective_capabilities(capabilities)
                )
            )
        )
        self._custom_tools = custom_tools
        self._effects: list[ToolEffect] = []
        self._failure_reported = False

    # ------------------------------------------------------------------ state

    @property
    def room_id(self) -> str:
        """The room this tools object is bound to."""
        return self._room_id

    @property
    def agent_id(self) -> str:
        """This agent's id."""
        return self._agent_id

    @property
    def hub_room_id(self) -> str | None:
        """The contacts hub room id, if the agent has one."""
        return self._hub_room_id

    @property
    def is_hub_room(self) -> bool:
        """True when this turn runs in the contacts hub room."""
        return self._hub_room_id is not None and self._hub_room_id == self._room_id

    @property
    def participants(self) -> tuple[ChatParticipant, ...]:
        """The current participant snapshot (refreshed by participant tools)."""
        return tuple(self._participants)

    @property
    def effects(self) -> tuple[ToolEffect, ...]:
        """Effects recorded by successful tool calls in this turn, in order."""
        return tuple(self._effects)

    def available_mention_handles(self) -> list[str]:
        """Handles of the participants a message can mention (never this agent)."""
        return available_handles(self._participants, agent_id=self._agent_id)

    def _record(self, effect: ToolEffect) -> None:
        self._effects.append(effect)
        if self._hooks is not None:
            self._hooks.record_effect(effect)

    def _stopped(self) -> None:
        if self._hooks is not None:
            self._hooks.execution_stopped()

    def _effective_capabilities(
        self, capabilities: Iterable[Capability | str] | None
    ) -> frozenset[Capability]:
        if capabilities is None:
            capabilities = self._capabilities
        caps = (
            DEFAULT_CAPABILITIES
            if capabilities is None
            else frozenset(Capability(c) for c in capabilities)
        )
        if self.is_hub_room:
            caps = caps | {Capability.CONTACTS}
        return caps - self._unserved
