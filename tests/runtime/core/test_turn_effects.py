"""TurnEffects: what a turn did through its tools, and the verdict the runtime
draws from it.

Reference: docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

import pytest

from band_trio.adapter import ToolEffect
from band_trio.runtime.core._turn_effects import TurnEffects, TurnVerdict


def test_turn_ledger_verdicts() -> None:
    ledger = TurnEffects()
    assert ledger.verdict is TurnVerdict.MISSING_REPLY
    ledger.record_effect(ToolEffect.OBSERVE)
    # Observing only is still a missing reply (tools and adapters, "Testable statements" 38).
    assert ledger.verdict is TurnVerdict.MISSING_REPLY
    ledger.record_effect(ToolEffect.ACT)
    assert ledger.verdict is TurnVerdict.COMPLETE
    assert not ledger.replied
    ledger.record_effect(ToolEffect.REPLY)
    assert ledger.replied
    assert ledger.effects == (ToolEffect.OBSERVE, ToolEffect.ACT, ToolEffect.REPLY)


@pytest.mark.parametrize("how", ["settle", "reported", "decline"])
def test_turn_ledger_other_ways_to_complete(how: str) -> None:
    ledger = TurnEffects()
    if how == "settle":
        ledger.settle()
    elif how == "reported":
        ledger.note_reported()
        assert ledger.reported
    else:
        ledger.record_effect(ToolEffect.DECLINE)
        assert ledger.replied
    assert ledger.verdict is TurnVerdict.COMPLETE
