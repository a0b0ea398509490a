"""The terminal chat: talk to agents as a human, watch everything they do.

Line based. A worker thread reads lines (with readline's editing, history and
tab completion of ``@handles`` and commands when available), while the Trio
side prints every message and live event of the platform's human feed as it
arrives. A line is posted to the current room; a line starting with ``/`` is a
command (``/help`` lists them).

A message needs at least one mention: ``@handle`` words naming participants
(``@echo`` is enough when one participant's handle ends with ``/echo``); a
message naming nobody goes to every agent in the room.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import trio

from band_trio._terminal import terminal_safe
from band_trio.devloop.console import Console
from band_trio.devloop.render import ChatDirectory, render_event, render_message, shorten
from band_trio.errors import BandError

__all__ = [
    "COMMANDS",
    "TerminalChat",
    "completion_matches",
    "install_completion",
    "resolve_handle",
    "resolve_mentions",
]

COMMANDS: dict[str, str] = {
    "/rooms": "list your rooms",
    "/room": "/room N|ID: switch to a room",
    "/new": "/new [TITLE]: create a room and switch to it",
    "/invite": "/invite @handle: add a participant to this room",
    "/who": "list this room's participants",
    "/agents": "your agents: connected, working, messages processed",
    "/history": "/history [N]: show the last N messages (20)",
    "/interrupt": "/interrupt [@agent]: cancel the running turn",
    "/stop": "/stop [@agent]: cancel and pause the agent in this room",
    "/play": "/play [@agent]: resume a stopped agent",
    "/verbose": "show or hide message status changes",
    "/help": "this list",
    "/quit": "leave (Ctrl+D too)",
}
"""Every command and what it does."""

_MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9_][\w.-]*(?:/[\w-]+(?:\.[\w-]+)*)?)", re.ASCII)
_TRAILING = ".,;:!?"
_FEED_RETRY = 0.5
_FEED_RETRY_MAX = 10.0


def resolve_handle(word: str, candidates: Mapping[str, str]) -> str | None:
    """The id of the candidate (id -> handle) that ``@word`` names: the one whose
    handle is ``word``, else the only one whose handle ends with ``/word``
    (``@echo`` for ``@you/echo``); letter case does not matter.

    The browser playground applies the same rule (``resolveMentions`` in its
    ``app.js``); ``tests/mention_cases.json`` holds both to it.
    """
    word = word.lstrip("@").rstrip(_TRAILING).lower()
    if not word:
        return None
    exact = [pid for pid, handle in candidates.items() if handle.lower() == word]
    if exact:
        return exact[0]
    short = [pid for pid, handle in candidates.items() if handle.lower().endswith("/" + word)]
    return short[0] if len(short) == 1 else None


def resolve_mentions(text: str, candidates: Mapping[str, str]) -> tuple[str, list[str]]:
    """The message ``text`` with every ``@word`` that names a candidate (see
    :func:`resolve_handle`) written as the full handle, and the ids mentioned,
    in order, each once. A word naming nobody stays as it is."""
    mentioned: list[str] = []

    def full(match: re.Match[str]) -> str:
        word = match.group(1)
        stripped = word.rstrip(_TRAILING)
        pid = resolve_handle(stripped, candidates)
        if pid is None:
            return match.group(0)
        if pid not in mentioned:
            mentioned.append(pid)
        return "@" + candidates[pid] + word[len(stripped) :]

    return _MENTION.sub(full, text), mentioned


def completion_matches(text: str, words: Sequence[str]) -> list[str]:
    """The words that complete ``text``: those starting with it, and for an
    ``@owner/name`` handle also ``@`` + the start of ``name`` (``@ec`` completes
    to ``@you/echo``)."""
    lowered = text.lower()
    return [
        w
        for w in words
        if w.startswith(text)
        or (
            lowered.startswith("@")
            and "/" in w
            and w.startswith("@")
            and w.rsplit("/", 1)[1].lower().startswith(lowered[1:])
        )
    ]


def install_completion(words: Callable[[], Sequence[str]]) -> None:
    """Tab-complete ``@handles`` and commands with readline, when it exists.

    Args:
        words: called on each completion; the current candidates.
    """
    try:
        # Optional: readline is missing on some platforms (completion then is off).
        import readline
    except ImportError:  # pragma: no cover - no readline on this platform
        return
    matches: list[str] = []

    def complete(text: str, state: int) -> str | None:
        if state == 0:
            matches[:] = completion_matches(text, words())
        return matches[state] if state < len(matches) else None

    readline.set_completer_delims(" \t\n")
    readline.set_completer(complete)
    # libedit (macOS) and GNU readline spell the binding differently.
    if "libedit" in (readline.__doc__ or ""):
        readline.parse_and_bind("bind ^I rl_complete")
    else:
        readline.parse_and_bind("tab: complete")


class TerminalChat:
    """A human's terminal chat on a Band platform that serves the live feed.

    Args:
        human: a ``HumanClient`` of the user (``band_trio.local.HumanClient``).
        console: where everything is printed.
        room_id: the room to open (the user's most recent room when None; a new
            one when the user has none).
        new_room_invites: participant ids added to every room ``/new`` creates
            (``band-trio dev`` passes its agents).
        read_line: reads one line given a prompt, blocking (run in a worker
            thread); raises ``EOFError`` at the end of input. ``input`` by
            default.
        history: how many earlier messages are shown on entering a room.
        before_post: awaited before each message is posted (``band-trio dev``
            holds a message there while an agent restarts, so that the new
            code answers it).
    """

    def __init__(
        self,
        human: Any,
        console: Console,
        *,
        room_id: str | None = None,
        new_room_invites: Sequence[str] = (),
        read_line: Callable[[str], str] = input,
        history: int = 20,
        before_post: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.human = human
        self.console = console
        self.room_id: str | None = None
        """The room shown (None until the first one is entered)."""
        self._first_room = room_id
        self.new_room_invites = list(new_room_invites)
        self.read_line = read_line
        self.history = history
        self.before_post = before_post
        self.roster = ChatDirectory()
        self.verbose = False
        self.me: dict[str, Any] = {}
        self.rooms: list[dict[str, Any]] = []
        self._participants: list[str] = []
        self._seen: set[str] = set()

    # ------------------------------------------------------------------ running

    async def run(self) -> None:
        """Chat until ``/quit`` or the end of input.

        Raises:
            BandError: the platform could not be reached at the start.
        """
        self.me = await self.human.profile()
        self.roster.learn({**self.me, "type": "User"})
        for agent in await self.human.list_agents():
            self.roster.learn({**agent, "type": "Agent"})
        async with trio.open_nursery() as nursery:
            await nursery.start(self._follow_feed)
            await self._open_first_room()
            self.say("Type a message (@handle to mention; Tab completes), /help for commands.")
            await self._read_loop()
            nursery.cancel_scope.cancel()

    def say(self, text: str) -> None:
        """Print a line for the user."""
        self.console.print(text)

    def completions(self) -> list[str]:
        """Words Tab completes now: participants' ``@handles``, then commands."""
        handles = [
            "@" + self.roster.handles[p] for p in self._participants if p in self.roster.handles
        ]
        return sorted(handles) + list(COMMANDS)

    @property
    def prompt(self) -> str:
        """The input prompt: the current room's title."""
        title = next((r.get("title") for r in self.rooms if r["id"] == self.room_id), None)
        return terminal_safe(f"{title or 'chat'}> ")

    async def _read_loop(self) -> None:
        while True:
            prompt = self.prompt
            self.console.prompt = prompt
            try:
                line = await trio.to_thread.run_sync(self.read_line, prompt, abandon_on_cancel=True)
            except EOFError:
                return
            finally:
                self.console.prompt = None
            line = line.strip()
            if not line:
                continue
            try:
                if line.startswith("/"):
                    if not await self._command(line):
                        return
                else:
                    await self._post(line)
            except BandError as exc:
                self.say(f"!! {exc}")

    # ------------------------------------------------------------------ the feed

    async def _follow_feed(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Print the feed's events; reconnect after a failure, waiting longer
        after each one in a row (up to ``_FEED_RETRY_MAX`` seconds) and saying
        so once, not on every attempt."""
        task_status.started()
        delay = _FEED_RETRY
        failing = False
        while True:
            try:
                async with contextlib.aclosing(self.human.stream()) as stream:
                    async for kind, room_id, data in stream:
                        if failing:
                            self.say("* live feed back")
                            failing, delay = False, _FEED_RETRY
                        await self._on_event(kind, room_id, data)
                problem = "ended"
            except BandError as exc:
                problem = f"failed ({exc})"
            if not failing:
                self.say(f"!! the live feed {problem}; reconnecting")
                failing = True
            await trio.sleep(delay)
            delay = min(delay * 2, _FEED_RETRY_MAX)

    async def _on_event(self, kind: str, room_id: str | None, data: dict[str, Any]) -> None:
        if kind == "resync":
            await self._catch_up()
            return
        if kind == "room_updated":  # a new title shows in the prompt
            self.rooms = await self.human.list_rooms()
            return
        if kind in ("room_added", "room_removed"):
            room = data.get("room") or {}
            verb = "added" if kind == "room_added" else "removed"
            self.say(f"* room {room.get('title') or room.get('id')!r} {verb} (/rooms)")
            self.rooms = await self.human.list_rooms()
            return
        if room_id != self.room_id:
            if kind == "message_created" and data.get("message_type") == "text":
                title = next((r.get("title") for r in self.rooms if r["id"] == room_id), room_id)
                self.say(f"[{title}] {shorten(render_message(data, self.roster), 200)}")
            return
        if kind == "message_created":
            if data.get("id") in self._seen:
                return
            self._seen.add(data["id"])
        if kind in ("participant_added", "participant_removed"):
            participant = data.get("participant") or {}
            pid = participant.get("id")
            if kind == "participant_added" and pid and pid not in self._participants:
                self._participants.append(pid)
            if kind == "participant_removed" and pid in self._participants:
                self._participants.remove(pid)
        line = render_event(kind, data, self.roster, verbose=self.verbose)
        if line is not None:
            self.say(line)

    async def _catch_up(self) -> None:
        """Show what the feed may have dropped: unseen messages of this room."""
        if self.room_id is None:
            return
        try:
            messages = await self.human.list_messages(self.room_id)
        except BandError:
            return
        for message in messages:
            if message["id"] not in self._seen:
                self._seen.add(message["id"])
                self.say(render_message(message, self.roster))

    # ------------------------------------------------------------------ rooms

    async def _open_first_room(self) -> None:
        self.rooms = await self.human.list_rooms()
        room_id = self._first_room
        if room_id is None:
            if not self.rooms:
                await self._new_room(None)
                return
            room_id = max(self.rooms, key=lambda r: r.get("updated_at") or "")["id"]
        await self._enter(room_id)

    async def _enter(self, room_id: str) -> None:
        participants = await self.human.list_participants(room_id)
        messages = await self.human.list_messages(room_id)
        # Switch with no checkpoint in between: the feed task then sees either
        # the old room or the new one with its messages marked as shown.
        self.room_id = room_id
        for participant in participants:
            self.roster.learn(participant)
        self._participants = [p["id"] for p in participants]
        self.roster.activity.clear()
        self._seen = {m["id"] for m in messages}
        title = next((r.get("title") for r in self.rooms if r["id"] == room_id), None)
        names = ", ".join(self.roster.label(p) for p in self._participants)
        self.say(f"=== {title or room_id} — {names}")
        for message in messages[-self.history :] if self.history else []:
            self.say(render_message(message, self.roster))

    async def _new_room(self, title: str | None) -> None:
        room = await self.human.create_room(title or f"chat {len(self.rooms) + 1}")
        for pid in self.new_room_invites:
            await self.human.add_participant(room["id"], pid)
        self.rooms = await self.human.list_rooms()
        await self._enter(room["id"])

    def _find_room(self, key: str) -> dict[str, Any] | None:
        if key.isdigit() and 1 <= int(key) <= len(self.rooms):
            return self.rooms[int(key) - 1]
        for room in self.rooms:
            if room["id"] == key or (room.get("title") or "").lower() == key.lower():
                return room
        return None

    # ------------------------------------------------------------------ messages

    def _candidates(self, ids: Sequence[str]) -> dict[str, str]:
        """Who a mention may name among ``ids`` (id -> handle): not the user."""
        me = self.me.get("id")
        return {p: self.roster.handles[p] for p in ids if p in self.roster.handles and p != me}

    async def _post(self, text: str) -> None:
        if self.room_id is None:
            self.say("!! no room: /new creates one")
            return
        content, mentions = resolve_mentions(text, self._candidates(self._participants))
        if not mentions:
            mentions = [p for p in self._participants if p in self.roster.agents]
        if not mentions:
            self.say("!! nobody to talk to here: /invite @agent first")
            return
        if self.before_post is not None:
            await self.before_post()
        await self.human.post_message(self.room_id, content, mentions)

    # ------------------------------------------------------------------ commands

    async def _command(self, line: str) -> bool:
        """Run one command; False to quit."""
        name, _, rest = line.partition(" ")
        rest = rest.strip()
        if name == "/quit":
            return False
        if name == "/help":
            for command, text in COMMANDS.items():
                self.say(f"  {command:<11} {text}")
        elif name == "/rooms":
            self.rooms = await self.human.list_rooms()
            for index, room in enumerate(self.rooms, 1):
                mark = "*" if room["id"] == self.room_id else " "
                self.say(f" {mark}{index:>3}  {room.get('title') or '(untitled)'}  {room['id']}")
        elif name == "/room":
            self.rooms = await self.human.list_rooms()
            found = self._find_room(rest)
            if found is None:
                self.say("!! no such room (see /rooms)")
            else:
                await self._enter(found["id"])
        elif name == "/new":
            await self._new_room(rest or None)
        elif name == "/invite":
            await self._invite(rest)
        elif name == "/who":
            for participant in await self.human.list_participants(self._room()):
                self.roster.learn(participant)
                self.say(f"  {self.roster.label(participant['id'])}  {participant.get('name', '')}")
        elif name == "/agents":
            await self._agents()
        elif name == "/history":
            count = int(rest) if rest.isdigit() else 20
            for message in (await self.human.list_messages(self._room()))[-count:]:
                self.say(render_message(message, self.roster))
        elif name in ("/interrupt", "/stop", "/play"):
            await self._control(name[1:], rest)
        elif name == "/verbose":
            self.verbose = not self.verbose
            self.say(f"* message status changes {'shown' if self.verbose else 'hidden'}")
        else:
            self.say(f"!! unknown command {name} (/help)")
        return True

    def _room(self) -> str:
        if self.room_id is None:
            raise _NoRoom("no room: /new creates one")
        return self.room_id

    async def _invite(self, handle: str) -> None:
        room_id = self._room()
        if not handle:
            self.say("!! /invite @handle")
            return
        peers = await self.human.peers(not_in_chat=room_id)
        for peer in peers:
            self.roster.learn(peer)
        pid = resolve_handle(handle, self._candidates([p["id"] for p in peers]))
        if pid is None:
            self.say(f"!! nobody called {handle} can join this room")
            return
        await self.human.add_participant(room_id, pid)
        if pid not in self._participants:
            self._participants.append(pid)
        self.say(f"* invited {self.roster.label(pid)}")

    async def _control(self, action: str, who: str) -> None:
        room_id = self._room()
        agent_id = None
        if who:
            agent_id = resolve_handle(who, self._candidates(self._participants))
            if agent_id is None:
                self.say(f"!! no agent {who} in this room")
                return
        if action == "interrupt":
            running = await self.human.interrupt(room_id, agent_id)
            if running:
                self.say(f"* interrupting {', '.join(self.roster.label(a) for a in running)}")
            else:
                self.say("* nothing to interrupt: no turn is running")
            return
        sent = await self.human.control(room_id, action, agent_id)
        names = ", ".join(self.roster.label(a) for a in sent) or "no agent"
        self.say(f"* {action} sent to {names}")

    async def _agents(self) -> None:
        for agent in await self.human.agent_status():
            self.roster.learn({**agent, "type": "Agent"})
            counts = agent.get("messages") or {}
            state = "connected" if agent.get("connected") else "offline"
            self.say(
                f"  @{agent.get('handle')}  {state}, {agent.get('status')}; "
                f"processed {counts.get('processed', 0)}, processing "
                f"{counts.get('processing', 0)}, failed {counts.get('failed', 0)}"
            )


class _NoRoom(BandError):
    pass
