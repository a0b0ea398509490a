"""The invariants: what must hold after every scenario, each with its own name.

An :class:`Invariant` reads a finished :class:`~band_trio.testing.conformance.runner.ScenarioResult`
(the kit's trace and the platform's final state) and yields one message per
violation. The messages name rooms by their scenario number, so they can be
read next to the printed scenario.

Write your own by subclassing :class:`Invariant` and passing it in
``invariants=[*DEFAULT_INVARIANTS, Mine()]``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator

from band_trio.testing.conformance._runtime_access import (
    ERROR_EVENT_TEXT,
    MISSING_REPLY_LABEL,
    MISSING_REPLY_TEXT,
)
from band_trio.testing.conformance.runner import ScenarioResult
from band_trio.testing.conformance.trace import is_conversion_error

__all__ = [
    "DEFAULT_INVARIANTS",
    "AgentKeepsServing",
    "AtMostOneReply",
    "CancellationHonoured",
    "HistoryConversion",
    "Invariant",
    "LifecycleHooksOnce",
    "NoDoubleAnswerAfterRestart",
    "NoErrorTextInRoom",
    "NoHiddenErrors",
    "NoLoopBlocking",
    "NothingOutlivesServe",
    "RoomIndependence",
    "SerialTurns",
    "SettledExactlyOnce",
    "StartsPromptly",
]


class Invariant:
    """One property every scenario run must have.

    Subclasses set :attr:`name` and :attr:`description` and implement
    :meth:`violations`.

    Attributes:
        name: a short CamelCase name, shown first in a failure.
        description: what the property is and why the runtime relies on it.
    """

    name: str = "Invariant"
    description: str = ""

    def violations(self, result: ScenarioResult) -> Iterable[str]:
        """Every way ``result`` breaks the property (nothing when it holds)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class AgentKeepsServing(Invariant):
    """``Agent.serve`` never fails because of the adapter (for example an
    ``on_started`` that raises)."""

    name = "AgentKeepsServing"
    description = "the agent serves until it is asked to stop"

    def violations(self, result: ScenarioResult) -> Iterator[str]:
        error = result.error
        if error is not None:
            yield f"the agent stopped serving with {type(error).__name__}: {error}"


class SerialTurns(Invariant):
    """``on_message`` never runs twice at once in one room.

    The runtime runs a room's turns one at a time; an adapter may rely on it
    (no lock around its per-room state). A violation means turns overlapped,
    typically because the adapter kept work going after its turn returned.
    """

    name = "SerialTurns"
    description = "on_message never runs twice at once in a room"

    def violations(self, result: ScenarioResult) -> Iterator[str]:
        trace = result.trace
        for room_id, message_id, other in trace.concurrent:
            yield (
                f"{trace.label(room_id)}: the turn for {trace.message(message_id)} began while "
                f"the turn for {trace.message(other)} was still running"
            )


class SettledExactlyOnce(Invariant):
    """Every delivered message ends settled exactly once, and the agent's own never.

    Settled means marked ``processed``, or ``failed`` after the attempt limit
    (or at once when the runtime judged a turn that ended without a reply).
    Rooms the agent left or that were deleted are not judged.
    """

    name = "SettledExactlyOnce"
    description = (
        "every delivered message ends processed, or failed after the attempt limit, "
        "exactly once; the agent's own messages never get a turn"
    )

    def violations(self, result: ScenarioResult) -> Iterator[str]:
        trace = result.trace
        agent_id = result.agent_id
        limit = result.options.config.max_attempts
        for turn in trace.turns:
            if turn.sender_id == agent_id:
                yield (
                    f"{trace.label(turn.room_id)}: a turn ran for {trace.message(turn.message_id)}, "
                    "which the agent itself sent"
                )
        for room in result.platform.state.rooms.values():
            if agent_id not in room.members:
                continue
            for message in room.inbox.get(agent_id, ()):
                delivery = message.deliveries[agent_id]
                where = f"{trace.label(room.id)}: {trace.message(message.id, message.content)}"
                successes = sum(1 for a in delivery.attempts if a.status == "success")
                if successes > 1:
                    yield f"{where} was marked processed {successes} times"
                if delivery.status == "processed":
                    continue
                if delivery.status == "failed":
                    attempts = len(delivery.attempts)
                    last = delivery.attempts[-1].error if delivery.attempts else None
                    if attempts >= limit or last == MISSING_REPLY_LABEL:
                        continue
                    yield (
                        f"{where} was left failed after {attempts} attempt(s); the limit is {limit}"
                    )
                    continue
                yield f"{where} was never settled (status {delivery.status!r})"


class AtMostOneReply(Invariant):
    """The adapter posts at most ``max_replies_per_message`` replies per message.

    Counted over every attempt and every run of the agent: a retried turn
    that answers again, or a turn that answers twice, breaks it. Adapters
    that answer in several messages on purpose declare it
    (``max_replies_per_message``).
    """

    name = "AtMostOneReply"
    description = "the adapter replies at most once per message unless it declares otherwise"

    def violations(self, result: ScenarioResult) -> Iterator[str]:
        trace = result.trace
        counts: Counter[tuple[str, str]] = Counter()
        for turn in trace.turns:
            counts[turn.room_id, turn.message_id] += len(turn.replies)
        allowed = result.options.max_replies_per_message
        for (room_id, message_id), count in counts.items():
            if count > allowed:
                yield (
                    f"{trace.label(room_id)}: {trace.message(message_id)} got {count} replies "
                    f"(at most {allowed} allowed)"
                )


class LifecycleHooksOnce(Invariant):
    """``on_started`` once per agent run; ``on_cleanup`` once per room life.

    A room's life starts when the runtime starts serving it and ends when it
    stops (removal, deletion, shutdown); ``on_cleanup`` must have run exactly
    once for it, and no turn of the room may run outside a life.
    """

    name = "LifecycleHooksOnce"
    description = "on_started once per run, on_cleanup once per room life"

    def violations(self, result: ScenarioResult) -> Iterator[str]:
        trace = result.trace
        for run, count in enumerate(trace.started):
            if count != 1:
                yield f"run {run}: on_started was called {count} times (expected once)"
        lives = Counter((run, room) for run, room, _ in trace.lives)
        cleanups = Counter((run, room) for run, room, _ in trace.cleanups)
        for key in sorted(set(lives) | set(cleanups)):
            run, room_id = key
            if lives[key] != cleanups[key]:
                yield (
                    f"run {run}, {trace.label(room_id)}: served {lives[key]} time(s) but "
                    f"on_cleanup ran {cleanups[key]} time(s)"
                )
        for turn in trace.turns:
            starts = [t for r, room, t in trace.lives if r == turn.run and room == turn.room_id]
            ends = [t for r, room, t in trace.cleanups if r == turn.run and room == turn.room_id]
            inside = any(
                s < turn.order and not any(s < e < turn.order for e in ends) for s in starts
            )
            if not inside:
                yield (
                    f"run {turn.run}, {trace.label(turn.room_id)}: a turn for "
                    f"{trace.message(turn.message_id)} ran while the room was not being served"
                )


class CancellationHonoured(Invariant):
    """A cancelled turn ends promptly, raising ``trio.Cancelled``, and does nothing more.

    Interrupt, stop, a turn timeout, removal of the room and shutdown all end a
    turn by cancelling its scope. The adapter must let ``trio.Cancelled``
    propagate (never catch it and return or raise something else), end within
    ``cancel_grace`` virtual seconds, and make no tool call once cancelled or
    once its turn is over (a background task posting later).
    """

    name = "CancellationHonoured"
    description = "cancellation is honoured within a grace; nothing runs after it"

    def violations(self, result: ScenarioResult) -> Iterator[str]:
        trace = result.trace
        grace = result.options.cancel_grace
        for turn in trace.turns:
            where = f"{trace.label(turn.room_id)}: the turn for {trace.message(turn.message_id)}"
            if turn.swallowed:
                what = (
                    f"raised {type(turn.error).__name__}"
                    if turn.error is not None
                    else "returned normally"
                )
                yield (
                    f"{where} {what} after it was cancelled ({turn.cancel_reason}); "
                    "it swallowed trio.Cancelled"
                )
            if (
                turn.cancel_at is not None
                and turn.ended_at is not None
                and turn.ended_at > turn.cancel_at + grace
                and turn.cancelled_by(turn.ended_at)
            ):
                late = turn.ended_at - turn.cancel_at
                yield (
                    f"{where} kept running {late:g}s after it was cancelled "
                    f"({turn.cancel_reason}); the grace is {grace:g}s"
                )
            for call in turn.tool_calls:
                if call.after_end:
                    yield (
                        f"{where} called {call.name} at t={call.at:g}s, after its turn had "
                        "ended (work left running in the background)"
                    )
                elif call.after_cancel:
                    yield (
                        f"{where} called {call.name} at t={call.at:g}s, after its turn was "
                        f"cancelled ({turn.cancel_reason})"
                    )


class NoLoopBlocking(Invariant):
    """No step of adapter code holds the event loop longer than ``block_threshold``.

    A Trio instrument times every step of the tasks running adapter code in
    real time. A synchronous sleep, a blocking HTTP client or a long CPU loop
    stalls every room and the WebSocket heartbeat; run such work in
    ``trio.to_thread.run_sync``.
    """

    name = "NoLoopBlocking"
    description = "no synchronous step blocks the event loop longer than a threshold"

    def violations(self, result: ScenarioResult) -> Iterator[str]:
        trace = result.trace
        threshold = result.options.block_threshold
        for block in trace.blocks:
            where = trace.label(block.room_id) if block.room_id else "outside any room"
            yield (
                f"{where}: adapter code held the event loop for {block.seconds:.3f}s in one "
                f"step (threshold {threshold:g}s)"
            )


_TRACEBACK = "Traceback (most recent call last)"


class NoErrorTextInRoom(Invariant):
    """A failure never puts exception text in the room.

    Exceptions carry internals (paths, keys, prompts). The runtime posts one
    generic error event; the adapter must not post ``str(exc)`` or a
    traceback itself.
    """

    name = "NoErrorTextInRoom"
    description = "failures never put exception text in the room"

    def violations(self, result: ScenarioResult) -> Iterator[str]:
        trace = result.trace
        secrets = {
            text
            for turn in trace.turns
            if turn.error is not None
            and len(text := str(turn.error).strip()) >= 8
            and text not in (ERROR_EVENT_TEXT, MISSING_REPLY_TEXT)
        }
        for room_id in trace.room_ids:
            for message in result.agent_posts(room_id):
                posted = message.content + " " + json.dumps(message.metadata, default=str)
                if _TRACEBACK in posted:
                    yield f"{trace.label(room_id)}: the agent posted a traceback"
                for text in secrets:
                    if text in posted:
                        yield (
                            f"{trace.label(room_id)}: the agent posted the text of an exception "
                            f"({text[:60]!r}) in a {message.message_type}"
                        )


class NoDoubleAnswerAfterRestart(Invariant):
    """After a restart no message is answered again.

    The claims ledger survives the restart; a message answered before it must
    not get a reply from the new run.
    """

    name = "NoDoubleAnswerAfterRestart"
    description = "after a restart no message is answered twice"

    def violations(self, result: ScenarioResult) -> Iterator[str]:
        trace = result.trace
        answered: dict[tuple[str, str], int] = {}
        for turn in trace.turns:
            key = (turn.room_id, turn.message_id)
            if not turn.replies:
                continue
            first = answered.setdefault(key, turn.run)
            if first < turn.run:
                yield (
                    f"{trace.label(turn.room_id)}: {trace.message(turn.message_id)}, answered in "
                    f"run {first}, was answered again after the restart (run {turn.run})"
                )


class HistoryConversion(Invariant):
    """The adapter's history converter is total and its output is valid.

    Every history the platform can hand over (tool calls without results,
    results without calls, other agents' events, unknown event types) must
    convert without raising, and the result must pass the provider validator
    given in the options.
    """

    name = "HistoryConversion"
    description = "a history converter is total and its output passes the provider validator"

    def violations(self, result: ScenarioResult) -> Iterator[str]:
        trace = result.trace
        for record in trace.conversions:
            kinds = ", ".join(f"{i.role}/{i.message_type}" for i in record.items)
            if record.error is not None:
                yield (
                    f"{trace.label(record.room_id)}: the history converter raised "
                    f"{type(record.error).__name__}: {record.error} on a history of "
                    f"{len(record.items)} item(s) [{kinds}]"
                )
            for problem in record.problems:
                yield (
                    f"{trace.label(record.room_id)}: the converted history is invalid: "
                    f"{problem} (history [{kinds}])"
                )
        for turn in trace.turns:
            if is_conversion_error(turn.error) and not trace.conversions:
                yield f"{trace.label(turn.room_id)}: the history converter raised"


class NoHiddenErrors(Invariant):
    """A turn that replied does not raise afterwards.

    The runtime retries a failed turn and, finding the reply already posted,
    only acks the message: the room's outcome looks right while the adapter
    raised every time. A turn whose error came from a refused tool call (the
    platform said no) is not counted: the error is the platform's.
    """

    name = "NoHiddenErrors"
    description = "an adapter that replied does not then raise"

    def violations(self, result: ScenarioResult) -> Iterator[str]:
        trace = result.trace
        for turn in trace.turns:
            if turn.outcome != "raised" or not turn.replies or is_conversion_error(turn.error):
                continue
            if turn.tool_calls and not turn.tool_calls[-1].ok:
                continue  # raised by a refused tool call
            yield (
                f"{trace.label(turn.room_id)}: the adapter replied to "
                f"{trace.message(turn.message_id)} and then raised "
                f"{type(turn.error).__name__}: {turn.error}"
            )


class StartsPromptly(Invariant):
    """``on_started`` returns within ``RunOptions.start_bound`` virtual seconds:
    the agent serves no room until it has."""

    name = "StartsPromptly"
    description = "on_started returns within the start bound"

    def violations(self, result: ScenarioResult) -> Iterator[str]:
        bound = result.options.start_bound
        for run, seconds in enumerate(result.trace.start_durations):
            if seconds > bound:
                yield (
                    f"run {run}: on_started took {seconds:.1f} s (bound {bound:.1f} s); "
                    "the agent could not serve meanwhile"
                )


class NothingOutlivesServe(Invariant):
    """Every thread and Trio task the adapter started is over once ``serve``
    returned (``on_cleanup`` and ``cleanup_all`` end them)."""

    name = "NothingOutlivesServe"
    description = "no thread or task of the adapter outlives serve"

    def violations(self, result: ScenarioResult) -> Iterator[str]:
        for run, what in result.trace.leftovers:
            yield f"run {run}: {what} was still alive after serve returned"


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class RoomIndependence(Invariant):
    """A room's output does not depend on what happens in the other rooms.

    Metamorphic: the kit plays the scenario again with only one room's
    traffic and compares what the agent posted in that room. Meaningful for
    deterministic adapters only: it is checked with ``deterministic=True`` or
    when listed in ``invariants``. A difference means state leaks between
    rooms (one conversation shared by all rooms, a global counter...).
    """

    name = "RoomIndependence"
    description = "a room's output is the same whether or not other rooms are busy"

    def violations(self, result: ScenarioResult) -> Iterator[str]:
        # Needs a second run; the checker (see kit.check_result) supplies it.
        return iter(())

    @staticmethod
    def outputs(result: ScenarioResult, room: int) -> list[str]:
        """What the agent posted in room number ``room``, ids replaced by handles."""
        trace = result.trace
        if room >= len(trace.room_ids):
            return []
        names = trace.names

        def clean(text: str) -> str:
            return _UUID.sub(lambda m: names.get(m.group(0), "<id>"), text)

        return [
            f"{m.message_type}: {clean(m.content)}"
            for m in result.agent_posts(trace.room_ids[room])
        ]

    @staticmethod
    def compare(full: ScenarioResult, alone: ScenarioResult, room: int) -> Iterator[str]:
        """The differences between a room's output in both runs."""
        busy = RoomIndependence.outputs(full, room)
        quiet = RoomIndependence.outputs(alone, room)
        if busy != quiet:
            yield (
                f"room {room}: the agent's output differs when the other rooms are busy\n"
                f"      with other rooms busy: {busy}\n"
                f"      room alone:            {quiet}"
            )


DEFAULT_INVARIANTS: tuple[Invariant, ...] = (
    AgentKeepsServing(),
    SerialTurns(),
    SettledExactlyOnce(),
    AtMostOneReply(),
    LifecycleHooksOnce(),
    CancellationHonoured(),
    NoLoopBlocking(),
    NoErrorTextInRoom(),
    NoDoubleAnswerAfterRestart(),
    HistoryConversion(),
    NoHiddenErrors(),
    StartsPromptly(),
    NothingOutlivesServe(),
)
"""Every invariant that needs a single run (:class:`RoomIndependence` needs two
and is switched on with ``deterministic=True``)."""
