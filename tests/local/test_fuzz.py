"""Properties: random JSON bodies to the main write endpoints, and hostile path
segments, query parameters, ranges and bodies to every route, never crash the platform.

Every answer is 2xx or 4xx; every 4xx carries the platform's error body (416, whose
body the official client declares as a string, is not reachable here).

Hypothesis runs each example in its own ``trio.run``, so the requests go to the
platform's ASGI app in process (httpx ``ASGITransport``) rather than to a socket
served by a fixture; one platform's state is shared by all examples.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

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


# ---------------------------------------------------------------- every route


HOSTILE_TEXT = st.sampled_from(
    [
        "",
        "1",
        "0",
        "-1",
        "\u0661\u0662",
        "\u00b2",
        "9" * 5000,
        "9" * 19,
        "cur_" + "9" * 30,
        "cur_\u0661",
        "cur_-1",
        "bytes=0-",
        "bytes=-5",
        "bytes=\u0661-\u0662",
        "bytes=" + "9" * 5000 + "-",
        "x\ny",
        "a%0Ab",
        "\x00",
        "é",
        "1e999",
        "NaN",
        "true",
        "all",
        "desc",
        "participants",
    ]
) | st.text(max_size=12)
QUERY_NAMES = [
    "limit",
    "page",
    "page_size",
    "cursor",
    "status",
    "sort_order",
    "order",
    "sort",
    "include",
    "scope",
    "memory_scope",
    "subject_id",
    "content_query",
    "not_in_chat",
    "room_id",
    "name",
    "sent_status",
    "state",
    "system",
    "type",
    "segment",
    "token",
]

ADMIN_PLATFORM = LocalPlatform(admin=True)


def _fresh_world(platform: LocalPlatform) -> tuple[str, str, str, str]:
    """An agent key, a room, a message and a memory of the platform's user,
    re-made when an earlier example deleted them."""
    state = platform.state
    user = state.users[platform.user.id]
    agent = next((a for a in state.agents.values() if a.owner_id == user.id), None)
    if agent is None:
        platform.register_agent("Again", "re-made between examples")
        agent = next(a for a in state.agents.values() if a.owner_id == user.id)
    room = next((r for r in state.rooms.values() if agent.id in r.members), None)
    if room is None:
        room = state.create_room(user, None)
        state.add_participant(user, room.id, Obj({"participant": {"participant_id": agent.id}}))
    if not room.messages:
        state.post_message(
            user, room.id, Obj({"message": {"content": "hi", "mentions": [{"id": agent.id}]}})
        )
    state.drain_pushes()
    memory = next(iter(state.memories), "no-memory")
    return agent.api_key, room.id, room.messages[-1].id, memory


def _all_routes(platform: LocalPlatform) -> list[Any]:
    table = platform.app.routes
    return [row for rows in table._by_method.values() for row in rows]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.integers(0, 10_000),
    segments=st.lists(
        st.one_of(st.sampled_from(["room", "message", "memory"]), HOSTILE_TEXT),
        min_size=3,
        max_size=3,
    ),
    query=st.dictionaries(st.sampled_from(QUERY_NAMES), HOSTILE_TEXT, max_size=4),
    body=st.one_of(st.none(), bodies),
    range_header=st.one_of(st.none(), HOSTILE_TEXT),
)
async def test_every_route_with_hostile_inputs_never_500(
    which: int,
    segments: list[str],
    query: dict[str, str],
    body: Any,
    range_header: str | None,
) -> None:
    platform = ADMIN_PLATFORM
    agent_key, room, message, memory = _fresh_world(platform)
    routes = _all_routes(platform)
    row = routes[which % len(routes)]
    real = {"room": room, "message": message, "memory": memory}
    values = iter(real.get(s, s) for s in segments)
    # rebuild a concrete path from the route's pattern: one value per group
    template = row.pattern.pattern.removeprefix("^").removesuffix("/?$")
    path = template.replace("([^/]+)", "{}").format(
        *(quote(next(values), safe="") or "x" for _ in range(row.pattern.groups))
    )
    keys = {"agent": agent_key, "user": platform.user.api_key}
    headers = [(b"x-api-key", keys.get(row.auth, "").encode())]
    if row.auth == "admin":
        headers = [(b"x-admin-key", platform.admin_key.encode())]
    if range_header is not None:
        headers.append((b"range", range_header.encode()))
    if row.upload:
        headers.append((b"x-file-name", b"f.txt"))
    content = b"" if body is None else json.dumps(body).encode()
    transport = httpx.ASGITransport(app=platform.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://local") as client:
        with trio.fail_after(10):
            response = await client.request(
                row.method, path, params=query, content=content, headers=headers
            )
    assert response.status_code < 500, (row.method, path, query, content, response.text)
    if response.status_code >= 400 and response.status_code != 416:
        error = response.json()["error"]
        assert isinstance(error["code"], str)
        assert isinstance(error["request_id"], str)
    if response.headers.get("content-type", "").startswith("application/json") and response.content:
        # answers are strict JSON: no NaN or Infinity ever goes out
        json.loads(response.content, parse_constant=_refuse)


def _refuse(name: str) -> Any:
    raise AssertionError(f"{name} in an answer")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    token=st.one_of(st.none(), HOSTILE_TEXT),
    room_id=st.one_of(st.none(), HOSTILE_TEXT),
    use_user_key=st.booleans(),
    asset=st.sampled_from(["", "/", "/index.html", "/app.js", "/../server.py", "/x"]),
)
async def test_the_live_feed_and_the_playground_with_hostile_queries(
    token: str | None, room_id: str | None, use_user_key: bool, asset: str
) -> None:
    """The feed is refused without the user's key, and the page with another
    key (the page without a key holds no secret); a hostile room is refused
    even with the key (a refusal answers at once, a stream never)."""
    platform = ADMIN_PLATFORM
    params = {k: v for k, v in (("token", token), ("room_id", room_id)) if v is not None}
    if use_user_key:
        params["token"] = platform.user.api_key
        params["room_id"] = "room-" + (room_id or "x")  # never a real room id
    transport = httpx.ASGITransport(app=platform.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://local") as client:
        with trio.fail_after(10):
            feed = await client.get("/api/v1/me/stream", params=params)
            page = await client.get("/playground" + asset, params=params)
    assert feed.status_code in (401, 403, 404), feed.text
    assert_error_body(feed)
    assert page.status_code < 500, page.text
    if asset in ("", "/", "/index.html") and not use_user_key:
        assert page.status_code == (401 if token else 200)  # an empty key is none
        assert platform.user.api_key.encode() not in page.content


def assert_error_body(response: httpx.Response) -> None:
    error = response.json()["error"]
    assert isinstance(error["code"], str)
    assert isinstance(error["request_id"], str)
