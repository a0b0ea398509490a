"""Testing helpers for band-trio users: the local-platform pytest fixture, fakes,
and the adapter conformance kit."""

from typing import Any

__all__ = ["FakeAgentTools"]


def __getattr__(name: str) -> Any:
    # Lazy, so loading the pytest plugin does not import the tools layer.
    if name == "FakeAgentTools":
        from band_trio.testing.fakes import FakeAgentTools

        return FakeAgentTools
    raise AttributeError(f"module 'band_trio.testing' has no attribute {name!r}")
