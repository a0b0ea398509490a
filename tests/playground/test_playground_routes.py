"""What ``/playground`` serves, over real loopback (no browser)."""

from __future__ import annotations

import httpx
import trio

from band_trio.local import AgentCredentials, LocalPlatform
from tests.local.helpers import IO_DEADLINE


async def test_a_wrong_key_is_refused_by_name_and_the_files_are_local(
    band_platform: LocalPlatform,
) -> None:
    demo: AgentCredentials = band_platform.agents[0]
    with trio.fail_after(IO_DEADLINE):
        async with httpx.AsyncClient(base_url=band_platform.rest_url) as client:
            for params in ({"token": "wrong"}, {"token": demo.api_key}):
                refused = await client.get("/playground", params=params)
                assert refused.status_code == 401
                assert "This key is wrong" in refused.text
                assert "/playground?token=" in refused.text
            # Without a key the page holds no secret (it says how to open it);
            # a reload after the key left the address bar gets it too.
            assert (await client.get("/playground")).status_code == 200
            icon = await client.get("/playground/favicon.svg")
            assert icon.status_code == 200
            assert icon.headers["content-type"] == "image/svg+xml"
            page = await client.get("/playground", params={"token": band_platform.user.api_key})
            assert page.status_code == 200
            assert page.headers["content-type"] == "text/html; charset=utf-8"
            policy = page.headers["content-security-policy"]
            assert "default-src 'self'" in policy
            assert "connect-src 'self'" in policy
            assert '<script src="/playground/app.js"' in page.text
            script = await client.get("/playground/app.js")
            assert script.status_code == 200
            assert script.headers["content-type"].startswith("text/javascript")
            assert "EventSource" in script.text
            style = await client.get("/playground/style.css")
            assert style.headers["content-type"].startswith("text/css")
            # Everything the page loads or calls is on the platform itself.
            for text in (page.text, script.text, style.text):
                assert "://" not in text
                assert "//cdn" not in text
            assert (await client.get("/playground/../pyproject.toml")).status_code == 404
            assert (await client.get("/playground/server.py")).status_code == 404
            assert (await client.post("/playground")).status_code == 405
