"""The echo scenario shared by the interop tests.

A human makes rooms with an agent in them and posts messages that mention it;
whatever echo agent is under test (the official band-sdk in a subprocess, or
band-trio's own wire layer) must answer each one exactly once. The human side
talks plain HTTP to ``/api/v1/me`` (so it depends on nothing but the wire), and
the verdict is read from the platform's own state: per-recipient delivery
status and attempts, and the messages in each room.

Every wait is ``platform.wait_for`` (re-checked after every request, frame and
connection change) under the caller's deadline; there is no sleep-and-hope.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import httpx
import trio


class Human:
    """The platform's user, over the human REST API (``/api/v1/me``)."""

    def __init__(self, rest_url: str, api_key: str) -> None:
        self._http = httpx.AsyncClient(
            base_url=rest_url, headers={"X-API-Key": api_key}, timeout=10
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self._http.post(path, json=body)
        assert response.status_code in (200, 201, 202), (
            f"POST {path}: {response.status_code} {response.text}"
        )
        data: dict[str, Any] = response.json()["data"]
        return data

    async def create_room(self, title: str) -> str:
        room = await self._post("/api/v1/me/chats", {"chat": {"title": title}})
        return str(room["id"])

    async def add_participant(self, room_id: str, participant_id: str) -> None:
        await self._post(
            f"/api/v1/me/chats/{room_id}/participants",
            {"participant": {"participant_id": participant_id}},
        )

    async def remove_participant(self, room_id: str, participant_id: str) -> None:
        path = f"/api/v1/me/chats/{room_id}/participants/{participant_id}"
        response = await self._http.delete(path)
        assert response.status_code == 200, f"DELETE {path}: {response.status_code} {response.text}"

    async def delete_rooms(self, room_ids: list[str]) -> None:
        await self._post("/api/v1/me/chats/bulk-delete", {"ids": room_ids})

    async def post(self, room_id: str, content: str, mention_id: str) -> str:
        sent = await self._post(
            f"/api/v1/me/chats/{room_id}/messages",
            {"message": {"content": content, "mentions": [{"id": mention_id}]}},
        )
        return str(sent["id"])


@attrs.frozen
class Trigger:
    room_id: str
    message_id: str
    token: str  # unique text the echo must carry back


def _room(platform: Any, room_id: str) -> Any:
    return platform.state.rooms[room_id]


def _message(platform: Any, trigger: Trigger) -> Any:
    return _room(platform, trigger.room_id).by_id[trigger.message_id]


def replies_to(platform: Any, agent_id: str, trigger: Trigger) -> list[Any]:
    """Text messages the agent posted anywhere that carry the trigger's token."""
    return [
        m
        for room in platform.state.rooms.values()
        for m in room.messages
        if m.sender_id == agent_id and m.message_type == "text" and trigger.token in m.content
    ]


def settled(platform: Any, agent_id: str, trigger: Trigger) -> bool:
    delivery = _message(platform, trigger).deliveries.get(agent_id)
    return (
        delivery is not None
        and delivery.status == "processed"
        and bool(replies_to(platform, agent_id, trigger))
    )


async def post_round(
    human: Human, agent_id: str, agent_handle: str, rooms: list[str], label: str
) -> list[Trigger]:
    triggers = []
    for n, room_id in enumerate(rooms):
        token = f"{label}-{n}-{uuid.uuid4().hex[:8]}"
        message_id = await human.post(room_id, f"@{agent_handle} ping {token}", agent_id)
        triggers.append(Trigger(room_id, message_id, token))
    return triggers


async def make_rooms(human: Human, agent_id: str, count: int) -> list[str]:
    rooms = []
    for n in range(count):
        room_id = await human.create_room(f"interop room {n}")
        await human.add_participant(room_id, agent_id)
        rooms.append(room_id)
    return rooms


async def run_echo_rounds(
    platform: Any, human: Human, agent_id: str, agent_handle: str, rooms: list[str]
) -> list[Trigger]:
    """Post one message per room, wait until all are answered, then a second
    round. Rooms are served one message at a time, so once the second round is
    answered any duplicate answer to the first round would already be visible."""
    triggers: list[Trigger] = []
    for label in ("first", "second"):
        batch = await post_round(human, agent_id, agent_handle, rooms, label)
        triggers += batch
        await platform.wait_for(lambda: all(settled(platform, agent_id, t) for t in batch))  # noqa: B023
    return triggers


def exactly_once_problems(platform: Any, agent_id: str, triggers: list[Trigger]) -> list[str]:
    """Everything that is not "processed exactly once with exactly one reply"."""
    problems = []
    for t in triggers:
        delivery = _message(platform, t).deliveries.get(agent_id)
        if delivery is None:
            problems.append(f"{t.token}: no delivery for the agent")
            continue
        attempts = [(a.number, a.status) for a in delivery.attempts]
        if delivery.status != "processed" or attempts != [(1, "success")]:
            problems.append(f"{t.token}: status {delivery.status}, attempts {attempts}")
        replies = replies_to(platform, agent_id, t)
        if [r.room_id for r in replies] != [t.room_id]:
            problems.append(f"{t.token}: replies {[(r.room_id, r.content) for r in replies]}")
    for room in platform.state.rooms.values():
        for m in room.messages:
            if m.sender_id == agent_id and m.message_type != "text":
                problems.append(f"agent posted a {m.message_type} event: {m.content!r}")
    return problems


def unprocessed(platform: Any, agent_id: str, triggers: list[Trigger]) -> str:
    """A one-line view of where each trigger stands (for failure messages)."""
    parts = []
    for t in triggers:
        delivery = _message(platform, t).deliveries.get(agent_id)
        status = delivery.status if delivery else None
        parts.append(f"{t.token}={status}/{len(replies_to(platform, agent_id, t))} replies")
    return ", ".join(parts)


@asynccontextmanager
async def human_session(platform: Any, agent_id: str) -> AsyncIterator[tuple[Human, list[Trigger]]]:
    """A human client and the list of triggers a test posts (fill it in place).

    On failure the platform's view of every trigger is printed; the client is
    closed in any case, shielded so a cancelled test still closes it.
    """
    human = Human(platform.rest_url, platform.user.api_key)
    triggers: list[Trigger] = []
    try:
        yield human, triggers
    except BaseException:
        print(f"platform view: {unprocessed(platform, agent_id, triggers)}")
        raise
    finally:
        with trio.CancelScope(shield=True):
            await human.aclose()
