"""Property: random JSON bodies to the main write endpoints never crash the platform.

Every answer is 2xx or 4xx; every 4xx carries the platform's error body (416, whose
body the official client declares as a string, is not reachable here).

Hypothesis runs each example in its own ``trio.run``, so the requests go to the
platform's ASGI app in process (httpx ``ASGITransport``) rather than to a socket
served by a fixture; one platform's state is shared by all examples.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from band_trio.local import LocalPlatform
from band_trio.local._input import Obj

KEYS = [
    "message",
    "content",
    "mentions",
    "id",
    "handle",
    "kind",
    "attachment_ids",
    "event",
    "message_type",
    "metadata",
    "working",
    "activity",
    "name",
    "chat",
    "title",
    "task_id",
    "participant",
    "participant_id",
    "role",
    "subject",
    "detail",
    "supersedes_id",
    "status",
    "state",
    "comment",
    "memory",
    "system",
    "type",
    "segment",
    "scope",
    "subject_id",
    "thought",
    "action",
    "request_id",
    "audience",
    "message_id",
    "error",
    "goal_title",
    "goal_summary",
    "contact_request",
    "recipient_handle",
    "agent",
    "description",
    "user",
    "first_name",
    "tags",
]
VALUES = [
    "mention",
    "reference",
    "thought",
    "attention",
    "owner",
    "admin",
    "long_term",
    "semantic",
    "user",
    "subject",
    "organization",
    "approve",
    "cancel",
    "in_progress",
    "archived",
    "demo",
    "demo/echo",
    "@demo",
    "1",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    st.sampled_from(VALUES),
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=20,
)


def endpoints(room: str, message: str) -> list[tuple[str, str, str]]:
    a = "/api/v1/agent"
    m = "/api/v1/me"
    return [
        ("agent", "POST", f"{a}/chats/{room}/messages"),
        ("agent", "POST", f"{a}/chats/{room}/events"),
        ("agent", "POST", f"{a}/chats/{room}/activity"),
        ("agent", "POST", f"{a}/chats/{room}/messages/{message}/failed"),
        ("agent", "POST", f"{a}/chats"),
        ("agent", "PATCH", f"{a}/chats/{room}"),
        ("agent", "POST", f"{a}/chats/{room}/participants"),
        ("agent", "POST", f"{a}/chats/{room}/tasks"),
        ("agent", "POST", f"{a}/chats/{room}/tasks/1"),
        ("agent", "PUT", f"{a}/chats/{room}/board"),
        ("agent", "POST", f"{a}/memories"),
        ("agent", "POST", f"{a}/contacts/add"),
        ("agent", "POST", f"{a}/contacts/remove"),
        ("agent", "POST", f"{a}/contacts/requests/respond"),
        ("agent", "POST", f"{a}/delegation/token"),
        ("user", "POST", f"{m}/chats"),
        ("user", "POST", f"{m}/chats/{room}/messages"),
        ("user", "POST", f"{m}/chats/{room}/participants"),
        ("user", "POST", f"{m}/contacts/requests"),
        ("user", "POST", f"{m}/agents/register"),
        ("user", "PUT", f"{m}/profile"),
        ("user", "POST", f"{m}/contacts/resolve"),
    ]


def wrap(key: str | None, value: Any) -> Any:
    return value if key is None else {key: value}


bodies = st.one_of(
    json_values,
    st.tuples(
        st.sampled_from(
            [
                None,
                "message",
                "event",
                "chat",
                "participant",
                "memory",
                "contact_request",
                "agent",
                "user",
            ]
        ),
        st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6),
    ).map(lambda t: wrap(*t)),
)


PLATFORM = LocalPlatform()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies, raw=st.one_of(st.none(), st.binary(max_size=40)), which=st.integers(0, 21))
async def test_random_bodies_never_500(body: Any, raw: bytes | None, which: int) -> None:
    platform = PLATFORM
    state = platform.state
    demo = platform.agents[0]
    user = state.users[platform.user.id]
    if not state.rooms:
        room = state.create_room(user, None)
        state.add_participant(user, room.id, Obj({"participant": {"participant_id": demo.id}}))
        state.post_message(
            user, room.id, Obj({"message": {"content": "hi", "mentions": [{"id": demo.id}]}})
        )
        state.drain_pushes()
    room = next(iter(state.rooms.values()))
    message = room.messages[0].id
    kind, method, path = endpoints(room.id, message)[which]
    key = demo.api_key if kind == "agent" else platform.user.api_key
    content = raw if raw is not None else json.dumps(body).encode()
    transport = httpx.ASGITransport(app=platform.app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://local", headers={"x-api-key": key}
    ) as client:
        with trio.fail_after(10):
            response = await client.request(method, path, content=content)
    assert response.status_code < 500, (method, path, content, response.text)
    if response.status_code >= 400:
        error = response.json()["error"]
        assert isinstance(error["code"], str)
        assert isinstance(error["message"], str)
        assert isinstance(error["request_id"], str)
        if response.status_code == 422:
            assert isinstance(error["details"], dict)
