"""A scripted HTTP platform behind a real RestClient, for the tools and adapter tests.

The tools are checked on the requests they make (method, path, query, body,
headers), so the fake sits below the REST client: :class:`ScriptedPlatform` is
an ``httpx.MockTransport`` handler that answers by (method, path regex) and
records every call. The ``platform`` and ``rest`` fixtures are re-exported by
the conftest of each folder that uses them. Also: recording turn hooks and a
roster.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import httpx
import pytest

from band_trio.adapter import ToolEffect
from band_trio.wire.models import ChatParticipant
from band_trio.wire.rest import RestClient

ROOM = "room-1"
AGENT_ID = "agent-1"
API_KEY = "sk-secret-key-never-shown"

Responder = Callable[[httpx.Request], httpx.Response]


def participant(pid: str, name: str, handle: str | None, type_: str = "User") -> ChatParticipant:
    return ChatParticipant(
        id=pid, role="member", status="active", type=type_, name=name, handle=handle
    )


ROSTER = (
    participant("user-alice", "Alice", "alice"),
    participant("agent-bob", "Bob Bot", "carol/bob", "Agent"),
    participant(AGENT_ID, "Me", "carol/me", "Agent"),
)


def ok(data: Any, status: int = 200, **extra: Any) -> httpx.Response:
    return httpx.Response(status, json={"data": data, **extra})


def error(status: int, code: str, message: str) -> httpx.Response:
    return httpx.Response(
        status,
        json={"error": {"code": code, "message": message, "request_id": "req-1"}},
        headers={"x-secret-header": "do-not-leak"},
    )


@attrs.define
class Call:
    method: str
    path: str
    params: dict[str, str]
    body: Any
    headers: httpx.Headers
    content: bytes


class ScriptedPlatform:
    """Routes requests to responders by (method, path regex); records every call."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._routes: list[tuple[str, re.Pattern[str], list[Responder]]] = []

    def on(self, method: str, path: str, *responses: httpx.Response | Responder) -> None:
        """Answer ``method path`` (regex, full match on the path after /api/v1/agent)
        with the responses in order; the last one repeats."""
        responders: list[Responder] = [
            (r if callable(r) else (lambda _req, _r=r: _r)) for r in responses
        ]
        self._routes.insert(0, (method, re.compile(path), responders))

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/api/v1/agent")
        body: Any = None
        content = request.content
        if content and request.headers.get("content-type", "").startswith("application/json"):
            body = json.loads(content)
        self.calls.append(
            Call(request.method, path, dict(request.url.params), body, request.headers, content)
        )
        for method, pattern, responders in self._routes:
            if method == request.method and pattern.fullmatch(path):
                responder = responders.pop(0) if len(responders) > 1 else responders[0]
                return responder(request)
        return error(404, "not_found", f"no route for {request.method} {path}")

    def requests_to(self, method: str, path: str) -> list[Call]:
        pattern = re.compile(path)
        return [c for c in self.calls if c.method == method and pattern.fullmatch(c.path)]


@attrs.define
class RecordingHooks:
    message_id: str | None = "msg-trigger"
    replies: list[str] = attrs.Factory(list)
    intents: list[str] = attrs.Factory(list)
    settled: list[str] = attrs.Factory(list)
    effects: list[ToolEffect] = attrs.Factory(list)
    stopped: int = 0
    failures_reported: int = 0
    on_stopped: Callable[[], None] | None = None

    def reply_sent(self, reply_id: str) -> None:
        self.replies.append(reply_id)

    def reply_intent(self, digest: str) -> None:
        self.intents.append(digest)

    def reply_settled(self, digest: str) -> None:
        self.settled.append(digest)

    def failure_reported(self) -> None:
        self.failures_reported += 1

    def execution_stopped(self) -> None:
        self.stopped += 1
        if self.on_stopped is not None:
            self.on_stopped()

    def record_effect(self, effect: ToolEffect) -> None:
        self.effects.append(effect)


@pytest.fixture
def platform() -> ScriptedPlatform:
    return ScriptedPlatform()


@pytest.fixture
async def rest(platform: ScriptedPlatform) -> AsyncIterator[RestClient]:
    client = RestClient(
        base_url="https://band.test",
        api_key=API_KEY,
        transport=httpx.MockTransport(platform.handler),
    )
    async with client:
        yield client
