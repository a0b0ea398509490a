"""``band-trio demo``: a whole Band conversation on this machine, in a few seconds.

It starts the embedded local platform, an example agent (an echo-ish
:class:`~band_trio.adapter.SimpleAdapter`) and a human in one room, posts
a few messages as the human, prints the conversation live as it happens, then
shuts everything down and exits 0. Nothing leaves the loopback interface.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import trio

from band_trio._terminal import terminal_safe
from band_trio.adapter.messages import HistoryProvider, PlatformMessage
from band_trio.adapter.simple import SimpleAdapter
from band_trio.adapter.tool_protocol import AgentToolsProtocol
from band_trio.agent import Agent
from band_trio.runtime.config import AgentConfig

if TYPE_CHECKING:
    # Only for the annotation: the local platform is the optional `local` extra.
    from band_trio.local import LocalPlatform

__all__ = ["DEMO_MESSAGES", "EchoAdapter", "main", "run_demo"]

DEMO_MESSAGES: tuple[str, ...] = (
    "Hello! Who are you?",
    "Can you repeat this sentence back to me?",
    "Thanks, that is all for today.",
)
"""What the human says, one message at a time."""


class EchoAdapter(SimpleAdapter[HistoryProvider]):
    """A tiny adapter that answers every message by echoing it to its sender.

    It shows the whole adapter contract: the runtime calls :meth:`on_message`
    once per message, one at a time per room, and the only way anything reaches
    the room is through ``tools``. What it says in a room depends only on that
    room: each room has its own count of messages, forgotten in
    :meth:`on_cleanup` when the agent leaves the room.

    Attributes:
        turns: turns taken in every room together.
    """

    def __init__(self) -> None:
        super().__init__()
        self.turns = 0
        # One count per room: turns of a room run one at a time, so no lock.
        self._room_turns: dict[str, int] = {}

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
        """Answer ``msg`` by echoing it back to its sender."""
        self.turns += 1
        count = self._room_turns[room_id] = self._room_turns.get(room_id, 0) + 1
        text = msg.content
        # Drop our own @mention at the front of the message.
        words = text.split()
        if words and words[0].startswith("@"):
            text = " ".join(words[1:])
        sender = msg.sender_name or "friend"
        if is_session_bootstrap:
            reply = f"Hi {sender}, I am {self.agent_name}. You said: {text!r}"
        else:
            reply = f"You said: {text!r} (message {count} in this room)"
        await tools.send_message(reply, [msg.sender_id])

    async def on_cleanup(self, room_id: str) -> None:
        """Forget the room's count of messages."""
        self._room_turns.pop(room_id, None)


_TOKEN = re.compile(r"@\[\[([^\]]+)\]\]")


def _label(message: dict[str, Any], names: dict[str, str], handles: dict[str, str]) -> str:
    sender = message.get("sender_name") or names.get(message.get("sender_id", "")) or "?"
    # Show the platform's @[[id]] mention tokens as @handle, as a client would.
    content = _TOKEN.sub(
        lambda m: "@" + handles.get(m.group(1), m.group(1)), message.get("content", "")
    )
    return f"[{sender}] {content}"


async def run_demo(
    *,
    messages: Sequence[str] = DEMO_MESSAGES,
    out: TextIO | None = None,
    reply_timeout: float = 10.0,
) -> int:
    """Run the demo; returns the process exit status (0 when every message got a reply).

    Args:
        messages: what the human posts, one after the other (each waits for the
            agent's answer).
        out: where the conversation is printed (stdout by default).
        reply_timeout: how long to wait for each answer.
    """
    # Lazy: the local platform is the optional `local` extra.
    from band_trio.local import HumanClient, open_local_platform

    stream = out if out is not None else sys.stdout

    def say(line: str) -> None:
        print(terminal_safe(line), file=stream, flush=True)

    async with open_local_platform() as platform:
        creds = platform.agents[0]
        user = platform.user
        say(f"Local Band platform at {platform.rest_url}")
        adapter = EchoAdapter()
        agent = Agent.create(
            adapter=adapter,
            agent_id=creds.id,
            api_key=creds.api_key,
            rest_url=platform.rest_url,
            ws_url=platform.ws_url,
            config=AgentConfig(state_dir=None, shutdown_timeout=5.0),
            handle_signals=False,
        )
        names = {user.id: user.name, creds.id: creds.name}
        handles = {user.id: user.handle, creds.id: creds.handle}
        answered = 0
        async with HumanClient(base_url=platform.rest_url, api_key=user.api_key) as human:
            room = await human.create_room(title="band-trio demo")
            room_id = room["id"]
            await human.add_participant(room_id, creds.id)
            say(f"Room {room_id}: {user.name} (@{user.handle}) and {creds.name} (@{creds.handle})")
            say("")
            seen: set[str] = set()
            async with trio.open_nursery() as nursery:
                await nursery.start(agent.serve)
                for text in messages:
                    await human.post_message(
                        room_id, f"@{creds.handle} {text}", mentions=[creds.handle]
                    )
                    with trio.move_on_after(reply_timeout):
                        await _print_until_answered(
                            platform, human, room_id, creds.id, seen, names, handles, say
                        )
                        answered += 1
                agent.request_shutdown()
        say("")
        say(f"{answered} of {len(messages)} messages answered ({adapter.turns} agent turns).")
        return 0 if answered == len(messages) else 1


async def _print_until_answered(
    platform: LocalPlatform,
    human: Any,
    room_id: str,
    agent_id: str,
    seen: set[str],
    names: dict[str, str],
    handles: dict[str, str],
    say: Callable[[str], None],
) -> None:
    """Print new room messages as they arrive, until the agent answers.

    The room is listed again only when the platform stored a new message (its
    ``wait_for`` wakes on every state change): no polling.
    """
    room = platform.state.rooms[room_id]
    while True:
        answered = False
        stored = len(room.messages)
        for message in await human.list_messages(room_id):
            if message["id"] in seen:
                continue
            seen.add(message["id"])
            if message.get("message_type") == "text":
                say(_label(message, names, handles))
                answered = answered or message.get("sender_id") == agent_id
        if answered:
            return

        def grown(stored: int = stored) -> bool:
            return len(room.messages) > stored

        await platform.wait_for(grown)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``band-trio demo``."""
    del argv
    return trio.run(run_demo)
