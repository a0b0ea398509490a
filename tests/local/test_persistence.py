"""A local platform with ``state_dir`` remembers everything across a restart."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

import band_trio
from band_trio.errors import BandConfigError
from band_trio.local import HumanClient, LocalPlatform, open_local_platform
from band_trio.local.persistence import STATE_FILE_NAME, StateFile
from tests.local.cli_helpers import STARTUP_DEADLINE, cli_command, read_line, stop_process
from tests.local.helpers import IO_DEADLINE, agent_http, user_http

RESTART_DEADLINE = 30


def _view(platform: LocalPlatform) -> dict[str, Any]:
    """Everything a restart must keep, in comparable form."""
    state = platform.state
    rooms: dict[str, Any] = {}
    for room in state.rooms.values():
        agents = sorted(set(room.inbox) | set(room.context))
        rooms[room.id] = {
            "inbox": {a: [m.id for m in room.inbox.get(a, [])] for a in agents},
            "context": {a: [m.id for m in room.context.get(a, [])] for a in agents},
            "by_id": sorted(room.by_id),
            "tasks": [attrs.asdict(task) for task in room.tasks],
            "next_task_number": room.next_task_number,
            "board": attrs.asdict(room.board),
            "files": {f.id: (f.name, f.content_type, f.data) for f in room.files.values()},
        }
    return {
        "snapshot": state.snapshot(),
        "rooms": rooms,
        "users": [attrs.asdict(u) for u in state.users.values()],
        "agents": [attrs.asdict(a) for a in state.agents.values()],
        "credentials": (platform.user, list(platform.agents)),
        "memories": [attrs.asdict(m) for m in state.memories.values()],
        "contacts": [attrs.asdict(c) for c in state.contacts.values()],
        "contact_requests": [attrs.asdict(r) for r in state.contact_requests.values()],
        "bulk_jobs": state.bulk_jobs,
    }


async def _populate(platform: LocalPlatform) -> dict[str, str]:
    """Make one of every kind of record; returns the ids the checks need."""
    demo = platform.agents[0]
    helper = platform.register_agent("Helper", "helps out")
    bob = platform.create_user("Bob", "bob")
    memory = {"content": "likes tea", "system": "long_term", "type": "semantic", "segment": "user"}
    async with (
        HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human,
        HumanClient(base_url=platform.rest_url, api_key=bob.api_key) as bob_client,
        agent_http(platform, demo) as agent,
        agent_http(platform, helper) as helper_http,
    ):
        room = (await human.create_room("kept"))["id"]
        await human.add_participant(room, demo.id)
        await human.add_participant(room, helper.id)
        first = (await human.post_message(room, "first @demo/echo", [demo.handle]))["id"]
        second = (await human.post_message(room, "second", [demo.handle, helper.handle]))["id"]
        await human.post_message(room, "third", [demo.handle])
        chat = f"/chats/{room}/messages"
        assert (await agent.post(f"{chat}/{first}/processing")).status_code == 200
        assert (await agent.post(f"{chat}/{first}/processed")).status_code == 200
        reply = {"message": {"content": "answer", "mentions": [{"id": platform.user.id}]}}
        assert (await agent.post(chat, json=reply)).status_code in (200, 201)
        event = {"event": {"content": "looked it up", "message_type": "tool_call"}}
        assert (await agent.post(f"/chats/{room}/events", json=event)).status_code in (200, 201)
        assert (await agent.post(f"{chat}/{second}/processing")).status_code == 200
        assert (await helper_http.post(f"{chat}/{second}/processing")).status_code == 200
        failed = await helper_http.post(f"{chat}/{second}/failed", json={"error": "boom"})
        assert failed.status_code == 200
        kept = (await agent.post("/memories", json={"memory": memory})).json()["data"]
        archived = (await agent.post("/memories", json={"memory": memory})).json()["data"]
        assert (await agent.post(f"/memories/{archived['id']}/archive")).status_code == 200
        await bob_client.send_contact_request(demo.handle)
        request = await human.send_contact_request(helper.handle)
        answer = {"action": "approve", "request_id": request["id"]}
        assert (await helper_http.post("/contacts/requests/respond", json=answer)).is_success
        task = await agent.post(f"/chats/{room}/tasks", json={"subject": "Write", "detail": "it"})
        assert task.status_code == 201
        assert (await agent.put(f"/chats/{room}/board", json={"goal_title": "Ship"})).is_success
        data = b"kept bytes"
        upload = await agent.put(
            f"/chats/{room}/files",
            content=data,
            headers={
                "x-file-name": "notes.txt",
                "x-file-sha256": hashlib.sha256(data).hexdigest(),
                "content-type": "text/plain",
            },
        )
        assert upload.status_code in (200, 201)
        await platform.push_control(helper.id, "stop", room_id=room)
    return {
        "room": room,
        "second": second,
        "memory": kept["id"],
        "file": upload.json()["data"]["id"],
    }


async def test_every_kind_of_record_survives_a_restart(tmp_path: Path) -> None:
    with trio.fail_after(RESTART_DEADLINE):
        async with open_local_platform(state_dir=tmp_path) as first:
            ids = await _populate(first)
            before = _view(first)
            async with _human(first) as human:
                listed = [m["id"] for m in await human.list_messages(ids["room"])]
        async with open_local_platform(state_dir=tmp_path) as second:
            assert _view(second) == before
            demo, helper = second.agents
            async with _human(second) as human, agent_http(second, demo) as agent:
                assert [m["id"] for m in await human.list_messages(ids["room"])] == listed
                me = (await agent.get("/me")).json()["data"]
                assert me["id"] == demo.id
                # the claim left open before the restart is still the oldest work
                nxt = (await agent.get(f"/chats/{ids['room']}/messages/next")).json()["data"]
                assert nxt["id"] == ids["second"]
                status = nxt["metadata"]["delivery_status"]
                assert status[demo.id]["status"] == "processing"
                assert status[helper.id]["status"] == "failed"
                assert status[helper.id]["attempts"][0]["error"] == "boom"
                memory = (await agent.get(f"/memories/{ids['memory']}")).json()["data"]
                assert memory["content"] == "likes tea"
                download = await agent.get(f"/chats/{ids['room']}/files/{ids['file']}")
                assert download.content == b"kept bytes"
                # new messages come after the old ones
                posted = await human.post_message(ids["room"], "after", [demo.handle])
                after = await human.list_messages(ids["room"])
                assert [m["id"] for m in after] == [*listed, posted["id"]]
            async with agent_http(second, helper) as helper_http:
                refused = await helper_http.post(
                    f"/chats/{ids['room']}/messages",
                    json={"message": {"content": "hi", "mentions": [{"id": second.user.id}]}},
                )
                assert refused.status_code == 403  # still stopped in that room


def _human(platform: LocalPlatform) -> HumanClient:
    return HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key)


async def test_keys_still_authenticate_and_no_second_demo_agent_is_seeded(
    tmp_path: Path,
) -> None:
    with trio.fail_after(RESTART_DEADLINE):
        async with open_local_platform(state_dir=tmp_path) as first:
            user, agents = first.user, list(first.agents)
        async with open_local_platform(state_dir=tmp_path) as second:
            assert second.user == user
            assert second.agents == agents
            async with user_http(second, user.api_key) as client:
                assert (await client.get("/profile")).status_code == 200
            async with agent_http(second, agents[0]) as client:
                assert (await client.get("/me")).json()["data"]["id"] == agents[0].id


async def test_ensure_agent_keeps_the_id_and_key_of_a_name(tmp_path: Path) -> None:
    with trio.fail_after(RESTART_DEADLINE):
        async with open_local_platform(state_dir=tmp_path, seed_demo=False) as first:
            bot = first.ensure_agent("Bot")
            assert first.ensure_agent("Bot") == bot
            assert first.agents == [bot]
        async with open_local_platform(state_dir=tmp_path, seed_demo=False) as second:
            assert second.ensure_agent("Bot") == bot
            other = second.ensure_agent("Other")
            assert second.agents == [bot, other]
            async with agent_http(second, bot) as client:
                assert (await client.get("/me")).status_code == 200


async def test_deleted_records_stay_deleted(tmp_path: Path) -> None:
    with trio.fail_after(RESTART_DEADLINE):
        async with open_local_platform(state_dir=tmp_path, admin=True) as first:
            demo = first.agents[0]
            doomed = first.register_agent("Doomed", "goes away")
            async with _human(first) as human, agent_http(first, demo) as agent:
                room = (await human.create_room("gone"))["id"]
                await human.add_participant(room, demo.id)
                await human.post_message(room, "hello", [demo.handle])
                memory = {
                    "content": "x",
                    "system": "long_term",
                    "type": "semantic",
                    "segment": "user",
                }
                made = (await agent.post("/memories", json={"memory": memory})).json()["data"]
                await human.delete_memory(made["id"])
                await human.request("DELETE", f"/agents/{doomed.id}")
                admin = {"x-admin-key": first.admin_key}
                async with httpx.AsyncClient(base_url=first.rest_url, headers=admin) as client:
                    assert (await client.delete(f"/_local/admin/rooms/{room}")).is_success
        async with open_local_platform(state_dir=tmp_path) as second:
            assert second.state.rooms == {}
            assert second.state.memories == {}
            assert list(second.state.agents) == [demo.id]
            assert second.state.authenticate(doomed.api_key) is None
    db = sqlite3.connect(tmp_path / STATE_FILE_NAME)
    try:
        assert db.execute("SELECT count(*) FROM messages").fetchone() == (0,)
    finally:
        db.close()


async def test_the_previous_port_is_reused_when_free(tmp_path: Path) -> None:
    with trio.fail_after(RESTART_DEADLINE):
        async with open_local_platform(state_dir=tmp_path) as first:
            url = first.rest_url
        async with open_local_platform(state_dir=tmp_path) as second:
            assert second.rest_url == url
            # while it is taken, another platform on the same state picks a free port
            second.close()
            async with open_local_platform(state_dir=tmp_path) as third:
                assert third.rest_url != url
                assert third.rest_url.startswith("http://127.0.0.1:")


def test_a_directory_is_used_by_one_platform_at_a_time(tmp_path: Path) -> None:
    first = LocalPlatform(state_dir=tmp_path)
    try:
        with pytest.raises(BandConfigError, match="in use by another local platform"):
            LocalPlatform(state_dir=tmp_path)
    finally:
        first.close()
    LocalPlatform(state_dir=tmp_path).close()


def test_an_unknown_state_version_is_refused(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / STATE_FILE_NAME)
    db.execute("PRAGMA user_version=99")
    db.close()
    with pytest.raises(BandConfigError, match="unknown version"):
        LocalPlatform(state_dir=tmp_path)
    # refused again for the same reason, not "in use": the refusal released the directory
    with pytest.raises(BandConfigError, match="unknown version"):
        LocalPlatform(state_dir=tmp_path)


def test_a_file_that_is_not_a_state_is_refused(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE_NAME).write_bytes(b"not a database, just some bytes" * 64)
    with pytest.raises(BandConfigError, match="not a usable local platform state file"):
        LocalPlatform(state_dir=tmp_path)


async def test_a_failed_write_is_counted_and_written_by_the_next_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = StateFile._write
    failures = [sqlite3.OperationalError("disk I/O error")]

    def flaky_write(self: StateFile, statements: list[Any]) -> None:
        if failures:
            raise failures.pop()
        real_write(self, statements)

    with trio.fail_after(RESTART_DEADLINE):
        async with open_local_platform(state_dir=tmp_path) as first:
            demo = first.agents[0]
            async with _human(first) as human:
                room = (await human.create_room("retry"))["id"]
                await human.add_participant(room, demo.id)
                monkeypatch.setattr(StateFile, "_write", flaky_write)
                posted = (await human.post_message(room, "kept anyway", [demo.handle]))["id"]
                assert first._state_file is not None
                assert first._state_file.write_errors == 1
                await human.list_messages(room)  # the next request saves again
        async with open_local_platform(state_dir=tmp_path) as second:
            assert [m.id for m in second.state.rooms[room].messages] == [posted]


async def test_without_state_dir_nothing_is_tracked(band_platform: LocalPlatform) -> None:
    demo = band_platform.agents[0]
    async with _human(band_platform) as human:
        with trio.fail_after(IO_DEADLINE):
            room = (await human.create_room("memory"))["id"]
            await human.add_participant(room, demo.id)
            await human.post_message(room, "hello", [demo.handle])
    assert band_platform.state_dir is None
    changes = band_platform.state.take_changes()
    assert (changes.messages, changes.memories) == ({}, set())
    band_platform.close()  # nothing to release


# ---------------------------------------------------------------------- the command line


@asynccontextmanager
async def _cli_platform(*args: str) -> AsyncIterator[dict[str, Any]]:
    """``band-trio platform --json *args`` as a process; yields its JSON line and
    stops it with SIGTERM (exit status 0) on exit."""
    process = await trio.lowlevel.open_process(
        cli_command("platform", "--json", *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        with trio.fail_after(STARTUP_DEADLINE):
            assert process.stdout is not None
            line = await read_line(process.stdout)
        yield json.loads(line)
    finally:
        assert await stop_process(process) == 0


def _read_env_file(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines)


async def test_cli_keeps_named_agents_and_rewrites_their_env_files(tmp_path: Path) -> None:
    state = tmp_path / "state"
    pattern = str(tmp_path / "env" / "{agent}.env")
    args = ("--state", str(state), "--agent", "Bot", "--agent", "Helper Bot")
    async with _cli_platform(*args, "--env-file", pattern) as info:
        assert [a["name"] for a in info["agents"]] == ["Bot", "Helper Bot"]
        assert info["state_dir"] == str(state)
        files = [tmp_path / "env" / "bot.env", tmp_path / "env" / "helper-bot.env"]
        assert info["env_files"] == [str(f) for f in files]
        for agent, file in zip(info["agents"], files, strict=True):
            assert _read_env_file(file) == {
                "BAND_AGENT_ID": agent["id"],
                "BAND_API_KEY": agent["api_key"],
                "BAND_REST_URL": info["rest_url"],
                "BAND_WS_URL": info["ws_url"],
            }
            assert file.stat().st_mode & 0o077 == 0
        async with httpx.AsyncClient(base_url=info["rest_url"]) as client:
            headers = {"x-api-key": info["user"]["api_key"]}
            with trio.fail_after(IO_DEADLINE):
                made = await client.post("/api/v1/me/chats", json={}, headers=headers)
        room = made.json()["data"]["id"]
        written = {f: f.read_text() for f in files}
    async with _cli_platform(*args, "--env-file", pattern) as again:
        assert again["user"] == info["user"]
        assert again["agents"] == info["agents"]
        assert again["rest_url"] == info["rest_url"]  # the previous port was free
        assert {f: f.read_text() for f in files} == written
        async with httpx.AsyncClient(base_url=again["rest_url"]) as client:
            headers = {"x-api-key": again["user"]["api_key"]}
            with trio.fail_after(IO_DEADLINE):
                rooms = (await client.get("/api/v1/me/chats", headers=headers)).json()["data"]
        assert [r["id"] for r in rooms] == [room]


class _Echo(band_trio.SimpleAdapter[band_trio.HistoryProvider]):
    async def on_message(  # type: ignore[override]
        self,
        msg: Any,
        tools: Any,
        history: Any,
        participants_msg: Any,
        contacts_msg: Any,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        await tools.send_message(f"You said: {msg.content}", [msg.sender_id])


async def _answered(human: HumanClient, room: str, agent_id: str, count: int) -> list[str]:
    """Wait (real time: the platform is another process) for ``count`` replies."""
    while True:
        messages = await human.list_messages(room)
        replies = [m["content"] for m in messages if m["sender_id"] == agent_id]
        if len(replies) >= count:
            return replies
        await trio.sleep(0.05)


async def test_an_agent_answers_before_and_after_a_platform_restart(tmp_path: Path) -> None:
    env_file = tmp_path / "bot.env"
    args = ("--state", str(tmp_path / "state"), "--agent", "Bot", "--env-file", str(env_file))
    config = band_trio.AgentConfig(state_dir=tmp_path / "agent")

    async def exchange(info: dict[str, Any], room: str | None, text: str) -> tuple[str, list[str]]:
        settings = band_trio.AgentSettings.from_env(_read_env_file(env_file))
        bot = info["agents"][0]
        assert settings.agent_id == bot["id"]
        async with (
            HumanClient(base_url=info["rest_url"], api_key=info["user"]["api_key"]) as human,
            band_trio.open_agent(
                adapter=_Echo(),
                agent_id=settings.agent_id,
                api_key=settings.api_key,
                rest_url=settings.rest_url,
                ws_url=settings.ws_url,
                config=config,
            ),
        ):
            if room is None:
                room = str((await human.create_room("kept"))["id"])
                await human.add_participant(room, bot["id"])
            count = len([m for m in await human.list_messages(room) if m["sender_id"] == bot["id"]])
            await human.post_message(room, text, [bot["handle"]])
            with trio.fail_after(RESTART_DEADLINE):
                return room, await _answered(human, room, bot["id"], count + 1)

    async with _cli_platform(*args) as info:
        room, replies = await exchange(info, None, "before")
    assert len(replies) == 1
    assert "before" in replies[0]
    async with _cli_platform(*args) as info_again:
        assert info_again["agents"] == info["agents"]
        _, replies = await exchange(info_again, room, "after")
    assert len(replies) == 2
    assert "before" in replies[0]
    assert "after" in replies[1]


async def test_text_that_is_not_valid_utf8_is_kept_too(tmp_path: Path) -> None:
    text = "caf\u00e9 \U0001f600 half a pair: \ud83d"
    with trio.fail_after(RESTART_DEADLINE):
        async with open_local_platform(state_dir=tmp_path) as first:
            demo = first.agents[0]
            async with _human(first) as human:
                room = (await human.create_room("text"))["id"]
                await human.add_participant(room, demo.id)
            posted = first.post_message(room, text, [demo.handle])
        async with open_local_platform(state_dir=tmp_path) as second:
            assert second.state.rooms[room].by_id[posted["id"]].content.endswith(text)
