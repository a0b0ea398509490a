"""REST calls by retry class: the writes that must never be re-sent after an
ambiguous failure, and the idempotent reads and marks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from band_trio.wire.models import MentionRequest
from band_trio.wire.rest import RestClient

from .rest_mock import MEMORY, ROOM, TASK

STATUS = {"id": "msg-1", "status": "processing", "attempt_number": 1, "success": True}
SENT = {"id": "msg-2", "success": True, "recipients": []}

Call = Callable[[RestClient], Awaitable[Any]]

# Non-idempotent writes: never re-sent after an ambiguous failure.
WRITES: list[tuple[str, Call, Any]] = [
    ("send_message", lambda r: r.send_message("room-1", "x", [MentionRequest(id="u")]), SENT),
    (
        "send_event",
        lambda r: r.send_event("room-1", "x", "thought"),
        {"id": "e", "message_type": "thought", "success": True},
    ),
    ("create_chat", lambda r: r.create_chat(title="t"), ROOM),
    (
        "add_participant",
        lambda r: r.add_participant("room-1", "a"),
        {"id": "a", "role": "member", "status": "active", "type": "Agent"},
    ),
    ("create_task", lambda r: r.create_task("room-1", "s"), TASK),
    (
        "create_memory",
        lambda r: r.create_memory(
            "c", system="working", type="episodic", segment="agent", thought="t"
        ),
        MEMORY,
    ),
    ("add_contact", lambda r: r.add_contact("bob"), {"id": "c", "status": "pending"}),
    ("supersede_memory", lambda r: r.supersede_memory("mem-1"), MEMORY),
    ("archive_memory", lambda r: r.archive_memory("mem-1"), MEMORY),
    (
        "remove_participant",
        lambda r: r.remove_participant("room-1", "a"),
        {"id": "a", "role": "member", "status": "active", "type": "Agent"},
    ),
    ("remove_contact", lambda r: r.remove_contact(handle="bob"), {"status": "removed"}),
    (
        "respond_contact_request",
        lambda r: r.respond_contact_request("approve", handle="bob"),
        {"id": "r", "status": "approved"},
    ),
    ("update_task", lambda r: r.update_task("room-1", "1", comment="c"), TASK),
]

# Idempotent requests: retried after any retryable failure.
IDEMPOTENT: list[tuple[str, Call, Any]] = [
    ("get_chat", lambda r: r.get_chat("room-1"), ROOM),
    ("update_chat", lambda r: r.update_chat("room-1", title="t"), ROOM),
    ("set_board", lambda r: r.set_board("room-1", goal_title="g"), {"chat_room_id": "room-1"}),
    ("mark_processing", lambda r: r.mark_processing("room-1", "msg-1"), STATUS),
    # A mark repeated after it landed changes nothing (it is refused, 422).
    ("mark_processed", lambda r: r.mark_processed("room-1", "msg-1"), STATUS),
    ("mark_failed", lambda r: r.mark_failed("room-1", "msg-1", "e"), STATUS),
    (
        "upload_file",
        lambda r: r.upload_file("room-1", b"bytes", filename="f.txt"),
        {
            "id": "f",
            "name": "f.txt",
            "content_type": "text/plain",
            "bytes": 5,
            "sha256": "0" * 64,
            "has_thumb": False,
        },
    ),
]
