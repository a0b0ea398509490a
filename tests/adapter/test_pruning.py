"""The agent's FILES pruning applied to adapter features (official runtime, "Testable
behaviours" 8), as a unit; the end-to-end check is in test_e2e_local.py.

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

from typing import Any

from band_trio import Capability, HistoryProvider, SimpleAdapter
from band_trio.agent import _prune_adapter_features

FILES = frozenset({Capability.FILES})


class Adapter(SimpleAdapter[HistoryProvider]):
    SUPPORTED_CAPABILITIES = frozenset(Capability)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.applied = 0

    def apply_effective_features(self, features: Any) -> None:
        self.applied += 1
        super().apply_effective_features(features)

    async def on_message(self, *args: Any, **kwargs: Any) -> None:
        """Never called here."""


def test_unserved_capabilities_are_removed() -> None:
    adapter = Adapter(capabilities=["files", "memory"], emit=())
    _prune_adapter_features(adapter, FILES)
    assert adapter.features.capabilities == {Capability.MEMORY}
    assert adapter.applied == 1


def test_nothing_to_prune_leaves_the_features_alone() -> None:
    adapter = Adapter(capabilities=["memory"])
    before = adapter.features
    _prune_adapter_features(adapter, FILES)
    _prune_adapter_features(Adapter(capabilities=["files"]), frozenset())
    assert adapter.features is before
    assert adapter.applied == 0


def test_adapters_without_features_are_skipped() -> None:
    class NoSuper(Adapter):
        def __init__(self) -> None:  # skips SimpleAdapter.__init__
            self.applied = 0

    class NotSimple:
        features = None

    adapter = NoSuper()
    _prune_adapter_features(adapter, FILES)
    _prune_adapter_features(NotSimple(), FILES)
    assert adapter.applied == 0
