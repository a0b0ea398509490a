"""Admin endpoints (``/_local/admin``), fault injection and the Python controls."""

from __future__ import annotations

import httpx
import pytest
import trio

from band_trio.errors import BandConfigError, InternalServerError
from band_trio.local import AgentCredentials, HumanClient, LocalPlatform, open_local_platform
from tests.local.helpers import (
    IO_DEADLINE,
    PhoenixClient,
    assert_error,
    open_phoenix,
    refused,
    upgrade_status,
)


@pytest.fixture
async def band_platform(nursery: trio.Nursery) -> LocalPlatform:
    """The platform of these tests serves its admin API (off by default)."""
    platform = LocalPlatform(host="127.0.0.1", port=0, admin=True)
    await nursery.start(platform.serve)
    return platform


def admin(platform: LocalPlatform) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=platform.rest_url + "/_local/admin", headers={"x-admin-key": platform.admin_key}
    )


async def test_admin_api_is_off_unless_enabled() -> None:
    async with open_local_platform() as platform:
        assert not platform.admin
        async with httpx.AsyncClient(base_url=platform.rest_url) as client:
            with trio.fail_after(IO_DEADLINE):
                for method, path in (
                    ("GET", "/_local/admin/state"),
                    ("POST", "/_local/admin/faults"),
                    ("DELETE", "/_local/admin/faults"),
                    ("POST", "/_local/admin/control"),
                ):
                    headers = {"x-admin-key": platform.admin_key}
                    response = await client.request(method, path, headers=headers, json={})
                    assert_error(response, 404, "not_found")
                # the Python surface stays: a fault added in process still applies
                platform.faults.add("GET", "^/api/v1/agent/me$", 503)
                demo = {"x-api-key": platform.agents[0].api_key}
                assert_error(await client.get("/api/v1/agent/me", headers=demo), 503)
                assert (await client.get("/api/v1/agent/me", headers=demo)).status_code == 200


async def test_admin_needs_the_admin_key(band_platform: LocalPlatform) -> None:
    async with httpx.AsyncClient(base_url=band_platform.rest_url) as client:
        with trio.fail_after(IO_DEADLINE):
            assert_error(await client.get("/_local/admin/state"), 401)
            # a non-ASCII admin key is a wrong key, not a crash
            response = await client.get(
                "/_local/admin/state", headers=[(b"x-admin-key", "é€".encode())]
            )
            assert_error(response, 401)
            assert_error(
                await client.get("/_local/admin/state", headers={"x-admin-key": "nope"}), 401
            )
            # an API key is not an admin key
            assert_error(
                await client.get(
                    "/_local/admin/state", headers={"x-api-key": band_platform.user.api_key}
                ),
                401,
            )


async def test_state_snapshot_has_no_secrets(band_platform: LocalPlatform, room: str) -> None:
    async with admin(band_platform) as client:
        with trio.fail_after(IO_DEADLINE):
            response = await client.get("/state")
    snapshot = response.json()["data"]
    assert [r["id"] for r in snapshot["rooms"]] == [room]
    assert {"connections", "frames_in", "supersedes"} <= set(snapshot["hub"])
    for creds in (band_platform.user, *band_platform.agents):
        assert creds.api_key not in response.text


async def test_admin_control_pushes_and_flips_the_gate(
    band_platform: LocalPlatform, agent: httpx.AsyncClient, room: str, demo: AgentCredentials
) -> None:
    async with admin(band_platform) as client:
        with trio.fail_after(IO_DEADLINE):
            async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
                phoenix = PhoenixClient(ws)
                await phoenix.join(f"agent_control:{demo.id}")
                stopped = await client.post(
                    "/control",
                    json={
                        "agent_id": demo.id,
                        "mode": "stop",
                        "room_id": room,
                        "reason": "testing",
                    },
                )
                assert stopped.status_code == 200
                frame = await phoenix.recv()
                assert frame[3] == "agent.control"
                assert (frame[4]["mode"], frame[4]["room_id"], frame[4]["reason"]) == (
                    "stop",
                    room,
                    "testing",
                )
                assert isinstance(frame[4]["correlation_id"], str)
                assert (await agent.get(f"/chats/{room}/messages/next")).status_code == 204
                await client.post(
                    "/control",
                    json={"agent_id": demo.id, "mode": "play", "room_id": room, "reason": None},
                )
                play = await phoenix.recv()
                assert "reason" not in play[4]  # a null reason is left out, never sent
            assert_error(
                await client.post("/control", json={"agent_id": demo.id, "mode": "pause"}), 422
            )
            assert_error(
                await client.post("/control", json={"agent_id": "ghost", "mode": "stop"}), 404
            )


async def test_python_controls_validate(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:
    with refused(404):
        await band_platform.push_control("ghost", "stop")
    with refused(422):
        await band_platform.push_control(demo.id, "pause")
    with refused(404):
        await band_platform.push_control(demo.id, "stop", room_id="not-its-room")
    assert await band_platform.drop_agent_sockets(demo.id) == 0


async def test_fault_answers_without_performing(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:
    fault = band_platform.faults.add("POST", r"/messages$", 503, count=2, retry_after=3)
    async with httpx.AsyncClient(
        base_url=band_platform.rest_url, headers={"x-api-key": band_platform.user.api_key}
    ) as client:
        with trio.fail_after(IO_DEADLINE):
            body = {"message": {"content": "hi", "mentions": [{"id": demo.id}]}}
            for _ in range(2):
                response = await client.post(f"/api/v1/me/chats/{room}/messages", json=body)
                error = assert_error(response, 503, "service_unavailable")
                assert response.headers["retry-after"] == "3"
                assert error["retry_after"] == 3
            assert band_platform.state.rooms[room].messages == []
            assert (
                await client.post(f"/api/v1/me/chats/{room}/messages", json=body)
            ).status_code == 201
    assert fault.hits == 2
    assert band_platform.faults.pending == []


async def test_fault_performs_then_loses_the_response(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> None:
    band_platform.faults.add("post", "/messages$", 500, perform=True, code="boom", message="lost")
    with trio.fail_after(IO_DEADLINE):
        with pytest.raises(InternalServerError) as caught:
            await human.post_message(room, "hi", [demo.handle])
        assert caught.value.status_code == 500
        assert caught.value.code == "boom"
    # the write happened: a lost response, not a lost request
    assert len(band_platform.state.rooms[room].messages) == 1


async def test_faults_through_admin_api_and_on_upgrades(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:
    async with admin(band_platform) as client:
        with trio.fail_after(IO_DEADLINE):
            added = await client.post(
                "/faults",
                json={
                    "method": "GET",
                    "path": "/socket/websocket",
                    "status": 429,
                    "retry_after": 7,
                },
            )
            assert added.status_code == 201
            refused = await upgrade_status(band_platform, {"x-api-key": demo.api_key}, demo.id)
            assert refused.status_code == 429
            assert refused.json()["error"]["retry_after"] == 7
            # The machine codes the platform puts on refused upgrades.
            assert refused.json()["error"]["code"] == "too_many_requests"
            assert refused.headers["retry-after"] == "7"
            assert_error(await client.post("/faults", json={"path": "(", "status": 500}), 422)
            assert_error(await client.post("/faults", json={"path": "x", "status": 99}), 422)
            assert_error(await client.post("/faults", json={"path": "x", "status": "500"}), 422)
            await client.post("/faults", json={"path": "/me$", "status": 500})
            assert (await client.delete("/faults")).status_code == 204
    assert band_platform.faults.pending == []


async def test_upgrade_fault_503_uses_the_tracking_failed_code(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:
    band_platform.faults.add("GET", "/socket/websocket", 503, retry_after=2)
    with trio.fail_after(IO_DEADLINE):
        refused = await upgrade_status(band_platform, {"x-api-key": demo.api_key}, demo.id)
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "tracking_failed"
    assert refused.json()["error"]["retry_after"] == 2


async def test_fault_delay_hangs_until_the_client_gives_up(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:
    band_platform.faults.add("GET", "/agent/me$", 500, delay=float("inf"))
    async with httpx.AsyncClient(
        base_url=band_platform.rest_url, headers={"x-api-key": demo.api_key}, timeout=0.2
    ) as client:
        with trio.fail_after(IO_DEADLINE), pytest.raises(httpx.ReadTimeout):
            await client.get("/api/v1/agent/me")
        with trio.fail_after(IO_DEADLINE):
            assert (await client.get("/api/v1/agent/me")).status_code == 200


async def test_admin_creates_users_agents_and_deletes_rooms(
    band_platform: LocalPlatform, room: str, demo: AgentCredentials
) -> None:
    async with admin(band_platform) as client:
        with trio.fail_after(IO_DEADLINE):
            user = (await client.post("/users", json={"name": "Zed", "handle": "zed"})).json()[
                "data"
            ]
            assert_error(await client.post("/users", json={"name": "Zed", "handle": "zed"}), 422)
            agent = (
                await client.post(
                    "/agents", json={"name": "Zed Bot", "description": "d", "owner_id": user["id"]}
                )
            ).json()["data"]
            assert agent["handle"] == "zed/zed-bot"
            assert agent["api_key"]
            async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
                phoenix = PhoenixClient(ws)
                ref, _ = await phoenix.join(f"room_participants:{room}")
                assert (await client.delete(f"/rooms/{room}")).status_code == 204
                assert await phoenix.recv() == [
                    ref,
                    None,
                    f"room_participants:{room}",
                    "room_deleted",
                    {"id": room},
                ]
            assert_error(await client.delete(f"/rooms/{room}"), 404)


async def test_drop_through_admin(band_platform: LocalPlatform, demo: AgentCredentials) -> None:
    async with admin(band_platform) as client:
        with trio.fail_after(IO_DEADLINE):
            async with open_phoenix(band_platform, demo.api_key, demo.id) as ws:
                await PhoenixClient(ws).join(f"agent_control:{demo.id}")
                dropped = await client.post(f"/agents/{demo.id}/drop", json={"abnormal": False})
                assert dropped.json()["data"] == {"dropped": 1}
                await band_platform.wait_for(lambda: not band_platform.connected(demo.id))
                await ws._stream.aclose()  # trio-websocket 0.12 leaves it open after a server close
            assert_error(await client.post("/agents/ghost/drop"), 404)


async def test_open_local_platform_raises_the_real_error() -> None:
    async def run() -> None:
        async with open_local_platform(seed_demo=False) as platform:
            assert platform.agents == []
            _ = 1 / 0

    with pytest.raises(ZeroDivisionError):
        await run()


async def test_bind_failure_is_an_oserror(band_platform: LocalPlatform) -> None:
    port = int(band_platform.rest_url.rsplit(":", 1)[1])

    async def run() -> None:
        async with open_local_platform(port=port):
            pass

    with pytest.raises(OSError, match="in use"):
        await run()


async def test_rest_url_before_serving_is_a_config_error() -> None:

    with pytest.raises(BandConfigError):
        _ = LocalPlatform().rest_url
