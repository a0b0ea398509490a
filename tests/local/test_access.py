"""Who may call what: every agent and human route, from one table each.

The world: the user ``demo`` owns agent ``A`` (the demo agent) and agent ``B``;
``A`` is alone with ``demo`` in room ``R``, where it stored a file, a task, a
message and a memory, and ``B`` has asked ``A`` to be a contact. ``vic``, a user
of another owner, owns agent ``C``. Every agent route is called as ``C`` (an
outsider) on ``A``'s things: it must be refused, or answer without any of
them, and nothing of ``A``'s may change. Every route is also called without a
key (401) and with the wrong kind of key (403). A route missing from the
tables fails the coverage tests, so a new route has to say who may call it.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import attrs
import httpx
import pytest
import trio

from band_trio.local import AgentCredentials, HumanClient, LocalPlatform, UserCredentials
from band_trio.local.routes import agent_api, human_api, human_feed
from tests.local.helpers import IO_DEADLINE, assert_error

Check = Callable[[httpx.Response], None]


@attrs.frozen
class World:
    owner: UserCredentials
    a: AgentCredentials
    b: AgentCredentials
    vic: UserCredentials
    c: AgentCredentials
    room: str
    message: str
    memory: str
    file: str
    task: str
    request: str


MEMORY = {"content": "A's secret", "system": "long_term", "type": "semantic", "segment": "user"}


async def build_world(platform: LocalPlatform) -> World:
    a = platform.agents[0]
    b = platform.register_agent("Bee", "sibling of A")
    vic = platform.create_user("Vic", "vic")
    c = platform.register_agent("Spy", "another owner's agent", owner=vic)
    async with (
        HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human,
        httpx.AsyncClient(
            base_url=platform.rest_url + "/api/v1/agent", headers={"x-api-key": a.api_key}
        ) as agent_a,
        httpx.AsyncClient(
            base_url=platform.rest_url + "/api/v1/agent", headers={"x-api-key": b.api_key}
        ) as agent_b,
    ):
        room = (await human.create_room("A's room"))["id"]
        await human.add_participant(room, a.id)
        message = (await human.post_message(room, "hello @A", [a.handle]))["id"]
        memory = (await agent_a.post("/memories", json={"memory": MEMORY})).json()["data"]["id"]
        file = (
            await agent_a.put(
                f"/chats/{room}/files", content=b"A's file", headers={"x-file-name": "a.txt"}
            )
        ).json()["data"]["id"]
        task = (await agent_a.post(f"/chats/{room}/tasks", json={"subject": "A's task"})).json()[
            "data"
        ]["id"]
        await agent_b.post("/contacts/add", json={"handle": a.handle})
        requests = (await agent_a.get("/contacts/requests")).json()["data"]
        request = requests["received"][0]["id"]
    return World(platform.user, a, b, vic, c, room, message, memory, file, task, request)


def refused(*statuses: int) -> Check:
    def check(response: httpx.Response) -> None:
        assert response.status_code in statuses, response.text
        assert_error(response, response.status_code)

    return check


def holds_none_of(world: World) -> Check:
    """A 2xx answer that mentions none of A's things (or a refusal)."""

    def check(response: httpx.Response) -> None:
        assert response.status_code < 500, response.text
        for secret in (world.room, world.message, world.memory, world.file, world.task):
            assert secret not in response.text
        assert "A's secret" not in response.text

    return check


def agent_table(w: World) -> list[tuple[str, str, Any, Check]]:
    """Every agent route, called by the outsider ``C`` on ``A``'s things."""
    r = w.room
    no = refused(403, 404)
    invisible = holds_none_of(w)
    event = {"event": {"content": "x", "message_type": "thought"}}
    post = {"message": {"content": "hi", "mentions": [{"id": w.owner.id}]}}
    return [
        ("GET", "/me", None, invisible),
        ("GET", "/peers", None, invisible),
        ("GET", "/chats", None, invisible),
        ("POST", "/chats", {"chat": {"title": "C's own"}}, invisible),
        ("GET", f"/chats/{r}", None, no),
        ("PATCH", f"/chats/{r}", {"chat": {"title": "taken"}}, no),
        ("GET", f"/chats/{r}/participants", None, no),
        ("POST", f"/chats/{r}/participants", {"participant": {"participant_id": w.c.id}}, no),
        ("DELETE", f"/chats/{r}/participants/{w.a.id}", None, no),
        ("GET", f"/chats/{r}/messages/next", None, no),
        ("GET", f"/chats/{r}/messages", None, no),
        ("POST", f"/chats/{r}/messages", post, no),
        ("POST", f"/chats/{r}/messages/{w.message}/processing", None, no),
        ("POST", f"/chats/{r}/messages/{w.message}/processed", None, no),
        ("POST", f"/chats/{r}/messages/{w.message}/failed", None, no),
        ("POST", f"/chats/{r}/events", event, no),
        ("GET", f"/chats/{r}/context", None, no),
        ("POST", f"/chats/{r}/activity", {"working": True}, no),
        ("PUT", f"/chats/{r}/files", b"C's bytes", no),
        ("GET", f"/chats/{r}/files/{w.file}", None, no),
        ("GET", f"/chats/{r}/tasks", None, no),
        ("POST", f"/chats/{r}/tasks", {"subject": "C's task"}, no),
        ("GET", f"/chats/{r}/tasks/{w.task}", None, no),
        ("POST", f"/chats/{r}/tasks/{w.task}", {"status": "done"}, no),
        ("GET", f"/chats/{r}/tasks/{w.task}/history", None, no),
        ("GET", f"/chats/{r}/board", None, no),
        ("PUT", f"/chats/{r}/board", {"goal_title": "C's goal"}, no),
        ("GET", "/contacts", None, invisible),
        ("POST", "/contacts/add", {"handle": w.a.handle}, invisible),  # asking is anyone's right
        ("POST", "/contacts/remove", {"handle": w.b.handle}, refused(404)),
        ("GET", "/contacts/requests", None, holds_none_of_request(w)),
        (
            "POST",
            "/contacts/requests/respond",
            {"action": "approve", "request_id": w.request},
            refused(403, 404),
        ),
        ("GET", "/memories", None, invisible),
        ("POST", "/memories", {"memory": {**MEMORY, "subject_id": w.owner.id}}, refused(422)),
        ("GET", f"/memories/{w.memory}", None, no),
        ("POST", f"/memories/{w.memory}/supersede", None, no),
        ("POST", f"/memories/{w.memory}/archive", None, no),
        ("POST", "/delegation/token", {"audience": "x", "message_id": w.message}, no),
    ]


def holds_none_of_request(w: World) -> Check:
    def check(response: httpx.Response) -> None:
        assert response.status_code == 200, response.text
        assert w.request not in response.text

    return check


def human_table(w: World) -> list[tuple[str, str, Any, Check]]:
    """Every human route, called by ``vic`` (another owner) on ``demo``'s things."""
    r = w.room
    no = refused(403, 404)
    invisible = holds_none_of(w)
    post = {"message": {"content": "hi", "mentions": [{"id": w.a.id}]}}
    return [
        ("POST", "/agents/register", {"agent": {"name": "Vic's"}}, invisible),
        ("GET", "/agents", None, invisible),
        ("DELETE", f"/agents/{w.a.id}", None, no),
        ("POST", "/agents/bulk-delete", {"agent_ids": [w.a.id]}, holds_agent(w)),
        ("POST", "/chats/bulk-delete", {"chat_ids": [r]}, invisible),
        ("GET", "/bulk-deletions/nope", None, no),
        ("GET", "/chats", None, invisible),
        ("POST", "/chats", {"chat": {"title": "Vic's"}}, invisible),
        ("GET", f"/chats/{r}", None, no),
        ("GET", f"/chats/{r}/messages", None, no),
        ("POST", f"/chats/{r}/messages", post, no),
        ("GET", f"/chats/{r}/participants", None, no),
        ("POST", f"/chats/{r}/participants", {"participant": {"participant_id": w.c.id}}, no),
        ("DELETE", f"/chats/{r}/participants/{w.a.id}", None, no),
        ("GET", "/contacts", None, invisible),
        ("POST", "/contacts/remove", {"handle": w.owner.handle}, refused(400, 404)),
        ("POST", "/contacts/resolve", {"handle": w.a.handle}, invisible),
        ("GET", "/contacts/requests", None, holds_none_of_request(w)),
        ("GET", "/contacts/requests/sent", None, holds_none_of_request(w)),
        ("POST", "/contacts/requests", {"contact_request": {"recipient_handle": "nobody"}}, no),
        ("POST", f"/contacts/requests/{w.request}/approve", None, no),
        ("POST", f"/contacts/requests/{w.request}/reject", None, no),
        ("DELETE", f"/contacts/requests/{w.request}", None, no),
        ("GET", "/memories", None, invisible),
        ("GET", f"/memories/{w.memory}", None, no),
        ("DELETE", f"/memories/{w.memory}", None, no),
        ("POST", f"/memories/{w.memory}/supersede", None, no),
        ("POST", f"/memories/{w.memory}/archive", None, no),
        ("POST", f"/memories/{w.memory}/restore", None, no),
        ("GET", "/peers", None, invisible),
        ("GET", "/profile", None, invisible),
        ("PUT", "/profile", {"user": {"first_name": "Vic"}}, invisible),
        ("POST", f"/chats/{r}/control", {"mode": "stop", "agent_id": w.a.id}, no),
        ("GET", "/agents/status", None, invisible),
    ]


def holds_agent(w: World) -> Check:
    def check(response: httpx.Response) -> None:
        assert response.status_code < 500, response.text

    return check


def _covers(routes: Any, prefix: str, rows: list[tuple[str, str, Any, Check]]) -> None:
    matched: dict[Any, list[str]] = {route: [] for route in routes}
    for method, path, _, _ in rows:
        hits = [
            route
            for route in routes
            if route.method == method and route.pattern.match(prefix + path)
        ]
        assert hits, f"no route for {method} {path}"
        matched[hits[0]].append(path)
    missing = [f"{r.method} {r.pattern.pattern}" for r, paths in matched.items() if not paths]
    assert not missing, f"routes with no row in the table: {missing}"


async def _call(
    client: httpx.AsyncClient, method: str, path: str, body: Any, headers: dict[str, str]
) -> httpx.Response:
    if isinstance(body, bytes):
        headers = {**headers, "x-file-name": "c.txt"}
        return await client.request(method, path, content=body, headers=headers)
    return await client.request(method, path, json=body, headers=headers)


def _snapshot(platform: LocalPlatform, w: World) -> Any:
    room = platform.state.rooms[w.room]
    memory = platform.state.memories[w.memory]
    return (
        sorted(room.members),
        room.title,
        [(m.id, m.content) for m in room.by_id.values()],
        sorted(room.files),
        [(t.id, t.state, t.subject, sorted(t.assignments)) for t in room.tasks],
        memory.status,
        sorted(a.id for a in platform.state.agents.values() if a.owner_id == w.owner.id),
        sorted(platform.state.contact_ids(w.a.id)),
    )


def _placeholder_world() -> World:
    someone = SimpleNamespace(id="x", handle="x", api_key="x")
    return World(someone, someone, someone, someone, someone, *(["x"] * 6))  # type: ignore[arg-type]


def test_every_agent_route_has_a_row() -> None:
    w = _placeholder_world()
    _covers(agent_api.ROUTES, agent_api.PREFIX, agent_table(w))


def test_every_human_route_has_a_row() -> None:
    w = _placeholder_world()
    _covers((*human_api.ROUTES, *human_feed.ROUTES), human_api.PREFIX, human_table(w))


@pytest.mark.parametrize("surface", ["agent", "human"])
async def test_keys_are_required_and_of_the_right_kind(
    band_platform: LocalPlatform, surface: str
) -> None:
    w = await build_world(band_platform)
    if surface == "agent":
        rows, prefix = agent_table(w), agent_api.PREFIX
        wrong_kind = band_platform.user.api_key
    else:
        rows, prefix = human_table(w), human_api.PREFIX
        wrong_kind = w.a.api_key
    before = _snapshot(band_platform, w)
    async with httpx.AsyncClient(base_url=band_platform.rest_url + prefix) as client:
        with trio.fail_after(IO_DEADLINE * 3):
            for method, path, body, _ in rows:
                for headers, status in (
                    ({}, 401),
                    ({"x-api-key": "band_nope"}, 401),
                    ({"x-api-key": wrong_kind}, 403),
                ):
                    response = await _call(client, method, path, body, headers)
                    assert response.status_code == status, (method, path, response.text)
                    assert_error(response, status)
    assert _snapshot(band_platform, w) == before


async def test_an_agent_never_reaches_another_agents_things(band_platform: LocalPlatform) -> None:
    w = await build_world(band_platform)
    before = _snapshot(band_platform, w)
    async with httpx.AsyncClient(
        base_url=band_platform.rest_url + agent_api.PREFIX, headers={"x-api-key": w.c.api_key}
    ) as client:
        with trio.fail_after(IO_DEADLINE * 3):
            for method, path, body, check in agent_table(w):
                response = await _call(client, method, path, body, {})
                try:
                    check(response)
                except AssertionError as exc:
                    raise AssertionError(f"{method} {path}: {exc}") from None
    assert _snapshot(band_platform, w) == before


async def test_a_user_never_reaches_another_owners_things(band_platform: LocalPlatform) -> None:
    w = await build_world(band_platform)
    before = _snapshot(band_platform, w)
    async with httpx.AsyncClient(
        base_url=band_platform.rest_url + human_api.PREFIX, headers={"x-api-key": w.vic.api_key}
    ) as client:
        with trio.fail_after(IO_DEADLINE * 3):
            for method, path, body, check in human_table(w):
                response = await _call(client, method, path, body, {})
                try:
                    check(response)
                except AssertionError as exc:
                    raise AssertionError(f"{method} {path}: {exc}") from None
    assert _snapshot(band_platform, w) == before


async def test_memories_about_a_user_of_another_owner(band_platform: LocalPlatform) -> None:
    """An agent remembers only people it knows; the subject does not see or
    change what another owner's agent keeps about them."""
    w = await build_world(band_platform)
    about_vic = {"memory": {**MEMORY, "subject_id": w.vic.id}}
    async with (
        httpx.AsyncClient(
            base_url=band_platform.rest_url + agent_api.PREFIX, headers={"x-api-key": w.a.api_key}
        ) as agent_a,
        HumanClient(base_url=band_platform.rest_url, api_key=band_platform.user.api_key) as demo,
        httpx.AsyncClient(
            base_url=band_platform.rest_url + human_api.PREFIX, headers={"x-api-key": w.vic.api_key}
        ) as vic,
    ):
        with trio.fail_after(IO_DEADLINE):
            # a stranger, or an id that names nobody: the same refusal
            for subject in (w.vic.id, "no-such-principal"):
                body = {"memory": {**MEMORY, "subject_id": subject}}
                assert_error(await agent_a.post("/memories", json=body), 422, "validation_error")
            # once vic shares a room with A, A may remember vic
            invite = {"contact_request": {"recipient_handle": w.vic.handle}}
            await demo.request("POST", "/contacts/requests", json=invite)
            received = (await vic.get("/contacts/requests")).json()["data"]
            approved = await vic.post(f"/contacts/requests/{received[0]['id']}/approve")
            assert approved.status_code == 200, approved.text
            await demo.add_participant(w.room, w.vic.id)
            made = await agent_a.post("/memories", json=about_vic)
            assert made.status_code == 201, made.text
            memory = made.json()["data"]["id"]
            # vic, the subject, neither lists, reads, changes nor deletes it
            assert memory not in (await vic.get("/memories")).text
            assert_error(await vic.get(f"/memories/{memory}"), 404)
            assert_error(await vic.delete(f"/memories/{memory}"), 404)
            assert_error(await vic.post(f"/memories/{memory}/archive"), 404)
            # the owner of A does
            assert (await demo.request("GET", f"/memories/{memory}"))["data"]["id"] == memory
    assert band_platform.state.memories[memory].status == "active"
