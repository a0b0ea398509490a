"""The README's quick start really runs: its adapter answers on the local platform."""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any

import pytest
import trio

import band_trio
from band_trio.local import HumanClient, LocalPlatform
from tests.devloop.helpers import STEP, read_banner, replies, running, wait_for_messages

README = Path(__file__).resolve().parents[1] / "README.rst"


def quick_start_source() -> str:
    text = README.read_text()
    match = re.search(r"\.\. code-block:: python\n\n((?:    .*\n|\n)+)", text)
    assert match is not None, "README.rst has no python code block"
    return "\n".join(line[4:] for line in match.group(1).splitlines())


def test_readme_gives_the_two_commands() -> None:
    text = README.read_text()
    assert "    uv run band-trio demo\n" in text
    assert "    uv run --all-packages pytest\n" in text


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
async def test_quick_start_runs_under_band_trio_dev(tmp_path: Path) -> None:
    text = README.read_text()
    assert "    band-trio dev echo.py --reload\n" in text
    (tmp_path / "echo.py").write_text(quick_start_source())
    async with running(["dev", "echo.py", "--no-chat", "--json"], tmp_path) as (dev, output):
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
