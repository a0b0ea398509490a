"""A message read over REST (``/next``, ``/messages``) as the live push carries it.

The backlog and the live path must run the same turn for the same message, so
a REST message is turned into the :class:`~band_trio.wire.events.MessageCreated`
event the WebSocket would have delivered, validated by the same decoder.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from band_trio.wire.events import MessageCreated, decode_event
from band_trio.wire.models import ChatMessage

__all__ = ["event_from_rest"]


def event_from_rest(room_id: str, msg: ChatMessage) -> MessageCreated:
    """A REST message as the live push would carry it.

    Raises:
        InvalidEventError: the message cannot be a turn trigger.
    """
    metadata: dict[str, Any] = dict(msg.metadata or {})
    mentions = []
    for raw in metadata.get("mentions") or ():
        if isinstance(raw, Mapping) and isinstance(raw.get("id"), str) and raw["id"]:
            item = {k: v for k, v in raw.items() if v is not None}
            if not isinstance(item.get("username"), str):
                name = raw.get("handle") or raw.get("name") or raw["id"]
                item["username"] = name if isinstance(name, str) else raw["id"]
            mentions.append(item)
    metadata["mentions"] = mentions
    metadata.setdefault("status", "sent")
    payload = {
        "id": msg.id,
        "content": msg.content,
        "message_type": msg.message_type,
        "sender_id": msg.sender_id,
        "sender_type": msg.sender_type,
        "sender_name": msg.sender_name,
        "chat_room_id": msg.chat_room_id,
        "inserted_at": msg.inserted_at or "",
        "updated_at": msg.updated_at or msg.inserted_at or "",
        "metadata": metadata,
        "attachments": [dict(a.extra, **_attachment_fields(a)) for a in msg.attachments],
    }
    ev = decode_event(f"chat_room:{room_id}", "message_created", payload)
    assert isinstance(ev, MessageCreated)
    return ev


def _attachment_fields(a: Any) -> dict[str, Any]:
    fields = attrs.asdict(a, recurse=False)
    fields.pop("extra", None)
    return fields
