"""Sending text messages: mention validation, tokens, recipients, deliveries."""

from __future__ import annotations

import httpx
import trio

from band_trio.local import AgentCredentials, HumanClient, LocalPlatform
from tests.local.helpers import IO_DEADLINE, assert_error


async def send(client: httpx.AsyncClient, room: str, message: object) -> httpx.Response:
    return await client.post(f"/chats/{room}/messages", json={"message": message})


async def test_handle_mention_becomes_token_and_delivers(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        sent = await human.post_message(room, f"hey @{demo.handle}, summarise", [demo.handle])
    assert sent["success"] is True
    assert sent["recipients"] == [{"id": demo.id, "handle": demo.handle, "name": demo.name}]
    message = band_platform.state.rooms[room].by_id[sent["id"]]
    assert message.content == f"hey @[[{demo.id}]], summarise"
    assert message.mentions == [{"id": demo.id, "handle": demo.handle, "name": demo.name}]
    assert set(message.deliveries) == {demo.id}


async def test_unreferenced_mention_gets_a_prepended_token(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        sent = await human.post_message(room, "no handle in here", [demo.id])
    assert (
        band_platform.state.rooms[room].by_id[sent["id"]].content
        == f"@[[{demo.id}]] no handle in here"
    )


async def test_whole_handle_matching_only(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:
    # "@demo/echo" names the agent; it must not be read as a mention of the user "@demo".
    with trio.fail_after(IO_DEADLINE):
        sent = await human.post_message(
            room, f"ask @{demo.handle} and @demo.", [band_platform.user.handle]
        )
    content = band_platform.state.rooms[room].by_id[sent["id"]].content
    assert content == f"ask @{demo.handle} and @[[{band_platform.user.id}]]."
    # a user mention creates no delivery
    assert band_platform.state.rooms[room].by_id[sent["id"]].deliveries == {}


async def test_existing_tokens_are_kept_and_count_as_references(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        sent = await human.post_message(
            room, f"@[[{demo.id}]] go", [{"id": demo.id, "handle": demo.handle}]
        )
    assert band_platform.state.rooms[room].by_id[sent["id"]].content == f"@[[{demo.id}]] go"


async def test_reference_kind_names_without_delivering(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        sent = await human.post_message(room, "fyi", [{"id": demo.id, "kind": "reference"}])
    assert sent["recipients"] == []
    message = band_platform.state.rooms[room].by_id[sent["id"]]
    assert message.deliveries == {}
    assert message.mentions[0]["kind"] == "reference"


async def test_mention_validation_errors(
    band_platform: LocalPlatform, room: str, demo: AgentCredentials
) -> None:
    outsider = band_platform.register_agent("Outsider", "not in the room")
    async with httpx.AsyncClient(
        base_url=band_platform.rest_url + "/api/v1/me",
        headers={"x-api-key": band_platform.user.api_key},
    ) as client:
        with trio.fail_after(IO_DEADLINE):
            assert_error(
                await send(client, room, {"content": "hi", "mentions": []}), 422, "validation_error"
            )
            assert_error(await send(client, room, {"content": "hi"}), 422)
            assert_error(await send(client, room, {"content": "hi", "mentions": [{}]}), 422)
            assert_error(
                await send(
                    client, room, {"content": "hi", "mentions": [{"handle": "nobody/here"}]}
                ),
                422,
            )
            not_in_room = assert_error(
                await send(client, room, {"content": "hi", "mentions": [{"id": outsider.id}]}), 422
            )
            assert not_in_room["message"] == "mentioned_participant_not_in_room"
            assert_error(
                await send(
                    client, room, {"content": "hi", "mentions": [{"id": demo.id, "kind": None}]}
                ),
                422,
            )
            assert_error(
                await send(
                    client, room, {"content": "hi", "mentions": [{"id": demo.id, "kind": "cc"}]}
                ),
                422,
            )
            assert_error(
                await send(client, room, {"content": "hi", "mentions": ["demo/echo"]}), 422
            )
            assert_error(
                await send(
                    client,
                    room,
                    {"content": "hi", "mentions": [{"id": demo.id}], "attachment_ids": None},
                ),
                422,
            )
            unknown = assert_error(
                await send(
                    client,
                    room,
                    {"content": "hi", "mentions": [{"id": demo.id}], "attachment_ids": ["nope"]},
                ),
                422,
            )
            assert unknown["code"] == "unknown_attachment"
            blank = assert_error(
                await send(client, room, {"content": " \n\u200b ", "mentions": [{"id": demo.id}]}),
                422,
            )
            assert "can't be blank" in blank["message"] or "can't be blank" in str(blank["details"])
    assert band_platform.state.rooms[room].messages == []


async def test_content_size_limit_excludes_tokens(
    band_platform: LocalPlatform, agent: httpx.AsyncClient, room: str
) -> None:
    user = {"id": band_platform.user.id}
    with trio.fail_after(IO_DEADLINE):
        at_limit = await send(agent, room, {"content": "a" * (512 * 1024), "mentions": [user]})
        assert at_limit.status_code == 201
        token = f"@[[{band_platform.user.id}]] "
        with_token = await send(
            agent, room, {"content": token + "a" * (512 * 1024), "mentions": [user]}
        )
        assert with_token.status_code == 201
        too_big = await send(agent, room, {"content": "a" * (512 * 1024 + 1), "mentions": [user]})
        assert_error(too_big, 422, "validation_error")


async def test_agent_sender_is_not_delivered_its_own_mention(
    band_platform: LocalPlatform, agent: httpx.AsyncClient, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        response = await send(
            agent, room, {"content": "note to self", "mentions": [{"id": demo.id}]}
        )
    assert response.status_code == 201
    message = band_platform.state.rooms[room].by_id[response.json()["data"]["id"]]
    assert message.deliveries == {}
    assert message.sender_type == "Agent"


async def test_agent_to_agent_mention_delivers(
    band_platform: LocalPlatform, human: HumanClient, agent: httpx.AsyncClient, room: str
) -> None:
    helper = band_platform.register_agent("Helper", "helps out")
    with trio.fail_after(IO_DEADLINE):
        await human.add_participant(room, helper.id)
        response = await send(
            agent,
            room,
            {
                "content": f"@{helper.handle} take this",
                "mentions": [{"handle": f"@{helper.handle}"}],
            },
        )
    assert response.json()["data"]["recipients"] == [
        {"id": helper.id, "handle": helper.handle, "name": "Helper"}
    ]
    assert set(band_platform.state.rooms[room].by_id[response.json()["data"]["id"]].deliveries) == {
        helper.id
    }


async def test_cross_owner_message_carries_delegation_envelope(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:
    bob = band_platform.create_user("Bob Builder", "bob")
    async with HumanClient(base_url=band_platform.rest_url, api_key=bob.api_key) as bob_client:
        with trio.fail_after(IO_DEADLINE):
            request = await bob_client.send_contact_request(band_platform.user.handle)
            await human.approve_contact_request(request["id"])
            await human.add_participant(room, bob.id)
            sent = await bob_client.post_message(room, "hi", [demo.handle])
    delegation = band_platform.state.rooms[room].by_id[sent["id"]].metadata["delegation"]
    assert delegation["version"] == 1
    assert delegation["message_id"] == sent["id"]
    assert delegation["originator"] == {
        "uuid": bob.id,
        "handle": "bob",
        "display_name": "Bob Builder",
    }
