"""A socket that goes silent without closing (half-open: no frame either way,
the TCP connection open) is noticed and replaced, with the default settings,
within 40 seconds of its last heartbeat answer.

The local platform freezes the socket (its fault injection); the link and the
platform share this Trio run over loopback, so the test runs on the autojump
clock and the time measured is virtual.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from band_trio.local import LocalPlatform
from band_trio.wire.link import BandLink, LinkConfig, LinkEvent, LinkReconnected

REPLACED_WITHIN = 40.0


@pytest.mark.parametrize(
    ("config", "bound"),
    [
        (LinkConfig(), REPLACED_WITHIN),
        (LinkConfig(heartbeat_interval=5.0, heartbeat_timeout=2.0), 7.5),
    ],
    ids=["defaults", "configured"],
)
async def test_a_frozen_socket_is_replaced_within_the_heartbeat_bounds(
    band_platform: LocalPlatform,
    autojump_clock: trio.testing.MockClock,
    config: LinkConfig,
    bound: float,
) -> None:
    creds = band_platform.agents[0]
    link = BandLink(
        agent_id=creds.id, api_key=creds.api_key, ws_url=band_platform.ws_url, config=config
    )
    send, receive = trio.open_memory_channel[LinkEvent](100)
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            await nursery.start(link.serve, send)
            # Just past the first answered heartbeat (virtual time): the
            # silence starts almost a whole interval before the next one.
            await trio.sleep(config.heartbeat_interval + 0.5)
            assert link.statistics().heartbeat_acks == 1
            (frozen,) = band_platform.hub.connections(creds.id)
            freeze = band_platform.faults.freeze_sockets([frozen.id])
            silent_since = trio.current_time()
            while not isinstance(await receive.receive(), LinkReconnected):
                pass
            replaced_after = trio.current_time() - silent_since
            (fresh,) = band_platform.hub.connections(creds.id)
            assert fresh.id != frozen.id
            assert freeze.dropped_in >= 1  # the heartbeat nobody answered
            assert link.statistics().dead_connections == 1
            assert replaced_after <= bound, replaced_after
            print(f"replaced {replaced_after:.2f} s after the socket went silent")
            nursery.cancel_scope.cancel()
