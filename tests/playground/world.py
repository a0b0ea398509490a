"""A local platform and a real agent on a Trio thread, for tests that drive a browser.

Playwright's sync API runs its own event loop in the test's thread, so the
Trio side (the platform, the agent, a room with the user and the agent) runs
in a thread of its own; :func:`running_world` starts it, hands back what the
browser needs, and stops it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import trio

from band_trio.adapter import (
    AgentToolsProtocol,
    HistoryProvider,
    PlatformMessage,
    SimpleAdapter,
    Usage,
    emit_usage,
    post_tool_call,
    post_tool_result,
)
from band_trio.agent import Agent
from band_trio.local import HumanClient, open_local_platform
from band_trio.runtime.config import AgentConfig

ROOM_TITLE = "Playground room"
SLOW_WORD = "slowly"
BROKEN_WORD = "broken"
FAILING_WORD = "failing"
LONG_WORD = "everything"
LONG_RESULT = "\n".join(f"line {n}: weather station {n} reports sun" for n in range(1, 41))
THOUGHT = "The user wants the weather: look it up."
FAILURE = "The weather service is down."
USAGE = Usage(input_tokens=12, output_tokens=7)


class WeatherAdapter(SimpleAdapter[HistoryProvider]):
    """Answers with a thought, one tool call (``lookup``), a reply and its token
    usage. A message with ``slowly`` in it starts a turn that only ends when it
    is interrupted; one with ``broken`` gets an error event and an apology; one
    with ``failing`` posts its thought and raises (every attempt); one with
    ``everything`` gets a long tool result."""

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        if SLOW_WORD in msg.content:
            await trio.sleep_forever()
        if BROKEN_WORD in msg.content:
            await tools.send_event(FAILURE, "error", None)
            await tools.send_message("Sorry, I could not look it up.", [msg.sender_id])
            return
        await tools.send_event(THOUGHT, "thought", None)
        if FAILING_WORD in msg.content:
            raise RuntimeError("the weather model crashed")
        call_id = f"call-{msg.id}"
        await post_tool_call(tools, "lookup", {"query": "weather in Lyon"}, call_id)
        result = LONG_RESULT if LONG_WORD in msg.content else "sunny, 21 degrees"
        await post_tool_result(tools, "lookup", result, call_id)
        await tools.send_message("It is sunny in Lyon today.", [msg.sender_id])
        await emit_usage(tools, USAGE)


@attrs.frozen
class World:
    """What the browser side needs to know."""

    rest_url: str
    token: str
    room_id: str
    agent_id: str
    agent_name: str
    agent_handle: str
    quiet_agent_handle: str | None = None
    """A second agent in the room that is not running (``running_world(quiet_agent=...)``)."""

    @property
    def playground_url(self) -> str:
        return f"{self.rest_url}/playground?token={self.token}"


async def _serve(ready: queue.Queue[Any], quiet_agent: str | None) -> None:
    async with open_local_platform() as platform:
        creds = platform.agents[0]
        quiet = platform.ensure_agent(quiet_agent, "Never runs") if quiet_agent else None
        async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
            room = await human.create_room(ROOM_TITLE)
            await human.add_participant(room["id"], creds.id)
            if quiet is not None:
                await human.add_participant(room["id"], quiet.id)
        agent = Agent.create(
            adapter=WeatherAdapter(),
            agent_id=creds.id,
            api_key=creds.api_key,
            rest_url=platform.rest_url,
            ws_url=platform.ws_url,
            config=AgentConfig(state_dir=None, shutdown_timeout=2.0, working_grace=0.0),
            handle_signals=False,
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(agent.serve)
            world = World(
                rest_url=platform.rest_url,
                token=platform.user.api_key,
                room_id=room["id"],
                agent_id=creds.id,
                agent_name=creds.name,
                agent_handle=creds.handle,
                quiet_agent_handle=quiet.handle if quiet is not None else None,
            )
            ready.put((world, trio.lowlevel.current_trio_token(), nursery.cancel_scope))
            await trio.sleep_forever()


@contextmanager
def running_world(
    start_timeout: float = 30.0, *, quiet_agent: str | None = None
) -> Iterator[World]:
    """Run the platform and the agent on a thread for the ``with`` block
    (with ``quiet_agent``, a second agent of that name in the room, not running)."""
    ready: queue.Queue[Any] = queue.Queue()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            trio.run(_serve, ready, quiet_agent)
        except BaseException as exc:
            failure.append(exc)
            ready.put(None)

    thread = threading.Thread(target=run, name="trio-world", daemon=True)
    thread.start()
    started = ready.get(timeout=start_timeout)
    if started is None:
        raise RuntimeError("the platform thread failed to start") from failure[0]
    world, token, scope = started
    try:
        yield world
    finally:
        trio.from_thread.run_sync(scope.cancel, trio_token=token)
        thread.join(timeout=30)
        assert not thread.is_alive(), "the platform thread did not stop"
        if failure:
            raise failure[0]
