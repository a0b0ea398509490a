"""An agent serving rooms of the local platform, for adapters' end-to-end tests.

:func:`agent_in_rooms` creates rooms (or takes rooms made earlier), adds an
agent of the platform (its first by default) to them, and runs that agent on
the adapter under test while the test body (or an example's exchange) runs. Each room is an :class:`AgentRoom`: it posts as the
platform's user, or as one of the ``people`` the test asked for (users made
for the test, two of them may share a display name), and reads what the agent
stored on the platform (messages, events, delivery status). Only public names
of band-trio are used, so a test written with it runs the agent as a user
would.

Example::

    async with agent_in_rooms(platform, adapter, people=[("Sam", "sam-a")]) as (room,):
        posted = await room.post("hello", by="sam-a")
        assert await room.settled(posted) == "processed"
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

import band_trio
from band_trio.local import AgentCredentials, HumanClient, LocalPlatform, UserCredentials

__all__ = ["AgentRoom", "agent_in_rooms", "latest_sender_mention", "wait_until"]

_SENDER_LINE = re.compile(r"^\[([^\]\n]+)\]: ", re.MULTILINE)
_HANDLE = re.compile(r"(?:^|\()@([^\s()]+)\)?$")


@attrs.define
class AgentRoom:
    """One room of the local platform that the agent under test serves.

    Attributes:
        platform: the local platform.
        human: the platform's user (the room's creator), as a client.
        room_id: the room.
        agent_id: the agent under test.
        agent_handle: its handle (without ``@``).
        people: the test's other users in the room: handle to (credentials,
            client).
    """

    platform: LocalPlatform
    human: HumanClient
    room_id: str
    agent_id: str
    agent_handle: str
    people: Mapping[str, tuple[UserCredentials, HumanClient]] = attrs.field(factory=dict)

    @property
    def state(self) -> Any:
        """The platform's record of the room."""
        return self.platform.state.rooms[self.room_id]

    def from_agent(self, kind: str | None = None) -> list[Any]:
        """What the agent stored in the room, in order (of one message type, if given)."""
        return [
            m
            for m in self.state.messages
            if m.sender_id == self.agent_id and (kind is None or m.message_type == kind)
        ]

    def events(self, kind: str) -> list[dict[str, Any]]:
        """The agent's events of one type (``tool_call``, ...), their JSON content decoded."""
        return [json.loads(m.content) for m in self.from_agent(kind)]

    def status(self, message_id: str) -> str | None:
        """The agent's delivery status of a message, or None when it has none."""
        delivery = self.state.by_id[message_id].deliveries.get(self.agent_id)
        return None if delivery is None else str(delivery.status)

    def is_settled(self, message_id: str) -> bool:
        """The agent processed the message, or failed it for good."""
        return self.status(message_id) in ("processed", "failed")

    async def settled(self, message_id: str) -> str:
        """Wait until the agent settled the message (:meth:`is_settled`); its
        delivery status, ``"processed"`` or ``"failed"``. Put a deadline
        around it."""
        await self.platform.wait_for(lambda: self.is_settled(message_id))
        return str(self.status(message_id))

    def mentioned_ids(self, message: Any) -> list[str]:
        """The ids a stored message mentions, as the platform recorded them."""
        return [str(m["id"]) for m in message.mentions]

    async def post(self, content: str, *, by: str | None = None) -> str:
        """Post ``@agent content`` mentioning the agent; return the message id.

        Args:
            content: the text after the mention.
            by: the handle of one of :attr:`people` to post as; None posts as
                the platform's user.
        """
        client = self.human if by is None else self.people[by][1]
        sent = await client.post_message(
            self.room_id, f"@{self.agent_handle} {content}", [self.agent_handle]
        )
        return str(sent["id"])


@asynccontextmanager
async def agent_in_rooms(
    platform: LocalPlatform,
    adapter: Any,
    *,
    rooms: int = 1,
    join: Sequence[AgentRoom] = (),
    people: Sequence[tuple[str, str]] = (),
    state_dir: Path | None = None,
    title: str = "adapter e2e",
    agent: AgentCredentials | None = None,
    **config: Any,
) -> AsyncIterator[list[AgentRoom]]:
    """Run an agent of the platform (its first, unless ``agent`` says which)
    on ``adapter`` in ``rooms`` new rooms.

    Args:
        platform: a running local platform (the ``band_platform`` fixture).
        adapter: the adapter under test.
        rooms: how many rooms to create (ignored with ``join``).
        join: rooms made by an earlier call to serve again (a restart).
        people: users to create as ``(display name, handle)``, made
            contacts of the platform's user and added to every new room; two
            may share a display name.
        state_dir: the agent's ``AgentConfig.state_dir``.
        title: the new rooms' title (numbered).
        agent: the agent to run, as :meth:`LocalPlatform.register_agent
            <band_trio.local.LocalPlatform.register_agent>` gave it (default:
            ``platform.agents[0]``).
        **config: further ``AgentConfig`` settings (``max_attempts`` is 1
            unless given).

    Yields:
        The rooms, while the agent serves them; the agent stops on exit.
    """
    creds = platform.agents[0] if agent is None else agent
    settings: dict[str, Any] = {"max_attempts": 1, **config}
    cfg = band_trio.AgentConfig(state_dir=state_dir, **settings)
    async with AsyncExitStack() as stack:
        human = await stack.enter_async_context(
            HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key)
        )
        members: dict[str, tuple[UserCredentials, HumanClient]] = {}
        for name, handle in people:
            user = platform.create_user(name, handle)
            client = await stack.enter_async_context(
                HumanClient(base_url=platform.rest_url, api_key=user.api_key)
            )
            # The platform's user may add only its contacts to a room.
            request = await client.send_contact_request(platform.user.handle)
            await human.approve_contact_request(str(request["id"]))
            members[handle] = (user, client)
        made = [attrs.evolve(r, human=human, people=members) for r in join]
        for n in range(0 if join else rooms):
            room = await human.create_room(f"{title} {n}")
            await human.add_participant(room["id"], creds.id)
            for user, _ in members.values():
                await human.add_participant(room["id"], user.id)
            made.append(
                AgentRoom(platform, human, str(room["id"]), creds.id, creds.handle, members)
            )
        async with band_trio.open_agent(
            adapter=adapter,
            agent_id=creds.id,
            api_key=creds.api_key,
            rest_url=platform.rest_url,
            ws_url=platform.ws_url,
            config=cfg,
        ):
            yield made


def latest_sender_mention(text: str) -> str | None:
    """Whom a scripted model answers: the sender of the last ``[<sender>]: `` line of ``text``.

    Reads the sender the way a model reads it: the handle when the label
    shows one (``"Sam (@sam-b)"`` or ``"@sam-b"`` gives ``"sam-b"``), else the
    label itself (a display name, which may not be unique). None when no line
    names a sender. A model scripted with this decides only from what the
    adapter sent it, so a test of attribution fails when the adapter hides the
    handle.
    """
    labels = _SENDER_LINE.findall(text)
    if not labels:
        return None
    label = str(labels[-1]).strip()
    handle = _HANDLE.search(label)
    return handle.group(1) if handle else label


async def wait_until(predicate: Callable[[], bool], within: float = 10.0) -> None:
    """Wait (real time) until ``predicate()`` is true, re-checking every few ms.

    For state spread over the platform, the agent and other threads (an
    asyncio bridge), which no single event announces.

    Raises:
        trio.TooSlowError: it did not become true within ``within`` seconds.
    """
    with trio.fail_after(within):
        while not predicate():  # noqa: ASYNC110 - polling state spread over threads
            await trio.sleep(0.005)
