"""Testing helpers for band-trio users: the ``band_platform`` pytest fixture (a
local Band platform per test, from :mod:`band_trio.testing.plugin`) and
:class:`FakeAgentTools` for adapter unit tests."""

from typing import Any

__all__ = ["FakeAgentTools", "reported_failures"]


def __getattr__(name: str) -> Any:
    # Lazy, so loading the pytest plugin does not import the tools layer.
    if name == "FakeAgentTools":
        from band_trio.testing.fakes import FakeAgentTools  # lazy: see above

        return FakeAgentTools
    if name == "reported_failures":
        from band_trio.testing.fakes import reported_failures  # lazy: see above

        return reported_failures
    raise AttributeError(f"module 'band_trio.testing' has no attribute {name!r}")
