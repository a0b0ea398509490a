"""The adapters shipped in the core pass the conformance kit.

The demo's :class:`~band_trio.demo.EchoAdapter` keeps its count of messages
per room, so what it says in a room depends only on that room: it is declared
deterministic and passes the room-independence check, like the gallery's
per-room echo.
"""

from __future__ import annotations

from band_trio.demo import EchoAdapter
from band_trio.testing.conformance import AdapterConformance, RunOptions
from tests.conformance.broken_adapters import Echo

NO_THREADS = RunOptions(autojump_threshold=0.0)
"""Neither adapter waits on a worker thread: virtual time may jump at once."""


class TestDemoEchoAdapter(AdapterConformance):
    deterministic = True

    def make_adapter(self) -> EchoAdapter:
        return EchoAdapter()

    def make_options(self) -> RunOptions:
        return NO_THREADS


class TestPerRoomEcho(AdapterConformance):
    deterministic = True

    def make_adapter(self) -> Echo:
        return Echo()

    def make_options(self) -> RunOptions:
        return NO_THREADS
