"""`band-trio platform` as a real subprocess, and the `band_platform` fixture."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from band_trio.cli import ENV_FILE_AGENT, build_parser, main
from band_trio.local import LocalPlatform, open_local_platform
from tests.local.cli_helpers import STARTUP_DEADLINE, cli_command, read_line, stop_process


async def _run_platform_until(sig: int, *, as_json: bool) -> tuple[bytes, int]:
    args = ["platform", "--port", "0"] + (["--json"] if as_json else [])
    process = await trio.lowlevel.open_process(
        cli_command(*args), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        with trio.fail_after(STARTUP_DEADLINE):
            assert process.stdout is not None
            output = await read_line(process.stdout)
            if as_json:
                info = json.loads(output)
                headers = {"x-api-key": info["agents"][0]["api_key"]}
                async with httpx.AsyncClient(base_url=info["rest_url"], headers=headers) as client:
                    me = (await client.get("/api/v1/agent/me")).json()["data"]
                assert me["id"] == info["agents"][0]["id"]
            else:
                # the text banner has more lines: read until the agent's key
                while b"BAND_API_KEY=" not in output:
                    chunk = await process.stdout.receive_some(4096)
                    assert chunk, output
                    output += chunk
            process.send_signal(sig)
            code = await process.wait()
        return output, code
    finally:
        if process.returncode is None:
            os.kill(process.pid, signal.SIGKILL)
            await process.wait()


async def test_platform_json_line_then_sigint_exits_zero() -> None:
    output, code = await _run_platform_until(signal.SIGINT, as_json=True)
    assert code == 0
    line = output.decode().strip()
    assert "\n" not in line
    info = json.loads(line)
    assert set(info) == {"rest_url", "ws_url", "user", "agents"}
    assert info["rest_url"].startswith("http://127.0.0.1:")
    assert (
        info["ws_url"] == info["rest_url"].replace("http://", "ws://") + "/api/v1/socket/websocket"
    )
    assert set(info["user"]) == {"id", "api_key", "handle"}
    assert len(info["agents"]) == 1
    assert set(info["agents"][0]) == {"id", "api_key", "name", "handle"}
    assert info["agents"][0]["handle"].startswith(info["user"]["handle"] + "/")


async def test_platform_text_banner_then_sigterm_exits_zero() -> None:
    output, code = await _run_platform_until(signal.SIGTERM, as_json=False)
    assert code == 0
    text = output.decode()
    assert "REST URL:" in text
    assert "WebSocket URL:" in text
    assert "User API key:" in text
    assert "BAND_AGENT_ID=" in text


def test_parser_requires_a_subcommand() -> None:
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args([])
    args = parser.parse_args(["platform", "--port", "8123", "--json"])
    assert (args.command, args.port, args.json, args.host) == ("platform", 8123, True, "127.0.0.1")


def test_parser_reads_state_agents_and_env_file() -> None:
    args = build_parser().parse_args(
        ["platform", "--state", "st", "--agent", "a", "--agent", "b c", "--env-file", "{agent}.env"]
    )
    assert (args.state, args.agents, args.env_file) == ("st", ["a", "b c"], "{agent}.env")
    defaults = build_parser().parse_args(["platform"])
    assert (defaults.state, defaults.agents, defaults.env_file) == (None, [], None)


def test_one_env_file_for_several_agents_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env_file = tmp_path / "agents.env"
    argv = ["platform", "--agent", "a", "--agent", "b", "--env-file", str(env_file)]
    assert main(argv) == 2
    assert "{agent}" in capsys.readouterr().err
    assert not env_file.exists()


def test_env_files_of_two_owners_agents_of_one_name_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    setup = LocalPlatform(state_dir=state)  # the demo user's agent Echo
    try:
        other = setup.create_user("Other", "other")
        setup.register_agent("Echo", "the other owner's", owner=other)
    finally:
        setup.close()
    pattern = str(tmp_path / f"{ENV_FILE_AGENT}.env")
    assert main(["platform", "--state", str(state), "--env-file", pattern]) == 2
    assert "echo.env" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.env"))


def test_a_state_dir_in_use_exits_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    holder = LocalPlatform(state_dir=tmp_path)
    try:
        assert main(["platform", "--state", str(tmp_path)]) == 1
    finally:
        holder.close()
    err = capsys.readouterr().err
    assert err.startswith("band-trio platform: ")
    assert "in use by another local platform" in err


async def test_band_platform_fixture_is_serving(band_platform: LocalPlatform) -> None:
    async with httpx.AsyncClient(base_url=band_platform.rest_url) as client:
        with trio.fail_after(10):
            response = await client.get(
                "/api/v1/agent/me", headers={"x-api-key": band_platform.agents[0].api_key}
            )
    assert response.status_code == 200
    assert band_platform.ws_url.startswith("ws://127.0.0.1:")


async def test_platform_on_a_busy_port_exits_one(band_platform: LocalPlatform) -> None:
    port = band_platform.rest_url.rsplit(":", 1)[1]
    with trio.fail_after(STARTUP_DEADLINE):
        result = await trio.run_process(
            cli_command("platform", "--port", port, "--json"),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert result.returncode == 1
    assert result.stdout == b""
    assert b"band-trio platform:" in result.stderr


async def _platform_json(*extra: str) -> tuple[dict[str, Any], trio.Process]:
    process = await trio.lowlevel.open_process(
        cli_command("platform", "--port", "0", "--json", *extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    with trio.fail_after(STARTUP_DEADLINE):
        return json.loads(await read_line(process.stdout)), process


async def test_platform_admin_api_only_with_the_admin_flag() -> None:
    info, process = await _platform_json()
    try:
        assert "admin_key" not in info
        async with httpx.AsyncClient(base_url=info["rest_url"]) as client:
            with trio.fail_after(STARTUP_DEADLINE):
                response = await client.get("/_local/admin/state")
        assert response.status_code == 404
    finally:
        assert await stop_process(process) == 0
    info, process = await _platform_json("--admin")
    try:
        key = info["admin_key"]
        assert key not in {info["user"]["api_key"], *(a["api_key"] for a in info["agents"])}
        async with httpx.AsyncClient(base_url=info["rest_url"]) as client:
            with trio.fail_after(STARTUP_DEADLINE):
                assert (await client.get("/_local/admin/state")).status_code == 401
                user_key = {"x-admin-key": info["user"]["api_key"]}
                assert (
                    await client.get("/_local/admin/state", headers=user_key)
                ).status_code == 401
                admin = {"x-admin-key": key}
                assert (await client.get("/_local/admin/state", headers=admin)).status_code == 200
    finally:
        assert await stop_process(process) == 0


def test_loopback_addresses() -> None:
    from band_trio.local.server import is_loopback

    for host in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.168.1.10", "::ffff:10.0.0.1", "example.com", ""):
        assert not is_loopback(host), host


def _banner_info(*, exposed: bool) -> dict[str, object]:
    info: dict[str, object] = {
        "rest_url": "http://h:1",
        "ws_url": "ws://h:1/api/v1/socket/websocket",
        "user": {"id": "u1", "api_key": "band_user_SECRET", "handle": "demo"},
        "agents": [{"id": "a1", "api_key": "band_agent_SECRET", "name": "A", "handle": "demo/a"}],
        "admin_key": "band_admin_SECRET",
    }
    if exposed:
        info["exposed"] = "0.0.0.0"
    return info


def test_a_non_loopback_bind_warns_and_hides_keys_from_the_banner(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from band_trio.cli import _print_info

    _print_info(_banner_info(exposed=True), False)
    out, err = capsys.readouterr()
    assert "SECRET" not in out
    assert "hidden: not bound to loopback" in out
    assert "BAND_AGENT_ID=a1" in out
    assert "warning" in err
    assert "0.0.0.0" in err
    # --json is an explicit request for the keys: they are given, after the warning
    _print_info(_banner_info(exposed=True), True)
    out, err = capsys.readouterr()
    assert json.loads(out)["user"]["api_key"] == "band_user_SECRET"
    assert "warning" in err
    # on loopback: keys in the banner, no warning
    _print_info(_banner_info(exposed=False), False)
    out, err = capsys.readouterr()
    assert "band_agent_SECRET" in out
    assert "band_admin_SECRET" in out
    assert err == ""


async def test_serving_beyond_loopback_logs_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import band_trio.local.server as server

    # Tests bind loopback only: play an exposed interface by answering for it.
    monkeypatch.setattr(server, "is_loopback", lambda host: False)
    with caplog.at_level(logging.WARNING, logger="band_trio.local"):
        async with server.open_local_platform():
            pass
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("not loopback" in message for message in warnings), warnings


async def test_serving_on_loopback_logs_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="band_trio.local"):
        async with open_local_platform():
            pass
    assert not [r for r in caplog.records if "not loopback" in r.getMessage()]


@pytest.mark.slow
async def test_the_banner_prints_a_chat_command_that_opens_a_room_with_the_agent(
    tmp_path: Path,
) -> None:
    from tests.devloop.helpers import outside_the_environment

    process = await trio.lowlevel.open_process(
        cli_command("platform"), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        with trio.fail_after(STARTUP_DEADLINE):
            assert process.stdout is not None
            output = b""
            while b"talk to it:" not in output or not output.endswith(b"\n"):
                chunk = await process.stdout.receive_some(4096)
                assert chunk, output
                output += chunk
            line = next(li for li in output.decode().splitlines() if "talk to it:" in li)
            printed = line.split("talk to it:", 1)[1].strip()
            chat = await trio.run_process(
                ["sh", "-c", printed],
                cwd=tmp_path,
                env=outside_the_environment(),
                stdin=b"/quit\n",
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
        assert chat.returncode == 0, chat.stderr
        assert "=== chat with Echo — @demo, @demo/echo" in chat.stdout.decode()
    finally:
        if process.returncode is None:
            os.kill(process.pid, signal.SIGKILL)
            await process.wait()
