"""An echo agent written with the OFFICIAL asyncio ``band-sdk``.

This file runs only inside its own virtual environment (created by
``tests/interop/venvs.py``) as an interop peer: band-trio never imports it, and
nothing in ``band_trio/`` imports ``band``. It replies to every message with
``echo: <content>`` mentioning the sender, so a test can check that the local
platform serves a client we did not write.

Configuration comes from the environment: BAND_AGENT_ID, BAND_API_KEY,
BAND_REST_URL, BAND_WS_URL, and optionally BAND_ECHO_ON_CONFLICT (``supersede``,
the default, or ``reject``) and BAND_ECHO_CONTACTS (``approve``: handle contact
events and approve every request). It prints ``READY`` on stdout once started.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from band import Agent, AgentConfig, ConflictPolicy
from band.core.simple_adapter import SimpleAdapter
from band.platform.event import ContactRequestReceivedEvent
from band.runtime.contacts import ContactEventConfig, ContactEventStrategy


class EchoAdapter(SimpleAdapter[object]):
    async def on_message(  # type: ignore[override]
        self,
        msg,
        tools,
        history,
        participants_msg,
        contacts_msg,
        *,
        is_session_bootstrap,
        room_id,
    ) -> None:
        await tools.send_message(f"echo: {msg.content}", mentions=[msg.sender_id])

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        await super().on_started(agent_name, agent_description)
        print("READY", flush=True)


async def approve_requests(event, tools) -> None:  # type: ignore[no-untyped-def]
    """Contact callback: approve every contact request this agent receives."""
    if isinstance(event, ContactRequestReceivedEvent) and event.payload is not None:
        await tools.respond_contact_request("approve", request_id=event.payload.id)


def contact_config() -> ContactEventConfig | None:
    # BAND_ECHO_CONTACTS=approve: join agent_contacts and approve every request.
    if os.environ.get("BAND_ECHO_CONTACTS") != "approve":
        return None
    return ContactEventConfig(strategy=ContactEventStrategy.CALLBACK, on_event=approve_requests)


async def main() -> None:
    # BAND_ECHO_ON_CONFLICT=reject: refuse to take over a live connection of the
    # same agent (the platform answers the upgrade with 409 connection_conflict).
    policy = ConflictPolicy(os.environ.get("BAND_ECHO_ON_CONFLICT", "supersede"))
    agent = Agent.create(
        adapter=EchoAdapter(),
        config=AgentConfig(conflict_policy=policy),
        contact_config=contact_config(),
        agent_id=os.environ["BAND_AGENT_ID"],
        api_key=os.environ["BAND_API_KEY"],
        rest_url=os.environ["BAND_REST_URL"],
        ws_url=os.environ["BAND_WS_URL"],
    )
    await agent.run(shutdown_timeout=5)


if __name__ == "__main__":
    # One record per line with its level first, so a test can tell warnings
    # (the SDK logs every frame or payload it drops) from chatter.
    logging.basicConfig(
        level=os.environ.get("BAND_ECHO_LOG_LEVEL", "INFO"),
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    # Its DEBUG records say whether a turn came from a WebSocket push or from
    # the /next backlog; the test wants to see the push path used.
    logging.getLogger("band.runtime.execution").setLevel(logging.DEBUG)
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
