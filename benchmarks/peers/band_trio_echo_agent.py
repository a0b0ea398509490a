"""The band-trio contender of ``benchmarks/bench_agents.py``: an echo agent.

It uses only band-trio's public API and does what the official band-sdk peer
(``tests/interop/peers/band_sdk_echo_agent.py``) does: reply to every message
with ``echo: <content>``, mentioning the sender.

Configuration comes from the environment: ``BAND_AGENT_ID``, ``BAND_API_KEY``,
``BAND_REST_URL``, ``BAND_WS_URL`` and any ``BAND_<FIELD>`` of
:class:`~band_trio.AgentConfig` (the benchmark sets ``BAND_STATE_DIR`` to a
fresh directory, so the durable claims ledger is on, as in production). It
prints ``READY`` on stdout once started and exits 0 on SIGINT or SIGTERM after
a graceful shutdown.

``BAND_BENCH_REST_POOL=<n>`` (an experiment knob) sizes the REST connection
pool (default: band-trio's default, 16). With ``BAND_BENCH_PROFILE=<file>`` it runs under cProfile and writes the stats
to that file on exit (``python -m pstats <file>`` to read them).
"""

from __future__ import annotations

import logging
import os
import sys

import trio

from band_trio import (
    Agent,
    AgentConfig,
    AgentSettings,
)
from band_trio.adapter import AgentToolsProtocol, HistoryProvider, PlatformMessage, SimpleAdapter
from band_trio.runtime import PlatformRuntime
from band_trio.wire.rest import RestConfig


class EchoAdapter(SimpleAdapter[HistoryProvider]):
    """Answers each message with ``echo: <content>`` to its sender."""

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        await tools.send_message(f"echo: {msg.content}", [msg.sender_id])

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        await super().on_started(agent_name, agent_description)
        print("READY", flush=True)


def main() -> None:
    pool = os.environ.get("BAND_BENCH_REST_POOL")
    if pool:
        # An experiment knob of the benchmark: another REST connection pool size.
        runtime = PlatformRuntime(
            AgentSettings.from_env(),
            AgentConfig.from_env(),
            rest_options={"config": RestConfig(max_connections=int(pool))},
        )
        agent = Agent(runtime, EchoAdapter())
    else:
        agent = Agent.create(adapter=EchoAdapter(), config=AgentConfig.from_env())
    trio.run(agent.serve)


if __name__ == "__main__":
    logging.basicConfig(
        level=os.environ.get("BAND_ECHO_LOG_LEVEL", "WARNING"),
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    profile_path = os.environ.get("BAND_BENCH_PROFILE")
    if profile_path:
        import cProfile

        profiler = cProfile.Profile()
        try:
            profiler.runcall(main)
        finally:
            profiler.dump_stats(profile_path)
    else:
        main()
