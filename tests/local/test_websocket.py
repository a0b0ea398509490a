"""The Phoenix v2 WebSocket endpoint, driven by a raw trio-websocket client."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import trio
from trio_websocket import ConnectionClosed, open_websocket_url

from band_trio.local import AgentCredentials, HumanClient, LocalPlatform, open_local_platform
from tests.local.helpers import IO_DEADLINE, PhoenixClient, agent_http, open_phoenix, upgrade_status


async def test_join_reply_echoes_refs_and_pushes_carry_join_ref(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        room = (await human.create_room("r"))["id"]
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            client = PhoenixClient(ws)
            ref, reply = await client.join(f"agent_rooms:{demo.id}")
            assert reply == [
                ref,
                ref,
                f"agent_rooms:{demo.id}",
                "phx_reply",
                {"status": "ok", "response": {}},
            ]

            await human.add_participant(room, demo.id)
            added = await client.recv()
            assert added[:4] == [ref, None, f"agent_rooms:{demo.id}", "room_added"]
            assert set(added[4]) == {"id", "title", "task_id", "inserted_at", "updated_at"}
            assert added[4]["id"] == room

            room_ref, reply = await client.join(f"chat_room:{room}")
            assert reply[4]["status"] == "ok"
            sent = await human.post_message(room, "hello", [demo.handle])
            pushed = await client.recv()
            assert pushed[:4] == [room_ref, None, f"chat_room:{room}", "message_created"]
            payload = pushed[4]
            assert payload["id"] == sent["id"]
            assert payload["content"] == f"@[[{demo.id}]] hello"
            assert payload["sender_type"] == "User"
            assert payload["metadata"]["mentions"][0]["id"] == demo.id
            assert payload["metadata"]["delivery_status"][demo.id]["status"] == "delivered"
            assert payload["attachments"] == []


async def test_rejoin_gets_a_fresh_join_ref_in_pushes(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            client = PhoenixClient(ws)
            await client.join(f"chat_room:{room}")
            second_ref, _ = await client.join(f"chat_room:{room}")
            await human.post_message(room, "hello", [demo.handle])
            assert (await client.recv())[0] == second_ref


async def test_heartbeat_reply_echoes_ref(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            client = PhoenixClient(ws)
            await client.send([None, "41", "phoenix", "heartbeat", {}])
            assert await client.recv() == [
                None,
                "41",
                "phoenix",
                "phx_reply",
                {"status": "ok", "response": {}},
            ]
            await client.send([None, 42, "phoenix", "heartbeat", {}])  # numeric refs are tolerated
            assert (await client.recv())[1] == "42"


async def test_websocket_pings_are_answered(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:
    # The official client pings every 20 s and drops a peer that stays silent.
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            for payload in (b"p1", b"p2"):
                await ws.ping(payload)  # returns only once the matching pong arrived
            client = PhoenixClient(ws)
            _, reply = await client.join(f"agent_control:{demo.id}")
            assert reply[4]["status"] == "ok"


async def test_leave_replies_then_closes_and_stops_pushes(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            client = PhoenixClient(ws)
            join_ref, _ = await client.join(f"chat_room:{room}")
            await client.send([join_ref, "9", f"chat_room:{room}", "phx_leave", {}])
            assert await client.recv() == [
                join_ref,
                "9",
                f"chat_room:{room}",
                "phx_reply",
                {"status": "ok", "response": {}},
            ]
            assert await client.recv() == [join_ref, join_ref, f"chat_room:{room}", "phx_close", {}]
            await human.post_message(room, "after leave", [demo.handle])
            await client.send([None, "10", "phoenix", "heartbeat", {}])
            # nothing arrived for the left topic before the heartbeat reply
            assert (await client.recv())[2] == "phoenix"


async def test_join_refusals(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials
) -> None:
    other = band_platform.register_agent("Other", "another agent")
    with trio.fail_after(IO_DEADLINE):
        foreign_room = (await human.create_room("not yours"))["id"]
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            client = PhoenixClient(ws)
            for topic in (
                f"agent_control:{other.id}",
                f"agent_rooms:{other.id}",
                f"chat_room:{foreign_room}",
                f"room_participants:{foreign_room}",
                f"user_rooms:{band_platform.user.id}",
                "no_colon",
                "weird:thing",
            ):
                ref, reply = await client.join(topic)
                assert reply[:4] == [ref, ref, topic, "phx_reply"]
                assert reply[4]["status"] == "error"
                assert isinstance(reply[4]["response"]["reason"], str)


async def test_malformed_frames_never_end_the_socket(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            for junk in (
                "not json",
                "[1,2,3]",
                "{}",
                json.dumps([None, "1", "", "heartbeat", {}]),
                json.dumps([None, "1", "x", 5, {}]),
                "[" * 100_000,
            ):
                await ws.send_message(junk)
            await ws.send_message(b"\x00binary")
            client = PhoenixClient(ws)
            await client.send([None, "99", "phoenix", "heartbeat", {}])
            assert (await client.recv())[1] == "99"
    assert band_platform.hub.statistics().bad_frames >= 7


async def test_supersede_evicts_the_older_socket(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as old_ws:
            old = PhoenixClient(old_ws)
            control_ref, _ = await old.join(f"agent_control:{demo.id}")
            async with open_phoenix(band_platform, demo.api_key, demo.id) as new_ws:
                frame = await old.recv()
                assert frame[:4] == [control_ref, None, f"agent_control:{demo.id}", "supersede"]
                payload = frame[4]
                assert payload["retryable"] is False
                assert isinstance(payload["reason"], str)
                assert isinstance(payload["message"], str)
                assert "correlation_id" in payload
                with pytest.raises(ConnectionClosed) as closed:
                    await old_ws.get_message()
                assert closed.value.reason.code == 1000
                # trio-websocket 0.12 never closes its TCP stream after a close the
                # server started (aclose() returns early); close it by hand.
                await old_ws._stream.aclose()
                # the new socket is the live one
                await band_platform.wait_for(
                    lambda: len(band_platform.hub.connections(demo.id)) == 1
                )
                new = PhoenixClient(new_ws)
                _, reply = await new.join(f"agent_control:{demo.id}")
                assert reply[4]["status"] == "ok"
    assert band_platform.hub.statistics().supersedes == 1


async def test_on_conflict_reject_with_live_socket_is_409(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id):
            refused = await upgrade_status(
                band_platform, {"x-api-key": demo.api_key}, demo.id, on_conflict="reject"
            )
        assert refused.status_code == 409
        assert refused.headers["content-type"] == "application/json"
        body = refused.json()
        assert body["error"]["code"] == "connection_conflict"
        assert body["error"]["request_id"] is None
        # without a live socket, reject is accepted
        async with open_phoenix(band_platform, demo.api_key, demo.id, on_conflict="reject") as ws:
            client = PhoenixClient(ws)
            assert (await client.join(f"agent_control:{demo.id}"))[1][4]["status"] == "ok"


@pytest.mark.parametrize(
    ("key", "agent_id", "query", "status", "code"),
    [
        ("bad-key", "demo", {}, 403, "forbidden"),
        ("demo", "someone-else", {}, 403, "forbidden"),
        ("demo", None, {}, 403, "forbidden"),
        ("demo", "demo", {"on_conflict": "maybe"}, 400, "invalid_on_conflict"),
    ],
)
async def test_upgrade_refusals_carry_the_json_body(
    band_platform: LocalPlatform,
    demo: AgentCredentials,
    key: str,
    agent_id: str | None,
    query: dict[str, str],
    status: int,
    code: str,
) -> None:
    api_key = demo.api_key if key == "demo" else key
    target = demo.id if agent_id == "demo" else agent_id
    with trio.fail_after(IO_DEADLINE):
        refused = await upgrade_status(band_platform, {"x-api-key": api_key}, target, **query)
    assert refused.status_code == status
    error = refused.json()["error"]
    assert error["code"] == code
    assert error["message"]
    assert isinstance(error["request_id"], str)
    assert demo.api_key not in refused.text


async def test_api_key_in_query_is_accepted(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:

    url = f"{band_platform.ws_url}?api_key={demo.api_key}&vsn=2.0.0&agent_id={demo.id}"
    with trio.fail_after(IO_DEADLINE):
        async with open_websocket_url(url) as ws:
            assert (await PhoenixClient(ws).join(f"agent_control:{demo.id}"))[1][4][
                "status"
            ] == "ok"


async def test_closed_socket_leaves_every_topic(
    band_platform: LocalPlatform, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            client = PhoenixClient(ws)
            await client.join(f"chat_room:{room}")
            await client.join(f"agent_control:{demo.id}")
            assert band_platform.joined(demo.id, f"chat_room:{room}")
            assert band_platform.state.is_online(demo.id)
        await band_platform.wait_for(lambda: not band_platform.connected(demo.id))
    assert band_platform.hub.joined_topics(demo.id) == set()
    assert not band_platform.state.is_online(demo.id)


async def test_agent_control_push_has_every_required_key(
    band_platform: LocalPlatform, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            client = PhoenixClient(ws)
            ref, _ = await client.join(f"agent_control:{demo.id}")
            await band_platform.push_control(
                demo.id, "interrupt", room_id=room, correlation_id="ctl-1"
            )
            frame = await client.recv()
    assert frame[:4] == [ref, None, f"agent_control:{demo.id}", "agent.control"]
    assert frame[4] == {
        "type": "agent.control",
        "mode": "interrupt",
        "scope": "room",
        "agent_id": demo.id,
        "execution_id": None,
        "room_id": room,
        "correlation_id": "ctl-1",
        "reason": "user_requested",
    }


async def test_participant_events_and_room_removed(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:
    helper = band_platform.register_agent("Helper", "helps")
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            client = PhoenixClient(ws)
            parts_ref, _ = await client.join(f"room_participants:{room}")
            rooms_ref, _ = await client.join(f"agent_rooms:{demo.id}")
            await human.add_participant(room, helper.id)
            added = await client.recv()
            assert added[:4] == [parts_ref, None, f"room_participants:{room}", "participant_added"]
            assert {k: added[4][k] for k in ("id", "name", "type", "handle")} == {
                "id": helper.id,
                "name": "Helper",
                "type": "Agent",
                "handle": helper.handle,
            }
            await human.remove_participant(room, helper.id)
            removed = await client.recv()
            assert removed[3] == "participant_removed"
            assert removed[4]["id"] == helper.id
            await human.remove_participant(room, demo.id)
            self_removed = await client.recv()
            assert self_removed[3] == "participant_removed"
            gone = await client.recv()
            assert gone[:4] == [rooms_ref, None, f"agent_rooms:{demo.id}", "room_removed"]
            assert gone[4]["id"] == room


async def test_room_deleted_push(
    band_platform: LocalPlatform, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            client = PhoenixClient(ws)
            ref, _ = await client.join(f"room_participants:{room}")
            band_platform.state.delete_room(room)
            band_platform._flush()
            assert await client.recv() == [
                ref,
                None,
                f"room_participants:{room}",
                "room_deleted",
                {"id": room},
            ]


async def test_user_socket_sees_every_room_message(
    band_platform: LocalPlatform,
    human: HumanClient,
    agent: object,
    room: str,
    demo: AgentCredentials,
) -> None:

    assert isinstance(agent, httpx.AsyncClient)
    user = band_platform.user
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, user.api_key) as ws:
            client = PhoenixClient(ws)
            room_ref, reply = await client.join(f"chat_room:{room}")
            assert reply[4]["status"] == "ok"
            assert (await client.join(f"user_rooms:{user.id}"))[1][4]["status"] == "ok"
            sent = await human.post_message(room, "question", [demo.handle])
            first = await client.recv()
            assert first[3] == "message_created"
            assert first[4]["id"] == sent["id"]
            await agent.post(f"/chats/{room}/messages/{sent['id']}/processing")
            update = await client.recv()
            assert update[3] == "message_updated"
            assert update[4]["metadata"]["delivery_status"][demo.id]["status"] == "processing"
            await agent.post(
                f"/chats/{room}/messages",
                json={"message": {"content": "answer", "mentions": [{"id": user.id}]}},
            )
            reply_frame = await client.recv()
            assert reply_frame[:4] == [room_ref, None, f"chat_room:{room}", "message_created"]
            assert reply_frame[4]["sender_id"] == demo.id


async def test_agent_gets_no_message_updated_by_default(
    band_platform: LocalPlatform,
    human: HumanClient,
    agent: object,
    room: str,
    demo: AgentCredentials,
) -> None:

    assert isinstance(agent, httpx.AsyncClient)
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            client = PhoenixClient(ws)
            await client.join(f"chat_room:{room}")
            sent = await human.post_message(room, "q", [demo.handle])
            assert (await client.recv())[3] == "message_created"
            await agent.post(f"/chats/{room}/messages/{sent['id']}/processing")
            # its own reply is not echoed to it either
            await agent.post(
                f"/chats/{room}/messages",
                json={"message": {"content": "a", "mentions": [{"id": band_platform.user.id}]}},
            )
            await client.send([None, "77", "phoenix", "heartbeat", {}])
            assert (await client.recv())[:2] == [None, "77"]


async def test_abnormal_drop_closes_without_close_frame(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            await PhoenixClient(ws).join(f"agent_control:{demo.id}")
            assert await band_platform.drop_agent_sockets(demo.id) == 1
            with pytest.raises(ConnectionClosed) as caught:
                await ws.get_message()
            assert caught.value.reason.code in (1006, 1011)
            await ws._stream.aclose()  # trio-websocket 0.12 leaves it open (see the supersede test)
    assert not band_platform.connected(demo.id)


async def test_contact_events_are_pushed(
    band_platform: LocalPlatform, human: HumanClient, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            client = PhoenixClient(ws)
            ref, _ = await client.join(f"agent_contacts:{demo.id}")
            bob = band_platform.create_user("Bob", "bob")
            async with HumanClient(
                base_url=band_platform.rest_url, api_key=bob.api_key
            ) as bob_client:
                request = await bob_client.send_contact_request(demo.handle, "hi there")
                received = await client.recv()
                assert received[:4] == [
                    ref,
                    None,
                    f"agent_contacts:{demo.id}",
                    "contact_request_received",
                ]
                assert received[4]["id"] == request["id"]
                assert received[4]["status"] == "pending"
                assert received[4]["from_handle"] == "bob"
                assert received[4]["message"] == "hi there"
                async with httpx_agent(band_platform, demo) as agent:
                    response = await agent.post(
                        "/contacts/requests/respond",
                        json={"action": "approve", "request_id": request["id"]},
                    )
                    assert response.json()["data"] == {"id": request["id"], "status": "approved"}
                updated = await client.recv()
                assert updated[3:] == [
                    "contact_request_updated",
                    {"id": request["id"], "status": "approved"},
                ]
                added = await client.recv()
                assert added[3] == "contact_added"
                assert {"id", "handle", "name", "type", "inserted_at"} <= set(added[4])
                assert added[4]["handle"] == "bob"
                await bob_client.remove_contact(handle=demo.handle)
                removed = await client.recv()
                assert removed[3:] == ["contact_removed", {"id": added[4]["id"]}]


def httpx_agent(platform: LocalPlatform, creds: AgentCredentials) -> object:

    return agent_http(platform, creds)


async def test_frames_above_the_limit_are_never_sent(
    band_platform: LocalPlatform,
    human: HumanClient,
    agent: object,
    room: str,
    demo: AgentCredentials,
) -> None:

    assert isinstance(agent, httpx.AsyncClient)
    # 512 KiB of quotes is legal content but about 1 MiB once JSON-escaped.
    content = '"' * (512 * 1024)
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            client = PhoenixClient(ws)
            await client.join(f"chat_room:{room}")
            sent = await human.post_message(room, content, [demo.id])
            await client.send([None, "5", "phoenix", "heartbeat", {}])
            # the oversized push was skipped: the next frame is the heartbeat reply
            assert (await client.recv())[:2] == [None, "5"]
            # ... and the work is still on the mailbox
            assert (await agent.get(f"/chats/{room}/messages/next")).json()["data"]["id"] == sent[
                "id"
            ]
    assert band_platform.hub.statistics().oversize_dropped == 1


async def test_a_socket_that_falls_behind_is_disconnected(
    band_platform: LocalPlatform, room: str, demo: AgentCredentials
) -> None:
    band_platform.hub.queue_size = 3
    with trio.fail_after(IO_DEADLINE):
        async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
            client = PhoenixClient(ws)
            await client.join(f"agent_control:{demo.id}")
            (conn,) = band_platform.hub.connections(demo.id)
            # queue more pushes in one go than the socket's bound allows
            for _ in range(5):
                band_platform.state.control(demo.id, "interrupt", room_id=room)
            band_platform._flush()
            await conn.closed.wait()
            await band_platform.wait_for(lambda: not band_platform.connected(demo.id))
            with pytest.raises(ConnectionClosed):
                await _read_until_closed(ws)
            await ws._stream.aclose()  # trio-websocket 0.12 leaves it open after a server close
    assert band_platform.hub.statistics().slow_consumers == 1


async def _read_until_closed(ws: Any) -> None:
    while True:
        await ws.get_message()


async def test_message_updated_reaches_agents_when_asked() -> None:

    async with open_local_platform(agent_message_updates=True) as platform:
        demo = platform.agents[0]
        async with (
            HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human,
            agent_http(platform, demo) as agent,
        ):
            with trio.fail_after(IO_DEADLINE):
                room = (await human.create_room("r"))["id"]
                await human.add_participant(room, demo.id)
                async with open_phoenix(platform, demo.api_key, demo.id) as ws:
                    client = PhoenixClient(ws)
                    await client.join(f"chat_room:{room}")
                    sent = await human.post_message(room, "q", [demo.handle])
                    assert (await client.recv())[3] == "message_created"
                    await agent.post(f"/chats/{room}/messages/{sent['id']}/processing")
                    update = await client.recv()
                    assert update[3] == "message_updated"
                    assert update[4]["id"] == sent["id"]
                    assert (
                        update[4]["metadata"]["delivery_status"][demo.id]["status"] == "processing"
                    )


async def test_user_topics_room_added_and_tasks(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:

    bob = band_platform.create_user("Bob", "bob")
    async with HumanClient(base_url=band_platform.rest_url, api_key=bob.api_key) as bob_client:
        with trio.fail_after(IO_DEADLINE):
            request = await bob_client.send_contact_request(band_platform.user.handle)
            await human.approve_contact_request(request["id"])
            async with open_phoenix(band_platform, bob.api_key) as ws:
                client = PhoenixClient(ws)
                rooms_ref, _ = await client.join(f"user_rooms:{bob.id}")
                tasks_ref, _ = await client.join(f"tasks:{bob.id}")
                # a user cannot join another user's topics or an agent's
                assert (await client.join(f"tasks:{band_platform.user.id}"))[1][4][
                    "status"
                ] == "error"
                assert (await client.join(f"agent_rooms:{demo.id}"))[1][4]["status"] == "error"
                await human.add_participant(room, bob.id)
                added = await client.recv()
                assert added[:4] == [rooms_ref, None, f"user_rooms:{bob.id}", "room_added"]
                assert added[4]["id"] == room
                async with agent_http(band_platform, demo) as agent:
                    await agent.post(f"/chats/{room}/tasks", json={"subject": "plan"})
                created = await client.recv()
                assert created[:4] == [tasks_ref, None, f"tasks:{bob.id}", "task_created"]
                assert created[4]["subject"] == "plan"
