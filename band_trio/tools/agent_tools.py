"""``AgentTools``: the room-bound tools object a turn hands to the adapter.

One instance is built per turn by the engine. Python callers use its methods
(``send_message``, ``send_event``, ...); models call the same methods through
:meth:`AgentTools.execute_tool_call`, which validates arguments against the tool
definitions and turns every failure into a :class:`ToolResult` with ``is_error``.

The REST work of the agent-level and room-level families lives beside it
(:mod:`~band_trio.tools.contact_tools`, :mod:`~band_trio.tools.memory_tools`,
:mod:`~band_trio.tools.room_file_tools`, :mod:`~band_trio.tools.task_tools`).
What stays here is one idea, the turn's tools object: the public method of
every tool (one line each for the delegated families), the posts (messages,
events, failure reports) with their reply journaling, mention resolution
against the turn's roster, the participant tools, the offered-tools gate and
the dispatch of model tool calls. It is longer than most modules because it is
the whole tool surface an adapter sees, each method documented where it is
called.

Reference: docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

import trio

from band_trio._logging import get_logger
from band_trio._tracing import span
from band_trio.adapter.capabilities import ToolEffect
from band_trio.adapter.content import is_visible, truncate_event_content
from band_trio.adapter.failures import AgentFailure
from band_trio.adapter.roster import Roster, available_handles, resolve_mention
from band_trio.adapter.tool_protocol import AgentToolsProtocol, CustomToolSet, ToolSpec
from band_trio.adapter.tool_results import ToolErrorKind, ToolResult, to_jsonable
from band_trio.adapter.turns import TurnHooks
from band_trio.errors import (
    APIStatusError,
    BandConnectionError,
    BandError,
    BandToolError,
    OutcomeUnknownError,
    PermissionDeniedError,
    RoomExecutionStoppedError,
    ToolArgumentsError,
    UnknownParticipantError,
    UnprocessableEntityError,
)
from band_trio.tools._schema import validate_params
from band_trio.tools.contact_tools import ContactTools
from band_trio.tools.definitions import (
    DEFAULT_CAPABILITIES,
    Capability,
    SchemaFormat,
    ToolCategory,
    ToolDefinition,
    get_tool_definition,
    offered_schemas,
    select_tool_definitions,
)
from band_trio.tools.memory_tools import MemoryTools
from band_trio.tools.reply_digest import reply_digest
from band_trio.tools.room_file_tools import RoomFileTools
from band_trio.tools.settled_writes import WriteLocks, collect, create_once
from band_trio.tools.task_tools import TaskTools
from band_trio.tools.unsure_posts import (
    DEFAULT_UNSURE_POST_POLICY,
    PostFinder,
    UnsurePostPolicy,
    outcome_unknown,
    settle_post,
    settle_write,
)
from band_trio.wire.models import (
    ChatParticipant,
    ChatRoom,
    EventCreated,
    MentionRequest,
    MessageSent,
    Peer,
)
from band_trio.wire.rest import RestClient

__all__ = ["EVENT_MESSAGE_TYPES", "AgentTools"]

logger = get_logger("band_trio.tools")

EVENT_MESSAGE_TYPES = frozenset(
    {"tool_call", "tool_result", "thought", "error", "task", "attention"}
)
"""Event types the platform accepts on ``POST /events`` (the platform refuses any other)."""

_PEER_PAGE_SIZE = 100
_MAX_PEER_PAGES = 100

P = ParamSpec("P")
R = TypeVar("R")


def _tool(
    name: str,
) -> Callable[
    [Callable[Concatenate[AgentTools, P], Awaitable[R]]],
    Callable[Concatenate[AgentTools, P], Awaitable[R]],
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
        fn: Callable[Concatenate[AgentTools, P], Awaitable[R]],
    ) -> Callable[Concatenate[AgentTools, P], Awaitable[R]]:
        @functools.wraps(fn)
        async def wrapper(self: AgentTools, /, *args: P.args, **kwargs: P.kwargs) -> R:
            with span(f"band.tool {name}", {"band.tool.name": name}):
                result = await fn(self, *args, **kwargs)
            if result is not None:
                self._record(effect)
            return result

        wrapper.__band_tool__ = name  # type: ignore[attr-defined]
        return wrapper

    return decorate


def _participant_from_peer(peer: Peer, role: str) -> ChatParticipant:
    return ChatParticipant(
        id=peer.id,
        role=role,
        status="active",
        type=peer.type,
        name=peer.name,
        handle=peer.handle,
        online=peer.online,
        description=peer.description,
    )


def _norm_handle(handle: str | None) -> str:
    return (handle or "").strip().lstrip("@").casefold()


def _matches(participant: Any, identifier: str) -> bool:
    """Case-insensitive match on handle (``@`` ignored), name or id."""
    wanted = identifier.strip()
    if not wanted:
        return False
    if participant.handle and _norm_handle(participant.handle) == _norm_handle(wanted):
        return True
    folded = wanted.casefold()
    name = participant.name or ""
    return name.casefold() == folded or str(participant.id).casefold() == folded


def _is_stopped(exc: APIStatusError) -> bool:
    return isinstance(exc, PermissionDeniedError) and "execution is stopped" in (
        (exc.message or "").lower()
    )


class AgentTools:
    """The platform tools, bound to one room for one turn.

    Args:
        rest: the REST client (``band_trio.wire.rest.RestClient`` or anything with
            the same methods).
        room_id: the room this turn runs in; room-bound tools act on it.
        agent_id: this agent's id (never offered as a mention target).
        participants: the room's roster snapshot; mentions resolve against it.
        hooks: the engine's turn hooks (journal replies, stopped rooms, effects).
            Without hooks, effects are only kept in :attr:`effects`.
        hub_room_id: the contacts hub room; in it the contact tools are always
            offered.
        capabilities: the capabilities this agent offers; None = the default
            (contacts). Used by :meth:`get_tool_schemas` when the call gives none.
        custom_tools: custom tools that appear after the platform tools and run
            through the same dispatcher.
        unserved: capabilities the deployment does not serve (the agent passes
            ``{Capability.FILES}`` when its ``/me`` feature flags lack
            ``ff_file_transfer: true``). Their tools are never offered, whatever
            ``capabilities``, ``include_tools`` or ``include_categories`` ask for,
            and :meth:`execute_tool_call` answers them ``NOT_OFFERED`` without
            calling the platform. Default: none.
        find_post: looks the turn's own posts up on the platform; with it, a
            message or event post whose outcome is unknown is settled inside
            the tool call (:mod:`band_trio.tools.unsure_posts`). Default: the
            hooks, when they can (the engine's can); without one such a post
            raises at once.
        unsure_posts: how long and how often such a post, or any other
            write whose outcome is unknown, is looked up.
        write_locks: the agent's creation locks, shared by its turns so that
            two creations of the same thing never take each other's result
            (:mod:`band_trio.tools.settled_writes`). Default: this object's
            own.
    """

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

    # ------------------------------------------------------------ chat tools

    def _resolve_now(self, wanted: Sequence[str]) -> list[ChatParticipant]:
        roster = Roster(self._participants)
        out: list[ChatParticipant] = []
        for identifier in wanted:
            if not isinstance(identifier, str):
                raise BandToolError(f"mention {identifier!r} must be a string")
            participant = resolve_mention(identifier, roster, agent_id=self._agent_id)
            if participant.id == self._agent_id:
                raise BandToolError(
                    f"{identifier!r} is you; mention the participants you are addressing. "
                    f"Available handles: {self._handles_text()}"
                )
            if all(p.id != participant.id for p in out):
                out.append(participant)
        if not out:
            handles = self._handles_text()
            hint = (
                f" Available handles: {handles}. Use participant handles from the list."
                if (self.available_mention_handles())
                else ""
            )
            raise BandToolError(f"At least one mention is required.{hint}")
        return out

    def _handles_text(self) -> str:
        return ", ".join(f"@{h}" for h in self.available_mention_handles()) or "(none)"

    async def _resolve_mentions(self, mentions: Iterable[str]) -> list[ChatParticipant]:
        wanted = [mentions] if isinstance(mentions, str) else list(mentions)
        try:
            return self._resolve_now(wanted)
        except UnknownParticipantError:
            pass
        # A participant may have joined after the snapshot was taken: refresh once.
        with contextlib.suppress(BandError):
            self._participants = list(await self._rest.list_participants(self._room_id))
        try:
            return self._resolve_now(wanted)
        except UnknownParticipantError as exc:
            raise BandToolError(
                f"Unknown participant {exc.identifier!r}. Available handles: {self._handles_text()}"
            ) from None

    @contextlib.contextmanager
    def _room_posts(self) -> Iterator[None]:
        """The platform's refusals of a message or event post, as the tools
        raise them: a stopped room (204, or 403 "execution is stopped") ends
        the turn and raises RoomExecutionStoppedError; a mention of someone
        not in the room is a BandToolError."""
        try:
            yield
        except RoomExecutionStoppedError:
            self._stopped()
            raise
        except PermissionDeniedError as exc:
            if _is_stopped(exc):
                self._stopped()
                raise RoomExecutionStoppedError(self._room_id) from exc
            raise
        except UnprocessableEntityError as exc:
            if "mentioned_participant_not_in_room" in (exc.message or "", exc.code):
                raise BandToolError(
                    "mentioned_participant_not_in_room: mentioned participant is not in the room"
                ) from exc
            raise

    async def _post_message(
        self,
        content: str,
        mentions: Iterable[str],
        *,
        attachment_ids: Sequence[str] | None = None,
        journal: bool = True,
    ) -> MessageSent | None:
        if not isinstance(content, str) or not is_visible(content):
            return None
        targets = await self._resolve_mentions(mentions)
        requests = [MentionRequest(id=p.id, handle=p.handle) for p in targets]
        hooks = self._hooks if journal else None
        digest = reply_digest(content)
        if hooks is not None:
            # Journaled before the post: if its outcome is never learned, the
            # runtime looks for this reply before it runs the message again.
            hooks.reply_intent(digest)
        try:
            with self._room_posts():
                sent = await self._settled(
                    lambda: self._rest.send_message(
                        self._room_id, content, requests, attachment_ids=attachment_ids
                    ),
                    digest,
                    "text",
                )
        except Exception as exc:
            # (A cancellation is no Exception: its outcome is unknown, and the
            # intent stays, as it does for a failure that may have been stored.)
            if hooks is not None and not outcome_unknown(exc):
                hooks.reply_settled(digest)
            raise
        if isinstance(sent, str):
            sent = MessageSent(id=sent, success=True)
        self._own_posts.append(sent.id)
        if hooks is not None:
            hooks.reply_sent(sent.id)
            hooks.reply_settled(digest)
        return sent

    async def _settled(
        self, send: Callable[[], Awaitable[R]], digest: str, message_type: str
    ) -> R | str:
        """``send()``, settled inside the call when its outcome is unknown
        (see :mod:`band_trio.tools.unsure_posts`): the receipt, or the id of
        the post found stored."""
        return await settle_post(
            send,
            finder=self._finder,
            digest=digest,
            message_type=message_type,
            exclude=lambda: self._own_posts,
            policy=self._unsure,
        )

    @_tool("band_send_message")
    async def send_message(
        self,
        content: str,
        mentions: Sequence[str],
        *,
        attachment_ids: Sequence[str] | None = None,
    ) -> MessageSent | None:
        """Post a chat message to the room, mentioning at least one participant.

        Mentions are handles (``@alice``, ``alice/helper``), display names or ids
        of the roster snapshot; a name missing from the snapshot triggers one
        roster refresh before failing. Once the platform accepts the message the
        engine is told (``hooks.reply_sent``) and the turn counts as replied.
        A post whose outcome is unknown (a 5xx, a reset or a timeout after
        sending) is settled inside the call: looked up on the platform and
        sent again only when it is not there (:mod:`band_trio.tools.unsure_posts`).

        Returns:
            The platform's receipt, or None when ``content`` is blank (nothing is
            posted and nothing is recorded).

        Raises:
            BandToolError: no mention, an unknown participant, or a mention the
                platform says is not in the room.
            RoomExecutionStoppedError: the room's execution is stopped; the
                engine has been told and is ending the turn.
            APIStatusError: any other refusal by the platform.
            OutcomeUnknownError: the outcome was still unknown after the
                settling time (``AgentConfig.unsure_post_timeout``), or the
                post could not be looked up (no turn hooks).
        """
        return await self._post_message(content, mentions, attachment_ids=attachment_ids)

    async def send_notice(self, content: str, mentions: Sequence[str]) -> MessageSent | None:
        """Post a message like :meth:`send_message` that does not count as the reply.

        For adapter notices ("working on it..."): no effect is recorded and the
        reply is not journaled.
        """
        return await self._post_message(content, mentions, journal=False)

    @_tool("band_send_event")
    async def send_event(
        self,
        content: str,
        message_type: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> EventCreated | None:
        """Post an event (``thought``, ``error``, ``task``, ``tool_call``, ...).

        Content over 16384 characters is cut to its head and tail around
        ``"... [truncated] ..."``. Events never need mentions and never count as
        the reply.

        Returns:
            The platform's receipt, or None when ``content`` is blank.

        Raises:
            BandToolError: ``message_type`` is not an event type the platform accepts.
            RoomExecutionStoppedError: the room's execution is stopped.
            APIStatusError: any other refusal by the platform.
        """
        if message_type not in EVENT_MESSAGE_TYPES:
            raise BandToolError(
                f"message_type must be one of {', '.join(sorted(EVENT_MESSAGE_TYPES))}; "
                f"got {message_type!r}"
            )
        if not isinstance(content, str) or not is_visible(content):
            return None
        content = truncate_event_content(content)
        body = None if metadata is None else dict(metadata)
        with self._room_posts():
            sent = await self._settled(
                lambda: self._rest.send_event(self._room_id, content, message_type, body),
                reply_digest(content),
                message_type,
            )
        if isinstance(sent, str):
            sent = EventCreated(id=sent, message_type=message_type, success=True)
        self._own_posts.append(sent.id)
        return sent

    async def send_failure(self, failure: AgentFailure) -> EventCreated | None:
        """Report ``failure`` in the room as an ``error`` event, best-effort.

        The event's content is ``failure.content`` and its metadata
        ``{"failure": {"provider", "code", "message", "detail"}}``. Once posted,
        the turn counts as reported: the runtime neither judges it a missing
        reply nor posts its own generic error event for it.

        Returns:
            The platform's receipt, or None when the post failed (logged).

        Raises:
            RoomExecutionStoppedError: the room's execution is stopped.
        """
        try:
            sent = await self.send_event(failure.content, "error", failure.metadata())
        except RoomExecutionStoppedError:
            raise
        except Exception as exc:
            logger.warning(
                "room %s: could not post the %s failure report: %r",
                self._room_id,
                failure.provider,
                exc,
            )
            return None
        if sent is not None:
            self._failure_reported = True
            if self._hooks is not None:
                self._hooks.failure_reported()
        return sent

    @property
    def failure_reported(self) -> bool:
        """True once :meth:`send_failure` posted a report in this turn."""
        return self._failure_reported

    @_tool("band_no_reply")
    async def no_reply(self, reason: str | None = None) -> dict[str, str]:
        """End the turn without posting: the latest message needs no answer.

        Makes no request; the reason is only logged.
        """
        await trio.lowlevel.checkpoint()
        logger.info("no reply in room %s: %s", self._room_id, reason or "(no reason)")
        return {"status": "no_reply"}

    async def get_participants_list(self) -> list[ChatParticipant]:
        """Fetch the roster from the platform and replace the snapshot with it."""
        fresh = await self._rest.list_participants(self._room_id)
        self._participants = list(fresh)
        return list(fresh)

    @_tool("band_get_participants")
    async def get_participants(self) -> list[dict[str, Any]]:
        """List the room's participants (and refresh the roster snapshot)."""
        fresh = await self.get_participants_list()
        return [
            {
                "id": p.id,
                "name": p.name,
                "handle": p.handle,
                "type": p.type,
                "role": p.role,
                "status": p.status,
                "online": p.online,
                "avatar_url": p.avatar_url,
            }
            for p in fresh
        ]

    @_tool("band_lookup_peers")
    async def lookup_peers(self, page: int = 1, page_size: int = 50) -> dict[str, Any]:
        """List agents and users that could be added to this room."""
        result = await self._rest.list_peers(
            page=page, page_size=page_size, not_in_chat=self._room_id
        )
        return {"data": to_jsonable(result.items), "metadata": to_jsonable(result.meta)}

    @_tool("band_add_participant")
    async def add_participant(self, identifier: str, role: str = "member") -> dict[str, Any]:
        """Add an agent or user to the room by handle, name or id.

        Raises:
            BandToolError: nobody matches ``identifier`` among the peers.
        """
        current = await self.get_participants_list()
        for p in current:
            if _matches(p, identifier):
                return {"id": p.id, "name": p.name, "role": p.role, "status": "already_in_room"}
        peer = await self._find_peer(identifier)
        if peer is None:
            raise BandToolError(
                f"Participant '{identifier}' not found. Use band_lookup_peers to find "
                "available peers."
            )
        added = await settle_write(
            lambda: self._rest.add_participant(self._room_id, peer.id, role=role),
            verify=lambda: self._roster_entry(peer.id),
            policy=self._unsure,
            what="participant addition",
        )
        self._participants.append(_participant_from_peer(peer, added.role or role))
        return {
            "id": peer.id,
            "name": peer.name or identifier,
            "handle": peer.handle,
            "role": added.role or role,
            "status": "added",
        }

    async def _roster_entry(self, participant_id: str) -> ChatParticipant | None:
        """The participant's entry in the room as the platform lists it now."""
        roster = await self._rest.list_participants(self._room_id)
        return next((p for p in roster if p.id == participant_id), None)

    async def _find_peer(self, identifier: str) -> Peer | None:
        page = 1
        while page <= _MAX_PEER_PAGES:
            result = await self._rest.list_peers(
                page=page, page_size=_PEER_PAGE_SIZE, not_in_chat=self._room_id
            )
            for peer in result.items:
                if _matches(peer, identifier):
                    return peer
            if not result.has_next:
                return None
            page += 1
        return None

    @_tool("band_remove_participant")
    async def remove_participant(self, identifier: str) -> dict[str, Any]:
        """Remove a participant from the room by handle, name or id.

        Raises:
            BandToolError: nobody in the room matches ``identifier``.
        """
        current = await self.get_participants_list()
        target = next((p for p in current if _matches(p, identifier)), None)
        if target is None:
            raise BandToolError(f"Participant '{identifier}' not found in this room.")

        async def gone() -> bool | None:
            return True if await self._roster_entry(target.id) is None else None

        await settle_write(
            lambda: self._rest.remove_participant(self._room_id, target.id),
            verify=gone,
            policy=self._unsure,
            what="participant removal",
        )
        self._participants = [p for p in self._participants if p.id != target.id]
        return {"id": target.id, "name": target.name, "status": "removed"}

    @_tool("band_create_chatroom")
    async def create_chatroom(self, task_id: str | None = None) -> str:
        """Create a room owned by this agent and return its id.

        The tools object stays bound to the current room. When the outcome is
        unknown, the room is the one new room for ``task_id`` that this agent
        owns (the agent's rooms are read before the write).
        """

        async def alike() -> list[ChatRoom]:
            return await collect(self._rest.iter_chats(), lambda r: r.task_id == task_id)

        async def owned(room: ChatRoom) -> bool:
            roster = await self._rest.list_participants(room.id)
            return any(p.id == self._agent_id and p.role == "owner" for p in roster)

        room = await create_once(
            lambda: self._rest.create_chat(task_id=task_id),
            existing=alike,
            key_of=lambda r: r.id,
            policy=self._unsure,
            locks=self._locks,
            lock_key=("room", task_id),
            what="room",
            made_here=owned,
        )
        return room.id

    # -------------------------------------------------------------- contacts

    @_tool("band_list_contacts")
    async def list_contacts(self, page: int = 1, page_size: int = 50) -> dict[str, Any]:
        """List this agent's contacts."""
        result = await self._rest.list_contacts(page=page, page_size=page_size)
        return {"data": to_jsonable(result.items), "metadata": to_jsonable(result.meta)}

    @_tool("band_add_contact")
    async def add_contact(self, handle: str, message: str | None = None) -> dict[str, Any]:
        """Send a contact request; the status is ``pending`` or ``approved``."""
        return await self._contacts.add_contact(handle, message)

    @_tool("band_remove_contact")
    async def remove_contact(
        self, handle: str | None = None, contact_id: str | None = None
    ) -> dict[str, Any]:
        """Remove a contact by handle or contact id.

        Raises:
            BandToolError: neither ``handle`` nor ``contact_id`` was given.
        """
        return await self._contacts.remove_contact(handle, contact_id)

    @_tool("band_list_contact_requests")
    async def list_contact_requests(
        self, page: int = 1, page_size: int = 50, sent_status: str = "pending"
    ) -> dict[str, Any]:
        """List received (pending) and sent contact requests."""
        result = await self._rest.list_contact_requests(
            page=page, page_size=page_size, sent_status=sent_status
        )
        return {
            "data": {
                "received": to_jsonable(result.received),
                "sent": to_jsonable(result.sent),
            },
            "metadata": to_jsonable(result.meta),
        }

    @_tool("band_respond_contact_request")
    async def respond_contact_request(
        self, action: str, handle: str | None = None, request_id: str | None = None
    ) -> dict[str, Any]:
        """Approve, reject or cancel a contact request.

        Raises:
            BandToolError: an unknown action, or neither ``handle`` nor
                ``request_id`` was given.
        """
        return await self._contacts.respond_contact_request(action, handle, request_id)

    # -------------------------------------------------------------- memories

    @_tool("band_list_memories")
    async def list_memories(
        self,
        subject_id: str | None = None,
        scope: str | None = None,
        system: str | None = None,
        type: str | None = None,
        segment: str | None = None,
        content_query: str | None = None,
        page_size: int = 50,
        status: str | None = None,
    ) -> dict[str, Any]:
        """List memories; only the filters given are sent.

        ``scope="organization"`` lists the organization's shared memories (from
        every agent of the organization, ``memory_scope=org``); any other scope
        lists this agent's own memories.

        Raises:
            BandToolError: organization memories for an agent without an
                organization.
        """
        return await self._memories.list_memories(
            subject_id=subject_id,
            scope=scope,
            system=system,
            type=type,
            segment=segment,
            content_query=content_query,
            page_size=page_size,
            status=status,
        )

    @_tool("band_store_memory")
    async def store_memory(
        self,
        content: str,
        system: str,
        type: str,
        segment: str,
        thought: str,
        scope: str,
        subject_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Store a memory.

        ``metadata`` may carry ``tags`` and ``references`` (lists of strings).

        Raises:
            BandToolError: ``type`` does not belong to ``system``, a subject memory
                without ``subject_id``, bad ``metadata``, or an organization memory
                for an agent without an organization.
        """
        return await self._memories.store_memory(
            content=content,
            system=system,
            type=type,
            segment=segment,
            thought=thought,
            scope=scope,
            subject_id=subject_id,
            metadata=metadata,
        )

    @_tool("band_get_memory")
    async def get_memory(self, memory_id: str) -> dict[str, Any]:
        """Read one memory."""
        return await self._memories.get_memory(memory_id=memory_id)

    @_tool("band_supersede_memory")
    async def supersede_memory(self, memory_id: str) -> dict[str, Any]:
        """Mark a memory superseded (soft delete)."""
        return await self._memories.supersede_memory(memory_id=memory_id)

    @_tool("band_archive_memory")
    async def archive_memory(self, memory_id: str) -> dict[str, Any]:
        """Archive a memory (hidden, restorable by a human)."""
        return await self._memories.archive_memory(memory_id=memory_id)

    # ----------------------------------------------------------------- files

    @_tool("band_list_room_files")
    async def list_room_files(self, cursor: str | None = None) -> dict[str, Any]:
        """List attachments of one page of the agent's room context."""
        return await self._files.list_room_files(cursor=cursor)

    @_tool("band_read_room_file")
    async def read_room_file(self, file_id: str) -> dict[str, Any]:
        """Read a room file: small text inline, small images as image content,
        anything else described without being downloaded.

        Raises:
            BandToolError: the file is unknown, expired or not downloadable.
        """
        return await self._files.read_room_file(file_id=file_id)

    @_tool("band_send_room_file")
    async def send_room_file(
        self,
        content: str,
        filename: str,
        mentions: Sequence[str],
        caption: str = "",
    ) -> dict[str, Any]:
        """Upload ``content`` as a text file and post it with a message.

        Raises:
            BandToolError: a non-ASCII file name, content over 1000000 bytes, no
                or unknown mentions (all checked before anything is uploaded), or
                file transfer unavailable in this room.
        """
        if not caption or not is_visible(caption):
            caption = f"Shared a file: {filename}"
        data = self._files.file_bytes(content, filename)
        await self._resolve_mentions(mentions)
        attachment = await self._files.upload(data, filename)
        sent = await self._post_message(caption, mentions, attachment_ids=[attachment.id])
        if sent is None:  # pragma: no cover - caption is visible by construction
            raise BandToolError("the file caption is blank")
        return {"attachment": to_jsonable(attachment), "message_id": sent.id}

    # ----------------------------------------------------------------- tasks

    @_tool("band_list_tasks")
    async def list_tasks(
        self, state: str | None = None, cursor: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """List tasks on the room's board (active unless ``state`` says otherwise)."""
        return await self._tasks.list_tasks(state=state, cursor=cursor, limit=limit)

    @_tool("band_create_task")
    async def create_task(
        self, subject: str, detail: str | None = None, supersedes_id: str | None = None
    ) -> dict[str, Any]:
        """Create a task on the room's board."""
        return await self._tasks.create_task(
            subject=subject, detail=detail, supersedes_id=supersedes_id
        )

    @_tool("band_get_task")
    async def get_task(self, id: str, include: str | None = None) -> dict[str, Any]:
        """Read one task (by id or board number)."""
        return await self._tasks.get_task(id=id, include=include)

    @_tool("band_update_task")
    async def update_task(
        self,
        id: str,
        status: str | None = None,
        active_form: str | None = None,
        comment: str | None = None,
        subject: str | None = None,
        detail: str | None = None,
        state: str | None = None,
    ) -> dict[str, Any]:
        """Update a task; only the fields given are sent.

        Raises:
            BandToolError: no field besides ``id`` was given.
        """
        return await self._tasks.update_task(
            id=id,
            status=status,
            active_form=active_form,
            comment=comment,
            subject=subject,
            detail=detail,
            state=state,
        )

    @_tool("band_get_task_history")
    async def get_task_history(
        self, id: str, cursor: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """Read a task's history, oldest first."""
        return await self._tasks.get_task_history(id=id, cursor=cursor, limit=limit)

    @_tool("band_get_board")
    async def get_board(self, include: str | None = None) -> dict[str, Any]:
        """Read the room's board goal."""
        return await self._tasks.get_board(include=include)

    @_tool("band_set_board")
    async def set_board(
        self, goal_title: str | None = None, goal_summary: str | None = None
    ) -> dict[str, Any]:
        """Set the room's board goal (title, summary or both).

        Raises:
            BandToolError: neither field was given.
        """
        return await self._tasks.set_board(goal_title=goal_title, goal_summary=goal_summary)

    # --------------------------------------------------------------- schemas

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

    def get_tool_schemas(
        self,
        fmt: SchemaFormat,
        *,
        capabilities: Iterable[Capability | str] | None = None,
        include_tools: Iterable[str] | None = None,
        exclude_tools: Iterable[str] | None = None,
        include_categories: Iterable[ToolCategory | str] | None = None,
        custom_tools: CustomToolSet | None = None,
    ) -> list[dict[str, Any]]:
        """The tools to offer a model, in ``"anthropic"`` or ``"openai"`` format.

        ``capabilities=None`` uses the capabilities given at construction (or the
        default set, contacts). In the hub room the contact tools are always
        included. Capabilities given as ``unserved`` at construction are always
        left out, and the include filters cannot bring their tools back. Custom
        tools (given here or at construction) come last.

        The platform tools returned are remembered as *offered*: from then on
        :meth:`execute_tool_call` refuses platform tools this object never
        offered (the official SDK runs them anyway: tools and adapters, "Weak spots" 14).

        Raises:
            ValueError: an unknown format, capability or category.
        """
        schemas, offered = offered_schemas(
            fmt,
            capabilities=self._effective_capabilities(capabilities),
            include_tools=include_tools,
            exclude_tools=exclude_tools,
            include_categories=include_categories,
            custom_tools=custom_tools if custom_tools is not None else self._custom_tools,
        )
        self._offered = (self._offered or frozenset()) | offered
        return schemas

    @property
    def offered_tools(self) -> frozenset[str] | None:
        """Platform tools a model may call through :meth:`execute_tool_call`.

        None means no restriction (beyond the ``unserved`` capabilities, which
        are always refused): no capabilities were given at construction and no
        schemas were requested from this object yet.
        """
        return self._offered

    def get_anthropic_tool_schemas(self, **kwargs: Any) -> list[dict[str, Any]]:
        """:meth:`get_tool_schemas` in Anthropic's format."""
        return self.get_tool_schemas("anthropic", **kwargs)

    def get_openai_tool_schemas(self, **kwargs: Any) -> list[dict[str, Any]]:
        """:meth:`get_tool_schemas` in OpenAI's format."""
        return self.get_tool_schemas("openai", **kwargs)

    # -------------------------------------------------------------- dispatch

    async def execute_tool_call(
        self,
        name: str,
        args: Mapping[str, Any] | None,
        *,
        custom_tools: CustomToolSet | None = None,
    ) -> ToolResult:
        """Run the tool ``name`` with ``args`` and return its result.

        Never raises, except ``trio.Cancelled``: an unknown tool, invalid
        arguments, a refusal by the tool or the platform and unexpected failures
        all come back as a :class:`ToolResult` with ``is_error`` set and a message
        a model can act on (no headers, no secrets). Custom tools (given here or
        at construction) take part in the same dispatch; a custom tool never
        shadows a platform tool.

        Cancellation:
            When the platform says the room's execution is stopped, the engine is
            told; if it cancels the turn, ``trio.Cancelled`` propagates from here.
        """
        custom = custom_tools if custom_tools is not None else self._custom_tools
        definition = get_tool_definition(name) if isinstance(name, str) else None
        custom_def: ToolSpec | None = None
        if definition is None and custom is not None and isinstance(name, str):
            custom_def = custom.get(name)
        if definition is None and custom_def is None:
            return ToolResult.error(str(name), ToolErrorKind.UNKNOWN_TOOL, f"Unknown tool: {name}")
        tool_name = str(name)
        if definition is not None and (
            definition.capability in self._unserved
            or (self._offered is not None and name not in self._offered)
        ):
            return ToolResult.error(
                tool_name,
                ToolErrorKind.NOT_OFFERED,
                f"Error executing {tool_name}: this tool is not available to you here; use "
                "only the tools you were given.",
            )
        try:
            if definition is not None:
                kwargs = self._validate(definition, args)
                method = getattr(self, tool_name.removeprefix("band_"))
                value = await method(**kwargs)
            else:
                assert custom is not None
                assert custom_def is not None
                with span(f"band.tool {tool_name}", {"band.tool.name": tool_name}):
                    value = await custom.invoke(custom_def, args, record=self._record)
        except ToolArgumentsError as exc:
            return ToolResult.error(tool_name, ToolErrorKind.INVALID_ARGUMENTS, str(exc))
        except RoomExecutionStoppedError:
            # The engine was told (hooks.execution_stopped) and cancels the turn's
            # scope; this checkpoint delivers that cancellation.
            await trio.lowlevel.checkpoint()
            return ToolResult.error(
                tool_name,
                ToolErrorKind.EXECUTION_STOPPED,
                f"Error executing {tool_name}: the room's execution is stopped; end the "
                "turn without further tool calls.",
            )
        except (BandToolError, UnknownParticipantError) as exc:
            return ToolResult.error(
                tool_name, ToolErrorKind.TOOL_ERROR, f"Error executing {tool_name}: {exc}"
            )
        except APIStatusError as exc:
            return ToolResult.error(
                tool_name, ToolErrorKind.PLATFORM_ERROR, _platform_message(tool_name, exc)
            )
        except BandConnectionError as exc:
            advice = (
                "it may have been applied anyway: check before repeating it"
                if isinstance(exc, OutcomeUnknownError)
                else "try again later"
            )
            return ToolResult.error(
                tool_name,
                ToolErrorKind.PLATFORM_ERROR,
                f"Error executing {tool_name}: the platform could not be reached "
                f"({type(exc).__name__}); {advice}.",
            )
        except BandError as exc:
            if custom_def is not None:
                return ToolResult.error(
                    tool_name, ToolErrorKind.TOOL_ERROR, f"Error executing {tool_name}: {exc}"
                )
            return ToolResult.error(
                tool_name,
                ToolErrorKind.PLATFORM_ERROR,
                f"Error executing {tool_name}: {type(exc).__name__}: {exc}",
            )
        except Exception as exc:
            if custom_def is not None:
                return ToolResult.error(
                    tool_name,
                    ToolErrorKind.TOOL_ERROR,
                    f"Error executing {tool_name}: {type(exc).__name__}: {exc}",
                )
            logger.exception("tool %s failed unexpectedly", tool_name)
            return ToolResult.error(
                tool_name,
                ToolErrorKind.INTERNAL_ERROR,
                f"Error executing {tool_name}: internal error ({type(exc).__name__}); "
                "see the agent's logs.",
            )
        return ToolResult.ok(tool_name, value)

    def _validate(self, definition: ToolDefinition, args: Any) -> dict[str, Any]:
        kwargs = validate_params(definition.name, definition.params, args)
        model = definition.input_model
        if model is not None:
            try:
                model(**kwargs)
            except ValueError as exc:
                raise ToolArgumentsError(definition.name, (str(exc),)) from None
        return kwargs


def _platform_message(tool_name: str, exc: APIStatusError) -> str:
    status = exc.status_code
    what = f"HTTP {status}"
    if exc.code:
        what += f" {exc.code}"
    detail = f": {exc.message}" if exc.message else ""
    hint = ""
    if status == 404:
        hint = " The thing you asked for does not exist or you cannot see it."
    elif status == 403:
        hint = " You are not allowed to do this."
    elif isinstance(exc, OutcomeUnknownError):
        hint = " It may have been applied anyway: check before repeating it."
    elif status == 429 or exc.retryable:
        hint = " Try again later."
    return f"Error executing {tool_name}: the platform refused the request ({what}){detail}.{hint}"


def _conforms(tools: AgentTools) -> AgentToolsProtocol:
    # Static check (mypy): AgentTools satisfies the engine's protocol.
    return tools
