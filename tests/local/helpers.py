"""Helpers for the local platform tests."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from trio_websocket import WebSocketConnection, open_websocket_url

from band_trio.local import AgentCredentials, LocalPlatform, RequestRefusedError

IO_DEADLINE = 10


@contextmanager
def refused(status: int) -> Iterator[pytest.ExceptionInfo[RequestRefusedError]]:
    """Expect the block to raise the platform's :class:`RequestRefusedError` with ``status``."""
    with pytest.raises(RequestRefusedError) as caught:
        yield caught
    assert caught.value.status == status, caught.value


def agent_http(platform: LocalPlatform, creds: AgentCredentials) -> httpx.AsyncClient:
    """A raw httpx client on ``/api/v1/agent`` with the agent's key."""
    return httpx.AsyncClient(
        base_url=platform.rest_url + "/api/v1/agent", headers={"x-api-key": creds.api_key}
    )


def user_http(platform: LocalPlatform, api_key: str | None = None) -> httpx.AsyncClient:
    """A raw httpx client on ``/api/v1/me`` with a user key."""
    return httpx.AsyncClient(
        base_url=platform.rest_url + "/api/v1/me",
        headers={"x-api-key": api_key or platform.user.api_key},
    )


def assert_error(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    """The response is an error with the platform's error body; returns ``error``."""
    assert response.status_code == status, response.text
    body = response.json()
    error = body["error"]
    assert isinstance(error["code"], str)
    assert error["code"]
    assert isinstance(error["message"], str)
    assert error["message"]
    assert isinstance(error["request_id"], str)
    assert error["request_id"]
    if code is not None:
        assert error["code"] == code
    return error  # type: ignore[no-any-return]


class PhoenixClient:
    """A minimal Phoenix v2 client over a raw trio-websocket connection."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws
        self._ref = 0

    def next_ref(self) -> str:
        self._ref += 1
        return str(self._ref)

    async def send(self, frame: list[Any]) -> None:
        await self.ws.send_message(json.dumps(frame))

    async def recv(self) -> list[Any]:
        frame = json.loads(await self.ws.get_message())
        assert isinstance(frame, list)
        assert len(frame) == 5
        return frame

    async def join(self, topic: str) -> tuple[str, list[Any]]:
        ref = self.next_ref()
        await self.send([ref, ref, topic, "phx_join", {}])
        reply = await self.recv()
        return ref, reply


def ws_url(platform: LocalPlatform, agent_id: str | None = None, **query: str) -> str:
    params = {"vsn": "2.0.0", **({"agent_id": agent_id} if agent_id else {}), **query}
    return platform.ws_url + "?" + "&".join(f"{k}={v}" for k, v in params.items())


def open_phoenix(
    platform: LocalPlatform, api_key: str, agent_id: str | None = None, **query: str
) -> Any:
    return open_websocket_url(
        ws_url(platform, agent_id, **query), extra_headers=[("x-api-key", api_key)]
    )


async def upgrade_status(
    platform: LocalPlatform, headers: dict[str, str], agent_id: str | None = None, **query: str
) -> httpx.Response:
    """Send a WebSocket upgrade request with plain HTTP and return the answer.

    Used to read upgrade refusals: trio-websocket 0.12 does not close its TCP
    stream when the server refuses the upgrade (a ResourceWarning at GC time).
    """
    url = ws_url(platform, agent_id, **query).replace("ws://", "http://", 1)
    upgrade = {
        "connection": "Upgrade",
        "upgrade": "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": base64.b64encode(os.urandom(16)).decode(),
    }
    async with httpx.AsyncClient() as client:
        return await client.get(url, headers={**upgrade, **headers})
