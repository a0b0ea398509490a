"""Agents embedded in a Trio application: two agents in one process, started
with ``nursery.start``, stopped with a graceful drain; then a turn that never
ends, stopped by cancellation, which returns at once.

Run it with ``python examples/embedding.py``; it uses the embedded platform,
so it needs nothing else.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import trio

import band_trio
from band_trio import HumanClient, LocalPlatform, open_local_platform


class Echo(band_trio.SimpleAdapter[band_trio.HistoryProvider]):
    """Answers with the message's text."""

    async def on_message(
        self,
        msg: band_trio.PlatformMessage,
        tools: band_trio.AgentToolsProtocol,
        history: band_trio.HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        await tools.send_message(f"You said: {msg.content}", [msg.sender_id])


class Shout(Echo):
    """Answers with the message's text in capitals."""

    async def on_message(
        self,
        msg: band_trio.PlatformMessage,
        tools: band_trio.AgentToolsProtocol,
        history: band_trio.HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        await tools.send_message(msg.content.upper(), [msg.sender_id])


class Stuck(Echo):
    """A turn that never ends (a model call that never answers)."""

    def __init__(self) -> None:
        super().__init__()
        self.turn_started = trio.Event()

    async def on_message(
        self,
        msg: band_trio.PlatformMessage,
        tools: band_trio.AgentToolsProtocol,
        history: band_trio.HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        self.turn_started.set()
        await trio.sleep_forever()


def agent_for(
    platform: LocalPlatform,
    creds: band_trio.local.AgentCredentials,
    adapter: band_trio.FrameworkAdapter,
    state_root: Path,
) -> band_trio.Agent:
    """An agent of ``platform``. Each agent has its own state directory: the
    durable ledger is locked while in use, so two agents cannot share one."""
    return band_trio.Agent.create(
        adapter=adapter,
        agent_id=creds.id,
        api_key=creds.api_key,
        rest_url=platform.rest_url,
        ws_url=platform.ws_url,
        config=band_trio.AgentConfig(state_dir=state_root / creds.id),
    )


def status(platform: LocalPlatform, room_id: str, message_id: str, agent_id: str) -> str:
    """The delivery status of a message for one agent, as the platform keeps it."""
    delivery = platform.state.rooms[room_id].by_id[message_id].deliveries.get(agent_id)
    return "none" if delivery is None else str(delivery.status)


async def main(state_root: Path) -> list[str]:
    """Run both parts; what happened, as lines."""
    lines: list[str] = []
    async with open_local_platform(seed_demo=False) as platform:
        echo = platform.register_agent("Echo", "Repeats what you say.")
        shout = platform.register_agent("Shout", "Repeats it louder.")
        stuck = platform.register_agent("Stuck", "Never finishes a turn.")
        async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
            room = await human.create_room("Embedding example")
            for creds in (echo, shout, stuck):
                await human.add_participant(room["id"], creds.id)

            # Part 1: two agents next to the application's own tasks.
            agents = [
                agent_for(platform, echo, Echo(), state_root),
                agent_for(platform, shout, Shout(), state_root),
            ]
            async with trio.open_nursery() as nursery:
                for agent in agents:
                    # Returns once the agent is connected and its rooms joined.
                    await nursery.start(agent.serve)
                sent = await human.post_message(
                    room["id"], "hello agents", [echo.handle, shout.handle]
                )
                with trio.fail_after(30):
                    await platform.wait_for(
                        lambda: all(
                            status(platform, room["id"], sent["id"], creds.id) == "processed"
                            for creds in (echo, shout)
                        )
                    )
                # A graceful drain: intake stops, running turns get
                # shutdown_timeout to finish, then each serve returns.
                for agent in agents:
                    agent.request_shutdown()
            names = {platform.user.id: "you", echo.id: "Echo", shout.id: "Shout"}
            replies = sorted(
                f"{names[m.sender_id]}: {m.content.split('] ', 1)[-1]}"
                for m in platform.state.rooms[room["id"]].messages
                if m.message_type == "text" and m.sender_id != platform.user.id
            )
            lines += replies

            # Part 2: cancellation means now. The stuck turn is cancelled at
            # once and its message left "processing" for the next start.
            stuck_adapter = Stuck()
            agent = agent_for(platform, stuck, stuck_adapter, state_root)
            async with trio.open_nursery() as nursery:
                await nursery.start(agent.serve)
                sent = await human.post_message(room["id"], "take your time", [stuck.handle])
                with trio.fail_after(30):
                    await stuck_adapter.turn_started.wait()
                started = trio.current_time()
                nursery.cancel_scope.cancel()
            elapsed = trio.current_time() - started
            lines.append(f"serve returned {'at once' if elapsed < 5 else 'late'} after cancel")
            lines.append(f"stuck message: {status(platform, room['id'], sent['id'], stuck.id)}")
    return lines


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        for line in trio.run(main, Path(tmp)):
            print(line)
