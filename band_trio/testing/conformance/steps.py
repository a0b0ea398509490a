"""Scenario steps: what the platform, the people in a room and the operator do.

A :class:`Scenario` is a list of steps over rooms numbered from 0 (the rooms
that exist when the agent starts, then one more per :class:`AddRoom`). Every
step is a frozen value whose ``repr`` is the Python that builds it, so a
shrunk failing scenario printed by the kit can be pasted back into a test::

    replay(make_adapter, Scenario(rooms=1, steps=[Post(0, "hi"), Interrupt(0)]))

Time only passes in :class:`Wait` steps (and in the settling phase after the
last step): every other step happens at the same virtual instant, after the
agent reacted to the step before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import attrs

__all__ = [
    "AddRoom",
    "ContactChange",
    "DeleteRoom",
    "Entry",
    "Interrupt",
    "Join",
    "Leave",
    "Play",
    "Post",
    "ReAddAgent",
    "RemoveAgent",
    "RestFault",
    "Restart",
    "Scenario",
    "Seed",
    "SlowTool",
    "SocketDrop",
    "Step",
    "Stop",
    "ToolFailure",
    "Wait",
]

Sender = Literal["human", "peer", "self"]
"""Who posts: the room's owner (``human``), another agent (``peer``, added to
the room first when it is not in it) or the agent under test itself (``self``,
a message it must never answer)."""

Visitor = Literal["peer", "helper"]
"""Who can join or leave a room: two other agents of the same owner."""


def text_repr(text: str) -> str:
    """``repr(text)``, with a long repeated text written as ``'unit' * n``."""
    if len(text) > 80:
        for period in range(1, 21):
            unit = text[:period]
            count, rest = divmod(len(text), period)
            if unit * count + unit[:rest] == text:
                tail = f" + {unit[:rest]!r}" if rest else ""
                return f"{unit!r} * {count}{tail}"
    return repr(text)


def _room(value: int | None) -> str:
    return "None" if value is None else str(value)


@attrs.frozen(repr=False)
class Post:
    """A text message in ``room``.

    Attributes:
        room: the room's number.
        text: the text (any unicode; a blank text is posted as ``"."``, since
            the platform refuses blank messages).
        sender: who posts it.
        mention: whether it mentions the agent (only mentioned messages are
            delivered to it). The platform wants a mention in every message:
            one that does not mention the agent mentions another member, and
            is not posted when there is none.
        attachments: files attached to it (uploaded by the sender first).
    """

    room: int
    text: str
    sender: Sender = "human"
    mention: bool = True
    attachments: int = 0

    def __repr__(self) -> str:
        extra = ""
        if self.sender != "human":
            extra += f", sender={self.sender!r}"
        if not self.mention:
            extra += ", mention=False"
        if self.attachments:
            extra += f", attachments={self.attachments}"
        return f"Post({self.room}, {text_repr(self.text)}{extra})"


@attrs.frozen(repr=False)
class Entry:
    """One message of a seeded history (see :class:`Seed`).

    Attributes:
        sender: who sent it.
        message_type: ``"text"``, ``"tool_call"``, ``"tool_result"``,
            ``"thought"`` or any other (unknown) type.
        content: its text.
        call_id: for tool calls and results, the id pairing them (in the
            metadata, as the platform tools write it).
    """

    sender: Sender
    message_type: str
    content: str
    call_id: str | None = None

    def __repr__(self) -> str:
        tail = f", call_id={self.call_id!r}" if self.call_id is not None else ""
        return f"Entry({self.sender!r}, {self.message_type!r}, {self.content!r}{tail})"


@attrs.frozen(repr=False)
class Seed:
    """Earlier messages of ``room`` that the agent sees only as history.

    They are stored as if posted before (text mentioning the agent, its own
    messages and events, other agents' tool calls and results, events of types
    the runtime does not know), without being delivered: the agent reads them
    when it hydrates the room on its next session bootstrap.
    """

    room: int
    entries: tuple[Entry, ...]

    def __repr__(self) -> str:
        inner = ", ".join(repr(e) for e in self.entries)
        comma = "," if len(self.entries) == 1 else ""
        return f"Seed({self.room}, ({inner}{comma}))"


@attrs.frozen(repr=False)
class Join:
    """``who`` is added to ``room``."""

    room: int
    who: Visitor = "peer"

    def __repr__(self) -> str:
        return f"Join({self.room}, {self.who!r})"


@attrs.frozen(repr=False)
class Leave:
    """``who`` is removed from ``room`` (nothing happens when not in it)."""

    room: int
    who: Visitor = "peer"

    def __repr__(self) -> str:
        return f"Leave({self.room}, {self.who!r})"


@attrs.frozen(repr=False)
class AddRoom:
    """A new room is created with the agent in it (it gets the next number)."""

    def __repr__(self) -> str:
        return "AddRoom()"


@attrs.frozen(repr=False)
class RemoveAgent:
    """The agent is removed from ``room`` (``room_removed``)."""

    room: int

    def __repr__(self) -> str:
        return f"RemoveAgent({self.room})"


@attrs.frozen(repr=False)
class ReAddAgent:
    """The agent is added back to ``room`` (``room_added``)."""

    room: int

    def __repr__(self) -> str:
        return f"ReAddAgent({self.room})"


@attrs.frozen(repr=False)
class DeleteRoom:
    """``room`` is deleted (``room_deleted``)."""

    room: int

    def __repr__(self) -> str:
        return f"DeleteRoom({self.room})"


@attrs.frozen(repr=False)
class Interrupt:
    """``agent.control`` interrupt for ``room``, or agent-wide when None."""

    room: int | None = None

    def __repr__(self) -> str:
        return f"Interrupt({_room(self.room)})"


@attrs.frozen(repr=False)
class Stop:
    """``agent.control`` stop for ``room``, or agent-wide when None."""

    room: int | None = None

    def __repr__(self) -> str:
        return f"Stop({_room(self.room)})"


@attrs.frozen(repr=False)
class Play:
    """``agent.control`` play for ``room``, or agent-wide when None."""

    room: int | None = None

    def __repr__(self) -> str:
        return f"Play({_room(self.room)})"


@attrs.frozen(repr=False)
class ToolFailure:
    """The agent's next ``times`` posts in ``room`` (messages or events, whichever
    tool sends them) are refused with HTTP ``status``.

    A 5xx or 429 is retried by the REST client; ``times`` above its retry budget
    makes the tool call itself fail.
    """

    room: int
    status: int = 500
    times: int = 4

    def __repr__(self) -> str:
        return f"ToolFailure({self.room}, status={self.status}, times={self.times})"


@attrs.frozen(repr=False)
class RestFault:
    """The agent's next ``times`` REST calls (in ``room``, or any call when
    None) are answered HTTP ``status``; with ``after`` the platform performs
    each first and only the answer is lost (a gateway's 5xx after the call
    took effect), otherwise nothing is done (a 503 before it took effect).
    """

    room: int | None = None
    status: int = 503
    after: bool = False
    times: int = 1

    def __repr__(self) -> str:
        return (
            f"RestFault({self.room}, status={self.status}, after={self.after}, times={self.times})"
        )


@attrs.frozen(repr=False)
class SocketDrop:
    """The agent's WebSocket is lost now and comes back ``seconds`` later
    (virtual): pushes sent meanwhile never arrive; the new connection rejoins
    every topic and the runtime resyncs."""

    seconds: float = 0.0

    def __repr__(self) -> str:
        return f"SocketDrop({self.seconds!r})"


@attrs.frozen(repr=False)
class ContactChange:
    """Someone acts on their contact with the agent: ``"request"`` (asks to
    become a contact), ``"remove"`` (drops an existing contact). The
    platform pushes the contact event to the agent."""

    who: str = "peer"
    action: str = "request"

    def __repr__(self) -> str:
        return f"ContactChange({self.who!r}, {self.action!r})"


@attrs.frozen(repr=False)
class SlowTool:
    """The agent's next post in ``room`` takes ``seconds`` (virtual) to answer.

    Longer than the turn timeout, it makes the turn time out; otherwise it
    keeps a turn in flight for the steps that follow (interrupts, removals,
    restarts).
    """

    room: int
    seconds: float

    def __repr__(self) -> str:
        return f"SlowTool({self.room}, {self.seconds!r})"


@attrs.frozen(repr=False)
class Wait:
    """``seconds`` of virtual time pass."""

    seconds: float

    def __repr__(self) -> str:
        return f"Wait({self.seconds!r})"


@attrs.frozen(repr=False)
class Restart:
    """The agent shuts down gracefully and starts again with a fresh adapter
    (from the factory) and the same claims ledger, as a new process would."""

    def __repr__(self) -> str:
        return "Restart()"


Step = (
    Post
    | Seed
    | Join
    | Leave
    | AddRoom
    | RemoveAgent
    | ReAddAgent
    | DeleteRoom
    | Interrupt
    | Stop
    | Play
    | ToolFailure
    | RestFault
    | SocketDrop
    | ContactChange
    | SlowTool
    | Wait
    | Restart
)
"""Any scenario step."""

_ROOM_STEPS = (Post, Seed, Join, Leave, RemoveAgent, ReAddAgent, DeleteRoom, ToolFailure, SlowTool)


def step_room(step: Step) -> int | None:
    """The room a step concerns, or None for agent-wide steps."""
    if isinstance(step, _ROOM_STEPS):
        return step.room
    if isinstance(step, Interrupt | Stop | Play | RestFault):
        return step.room
    return None


@attrs.frozen(repr=False, init=False)
class Scenario:
    """Rooms that exist when the agent starts, then steps in order.

    Attributes:
        steps: the steps.
        rooms: rooms that exist (with the agent in them) before it starts.
    """

    steps: tuple[Step, ...]
    rooms: int

    def __init__(self, steps: Sequence[Step] = (), rooms: int = 1) -> None:
        self.__attrs_init__(tuple(steps), rooms)

    @property
    def room_count(self) -> int:
        """Every room number the scenario can name."""
        return self.rooms + sum(1 for s in self.steps if isinstance(s, AddRoom))

    @property
    def restarts(self) -> bool:
        """Whether the agent restarts during the scenario."""
        return any(isinstance(s, Restart) for s in self.steps)

    def only_room(self, room: int) -> Scenario:
        """This scenario with the traffic of every other room left out.

        Rooms are still created and removed as before (so numbers stay the
        same); agent-wide steps are kept.
        """
        kept: list[Step] = []
        for step in self.steps:
            target = step_room(step)
            lifecycle = isinstance(step, RemoveAgent | ReAddAgent | DeleteRoom)
            if target is None or target == room or lifecycle:
                kept.append(step)
        return Scenario(kept, rooms=self.rooms)

    def __repr__(self) -> str:
        if not self.steps:
            return f"Scenario([], rooms={self.rooms})"
        lines = "".join(f"    {step!r},\n" for step in self.steps)
        return f"Scenario(rooms={self.rooms}, steps=[\n{lines}])"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # Hypothesis prints failing examples with this hook: show the same
        # pasteable Python as repr().
        printer.text(repr(self))
