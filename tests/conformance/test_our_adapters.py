"""The adapters shipped in the core pass the conformance kit.

The demo's :class:`~band_trio.demo.EchoAdapter` numbers its answers with one
counter for all rooms ("message 3 in this session"), so its output in a room
depends on the other rooms: it is held to every single-run invariant but not
declared deterministic. The gallery's per-room echo is, and passes the
room-independence check as well.
"""

from __future__ import annotations

from band_trio.demo import EchoAdapter
from band_trio.testing.conformance import AdapterConformance, RunOptions
from tests.conformance.broken_adapters import Echo

NO_THREADS = RunOptions(autojump_threshold=0.0)
"""Neither adapter waits on a worker thread: virtual time may jump at once."""


class TestDemoEchoAdapter(AdapterConformance):
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
