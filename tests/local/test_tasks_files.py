"""Tasks, board and files (``/chats/{room}/tasks``, ``/board`` and ``/files``)."""

from __future__ import annotations

import hashlib

import httpx
import pytest
import trio

from band_trio.local import AgentCredentials, LocalPlatform, open_local_platform
from tests.local.helpers import IO_DEADLINE, agent_http, assert_error


async def test_task_lifecycle_by_number_and_uuid(
    agent: httpx.AsyncClient, room: str, demo: AgentCredentials
) -> None:
    url = f"/chats/{room}/tasks"
    with trio.fail_after(IO_DEADLINE):
        created = await agent.post(url, json={"subject": "Write report", "detail": "by Friday"})
        assert created.status_code == 201
        task = created.json()["data"]
        assert (task["number"], task["state"], task["overall_status"], task["assignments"]) == (
            1,
            "active",
            "pending",
            [],
        )
        assert task["created_by"]["id"] == demo.id
        assert (await agent.get(f"{url}/1")).json()["data"]["id"] == task["id"]
        assert (await agent.get(f"{url}/{task['id']}")).json()["data"]["number"] == 1

        progress = (
            await agent.post(
                f"{url}/1",
                json={"status": "in_progress", "active_form": "Writing", "comment": "started"},
            )
        ).json()["data"]
        assert progress["overall_status"] == "in_progress"
        assert progress["assignments"][0]["assignee"]["id"] == demo.id
        assert progress["assignments"][0]["active_form"] == "Writing"
        assert progress["started_at"] is not None
        done = (
            await agent.post(f"{url}/1", json={"status": "completed", "state": "archived"})
        ).json()["data"]
        assert (done["overall_status"], done["state"]) == ("completed", "archived")
        assert done["completed_at"] is not None
        # work fields need an active task; un-archiving brings it back
        assert_error(await agent.post(f"{url}/1", json={"comment": "late"}), 422)
        revived = (
            await agent.post(f"{url}/1", json={"state": "active", "comment": "again"})
        ).json()["data"]
        assert revived["state"] == "active"

        assert [t["number"] for t in (await agent.get(url)).json()["data"]] == [1]
        history = (await agent.get(f"{url}/1/history", params={"limit": 2})).json()
        assert history["metadata"]["has_more"] is True
        events = [e["event"] for e in history["data"]]
        rest = (
            await agent.get(
                f"{url}/1/history", params={"cursor": history["metadata"]["next_cursor"]}
            )
        ).json()
        events += [e["event"] for e in rest["data"]]
        assert events == [
            "created",
            "status_changed",
            "commented",
            "status_changed",
            "archived",
            "unarchived",
            "commented",
        ]
        embedded = (await agent.get(f"{url}/1", params={"include": "history"})).json()["data"]
        assert len(embedded["history"]) == 7
        assert embedded["history_truncated"] is False


async def test_task_supersede_and_filters(agent: httpx.AsyncClient, room: str) -> None:
    url = f"/chats/{room}/tasks"
    with trio.fail_after(IO_DEADLINE):
        await agent.post(url, json={"subject": "old plan"})
        new = (await agent.post(url, json={"subject": "new plan", "supersedes_id": 1})).json()[
            "data"
        ]
        old = (await agent.get(f"{url}/1")).json()["data"]
        assert (old["state"], old["superseded_by_id"]) == ("superseded", new["id"])
        assert [t["number"] for t in (await agent.get(url)).json()["data"]] == [2]
        assert [
            t["number"] for t in (await agent.get(url, params={"state": "all"})).json()["data"]
        ] == [1, 2]
        assert [
            t["number"]
            for t in (await agent.get(url, params={"state": "superseded"})).json()["data"]
        ] == [1]
        await agent.post(f"{url}/2", json={"state": "cancelled"})
        assert (await agent.get(url)).json()["data"] == []
        assert_error(await agent.post(url, json={"subject": "x", "supersedes_id": 1}), 422)
        assert_error(await agent.post(url, json={"subject": "  "}), 422)
        assert_error(await agent.post(url, json={}), 422)
        assert_error(await agent.post(f"{url}/2", json={}), 422)
        assert_error(await agent.post(f"{url}/2", json={"status": "dreaming"}), 422)
        assert_error(await agent.get(f"{url}/99"), 404)
        assert_error(await agent.get(url, params={"state": "weird"}), 422)


async def test_board_goal_upsert_and_history(
    agent: httpx.AsyncClient, room: str, demo: AgentCredentials
) -> None:
    url = f"/chats/{room}/board"
    with trio.fail_after(IO_DEADLINE):
        empty = (await agent.get(url)).json()["data"]
        assert (empty["chat_room_id"], empty["goal_title"]) == (room, None)
        first = (await agent.put(url, json={"goal_title": "Ship it"})).json()["data"]
        assert first["goal_title"] == "Ship it"
        assert first["created_by"]["id"] == demo.id
        await agent.put(url, json={"goal_summary": "by Monday"})
        board = (await agent.get(url, params={"include": "history"})).json()["data"]
        assert [e["event"] for e in board["history"]] == ["goal_set", "goal_edited"]
        assert board["history"][1]["payload"] == {"goal_summary": {"from": None, "to": "by Monday"}}
        assert_error(await agent.put(url, json={}), 422)


async def test_file_upload_dedupe_download_and_range(
    agent: httpx.AsyncClient, room: str, demo: AgentCredentials
) -> None:
    data = b"0123456789abcdef"
    digest = hashlib.sha256(data).hexdigest()
    headers = {"x-file-name": "../notes.txt", "x-file-sha256": digest, "content-type": "text/plain"}
    url = f"/chats/{room}/files"
    with trio.fail_after(IO_DEADLINE):
        uploaded = (await agent.put(url, content=data, headers=headers)).json()["data"]
        assert uploaded["name"] == "notes.txt"
        assert (uploaded["bytes"], uploaded["sha256"], uploaded["content_type"]) == (
            16,
            digest,
            "text/plain",
        )
        assert uploaded["has_thumb"] is False
        again = (
            await agent.put(url, content=data, headers={**headers, "x-file-name": "copy.txt"})
        ).json()["data"]
        assert again["id"] == uploaded["id"]

        whole = await agent.get(f"{url}/{uploaded['id']}")
        assert (whole.status_code, whole.content) == (200, data)
        assert whole.headers["content-disposition"].startswith("attachment")
        for spec, status, body in (
            ("bytes=2-5", 206, data[2:6]),
            ("bytes=10-", 206, data[10:]),
            ("bytes=-3", 206, data[-3:]),
            ("bytes=5-100", 206, data[5:]),
            ("items=1-2", 200, data),
        ):
            part = await agent.get(f"{url}/{uploaded['id']}", headers={"range": spec})
            assert (part.status_code, part.content) == (status, body), spec
        bad = await agent.get(f"{url}/{uploaded['id']}", headers={"range": "bytes=16-"})
        assert bad.status_code == 416
        assert bad.headers["content-range"] == "bytes */16"
        assert isinstance(bad.json(), str)  # band-client-rest declares the 416 body as a string

        # a message can carry the attachment
        sent = await agent.post(
            f"/chats/{room}/messages",
            json={
                "message": {
                    "content": "see file",
                    "mentions": [{"handle": "demo"}],
                    "attachment_ids": [uploaded["id"]],
                }
            },
        )
        message = (await agent.get(f"/chats/{room}/context")).json()["data"][-1]
        assert message["id"] == sent.json()["data"]["id"]
        assert message["attachments"] == [uploaded]

        assert_error(await agent.put(url, content=data, headers={"x-file-sha256": digest}), 400)
        assert_error(
            await agent.put(url, content=data, headers={**headers, "x-file-sha256": "0" * 64}), 422
        )
        assert_error(await agent.put(url, content=b"", headers=headers), 422)
        assert_error(await agent.get(f"{url}/missing"), 404)
    del demo


async def test_file_content_type_comes_from_bytes(agent: httpx.AsyncClient, room: str) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 10
    with trio.fail_after(IO_DEADLINE):
        uploaded = await agent.put(
            f"/chats/{room}/files",
            content=png,
            headers={"x-file-name": "a.txt", "content-type": "text/plain"},
        )
    assert uploaded.json()["data"]["content_type"] == "image/png"


async def test_oversize_upload_is_413() -> None:
    async with open_local_platform(max_upload_bytes=1024) as platform:
        demo = platform.agents[0]
        room = platform.state.create_room(platform.state.agents[demo.id], None)
        async with agent_http(platform, demo) as agent:
            with trio.fail_after(IO_DEADLINE):
                ok = await agent.put(
                    f"/chats/{room.id}/files", content=b"a" * 1024, headers={"x-file-name": "ok"}
                )
                assert ok.status_code == 201
                too_big = await agent.put(
                    f"/chats/{room.id}/files", content=b"a" * 1025, headers={"x-file-name": "big"}
                )
                assert_error(too_big, 413, "content_too_large")


@pytest.mark.parametrize("path", ["/tasks", "/board", "/files/x"])
async def test_task_and_file_routes_hide_foreign_rooms(
    band_platform: LocalPlatform, demo: AgentCredentials, path: str
) -> None:
    other_owner = band_platform.create_user("Other", "other")
    foreign = band_platform.state.create_room(band_platform.state.users[other_owner.id], None)
    async with agent_http(band_platform, demo) as agent:
        with trio.fail_after(IO_DEADLINE):
            assert_error(await agent.get(f"/chats/{foreign.id}{path}"), 404, "not_found")
