"""WebSocket upgrade refusals of the local platform, read by band-sdk's own code.

``peers/upgrade_probe.py`` runs in the band-sdk venv and calls the SDK's
``probe_upgrade_error`` (its diagnostic handshake: protocol, "HTTP upgrade refusals"), so the
refusal bodies are parsed exactly as the official client parses them: the
``connection_conflict`` 409 of ``on_conflict=reject``, the 400 of a bad
``on_conflict``, a 429 and a 503 with ``retry_after``, and the plain 403 of a
bad key.

Reference: docs/reference/protocol.rst.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from band_trio.wire.link import BandLink
from tests.interop.conftest import PEERS, json_lines, peer_env

pytestmark = [pytest.mark.interop, pytest.mark.slow]  # peers run as real processes

UPGRADE_PROBE = PEERS / "upgrade_probe.py"
DEADLINE = 30
WS_PATH_REGEX = r"^/api/v1/socket/websocket"


async def probe(python: Path, cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    with trio.fail_after(DEADLINE):
        done = await trio.run_process(
            [str(python), str(UPGRADE_PROBE)],
            stdin=json.dumps(cases).encode(),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=peer_env({}),
        )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    return {line["name"]: line for line in json_lines(done.stdout)}


def case(
    name: str, platform: Any, agent: Any, *, query: str = "", key: str | None = None
) -> dict[str, Any]:
    return {
        "name": name,
        "url": f"{platform.ws_url}?vsn=2.0.0&agent_id={agent.id}{query}",
        "headers": {"x-api-key": key if key is not None else agent.api_key},
    }


async def test_upgrade_refusals_parse_as_the_official_sdk_expects(
    band_platform: Any, band_sdk_venv_python: Path
) -> None:
    platform = band_platform
    running = platform.register_agent("Already Running", "Holds a live socket")
    idle = platform.register_agent("Idle", "Nobody connected")
    link = BandLink(agent_id=running.id, api_key=running.api_key, ws_url=platform.ws_url)
    send, _receive = trio.open_memory_channel[Any](100)
    with trio.fail_after(DEADLINE):
        async with trio.open_nursery() as nursery:
            await nursery.start(link.serve, send)
            (live,) = platform.hub.connections(running.id)
            seen = await probe(
                band_sdk_venv_python,
                [
                    case("accepted", platform, idle),
                    case("conflict", platform, running, query="&on_conflict=reject"),
                    case("bad on_conflict", platform, idle, query="&on_conflict=sometimes"),
                    case("bad key", platform, idle, key="not-a-key"),
                ],
            )
            # The refused takeover left the running agent's socket alone.
            assert [c.id for c in platform.hub.connections(running.id)] == [live.id]
            assert platform.statistics().supersedes == 0

            platform.faults.add("GET", WS_PATH_REGEX, 429, 2, retry_after=7)
            seen |= await probe(band_sdk_venv_python, [case("rate limited", platform, idle)])
            platform.faults.add("GET", WS_PATH_REGEX, 503, 2, retry_after=3, code="tracking_failed")
            seen |= await probe(band_sdk_venv_python, [case("unavailable", platform, idle)])
            nursery.cancel_scope.cancel()

    assert (seen["accepted"]["connected"], seen["accepted"]["parsed"]) == (True, None)

    conflict = seen["conflict"]
    assert conflict["status"] == 409
    assert conflict["parsed"]["is_connection_conflict"] is True
    assert conflict["parsed"]["code"] == "connection_conflict"

    bad = seen["bad on_conflict"]
    assert (bad["status"], bad["parsed"]["code"]) == (400, "invalid_on_conflict")

    # Auth refusals are a plain 403, which the SDK does not parse (protocol, "HTTP upgrade refusals").
    assert (seen["bad key"]["status"], seen["bad key"]["parsed"]) == (403, None)

    limited = seen["rate limited"]["parsed"]
    assert (limited["status_code"], limited["retry_after"]) == (429, 7)
    unavailable = seen["unavailable"]["parsed"]
    assert (unavailable["status_code"], unavailable["code"], unavailable["retry_after"]) == (
        503,
        "tracking_failed",
        3,
    )
    for name in ("conflict", "bad on_conflict", "rate limited", "unavailable"):
        parsed = seen[name]["parsed"]
        assert parsed["message"], name  # the platform's own text, not the SDK's default
        assert "WebSocket upgrade failed" not in parsed["message"], name
