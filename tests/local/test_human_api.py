"""Human `/api/v1/me` API through `HumanClient`: agents, rooms, messages, contacts, memories."""

from __future__ import annotations

import pytest
import trio

from band_trio.errors import (
    BandConnectionError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableEntityError,
)
from band_trio.local import AgentCredentials, HumanClient, LocalPlatform
from band_trio.local._input import Obj
from tests.local.helpers import (
    IO_DEADLINE,
    PhoenixClient,
    agent_http,
    assert_error,
    open_phoenix,
    user_http,
)


async def test_register_agent_returns_key_once_and_it_works(
    band_platform: LocalPlatform, human: HumanClient
) -> None:
    with trio.fail_after(IO_DEADLINE):
        creds = await human.register_agent("Research Bot", "finds things")
        assert creds.handle == f"{band_platform.user.handle}/research-bot"
        again = await human.register_agent("Research Bot", "second of that name")
        assert again.handle == f"{band_platform.user.handle}/research-bot-2"
        listed = await human.list_agents()
        assert {a["id"] for a in listed} >= {creds.id, again.id}
        assert all("api_key" not in a for a in listed)
        async with agent_http(band_platform, creds) as agent:
            assert (await agent.get("/me")).json()["data"]["name"] == "Research Bot"
        with pytest.raises(UnprocessableEntityError):
            await human.register_agent("   ", "blank name")


async def test_rooms_messages_and_participants(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        room = await human.create_room("  Planning ")
        assert room["title"] == "Planning"
        assert room["my_role"] == "owner"
        await human.add_participant(room["id"], demo.id)
        roster = await human.list_participants(room["id"])
        assert {p["id"] for p in roster} == {band_platform.user.id, demo.id}
        assert all("name" in p for p in roster)
        for i in range(3):
            await human.post_message(room["id"], f"msg {i}", [f"@{demo.handle}"])
        messages = await human.list_messages(room["id"])
        assert [m["content"] for m in messages] == [f"@[[{demo.id}]] msg {i}" for i in range(3)]
        detail = await human.get_room(room["id"])
        assert detail["agents"][0]["id"] == demo.id
        assert [r["id"] for r in await human.list_rooms()] == [room["id"]]
        removed = await human.remove_participant(room["id"], demo.id)
        assert removed["id"] == demo.id
        with pytest.raises(NotFoundError) as caught:
            await human.post_message("no-such-room", "x", [demo.handle])
        assert caught.value.code == "not_found"
        assert caught.value.request_id


async def test_foreign_room_is_hidden(band_platform: LocalPlatform, human: HumanClient) -> None:
    other = band_platform.create_user("Eve", "eve")
    room = await human.create_room("private")
    async with HumanClient(base_url=band_platform.rest_url, api_key=other.api_key) as eve:
        with trio.fail_after(IO_DEADLINE):
            for call in (
                eve.get_room(room["id"]),
                eve.list_messages(room["id"]),
                eve.list_participants(room["id"]),
            ):
                with pytest.raises(NotFoundError):
                    await call
            # a user can add only its agents, global agents and contacts
            with pytest.raises(PermissionDeniedError):
                await human.add_participant(room["id"], other.id)


async def test_contact_request_flow_between_users(
    band_platform: LocalPlatform, human: HumanClient
) -> None:
    bob = band_platform.create_user("Bob", "bob")
    async with HumanClient(base_url=band_platform.rest_url, api_key=bob.api_key) as bob_client:
        with trio.fail_after(IO_DEADLINE):
            request = await human.send_contact_request("@bob", "hello")
            assert request["status"] == "pending"
            assert request["requester_id"] == band_platform.user.id
            with pytest.raises(ConflictError):
                await human.send_contact_request("bob")
            assert [r["id"] for r in await bob_client.contact_requests()] == [request["id"]]
            assert [r["id"] for r in await human.sent_contact_requests()] == [request["id"]]
            with pytest.raises(PermissionDeniedError):
                await human.approve_contact_request(request["id"])
            assert await bob_client.approve_contact_request(request["id"]) == {
                "id": request["id"],
                "status": "approved",
            }
            with pytest.raises(ConflictError):
                await bob_client.reject_contact_request(request["id"])
            contacts = await human.contacts()
            assert [c["contact_id"] for c in contacts] == [bob.id]
            assert contacts[0]["status"] == "active"
            assert (await human.resolve_handle("bob"))["type"] == "User"
            # now bob is recruitable
            room = await human.create_room("with bob")
            await human.add_participant(room["id"], bob.id)
            assert await human.remove_contact(handle="bob") == {"status": "removed"}
            assert await human.contacts() == []
            with pytest.raises(NotFoundError):
                await human.remove_contact(handle="bob")


async def test_inverse_request_auto_approves(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:
    bob = band_platform.create_user("Bob", "bob")
    async with (
        HumanClient(base_url=band_platform.rest_url, api_key=bob.api_key) as bob_client,
        agent_http(band_platform, demo) as agent,
    ):
        with trio.fail_after(IO_DEADLINE):
            pending = await bob_client.send_contact_request(demo.handle)
            response = await agent.post("/contacts/add", json={"handle": "bob"})
            assert response.json()["data"] == {"id": pending["id"], "status": "approved"}
            contacts = (await agent.get("/contacts")).json()
            assert contacts["metadata"] == {
                "page": 1,
                "page_size": 50,
                "total_count": 1,
                "total_pages": 1,
            }
            assert contacts["data"][0]["handle"] == "bob"
            assert_error(await agent.post("/contacts/add", json={"handle": "bob"}), 409, "conflict")
            assert_error(await agent.post("/contacts/add", json={"handle": demo.handle}), 400)
            assert_error(await agent.post("/contacts/add", json={"handle": "ghost"}), 404)
            assert_error(await agent.post("/contacts/remove", json={}), 400)


async def test_agent_contact_requests_listing_and_respond(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials
) -> None:
    async with agent_http(band_platform, demo) as agent:
        with trio.fail_after(IO_DEADLINE):
            band_platform.create_user("Carol", "carol")
            sent = (
                await agent.post("/contacts/add", json={"handle": "carol", "message": "hi"})
            ).json()["data"]
            request = await human.send_contact_request(demo.handle)
            doc = (await agent.get("/contacts/requests")).json()
            assert [r["id"] for r in doc["data"]["received"]] == [request["id"]]
            assert doc["data"]["received"][0]["from_handle"] == band_platform.user.handle
            assert [r["id"] for r in doc["data"]["sent"]] == [sent["id"]]
            assert doc["metadata"]["received"] == {"total": 1, "total_pages": 1}
            reject = await agent.post(
                "/contacts/requests/respond",
                json={"action": "reject", "handle": band_platform.user.handle},
            )
            assert reject.json()["data"] == {"id": request["id"], "status": "rejected"}
            assert_error(
                await agent.post(
                    "/contacts/requests/respond",
                    json={"action": "approve", "request_id": sent["id"]},
                ),
                403,
            )
            cancel = await agent.post(
                "/contacts/requests/respond", json={"action": "cancel", "handle": "carol"}
            )
            assert cancel.json()["data"]["status"] == "cancelled"
            assert_error(
                await agent.post(
                    "/contacts/requests/respond",
                    json={"action": "cancel", "request_id": sent["id"]},
                ),
                409,
            )
            assert_error(
                await agent.post(
                    "/contacts/requests/respond", json={"action": "wave", "handle": "carol"}
                ),
                400,
            )
            everything = (
                await agent.get("/contacts/requests", params={"sent_status": "all"})
            ).json()
            assert everything["data"]["sent"][0]["status"] == "cancelled"


async def test_memories_validation_scopes_and_human_views(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials
) -> None:
    def memory(**fields: object) -> dict[str, object]:
        return {
            "memory": {
                "content": "likes tea",
                "system": "long_term",
                "type": "semantic",
                "segment": "user",
                "thought": "noted",
                **fields,
            }
        }

    async with agent_http(band_platform, demo) as agent:
        with trio.fail_after(IO_DEADLINE):
            subject = await agent.post("/memories", json=memory(subject_id=band_platform.user.id))
            assert subject.status_code == 201
            assert subject.json()["data"]["scope"] == "subject"
            own = (await agent.post("/memories", json=memory())).json()["data"]
            assert own["scope"] == "agent"
            org = (
                await agent.post("/memories", json=memory(scope="organization", content="org rule"))
            ).json()["data"]
            assert org["organization_id"]
            for bad in (
                memory(system="sensory"),  # semantic does not fit sensory
                memory(segment="elsewhere"),
                memory(scope="subject"),
                memory(content="   "),
                memory(metadata={"tags": [1]}),
            ):
                assert_error(await agent.post("/memories", json=bad), 422, "validation_error")
            listed = (await agent.get("/memories")).json()
            assert {m["id"] for m in listed["data"]} == {
                subject.json()["data"]["id"],
                own["id"],
                org["id"],
            }
            assert listed["metadata"]["has_more"] is False
            org_listed = (await agent.get("/memories", params={"memory_scope": "org"})).json()[
                "data"
            ]
            assert [m["id"] for m in org_listed] == [org["id"]]
            assert (await agent.get("/memories", params={"content_query": "TEA"})).json()["data"][
                0
            ]["content"] == "likes tea"
            assert_error(await agent.get("/memories", params={"scope": "subject"}), 422)
            archived = (await agent.post(f"/memories/{own['id']}/archive")).json()["data"]
            assert archived["status"] == "archived"
            assert own["id"] not in {m["id"] for m in (await agent.get("/memories")).json()["data"]}
            assert (await agent.get(f"/memories/{own['id']}")).json()["data"][
                "status"
            ] == "archived"
            superseded = (await agent.post(f"/memories/{org['id']}/supersede")).json()["data"]
            assert superseded["status"] == "superseded"
            assert_error(await agent.get("/memories/nope"), 404)
        # humans see their agents' memories and can restore
        with trio.fail_after(IO_DEADLINE):
            mine = await human.memories(status="all")
            assert {m["id"] for m in mine} >= {own["id"], org["id"]}
            restored = await human.restore_memory(own["id"])
            assert restored["status"] == "active"
            assert restored["source_agent_name"] == demo.name
            with pytest.raises(UnprocessableEntityError):
                await human.restore_memory(own["id"])
            await human.delete_memory(own["id"])
            with pytest.raises(NotFoundError):
                await human.get_memory(own["id"])


async def test_org_scope_without_organization_is_422(band_platform: LocalPlatform) -> None:
    lonely_owner = band_platform.create_user("Solo", "solo")
    lonely = band_platform.register_agent("Solo Bot", "no org", owner=lonely_owner)
    async with agent_http(band_platform, lonely) as agent:
        with trio.fail_after(IO_DEADLINE):
            error = assert_error(
                await agent.post(
                    "/memories",
                    json={
                        "memory": {
                            "content": "c",
                            "system": "working",
                            "type": "episodic",
                            "segment": "agent",
                            "thought": "t",
                            "scope": "organization",
                        }
                    },
                ),
                422,
            )
            assert error["code"] == "org_scope_requires_organization"
            assert assert_error(await agent.get("/memories", params={"memory_scope": "org"}), 422)[
                "code"
            ] == ("org_scope_requires_organization")


async def test_another_agents_memory_is_hidden(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:
    other = band_platform.register_agent("Other", "other")
    async with (
        agent_http(band_platform, demo) as agent,
        agent_http(band_platform, other) as other_agent,
    ):
        with trio.fail_after(IO_DEADLINE):
            body = {
                "memory": {
                    "content": "secret",
                    "system": "working",
                    "type": "episodic",
                    "segment": "agent",
                    "thought": "t",
                }
            }
            mine = (await agent.post("/memories", json=body)).json()["data"]
            assert_error(await other_agent.get(f"/memories/{mine['id']}"), 404)
            assert_error(await other_agent.post(f"/memories/{mine['id']}/archive"), 404)
            shared = (
                await agent.post(
                    "/memories", json={"memory": {**body["memory"], "scope": "organization"}}
                )
            ).json()["data"]
            assert (await other_agent.get(f"/memories/{shared['id']}")).status_code == 200
            assert_error(
                await other_agent.post(f"/memories/{shared['id']}/supersede"), 403, "forbidden"
            )


async def test_profile_and_peers(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        profile = await human.profile()
        assert profile["handle"] == band_platform.user.handle
        assert profile["email"]
        async with user_http(band_platform) as client:
            updated = await client.put(
                "/profile", json={"user": {"first_name": "Ada", "last_name": "L"}}
            )
            assert updated.json()["data"]["first_name"] == "Ada"
            assert_error(await client.put("/profile", json={"user": {"first_name": 3}}), 422)
            peers = (await client.get("/peers", params={"type": "Agent"})).json()
            assert [p["id"] for p in peers["data"]] == [demo.id]
            assert peers["metadata"]["total_pages"] == 1


async def test_delete_agent_needs_force_with_history(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        await human.post_message(room, "work", [demo.handle])
        async with user_http(band_platform) as client:
            assert_error(await client.delete(f"/agents/{demo.id}"), 422)
            deleted = await client.delete(f"/agents/{demo.id}", params={"force": "true"})
            assert deleted.json()["data"]["executions_deleted"] == 1
            async with agent_http(band_platform, demo) as agent:
                assert_error(await agent.get("/me"), 401)
            job = await client.post("/chats/bulk-delete", json={"ids": [room, "missing"]})
            data = job.json()["data"]
            assert (data["succeeded"], data["failed"]) == (1, 1)
            assert (await client.get(f"/bulk-deletions/{data['id']}")).json()["data"]["id"] == data[
                "id"
            ]
    assert room not in band_platform.state.rooms


async def test_human_client_connection_error_is_typed() -> None:

    async with HumanClient(base_url="http://127.0.0.1:9", api_key="k") as client:
        with trio.fail_after(IO_DEADLINE), pytest.raises(BandConnectionError):
            await client.profile()


async def test_listing_options(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:
    async with user_http(band_platform) as client:
        with trio.fail_after(IO_DEADLINE):
            await human.register_agent("Alpha", "a")
            await human.register_agent("Zulu", "z")
            names = [
                a["name"]
                for a in (
                    await client.get("/agents", params={"sort": "name", "order": "desc"})
                ).json()["data"]
            ]
            assert names == sorted(names, reverse=True)
            meta = (await client.get("/agents", params={"limit": 1})).json()["metadata"]
            assert (meta["has_more"], meta["limit"]) == (True, 1)
            assert {f["param"] for f in meta["sortable_fields"]} == {
                "name",
                "inserted_at",
                "updated_at",
            }
            assert [
                a["name"]
                for a in (await client.get("/agents", params={"name": "zu"})).json()["data"]
            ] == ["Zulu"]
            assert_error(await client.get("/agents", params={"sort": "size"}), 422)

            await human.post_message(room, "hello", [demo.handle])
            chats = (
                await client.get(
                    "/chats", params={"include": "participants,last_message,total_count"}
                )
            ).json()
            row = chats["data"][0]
            assert row["participant_count"] == 2
            assert row["last_message"]["content"].endswith("hello")
            assert chats["metadata"]["total_count"] == 1
            detail = (
                await client.get(f"/chats/{room}", params={"include": "message_counts"})
            ).json()["data"]
            assert detail["message_counts"] == {"text": 1}
            agents_only = (
                await client.get(
                    f"/chats/{room}/participants", params={"participant_type": "Agent"}
                )
            ).json()
            assert [p["id"] for p in agents_only["data"]] == [demo.id]
            texts = await human.list_messages(room, message_type="thought")
            assert texts == []


async def test_rename_pushes_room_updated_to_users(
    band_platform: LocalPlatform, human: HumanClient
) -> None:
    owner = band_platform.user
    with trio.fail_after(IO_DEADLINE):
        agent_room = band_platform.state.create_room(
            band_platform.state.agents[band_platform.agents[0].id], None
        )
        band_platform.state.add_participant(
            band_platform.state.agents[band_platform.agents[0].id],
            agent_room.id,
            Obj({"participant": {"participant_id": owner.id}}),
        )
        band_platform._flush()
        async with (
            open_phoenix(band_platform, owner.api_key) as ws,
            agent_http(band_platform, band_platform.agents[0]) as agent,
        ):
            client = PhoenixClient(ws)
            ref, _ = await client.join(f"user_rooms:{owner.id}")
            await agent.patch(f"/chats/{agent_room.id}", json={"chat": {"title": "New name"}})
            frame = await client.recv()
            assert frame[:4] == [ref, None, f"user_rooms:{owner.id}", "room_updated"]
            assert frame[4]["title"] == "New name"


async def test_bulk_delete_agents_reports_each_result(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:
    spare = await human.register_agent("Spare", "no history")
    with trio.fail_after(IO_DEADLINE):
        await human.post_message(room, "work", [demo.handle])
        async with user_http(band_platform) as client:
            job = (
                await client.post("/agents/bulk-delete", json={"ids": [demo.id, spare.id, "ghost"]})
            ).json()["data"]
    assert (job["resource_type"], job["status"], job["total"], job["succeeded"], job["failed"]) == (
        "agent",
        "completed",
        3,
        1,
        2,
    )
    by_id = {r["id"]: r for r in job["results"]}
    assert by_id[spare.id]["status"] == "succeeded"
    assert by_id[demo.id]["error"]["code"] == "execution_history_exists"
    assert by_id["ghost"]["error"]["code"] == "not_found"
    assert spare.id not in band_platform.state.agents
    assert demo.id in band_platform.state.agents
