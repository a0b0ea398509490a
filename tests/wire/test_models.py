"""REST models: structuring, unknown keys kept, request bodies omit unset fields."""

from __future__ import annotations

import json
from typing import Any

import attrs
import cattrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from band_trio.wire import models as m
from band_trio.wire import structure, unstructure

PARTICIPANT = {
    "id": "u-1",
    "role": "member",
    "status": "active",
    "type": "User",
    "name": "Alice",
    "handle": "alice",
    "online": True,
}

MESSAGE = {
    "id": "m-1",
    "content": "@[[a-1]] hello",
    "message_type": "text",
    "sender_id": "u-1",
    "sender_type": "User",
    "sender_name": "Alice",
    "chat_room_id": "r-1",
    "inserted_at": "2026-01-01T00:00:00Z",
    "updated_at": "2026-01-01T00:00:00Z",
    "metadata": {
        "mentions": [{"id": "a-1", "handle": "alice/bot", "name": "Bot"}, "junk"],
        "delivery_status": {"a-1": {"status": "delivered"}},
    },
    "attachments": [
        {
            "id": "f-1",
            "name": "a.txt",
            "content_type": "text/plain",
            "bytes": 3,
            "sha256": "ab" * 32,
            "has_thumb": False,
            "expires_at": None,
        }
    ],
}

TASK_ACTOR = {"id": "a-1", "name": "Bot", "type": "Agent", "handle": "alice/bot"}

TASK = {
    "id": "t-1",
    "number": 1,
    "chat_room_id": "r-1",
    "subject": "Do it",
    "detail": "",
    "state": "active",
    "overall_status": "pending",
    "assignments": [
        {
            "assignee": TASK_ACTOR,
            "status": "in_progress",
            "active_form": "",
            "linked_native_id": "",
            "updated_at": "2026-01-01T00:00:00Z",
        }
    ],
    "created_by": TASK_ACTOR,
    "inserted_at": "2026-01-01T00:00:00Z",
    "updated_at": "2026-01-01T00:00:00Z",
    "history": [
        {"actor": TASK_ACTOR, "at": "2026-01-01T00:00:00Z", "event": "created", "payload": {}}
    ],
}

SAMPLES: list[tuple[type[Any], dict[str, Any]]] = [
    (
        m.AgentMe,
        {
            "id": "a-1",
            "name": "Bot",
            "handle": "alice/bot",
            "owner_uuid": "u-1",
            "inserted_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
            "feature_flags": {"ff_file_transfer": True, "ff_room_tasks": False},
            "description": "A bot",
            "tags": ["x"],
        },
    ),
    (m.ChatParticipant, PARTICIPANT),
    (
        m.ChatRoom,
        {
            "id": "r-1",
            "inserted_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
            "title": None,
            "participants": [PARTICIPANT],
            "participant_count": 1,
            "participants_truncated": False,
        },
    ),
    (
        m.Peer,
        {
            "id": "a-2",
            "name": "Other",
            "handle": "alice/other",
            "type": "Agent",
            "is_contact": False,
            "online": False,
            "source": "registry",
        },
    ),
    (m.ChatMessage, MESSAGE),
    (m.MessageSent, {"id": "m-2", "success": True, "recipients": [{"id": "a-1", "handle": "x"}]}),
    (
        m.MessageStatus,
        {"id": "m-1", "status": "processing", "attempt_number": 1, "success": True},
    ),
    (m.EventCreated, {"id": "e-1", "message_type": "thought", "success": True}),
    (m.Task, TASK),
    (
        m.Board,
        {"chat_room_id": "r-1", "goal_title": None, "goal_summary": None, "updated_by": TASK_ACTOR},
    ),
    (
        m.AgentContact,
        {"id": "c-1", "inserted_at": "2026-01-01T00:00:00Z", "type": "User", "online": None},
    ),
    (
        m.AgentMemory,
        {
            "id": "mem-1",
            "content": "likes tea",
            "inserted_at": "2026-01-01T00:00:00Z",
            "scope": "agent",
            "segment": "user",
            "system": "long_term",
            "type": "semantic",
            "source_agent_id": None,
            "metadata": {"tags": ["tea"]},
        },
    ),
    (
        m.DelegationToken,
        {
            "access_token": "secret-token",
            "token_type": "bearer",
            "expires_at": None,
            "obo": {"agent_uuid": "a-1", "audience": "aud", "originator_uuid": "u-1"},
        },
    ),
]


@pytest.mark.parametrize(("cls", "payload"), SAMPLES, ids=lambda v: getattr(v, "__name__", ""))
def test_structures_and_round_trips(cls: type[Any], payload: dict[str, Any]) -> None:
    obj = structure(payload, cls)
    assert attrs.has(type(obj))
    again = structure(json.loads(json.dumps(unstructure(obj))), cls)
    assert again == obj


@pytest.mark.parametrize(("cls", "payload"), SAMPLES, ids=lambda v: getattr(v, "__name__", ""))
def test_unknown_keys_are_kept_in_extra(cls: type[Any], payload: dict[str, Any]) -> None:
    obj = structure({**payload, "brand_new": {"x": 1}}, cls)
    assert obj.extra == {"brand_new": {"x": 1}}
    assert unstructure(obj)["brand_new"] == {"x": 1}


@pytest.mark.parametrize(("cls", "payload"), SAMPLES, ids=lambda v: getattr(v, "__name__", ""))
def test_missing_required_key_is_rejected(cls: type[Any], payload: dict[str, Any]) -> None:
    required = [
        f.alias or f.name
        for f in attrs.fields(cls)
        if f.default is attrs.NOTHING and (f.alias or f.name) in payload
    ]
    assert required
    broken = dict(payload)
    del broken[required[0]]
    with pytest.raises(cattrs.BaseValidationError):
        structure(broken, cls)


def test_primitives_are_strict() -> None:
    with pytest.raises(cattrs.BaseValidationError):
        structure({**PARTICIPANT, "id": 5}, m.ChatParticipant)
    with pytest.raises(cattrs.BaseValidationError):
        structure(
            {"id": "m", "status": "processed", "attempt_number": True, "success": True},
            m.MessageStatus,
        )


def test_message_helpers() -> None:
    msg = structure(MESSAGE, m.ChatMessage)
    assert msg.mentions == ({"id": "a-1", "handle": "alice/bot", "name": "Bot"},)
    assert msg.delivery_status == {"a-1": {"status": "delivered"}}
    assert msg.attachments[0].bytes == 3
    bare = structure(
        {k: MESSAGE[k] for k in ("id", "content", "message_type", "sender_id", "sender_type")},
        m.ChatMessage,
    )
    assert bare.mentions == ()
    assert bare.delivery_status is None
    assert bare.attachments == ()


def test_delegation_token_repr_hides_the_token() -> None:
    token = structure(SAMPLES[-1][1], m.DelegationToken)
    assert "secret-token" not in repr(token)
    assert token.access_token == "secret-token"


# ---------------------------------------------------------------- requests


def test_request_omits_unset_fields_recursively() -> None:
    req = m.ChatMessageRequest(
        content="hi",
        mentions=(m.MentionRequest(id="a-1"), m.MentionRequest(handle="bob", kind="reference")),
    )
    assert unstructure(req) == {
        "content": "hi",
        "mentions": [{"id": "a-1"}, {"handle": "bob", "kind": "reference"}],
    }


def test_request_keeps_set_fields_and_extra() -> None:
    req = m.ChatMessageRequest(
        content="hi", mentions=(m.MentionRequest(id="a"),), attachment_ids=("f-1",), extra={"x": 1}
    )
    assert unstructure(req) == {
        "content": "hi",
        "mentions": [{"id": "a"}],
        "attachment_ids": ["f-1"],
        "x": 1,
    }


def test_memory_create_request_nested_metadata() -> None:
    req = m.AgentMemoryCreateRequest(
        content="c",
        system="working",
        type="episodic",
        segment="agent",
        thought="t",
        metadata=m.MemoryMetadataRequest(tags=("a",)),
    )
    assert unstructure(req) == {
        "content": "c",
        "system": "working",
        "type": "episodic",
        "segment": "agent",
        "thought": "t",
        "metadata": {"tags": ["a"]},
    }


def test_empty_update_request_is_empty_object() -> None:
    assert unstructure(m.TaskUpdateRequest()) == {}
    assert unstructure(m.ActivityRequest(working=False)) == {"working": False}


def test_every_request_model_is_registered() -> None:
    responses = {"ContactRequest", "ReceivedContactRequest", "SentContactRequest"}
    names = [n for n in m.__all__ if n.endswith("Request") and n not in responses]
    assert names
    for name in names:
        assert m.is_request_model(getattr(m, name)), name
    assert not m.is_request_model(m.ChatParticipant)


_opt_text = st.none() | st.text(max_size=10)


@settings(max_examples=60)
@given(
    id=_opt_text,
    handle=_opt_text,
    name=_opt_text,
    kind=st.none() | st.sampled_from(["mention", "reference"]),
)
def test_mention_request_never_sends_null(
    id: str | None, handle: str | None, name: str | None, kind: str | None
) -> None:
    body = unstructure(m.MentionRequest(id=id, handle=handle, name=name, kind=kind))
    assert None not in body.values()
    expected = {k: v for k, v in (("id", id), ("handle", handle), ("name", name), ("kind", kind))}
    assert body == {k: v for k, v in expected.items() if v is not None}


# ---------------------------------------------------------------- pages


def test_page_has_next_and_iteration() -> None:
    page = m.Page(items=(1, 2), meta=m.PageMeta(page=1, total_pages=2))
    assert page.has_next
    assert list(page) == [1, 2]
    assert len(page) == 2
    assert not m.Page(items=(), meta=m.PageMeta(page=2, total_pages=2)).has_next
    assert not m.Page(items=(1,)).has_next


def test_cursor_page_iteration() -> None:
    page = m.CursorPage(items=("a",), has_more=True, limit=1, next_cursor="c")
    assert list(page) == ["a"]
    assert len(page) == 1
