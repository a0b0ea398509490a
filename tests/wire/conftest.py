"""Fixtures of the wire tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio_websocket

from .phoenix_server import FakePhoenix


@pytest.fixture
async def server() -> AsyncIterator[FakePhoenix]:
    fake = FakePhoenix()
    async with trio.open_nursery() as nursery:
        ws_server = await nursery.start(
            trio_websocket.serve_websocket, fake.handler, "127.0.0.1", 0, None
        )
        fake.port = ws_server.port
        yield fake
        nursery.cancel_scope.cancel()
