"""Helpers for RestClient tests: a recording httpx.MockTransport and sample payloads."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import parse_qsl

import httpx

from band_trio.wire.rest import RestClient, RestConfig
from band_trio.wire.retry import RetryPolicy

API_KEY = "bk_live_super_secret_key_123"
BASE = "https://band.test"

Responder = Callable[[httpx.Request], Awaitable[httpx.Response] | httpx.Response]


class Recorder:
    """A MockTransport handler that records every request and answers from a script.

    ``script`` is a list of responses (or exceptions to raise, or callables);
    the last one repeats once the list is used up.
    """

    def __init__(self, script: Sequence[Any]) -> None:
        self.script = list(script)
        self.requests: list[httpx.Request] = []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        self.requests.append(request)
        index = min(len(self.requests) - 1, len(self.script) - 1)
        step = self.script[index]
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            result = step(request)
            if isinstance(result, httpx.Response):
                return result
            response = await result
            assert isinstance(response, httpx.Response)
            return response
        assert isinstance(step, httpx.Response)
        return step

    @property
    def count(self) -> int:
        return len(self.requests)

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]


def make_client(
    recorder: Recorder, *, retry: RetryPolicy | None = None, **config: Any
) -> RestClient:
    """A RestClient over the recorder, with jitter off unless a policy is given."""
    policy = retry if retry is not None else RetryPolicy(jitter=0.0)
    return RestClient(
        base_url=BASE,
        api_key=API_KEY,
        config=RestConfig(retry=policy, **config),
        transport=httpx.MockTransport(recorder),
    )


def ok(data: Any, status: int = 200, **extra: Any) -> httpx.Response:
    """A ``{"data": ...}`` answer (plus any top-level keys)."""
    return httpx.Response(status, json={"data": data, **extra})


def error(
    status: int,
    code: str = "error",
    message: str = "something failed",
    *,
    details: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """A platform error answer with the standard body (protocol, "Errors";
    docs/reference/protocol.rst)."""
    body: dict[str, Any] = {"code": code, "message": message, "request_id": "req-1"}
    if details is not None:
        body["details"] = details
    return httpx.Response(status, json={"error": body}, headers=headers)


def query_of(request: httpx.Request) -> dict[str, str]:
    return dict(parse_qsl(request.url.query.decode(), keep_blank_values=True))


def raw_path_of(request: httpx.Request) -> str:
    return request.url.raw_path.decode().split("?", 1)[0]


def json_body(request: httpx.Request) -> Any:
    return json.loads(request.content)


TS = "2026-01-01T00:00:00Z"

ME = {
    "id": "agent-1",
    "name": "Echo",
    "handle": "alice/echo",
    "owner_uuid": "user-1",
    "inserted_at": TS,
    "updated_at": TS,
    "feature_flags": {"ff_file_transfer": True, "ff_room_tasks": True},
    "description": "Echoes",
}
PARTICIPANT = {
    "id": "user-1",
    "role": "owner",
    "status": "active",
    "type": "User",
    "name": "Alice",
    "handle": "alice",
    "online": True,
}
ROOM = {"id": "room-1", "inserted_at": TS, "updated_at": TS, "title": "Room"}
PEER = {
    "id": "agent-2",
    "name": "Other",
    "handle": "alice/other",
    "type": "Agent",
    "is_contact": False,
    "online": True,
    "source": "registry",
}
MESSAGE = {
    "id": "msg-1",
    "content": "@[[agent-1]] hi",
    "message_type": "text",
    "sender_id": "user-1",
    "sender_type": "User",
    "chat_room_id": "room-1",
    "inserted_at": TS,
    "metadata": {"mentions": [{"id": "agent-1", "handle": "alice/echo"}]},
    "attachments": [],
}
ATTACHMENT = {
    "id": "file-1",
    "name": "a.txt",
    "content_type": "text/plain",
    "bytes": 5,
    "sha256": "0" * 64,
    "has_thumb": False,
    "expires_at": None,
}
ACTOR = {"id": "agent-1", "name": "Echo", "type": "Agent", "handle": "alice/echo"}
TASK = {
    "id": "task-1",
    "number": 3,
    "chat_room_id": "room-1",
    "subject": "Write",
    "detail": "",
    "state": "active",
    "overall_status": "pending",
    "assignments": [],
    "created_by": ACTOR,
    "inserted_at": TS,
    "updated_at": TS,
}
TASK_EVENT = {"actor": ACTOR, "at": TS, "event": "created", "payload": {}}
BOARD = {"chat_room_id": "room-1", "goal_title": "Ship", "goal_summary": None}
CONTACT = {"id": "contact-1", "inserted_at": TS, "type": "User", "handle": "bob", "online": False}
MEMORY = {
    "id": "mem-1",
    "content": "Bob likes tea",
    "inserted_at": TS,
    "scope": "subject",
    "segment": "user",
    "system": "long_term",
    "type": "semantic",
    "status": "active",
    "subject_id": "user-2",
}
TOKEN = {
    "access_token": "tok-secret",
    "token_type": "bearer",
    "expires_at": None,
    "obo": {"agent_uuid": "agent-1", "audience": "aud-1", "originator_uuid": "user-1"},
}
CURSOR_META = {"has_more": False, "limit": 50, "next_cursor": None}
