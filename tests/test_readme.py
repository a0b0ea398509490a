"""The README's quick start really runs: its adapter answers on the local platform."""

from __future__ import annotations

import re
import shlex
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

import band_trio
from band_trio.local import HumanClient, LocalPlatform
from tests.devloop.helpers import (
    STEP,
    outside_the_environment,
    read_banner,
    replies,
    running,
    wait_for_messages,
)

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.rst"
DEMO_COMMAND = "uv run --no-dev --extra local band-trio demo"
CLONE = "/path/to/band-trio"
"""How the README names the user's clone."""
DEV_TOOLS = {"pytest", "mypy", "ruff", "sphinx", "playwright", "hypothesis", "langgraph"}


def quick_start_source() -> str:
    text = README.read_text()
    match = re.search(r"\.\. code-block:: python\n\n((?:    .*\n|\n)+)", text)
    assert match is not None, "README.rst has no python code block"
    return "\n".join(line[4:] for line in match.group(1).splitlines())


def test_readme_gives_the_two_commands() -> None:
    text = README.read_text()
    assert f"    {DEMO_COMMAND}\n" in text
    assert "    uv run --all-packages pytest\n" in text


def uv() -> str:
    found = shutil.which("uv")
    if found is None:
        pytest.skip("uv is not on PATH (the README's commands are uv commands)")
    return found


def locked_packages(*options: str) -> set[str]:
    """The packages ``uv run OPTIONS`` installs, read from uv.lock (no network)."""
    exported = subprocess.run(
        [uv(), "export", "--frozen", "--no-hashes", "--format", "requirements-txt", *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {
        re.split(r"[=<>;\s\[]", line, maxsplit=1)[0].lower()
        for line in exported.splitlines()
        if line and not line.startswith(("#", " ", "-e"))
    }


def test_the_demo_command_installs_only_what_the_demo_needs() -> None:
    options = shlex.split(DEMO_COMMAND)[2:-2]
    demo = locked_packages(*options)
    assert {"trio", "httpx", "hypercorn", "h11"} <= demo
    assert demo.isdisjoint(DEV_TOOLS), demo & DEV_TOOLS
    # The README's test command still installs everything the tests use.
    assert locked_packages("--all-packages") >= DEV_TOOLS


async def test_quick_start_adapter_answers(band_platform: LocalPlatform) -> None:
    namespace: dict[str, Any] = {"__name__": "readme_quick_start"}
    exec(compile(quick_start_source(), str(README), "exec"), namespace)
    agent_creds = band_platform.agents[0]
    config = band_trio.AgentConfig(state_dir=None)
    with trio.fail_after(30):
        async with (
            HumanClient(
                base_url=band_platform.rest_url, api_key=band_platform.user.api_key
            ) as human,
            band_trio.open_agent(
                adapter=namespace["Echo"](),
                agent_id=agent_creds.id,
                api_key=agent_creds.api_key,
                rest_url=band_platform.rest_url,
                ws_url=band_platform.ws_url,
                config=config,
            ),
        ):
            room = await human.create_room("readme")
            await human.add_participant(room["id"], agent_creds.id)
            posted = await human.post_message(room["id"], "hello there", [agent_creds.handle])
            state_room = band_platform.state.rooms[room["id"]]

            def answered() -> bool:
                return any(m.sender_id == agent_creds.id for m in state_room.messages)

            await band_platform.wait_for(answered)
    (reply,) = [m for m in state_room.messages if m.sender_id == agent_creds.id]
    assert "You said:" in reply.content
    assert "hello there" in reply.content
    delivery = state_room.by_id[posted["id"]].deliveries[agent_creds.id]
    assert delivery.status == "processed"


@pytest.mark.slow
async def test_quick_start_runs_under_band_trio_dev_from_a_folder_outside_the_clone(
    tmp_path: Path,
) -> None:
    text = README.read_text()
    assert "    band-trio dev echo.py --reload\n" in text
    printed = f"    uv run --project {CLONE} band-trio dev echo.py --reload\n"
    assert printed in text
    command = shlex.split(printed.replace(CLONE, str(ROOT)))
    command[command.index("--reload")] = "--no-chat"
    (tmp_path / "echo.py").write_text(quick_start_source())
    # As a user types it in a new terminal; frozen so that the test never edits uv.lock.
    env = {**outside_the_environment(), "UV_FROZEN": "1"}
    command[0] = uv()
    async with running([], tmp_path, command=[*command, "--json"], env=env) as (dev, output):
        info = await read_banner(output)
        (agent,) = info["agents"]
        assert agent["handle"] == "you/echo"
        room = info["room_id"]
        async with HumanClient(base_url=info["rest_url"], api_key=info["user"]["api_key"]) as human:
            await human.post_message(room, "hello", [agent["handle"]])
            messages = await wait_for_messages(
                human, room, lambda m: bool(replies(m, agent["id"], "You said:"))
            )
        assert "hello" in replies(messages, agent["id"], "You said:")[0]
        dev.send_signal(signal.SIGINT)
        with trio.fail_after(STEP):
            assert await dev.wait() == 0


def test_the_readme_lists_every_chat_command() -> None:
    from band_trio.devloop.chat import COMMANDS

    text = " ".join(README.read_text().split())
    match = re.search(r"``/help`` lists the commands: (.*?)\.(?:\s|$)", text)
    assert match is not None
    listed = re.findall(r"``(/\w+)``", match.group(1))
    assert listed == list(COMMANDS)


def test_every_page_names_the_same_claude_model() -> None:
    from band_trio_anthropic.adapter import DEFAULT_MODEL

    pages = [
        README,
        ROOT / "adapters" / "langgraph" / "README.rst",
        ROOT / "adapters" / "anthropic" / "README.rst",
    ]
    pages += sorted((ROOT / "docs").rglob("*.rst")) + sorted((ROOT / "examples").glob("*.py"))
    named = {
        (page.name, model)
        for page in pages
        if page.exists()
        for model in re.findall(r"\bclaude-[a-z]+-[0-9][\w.-]*", page.read_text())
        if page.name != "changelog.rst"
    }
    assert named, "no page names a model"
    assert {model for _, model in named} == {DEFAULT_MODEL}, sorted(named)
