"""The local platform keeps a keep-alive HTTP connection open however many
requests it carries (Hypercorn's default closes it after 1,000, which made a busy
agent's connection pool reconnect under load)."""

from __future__ import annotations

import httpx
import trio

from band_trio.local import LocalPlatform


async def test_one_connection_carries_more_than_a_thousand_requests(
    band_platform: LocalPlatform,
) -> None:
    agent = band_platform.register_agent("Keep-alive probe", "Counts its connections")
    transport = httpx.AsyncHTTPTransport(
        limits=httpx.Limits(max_connections=1, max_keepalive_connections=1)
    )
    local_ports: set[int] = set()
    closing = 0
    with trio.fail_after(60):
        async with httpx.AsyncClient(
            base_url=band_platform.rest_url,
            headers={"X-API-Key": agent.api_key},
            transport=transport,
        ) as client:
            for _ in range(1_050):
                response = await client.get("/api/v1/agent/me")
                assert response.status_code == 200
                stream = response.extensions["network_stream"]
                local_ports.add(stream.get_extra_info("client_addr")[1])
                closing += response.headers.get("connection", "").lower() == "close"
    assert closing == 0
    assert len(local_ports) == 1
