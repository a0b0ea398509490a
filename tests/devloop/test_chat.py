"""The terminal chat's commands, in process against the local platform."""

from __future__ import annotations

import json
import queue
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from band_trio.devloop.chat import COMMANDS, TerminalChat, completion_matches, resolve_mentions
from band_trio.local import HumanClient, LocalPlatform

from .helpers import RecordingConsole

DEADLINE = 20


class Keyboard:
    """Lines for the chat's reader thread; ``None`` is the end of input."""

    def __init__(self) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()

    def read_line(self, prompt: str) -> str:
        line = self.lines.get()
        if line is None:
            raise EOFError
        return line

    def type(self, line: str | None) -> None:
        self.lines.put(line)


@pytest.fixture
async def human(band_platform: LocalPlatform) -> AsyncIterator[HumanClient]:
    async with HumanClient(
        base_url=band_platform.rest_url, api_key=band_platform.user.api_key
    ) as client:
        yield client


async def start_chat(
    nursery: trio.Nursery, human: HumanClient, **kwargs: Any
) -> tuple[RecordingConsole, Keyboard, trio.Event]:
    console, keyboard, done = RecordingConsole(), Keyboard(), trio.Event()
    chat = TerminalChat(human, console, read_line=keyboard.read_line, **kwargs)

    async def run() -> None:
        await chat.run()
        done.set()

    nursery.start_soon(run)
    await console.wait_for("Type a message")
    return console, keyboard, done


async def test_commands_list_rooms_switch_invite_and_quit(
    band_platform: LocalPlatform, human: HumanClient, nursery: trio.Nursery
) -> None:
    demo = band_platform.agents[0]
    first = await human.create_room("first")
    await human.create_room("second")
    console, keyboard, done = await start_chat(nursery, human, room_id=first["id"])
    at = await console.wait_for("=== first — @demo")

    keyboard.type("/help")
    for command in COMMANDS:
        await console.wait_for(command, after=at)
    keyboard.type("/nonsense")
    at = await console.wait_for("!! unknown command /nonsense (/help)", after=at)

    keyboard.type("nobody is listening")
    at = await console.wait_for("!! nobody to talk to here: /invite @agent first", after=at)
    keyboard.type("/invite @nobody")
    at = await console.wait_for("!! nobody called @nobody can join this room", after=at)
    keyboard.type("/invite @echo")
    at = await console.wait_for(f"* invited @{demo.handle}", after=at)
    keyboard.type("/who")
    at = await console.wait_for(f"@{demo.handle}  Echo", after=at)

    keyboard.type("/rooms")
    at = await console.wait_for("first", after=at)
    keyboard.type("/room second")
    at = await console.wait_for("=== second — @demo", after=at)
    keyboard.type("/room 99")
    at = await console.wait_for("!! no such room (see /rooms)", after=at)

    keyboard.type("/verbose")
    at = await console.wait_for("* message status changes shown", after=at)
    keyboard.type("/quit")
    with trio.fail_after(DEADLINE):
        await done.wait()


async def test_entering_a_room_shows_its_history_and_live_messages(
    band_platform: LocalPlatform, human: HumanClient, nursery: trio.Nursery
) -> None:
    demo = band_platform.agents[0]
    room = await human.create_room("talk")
    await human.add_participant(room["id"], demo.id)
    for n in range(3):
        await human.post_message(room["id"], f"earlier {n}", [demo.id])
    console, keyboard, done = await start_chat(nursery, human, history=2)
    at = await console.wait_for("=== talk")
    assert "earlier 0" not in console.text
    at = await console.wait_for(f"@demo: @{demo.handle} earlier 2", after=at)

    # What someone else posts shows live; so does a message typed here.
    band_platform.post_message(room["id"], "from elsewhere", [demo.id])
    at = await console.wait_for(f"@demo: @{demo.handle} from elsewhere", after=at)
    keyboard.type("typed here")  # no mention: the room's agents are addressed
    at = await console.wait_for(f"@demo: @{demo.handle} typed here", after=at)
    keyboard.type("/history 1")
    at = await console.wait_for(f"@demo: @{demo.handle} typed here", after=at)
    keyboard.type(None)
    with trio.fail_after(DEADLINE):
        await done.wait()


async def test_completion_offers_participants_and_commands(
    band_platform: LocalPlatform, human: HumanClient, nursery: trio.Nursery
) -> None:
    demo = band_platform.agents[0]
    room = await human.create_room("talk")
    await human.add_participant(room["id"], demo.id)
    console = RecordingConsole()
    chat = TerminalChat(human, console, room_id=room["id"], read_line=Keyboard().read_line)
    nursery.start_soon(chat.run)
    await console.wait_for("Type a message")
    words = chat.completions()
    assert words[:2] == ["@demo", f"@{demo.handle}"]
    assert set(COMMANDS) <= set(words)


MENTION_CASES = json.loads((Path(__file__).parents[1] / "mention_cases.json").read_text())


@pytest.mark.parametrize("case", MENTION_CASES["cases"], ids=lambda case: case["text"])
def test_mentions_resolve_by_the_shared_rule(case: dict[str, Any]) -> None:
    candidates = {c["id"]: c["handle"] for c in MENTION_CASES["candidates"]}
    content, ids = resolve_mentions(case["text"], candidates)
    assert (content, [candidates[i] for i in ids]) == (case["content"], case["mentions"])


def test_tab_completes_the_part_after_the_owner_too() -> None:
    words = ["@alice", "@you/echo", "@you/weather", "/help"]
    assert completion_matches("@ec", words) == ["@you/echo"]
    assert completion_matches("@you/", words) == ["@you/echo", "@you/weather"]
    assert completion_matches("@", words) == ["@alice", "@you/echo", "@you/weather"]
    assert completion_matches("@al", words) == ["@alice"]
    assert completion_matches("@yo", words) == ["@you/echo", "@you/weather"]
    assert completion_matches("/he", words) == ["/help"]
    assert completion_matches("@zz", words) == []
