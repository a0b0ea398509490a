"""The band-sdk contender of ``benchmarks/bench_agents.py``.

Runs the interop peer ``tests/interop/peers/band_sdk_echo_agent.py`` (an echo
agent written with the OFFICIAL asyncio band-sdk) unchanged, in the band-sdk
virtual environment, but with the same logging as the band-trio contender:
the interop peer, run as a script, turns on a DEBUG logger for every dispatch
(its test needs it), which would charge band-sdk for log lines it does not
write by default. Here only WARNING and above are printed, to stderr.

Configuration: ``BAND_AGENT_ID``, ``BAND_API_KEY``, ``BAND_REST_URL``,
``BAND_WS_URL`` (read by the interop peer). ``BAND_BENCH_PROFILE=<file>`` runs
it under cProfile and writes the stats there on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from pathlib import Path

PEERS = Path(__file__).resolve().parents[2] / "tests" / "interop" / "peers"


def main() -> None:
    sys.path.insert(0, str(PEERS))
    import band_sdk_echo_agent as peer  # the interop peer, imported as a module

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(peer.main())


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
    sys.exit(0)
