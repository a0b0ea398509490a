"""``band-trio dev`` end to end: real processes, a human on the REST API."""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

import httpx
import pytest
import trio

from band_trio.local import HumanClient

from ..conftest import masked
from .helpers import (
    STARTUP,
    STEP,
    band_trio_command,
    bump_mtime,
    echo_source,
    outside_the_environment,
    pid_alive,
    read_banner,
    replies,
    running,
    wait_for_messages,
)

pytestmark = pytest.mark.slow


def running_pid(line: str) -> int:
    match = re.search(r"pid (\d+)", line)
    assert match is not None, line
    return int(match.group(1))


async def test_dev_answers_reloads_survives_a_broken_edit_and_stops(tmp_path: Path) -> None:
    source = tmp_path / "echo.py"
    source.write_text(echo_source("v1"))
    args = ["dev", "echo.py", "--no-chat", "--json", "--reload"]
    async with running(args, tmp_path) as (dev, output):
        info = await read_banner(output)
        assert info["rest_url"].startswith("http://127.0.0.1:")
        (agent,) = info["agents"]
        assert (agent["name"], agent["handle"], agent["target"]) == ("echo", "you/echo", "echo.py")
        first_pid = running_pid(await output.wait_for("@you/echo is running", within=STARTUP))
        room = info["room_id"]
        async with HumanClient(base_url=info["rest_url"], api_key=info["user"]["api_key"]) as human:
            participants = {p["id"] for p in await human.list_participants(room)}
            assert participants == {info["user"]["id"], agent["id"]}

            await human.post_message(room, "@you/echo one", ["you/echo"])
            await wait_for_messages(human, room, lambda m: bool(replies(m, agent["id"], "v1:")))

            # An edit restarts the agent alone: a new process, same room and history.
            source.write_text(echo_source("v2"))
            bump_mtime(source)
            await output.wait_for("echo.py changed, restarting")
            second_pid = running_pid(await output.wait_for("@you/echo is running", times=2))
            assert second_pid != first_pid
            assert not pid_alive(first_pid)
            await human.post_message(room, "@you/echo two", ["you/echo"])
            messages = await wait_for_messages(
                human, room, lambda m: bool(replies(m, agent["id"], "v2:"))
            )
            # The restarted agent did not answer the first message again.
            assert len(replies(messages, agent["id"], "one")) == 1

            # A broken edit is shown, and dev waits for the next save.
            source.write_text("import band_trio\n\nclass Echo(:\n")
            bump_mtime(source)
            error = await output.wait_for("could not load echo.py")
            await output.wait_for("waiting for a change to its source")
            text = output.text()
            assert "SyntaxError" in text[text.index(error) :]
            assert f'File "{source}", line 3' in text
            assert dev.returncode is None
            await human.post_message(room, "@you/echo three", ["you/echo"])

            # Restoring it brings the agent back; it answers what came meanwhile.
            source.write_text(echo_source("v3"))
            bump_mtime(source)
            third_pid = running_pid(await output.wait_for("@you/echo is running", times=3))
            messages = await wait_for_messages(
                human, room, lambda m: bool(replies(m, agent["id"], "v3:"))
            )
            assert any("three" in reply for reply in replies(messages, agent["id"], "v3:"))

        dev.send_signal(signal.SIGINT)
        with trio.fail_after(STEP):
            assert await dev.wait() == 0
        assert not pid_alive(third_pid)


async def test_several_agents_share_one_room(tmp_path: Path) -> None:
    (tmp_path / "alpha.py").write_text(echo_source("alpha"))
    (tmp_path / "beta.py").write_text(echo_source("beta"))
    args = ["dev", "alpha.py", "beta.py:Echo", "--name", "Al", "--no-chat", "--json"]
    async with running(args, tmp_path) as (dev, output):
        info = await read_banner(output)
        al, beta = info["agents"]
        assert (al["handle"], beta["handle"]) == ("you/al", "you/echo")
        await output.wait_for("is running", times=2, within=STARTUP)
        room = info["room_id"]
        async with HumanClient(base_url=info["rest_url"], api_key=info["user"]["api_key"]) as human:
            await human.post_message(room, "@you/al @you/echo hello both", ["you/al", "you/echo"])
            await wait_for_messages(
                human,
                room,
                lambda m: bool(replies(m, al["id"], "alpha:") and replies(m, beta["id"], "beta:")),
            )
        dev.send_signal(signal.SIGTERM)
        with trio.fail_after(STEP):
            assert await dev.wait() == 0


FAILING_SOURCE = """
import band_trio


class Failing(band_trio.SimpleAdapter[band_trio.HistoryProvider]):
    async def on_message(self, msg, tools, history, participants_msg, contacts_msg, *,
                         is_session_bootstrap, room_id):
        raise ValueError("the model is down")
"""


async def test_a_failing_turn_is_one_line_per_attempt_and_one_traceback(tmp_path: Path) -> None:
    (tmp_path / "failing.py").write_text(FAILING_SOURCE)
    async with running(["dev", "failing.py", "--no-chat", "--json"], tmp_path) as (dev, output):
        info = await read_banner(output)
        await output.wait_for("@you/failing is running", within=STARTUP)
        async with HumanClient(base_url=info["rest_url"], api_key=info["user"]["api_key"]) as human:
            await human.post_message(info["room_id"], "@you/failing hi", ["you/failing"])
            await output.wait_for("(attempt 3 of 3)")
        for number in (1, 2, 3):
            lines = [line for line in output.lines if f"(attempt {number} of 3)" in line]
            assert len(lines) == 1, output.text()
            assert f"(attempt {number} of 3): ValueError: the model is down" in lines[0]
        # The traceback is shown once; the agent's log file has every attempt's.
        assert output.text().count("Traceback (most recent call last)") == 1
        first = next(line for line in output.lines if "(attempt 1 of 3)" in line)
        log_file = trio.Path(first.split("every attempt's traceback: ")[1].rstrip(")"))
        # The child writes each record to its log file before the terminal.
        assert (await log_file.read_text()).count("Traceback (most recent call last)") == 3
        dev.send_signal(signal.SIGTERM)
        with trio.fail_after(STEP):
            assert await dev.wait() == 0


async def test_a_broken_target_without_reload_is_reported_and_dev_keeps_running(
    tmp_path: Path,
) -> None:
    (tmp_path / "empty.py").write_text("x = 1\n")
    async with running(["dev", "empty.py", "--no-chat"], tmp_path) as (dev, output):
        await output.wait_for("could not load empty.py", within=STARTUP)
        await output.wait_for("defines no adapter")
        await output.wait_for("@you/empty stopped (run with --reload")
        assert dev.returncode is None
        dev.send_signal(signal.SIGINT)
        with trio.fail_after(STEP):
            assert await dev.wait() == 0


@pytest.mark.parametrize("target", ["bot.py:not-a-name", "missing.py", "missing_module"])
async def test_a_malformed_or_missing_target_exits_2_before_starting(
    tmp_path: Path, target: str
) -> None:
    with trio.fail_after(STARTUP):
        result = await trio.run_process(
            band_trio_command("dev", target, "--no-chat"),
            cwd=tmp_path,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert result.returncode == 2
    assert b"band-trio dev:" in result.stderr
    assert result.stdout == b""


async def test_with_a_state_directory_a_second_run_finds_everything_again(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(echo_source("v1"))
    args = ["dev", "echo.py", "--no-chat", "--json", "--state", "state"]
    runs = []
    for word in ("first", "second"):
        async with running(args, tmp_path) as (dev, output):
            info = await read_banner(output)
            await output.wait_for("@you/echo is running", within=STARTUP)
            (agent,) = info["agents"]
            room = info["room_id"]
            async with HumanClient(
                base_url=info["rest_url"], api_key=info["user"]["api_key"]
            ) as human:
                await human.post_message(room, word, [agent["handle"]])
                answered = lambda m, a=agent["id"], w=word: bool(replies(m, a, w))  # noqa: E731
                messages = await wait_for_messages(human, room, answered)
            dev.send_signal(signal.SIGINT)
            with trio.fail_after(STEP):
                assert await dev.wait() == 0
        runs.append((info, messages))
    (first, _), (second, messages) = runs
    assert second["agents"] == first["agents"]
    assert second["user"] == first["user"]
    assert second["room_id"] == first["room_id"]
    # The history stayed, and nothing was answered twice.
    assert len(replies(messages, first["agents"][0]["id"], "first")) == 1
    assert len(replies(messages, first["agents"][0]["id"], "second")) == 1
    assert (tmp_path / "state" / "agents" / "band-trio" / first["agents"][0]["id"]).is_dir()


async def test_web_opens_the_playground_with_the_token(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(echo_source("v1"))
    opened = tmp_path / "opened.txt"
    recorder = tmp_path / "browser.py"
    recorder.write_text(f"import sys\nopen({str(opened)!r}, 'w').write(sys.argv[1])\n")
    env = {**os.environ, "BROWSER": f"{sys.executable} {recorder} %s"}
    async with running(["dev", "echo.py", "--web", "--json"], tmp_path, env=env) as (dev, output):
        info = await read_banner(output)
        with trio.fail_after(STARTUP):
            while not opened.exists() or not opened.read_text():  # noqa: ASYNC110 - another process writes it
                await trio.sleep(0.05)
        url = opened.read_text()
        assert url == f"{info['rest_url']}/playground?token={info['user']['api_key']}"
        async with httpx.AsyncClient() as client:
            with trio.fail_after(STEP):
                page = await client.get(url)
        assert page.status_code == 200
        assert "text/html" in page.headers["content-type"]
        dev.send_signal(signal.SIGINT)
        with trio.fail_after(STEP):
            assert await dev.wait() == 0


async def test_the_printed_chat_command_works_from_another_folder_and_terminal(
    tmp_path: Path,
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "echo.py").write_text(echo_source("v1"))
    async with running(["dev", "echo.py", "--no-chat"], project) as (dev, output):
        line = await output.wait_for("another terminal: ", within=STARTUP)
        printed = line.split("another terminal: ", 1)[1]
        with trio.fail_after(STARTUP):
            chat = await trio.run_process(
                ["sh", "-c", printed],
                cwd=elsewhere,
                env=outside_the_environment(),
                stdin=b"/quit\n",
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
        assert chat.returncode == 0, masked(chat.stderr.decode())
        assert "dev: echo" in chat.stdout.decode()
        dev.send_signal(signal.SIGINT)
        with trio.fail_after(STEP):
            assert await dev.wait() == 0
