"""The local platform's state: the message flow on top of the directory (sans-io).

:class:`PlatformState` is the whole in-memory platform. Its base,
:class:`~band_trio.local.directory.Directory`, holds the principals, rooms and
memberships; this module adds what is said in the rooms and what becomes of
it: text messages with mentions and deliveries, events, the per-agent
processing lifecycle (claim, processed, failed), activity reports, and the
execution gate driven by ``agent.control``. Like the directory, every method is
plain synchronous code: it validates untrusted input, mutates the records,
returns the JSON ``data`` of the answer and queues the pushes the change
causes. A rule violation raises a :class:`~band_trio.local.refusal.RequestRefusedError`.

Contacts, memories, tasks, files and delegation live in sibling modules that
operate on this state.

Where the platform's documented behaviour leaves a rule open, the local
platform chooses (and tests):

* ``message_created`` goes to each mention-kind agent recipient (never the
  author) and to every user in the room; ``message_updated`` (delivery changes)
  goes to users, and to agents only with ``agent_message_updates``;
  ``event_created`` goes to users only;
* ``/activity`` answers 404 only for a foreign room (not for "no active
  execution"), so a ``working: false`` sent after ``/processed`` is accepted;
* a mention's ``@handle`` in the content becomes ``@[[id]]`` (whole handles
  only, case-insensitive); mentioned participants not referenced get a token
  prepended, in mention order; tokens are made for ``reference`` mentions too.
"""

from __future__ import annotations

import itertools
import re
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator

from band_trio.local._input import Obj, json_longer_than
from band_trio.local.directory import ACTIVITY_TTL, Directory
from band_trio.local.model import (
    JSON,
    AgentRecord,
    AttemptRecord,
    Delivery,
    Message,
    Principal,
    RoomRecord,
    UserRecord,
    new_id,
    now_ts,
)
from band_trio.local.refusal import forbidden, invalid, not_found

__all__ = ["ACTIVITY_TTL", "MAX_CONTENT_BYTES", "PlatformState"]

MAX_CONTENT_BYTES = 512 * 1024
MAX_EVENT_CHARS = 16384
MAX_EVENT_METADATA_BYTES = 65536
EVENT_TYPES = ("tool_call", "tool_result", "thought", "error", "task", "attention")
ATTENTION_KINDS = ("question", "assumption", "failure", "review")
ACTIVITY_KINDS = ("reasoning", "tool_call", "memory", "permission")

_TOKEN_RE = re.compile(r"@\[\[([^\[\]\s]+)\]\]")
_ACTIVITY_NAME_RE = re.compile(r"[^A-Za-z0-9_.:/@-]")


def is_visible(text: str) -> bool:
    """Whether ``text`` has at least one visible character (tokens aside)."""
    for ch in _TOKEN_RE.sub("", text):
        if not ch.isspace() and unicodedata.category(ch)[0] not in "CZ":
            return True
    return False


def _handle_pattern(handle: str) -> re.Pattern[str]:
    # Whole-handle match: "@alice/echo" is not a mention of "@alice", but
    # "@alice." at the end of a sentence is.
    return re.compile(
        r"(?<![A-Za-z0-9_])@" + re.escape(handle) + r"(?![A-Za-z0-9_/-]|\.[A-Za-z0-9_])",
        re.IGNORECASE,
    )


class PlatformState(Directory):
    """Everything the local platform knows, and the rules that change it.

    Args:
        agent_message_updates: also push ``message_updated`` to agent sockets
            (off by default: the official SDK logs a warning for every such frame).
        clock: monotonic seconds, used for activity expiry and rate limits.
    """

    def __init__(
        self,
        *,
        agent_message_updates: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(clock=clock)
        self.agent_message_updates = agent_message_updates

    # ------------------------------------------------------------------ messages

    def message_json(self, msg: Message) -> JSON:
        """ChatMessage (REST), which is also the ``message_created`` payload."""
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
                    attachments.append(stored.attachment_json())
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

    def _resolve_mentions(self, room: RoomRecord, msg: Obj) -> list[tuple[Principal, str]]:
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
        """Send a text message (``POST /chats/{room}/messages`` and ``POST /me/chats/{id}/messages``)."""
        room = self.room_for(actor, room_id)
        if isinstance(actor, AgentRecord) and actor.id in room.stopped:
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
        if isinstance(actor, UserRecord):
            crossing = [
                p
                for p, kind in mentions
                if kind == "mention" and isinstance(p, AgentRecord) and p.owner_id != actor.id
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
            if isinstance(principal, AgentRecord) and principal.id != actor.id:
                room.context.setdefault(principal.id, []).append(message)
            if (
                kind == "mention"
                and isinstance(principal, AgentRecord)
                and principal.id != actor.id
            ):
                inbox = room.inbox.setdefault(principal.id, [])
                message.deliveries[principal.id] = Delivery(
                    agent_id=principal.id, position=len(inbox), delivered_at=message.inserted_at
                )
                inbox.append(message)
        audience = set(message.deliveries) | set(self._user_members(room))
        if audience:
            self.queue_push(
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
        token for every mentioned participant the content does not reference, so every mention is visible in the text."""
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
        room: RoomRecord,
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
        if isinstance(sender, AgentRecord):
            room.context.setdefault(sender.id, []).append(message)
        self.message_changed(message)
        return message

    def restore_room(self, room: RoomRecord, messages: Iterable[Message]) -> None:
        """Add a room read back from storage with its messages, oldest first.

        The per-agent work lists and contexts are rebuilt the way posting
        builds them: a message is in the work list of every agent it has a
        delivery for, and in the context of the agent that sent it and of
        every agent it mentions (users are never given a context).
        """
        self.rooms[room.id] = room
        for member_id, membership in room.members.items():
            if membership.type == "Agent":
                room.inbox.setdefault(member_id, [])
                room.inbox_floor.setdefault(member_id, 0)
                room.context.setdefault(member_id, [])
        for message in messages:
            room.messages.append(message)
            room.by_id[message.id] = message
            if message.sender_type == "Agent":
                room.context.setdefault(message.sender_id, []).append(message)
            for mention in message.mentions:
                mentioned = mention.get("id")
                if (
                    isinstance(mentioned, str)
                    and mentioned != message.sender_id
                    and mentioned not in self.users
                ):
                    room.context.setdefault(mentioned, []).append(message)
            for agent_id in message.deliveries:
                room.inbox.setdefault(agent_id, []).append(message)

    def post_event(self, agent: AgentRecord, room_id: str, body: Obj) -> JSON:
        """Post a non-text event (``POST /chats/{room}/events``); never delivered, never needs mentions."""
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
        if json_longer_than(metadata, MAX_EVENT_METADATA_BYTES):
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
                or room.find_task(task_ref) is None
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
            self.queue_push(
                f"chat_room:{room.id}", "event_created", self.message_json(message), users
            )
        return {"id": message.id, "message_type": message_type, "success": True}

    def _visible_message(
        self, agent: AgentRecord, room: RoomRecord, message_id: str
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

    def _delivery_changed(self, room: RoomRecord, message: Message) -> None:
        self.message_changed(message)
        audience = set(self._user_members(room))
        if self.agent_message_updates:
            audience |= set(message.deliveries) & set(room.members)
        if audience:
            self.queue_push(
                f"chat_room:{room.id}", "message_updated", self.message_json(message), audience
            )

    def mark_processing(self, agent: AgentRecord, room_id: str, message_id: str) -> JSON | None:
        """Claim (``POST /chats/{room}/messages/{id}/processing``). None means 204: the room's execution is stopped."""
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
                AttemptRecord(
                    number=delivery.attempt_number + 1, status="processing", started_at=now_ts()
                )
            )
            delivery.status = "processing"
            self._delivery_changed(room, message)
        return self._status_json(message, delivery)

    def _settle(
        self, agent: AgentRecord, room_id: str, message_id: str, *, ok: bool, error: str | None
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

    def mark_processed(self, agent: AgentRecord, room_id: str, message_id: str) -> JSON | None:
        """Complete the current attempt (``POST /chats/{room}/messages/{id}/processed``). None means 204 (stopped)."""
        return self._settle(agent, room_id, message_id, ok=True, error=None)

    def mark_failed(
        self, agent: AgentRecord, room_id: str, message_id: str, body: Obj | None
    ) -> JSON | None:
        """Fail the current attempt (``POST /chats/{room}/messages/{id}/failed``). None means 204 (stopped)."""
        error = body.str_("error", max_len=65536) if body is not None else None
        return self._settle(agent, room_id, message_id, ok=False, error=error or "")

    def _actionable(self, agent_id: str, room: RoomRecord) -> Iterator[Message]:
        inbox = room.inbox.get(agent_id, [])
        floor = room.inbox_floor.get(agent_id, 0)
        # The floor only moves past processed entries; a re-claim moves it back.
        while floor < len(inbox) and inbox[floor].deliveries[agent_id].status == "processed":
            floor += 1
        room.inbox_floor[agent_id] = floor
        for message in itertools.islice(inbox, floor, None):
            if message.deliveries[agent_id].status != "processed":
                yield message

    def next_message(self, agent: AgentRecord, room_id: str) -> JSON | None:
        """The oldest actionable message (``GET /chats/{room}/messages/next``); None means 204 (nothing, or stopped)."""
        room = self.room_for(agent, room_id)
        if agent.id in room.stopped:
            return None
        for message in self._actionable(agent.id, room):
            return self.message_json(message)
        return None

    def work_list(self, agent: AgentRecord, room_id: str, status: str | None) -> list[Message]:
        """Messages delivered to ``agent`` in the room, filtered as ``GET /chats/{room}/messages`` describes."""
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

    def context_list(self, agent: AgentRecord, room_id: str) -> list[Message]:
        """What the agent sent plus text messages mentioning it, oldest first (``GET /chats/{room}/context``)."""
        room = self.room_for(agent, room_id)
        return room.context.get(agent.id, [])

    def report_activity(self, agent: AgentRecord, room_id: str, body: Obj) -> JSON:
        """Activity (``POST /chats/{room}/activity``): echoes ``working: false`` while the room is stopped."""
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
        """Push ``agent.control``; stop and play also flip the room's execution gate.

        Every key of the payload is sent, null ones included, except a null
        ``reason``, which is left out.

        Raises:
            RequestRefusedError: 404 for an unknown agent or room, 422 for a bad mode/scope.
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
        self.queue_push(f"agent_control:{agent_id}", "agent.control", payload, [agent_id])
        return payload

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
