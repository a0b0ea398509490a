"""``AgentTools``: the room-bound tools object a turn hands to the adapter.

One instance is built per turn by the engine. Python callers use its methods
(``send_message``, ``send_event``, ...); models call the same methods through
:meth:`AgentTools.execute_tool_call`, which validates arguments against the tool
definitions and turns every failure into a :class:`ToolResult` with ``is_error``.

The class is put together from private parts: ``_tools_core`` holds the turn's
state (room, roster, hooks, effects) and the mark of a tool method,
``_family_tools`` the public methods of the delegated families (contacts,
memories, room files, tasks, each a few lines over the REST work in
:mod:`~band_trio.tools.contact_tools`, :mod:`~band_trio.tools.memory_tools`,
:mod:`~band_trio.tools.room_file_tools`, :mod:`~band_trio.tools.task_tools`),
and ``_tool_dispatch`` the model-facing side (the schemas offered, the
offered-tools gate, the dispatch of model tool calls). What stays here: the
posts (messages, events, failure reports, room files) with their reply
journaling, mention resolution against the turn's roster, and the participant
and room tools.

Reference: docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import trio

from band_trio._logging import get_logger
from band_trio.adapter.content import is_visible, truncate_event_content
from band_trio.adapter.failures import AgentFailure
from band_trio.adapter.roster import Roster, resolve_mention
from band_trio.adapter.tool_protocol import AgentToolsProtocol
from band_trio.adapter.tool_results import to_jsonable
from band_trio.errors import (
    APIStatusError,
    BandError,
    BandToolError,
    PermissionDeniedError,
    RoomExecutionStoppedError,
    UnknownParticipantError,
    UnprocessableEntityError,
)
from band_trio.tools._family_tools import FamilyTools
from band_trio.tools._tool_dispatch import ToolDispatch
from band_trio.tools._tools_core import platform_tool
from band_trio.tools.reply_digest import reply_digest
from band_trio.tools.settled_writes import collect, create_once
from band_trio.tools.unsure_posts import outcome_unknown, settle_post, settle_write
from band_trio.wire.models import (
    ChatMessage,
    ChatParticipant,
    ChatRoom,
    EventCreated,
    MentionRequest,
    MessageSent,
    Peer,
)

__all__ = ["EVENT_MESSAGE_TYPES", "AgentTools"]

logger = get_logger("band_trio.tools")

EVENT_MESSAGE_TYPES = frozenset(
    {"tool_call", "tool_result", "thought", "error", "task", "attention"}
)
"""Event types the platform accepts on ``POST /events`` (the platform refuses any other)."""

_PEER_PAGE_SIZE = 100
_MAX_PEER_PAGES = 100

R = TypeVar("R")


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


class AgentTools(FamilyTools, ToolDispatch):
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

    @platform_tool("band_send_message")
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

    @platform_tool("band_send_event")
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

    @platform_tool("band_no_reply")
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

    async def unprocessed_messages(self, limit: int = 100) -> list[ChatMessage]:
        """The room's messages delivered to this agent and not yet processed,
        oldest first (at most ``limit``, 1..100): what waits behind the turn.

        Not a tool: an adapter reads it to see a reply that arrives while its
        turn is still running (the runtime hands the room's messages over one
        at a time).
        """
        page = await self._rest.list_messages(self._room_id, sort_order="asc", limit=limit)
        return list(page.items)

    @platform_tool("band_get_participants")
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

    @platform_tool("band_lookup_peers")
    async def lookup_peers(self, page: int = 1, page_size: int = 50) -> dict[str, Any]:
        """List agents and users that could be added to this room."""
        result = await self._rest.list_peers(
            page=page, page_size=page_size, not_in_chat=self._room_id
        )
        return {"data": to_jsonable(result.items), "metadata": to_jsonable(result.meta)}

    @platform_tool("band_add_participant")
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

    @platform_tool("band_remove_participant")
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

    @platform_tool("band_create_chatroom")
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

    @platform_tool("band_send_room_file")
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


def _conforms(tools: AgentTools) -> AgentToolsProtocol:
    # Static check (mypy): AgentTools satisfies the engine's protocol.
    return tools
