"""An in-memory platform for running a whole ``Agent`` on the autojump clock.

A real agent over loopback cannot run under ``autojump_clock`` (the clock would
jump while a socket read is pending), so a :class:`PlatformRuntime` here
connects to fakes: the REST client is a
:class:`~band_trio.testing._memory_rest.MemoryRest` (one room's messages and
their lifecycle marks, the replies, a log of the calls on the Trio clock),
shared by every agent run of a test; the link has nothing to push.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from band_trio import AgentConfig, AgentSettings
from band_trio.runtime import PlatformRuntime
from band_trio.testing._memory_rest import MemoryRest

AGENT = "agent-1"
ROOM = "room-1"
KEY = "sk-fake-0123456789"


class FakeLink:
    """A link with nothing to push: the rooms find their work on ``/next``."""

    def __init__(self) -> None:
        self.topics: set[str] = set()

    async def serve(
        self, events: Any, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        await trio.sleep_forever()

    async def join(self, topic: str) -> None:
        await trio.lowlevel.checkpoint()
        self.topics.add(topic)

    async def leave(self, topic: str) -> None:
        await trio.lowlevel.checkpoint()
        self.topics.discard(topic)

    def statistics(self) -> Any:
        return ("link", len(self.topics))


class FakeRuntime(PlatformRuntime):
    """A :class:`PlatformRuntime` whose REST client is ``platform`` and whose
    link is a :class:`FakeLink`."""

    def __init__(self, platform: MemoryRest, config: AgentConfig) -> None:
        super().__init__(
            AgentSettings(
                agent_id=AGENT,
                api_key=KEY,
                rest_url="http://127.0.0.1:9",
                ws_url="ws://127.0.0.1:9",
            ),
            config,
        )
        self.platform = platform
        self.link = FakeLink()

    @asynccontextmanager
    async def open_rest(self) -> AsyncIterator[Any]:
        await trio.lowlevel.checkpoint()
        yield self.platform

    def make_link(self) -> Any:
        return self.link
