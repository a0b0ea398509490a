"""Testing helpers for band-trio users: the ``band_platform`` pytest fixture (a
local Band platform per test, from :mod:`band_trio.testing.plugin`),
:class:`FakeAgentTools` for adapter unit tests, and the adapter conformance kit
:mod:`band_trio.testing.conformance` (``AdapterConformance``, ``check_adapter``,
``replay``, ...; it needs the ``conformance`` extra: Hypothesis and the local
platform)."""

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
    if name == "conformance":
        # Imported on first use: it needs Hypothesis and the local platform.
        import band_trio.testing.conformance as conformance

        return conformance
    raise AttributeError(f"module 'band_trio.testing' has no attribute {name!r}")


def __dir__() -> list[str]:
    # The lazy names are listed too: completion and autodoc (which walks dir())
    # see every name of __all__.
    return sorted(set(globals()) | set(__all__))
