"""The user's key reaches ``band-trio chat`` without a command line showing it,
and ``band-trio dev`` beyond loopback keeps it out of its banner."""

from __future__ import annotations

import os
import subprocess
from typing import Any

import trio

from band_trio.devloop.session import ENV_USER_TOKEN, HIDDEN_TOKEN, UI, DevOptions, _banner
from band_trio.devloop.targets import parse_target
from band_trio.local import LocalPlatform

from .helpers import STARTUP, band_trio_command


async def _chat(
    url: str, *args: str, stdin: bytes = b"", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    environment = {k: v for k, v in os.environ.items() if k != ENV_USER_TOKEN}
    environment.update(env or {})
    with trio.fail_after(STARTUP):
        return await trio.run_process(
            band_trio_command("chat", "--url", url, *args),
            stdin=stdin,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=environment,
        )


async def test_chat_takes_the_key_from_the_environment_or_stdin(
    band_platform: LocalPlatform,
) -> None:
    key = band_platform.user.api_key
    url = band_platform.rest_url
    by_env = await _chat(url, env={ENV_USER_TOKEN: key})
    by_stdin = await _chat(url, "--token", "-", stdin=key.encode() + b"\n")
    for result in (by_env, by_stdin):
        # the key was accepted: the chat opened a room, then ended with its input
        assert result.returncode == 0, result.stderr.decode()
        assert b"Type a message" in result.stdout
        assert key.encode() not in result.stdout + result.stderr
    missing = await _chat(url)
    assert missing.returncode == 2
    assert ENV_USER_TOKEN in missing.stderr.decode()


async def test_dev_beyond_loopback_keeps_the_key_out_of_its_banner(
    band_platform: LocalPlatform,
) -> None:
    agents: list[tuple[Any, Any]] = [(parse_target("echo.py"), band_platform.agents[0])]
    room = {"id": "r1", "title": "dev: echo"}
    for ui in UI:
        options = DevOptions(targets=("echo.py",), ui=ui, host="0.0.0.0")
        text = _banner(band_platform, room, agents, options)
        assert band_platform.user.api_key not in text
        assert HIDDEN_TOKEN in text
