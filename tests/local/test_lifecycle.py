"""Message lifecycle over REST: deliveries, /next, claims, settlement, stop/play."""

from __future__ import annotations

import httpx
import trio

from band_trio.local import AgentCredentials, HumanClient, LocalPlatform
from band_trio.local._input import Obj
from band_trio.local.store import ACTIVITY_TTL, PlatformState
from tests.local.helpers import IO_DEADLINE, assert_error


def base(room: str) -> str:
    return f"/chats/{room}/messages"


async def post(
    human: HumanClient, room: str, demo: AgentCredentials, text: str = "please help"
) -> str:
    sent = await human.post_message(room, text, [demo.handle])
    return str(sent["id"])


async def test_next_is_204_with_empty_body_when_nothing_to_do(
    agent: httpx.AsyncClient, room: str
) -> None:
    with trio.fail_after(IO_DEADLINE):
        response = await agent.get(f"{base(room)}/next")
    assert response.status_code == 204
    assert response.content == b""


async def test_full_lifecycle_with_failed_attempt_then_success(
    band_platform: LocalPlatform,
    human: HumanClient,
    agent: httpx.AsyncClient,
    room: str,
    demo: AgentCredentials,
) -> None:
    with trio.fail_after(IO_DEADLINE):
        mid = await post(human, room, demo)
        nxt = (await agent.get(f"{base(room)}/next")).json()["data"]
        assert nxt["id"] == mid
        assert nxt["metadata"]["delivery_status"][demo.id]["status"] == "delivered"

        claim = await agent.post(f"{base(room)}/{mid}/processing")
        assert claim.status_code == 200
        assert claim.json()["data"] == {
            "id": mid,
            "status": "processing",
            "attempt_number": 1,
            "success": True,
        }
        # idempotent while processing: same attempt
        again = await agent.post(f"{base(room)}/{mid}/processing")
        assert again.json()["data"]["attempt_number"] == 1

        failed = await agent.post(f"{base(room)}/{mid}/failed", json={"error": "model crashed"})
        assert failed.json()["data"] == {
            "id": mid,
            "status": "failed",
            "attempt_number": 1,
            "success": True,
        }
        # failed is still actionable
        assert (await agent.get(f"{base(room)}/next")).json()["data"]["id"] == mid

        second = await agent.post(f"{base(room)}/{mid}/processing")
        assert second.json()["data"]["attempt_number"] == 2
        done = await agent.post(f"{base(room)}/{mid}/processed")
        assert done.json()["data"] == {
            "id": mid,
            "status": "processed",
            "attempt_number": 2,
            "success": True,
        }
        assert (await agent.get(f"{base(room)}/next")).status_code == 204

    delivery = band_platform.state.rooms[room].by_id[mid].deliveries[demo.id]
    assert delivery.status == "processed"
    assert delivery.processed_at is not None
    assert [(a.number, a.status, a.error) for a in delivery.attempts] == [
        (1, "failed", "model crashed"),
        (2, "success", None),
    ]


async def test_delivery_status_exposed_in_metadata(
    human: HumanClient, agent: httpx.AsyncClient, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        mid = await post(human, room, demo)
        await agent.post(f"{base(room)}/{mid}/processing")
        await agent.post(f"{base(room)}/{mid}/failed", json={"error": "nope"})
        listed = (await agent.get(base(room), params={"status": "failed"})).json()["data"]
    entry = listed[0]["metadata"]["delivery_status"][demo.id]
    assert entry["status"] == "failed"
    assert entry["current_attempt"] == 1
    assert entry["attempts"] == [{"attempt_number": 1, "status": "failed", "error": "nope"}]
    assert entry["delivered_at"].endswith("Z")


async def test_settle_without_active_attempt_is_422_with_pointer(
    human: HumanClient, agent: httpx.AsyncClient, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        mid = await post(human, room, demo)
        for mark in ("processed", "failed"):
            response = await agent.post(
                f"{base(room)}/{mid}/{mark}", json={"error": "x"} if mark == "failed" else None
            )
            error = assert_error(response, 422, "validation_error")
            assert error["details"]["/processing_attempt"]


async def test_unknown_and_foreign_ids_are_404(
    band_platform: LocalPlatform,
    human: HumanClient,
    agent: httpx.AsyncClient,
    room: str,
    demo: AgentCredentials,
) -> None:
    with trio.fail_after(IO_DEADLINE):
        other_room = await human.create_room("other")
        await human.add_participant(other_room["id"], demo.id)
        mid = await post(human, other_room["id"], demo)
        for mark in ("processing", "processed", "failed"):
            assert_error(await agent.post(f"{base(room)}/does-not-exist/{mark}"), 404, "not_found")
            # the message exists, but in another room than the URL's
            assert_error(await agent.post(f"{base(room)}/{mid}/{mark}"), 404, "not_found")
        foreign = await human.create_room("agent not in it")
        assert_error(await agent.get(f"/chats/{foreign['id']}/messages/next"), 404, "not_found")


async def test_reclaiming_processed_message_reopens_it(
    human: HumanClient, agent: httpx.AsyncClient, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        first = await post(human, room, demo, "one")
        second = await post(human, room, demo, "two")
        await agent.post(f"{base(room)}/{first}/processing")
        await agent.post(f"{base(room)}/{first}/processed")
        assert (await agent.get(f"{base(room)}/next")).json()["data"]["id"] == second
        reopened = await agent.post(f"{base(room)}/{first}/processing")
        assert reopened.json()["data"]["attempt_number"] == 2
        assert (await agent.get(f"{base(room)}/next")).json()["data"]["id"] == first


async def test_next_returns_oldest_actionable_including_processing(
    human: HumanClient, agent: httpx.AsyncClient, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        ids = [await post(human, room, demo, f"m{i}") for i in range(3)]
        await agent.post(f"{base(room)}/{ids[0]}/processing")
        # a crashed claim stays actionable: /next still serves it first
        assert (await agent.get(f"{base(room)}/next")).json()["data"]["id"] == ids[0]
        await agent.post(f"{base(room)}/{ids[0]}/processed")
        assert (await agent.get(f"{base(room)}/next")).json()["data"]["id"] == ids[1]


async def test_messages_list_status_filters(
    human: HumanClient, agent: httpx.AsyncClient, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        ids = [await post(human, room, demo, f"m{i}") for i in range(4)]
        await agent.post(f"{base(room)}/{ids[0]}/processing")
        await agent.post(f"{base(room)}/{ids[0]}/processed")
        await agent.post(f"{base(room)}/{ids[1]}/processing")
        await agent.post(f"{base(room)}/{ids[2]}/processing")
        await agent.post(f"{base(room)}/{ids[2]}/failed", json={"error": "e"})

        async def listed(**params: str) -> list[str]:
            doc = (await agent.get(base(room), params=params)).json()
            assert doc["metadata"]["has_more"] is False
            return [m["id"] for m in doc["data"]]

        assert await listed() == ids[1:]
        assert await listed(status="pending") == [ids[2], ids[3]]
        assert await listed(status="processing") == [ids[1]]
        assert await listed(status="processed") == [ids[0]]
        assert await listed(status="failed") == [ids[2]]
        assert await listed(status="all") == ids
        assert await listed(status="all", sort_order="desc") == ids[::-1]
        assert_error(
            await agent.get(base(room), params={"status": "bogus"}), 422, "validation_error"
        )


async def test_messages_cursor_pagination_and_offset_deprecation(
    human: HumanClient, agent: httpx.AsyncClient, room: str, demo: AgentCredentials
) -> None:
    with trio.fail_after(IO_DEADLINE):
        ids = [await post(human, room, demo, f"m{i}") for i in range(5)]
        seen: list[str] = []
        cursor = None
        while True:
            doc = (
                await agent.get(
                    base(room), params={"limit": 2, **({"cursor": cursor} if cursor else {})}
                )
            ).json()
            assert doc["metadata"]["limit"] == 2
            seen += [m["id"] for m in doc["data"]]
            if not doc["metadata"]["has_more"]:
                break
            cursor = doc["metadata"]["next_cursor"]
        assert seen == ids
        offset = await agent.get(base(room), params={"page": 2, "page_size": 2})
        assert offset.headers["deprecation"] == "true"
        meta = offset.json()["metadata"]
        assert (meta["page"], meta["total_pages"], meta["has_more"], meta["limit"]) == (
            2,
            3,
            True,
            2,
        )
        assert [m["id"] for m in offset.json()["data"]] == ids[2:4]
        assert_error(await agent.get(base(room), params={"page": 1, "cursor": "cur_1"}), 422)
        assert_error(await agent.get(base(room), params={"cursor": "garbage"}), 422)


async def test_stop_gates_marks_next_and_posts_until_play(
    band_platform: LocalPlatform,
    human: HumanClient,
    agent: httpx.AsyncClient,
    room: str,
    demo: AgentCredentials,
) -> None:
    with trio.fail_after(IO_DEADLINE):
        mid = await post(human, room, demo)
        await agent.post(f"{base(room)}/{mid}/processing")
        await band_platform.push_control(demo.id, "stop", room_id=room)

        assert (await agent.get(f"{base(room)}/next")).status_code == 204
        for mark in ("processing", "processed", "failed"):
            response = await agent.post(
                f"{base(room)}/{mid}/{mark}",
                json={"error": "x"} if mark == "failed" else None,
            )
            assert response.status_code == 204
            assert response.content == b""
        refused = await agent.post(
            base(room),
            json={"message": {"content": "hi", "mentions": [{"id": band_platform.user.id}]}},
        )
        assert "execution is stopped" in assert_error(refused, 403, "forbidden")["message"]
        event = await agent.post(
            f"/chats/{room}/events", json={"event": {"content": "t", "message_type": "thought"}}
        )
        assert "execution is stopped" in assert_error(event, 403)["message"]
        activity = await agent.post(f"/chats/{room}/activity", json={"working": True})
        assert activity.json() == {"data": {"working": False}}

        await band_platform.push_control(demo.id, "play", room_id=room)
        # the message left in processing by the stop is served again
        assert (await agent.get(f"{base(room)}/next")).json()["data"]["id"] == mid
        assert (await agent.post(f"{base(room)}/{mid}/processed")).status_code == 200
        assert (await agent.post(f"/chats/{room}/activity", json={"working": True})).json()["data"][
            "working"
        ] is True


async def test_agent_wide_stop_gates_every_room(
    band_platform: LocalPlatform,
    human: HumanClient,
    agent: httpx.AsyncClient,
    room: str,
    demo: AgentCredentials,
) -> None:
    with trio.fail_after(IO_DEADLINE):
        second = (await human.create_room("second"))["id"]
        await human.add_participant(second, demo.id)
        await post(human, second, demo)
        await band_platform.push_control(demo.id, "stop")
        assert band_platform.state.rooms[room].stopped == {demo.id}
        assert (await agent.get(f"/chats/{second}/messages/next")).status_code == 204
        await band_platform.push_control(demo.id, "play")
        assert (await agent.get(f"/chats/{second}/messages/next")).status_code == 200


async def test_events_never_deliver_and_need_no_mentions(
    band_platform: LocalPlatform, agent: httpx.AsyncClient, room: str
) -> None:
    with trio.fail_after(IO_DEADLINE):
        for kind in ("tool_call", "tool_result", "thought", "error", "task"):
            response = await agent.post(
                f"/chats/{room}/events",
                json={"event": {"content": f"{kind}!", "message_type": kind, "metadata": None}},
            )
            assert response.status_code == 201
            assert response.json()["data"]["message_type"] == kind
            assert response.json()["data"]["success"] is True
        attention = await agent.post(
            f"/chats/{room}/events",
            json={
                "event": {
                    "content": "?",
                    "message_type": "attention",
                    "metadata": {"kind": "question"},
                }
            },
        )
        assert attention.status_code == 201
        assert_error(
            await agent.post(
                f"/chats/{room}/events", json={"event": {"content": "x", "message_type": "usage"}}
            ),
            422,
        )
        assert_error(
            await agent.post(
                f"/chats/{room}/events",
                json={"event": {"content": "x", "message_type": "attention", "metadata": {}}},
            ),
            422,
        )
        assert_error(
            await agent.post(
                f"/chats/{room}/events",
                json={"event": {"content": "x" * 16385, "message_type": "thought"}},
            ),
            422,
        )
    messages = band_platform.state.rooms[room].messages
    assert len(messages) == 6
    assert all(not m.deliveries for m in messages)


async def test_activity_validation(agent: httpx.AsyncClient, room: str) -> None:
    with trio.fail_after(IO_DEADLINE):
        ok = await agent.post(
            f"/chats/{room}/activity",
            json={"working": True, "activity": {"kind": "tool_call", "name": "web search!"}},
        )
        assert ok.json() == {"data": {"working": True}}
        assert (await agent.post(f"/chats/{room}/activity", json={"working": False})).json() == {
            "data": {"working": False}
        }
        assert_error(await agent.post(f"/chats/{room}/activity", json={"working": "yes"}), 422)
        assert_error(
            await agent.post(
                f"/chats/{room}/activity", json={"working": True, "activity": {"kind": "tool_call"}}
            ),
            422,
        )
        assert_error(
            await agent.post(
                f"/chats/{room}/activity", json={"working": True, "activity": {"kind": "dance"}}
            ),
            422,
        )


def test_working_status_expires_after_the_activity_ttl() -> None:

    now = [100.0]
    state = PlatformState(clock=lambda: now[0])
    user = state.create_user("Ann", "ann")
    agent = state.register_agent(user, "Bot", "b")
    room = state.create_room(user, None)
    state.add_participant(user, room.id, Obj({"participant": {"participant_id": agent.id}}))
    assert state.me_room_json(room, user)["work_status"] == "idle"
    assert state.report_activity(agent, room.id, Obj({"working": True})) == {"working": True}
    assert state.me_room_json(room, user)["work_status"] == "working"
    now[0] += ACTIVITY_TTL + 0.1
    assert state.me_room_json(room, user)["work_status"] == "idle"
    state.report_activity(agent, room.id, Obj({"working": True}))
    state.report_activity(agent, room.id, Obj({"working": False}))
    assert state.me_room_json(room, user)["work_status"] == "idle"
    state.control(agent.id, "stop", room_id=room.id)
    assert state.me_room_json(room, user)["work_status"] == "stopped"
