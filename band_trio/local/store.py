"""The local platform's state and its core operations (sans-io).

:class:`PlatformState` holds every user, agent, room, message and delivery, and
implements the platform rules of protocol.md §4/§5 as plain synchronous methods:
they validate untrusted input, mutate the model, return the JSON ``data`` of
the answer, and queue the WebSocket pushes the change causes in
:attr:`PlatformState.pushes` (the server drains and delivers them). Rule
violations raise :class:`~band_trio.errors.APIStatusError` with the platform's
status, code and details.

Contacts, memories, tasks and files live in sibling modules that operate on
this state.

Where protocol.md leaves a rule open, the local platform chooses (and tests):

* membership: every agent endpoint answers 404 for a room the caller is not in;
  a member may add members, owner/admin may add admins, only an owner adds
  owners; removal needs owner/admin (a user may remove itself or its agents);
  who may be added is :meth:`PlatformState.recruitable`;
* ``message_created`` goes to each mention-kind agent recipient (never the
  author) and to every user in the room; ``message_updated`` (delivery changes)
  goes to users, and to agents only with ``agent_message_updates``;
  ``event_created`` goes to users only;
* ``/activity`` answers 404 only for a foreign room (not for "no active
  execution"), so a ``working: false`` sent after ``/processed`` is accepted;
* a mention's ``@handle`` in the content becomes ``@[[id]]`` (whole handles
  only, case-insensitive); mentioned participants not referenced get a token
  prepended, in mention order; tokens are made for ``reference`` mentions too;
* the human message list ignores ``since``/``after``/``before``/``around`` and
  the room list ignores ``sort_by``/``order`` (oldest first, cursor paged).
"""

from __future__ import annotations

import itertools
import json
import re
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping

from band_trio.errors import APIStatusError
from band_trio.local._input import Obj, forbidden, invalid, not_found
from band_trio.local.files import attachment_json
from band_trio.local.model import (
    JSON,
    Agent,
    Attempt,
    Contact,
    ContactRequest,
    Delivery,
    Membership,
    Memory,
    Message,
    Principal,
    Push,
    Room,
    User,
    new_id,
    new_key,
    now_ts,
    slugify,
)
from band_trio.local.tasks import find_task, overall_status

__all__ = ["MAX_CONTENT_BYTES", "PlatformState"]

MAX_CONTENT_BYTES = 512 * 1024
MAX_EVENT_CHARS = 16384
MAX_EVENT_METADATA_BYTES = 65536
MAX_TITLE_CHARS = 120
EVENT_TYPES = ("tool_call", "tool_result", "thought", "error", "task", "attention")
ROLES = ("owner", "admin", "member")
ATTENTION_KINDS = ("question", "assumption", "failure", "review")
ACTIVITY_KINDS = ("reasoning", "tool_call", "memory", "permission")
ACTIVITY_TTL = 10.0  # seconds a working:true report stays in effect
FEATURE_FLAGS = {"ff_file_transfer": True, "ff_room_tasks": True}

_TOKEN_RE = re.compile(r"@\[\[([^\[\]\s]+)\]\]")
_HANDLE_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,38}$")
_ACTIVITY_NAME_RE = re.compile(r"[^A-Za-z0-9_.:/@-]")


def is_visible(text: str) -> bool:
    """Whether ``text`` has at least one visible character (tokens aside)."""
    for ch in _TOKEN_RE.sub("", text):
        if not ch.isspace() and unicodedata.category(ch)[0] not in "CZ":
            return True
    return False


def _handle_pattern(handle: str) -> re.Pattern[str]:
    # Whole-handle match (Appendix B): "@alice/echo" is not a mention of "@alice",
    # but "@alice." at the end of a sentence is.
    return re.compile(
        r"(?<![A-Za-z0-9_])@" + re.escape(handle) + r"(?![A-Za-z0-9_/-]|\.[A-Za-z0-9_])",
        re.IGNORECASE,
    )


class PlatformState:
    """Everything the local platform knows, and the rules that change it.

    Args:
        agent_message_updates: also push ``message_updated`` to agent sockets
            (off by default: SDK 6.0.1 logs a warning per frame, Appendix B).
        clock: monotonic seconds, used for rate limits.
    """

    def __init__(
        self,
        *,
        agent_message_updates: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.users: dict[str, User] = {}
        self.agents: dict[str, Agent] = {}
        self.rooms: dict[str, Room] = {}
        self.contacts: dict[str, Contact] = {}
        self.contact_requests: dict[str, ContactRequest] = {}
        self.memories: dict[str, Memory] = {}
        self.bulk_jobs: dict[str, JSON] = {}
        self.online: dict[str, int] = {}
        self.delegation_log: dict[str, list[float]] = {}
        self.delegation_per_message: dict[str, int] = {}
        self.pushes: list[Push] = []
        self.agent_message_updates = agent_message_updates
        self.clock = clock
        self._by_key: dict[str, str] = {}
        self._by_handle: dict[str, str] = {}
        self._seq = itertools.count(1)

    def next_seq(self) -> int:
        """The next value of the platform-wide ordering counter."""
        return next(self._seq)

    # ------------------------------------------------------------------ principals

    def principal(self, principal_id: str) -> Principal | None:
        """The user or agent with this id."""
        return self.users.get(principal_id) or self.agents.get(principal_id)

    def authenticate(self, api_key: str | None) -> Principal | None:
        """The principal owning ``api_key`` (None for a missing or unknown key)."""
        if not api_key:
            return None
        principal_id = self._by_key.get(api_key)
        return None if principal_id is None else self.principal(principal_id)

    def by_handle(self, handle: str) -> Principal | None:
        """The principal with this handle (case-insensitive, leading ``@`` ignored)."""
        principal_id = self._by_handle.get(handle.lstrip("@").lower())
        return None if principal_id is None else self.principal(principal_id)

    def create_user(
        self,
        name: str,
        handle: str,
        *,
        email: str | None = None,
        organization: bool = False,
    ) -> User:
        """Create a user account (a human with a user API key).

        Raises:
            ValueError: the handle is malformed or taken.
        """
        handle = handle.lower()
        if not _HANDLE_RE.match(handle) or "/" in handle:
            raise ValueError(f"invalid user handle {handle!r}")
        if handle in self._by_handle:
            raise ValueError(f"handle {handle!r} is taken")
        first, _, last = name.partition(" ")
        ts = now_ts()
        user = User(
            id=new_id(),
            handle=handle,
            first_name=first,
            last_name=last,
            email=email or f"{handle}@local.band",
            api_key=new_key("band_u"),
            organization_id=new_id() if organization else None,
            inserted_at=ts,
            updated_at=ts,
        )
        self.users[user.id] = user
        self._by_key[user.api_key] = user.id
        self._by_handle[handle] = user.id
        return user

    def register_agent(
        self,
        owner: User,
        name: str,
        description: str,
        *,
        feature_flags: Mapping[str, bool] | None = None,
    ) -> Agent:
        """Register an agent owned by ``owner``; its handle is ``<owner>/<slug>``.

        ``feature_flags`` is what its ``/me`` reports (default
        :data:`FEATURE_FLAGS`: every feature served).
        """
        base = slugify(name)
        slug = base
        for n in itertools.count(2):
            if f"{owner.handle}/{slug}" not in self._by_handle:
                break
            slug = f"{base}-{n}"
        ts = now_ts()
        agent = Agent(
            id=new_id(),
            name=name,
            description=description,
            slug=slug,
            handle=f"{owner.handle}/{slug}",
            owner_id=owner.id,
            api_key=new_key("band_a"),
            inserted_at=ts,
            updated_at=ts,
            feature_flags=dict(FEATURE_FLAGS if feature_flags is None else feature_flags),
        )
        self.agents[agent.id] = agent
        self._by_key[agent.api_key] = agent.id
        self._by_handle[agent.handle.lower()] = agent.id
        return agent

    def organization_of(self, principal: Principal) -> str | None:
        """The organisation id of a user, or of an agent's owner."""
        if isinstance(principal, Agent):
            owner = self.users.get(principal.owner_id)
            return owner.organization_id if owner else None
        return principal.organization_id

    def is_online(self, principal_id: str) -> bool:
        """Whether the principal has a live WebSocket."""
        return self.online.get(principal_id, 0) > 0

    def set_online(self, principal_id: str, delta: int) -> None:
        """Count a socket opening (+1) or closing (-1) for presence."""
        count = self.online.get(principal_id, 0) + delta
        if count > 0:
            self.online[principal_id] = count
        else:
            self.online.pop(principal_id, None)

    def actor_json(self, principal_id: str) -> JSON:
        """A TaskActor-like ``{id, name, type, handle?}``."""
        principal = self.principal(principal_id)
        if principal is None:
            return {"id": principal_id, "name": "(deleted)", "type": "User"}
        return {
            "id": principal.id,
            "name": principal.name,
            "type": principal.kind,
            "handle": principal.handle,
        }

    # ------------------------------------------------------------------ agents

    def agent_me(self, agent: Agent) -> JSON:
        """AgentMe (#1)."""
        return {
            "id": agent.id,
            "name": agent.name,
            "description": agent.description,
            "handle": agent.handle,
            "owner_uuid": agent.owner_id,
            "inserted_at": agent.inserted_at,
            "updated_at": agent.updated_at,
            "feature_flags": dict(agent.feature_flags),
            "listed_in_directory": agent.listed_in_directory,
            "tags": list(agent.tags),
        }

    def contact_ids(self, principal_id: str) -> set[str]:
        """Ids of the principal's established contacts."""
        return {
            c.other(principal_id)
            for c in self.contacts.values()
            if principal_id in (c.a_id, c.b_id)
        }

    def recruitable(self, actor: Principal) -> dict[str, str]:
        """Who ``actor`` may bring into a room: id -> source (``registry``/``contact``).

        Agents: sibling agents, global agents, their owner, and contacts.
        Users: their own agents, global agents, and contacts.
        """
        out: dict[str, str] = {}
        owner_id = actor.owner_id if isinstance(actor, Agent) else actor.id
        for agent in self.agents.values():
            if agent.owner_id == owner_id or agent.is_global:
                out[agent.id] = "registry"
        if isinstance(actor, Agent):
            out[actor.owner_id] = "registry"
        for contact_id in self.contact_ids(actor.id):
            out[contact_id] = "contact"
        out.pop(actor.id, None)
        return out

    def peer_json(self, principal: Principal, source: str, is_contact: bool) -> JSON:
        """Peer (#2)."""
        out: JSON = {
            "id": principal.id,
            "name": principal.name,
            "handle": principal.handle,
            "type": principal.kind,
            "is_contact": is_contact,
            "online": self.is_online(principal.id),
            "source": source,
        }
        if isinstance(principal, Agent):
            out["description"] = principal.description
            out["is_external"] = False
            out["listed_in_directory"] = principal.listed_in_directory
            out["tags"] = list(principal.tags)
        return out

    def peers(
        self, actor: Principal, *, not_in_chat: str | None, kind: str | None = None
    ) -> list[JSON]:
        """Peers of ``actor``, ordered by name (#2 and ``/me/peers``)."""
        excluded: set[str] = set()
        if not_in_chat is not None:
            excluded = set(self.room_for(actor, not_in_chat).members)
        contacts = self.contact_ids(actor.id)
        rows: list[JSON] = []
        for principal_id, source in self.recruitable(actor).items():
            principal = self.principal(principal_id)
            if principal is None or principal_id in excluded:
                continue
            if kind is not None and principal.kind != kind:
                continue
            rows.append(self.peer_json(principal, source, principal_id in contacts))
        rows.sort(key=lambda row: (row["name"].lower(), row["id"]))
        return rows

    # ------------------------------------------------------------------ rooms

    def room_for(self, actor: Principal, room_id: str) -> Room:
        """The room, if ``actor`` participates in it; 404 otherwise (existence hiding)."""
        room = self.rooms.get(room_id)
        if room is None or actor.id not in room.members:
            raise not_found("chat room")
        return room

    def rooms_of(self, principal_id: str) -> list[Room]:
        """Rooms the principal participates in, oldest first."""
        return [room for room in self.rooms.values() if principal_id in room.members]

    def room_json(self, room: Room) -> JSON:
        """ChatRoom."""
        return {
            "id": room.id,
            "title": room.title,
            "task_id": room.task_id,
            "inserted_at": room.inserted_at,
            "updated_at": room.updated_at,
        }

    def room_event_json(self, room: Room) -> JSON:
        """The five-field room projection of ``room_added``/``room_removed`` (§3.4)."""
        return self.room_json(room)

    def me_room_json(self, room: Room, viewer: Principal) -> JSON:
        """MeChatRoom (human views)."""
        out = self.room_json(room)
        agents = [self.agents[pid] for pid in room.members if pid in self.agents]
        last = room.messages[-1].inserted_at if room.messages else None
        now = self.clock()
        if any(agent_id in room.stopped for agent_id in room.members):
            work_status = "stopped"
        elif any(now - r["at"] < ACTIVITY_TTL for r in room.activity.values()):
            work_status = "working"
        else:
            work_status = "idle"
        counts = dict.fromkeys(
            ("pending", "in_progress", "blocked", "in_review", "failed", "completed"), 0
        )
        for task in room.tasks:
            if task.state == "active":
                counts[overall_status(task)] += 1
        out.update(
            type=room.type,
            status=room.status,
            last_message_at=last,
            agents=[
                {"id": a.id, "name": a.name, "handle": a.handle, "type": "Agent"} for a in agents
            ],
            work_status=work_status,
            task_counts=counts,
        )
        membership = room.members.get(viewer.id)
        if membership is not None:
            out["my_role"] = membership.role
            out["my_status"] = membership.status
        return out

    def create_room(self, actor: Principal, body: Obj | None) -> Room:
        """Create a room owned by ``actor`` (#4 and ``POST /me/chats``)."""
        chat = body.obj("chat") if body is not None else None
        title: str | None = None
        task_id: str | None = None
        if chat is not None:
            title = chat.str_("title")
            task_id = chat.str_("task_id")
            if title is not None:
                title = self._check_title(title, chat.at("title"), allow_blank=True)
        ts = now_ts()
        room = Room(
            id=new_id(),
            title=title,
            task_id=task_id,
            type="direct",
            owner_id=actor.id,
            inserted_at=ts,
            updated_at=ts,
            title_locked=bool(title),
        )
        self.rooms[room.id] = room
        self._join(room, actor, "owner")
        return room

    def _check_title(self, title: str, pointer: str, *, allow_blank: bool) -> str | None:
        if any(ch in title for ch in "\n\r\x00"):
            raise invalid(pointer, "must not contain control characters")
        title = title.strip()
        if not title:
            if allow_blank:
                return None
            raise invalid(pointer, "can't be blank")
        if len(title) > MAX_TITLE_CHARS:
            raise invalid(pointer, f"is too long (maximum is {MAX_TITLE_CHARS} characters)")
        return title

    def rename_room(self, actor: Principal, room_id: str, body: Obj) -> Room:
        """Rename (#6): only the room's owner participant."""
        room = self.room_for(actor, room_id)
        chat = body.req_obj("chat")
        title = self._check_title(chat.req_str("title"), chat.at("title"), allow_blank=False)
        if room.members[actor.id].role != "owner":
            raise forbidden("only the room owner can rename it")
        if title != room.title or not room.title_locked:
            room.title = title
            room.title_locked = True
            room.updated_at = now_ts()
            members = self._user_members(room)
            if members:
                payload = self.room_json(room)
                for user_id in members:
                    self._push(f"user_rooms:{user_id}", "room_updated", payload, [user_id])
        return room

    def _user_members(self, room: Room) -> list[str]:
        return [pid for pid, m in room.members.items() if m.type == "User"]

    def _join(self, room: Room, principal: Principal, role: str) -> Membership:
        membership = Membership(
            participant_id=principal.id, type=principal.kind, role=role, joined_at=now_ts()
        )
        room.members[principal.id] = membership
        if isinstance(principal, Agent):
            room.inbox.setdefault(principal.id, [])
            room.inbox_floor.setdefault(principal.id, 0)
            room.context.setdefault(principal.id, [])
        topic = "agent_rooms" if isinstance(principal, Agent) else "user_rooms"
        self._push(
            f"{topic}:{principal.id}", "room_added", self.room_event_json(room), [principal.id]
        )
        return membership

    def participant_json(self, membership: Membership, *, details: bool = False) -> JSON:
        """ChatParticipant (or ChatParticipantDetails with ``details``)."""
        principal = self.principal(membership.participant_id)
        out: JSON = {
            "id": membership.participant_id,
            "role": membership.role,
            "status": membership.status,
            "type": membership.type,
            "name": principal.name if principal else "(deleted)",
            "online": self.is_online(membership.participant_id),
        }
        if principal is not None:
            out["handle"] = principal.handle
        if isinstance(principal, Agent):
            out["description"] = principal.description
        if details:
            out["is_external"] = False
            out["connection_status"] = "connected" if out["online"] else "disconnected"
        return out

    def participants(self, actor: Principal, room_id: str, *, details: bool = False) -> list[JSON]:
        """The room roster (#7)."""
        room = self.room_for(actor, room_id)
        return [self.participant_json(m, details=details) for m in room.members.values()]

    def add_participant(self, actor: Principal, room_id: str, body: Obj) -> JSON:
        """Add a participant (#8): any participant may add a member; adding an
        admin needs owner/admin, adding an owner needs owner. Only principals
        ``actor`` may recruit (:meth:`recruitable`) can be added."""
        room = self.room_for(actor, room_id)
        req = body.req_obj("participant")
        participant_id = req.req_str("participant_id")
        role = req.str_("role", choices=ROLES) or "member"
        acting_role = room.members[actor.id].role
        if role == "owner" and acting_role != "owner":
            raise forbidden("only the room owner can add another owner")
        if role == "admin" and acting_role not in ("owner", "admin"):
            raise forbidden("only an owner or admin can add an admin")
        principal = self.principal(participant_id)
        if principal is None:
            raise not_found("participant")
        if participant_id in room.members:
            raise invalid(req.at("participant_id"), "is already a participant of this room")
        if participant_id not in self.recruitable(actor):
            raise forbidden("you may not add this participant to the room")
        membership = self._join(room, principal, role)
        room.updated_at = now_ts()
        added = self.participant_json(membership)
        payload: JSON = {k: added[k] for k in ("id", "name", "type", "handle") if k in added}
        if isinstance(principal, Agent):
            payload["description"] = principal.description
        payload["is_external"] = False
        self._push(f"room_participants:{room.id}", "participant_added", payload, list(room.members))
        return added

    def remove_participant(self, actor: Principal, room_id: str, participant_id: str) -> JSON:
        """Remove a participant (#9): the acting participant must be owner or admin
        (a user may also remove itself or its own agents)."""
        room = self.room_for(actor, room_id)
        membership = room.members.get(participant_id)
        if membership is None:
            raise not_found("participant")
        acting_role = room.members[actor.id].role
        own = participant_id == actor.id or (
            isinstance(actor, User)
            and participant_id in self.agents
            and self.agents[participant_id].owner_id == actor.id
        )
        if acting_role not in ("owner", "admin") and not own:
            raise forbidden("only an owner or admin can remove participants")
        if membership.role == "owner" and acting_role != "owner" and not own:
            raise forbidden("an admin cannot remove the room owner")
        removed = self.participant_json(membership)
        principal = self.principal(participant_id)
        payload = {"id": participant_id, "name": removed["name"], "type": membership.type}
        if principal is not None:
            payload["handle"] = principal.handle
        self._push(
            f"room_participants:{room.id}", "participant_removed", payload, list(room.members)
        )
        del room.members[participant_id]
        room.stopped.discard(participant_id)
        room.activity.pop(participant_id, None)
        room.updated_at = now_ts()
        topic = "agent_rooms" if membership.type == "Agent" else "user_rooms"
        self._push(
            f"{topic}:{participant_id}",
            "room_removed",
            self.room_event_json(room),
            [participant_id],
        )
        return removed

    def delete_room(self, room_id: str) -> None:
        """Delete a room: ``room_deleted`` to everyone in it, then forget it."""
        room = self.rooms.pop(room_id, None)
        if room is None:
            return
        self._push(
            f"room_participants:{room.id}", "room_deleted", {"id": room.id}, list(room.members)
        )
        for user_id in self._user_members(room):
            self._push(
                f"user_rooms:{user_id}", "room_removed", self.room_event_json(room), [user_id]
            )

    def delete_agent(self, agent_id: str) -> None:
        """Forget an agent: it leaves every room (``room_removed``), its contacts
        go, and its key stops working."""
        agent = self.agents.get(agent_id)
        if agent is None:
            return
        for room in self.rooms_of(agent_id):
            payload = {"id": agent.id, "name": agent.name, "type": "Agent", "handle": agent.handle}
            self._push(
                f"room_participants:{room.id}", "participant_removed", payload, list(room.members)
            )
            del room.members[agent_id]
            room.stopped.discard(agent_id)
            self._push(
                f"agent_rooms:{agent_id}", "room_removed", self.room_event_json(room), [agent_id]
            )
        for contact in [c for c in self.contacts.values() if agent_id in (c.a_id, c.b_id)]:
            del self.contacts[contact.id]
        del self.agents[agent_id]
        self._by_key.pop(agent.api_key, None)
        self._by_handle.pop(agent.handle.lower(), None)

    # ------------------------------------------------------------------ messages

    def message_json(self, msg: Message) -> JSON:
        """ChatMessage (REST) / the ``message_created`` payload (§3.6)."""
        room = self.rooms.get(msg.room_id)
        metadata: JSON = dict(msg.metadata)
        metadata["mentions"] = [dict(m) for m in msg.mentions]
        metadata.setdefault("status", "sent")
        if msg.deliveries:
            metadata["delivery_status"] = {
                agent_id: self._delivery_json(d) for agent_id, d in msg.deliveries.items()
            }
        attachments = []
        if room is not None:
            for file_id in msg.attachment_ids:
                stored = room.files.get(file_id)
                if stored is not None:
                    attachments.append(attachment_json(stored))
        return {
            "id": msg.id,
            "content": msg.content,
            "message_type": msg.message_type,
            "sender_id": msg.sender_id,
            "sender_type": msg.sender_type,
            "sender_name": msg.sender_name,
            "chat_room_id": msg.room_id,
            "thread_id": None,
            "inserted_at": msg.inserted_at,
            "updated_at": msg.updated_at,
            "metadata": metadata,
            "attachments": attachments,
        }

    @staticmethod
    def _delivery_json(d: Delivery) -> JSON:
        out: JSON = {
            "status": d.status,
            "current_attempt": d.attempt_number,
            "delivered_at": d.delivered_at,
            "attempts": [
                {"attempt_number": a.number, "status": a.status, "error": a.error}
                for a in d.attempts
            ],
        }
        if d.processed_at is not None:
            out["processed_at"] = d.processed_at
        return out

    def _resolve_mentions(self, room: Room, msg: Obj) -> list[tuple[Principal, str]]:
        mentions = msg.list_("mentions", required=True)
        assert mentions is not None
        if not mentions:
            raise invalid(msg.at("mentions"), "at least one mention is required")
        resolved: dict[str, tuple[Principal, str]] = {}
        for index, raw in enumerate(mentions):
            item = Obj(raw, f"{msg.at('mentions')}/{index}")
            if item.has("kind") and item.raw("kind") is None:
                raise invalid(item.at("kind"), "must be omitted rather than null")
            kind = item.str_("kind", choices=("mention", "reference")) or "mention"
            mention_id = item.str_("id")
            handle = item.str_("handle")
            item.str_("name")
            principal: Principal | None
            if mention_id:
                principal = self.principal(mention_id)
                if principal is None or mention_id not in room.members:
                    raise invalid(
                        item.at("id"),
                        "mentioned_participant_not_in_room",
                        message="mentioned_participant_not_in_room",
                    )
            elif handle:
                principal = self.by_handle(handle)
                if principal is None or principal.id not in room.members:
                    raise invalid(
                        item.at("handle"), f"could not resolve @{handle.lstrip('@')} in this room"
                    )
            else:
                raise invalid(item.pointer, "needs an id or a handle")
            previous = resolved.get(principal.id)
            if previous is None or kind == "mention":
                resolved[principal.id] = (principal, kind if previous is None else "mention")
        return list(resolved.values())

    def post_message(self, actor: Principal, room_id: str, body: Obj) -> JSON:
        """Send a text message (#11 and ``POST /me/chats/{id}/messages``)."""
        room = self.room_for(actor, room_id)
        if isinstance(actor, Agent) and actor.id in room.stopped:
            raise forbidden("agent execution is stopped in this room")
        msg = body.req_obj("message")
        content = msg.req_str("content")
        if not is_visible(content):
            raise invalid(msg.at("content"), "can't be blank", message="content can't be blank")
        tokens_bytes = sum(len(m.group(0)) + 1 for m in _TOKEN_RE.finditer(content))
        if len(content.encode("utf-8", "surrogatepass")) - tokens_bytes > MAX_CONTENT_BYTES:
            raise invalid(
                msg.at("content"),
                f"is too long (maximum is {MAX_CONTENT_BYTES} bytes)",
                message="content is too long",
            )
        if msg.has("attachment_ids") and msg.raw("attachment_ids") is None:
            raise invalid(msg.at("attachment_ids"), "must be omitted rather than null")
        attachment_ids = msg.str_list("attachment_ids", max_items=10) or []
        mentions = self._resolve_mentions(room, msg)
        for file_id in attachment_ids:
            if file_id not in room.files:
                raise invalid(
                    msg.at("attachment_ids"),
                    "unknown_attachment",
                    message="unknown_attachment",
                    code="unknown_attachment",
                )
        content = self._tokenize(content, [p for p, _ in mentions])
        message = self._append_message(
            room,
            actor,
            content=content,
            message_type="text",
            mentions=[self._mention_json(p, kind) for p, kind in mentions],
            metadata={},
            attachment_ids=list(dict.fromkeys(attachment_ids)),
        )
        if isinstance(actor, User):
            crossing = [
                p
                for p, kind in mentions
                if kind == "mention" and isinstance(p, Agent) and p.owner_id != actor.id
            ]
            if crossing:
                message.metadata["delegation"] = {
                    "version": 1,
                    "message_id": message.id,
                    "minted_at": message.inserted_at,
                    "originator": {
                        "uuid": actor.id,
                        "handle": actor.handle,
                        "display_name": actor.name,
                    },
                    "hop": None,
                }
        for principal, kind in mentions:
            if isinstance(principal, Agent) and principal.id != actor.id:
                room.context.setdefault(principal.id, []).append(message)
            if kind == "mention" and isinstance(principal, Agent) and principal.id != actor.id:
                inbox = room.inbox.setdefault(principal.id, [])
                message.deliveries[principal.id] = Delivery(
                    agent_id=principal.id, position=len(inbox), delivered_at=message.inserted_at
                )
                inbox.append(message)
        audience = set(message.deliveries) | set(self._user_members(room))
        if audience:
            self._push(
                f"chat_room:{room.id}", "message_created", self.message_json(message), audience
            )
        recipients = []
        for principal, kind in mentions:
            if kind == "mention":
                recipients.append(
                    {"id": principal.id, "handle": principal.handle, "name": principal.name}
                )
        return {"id": message.id, "success": True, "recipients": recipients}

    @staticmethod
    def _mention_json(principal: Principal, kind: str) -> JSON:
        out: JSON = {"id": principal.id, "handle": principal.handle, "name": principal.name}
        if kind != "mention":
            out["kind"] = kind
        return out

    @staticmethod
    def _tokenize(content: str, mentioned: list[Principal]) -> str:
        """Turn ``@handle`` into ``@[[id]]`` (whole handles only) and prepend a
        token for every mentioned participant the content does not reference (§5.8)."""
        referenced = set(_TOKEN_RE.findall(content))
        for principal in sorted(mentioned, key=lambda p: -len(p.handle)):
            pattern = _handle_pattern(principal.handle)
            content, count = pattern.subn(f"@[[{principal.id}]]", content)
            if count:
                referenced.add(principal.id)
        prefix = "".join(f"@[[{p.id}]] " for p in mentioned if p.id not in referenced)
        return prefix + content

    def _append_message(
        self,
        room: Room,
        sender: Principal,
        *,
        content: str,
        message_type: str,
        mentions: list[JSON],
        metadata: JSON,
        attachment_ids: list[str],
    ) -> Message:
        ts = now_ts()
        message = Message(
            id=new_id(),
            seq=self.next_seq(),
            room_id=room.id,
            content=content,
            message_type=message_type,
            sender_id=sender.id,
            sender_type=sender.kind,
            sender_name=sender.name,
            mentions=mentions,
            metadata=metadata,
            attachment_ids=attachment_ids,
            inserted_at=ts,
            updated_at=ts,
        )
        room.messages.append(message)
        room.by_id[message.id] = message
        room.updated_at = ts
        if isinstance(sender, Agent):
            room.context.setdefault(sender.id, []).append(message)
        return message

    def post_event(self, agent: Agent, room_id: str, body: Obj) -> JSON:
        """Post a non-text event (#16); never delivered, never needs mentions."""
        room = self.room_for(agent, room_id)
        if agent.id in room.stopped:
            raise forbidden("agent execution is stopped in this room")
        event = body.req_obj("event")
        content = event.req_str("content")
        message_type = event.req_str("message_type", choices=EVENT_TYPES)
        metadata_obj = event.obj("metadata")
        if not is_visible(content):
            raise invalid(event.at("content"), "can't be blank", message="content can't be blank")
        if len(content) > MAX_EVENT_CHARS:
            raise invalid(
                event.at("content"), f"is too long (maximum is {MAX_EVENT_CHARS} characters)"
            )
        metadata: JSON = dict(metadata_obj.data) if metadata_obj is not None else {}
        if len(json.dumps(metadata).encode()) > MAX_EVENT_METADATA_BYTES:
            raise invalid(
                event.at("metadata"), f"is too large (maximum is {MAX_EVENT_METADATA_BYTES} bytes)"
            )
        metadata.pop("delegation", None)
        metadata.pop("delivery_status", None)
        metadata.pop("mentions", None)
        if message_type == "attention" and metadata_obj is not None:
            metadata_obj.req_str("kind", choices=ATTENTION_KINDS)
            task_ref = metadata_obj.raw("task_id")
            if task_ref is not None and (
                not isinstance(task_ref, str | int)
                or isinstance(task_ref, bool)
                or find_task(room, task_ref) is None
            ):
                raise invalid(metadata_obj.at("task_id"), "must be a task of this room")
        elif message_type == "attention":
            raise invalid(f"{event.at('metadata')}/kind", "is required")
        message = self._append_message(
            room,
            agent,
            content=content,
            message_type=message_type,
            mentions=[],
            metadata=metadata,
            attachment_ids=[],
        )
        users = self._user_members(room)
        if users:
            self._push(f"chat_room:{room.id}", "event_created", self.message_json(message), users)
        return {"id": message.id, "message_type": message_type, "success": True}

    def _visible_message(
        self, agent: Agent, room: Room, message_id: str
    ) -> tuple[Message, Delivery]:
        message = room.by_id.get(message_id)
        delivery = message.deliveries.get(agent.id) if message is not None else None
        if message is None or delivery is None:
            raise not_found("message")
        return message, delivery

    def _status_json(self, message: Message, delivery: Delivery) -> JSON:
        return {
            "id": message.id,
            "status": delivery.status,
            "attempt_number": delivery.attempt_number,
            "success": True,
        }

    def _delivery_changed(self, room: Room, message: Message) -> None:
        audience = set(self._user_members(room))
        if self.agent_message_updates:
            audience |= set(message.deliveries) & set(room.members)
        if audience:
            self._push(
                f"chat_room:{room.id}", "message_updated", self.message_json(message), audience
            )

    def mark_processing(self, agent: Agent, room_id: str, message_id: str) -> JSON | None:
        """Claim (#13). None means 204: the room's execution is stopped."""
        room = self.room_for(agent, room_id)
        message, delivery = self._visible_message(agent, room, message_id)
        if agent.id in room.stopped:
            return None
        if delivery.active_attempt is None:
            if delivery.status == "processed":
                delivery.processed_at = None
                floor = room.inbox_floor.get(agent.id, 0)
                room.inbox_floor[agent.id] = min(floor, delivery.position)
            delivery.attempts.append(
                Attempt(
                    number=delivery.attempt_number + 1, status="processing", started_at=now_ts()
                )
            )
            delivery.status = "processing"
            self._delivery_changed(room, message)
        return self._status_json(message, delivery)

    def _settle(
        self, agent: Agent, room_id: str, message_id: str, *, ok: bool, error: str | None
    ) -> JSON | None:
        room = self.room_for(agent, room_id)
        message, delivery = self._visible_message(agent, room, message_id)
        if agent.id in room.stopped:
            return None
        attempt = delivery.active_attempt
        if attempt is None:
            raise invalid(
                "/processing_attempt",
                "no active processing attempt for this message",
                message="the message has no active processing attempt",
            )
        ts = now_ts()
        attempt.finished_at = ts
        if ok:
            attempt.status = "success"
            delivery.status = "processed"
            delivery.processed_at = ts
        else:
            attempt.status = "failed"
            attempt.error = error
            delivery.status = "failed"
        self._delivery_changed(room, message)
        return self._status_json(message, delivery)

    def mark_processed(self, agent: Agent, room_id: str, message_id: str) -> JSON | None:
        """Complete the current attempt (#14). None means 204 (stopped)."""
        return self._settle(agent, room_id, message_id, ok=True, error=None)

    def mark_failed(
        self, agent: Agent, room_id: str, message_id: str, body: Obj | None
    ) -> JSON | None:
        """Fail the current attempt (#15). None means 204 (stopped)."""
        error = body.str_("error", max_len=65536) if body is not None else None
        return self._settle(agent, room_id, message_id, ok=False, error=error or "")

    def _actionable(self, agent_id: str, room: Room) -> Iterator[Message]:
        inbox = room.inbox.get(agent_id, [])
        floor = room.inbox_floor.get(agent_id, 0)
        # The floor only moves past processed entries; a re-claim moves it back.
        while floor < len(inbox) and inbox[floor].deliveries[agent_id].status == "processed":
            floor += 1
        room.inbox_floor[agent_id] = floor
        for message in itertools.islice(inbox, floor, None):
            if message.deliveries[agent_id].status != "processed":
                yield message

    def next_message(self, agent: Agent, room_id: str) -> JSON | None:
        """The oldest actionable message (#12); None means 204 (nothing, or stopped)."""
        room = self.room_for(agent, room_id)
        if agent.id in room.stopped:
            return None
        for message in self._actionable(agent.id, room):
            return self.message_json(message)
        return None

    def work_list(self, agent: Agent, room_id: str, status: str | None) -> list[Message]:
        """Messages delivered to ``agent`` in the room, filtered as #10 describes."""
        room = self.room_for(agent, room_id)
        if status is None:
            return list(self._actionable(agent.id, room))
        inbox = room.inbox.get(agent.id, [])
        if status == "all":
            return list(inbox)

        def keep(message: Message) -> bool:
            delivery = message.deliveries[agent.id]
            if status == "pending":
                return (
                    delivery.status in ("delivered", "failed") and delivery.active_attempt is None
                )
            return delivery.status == status

        return [m for m in inbox if keep(m)]

    def context_list(self, agent: Agent, room_id: str) -> list[Message]:
        """What the agent sent plus text messages mentioning it, oldest first (#17)."""
        room = self.room_for(agent, room_id)
        return room.context.get(agent.id, [])

    def report_activity(self, agent: Agent, room_id: str, body: Obj) -> JSON:
        """Activity (#18): echoes ``working: false`` while the room is stopped."""
        room = self.room_for(agent, room_id)
        working = body.bool_("working", required=True)
        activity = body.obj("activity")
        detail: JSON = {"kind": "reasoning"}
        if activity is not None:
            kind = activity.req_str("kind", choices=ACTIVITY_KINDS)
            name = activity.str_("name")
            if kind == "tool_call" and not name:
                raise invalid(activity.at("name"), "is required when kind is tool_call")
            detail = {"kind": kind}
            if kind == "tool_call" and name:
                detail["name"] = _ACTIVITY_NAME_RE.sub("_", name[:128])
        effective = bool(working) and agent.id not in room.stopped
        if effective:
            room.activity[agent.id] = {"working": True, "activity": detail, "at": self.clock()}
        else:
            room.activity.pop(agent.id, None)
        return {"working": effective}

    # ------------------------------------------------------------------ control

    def set_stopped(self, agent_id: str, room_id: str | None, stopped: bool) -> list[str]:
        """Flip the execution gate of (room, agent) — every room of the agent when
        ``room_id`` is None. Returns the affected room ids."""
        rooms = [self.rooms[room_id]] if room_id in self.rooms else []
        if room_id is None:
            rooms = self.rooms_of(agent_id)
        affected = []
        for room in rooms:
            if agent_id not in room.members:
                continue
            if stopped:
                room.stopped.add(agent_id)
                room.activity.pop(agent_id, None)
            else:
                room.stopped.discard(agent_id)
            affected.append(room.id)
        return affected

    def control(
        self,
        agent_id: str,
        mode: str,
        *,
        room_id: str | None = None,
        scope: str | None = None,
        reason: str | None = "user_requested",
        execution_id: str | None = None,
        correlation_id: str | None = None,
    ) -> JSON:
        """Push ``agent.control`` (all §3.3 keys); stop/play also flip the gate.

        Raises:
            APIStatusError: 404 for an unknown agent or room, 422 for a bad mode/scope.
        """
        if agent_id not in self.agents:
            raise not_found("agent")
        if mode not in ("interrupt", "stop", "play"):
            raise invalid("/mode", "must be one of: interrupt, stop, play")
        if room_id is not None and (
            room_id not in self.rooms or agent_id not in self.rooms[room_id].members
        ):
            raise not_found("chat room")
        scope = scope or ("room" if room_id is not None else "agent")
        if scope not in ("agent", "room"):
            raise invalid("/scope", "must be one of: agent, room")
        if mode in ("stop", "play"):
            self.set_stopped(agent_id, room_id, mode == "stop")
        payload: JSON = {
            "type": "agent.control",
            "mode": mode,
            "scope": scope,
            "agent_id": agent_id,
            "execution_id": execution_id,
            "room_id": room_id,
            "correlation_id": correlation_id if correlation_id is not None else f"ctl-{new_id()}",
        }
        if reason is not None:
            payload["reason"] = reason
        self._push(f"agent_control:{agent_id}", "agent.control", payload, [agent_id])
        return payload

    # ------------------------------------------------------------------ pushes

    def _push(self, topic: str, event: str, payload: JSON, principals: Iterable[str]) -> None:
        self.pushes.append(Push(topic, event, payload, frozenset(principals)))

    def drain_pushes(self) -> list[Push]:
        """Take every queued push (the server delivers them in order)."""
        pushes, self.pushes = self.pushes, []
        return pushes

    def may_join(self, principal: Principal, topic: str) -> str | None:
        """Why ``principal`` may not join ``topic`` (None when it may)."""
        kind, sep, ident = topic.partition(":")
        if not sep or not ident:
            return "unmatched topic"
        if kind in ("agent_control", "agent_rooms", "agent_contacts"):
            if isinstance(principal, Agent) and ident == principal.id:
                return None
            return "unauthorized"
        if kind in ("user_rooms", "tasks"):
            if isinstance(principal, User) and ident == principal.id:
                return None
            return "unauthorized"
        if kind in ("chat_room", "room_participants"):
            room = self.rooms.get(ident)
            if room is None or principal.id not in room.members:
                return "unauthorized"
            return None
        return "unmatched topic"

    # ------------------------------------------------------------------ snapshot

    def snapshot(self) -> JSON:
        """A JSON view of the whole state for tests (no API keys, no file bytes)."""
        return {
            "users": [
                {"id": u.id, "handle": u.handle, "name": u.name, "online": self.is_online(u.id)}
                for u in self.users.values()
            ],
            "agents": [
                {
                    "id": a.id,
                    "handle": a.handle,
                    "name": a.name,
                    "owner_id": a.owner_id,
                    "online": self.is_online(a.id),
                }
                for a in self.agents.values()
            ],
            "rooms": [
                {
                    **self.room_json(room),
                    "participants": [self.participant_json(m) for m in room.members.values()],
                    "stopped_agents": sorted(room.stopped),
                    "messages": [self.message_json(m) for m in room.messages],
                }
                for room in self.rooms.values()
            ],
            "contacts": [
                {"id": c.id, "a_id": c.a_id, "b_id": c.b_id} for c in self.contacts.values()
            ],
            "contact_requests": [
                {
                    "id": r.id,
                    "requester_id": r.requester_id,
                    "recipient_id": r.recipient_id,
                    "status": r.status,
                }
                for r in self.contact_requests.values()
            ],
            "memories": len(self.memories),
        }

    def check(self, condition: bool, error: APIStatusError) -> None:
        """Raise ``error`` unless ``condition`` holds."""
        if not condition:
            raise error

    def require_user(self, principal: Principal) -> User:
        """``principal`` as a user; 403 for agent keys on human endpoints."""
        if not isinstance(principal, User):
            raise forbidden("this endpoint needs a user API key")
        return principal

    def require_agent(self, principal: Principal) -> Agent:
        """``principal`` as an agent; 403 for user keys on agent endpoints."""
        if not isinstance(principal, Agent):
            raise forbidden("this endpoint needs an agent API key")
        return principal
