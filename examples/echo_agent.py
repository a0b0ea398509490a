"""The smallest agent: it answers every message with "You said: ...".

Run it against a Band platform; its settings come from the environment::

    band-trio platform            # in another terminal: prints the BAND_* settings
    BAND_AGENT_ID=... BAND_API_KEY=... BAND_REST_URL=... BAND_WS_URL=... \\
        python examples/echo_agent.py

It serves until SIGTERM or Ctrl+C, which drain the running turns and return.
"""

from __future__ import annotations

import trio

import band_trio


class Echo(band_trio.SimpleAdapter[band_trio.HistoryProvider]):
    """Answers the sender of every message with its text."""

    async def on_message(
        self,
        msg: band_trio.PlatformMessage,
        tools: band_trio.AgentToolsProtocol,
        history: band_trio.HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        # Only a tool reaches the room: here, a message mentioning the sender.
        await tools.send_message(f"You said: {msg.content}", [msg.sender_id])


async def main() -> None:
    # BAND_AGENT_ID, BAND_API_KEY, BAND_REST_URL and BAND_WS_URL give the
    # connection; any AgentConfig field can be set as BAND_<FIELD>
    # (BAND_STATE_DIR, BAND_TURN_TIMEOUT, ...).
    agent = band_trio.Agent.create(adapter=Echo())
    await agent.serve()


if __name__ == "__main__":
    band_trio.configure_logging()
    trio.run(main)
