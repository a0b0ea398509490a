"""The dev session's options, banner and command line."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from band_trio.cli import build_parser
from band_trio.devloop.commands import band_trio_command as printed_command
from band_trio.devloop.session import UI, DevOptions, _banner, is_loopback
from band_trio.devloop.targets import TargetError, parse_target
from band_trio.local import LocalPlatform

from .helpers import STARTUP, band_trio_command


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("192.168.1.10", False),
        ("example.org", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_options_need_a_target_and_no_more_names_than_targets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("a.py", "a/echo.py", "b/echo.py", "pkg/__init__.py", "pkg/b.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("")
    with pytest.raises(TargetError, match="at least one TARGET"):
        DevOptions(targets=()).parsed_targets()
    with pytest.raises(TargetError, match="2 --name for 1 target"):
        DevOptions(targets=("a.py",), names=("x", "y")).parsed_targets()
    with pytest.raises(TargetError, match=r"same agent \(echo\)"):
        DevOptions(targets=("a/echo.py", "b/echo.py")).parsed_targets()
    both = DevOptions(targets=("a/echo.py", "b/echo.py"), names=("first",))
    assert both.agent_names(both.parsed_targets()) == ["first", "echo"]
    assert [t.default_name for t in DevOptions(targets=("a.py", "pkg.b:c")).parsed_targets()] == [
        "a",
        "c",
    ]


async def test_the_banner_prints_the_token_once(band_platform: LocalPlatform) -> None:
    agents: list[tuple[Any, Any]] = [(parse_target("echo.py"), band_platform.agents[0])]
    room = {"id": "r1", "title": "dev: echo"}
    token = band_platform.user.api_key
    for ui in UI:
        text = _banner(band_platform, room, agents, DevOptions(targets=("echo.py",), ui=ui))
        assert text.count(token) == 1, text
        assert f"@{band_platform.agents[0].handle}  <- echo.py" in text
    web = _banner(band_platform, room, agents, DevOptions(targets=("echo.py",), ui=UI.WEB))
    assert f"{band_platform.rest_url}/playground?token={token}" in web
    chat = _banner(band_platform, room, agents, DevOptions(targets=("echo.py",)))
    command = printed_command("chat", "--url", band_platform.rest_url)
    assert f"BAND_USER_TOKEN={token} {command}" in chat


def test_a_target_that_names_nothing_is_refused_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    for spec, error in (
        ("missing.py", "no such file"),
        ("sub/missing.py", "no such file"),
        ("folder", "a directory, not a .py file"),
        ("missing_module", "no module named 'missing_module'"),
        ("missing_package.module:make", "no module named 'missing_package'"),
    ):
        with pytest.raises(TargetError, match=error):
            DevOptions(targets=(spec,)).parsed_targets()
    (tmp_path / "here.py").write_text("")
    assert [t.module for t in DevOptions(targets=("here", "json")).parsed_targets()] == [
        "here",
        "json",
    ]


def test_the_dev_and_chat_command_lines() -> None:
    parser = build_parser()
    args = parser.parse_args(
        ["dev", "a.py", "pkg.b:make", "--name", "Alpha", "--reload", "--web", "--state", "s"]
    )
    assert (args.targets, args.names, args.reload, args.web, args.no_chat) == (
        ["a.py", "pkg.b:make"],
        ["Alpha"],
        True,
        True,
        False,
    )
    assert (args.host, args.port, args.state) == ("127.0.0.1", 0, "s")
    with pytest.raises(SystemExit):
        parser.parse_args(["dev", "a.py", "--web", "--no-chat"])
    with pytest.raises(SystemExit):
        parser.parse_args(["dev"])
    chat = parser.parse_args(["chat", "--url", "http://127.0.0.1:1", "--token", "t"])
    assert (chat.url, chat.token, chat.room) == ("http://127.0.0.1:1", "t", None)


def test_state_paths_are_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    parser = build_parser()
    args = parser.parse_args(["dev", "a.py", "--state", "state"])
    assert Path(args.state).resolve() == tmp_path / "state"


async def test_chat_with_a_wrong_token_or_no_platform_is_one_line_and_status_1(
    band_platform: LocalPlatform,
) -> None:
    for url, token in (
        (band_platform.rest_url, "band_u_wrong"),
        ("http://127.0.0.1:9", band_platform.user.api_key),
    ):
        with trio.fail_after(STARTUP):
            result = await trio.run_process(
                band_trio_command("chat", "--url", url, "--token", token),
                stdin=subprocess.DEVNULL,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
        stderr = result.stderr.decode()
        assert result.returncode == 1, stderr
        assert stderr.startswith("band-trio chat: ")
        assert len(stderr.strip().splitlines()) == 1
        assert token not in stderr
