"""Who is on the local platform and where: principals, rooms, memberships.

:class:`Directory` holds every user, agent, room, contact and memory record of
the platform and implements the rules about principals and rooms as plain
synchronous methods (no I/O, no clock but the injected one): they validate
untrusted input, mutate the records, return the JSON ``data`` of the answer,
and queue the WebSocket pushes the change causes in :attr:`Directory.pushes`
(the server drains and delivers them). A rule violation raises a
:class:`~band_trio.local.refusal.RequestRefusedError` with the platform's status, code and
details. :class:`~band_trio.local.store.PlatformState` adds the message flow on
top of it.

Where the platform's documented behaviour leaves a rule open, the local
platform chooses (and tests):

* membership: every agent endpoint answers 404 for a room the caller is not in;
  a member may add members, owner/admin may add admins, only an owner adds
  owners; removal needs owner/admin (a user may remove itself or its agents);
  who may be added is :meth:`Directory.recruitable`.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Iterable, Mapping

import attrs

from band_trio._terminal import control_character
from band_trio.local._input import Obj
from band_trio.local.model import (
    JSON,
    AgentRecord,
    ContactRecord,
    ContactRequestRecord,
    Membership,
    Memory,
    Message,
    Principal,
    Push,
    RoomRecord,
    UserRecord,
    new_id,
    new_key,
    now_ts,
    slugify,
)
from band_trio.local.refusal import forbidden, invalid, not_found

__all__ = ["ACTIVITY_TTL", "FEATURE_FLAGS", "ChangedRecords", "Directory"]

MAX_TITLE_CHARS = 120
ROLES = ("owner", "admin", "member")
ACTIVITY_TTL = 10.0  # seconds a working:true report stays in effect
FEATURE_FLAGS = {"ff_file_transfer": True, "ff_room_tasks": True}

_HANDLE_RE = re.compile(r"[a-z0-9][a-z0-9_.-]{0,38}")


def check_name(name: str, what: str) -> None:
    """Refuse a display name holding a control or bidi character: names are
    shown in every participant's room list and terminal.

    Raises:
        ValueError: ``name`` holds such a character (named in the message).
    """
    found = control_character(name)
    if found is not None:
        raise ValueError(f"{what} must not contain control characters ({found!r})")


@attrs.define
class ChangedRecords:
    """The messages and memories changed since a persistence layer last took
    them (:meth:`Directory.take_changes`).

    Only these two collections grow without bound, so only they are tracked
    one record at a time; the other records are few enough to be compared
    whole when they are saved.

    Attributes:
        messages: changed messages by id (new ones and delivery changes).
        memories: ids of memories created, changed or deleted.
    """

    messages: dict[str, Message] = attrs.Factory(dict)
    memories: set[str] = attrs.Factory(set)


class Directory:
    """The principals and rooms of the platform, and the rules that change them.

    Args:
        clock: monotonic seconds, used for activity expiry and rate limits.
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.users: dict[str, UserRecord] = {}
        self.agents: dict[str, AgentRecord] = {}
        self.rooms: dict[str, RoomRecord] = {}
        self.contacts: dict[str, ContactRecord] = {}
        self.contact_requests: dict[str, ContactRequestRecord] = {}
        self.memories: dict[str, Memory] = {}
        self.bulk_jobs: dict[str, JSON] = {}
        self.online: dict[str, int] = {}
        self.delegation_log: dict[str, list[float]] = {}
        self.delegation_per_message: dict[str, int] = {}
        self.pushes: list[Push] = []
        self.clock = clock
        self._by_key: dict[str, str] = {}
        self._by_handle: dict[str, str] = {}
        self._seq = itertools.count(1)
        # None until a persistence layer asks (track_changes): a platform kept
        # in memory pays one attribute test per change, nothing more.
        self._changed: ChangedRecords | None = None

    def next_seq(self) -> int:
        """The next value of the platform-wide ordering counter."""
        return next(self._seq)

    # ------------------------------------------------------------------ change tracking

    def track_changes(self) -> None:
        """Start recording changed messages and memories (see :meth:`take_changes`)."""
        if self._changed is None:
            self._changed = ChangedRecords()

    def take_changes(self) -> ChangedRecords:
        """The messages and memories changed since the last call (empty when not
        tracking)."""
        changed = self._changed
        if changed is None:
            return ChangedRecords()
        self._changed = ChangedRecords()
        return changed

    def message_changed(self, message: Message) -> None:
        """Note that ``message`` was created or changed (for a persistence layer)."""
        if self._changed is not None:
            self._changed.messages[message.id] = message

    def memory_changed(self, memory_id: str) -> None:
        """Note that a memory was created, changed or deleted (for a persistence layer)."""
        if self._changed is not None:
            self._changed.memories.add(memory_id)

    # ------------------------------------------------------------------ restoring

    def restore_principal(self, principal: Principal) -> None:
        """Add a user or agent read back from storage, with its key and handle."""
        if isinstance(principal, AgentRecord):
            self.agents[principal.id] = principal
        else:
            self.users[principal.id] = principal
        self._by_key[principal.api_key] = principal.id
        self._by_handle[principal.handle.lower()] = principal.id

    def restore_seq(self, top: int) -> None:
        """Continue the ordering counter after ``top``, the highest value stored
        (call it on a state being filled from storage, before any change)."""
        self._seq = itertools.count(top + 1)

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
    ) -> UserRecord:
        """Create a user account (a human with a user API key).

        Raises:
            ValueError: the handle is malformed or taken, or the name holds a
                control character.
        """
        handle = handle.lower()
        # fullmatch: with match() and "$" a handle ending in a newline passed.
        if not _HANDLE_RE.fullmatch(handle):
            raise ValueError(f"invalid user handle {handle!r}")
        check_name(name, "a user's name")
        if handle in self._by_handle:
            raise ValueError(f"handle {handle!r} is taken")
        first, _, last = name.partition(" ")
        ts = now_ts()
        user = UserRecord(
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
        owner: UserRecord,
        name: str,
        description: str,
        *,
        feature_flags: Mapping[str, bool] | None = None,
    ) -> AgentRecord:
        """Register an agent owned by ``owner``; its handle is ``<owner>/<slug>``.

        ``feature_flags`` is what its ``/me`` reports (default
        :data:`FEATURE_FLAGS`: every feature served).
        """
        check_name(name, "an agent's name")
        base = slugify(name)
        slug = base
        for n in itertools.count(2):
            if f"{owner.handle}/{slug}" not in self._by_handle:
                break
            slug = f"{base}-{n}"
        ts = now_ts()
        agent = AgentRecord(
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
        if isinstance(principal, AgentRecord):
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

    def agent_me(self, agent: AgentRecord) -> JSON:
        """AgentMe (``GET /me``)."""
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
        owner_id = actor.owner_id if isinstance(actor, AgentRecord) else actor.id
        for agent in self.agents.values():
            if agent.owner_id == owner_id or agent.is_global:
                out[agent.id] = "registry"
        if isinstance(actor, AgentRecord):
            out[actor.owner_id] = "registry"
        for contact_id in self.contact_ids(actor.id):
            out[contact_id] = "contact"
        out.pop(actor.id, None)
        return out

    def peer_json(self, principal: Principal, source: str, is_contact: bool) -> JSON:
        """Peer (``GET /peers``)."""
        out: JSON = {
            "id": principal.id,
            "name": principal.name,
            "handle": principal.handle,
            "type": principal.kind,
            "is_contact": is_contact,
            "online": self.is_online(principal.id),
            "source": source,
        }
        if isinstance(principal, AgentRecord):
            out["description"] = principal.description
            out["is_external"] = False
            out["listed_in_directory"] = principal.listed_in_directory
            out["tags"] = list(principal.tags)
        return out

    def peers(
        self, actor: Principal, *, not_in_chat: str | None, kind: str | None = None
    ) -> list[JSON]:
        """Peers of ``actor``, ordered by name (``GET /peers`` and ``/me/peers``)."""
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

    def room_for(self, actor: Principal, room_id: str) -> RoomRecord:
        """The room, if ``actor`` participates in it; 404 otherwise (existence hiding)."""
        room = self.rooms.get(room_id)
        if room is None or actor.id not in room.members:
            raise not_found("chat room")
        return room

    def rooms_of(self, principal_id: str) -> list[RoomRecord]:
        """Rooms the principal participates in, oldest first."""
        return [room for room in self.rooms.values() if principal_id in room.members]

    def room_json(self, room: RoomRecord) -> JSON:
        """ChatRoom."""
        return {
            "id": room.id,
            "title": room.title,
            "task_id": room.task_id,
            "inserted_at": room.inserted_at,
            "updated_at": room.updated_at,
        }

    def room_event_json(self, room: RoomRecord) -> JSON:
        """The five-field room projection of ``room_added``/``room_removed`` (the same five fields as ``ChatRoom``)."""
        return self.room_json(room)

    def me_room_json(self, room: RoomRecord, viewer: Principal) -> JSON:
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
                counts[task.overall_status()] += 1
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

    def create_room(self, actor: Principal, body: Obj | None) -> RoomRecord:
        """Create a room owned by ``actor`` (``POST /chats`` and ``POST /me/chats``)."""
        chat = body.obj("chat") if body is not None else None
        title: str | None = None
        task_id: str | None = None
        if chat is not None:
            title = chat.str_("title")
            task_id = chat.str_("task_id")
            if title is not None:
                title = self._check_title(title, chat.at("title"), allow_blank=True)
        ts = now_ts()
        room = RoomRecord(
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
        if control_character(title) is not None:
            raise invalid(pointer, "must not contain control or bidi characters")
        title = title.strip()
        if not title:
            if allow_blank:
                return None
            raise invalid(pointer, "can't be blank")
        if len(title) > MAX_TITLE_CHARS:
            raise invalid(pointer, f"is too long (maximum is {MAX_TITLE_CHARS} characters)")
        return title

    def rename_room(self, actor: Principal, room_id: str, body: Obj) -> RoomRecord:
        """Rename (``PATCH /chats/{room}``): only the room's owner participant."""
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
                    self.queue_push(f"user_rooms:{user_id}", "room_updated", payload, [user_id])
        return room

    def _user_members(self, room: RoomRecord) -> list[str]:
        return [pid for pid, m in room.members.items() if m.type == "User"]

    def _join(self, room: RoomRecord, principal: Principal, role: str) -> Membership:
        membership = Membership(
            participant_id=principal.id, type=principal.kind, role=role, joined_at=now_ts()
        )
        room.members[principal.id] = membership
        if isinstance(principal, AgentRecord):
            room.inbox.setdefault(principal.id, [])
            room.inbox_floor.setdefault(principal.id, 0)
            room.context.setdefault(principal.id, [])
        topic = "agent_rooms" if isinstance(principal, AgentRecord) else "user_rooms"
        self.queue_push(
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
        if isinstance(principal, AgentRecord):
            out["description"] = principal.description
        if details:
            out["is_external"] = False
            out["connection_status"] = "connected" if out["online"] else "disconnected"
        return out

    def participants(self, actor: Principal, room_id: str, *, details: bool = False) -> list[JSON]:
        """The room roster (``GET /chats/{room}/participants``)."""
        room = self.room_for(actor, room_id)
        return [self.participant_json(m, details=details) for m in room.members.values()]

    def add_participant(self, actor: Principal, room_id: str, body: Obj) -> JSON:
        """Add a participant (``POST /chats/{room}/participants``): any participant may add a member; adding an
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
        if isinstance(principal, AgentRecord):
            payload["description"] = principal.description
        payload["is_external"] = False
        self.queue_push(
            f"room_participants:{room.id}", "participant_added", payload, list(room.members)
        )
        return added

    def remove_participant(self, actor: Principal, room_id: str, participant_id: str) -> JSON:
        """Remove a participant (``DELETE /chats/{room}/participants/{id}``): the acting participant must be owner or admin
        (a user may also remove itself or its own agents)."""
        room = self.room_for(actor, room_id)
        membership = room.members.get(participant_id)
        if membership is None:
            raise not_found("participant")
        acting_role = room.members[actor.id].role
        own = participant_id == actor.id or (
            isinstance(actor, UserRecord)
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
        self.queue_push(
            f"room_participants:{room.id}", "participant_removed", payload, list(room.members)
        )
        del room.members[participant_id]
        room.stopped.discard(participant_id)
        room.activity.pop(participant_id, None)
        room.updated_at = now_ts()
        topic = "agent_rooms" if membership.type == "Agent" else "user_rooms"
        self.queue_push(
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
        self.queue_push(
            f"room_participants:{room.id}", "room_deleted", {"id": room.id}, list(room.members)
        )
        for user_id in self._user_members(room):
            self.queue_push(
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
            self.queue_push(
                f"room_participants:{room.id}", "participant_removed", payload, list(room.members)
            )
            del room.members[agent_id]
            room.stopped.discard(agent_id)
            self.queue_push(
                f"agent_rooms:{agent_id}", "room_removed", self.room_event_json(room), [agent_id]
            )
        for contact in [c for c in self.contacts.values() if agent_id in (c.a_id, c.b_id)]:
            del self.contacts[contact.id]
        del self.agents[agent_id]
        self._by_key.pop(agent.api_key, None)
        self._by_handle.pop(agent.handle.lower(), None)

    # ------------------------------------------------------------------ pushes

    def queue_push(self, topic: str, event: str, payload: JSON, principals: Iterable[str]) -> None:
        """Queue ``event`` on ``topic`` for the live sockets of ``principals``."""
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
            if isinstance(principal, AgentRecord) and ident == principal.id:
                return None
            return "unauthorized"
        if kind in ("user_rooms", "tasks"):
            if isinstance(principal, UserRecord) and ident == principal.id:
                return None
            return "unauthorized"
        if kind in ("chat_room", "room_participants"):
            room = self.rooms.get(ident)
            if room is None or principal.id not in room.members:
                return "unauthorized"
            return None
        return "unmatched topic"
