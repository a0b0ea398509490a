"""Agent REST: identity, chats, participants and roles, peers, context, auth and routing errors."""

from __future__ import annotations

import re

import httpx
import trio

from band_trio.local import AgentCredentials, HumanClient, LocalPlatform
from tests.local.helpers import IO_DEADLINE, agent_http, assert_error

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


async def test_me_has_description_handle_and_feature_flags(
    band_platform: LocalPlatform, agent: httpx.AsyncClient, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        me = (await agent.get("/me")).json()["data"]
    assert me["id"] == demo.id
    assert UUID.match(me["id"])
    assert me["description"]
    assert me["handle"] == f"{band_platform.user.handle}/echo"
    assert me["owner_uuid"] == band_platform.user.id
    assert me["feature_flags"] == {"ff_file_transfer": True, "ff_room_tasks": True}
    assert TS.match(me["inserted_at"])
    assert TS.match(me["updated_at"])


async def test_auth_errors(band_platform: LocalPlatform) -> None:
    async with httpx.AsyncClient(base_url=band_platform.rest_url) as client:
        with trio.fail_after(IO_DEADLINE):
            assert_error(await client.get("/api/v1/agent/me"), 401, "unauthorized")
            wrong = await client.get("/api/v1/agent/me", headers={"x-api-key": "band_a_wrong"})
            assert "band_a_wrong" not in wrong.text
            assert_error(wrong, 401, "unauthorized")
            # a user key on agent endpoints and an agent key on human endpoints
            assert_error(
                await client.get(
                    "/api/v1/agent/me", headers={"x-api-key": band_platform.user.api_key}
                ),
                403,
            )
            assert_error(
                await client.get(
                    "/api/v1/me/profile", headers={"x-api-key": band_platform.agents[0].api_key}
                ),
                403,
            )


async def test_unknown_routes_and_methods(agent: httpx.AsyncClient) -> None:
    with trio.fail_after(IO_DEADLINE):
        assert_error(await agent.get("/nothing/here"), 404, "not_found")
        assert_error(await agent.delete("/me"), 405)
        response = await agent.get("/../../etc/passwd")
        assert response.status_code == 404


async def test_malformed_and_wrong_type_bodies(agent: httpx.AsyncClient, room: str) -> None:
    url = f"/chats/{room}/messages"
    with trio.fail_after(IO_DEADLINE):
        assert_error(await agent.post(url, content=b"{not json"), 400, "invalid_json")
        assert_error(await agent.post(url, content=b"\xff\xfe"), 400)
        assert_error(await agent.post(url, content=b""), 422, "validation_error")
        assert_error(await agent.post(url, json=[1, 2]), 422, "validation_error")
        assert_error(await agent.post(url, json={"message": "text"}), 422)
        error = assert_error(
            await agent.post(url, json={"message": {"content": 5, "mentions": []}}), 422
        )
        assert error["details"] == {"/message/content": ["must be a string"]}


async def test_json_that_could_not_be_echoed_is_refused(
    agent: httpx.AsyncClient, room: str
) -> None:
    url = f"/chats/{room}/events"
    with trio.fail_after(IO_DEADLINE):
        # NaN/Infinity are not JSON; lone surrogates cannot be encoded as UTF-8
        nan = b'{"event": {"content": "x", "message_type": "thought", "metadata": {"v": NaN}}}'
        assert_error(await agent.post(url, content=nan), 400, "invalid_json")
        surrogate = b'{"event": {"content": "\\ud800 x", "message_type": "thought"}}'
        assert_error(await agent.post(url, content=surrogate), 400, "invalid_json")
        assert_error(await agent.post(url, content=b"[" * 50_000), 400, "invalid_json")
        # more brackets than a body may hold values: refused before decoding
        assert_error(await agent.post(url, content=b"[" * 100_000), 422, "validation_error")
        deep = (
            b'{"event": {"content": "x", "message_type": "thought", "metadata": '
            + b'{"a": ' * 100
            + b"1"
            + b"}" * 102
        )
        assert_error(await agent.post(url, content=deep), 422, "validation_error")
        fine = b'{"event": {"content": "caf\\u00e9 \\ud83d\\ude00", "message_type": "thought"}}'
        assert (await agent.post(url, content=fine)).status_code == 201


async def test_oversize_body_is_413(agent: httpx.AsyncClient, room: str) -> None:
    with trio.fail_after(IO_DEADLINE):
        response = await agent.post(f"/chats/{room}/messages", content=b"x" * (4 * 1024 * 1024 + 1))
    assert_error(response, 413, "content_too_large")


async def test_chats_paging_and_include_participants(
    band_platform: LocalPlatform,
    human: HumanClient,
    agent: httpx.AsyncClient,
    demo: AgentCredentials,
) -> None:
    with trio.fail_after(IO_DEADLINE):
        rooms = [(await human.create_room(f"r{i}"))["id"] for i in range(3)]
        for room_id in rooms:
            await human.add_participant(room_id, demo.id)
        page = (await agent.get("/chats", params={"page": 1, "page_size": 2})).json()
        assert page["metadata"] == {"page": 1, "page_size": 2, "total_count": 3, "total_pages": 2}
        assert [r["id"] for r in page["data"]] == rooms[:2]
        assert set(page["data"][0]) == {"id", "title", "task_id", "inserted_at", "updated_at"}
        second = (
            await agent.get("/chats", params={"page": 2, "page_size": 2, "include": "participants"})
        ).json()
        row = second["data"][0]
        assert row["id"] == rooms[2]
        assert row["participant_count"] == 2
        assert row["participants_truncated"] is False
        assert {p["id"] for p in row["participants"]} == {band_platform.user.id, demo.id}


async def test_agent_creates_renames_and_reads_a_room(
    agent: httpx.AsyncClient, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        created = await agent.post("/chats", json={"chat": {"title": None, "task_id": None}})
        assert created.status_code == 201
        room = created.json()["data"]
        assert room["title"] is None
        participants = (await agent.get(f"/chats/{room['id']}/participants")).json()
        assert participants["data"][0]["id"] == demo.id
        assert participants["data"][0]["role"] == "owner"
        assert "metadata" not in participants
        renamed = await agent.patch(f"/chats/{room['id']}", json={"chat": {"title": "  Plans  "}})
        assert renamed.json()["data"]["title"] == "Plans"
        assert (await agent.get(f"/chats/{room['id']}")).json()["data"]["title"] == "Plans"
        assert_error(
            await agent.patch(f"/chats/{room['id']}", json={"chat": {"title": "a\nb"}}), 422
        )
        assert_error(
            await agent.patch(f"/chats/{room['id']}", json={"chat": {"title": "x" * 121}}), 422
        )
        assert_error(await agent.post("/chats", json={"chat": {"title": "bad\x00"}}), 422)
        assert_error(await agent.get("/chats/not-a-room"), 404, "not_found")


async def test_rename_needs_owner(agent: httpx.AsyncClient, room: str) -> None:
    with trio.fail_after(IO_DEADLINE):
        assert_error(await agent.patch(f"/chats/{room}", json={"chat": {"title": "mine"}}), 403)


async def test_participant_role_rules(
    band_platform: LocalPlatform, human: HumanClient, agent: httpx.AsyncClient, room: str
) -> None:
    sibling = band_platform.register_agent("Sibling", "same owner")
    stranger_owner = band_platform.create_user("Stranger", "stranger")
    stranger = band_platform.register_agent("Stranger Bot", "other owner", owner=stranger_owner)
    with trio.fail_after(IO_DEADLINE):
        body = {"participant": {"participant_id": sibling.id}}
        # a member may add members, not admins or owners
        assert_error(
            await agent.post(
                f"/chats/{room}/participants",
                json={"participant": {"participant_id": sibling.id, "role": "admin"}},
            ),
            403,
        )
        assert_error(
            await agent.post(
                f"/chats/{room}/participants",
                json={"participant": {"participant_id": sibling.id, "role": "boss"}},
            ),
            422,
        )
        added = await agent.post(f"/chats/{room}/participants", json=body)
        assert added.status_code == 201
        assert added.json()["data"]["role"] == "member"
        assert_error(await agent.post(f"/chats/{room}/participants", json=body), 422)
        # another owner's agent is not recruitable; an unknown id is 404
        assert_error(
            await agent.post(
                f"/chats/{room}/participants", json={"participant": {"participant_id": stranger.id}}
            ),
            403,
        )
        assert_error(
            await agent.post(
                f"/chats/{room}/participants", json={"participant": {"participant_id": "nope"}}
            ),
            404,
        )
        # removing needs owner or admin
        assert_error(await agent.delete(f"/chats/{room}/participants/{sibling.id}"), 403)
        assert_error(await agent.delete(f"/chats/{room}/participants/nobody"), 404)
        await human.remove_participant(room, sibling.id)
        await human.add_participant(room, sibling.id, role="admin")
    async with agent_http(band_platform, sibling) as admin:
        with trio.fail_after(IO_DEADLINE):
            # an admin cannot remove the owner but can remove a member
            assert_error(
                await admin.delete(f"/chats/{room}/participants/{band_platform.user.id}"), 403
            )
            removed = await admin.delete(f"/chats/{room}/participants/{band_platform.agents[0].id}")
            assert removed.json()["data"]["id"] == band_platform.agents[0].id
    assert band_platform.agents[0].id not in band_platform.state.rooms[room].members


async def test_peers(band_platform: LocalPlatform, agent: httpx.AsyncClient, room: str) -> None:
    sibling = band_platform.register_agent("Sibling", "same owner")
    outsider = band_platform.register_agent(
        "X", "other", owner=band_platform.create_user("O", "other")
    )
    with trio.fail_after(IO_DEADLINE):
        doc = (await agent.get("/peers")).json()
        ids = {p["id"] for p in doc["data"]}
        assert sibling.id in ids
        assert band_platform.user.id in ids
        assert outsider.id not in ids
        assert band_platform.agents[0].id not in ids
        assert doc["metadata"]["total_count"] == len(doc["data"])
        for peer in doc["data"]:
            assert {"id", "name", "handle", "type", "is_contact", "online", "source"} <= set(peer)
        not_in = (await agent.get("/peers", params={"not_in_chat": room})).json()["data"]
        assert {p["id"] for p in not_in} == {sibling.id}


async def test_context_has_own_messages_and_mentions_oldest_first(
    band_platform: LocalPlatform,
    human: HumanClient,
    agent: httpx.AsyncClient,
    room: str,
    demo: AgentCredentials,
) -> None:
    user = band_platform.user.id
    with trio.fail_after(IO_DEADLINE):
        first = await human.post_message(room, "one", [demo.handle])
        await human.post_message(room, "not for the agent", [band_platform.user.handle])
        reply = await agent.post(
            f"/chats/{room}/messages",
            json={"message": {"content": "two", "mentions": [{"id": user}]}},
        )
        thought = await agent.post(
            f"/chats/{room}/events", json={"event": {"content": "hmm", "message_type": "thought"}}
        )
        third = await human.post_message(room, "three", [demo.handle])
        doc = (await agent.get(f"/chats/{room}/context")).json()
        assert [m["id"] for m in doc["data"]] == [
            first["id"],
            reply.json()["data"]["id"],
            thought.json()["data"]["id"],
            third["id"],
        ]
        assert doc["metadata"] == {"has_more": False, "limit": 50, "next_cursor": None}
        paged = (await agent.get(f"/chats/{room}/context", params={"limit": 3})).json()
        assert paged["metadata"]["has_more"] is True
        rest = (
            await agent.get(
                f"/chats/{room}/context", params={"cursor": paged["metadata"]["next_cursor"]}
            )
        ).json()
        assert [m["id"] for m in paged["data"] + rest["data"]] == [m["id"] for m in doc["data"]]
        assert (await agent.get(f"/chats/{room}/context", params={"limit": 1000})).json()[
            "metadata"
        ]["limit"] == 100
        assert_error(await agent.get(f"/chats/{room}/context", params={"limit": 0}), 422)
        offset = await agent.get(f"/chats/{room}/context", params={"page": 1, "page_size": 2})
        assert offset.json()["meta"]["total_count"] == 4
        assert "sunset" in offset.headers


async def test_api_key_never_in_repr(band_platform: LocalPlatform, human: HumanClient) -> None:
    for creds in (band_platform.user, *band_platform.agents):
        assert creds.api_key not in repr(creds)
    assert band_platform.user.api_key not in repr(human)
    assert band_platform.admin_key not in repr(band_platform)
    user = band_platform.state.users[band_platform.user.id]
    assert user.api_key not in repr(user)
