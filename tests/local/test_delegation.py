"""Delegation token exchange (``POST /delegation/token``): the simplified, deterministic checks."""

from __future__ import annotations

import httpx
import trio

from band_trio.local import AgentCredentials, HumanClient, LocalPlatform
from band_trio.local.delegation import PER_MESSAGE_CAP, RATE_LIMIT
from tests.local.helpers import IO_DEADLINE, assert_error


async def _cross_owner_message(
    band_platform: LocalPlatform, human: HumanClient, room: str, demo: AgentCredentials
) -> tuple[str, str]:
    bob = band_platform.create_user("Bob Builder", "bob")
    async with HumanClient(base_url=band_platform.rest_url, api_key=bob.api_key) as bob_client:
        request = await bob_client.send_contact_request(band_platform.user.handle)
        await human.approve_contact_request(request["id"])
        await human.add_participant(room, bob.id)
        sent = await bob_client.post_message(room, "use my calendar", [demo.handle])
    return str(sent["id"]), bob.id


async def test_exchange_returns_unwrapped_token(
    band_platform: LocalPlatform,
    human: HumanClient,
    agent: httpx.AsyncClient,
    room: str,
    demo: AgentCredentials,
) -> None:
    with trio.fail_after(IO_DEADLINE):
        message_id, bob_id = await _cross_owner_message(band_platform, human, room, demo)
        response = await agent.post(
            "/delegation/token", json={"audience": "conn-1", "message_id": message_id}
        )
    assert response.status_code == 200
    token = response.json()
    assert "data" not in token
    assert token["access_token"]
    assert token["token_type"] == "bearer"
    assert token["expires_at"].endswith("Z")
    assert token["obo"] == {
        "agent_uuid": demo.id,
        "audience": "conn-1",
        "originator_uuid": bob_id,
        "originator_handle": "bob",
    }


async def test_exchange_errors(
    band_platform: LocalPlatform,
    human: HumanClient,
    agent: httpx.AsyncClient,
    room: str,
    demo: AgentCredentials,
) -> None:
    with trio.fail_after(IO_DEADLINE):
        own = await human.post_message(room, "same owner", [demo.handle])
        assert_error(
            await agent.post("/delegation/token", json={"audience": "c", "message_id": own["id"]}),
            403,
            "delegation_not_available",
        )
        assert_error(
            await agent.post("/delegation/token", json={"audience": "c", "message_id": "nope"}),
            404,
            "not_found",
        )
        assert_error(await agent.post("/delegation/token", json={"message_id": own["id"]}), 422)
        message_id, bob_id = await _cross_owner_message(band_platform, human, room, demo)
        for _ in range(PER_MESSAGE_CAP):
            assert (
                await agent.post(
                    "/delegation/token", json={"audience": "c", "message_id": message_id}
                )
            ).status_code == 200
        assert_error(
            await agent.post("/delegation/token", json={"audience": "c", "message_id": message_id}),
            429,
            "rate_limited",
        )
        del bob_id


async def test_window_expired_and_originator_gone(
    band_platform: LocalPlatform,
    human: HumanClient,
    agent: httpx.AsyncClient,
    room: str,
    demo: AgentCredentials,
) -> None:
    with trio.fail_after(IO_DEADLINE):
        message_id, bob_id = await _cross_owner_message(band_platform, human, room, demo)
        envelope = band_platform.state.rooms[room].by_id[message_id].metadata["delegation"]
        minted = envelope["minted_at"]
        # test setup: age the envelope past the processing window
        envelope["minted_at"] = "2020-01-01T00:00:00.000000Z"
        assert_error(
            await agent.post("/delegation/token", json={"audience": "c", "message_id": message_id}),
            403,
            "window_expired",
        )
        envelope["minted_at"] = minted
        await human.remove_participant(room, bob_id)
        assert_error(
            await agent.post("/delegation/token", json={"audience": "c", "message_id": message_id}),
            403,
            "originator_not_participant",
        )


async def test_rate_limit_is_checked_first(
    band_platform: LocalPlatform, agent: httpx.AsyncClient, demo: AgentCredentials
) -> None:
    band_platform.state.delegation_log[demo.id] = [band_platform.state.clock()] * RATE_LIMIT
    with trio.fail_after(IO_DEADLINE):
        response = await agent.post(
            "/delegation/token", json={"audience": "c", "message_id": "unknown"}
        )
    error = assert_error(response, 429, "rate_limited")
    assert error["retry_after"] == 60
    assert response.headers["retry-after"] == "60"
