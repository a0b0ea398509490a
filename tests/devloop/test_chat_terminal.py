"""The terminal chat under a pseudo-terminal: ``band-trio dev`` and ``band-trio chat``."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
import trio

import band_trio
import band_trio.adapter
from band_trio.local import LocalPlatform

from .helpers import STARTUP, STEP, bump_mtime, echo_source, on_terminal, pid_alive

pytestmark = pytest.mark.slow


async def test_dev_opens_the_chat_which_talks_completes_and_makes_rooms(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(echo_source("v1"))
    async with on_terminal(["dev", "echo.py"], tmp_path) as term:
        at = await term.wait_for("Type a message", within=STARTUP)
        await term.wait_for("@you/echo is running", within=STARTUP)

        await term.type("@you/echo hello there\r")
        at = await term.wait_for("@you: @you/echo hello there", after=at)
        # The agent's answer (the platform puts the mention of its recipient first).
        at = await term.wait_for("@you/echo: @you v1: @you/echo hello there", after=at)

        # Tab completes the handle; "@echo" is short for it.
        await term.type("@you/e\t completed\r")
        at = await term.wait_for("@you: @you/echo completed", after=at)
        at = await term.wait_for("v1: @you/echo completed", after=at)
        await term.type("@ec\t by its name\r")
        at = await term.wait_for("@you: @you/echo by its name", after=at)
        at = await term.wait_for("v1: @you/echo by its name", after=at)
        await term.type("@echo short\r")
        at = await term.wait_for("@you: @you/echo short", after=at)
        at = await term.wait_for("v1: @you/echo short", after=at)

        await term.type("/agents\r")
        at = await term.wait_for("@you/echo  connected", after=at)

        # A new room gets the dev agent; /rooms lists both.
        await term.type("/new side\r")
        at = await term.wait_for("=== side — @you, @you/echo", after=at)
        # No mention: every agent of the room is addressed.
        await term.type("in the side room\r")
        at = await term.wait_for("v1: @you/echo in the side room", after=at)
        await term.type("/rooms\r")
        at = await term.wait_for("dev: echo", after=at)
        at = await term.wait_for("side", after=at)

        await term.type("/quit\r")
        with trio.fail_after(STEP):
            assert await term.process.wait() == 0


class SlowTool(band_trio.SimpleAdapter[band_trio.HistoryProvider]):
    """Posts a tool call for every message; "slow" ones then wait until cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.cancelled = trio.Event()

    async def on_message(  # type: ignore[override]
        self, msg, tools, history, participants_msg, contacts_msg, *, is_session_bootstrap, room_id
    ) -> None:
        await band_trio.adapter.post_tool_call(tools, "lookup", {"query": "weather"}, "call-1")
        if "slow" in msg.content:
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                self.cancelled.set()
                raise
        await band_trio.adapter.post_tool_result(tools, "lookup", "sunny", "call-1")
        await tools.send_message("done: " + msg.content, [msg.sender_id])


async def test_chat_attaches_shows_events_and_interrupts(
    band_platform: LocalPlatform, tmp_path: Path
) -> None:
    creds = band_platform.agents[0]
    adapter = SlowTool()
    async with band_trio.open_agent(
        adapter=adapter,
        agent_id=creds.id,
        api_key=creds.api_key,
        rest_url=band_platform.rest_url,
        ws_url=band_platform.ws_url,
        config=band_trio.AgentConfig(state_dir=None),
    ):
        args = ["chat", "--url", band_platform.rest_url, "--token", band_platform.user.api_key]
        async with on_terminal(args, tmp_path) as term:
            # The user has no room yet: the chat makes one; the agent is invited.
            at = await term.wait_for("=== chat 1 — @demo", within=STARTUP)
            at = await term.wait_for("Type a message", after=at)
            await term.type(f"/invite @{creds.handle}\r")
            at = await term.wait_for(f"* invited @{creds.handle}", after=at)
            await term.type("/interrupt\r")
            at = await term.wait_for("* nothing to interrupt: no turn is running", after=at)

            await term.type("@echo quick\r")
            at = await term.wait_for(
                f"@{creds.handle} -> lookup({json.dumps({'query': 'weather'})})", after=at
            )
            at = await term.wait_for(f"@{creds.handle} <- lookup returned: sunny", after=at)
            at = await term.wait_for(
                f"@{creds.handle}: @demo done: @{creds.handle} quick", after=at
            )

            await term.type("@echo slow please\r")
            at = await term.wait_for(f"@{creds.handle} -> lookup(", after=at)
            # A turn longer than the runtime's grace shows as working.
            at = await term.wait_for(f"* @{creds.handle} is working…", after=at)
            await term.type("/interrupt\r")
            # The command's answer and the feed's state change come in either order.
            sent = await term.wait_for(f"* interrupting @{creds.handle}", after=at)
            with trio.fail_after(STEP):
                await adapter.cancelled.wait()
            # The interrupted turn leaves a note in the conversation.
            noted = await term.wait_for(f"* @{creds.handle}: turn interrupted", after=at)
            at = max(sent, noted, await term.wait_for(f"* @{creds.handle} is idle", after=at))

            await term.type("/stop\r")
            sent = await term.wait_for(f"* stop sent to @{creds.handle}", after=at)
            at = max(sent, await term.wait_for(f"@{creds.handle} is stopped here", after=at))
            await term.type("/play\r")
            at = await term.wait_for(f"* play sent to @{creds.handle}", after=at)

            await term.type("/quit\r")
            with trio.fail_after(STEP):
                assert await term.process.wait() == 0


async def test_dev_stops_its_agents_on_sigint_mid_line(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(echo_source("v1"))
    async with on_terminal(["dev", "echo.py"], tmp_path) as term:
        await term.wait_for("Type a message", within=STARTUP)
        line = await term.wait_for("@you/echo is running", within=STARTUP)
        agent_pid = int(term.screen[line:].split("pid ")[1].split(")")[0])
        await term.type("half a line")
        await term.wait_for("half a line")
        term.process.send_signal(signal.SIGINT)
        with trio.fail_after(STEP):
            assert await term.process.wait() == 0
        assert not pid_alive(agent_pid)


async def test_a_message_typed_during_a_reload_is_answered_by_the_new_code(
    tmp_path: Path,
) -> None:
    source = tmp_path / "echo.py"
    source.write_text(echo_source("v1"))
    async with on_terminal(["dev", "echo.py", "--reload"], tmp_path) as term:
        await term.wait_for("Type a message", within=STARTUP)
        at = await term.wait_for("@you/echo is running", within=STARTUP)
        source.write_text(echo_source("v2"))
        bump_mtime(source)
        # Typed at once, before the watch has even looked at the file.
        await term.type("@echo right after saving\r")
        held = await term.wait_for("your message waits until @you/echo is running", after=at)
        restarting = await term.wait_for("echo.py changed, restarting", after=at)
        # The restart is announced before the old process goes offline.
        offline = await term.wait_for("@you/echo is offline", after=restarting)
        running_again = await term.wait_for("@you/echo is running", after=offline)
        posted = await term.wait_for("@you: @you/echo right after saving", after=held)
        assert posted > running_again
        await term.wait_for("v2: @you/echo right after saving", after=posted)
        assert "v1: @you/echo right after saving" not in term.screen
        await term.type("/quit\r")
        with trio.fail_after(STEP):
            assert await term.process.wait() == 0
