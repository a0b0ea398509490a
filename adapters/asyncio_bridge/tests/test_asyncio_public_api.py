"""The package's public surface."""

from __future__ import annotations

import band_trio_asyncio


def test_public_names() -> None:
    assert sorted(band_trio_asyncio.__all__) == [
        "AsyncioBridge",
        "AsyncioTaskCancelledError",
        "BridgeClosedError",
        "BridgeStatistics",
        "DEFAULT_CANCEL_GRACE",
        "DEFAULT_STUCK_AFTER",
        "TrioPortal",
        "__version__",
    ]
    for name in band_trio_asyncio.__all__:
        assert getattr(band_trio_asyncio, name) is not None


def test_errors_are_band_errors() -> None:
    from band_trio import BandError

    assert issubclass(band_trio_asyncio.BridgeClosedError, BandError)
    assert issubclass(band_trio_asyncio.AsyncioTaskCancelledError, BandError)
