"""The two things the runtime drives: a :class:`Preprocessor` that turns a room
event into an adapter input, and the :class:`FrameworkAdapter` that handles it.

Optional adapter hooks are declared here as protocols of their own
(:class:`InterruptHandler`, :class:`AllRoomsCleanup`, :class:`TurnJudging`,
:class:`ReportsStuckThreads`, :class:`BackgroundWork`);
:class:`~band_trio.adapter.SimpleAdapter` implements each with a default.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from band_trio.adapter.turns import AgentInput, TurnContext

__all__ = [
    "AllRoomsCleanup",
    "BackgroundWork",
    "FrameworkAdapter",
    "InterruptHandler",
    "Preprocessor",
    "ReportsStuckThreads",
    "TurnJudging",
]


@runtime_checkable
class Preprocessor(Protocol):
    """Turns a room event into an adapter input, or drops it.

    ``process`` is synchronous: the engine hydrates the room (roster, history)
    before calling it, so building the input never blocks.
    """

    def process(self, ctx: TurnContext, event: object, agent_id: str) -> AgentInput | None:
        """Return the adapter input for ``event``, or None to drop it."""
        ...


@runtime_checkable
class FrameworkAdapter(Protocol):
    """The minimal adapter the runtime drives.

    ``on_event`` is called strictly one at a time per room, each call inside its
    own cancel scope (an interrupt, stop or timeout cancels it).
    """

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        """Called once at startup, before the socket connects."""
        ...

    async def on_event(self, inp: AgentInput) -> None:
        """Handle one turn."""
        ...

    async def on_cleanup(self, room_id: str) -> None:
        """The agent left ``room_id`` (or is shutting down): drop its state.

        Runs shielded under a deadline.
        """
        ...


@runtime_checkable
class InterruptHandler(Protocol):
    """An adapter that wants to know when a control signal cut a room's turn."""

    async def on_interrupt(self, room_id: str, mode: str) -> None:
        """An applied ``interrupt`` or ``stop`` signal (``mode``) reached ``room_id``.

        Called once per room the signal reached, concurrently with other
        rooms' calls, cancelled after a short bound; errors are logged.
        """
        ...


@runtime_checkable
class ReportsStuckThreads(Protocol):
    """An adapter that runs work in threads it may fail to stop (an asyncio
    loop's thread, a synchronous framework's workers).

    The agent reads it into ``AgentStatistics.stuck_threads`` and the
    ``band_trio_adapter_stuck_threads`` metric, so an operator sees a thread
    that outlived its work.
    """

    def stuck_threads(self) -> int:
        """Threads the adapter started that did not stop when asked, now.

        Synchronous and cheap: it is read at every ``statistics()`` call.
        """
        ...


@runtime_checkable
class AllRoomsCleanup(Protocol):
    """An adapter with agent-wide state to drop when the agent stops."""

    async def cleanup_all(self) -> None:
        """The agent is stopping: drop every room's state.

        Runs once, shielded, under ``AgentConfig.cleanup_timeout``, after every
        room's ``on_cleanup``.
        """
        ...


@runtime_checkable
class TurnJudging(Protocol):
    """An adapter that says whether the runtime judges its message turns."""

    @property
    def judges_turns(self) -> bool:
        """True: a turn that returns without a reply, a decline or other durable
        work is reported as a missing reply and marked failed."""
        ...


@runtime_checkable
class BackgroundWork(Protocol):
    """An adapter with work of its own that lasts as long as the agent serves
    (closing what rooms left idle, refreshing a token), not tied to a turn."""

    async def run_background(self) -> None:
        """The adapter's background work, for the agent's lifetime.

        Started once per agent run in the agent's own nursery, after
        ``on_started`` and once the agent is connected; cancelled when the
        agent stops (after the rooms' ``on_cleanup`` when it drains) and
        always before ``cleanup_all``. Returning early is fine (nothing restarts it); an
        exception is logged and the agent carries on without it.
        """
        ...
